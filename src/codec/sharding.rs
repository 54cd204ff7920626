//! `sharding_indexed`: a chunk (shard) made of inner chunks plus an index.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/index.html>.
//! v3 name `sharding_indexed`:
//!
//! ```json
//! {"name": "sharding_indexed", "configuration": {
//!    "chunk_shape": [32, 32],
//!    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
//!    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
//!    "index_location": "end"}}
//! ```
//!
//! ```text
//! | inner chunk | inner chunk | ... | index: (offset u64, nbytes u64) per inner chunk, C order [+ crc32c] |
//! ```
//!
//! An absent inner chunk has offset = nbytes = `u64::MAX` and reads as the fill
//! value. Every inner chunk is decoded with the inner codecs (any layout, including
//! nested shards) and the inner chunks are gathered in C order (one copy), or, for
//! a 1-D shard, handed on as runs, one per inner chunk ([`Sharding::decode_runs`]:
//! no copy; the table reader's batches are then slices of them).
//!
//! Partial reads: a reader that wants some rows of a shard (a range along its
//! first dimension, 1-D or N-d) fetches the index alone
//! ([`Sharding::index_range`], a suffix range when it sits at the end), decodes
//! it ([`Sharding::decode_index`]), then fetches only the rows of inner chunks
//! that hold those rows and decodes them ([`Sharding::decode_inner`]); the rest
//! never leaves the store.

use std::any::Any;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bytes::{Bytes, is_big_endian};
use super::{
    ArrayToBytesCodec, ChunkRange, CodecChain, ConfigError, DecodeContext, IndexLocation,
    PartialDecoder, PartialRead, PartialStep, settings,
};
use crate::assemble::{Part, cut, gather, runs};
use crate::error::{ChunkError, EncodeError};
use crate::fill::fill_array;
use crate::metadata::{CodecMetadata, Endian};

/// The names of `sharding_indexed`.
pub(crate) const NAMES: &[&str] = &["sharding_indexed"];

/// The `sharding_indexed` codec.
#[derive(Debug, Clone)]
pub(crate) struct Sharding {
    /// Shape of the inner chunks (divides the shard shape).
    pub(crate) chunk_shape: Vec<u64>,
    /// Codecs of each inner chunk.
    pub(crate) codecs: CodecChain,
    /// Codecs of the index: `bytes`, then optionally `crc32c`.
    pub(crate) index_codecs: CodecChain,
    /// Where the index sits in the shard.
    pub(crate) index_location: IndexLocation,
}

#[derive(Deserialize)]
struct Settings {
    chunk_shape: Vec<u64>,
    codecs: Vec<CodecMetadata>,
    index_codecs: Option<Vec<CodecMetadata>>,
    index_location: Option<String>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToBytesCodec>, ConfigError> {
    let s = settings::<Settings>(name, config)?;
    let index_codecs = s.index_codecs.unwrap_or_else(|| {
        vec![
            CodecMetadata::named("bytes").with("endian", json!("little")),
            CodecMetadata::named("crc32c"),
        ]
    });
    let index_location =
        IndexLocation::parse(s.index_location.as_deref(), IndexLocation::End, name)?;
    let sharding = Sharding {
        chunk_shape: s.chunk_shape,
        codecs: CodecChain::parse(&s.codecs, None)?,
        index_codecs: CodecChain::parse(&index_codecs, None)?,
        index_location,
    };
    if !sharding
        .index_codecs
        .array_to_bytes()
        .as_any()
        .is::<Bytes>()
        || sharding.index_codecs.has_array_to_array()
        || sharding.index_len(1).is_none()
    {
        return Err(ConfigError::invalid(
            name,
            "configuration.index_codecs",
            "bytes, optionally followed by crc32c",
        ));
    }
    Ok(Arc::new(sharding))
}

/// Where a chunk's index lies .
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexPosition {
    /// The first `len` bytes.
    Prefix(u64),
    /// The last `len` bytes.
    Suffix(u64),
}

/// Where one inner chunk lies in its shard: `None` when absent (fill value).
pub(crate) type InnerRange = Option<Range<u64>>;

impl Sharding {
    /// A shard of inner chunks of `chunk_shape` with `codecs`, the index at the end
    /// with `crc32c`, as zarr-python writes by default.
    pub(crate) fn new(chunk_shape: Vec<u64>, codecs: CodecChain) -> Self {
        let index_codecs = CodecChain::new(
            vec![],
            Arc::new(Bytes {
                endian: Some(Endian::Little),
            }),
            vec![Arc::new(super::crc32c::Crc32c)],
        );
        Self {
            chunk_shape,
            codecs,
            index_codecs,
            index_location: IndexLocation::End,
        }
    }

    /// Inner chunks per dimension in a shard of `shard` shape.
    pub(crate) fn grid(&self, shard: &[u64]) -> Vec<u64> {
        shard
            .iter()
            .zip(&self.chunk_shape)
            .map(|(s, c)| s.div_ceil((*c).max(1)))
            .collect()
    }

    /// The encoded size of an index of `n` entries, when fixed (`bytes` then any
    /// number of fixed-size codecs such as `crc32c`).
    pub(crate) fn index_len(&self, n: u64) -> Option<u64> {
        let mut size = n.checked_mul(16)?;
        for codec in self.index_codecs.bytes_to_bytes() {
            size = size.checked_add(codec.fixed_overhead()?)?;
        }
        Some(size)
    }

    /// Where the index of a shard of `n` inner chunks lies: its first or last bytes.
    pub(crate) fn index_range(&self, n: u64) -> Result<IndexPosition, ChunkError> {
        let len = self.index_len(n).ok_or_else(|| ChunkError::Decompress {
            codec: "sharding_indexed",
            message: "index codecs of variable size".into(),
        })?;
        Ok(match self.index_location {
            IndexLocation::Start => IndexPosition::Prefix(len),
            IndexLocation::End => IndexPosition::Suffix(len),
        })
    }

    /// Decode an index of `n` entries (`encoded` is exactly the index bytes) into
    /// each inner chunk's byte range, checked against a shard of `shard_len` bytes.
    pub(crate) fn decode_index(
        &self,
        encoded: Buffer,
        n: u64,
        shard_len: u64,
    ) -> Result<Vec<InnerRange>, ChunkError> {
        let index = self
            .index_codecs
            .decode_bytes(encoded, usize::try_from(n * 16).unwrap_or(usize::MAX))?;
        if index.len() as u64 != n * 16 {
            return Err(ChunkError::SizeMismatch {
                expected: n * 16,
                found: index.len() as u64,
            });
        }
        let big = is_big_endian(&self.index_codecs);
        let words = index.as_slice().chunks_exact(8).map(|w| {
            let w: [u8; 8] = w.try_into().unwrap_or([0xff; 8]);
            if big {
                u64::from_be_bytes(w)
            } else {
                u64::from_le_bytes(w)
            }
        });
        let words: Vec<u64> = words.collect();
        words
            .chunks_exact(2)
            .enumerate()
            .map(|(j, entry)| {
                let (offset, nbytes) = (entry[0], entry[1]);
                if offset == u64::MAX && nbytes == u64::MAX {
                    return Ok(None);
                }
                match offset.checked_add(nbytes) {
                    Some(end) if end <= shard_len => Ok(Some(offset..end)),
                    _ => Err(ChunkError::OffsetOutOfBounds {
                        index: j,
                        offset: offset.saturating_add(nbytes),
                        data_len: shard_len,
                    }),
                }
            })
            .collect()
    }

    /// Decode the inner chunks `parts` (each one's encoded bytes, or `None` when
    /// absent) lying on `grid` in C order, and gather the elements of `region`
    /// (anchored at the first part) in C order (one copy).
    pub(crate) fn decode_inner(
        &self,
        parts: Vec<Option<Buffer>>,
        grid: &[u64],
        region: &[u64],
        ctx: &DecodeContext,
    ) -> Result<ArrayRef, ChunkError> {
        let decoded = self.decode_parts(parts, ctx)?;
        Ok(gather(&decoded, grid, &self.chunk_shape, region)?)
    }

    /// [`Sharding::decode_inner`] for 1-D inner chunks, without the gathering
    /// copy: the first `elements` elements as runs, one per inner chunk.
    pub(crate) fn decode_inner_runs(
        &self,
        parts: Vec<Option<Buffer>>,
        elements: u64,
        ctx: &DecodeContext,
    ) -> Result<Vec<ArrayRef>, ChunkError> {
        let decoded = self.decode_parts(parts, ctx)?;
        Ok(runs(&decoded, self.chunk_shape[0], elements)?)
    }

    /// Decode each inner chunk of `parts`. All of them together share the byte
    /// budget `ctx.max_bytes`: each may use what the ones before it left.
    fn decode_parts(
        &self,
        parts: Vec<Option<Buffer>>,
        ctx: &DecodeContext,
    ) -> Result<Vec<Part>, ChunkError> {
        let mut budget = ctx.max_bytes;
        let mut decoded = Vec::with_capacity(parts.len());
        for part in parts {
            let Some(bytes) = part else {
                let fill = fill_array(
                    &ctx.data_type,
                    ctx.fill_value,
                    1,
                    ctx.string_type,
                    ctx.max_bytes,
                )?;
                decoded.push(Part::Missing(fill));
                continue;
            };
            let mut inner_ctx = ctx.with_shape(&self.chunk_shape);
            inner_ctx.max_bytes = budget;
            let array = self.codecs.decode(bytes, &inner_ctx)?;
            budget = budget
                .checked_sub(array.get_array_memory_size())
                .ok_or_else(|| ChunkError::TooLarge {
                    codec: "sharding_indexed",
                    limit: ctx.max_bytes as u64,
                })?;
            decoded.push(Part::Present(array));
        }
        Ok(decoded)
    }

    /// A whole 1-D shard as runs, one per inner chunk (see
    /// [`Sharding::decode_inner_runs`]).
    pub(crate) fn decode_runs(
        &self,
        bytes: Buffer,
        ctx: &DecodeContext,
    ) -> Result<Vec<ArrayRef>, ChunkError> {
        let (parts, _) = self.split(bytes, ctx)?;
        self.decode_inner_runs(parts, ctx.shape.iter().product(), ctx)
    }

    /// A whole shard's inner chunks (each one's bytes, `None` when absent) and
    /// the grid they lie on.
    fn split(
        &self,
        bytes: Buffer,
        ctx: &DecodeContext,
    ) -> Result<(Vec<Option<Buffer>>, Vec<u64>), ChunkError> {
        let grid = self.grid(ctx.shape);
        let n: u64 = grid.iter().product();
        if self.chunk_shape.len() != ctx.shape.len() || self.chunk_shape.contains(&0) {
            return Err(ChunkError::Decompress {
                codec: "sharding_indexed",
                message: format!(
                    "inner chunk shape {:?} does not fit shard shape {:?}",
                    self.chunk_shape, ctx.shape
                ),
            });
        }
        let len = bytes.len() as u64;
        let (start, index_len) = match self.index_range(n)? {
            IndexPosition::Prefix(l) => (0, l),
            IndexPosition::Suffix(l) => (len.saturating_sub(l), l),
        };
        if index_len > len {
            return Err(ChunkError::Truncated {
                what: "shard index",
                needed: index_len,
                available: len,
            });
        }
        let index = bytes.slice_with_length(start as usize, index_len as usize);
        let ranges = self.decode_index(index, n, len)?;
        let parts = ranges
            .into_iter()
            .map(|r| {
                r.map(|r| bytes.slice_with_length(r.start as usize, (r.end - r.start) as usize))
            })
            .collect();
        Ok((parts, grid))
    }

    /// Encode a whole shard of `shape` from `array` (at most its element count, in
    /// C order): inner chunks in C order, each through the inner codecs; inner
    /// chunks wholly past `array`'s end are absent. The index follows, at the end.
    fn encode_shard(&self, array: &ArrayRef, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        let grid = self.grid(shape);
        let n: u64 = grid.iter().product();
        let inner_len: u64 = self.chunk_shape.iter().product();
        let one_d = shape.len() == 1;
        if !one_d && array.len() as u64 != shape.iter().product::<u64>() {
            return Err(EncodeError::PartialChunk {
                codec: "sharding_indexed",
                values: array.len() as u64,
                shape: shape.to_vec(),
            });
        }
        if self.index_location != IndexLocation::End {
            return Err(EncodeError::UnsupportedOption {
                codec: "sharding_indexed",
                option: "index_location",
                value: "start",
            });
        }
        let mut out = Vec::new();
        let mut index = Vec::with_capacity(n as usize * 16);
        for j in 0..n {
            let values = if one_d {
                let start = (j * inner_len).min(array.len() as u64) as usize;
                let end = ((j + 1) * inner_len).min(array.len() as u64) as usize;
                array.slice(start, end - start)
            } else {
                let origin: Vec<u64> = crate::grid::unravel(j, &grid)
                    .iter()
                    .zip(&self.chunk_shape)
                    .map(|(i, c)| i * c)
                    .collect();
                cut(array, shape, &origin, &self.chunk_shape)
                    .map_err(|source| EncodeError::Arrow { source })?
            };
            if values.is_empty() {
                index.extend_from_slice(&u64::MAX.to_le_bytes());
                index.extend_from_slice(&u64::MAX.to_le_bytes());
                continue;
            }
            let bytes =
                self.codecs
                    .encode(&values, &self.chunk_shape)
                    .map_err(|(codec, source)| EncodeError::Inner {
                        what: format!("inner chunk {j}"),
                        codec,
                        source: Box::new(source),
                    })?;
            index.extend_from_slice(&(out.len() as u64).to_le_bytes());
            index.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&bytes);
        }
        let index = self.index_codecs.encode_bytes(index)?;
        out.extend_from_slice(&index);
        Ok(out)
    }
}

/// A shard read in part: its index, then the rows of inner chunks that hold
/// the rows wanted.
impl PartialDecoder for Sharding {
    fn part_rows(&self) -> u64 {
        self.chunk_shape.first().copied().unwrap_or(1).max(1)
    }

    fn plan(
        &self,
        shape: &[u64],
        want: Range<u64>,
        runs: bool,
    ) -> Result<Box<dyn PartialRead>, ChunkError> {
        if shape.is_empty() || shape.len() != self.chunk_shape.len() {
            return Err(ChunkError::Decompress {
                codec: "sharding_indexed",
                message: format!(
                    "inner chunk shape {:?} does not fit shard shape {shape:?}",
                    self.chunk_shape
                ),
            });
        }
        let grid = self.grid(shape);
        let n = grid.iter().product();
        let index = self.index_range(n)?;
        Ok(Box::new(ShardRead {
            sharding: self.clone(),
            per_row: grid[1..].iter().product::<u64>().max(1),
            n,
            index,
            want,
            runs: runs && shape.len() == 1,
            stage: ShardStage::Index,
        }))
    }

    fn decode_runs(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<Vec<ArrayRef>, ChunkError> {
        Sharding::decode_runs(self, bytes, ctx)
    }
}

/// Some rows of one shard (see [`Sharding::plan`](PartialDecoder::plan)).
#[derive(Debug)]
struct ShardRead {
    sharding: Sharding,
    /// Inner chunks in one row of them, and in all.
    per_row: u64,
    n: u64,
    index: IndexPosition,
    /// The rows wanted.
    want: Range<u64>,
    runs: bool,
    stage: ShardStage,
}

#[derive(Debug)]
enum ShardStage {
    Index,
    /// Rows of inner chunks from `first` on: where each inner chunk lies.
    Inner {
        first: u64,
        ranges: Vec<InnerRange>,
    },
    Finished,
}

impl PartialRead for ShardRead {
    fn start(&mut self) -> Vec<ChunkRange> {
        vec![match self.index {
            IndexPosition::Prefix(len) => ChunkRange::Bounded(0..len),
            IndexPosition::Suffix(len) => ChunkRange::Suffix(len),
        }]
    }

    fn resume(
        &mut self,
        buffers: Vec<Buffer>,
        chunk_len: u64,
        ctx: &DecodeContext,
    ) -> Result<PartialStep, ChunkError> {
        match std::mem::replace(&mut self.stage, ShardStage::Finished) {
            ShardStage::Index => {
                let index = buffers.into_iter().next().unwrap_or_default();
                let (first, ranges) = self.inner_ranges(index, chunk_len)?;
                // An encoded inner chunk is at most its decoded size plus overhead.
                let limit = (ctx.max_bytes as u64).saturating_add(1 << 20);
                let mut asked = Vec::new();
                for range in ranges.iter().flatten() {
                    if range.end - range.start > limit {
                        return Err(ChunkError::TooLarge {
                            codec: "sharding_indexed inner chunk",
                            limit,
                        });
                    }
                    asked.push(ChunkRange::Bounded(range.clone()));
                }
                if asked.is_empty() {
                    return self.decode(first, &ranges, Vec::new(), ctx);
                }
                self.stage = ShardStage::Inner { first, ranges };
                Ok(PartialStep::Fetch(asked))
            }
            ShardStage::Inner { first, ranges } => self.decode(first, &ranges, buffers, ctx),
            ShardStage::Finished => Err(ChunkError::Decompress {
                codec: "sharding_indexed",
                message: "a partial read resumed after it finished".into(),
            }),
        }
    }
}

impl ShardRead {
    /// The index is in: the first row of inner chunks the wanted rows lie in,
    /// and where each inner chunk of those rows lies.
    fn inner_ranges(
        &self,
        index: Buffer,
        chunk_len: u64,
    ) -> Result<(u64, Vec<InnerRange>), ChunkError> {
        let expected = self.sharding.index_len(self.n).unwrap_or(u64::MAX);
        if index.len() as u64 != expected {
            return Err(ChunkError::Truncated {
                what: "shard index",
                needed: expected,
                available: index.len() as u64,
            });
        }
        let all = self.sharding.decode_index(index, self.n, chunk_len)?;
        let part_rows = self.sharding.part_rows();
        let rows_of_parts = self.n / self.per_row;
        let first = (self.want.start / part_rows).min(rows_of_parts);
        let last = self
            .want
            .end
            .div_ceil(part_rows)
            .min(rows_of_parts)
            .max(first);
        let ranges = all[(first * self.per_row) as usize..(last * self.per_row) as usize].to_vec();
        Ok((first, ranges))
    }

    /// The inner chunks of the rows of them from `first` on are in
    /// (`buffers`: the present ones, in order): decode them.
    fn decode(
        &self,
        first: u64,
        ranges: &[InnerRange],
        buffers: Vec<Buffer>,
        ctx: &DecodeContext,
    ) -> Result<PartialStep, ChunkError> {
        let present = ranges.iter().flatten().count();
        if buffers.len() != present {
            return Err(ChunkError::CountMismatch {
                expected: present as u64,
                found: buffers.len() as u64,
            });
        }
        let mut buffers = buffers.into_iter();
        let parts: Vec<Option<Buffer>> = ranges
            .iter()
            .map(|r| r.as_ref().and_then(|_| buffers.next()))
            .collect();
        let part_rows = self.sharding.part_rows();
        let first_row = first.saturating_mul(part_rows);
        let row_count = ranges.len() as u64 / self.per_row;
        let rows = row_count
            .saturating_mul(part_rows)
            .min(ctx.shape[0].saturating_sub(first_row));
        // The rows of inner chunks span every other dimension: the first
        // element decoded is the first row's, in C order.
        let offset = ctx.shape[1..]
            .iter()
            .fold(first_row, |acc, &d| acc.saturating_mul(d));
        let runs = if self.runs {
            self.sharding.decode_inner_runs(parts, rows, ctx)?
        } else {
            let mut grid = self.sharding.grid(ctx.shape);
            grid[0] = row_count;
            let mut region = ctx.shape.to_vec();
            region[0] = rows;
            vec![self.sharding.decode_inner(parts, &grid, &region, ctx)?]
        };
        Ok(PartialStep::Done { offset, runs })
    }
}

impl ArrayToBytesCodec for Sharding {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        let (parts, grid) = self.split(bytes, ctx)?;
        self.decode_inner(parts, &grid, ctx.shape, ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        self.encode_shard(&arrow_array::make_array(array.to_data()), shape)
    }

    fn metadata(&self) -> Option<Value> {
        Some(json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": self.chunk_shape,
            "codecs": self.codecs.metadata(),
            "index_codecs": self.index_codecs.metadata(),
            "index_location": match self.index_location {
                IndexLocation::Start => "start",
                IndexLocation::End => "end",
            },
        }}))
    }

    fn is_variable_length(&self) -> bool {
        self.codecs.array_to_bytes().is_variable_length()
    }

    fn partial(&self, ndim: usize) -> Option<&dyn PartialDecoder> {
        (ndim >= 1 && self.chunk_shape.len() == ndim).then_some(self as &dyn PartialDecoder)
    }

    fn check_shape(&self, shape: &[u64]) -> Result<(), ConfigError> {
        let inner = &self.chunk_shape;
        if inner.len() != shape.len()
            || inner.contains(&0)
            || shape.iter().zip(inner).any(|(s, c)| s % c != 0)
        {
            return Err(ConfigError::invalid_found(
                "sharding_indexed",
                "configuration.chunk_shape",
                format!("an inner chunk shape that divides the shard shape {shape:?}"),
                format!("{inner:?}"),
            ));
        }
        self.codecs.check_shape(inner)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
