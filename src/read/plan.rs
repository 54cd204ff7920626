//! Plans, sans IO: what reading one chunk (or some of its elements) needs from the
//! store, and how the fetched bytes become an Arrow array.
//!
//! ```text
//! ChunkRead::start ──▶ Step::Fetch(Request: key, whole or byte ranges)
//!        ▲                        │ any executor: the sync one below, an async one
//!        │                        ▼ (object_store) later; neither decodes
//!        └── ChunkRead::resume(Fetched) ──▶ … ──▶ Step::Done(Decoded)
//! ```
//!
//! An unsharded chunk is one whole-value fetch. A shard of which only some inner
//! chunks are wanted is two: its index (a suffix range when it sits at the end),
//! then the inner chunks the wanted elements lie in, as coalesced ranges. Decoding
//! is a pure function of the fetched bytes.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

use super::gate;
use crate::codec::sharding::{IndexPosition, InnerRange, Sharding};
use crate::codec::{CodecChain, DecodeContext};
use crate::error::{ChunkError, Error, Result};
use crate::store::{ByteRange, RangeRead, Store};

/// What one chunk read asks the store for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The value's key.
    pub key: String,
    /// `None`: the whole value, refused past `max_len` bytes. Else these ranges.
    pub ranges: Option<Vec<ByteRange>>,
    /// The most bytes a whole-value fetch may return.
    pub max_len: u64,
}

/// What the store gave for a [`Request`].
#[derive(Debug)]
pub(crate) enum Fetched {
    /// The key is absent: the chunk is missing (fill value).
    Missing,
    /// The whole value.
    Whole(Buffer),
    /// The ranges asked for.
    Ranges(RangeRead),
}

/// Decoded elements of a chunk: C order, starting at element `offset` of it.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// The first element's index within the chunk.
    pub offset: u64,
    /// The elements: one array, or consecutive runs (a 1-D shard read as runs:
    /// see [`ChunkRead::with_runs`]).
    pub runs: Vec<ArrayRef>,
}

/// The layout-only sharding codec of `codecs` (no other codec around it), when a
/// 1-D array's shards have 1-D inner chunks: the shards that can be read in part
/// and decoded as runs.
pub(crate) fn sharding_1d(codecs: &CodecChain, ndim: usize) -> Option<&Sharding> {
    let sharding = codecs
        .is_layout_only()
        .then(|| codecs.array_to_bytes().as_any().downcast_ref::<Sharding>())
        .flatten()?;
    (ndim == 1 && sharding.chunk_shape.len() == 1).then_some(sharding)
}

/// The next thing a chunk read needs.
#[derive(Debug)]
pub(crate) enum Step {
    /// Fetch this and call [`ChunkRead::resume`] with it.
    Fetch(Request),
    /// Finished: the decoded elements, or `None` for a missing chunk.
    Done(Option<Decoded>),
}

/// Reading one chunk: a small state machine driven by an executor.
#[derive(Debug)]
pub(crate) struct ChunkRead<'a> {
    key: String,
    codecs: &'a CodecChain,
    ctx: DecodeContext<'a>,
    /// The elements wanted, for a partial read of a 1-D shard.
    partial: Option<(&'a Sharding, Range<u64>)>,
    /// A 1-D shard decoded as runs, one per inner chunk (no gathering copy).
    runs: Option<&'a Sharding>,
    /// The most bytes one fetched value (or inner chunk) may have.
    max_encoded: u64,
    stage: Stage,
}

#[derive(Debug)]
enum Stage {
    Start,
    Whole,
    /// The index of a shard of `n` inner chunks.
    Index {
        n: u64,
    },
    Inner {
        /// Inner chunks `first..first + ranges.len()` and where each lies.
        first: u64,
        ranges: Vec<InnerRange>,
    },
    Finished,
}

impl<'a> ChunkRead<'a> {
    /// A read of the chunk at `key` of `ctx.shape`, wanting elements `want` of it
    /// (`None`: all). Only a 1-D shard whose codecs are sharding alone is read in
    /// part; every other chunk is fetched whole (and the caller slices).
    pub(crate) fn new(
        key: String,
        codecs: &'a CodecChain,
        ctx: DecodeContext<'a>,
        want: Option<Range<u64>>,
    ) -> Self {
        let sharding = sharding_1d(codecs, ctx.shape.len());
        let partial = match (sharding, want) {
            (Some(sharding), Some(want))
                if !want.is_empty() && (want.start > 0 || want.end < ctx.shape[0]) =>
            {
                Some((sharding, want))
            }
            _ => None,
        };
        // An encoded chunk is at most its decoded size plus codec overhead.
        let max_encoded = (ctx.max_bytes as u64).saturating_add(1 << 20);
        Self {
            key,
            codecs,
            ctx,
            partial,
            runs: None,
            max_encoded,
            stage: Stage::Start,
        }
    }

    /// Decode a 1-D shard's inner chunks as separate runs instead of gathering
    /// them into one array (a copy of every element). No effect on other chunks.
    pub(crate) fn with_runs(mut self) -> Self {
        self.runs = sharding_1d(self.codecs, self.ctx.shape.len());
        self
    }

    /// The first step.
    pub(crate) fn start(&mut self) -> Result<Step, ChunkError> {
        self.resume(Fetched::Missing)
    }

    /// The next step, given what the last [`Step::Fetch`] fetched.
    pub(crate) fn resume(&mut self, fetched: Fetched) -> Result<Step, ChunkError> {
        let stage = std::mem::replace(&mut self.stage, Stage::Finished);
        match (stage, fetched) {
            (Stage::Start, _) => Ok(self.first_request()),
            (_, Fetched::Missing) => Ok(Step::Done(None)),
            (Stage::Whole, Fetched::Whole(bytes)) => {
                let runs = match self.runs {
                    Some(sharding) => sharding.decode_runs(bytes, &self.ctx)?,
                    None => vec![self.codecs.decode(bytes, &self.ctx)?],
                };
                Ok(Step::Done(Some(Decoded { offset: 0, runs })))
            }
            (Stage::Index { n }, Fetched::Ranges(read)) => self.after_index(n, read),
            (Stage::Inner { first, ranges }, Fetched::Ranges(read)) => {
                self.decode_inner(first, &ranges, read.buffers)
            }
            (stage, fetched) => Err(ChunkError::Decompress {
                codec: "read plan",
                message: format!("{fetched:?} does not answer the request of {stage:?}"),
            }),
        }
    }

    fn first_request(&mut self) -> Step {
        let Some((sharding, _)) = self.partial else {
            self.stage = Stage::Whole;
            return Step::Fetch(Request {
                key: self.key.clone(),
                ranges: None,
                max_len: self.max_encoded,
            });
        };
        let n = sharding.grid(self.ctx.shape).iter().product();
        let range = match sharding.index_range(n) {
            Ok(IndexPosition::Prefix(len)) => ByteRange::Bounded(0..len),
            Ok(IndexPosition::Suffix(len)) => ByteRange::Suffix(len),
            // Validated metadata has a fixed-size index; fall back to a whole read.
            Err(_) => {
                self.partial = None;
                return self.first_request();
            }
        };
        self.stage = Stage::Index { n };
        Step::Fetch(Request {
            key: self.key.clone(),
            ranges: Some(vec![range]),
            max_len: self.max_encoded,
        })
    }

    /// The index is in: ask for the inner chunks the wanted elements lie in.
    fn after_index(&mut self, n: u64, read: RangeRead) -> Result<Step, ChunkError> {
        let Some((sharding, want)) = self.partial.clone() else {
            return Err(ChunkError::Decompress {
                codec: "read plan",
                message: "an index read without a partial read".into(),
            });
        };
        let expected = sharding.index_len(n).unwrap_or(u64::MAX);
        let index = read.buffers.into_iter().next().unwrap_or_default();
        if index.len() as u64 != expected {
            return Err(ChunkError::Truncated {
                what: "shard index",
                needed: expected,
                available: index.len() as u64,
            });
        }
        let all = sharding.decode_index(index, n, read.value_len)?;
        let inner = sharding.chunk_shape[0].max(1);
        let first = (want.start / inner).min(n);
        let last = want.end.div_ceil(inner).min(n).max(first);
        let ranges: Vec<InnerRange> = all[first as usize..last as usize].to_vec();
        let mut asked = Vec::new();
        for range in ranges.iter().flatten() {
            if range.end - range.start > self.max_encoded {
                return Err(ChunkError::TooLarge {
                    codec: "sharding_indexed inner chunk",
                    limit: self.max_encoded,
                });
            }
            asked.push(ByteRange::Bounded(range.clone()));
        }
        if asked.is_empty() {
            return self.decode_inner(first, &ranges, Vec::new());
        }
        self.stage = Stage::Inner { first, ranges };
        Ok(Step::Fetch(Request {
            key: self.key.clone(),
            ranges: Some(asked),
            max_len: self.max_encoded,
        }))
    }

    /// Inner chunks `first..` are in (`buffers`: the present ones, in order).
    fn decode_inner(
        &self,
        first: u64,
        ranges: &[InnerRange],
        buffers: Vec<Buffer>,
    ) -> Result<Step, ChunkError> {
        let Some((sharding, _)) = self.partial.clone() else {
            return Err(ChunkError::Decompress {
                codec: "read plan",
                message: "inner chunks without a partial read".into(),
            });
        };
        let present = ranges.iter().flatten().count();
        if buffers.len() != present {
            return Err(ChunkError::Decompress {
                codec: "read plan",
                message: format!(
                    "the store returned {} ranges for {present} inner chunks",
                    buffers.len()
                ),
            });
        }
        let mut buffers = buffers.into_iter();
        let parts: Vec<Option<Buffer>> = ranges
            .iter()
            .map(|r| r.as_ref().and_then(|_| buffers.next()))
            .collect();
        let inner = sharding.chunk_shape[0];
        let offset = first * inner;
        let elements = (ranges.len() as u64 * inner).min(self.ctx.shape[0].saturating_sub(offset));
        let runs = if self.runs.is_some() {
            sharding.decode_inner_runs(parts, elements, &self.ctx)?
        } else {
            let grid = [ranges.len() as u64];
            vec![sharding.decode_inner(parts, &grid, &[elements], &self.ctx)?]
        };
        Ok(Step::Done(Some(Decoded { offset, runs })))
    }
}

/// Run `read` against `store`, blocking: the sync executor. A remote store's
/// reads decode through the [`gate`]: one at a time per core, in the order they
/// started, with a core kept for the earliest while its bytes are on the way.
///
/// # Errors
/// Store errors; [`Error::Chunk`] naming the key for a corrupt chunk.
pub(crate) fn run(store: &dyn Store, mut read: ChunkRead<'_>) -> Result<Option<Decoded>> {
    let key = read.key.clone();
    let chunk_error = |source| Error::Chunk {
        key: key.clone(),
        source,
    };
    let place = (store.concurrency() > 1).then(|| gate::global().join(gate::current()));
    let mut step = read.start().map_err(chunk_error)?;
    loop {
        let request = match step {
            Step::Done(decoded) => return Ok(decoded),
            Step::Fetch(request) => request,
        };
        let fetched = match &request.ranges {
            None => store
                .get_bounded(&request.key, request.max_len)?
                .map_or(Fetched::Missing, Fetched::Whole),
            Some(ranges) => store
                .get_ranges(&request.key, ranges)?
                .map_or(Fetched::Missing, Fetched::Ranges),
        };
        step = match &place {
            Some(place) => place.run(|| read.resume(fetched)),
            None => read.resume(fetched),
        }
        .map_err(chunk_error)?;
    }
}
