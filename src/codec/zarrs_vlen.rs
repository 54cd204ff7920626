//! `zarrs.vlen`: an Arrow-style offsets index and a data section, each through its
//! own codec chain (experimental in zarrs).
//!
//! Spec: zarrs `array_to_bytes::vlen` (`shared/seeds/zarrs-vlen-codec.txt`). v3
//! names `zarrs.vlen`, `https://codec.zarrs.dev/array_to_bytes/vlen`, `vlen` (old);
//! no v2 id.
//!
//! ```json
//! {"name": "zarrs.vlen", "configuration": {
//!    "data_codecs": [{"name": "bytes"}],
//!    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
//!    "index_data_type": "uint64", "index_location": "start"}}
//! ```
//!
//! ```text
//! start: | u64 L | L bytes: encoded index | encoded data |
//! end:   | encoded data | L bytes: encoded index | u64 L |
//! ```
//!
//! The draft 0.0 configuration has no `index_location` (it means `start`).
//!
//! Partial reads, when the data codecs do not compress: the index length, the
//! index (in one request with the length when the index is not compressed
//! either: its size is then known), then only the values the wanted elements
//! span.
//! Copies: with plain `bytes` index and data codecs, none: the offsets and values
//! are slices of the decoded chunk (aligned when the chunk buffer is, since the
//! index starts at byte 8); compressed sections are decompressed once.

use std::any::Any;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::arrow_values::offsets_and_values;
use super::bytes::{Bytes, is_big_endian, swap_endian, swap_endian_in_place};
use super::{
    ArrayToBytesCodec, ChunkRange, CodecChain, ConfigError, DecodeContext, IndexLocation,
    PartialDecoder, PartialRead, PartialStep, padding, settings,
};
use crate::error::{ChunkError, EncodeError};
use crate::metadata::{CodecMetadata, Endian};
use crate::offsets::{OffsetKind, RawOffsets, from_offsets};

/// The names of `zarrs.vlen`.
pub(crate) const NAMES: &[&str] = &[
    "zarrs.vlen",
    "https://codec.zarrs.dev/array_to_bytes/vlen",
    "vlen",
];

/// The integer type of `zarrs.vlen` offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetWidth {
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
}

impl OffsetWidth {
    /// The offsets as stored, and their width in bytes.
    fn kind(self) -> (OffsetKind, u64) {
        match self {
            OffsetWidth::U32 => (OffsetKind::U32, 4),
            OffsetWidth::U64 => (OffsetKind::U64, 8),
        }
    }
}

/// The `zarrs.vlen` codec.
#[derive(Debug, Clone)]
pub(crate) struct ZarrsVlen {
    /// Offset integer type.
    pub(crate) index_data_type: OffsetWidth,
    /// Index position.
    pub(crate) index_location: IndexLocation,
    /// Codecs of the index (a `bytes` codec, then bytes->bytes codecs).
    pub(crate) index_codecs: CodecChain,
    /// Codecs of the data (a `bytes` codec, then bytes->bytes codecs).
    pub(crate) data_codecs: CodecChain,
}

impl ZarrsVlen {
    /// The layout zarrow writes: the index at the start, plain `bytes` index and
    /// data codecs, uint64 offsets when `large`, else uint32.
    pub(crate) fn plain(large: bool) -> Self {
        let bytes = |endian| CodecChain::new(vec![], Arc::new(Bytes { endian }), vec![]);
        Self {
            index_data_type: if large {
                OffsetWidth::U64
            } else {
                OffsetWidth::U32
            },
            index_location: IndexLocation::Start,
            index_codecs: bytes(Some(Endian::Little)),
            data_codecs: bytes(None),
        }
    }

    /// The index length stored in the first or last 8 bytes of `head` (of a
    /// chunk of `chunk_len` bytes), checked to fit in the chunk.
    fn stored_index_len(&self, head: &[u8], chunk_len: u64) -> Result<u64, ChunkError> {
        let at = match self.index_location {
            IndexLocation::Start => 0,
            IndexLocation::End => head.len().saturating_sub(8),
        };
        let len = read_u64(head, at)?;
        if len > chunk_len.saturating_sub(8) {
            return Err(ChunkError::Truncated {
                what: "zarrs.vlen index",
                needed: len,
                available: chunk_len.saturating_sub(8),
            });
        }
        Ok(len)
    }

    /// Decode `encoded`, the index of a chunk of `n` elements, into its `n + 1`
    /// offsets.
    fn decode_offsets(
        &self,
        encoded: Buffer,
        n: usize,
        max_bytes: usize,
    ) -> Result<RawOffsets, ChunkError> {
        let (kind, width) = self.index_data_type.kind();
        let limit = usize::try_from((n as u64).saturating_add(1).saturating_mul(width))
            .unwrap_or(usize::MAX)
            .min(max_bytes);
        let mut index = self.index_codecs.decode_bytes(encoded, limit)?;
        if is_big_endian(&self.index_codecs) {
            index = swap_endian(&index, width as usize);
        }
        RawOffsets::new(index, kind, n)
    }
}

#[derive(Deserialize)]
struct Settings {
    index_data_type: Option<String>,
    index_location: Option<String>,
    index_codecs: Option<Vec<CodecMetadata>>,
    data_codecs: Option<Vec<CodecMetadata>>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToBytesCodec>, ConfigError> {
    let s = settings::<Settings>(name, config)?;
    let index_data_type = match s.index_data_type.as_deref() {
        None | Some("uint64") => OffsetWidth::U64,
        Some("uint32") => OffsetWidth::U32,
        Some(other) => {
            return Err(ConfigError::invalid_found(
                name,
                "configuration.index_data_type",
                "\"uint64\" or \"uint32\"",
                format!("{other:?}"),
            ));
        }
    };
    let index_location =
        IndexLocation::parse(s.index_location.as_deref(), IndexLocation::Start, name)?;
    let chain =
        |field: &str, list: Option<Vec<CodecMetadata>>| -> Result<CodecChain, ConfigError> {
            let list = list.unwrap_or_else(|| vec![CodecMetadata::named("bytes")]);
            let inner = CodecChain::parse(&list, None)?;
            if !inner.array_to_bytes().as_any().is::<Bytes>() || inner.has_array_to_array() {
                return Err(ConfigError::invalid(
                    name,
                    format!("configuration.{field}"),
                    "the bytes codec",
                ));
            }
            Ok(inner)
        };
    Ok(Arc::new(ZarrsVlen {
        index_data_type,
        index_location,
        index_codecs: chain("index_codecs", s.index_codecs)?,
        data_codecs: chain("data_codecs", s.data_codecs)?,
    }))
}

impl ArrayToBytesCodec for ZarrsVlen {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        decode(self, bytes, ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        let (elements, pad) = padding(array, shape)?;
        let width = self.index_data_type.kind().1 as usize;
        let mut index = Vec::with_capacity((elements + 1) * width);
        let mut data = Vec::new();
        offsets_and_values(array, width, pad, &mut index, &mut data)?;
        if is_big_endian(&self.index_codecs) {
            index = swap_endian_in_place(index, width);
        }
        let index = self.index_codecs.encode_bytes(index)?;
        let data = self.data_codecs.encode_bytes(data)?;
        let len = (index.len() as u64).to_le_bytes();
        let mut out = Vec::with_capacity(8 + index.len() + data.len());
        match self.index_location {
            IndexLocation::Start => {
                out.extend_from_slice(&len);
                out.extend_from_slice(&index);
                out.extend_from_slice(&data);
            }
            IndexLocation::End => {
                out.extend_from_slice(&data);
                out.extend_from_slice(&index);
                out.extend_from_slice(&len);
            }
        }
        Ok(out)
    }

    fn metadata(&self) -> Option<Value> {
        Some(json!({"name": "zarrs.vlen", "configuration": {
            "data_codecs": self.data_codecs.metadata(),
            "index_codecs": self.index_codecs.metadata(),
            "index_data_type": match self.index_data_type {
                OffsetWidth::U32 => "uint32",
                OffsetWidth::U64 => "uint64",
            },
            "index_location": match self.index_location {
                IndexLocation::Start => "start",
                IndexLocation::End => "end",
            },
        }}))
    }

    fn is_variable_length(&self) -> bool {
        true
    }

    fn partial(&self, ndim: usize) -> Option<&dyn PartialDecoder> {
        // Compressed values are fetched whole anyway; a checksum after them
        // (`crc32c`) lets ranges of them through.
        (ndim >= 1 && data_trailing(&self.data_codecs).is_some())
            .then_some(self as &dyn PartialDecoder)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Any rows of a chunk: the offsets, then the values they span.
impl PartialDecoder for ZarrsVlen {
    fn part_rows(&self) -> u64 {
        1
    }

    fn plan(
        &self,
        shape: &[u64],
        want: Range<u64>,
        _runs: bool,
    ) -> Result<Box<dyn PartialRead>, ChunkError> {
        let row_len: u64 = shape.iter().skip(1).product();
        let n: u64 = shape.iter().product();
        let elements =
            want.start.saturating_mul(row_len).min(n)..want.end.saturating_mul(row_len).min(n);
        let width = self.index_data_type.kind().1;
        // An index that is not compressed has a known size.
        let index_len = || {
            let mut len = n.checked_add(1)?.checked_mul(width)?;
            for codec in self.index_codecs.bytes_to_bytes() {
                len = len.checked_add(codec.fixed_overhead()?)?;
            }
            Some(len)
        };
        let index_len = index_len();
        let trailing = data_trailing(&self.data_codecs).ok_or_else(|| ChunkError::Decompress {
            codec: "zarrs.vlen",
            message: "compressed values cannot be read in part".into(),
        })?;
        Ok(Box::new(VlenRead {
            codec: self.clone(),
            n,
            elements,
            index_len,
            trailing,
            stage: VlenStage::Length,
        }))
    }

    fn decode_runs(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<Vec<ArrayRef>, ChunkError> {
        Ok(vec![decode(self, bytes, ctx)?])
    }
}

/// Some elements of one `zarrs.vlen` chunk (see [`PartialDecoder::plan`]).
#[derive(Debug)]
struct VlenRead {
    codec: ZarrsVlen,
    /// The chunk's elements, and those wanted.
    n: u64,
    elements: Range<u64>,
    /// The encoded index's size, when known before reading it.
    index_len: Option<u64>,
    /// The bytes the data codecs append after the values (`crc32c`).
    trailing: u64,
    stage: VlenStage,
}

#[derive(Debug)]
enum VlenStage {
    /// The index length (and the index, when its size is known) was asked for.
    Length,
    /// The index of `len` bytes was asked for.
    Index {
        len: u64,
    },
    /// The values of the wanted elements were asked for.
    Values {
        offsets: RawOffsets,
    },
    Finished,
}

impl VlenRead {
    /// The ranges of the index length, and of the index after it when `len`
    /// is known.
    fn head(&self, len: Option<u64>) -> ChunkRange {
        let with = 8 + len.unwrap_or(0);
        match self.codec.index_location {
            IndexLocation::Start => ChunkRange::Bounded(0..with),
            IndexLocation::End => ChunkRange::Suffix(with),
        }
    }

    /// The encoded index of `len` bytes is in `index`: the offsets of the wanted
    /// elements, and the range of their values in the chunk.
    fn offsets(
        &self,
        index: Buffer,
        len: u64,
        chunk_len: u64,
        ctx: &DecodeContext,
    ) -> Result<(RawOffsets, Range<u64>), ChunkError> {
        let n = usize::try_from(self.n).unwrap_or(usize::MAX);
        let all = self.codec.decode_offsets(index, n, ctx.max_bytes)?;
        let (lo, hi) = (self.elements.start as usize, self.elements.end as usize);
        let (offsets, values) = all.window(lo..hi)?;
        // The data section (after the index, or before it), and in it the
        // values, before any appended bytes.
        let data = match self.codec.index_location {
            IndexLocation::Start => 8 + len..chunk_len,
            IndexLocation::End => 0..chunk_len - 8 - len,
        };
        let data = data.start..data.end.saturating_sub(self.trailing).max(data.start);
        let range = data.start.saturating_add(values.start)..data.start.saturating_add(values.end);
        if range.end > data.end {
            return Err(ChunkError::OffsetOutOfBounds {
                index: hi,
                offset: values.end,
                data_len: data.end - data.start,
            });
        }
        Ok((offsets, range))
    }
}

impl PartialRead for VlenRead {
    fn start(&mut self) -> Vec<ChunkRange> {
        vec![self.head(self.index_len)]
    }

    fn resume(
        &mut self,
        buffers: Vec<Buffer>,
        chunk_len: u64,
        ctx: &DecodeContext,
    ) -> Result<PartialStep, ChunkError> {
        let first = buffers.into_iter().next().unwrap_or_default();
        let offsets = match std::mem::replace(&mut self.stage, VlenStage::Finished) {
            VlenStage::Length => {
                let len = self.codec.stored_index_len(first.as_slice(), chunk_len)?;
                match self.index_len {
                    // The index came with its length: it must be the size expected.
                    Some(expected) => {
                        if len != expected || first.len() as u64 != 8 + len {
                            return Err(ChunkError::SizeMismatch {
                                expected,
                                found: len,
                            });
                        }
                        let at = match self.codec.index_location {
                            IndexLocation::Start => 8,
                            IndexLocation::End => 0,
                        };
                        let index = first.slice_with_length(at, len as usize);
                        self.offsets(index, len, chunk_len, ctx)?
                    }
                    None => {
                        let range = match self.codec.index_location {
                            IndexLocation::Start => 8..8 + len,
                            IndexLocation::End => chunk_len - 8 - len..chunk_len - 8,
                        };
                        self.stage = VlenStage::Index { len };
                        return Ok(PartialStep::Fetch(vec![ChunkRange::Bounded(range)]));
                    }
                }
            }
            VlenStage::Index { len } => {
                if first.len() as u64 != len {
                    return Err(ChunkError::Truncated {
                        what: "zarrs.vlen index",
                        needed: len,
                        available: first.len() as u64,
                    });
                }
                self.offsets(first, len, chunk_len, ctx)?
            }
            VlenStage::Values { offsets } => {
                let array = from_offsets(offsets, first, ctx.data_type.is_text(), ctx.string_type)?;
                return Ok(PartialStep::Done {
                    offset: self.elements.start,
                    runs: vec![array],
                });
            }
            VlenStage::Finished => {
                return Err(ChunkError::Decompress {
                    codec: "zarrs.vlen",
                    message: "a partial read resumed after it finished".into(),
                });
            }
        };
        let (offsets, range) = offsets;
        if range.is_empty() {
            let array = from_offsets(
                offsets,
                Buffer::from(MutableBuffer::new(0)),
                ctx.data_type.is_text(),
                ctx.string_type,
            )?;
            return Ok(PartialStep::Done {
                offset: self.elements.start,
                runs: vec![array],
            });
        }
        self.stage = VlenStage::Values { offsets };
        Ok(PartialStep::Fetch(vec![ChunkRange::Bounded(range)]))
    }
}

/// The bytes `codecs` append after the values, when each of them only appends
/// (`crc32c`); `None` when one transforms them (compression).
fn data_trailing(codecs: &CodecChain) -> Option<u64> {
    codecs
        .bytes_to_bytes()
        .iter()
        .try_fold(0u64, |sum, codec| sum.checked_add(codec.trailing_bytes()?))
}

fn read_u64(bytes: &[u8], pos: usize) -> Result<u64, ChunkError> {
    bytes
        .get(pos..pos + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| ChunkError::Truncated {
            what: "zarrs.vlen index length",
            needed: 8,
            available: bytes.len() as u64,
        })
}

/// Decode one chunk.
fn decode(config: &ZarrsVlen, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
    let len = bytes.len() as u64;
    let l = config.stored_index_len(bytes.as_slice(), len)?;
    let (index_enc, data_enc) = match config.index_location {
        IndexLocation::Start => (
            bytes.slice_with_length(8, l as usize),
            bytes.slice(8 + l as usize),
        ),
        IndexLocation::End => {
            let data_len = (len - 8 - l) as usize;
            (
                bytes.slice_with_length(data_len, l as usize),
                bytes.slice_with_length(0, data_len),
            )
        }
    };
    let offsets = config.decode_offsets(index_enc, ctx.elements, ctx.max_bytes)?;
    let values = if data_enc.is_empty() {
        Buffer::from(MutableBuffer::new(0))
    } else {
        config.data_codecs.decode_bytes(data_enc, ctx.max_bytes)?
    };
    from_offsets(offsets, values, ctx.data_type.is_text(), ctx.string_type)
}
