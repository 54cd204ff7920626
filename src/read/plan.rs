//! Plans, sans IO: what reading one chunk (or some of its elements) needs from the
//! store, and how the fetched bytes become an Arrow array.
//!
//! ```text
//! ChunkRead::start ──▶ Step::Fetch(Request: key, whole or byte ranges)
//!        ▲                        │ a driver of the RowDecoder (sync or async)
//!        │                        ▼ fetches it; neither decodes
//!        └── ChunkRead::resume(Fetched) ──▶ … ──▶ Step::Done(Decoded)
//! ```
//!
//! A chunk is one whole-value fetch, unless only some of its rows are wanted (a
//! range along its first dimension, 1-D or N-d) and its codecs can decode it in
//! part: then the codec's sub-plan ([`PartialRead`]) says which ranges to fetch,
//! step by step. A shard asks for its index (a suffix range when it sits at the
//! end), then for the rows of inner chunks the wanted rows lie in, as coalesced
//! ranges; `zarrs.vlen` for its offsets, then for the values they span.
//! Decoding is a pure function of the fetched bytes.

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

use super::ZarrArray;
use crate::codec::{ChunkRange, DecodeContext, PartialDecoder, PartialRead, PartialStep};
use crate::error::{ChunkError, Result};
use crate::store::{ByteRange, RangeRead, Store};

/// What a read asks a store for: one value, whole or some byte ranges of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Answer it with this id ([`RowDecoder::push`](super::RowDecoder::push)).
    pub id: u64,
    /// The value's key (relative to the store's root).
    pub key: String,
    /// `None`: the whole value, refused past `max_len` bytes. Else these ranges.
    pub ranges: Option<Vec<ByteRange>>,
    /// The most bytes a whole-value fetch may return.
    pub max_len: u64,
}

/// What the store gave for a [`Request`].
#[derive(Debug)]
pub enum Fetched {
    /// The key is absent: the chunk is missing (fill value).
    Missing,
    /// The whole value.
    Whole(Buffer),
    /// The ranges asked for.
    Ranges(RangeRead),
}

impl Fetched {
    /// The bytes fetched.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Fetched::Missing => 0,
            Fetched::Whole(b) => b.len() as u64,
            Fetched::Ranges(r) => r.buffers.iter().map(|b| b.len() as u64).sum(),
        }
    }
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

/// The next thing a chunk read needs.
#[derive(Debug)]
pub(crate) enum Step {
    /// Fetch this and call [`ChunkRead::resume`] with it.
    Fetch(Request),
    /// Finished: the decoded elements, or `None` for a missing chunk.
    Done(Option<Decoded>),
}

/// Reading one chunk: a small state machine driven by an executor. It owns what
/// it needs (the array's metadata and codecs are shared), so a push decoder can
/// keep it between steps and move it to a decoding thread.
#[derive(Debug)]
pub(crate) struct ChunkRead {
    array: ZarrArray,
    key: String,
    /// The rows wanted (along the first dimension), for a partial read.
    partial: Option<Range<u64>>,
    /// A 1-D shard decoded as runs, one per inner chunk (no gathering copy).
    runs: bool,
    /// The elements of a 1-D chunk read whole that a read needs: its first
    /// `wanted` (a decoder that can stop there does; `None`: all of them).
    /// Rows after the last one wanted (a LIMIT, late materialization's last
    /// match, the array's end) are not decoded: see
    /// [`ChunkRead::wanting_first`].
    wanted: Option<usize>,
    /// The most bytes one fetched value (or inner chunk) may have.
    max_encoded: u64,
    stage: Stage,
}

#[derive(Debug)]
enum Stage {
    Start,
    Whole,
    /// The codec's sub-plan, which asked for `asked` ranges.
    Partial {
        read: Box<dyn PartialRead>,
        asked: usize,
    },
    Finished,
}

impl ChunkRead {
    /// A read of the chunk at grid `indices` of `array`, wanting rows `want`
    /// of it (along its first dimension; `None`: all). A chunk whose codecs can
    /// decode it in part (`CodecChain::partial`) is read in part; every other
    /// chunk is fetched whole (and the caller slices).
    pub(crate) fn new(array: &ZarrArray, indices: &[u64], want: Option<Range<u64>>) -> Self {
        let shape = &array.metadata().chunk_shape;
        let sharded = array.codecs().partial(shape.len()).is_some();
        let partial = match want {
            Some(want)
                if sharded && !want.is_empty() && (want.start > 0 || want.end < shape[0]) =>
            {
                Some(want)
            }
            _ => None,
        };
        // An encoded chunk is at most its decoded size plus codec overhead.
        let max_encoded = (array.options().max_chunk_bytes as u64).saturating_add(1 << 20);
        Self {
            key: array.chunk_key(indices),
            array: array.clone(),
            partial,
            runs: false,
            wanted: None,
            max_encoded,
            stage: Stage::Start,
        }
    }

    /// Of a 1-D chunk read whole, only its first `rows` elements are needed
    /// (those past the array's end are not): a decoder that can stop there
    /// does. No effect on a sharded or N-d chunk.
    pub(crate) fn wanting_first(mut self, rows: u64) -> Self {
        let shape = &self.array.metadata().chunk_shape;
        let sharded = self.array.codecs().partial(shape.len()).is_some();
        if shape.len() == 1 && !sharded && rows < shape[0] {
            self.wanted = usize::try_from(rows).ok();
        }
        self
    }

    /// Decode a chunk's parts (a 1-D shard's inner chunks) as separate runs
    /// instead of gathering them into one array (a copy of every element). No
    /// effect on a chunk that has no parts or more than one dimension.
    pub(crate) fn with_runs(mut self) -> Self {
        let shape = &self.array.metadata().chunk_shape;
        self.runs = shape.len() == 1 && self.array.codecs().partial(1).is_some();
        self
    }

    /// The chunk's key.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// The first step.
    pub(crate) fn start(&mut self) -> Result<Step, ChunkError> {
        self.resume(Fetched::Missing)
    }

    /// The next step, given what the last [`Step::Fetch`] fetched.
    pub(crate) fn resume(&mut self, fetched: Fetched) -> Result<Step, ChunkError> {
        let stage = std::mem::replace(&mut self.stage, Stage::Finished);
        let array = &self.array;
        let meta = array.metadata();
        let ctx = DecodeContext::new(
            &meta.chunk_shape,
            meta.data_type,
            &meta.fill_value,
            array.string_type(),
            array.options().max_chunk_bytes,
        )
        .with_recycler(array.recycler());
        match (stage, fetched) {
            (Stage::Start, _) => Ok(self.first_request()),
            (_, Fetched::Missing) => Ok(Step::Done(None)),
            (Stage::Whole, Fetched::Whole(bytes)) => {
                let partial = array.codecs().partial(ctx.shape.len());
                let runs = match partial.filter(|_| self.runs) {
                    Some(partial) => partial.decode_runs(bytes, &ctx)?,
                    None => {
                        let ctx = match self.wanted {
                            Some(n) => ctx.wanting(n),
                            None => ctx,
                        };
                        vec![array.codecs().decode(bytes, &ctx)?]
                    }
                };
                Ok(Step::Done(Some(Decoded { offset: 0, runs })))
            }
            (Stage::Partial { mut read, asked }, Fetched::Ranges(got)) => {
                if got.buffers.len() != asked {
                    return Err(plan_error(&format!(
                        "the store returned {} ranges for {asked}",
                        got.buffers.len()
                    )));
                }
                match read.resume(got.buffers, got.value_len, &ctx)? {
                    PartialStep::Done { offset, runs } => {
                        Ok(Step::Done(Some(Decoded { offset, runs })))
                    }
                    PartialStep::Fetch(ranges) => Ok(self.ask(read, ranges)),
                }
            }
            (stage, fetched) => Err(plan_error(&format!(
                "{fetched:?} does not answer the request of {stage:?}"
            ))),
        }
    }

    fn first_request(&mut self) -> Step {
        let shape = &self.array.metadata().chunk_shape;
        let read = match (self.array.codecs().partial(shape.len()), &self.partial) {
            (Some(partial), Some(want)) => partial.plan(shape, want.clone(), self.runs).ok(),
            _ => None,
        };
        // No partial read (or none possible for this chunk): the whole value.
        let Some(mut read) = read else {
            self.partial = None;
            self.stage = Stage::Whole;
            return Step::Fetch(Request {
                id: 0,
                key: self.key.clone(),
                ranges: None,
                max_len: self.max_encoded,
            });
        };
        let ranges = read.start();
        self.ask(read, ranges)
    }

    /// Ask for `ranges` on behalf of the codec's sub-plan `read`.
    fn ask(&mut self, read: Box<dyn PartialRead>, ranges: Vec<ChunkRange>) -> Step {
        let ranges: Vec<ByteRange> = ranges
            .into_iter()
            .map(|r| match r {
                ChunkRange::Bounded(r) => ByteRange::Bounded(r),
                ChunkRange::Suffix(n) => ByteRange::Suffix(n),
            })
            .collect();
        self.stage = Stage::Partial {
            read,
            asked: ranges.len(),
        };
        Step::Fetch(Request {
            id: 0,
            key: self.key.clone(),
            ranges: Some(ranges),
            max_len: self.max_encoded,
        })
    }
}

fn plan_error(message: &str) -> ChunkError {
    ChunkError::Decompress {
        codec: "read plan",
        message: message.to_string(),
    }
}

/// What the store gives for `request`: the sync fetch every blocking read uses.
///
/// # Errors
/// Store errors.
pub(crate) fn fetch(store: &dyn Store, request: &Request) -> Result<Fetched> {
    Ok(match &request.ranges {
        None => store
            .get_bounded(&request.key, request.max_len)?
            .map_or(Fetched::Missing, Fetched::Whole),
        Some(ranges) => store
            .get_ranges(&request.key, ranges)?
            .map_or(Fetched::Missing, Fetched::Ranges),
    })
}
