//! [`RowDecoder`]: the push decoder under every row reader, sans IO.
//!
//! ```text
//!   try_decode() ──▶ NeedsData(requests) ──▶ the driver fetches each (any
//!        ▲                                    store, any order, concurrently)
//!        │                                          │
//!        │        push(id, fetched) ◀───────────────┘
//!        │           └─▶ kept, decoded by the next try_decode (inline), or
//!        │               handed out as DecodeJobs the driver runs where it
//!        │               likes (rayon) and gives back: push_decoded(done)
//!        └──────── Batch(RecordBatch) | Finished
//! ```
//!
//! The decoder owns no thread and spawns no work: each driver decides what runs
//! in parallel. The blocking [`BatchReader`](super::BatchReader) and the async
//! stream run the decode jobs of the chunks they have fetched on rayon (the
//! stream without blocking its runtime thread), or leave a read of one chunk
//! to `try_decode`, inline.
//!
//! The decoder plans, in row order, the chunks each leaf array needs for the
//! next batch and for a read-ahead window behind it (bounded in bytes: see
//! [`READ_AHEAD_BYTES`](super::READ_AHEAD_BYTES)), hands their requests out, and
//! assembles batches from what comes back. It never touches a store: the blocking
//! [`BatchReader`](super::BatchReader) and the async stream
//! ([`ReaderBuilder::into_stream`](super::ReaderBuilder)) are two small drivers
//! over it, and a test or fuzzer can drive it with any bytes.
//!
//! A categorical's categories are read first, by the same requests.
//!
//! A request is answered by its `id`: a shard read part-way asks twice (its
//! index, then the inner chunks), each time with a new request. An answer to no
//! waiting request (unknown, repeated) is an error, never a panic; so are bytes
//! that do not answer what was asked (a short value, a wrong number of ranges).

use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use super::plan::{ChunkRead, Decoded, Step};
use super::selection::{Selection, cut_runs};
use super::{Column, ZarrArray};
use crate::assemble::Part;
use crate::error::{Error, Result};
use crate::rows::RowQueue;

pub use super::plan::{Fetched, Request};

/// What [`RowDecoder::try_decode`] gives.
#[derive(Debug)]
pub enum DecodeResult {
    /// Fetch these and [`push`](RowDecoder::push) each answer. Empty: the
    /// decoder waits for answers to requests already handed out, or for the
    /// [decode jobs](RowDecoder::decode_jobs) handed out to be given back.
    NeedsData(Vec<Request>),
    /// The next batch, in row order.
    Batch(RecordBatch),
    /// Every row has been given.
    Finished,
}

/// Counters of a read, updated as it goes (shared: a driver or an engine's
/// metrics read them while the decoder works).
#[derive(Debug, Default)]
pub(crate) struct ReadStats {
    /// Requests handed out.
    pub requests: AtomicU64,
    /// Bytes pushed in answer.
    pub bytes_fetched: AtomicU64,
    /// Nanoseconds spent decoding chunks (summed over threads).
    pub decode_nanos: AtomicU64,
}

/// One leaf array's cursor: which of its chunks are planned, and its decoded
/// rows not yet handed out.
#[derive(Debug)]
pub(crate) struct Cursor {
    array: ZarrArray,
    /// The rows of one chunk row: a chunk of a 1-D array, a slab of an N-d
    /// one (its rows: its elements, flattened in C order).
    chunk_len: u64,
    /// Whether the array is N-d (or 0-d): a chunk row is a slab of several
    /// chunks, gathered once they are all in.
    slabs: bool,
    /// The chunks of the slab being gathered, in order.
    parts: Vec<Part>,
    /// The rows of one decoded run: the chunk, or a shard's inner chunk.
    run_len: u64,
    /// Rows up to here are planned (the chunks of the chosen ones read).
    covered: u64,
    queued: RowQueue,
}

impl Cursor {
    pub(crate) fn new(array: ZarrArray, start: u64) -> Self {
        let chunk_len = array.row_chunk_len().max(1);
        let run_len = array.run_len().unwrap_or(chunk_len).max(1);
        Self {
            slabs: array.metadata().shape.len() != 1,
            parts: Vec::new(),
            array,
            chunk_len,
            run_len,
            covered: start,
            queued: RowQueue::default(),
        }
    }
}

/// Whose rows a chunk read gives.
#[derive(Debug, Clone, Copy)]
enum Owner {
    /// Leaf `i` (rows of the table).
    Leaf(usize),
    /// The categories of column `i` (read whole, before any row).
    Categories(usize),
}

#[derive(Debug)]
enum State {
    /// Planned; its first request not yet handed out.
    Ready(ChunkRead),
    /// Its next request, to hand out.
    Next(ChunkRead, Request),
    /// Its request handed out, the answer not yet pushed.
    Waiting(ChunkRead),
    /// Answered: decoded by the next `try_decode`, unless handed out first as
    /// a [`DecodeJob`].
    Fetched(ChunkRead, Fetched),
    /// Handed out as a [`DecodeJob`], not yet given back.
    Decoding,
    /// Its rows.
    Done(Vec<ArrayRef>),
    /// One chunk of a slab, decoded.
    DonePart(Part),
}

#[derive(Debug)]
struct Job {
    owner: Owner,
    array: ZarrArray,
    /// The chunk (of a 1-D array) or the slab (of an N-d one).
    chunk: u64,
    /// The rows wanted, within the chunk (or slab).
    rows: Range<u64>,
    /// For a chunk of a slab: its place among the slab's chunks, and how many
    /// there are.
    part: Option<(usize, usize)>,
    /// The rows of `rows` the selection keeps (relative to the chunk, or
    /// slab), when not all of them.
    keep: Option<Vec<Range<u64>>>,
    /// The Arrow bytes its rows take, estimated from the type.
    estimate: u64,
    state: State,
}

/// The source of [`RowDecoder`]s' tokens: each decoder's is its own.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(0);

/// The push decoder of a table's rows, sans IO.
///
/// ```text
///   try_decode() ──▶ NeedsData(requests) ──▶ the driver fetches each (any
///        ▲                                    store, any order, concurrently)
///        │        push(id, fetched) ◀───────────────┘
///        │           └─▶ decoded by the next try_decode, or handed out by
///        │               decode_jobs() and given back by push_decoded()
///        └──────── Batch(RecordBatch) | Finished
/// ```
///
/// It plans, in row order, the chunks each leaf array needs for the next batch
/// and for a read-ahead window behind it (bounded in bytes), hands out their
/// requests and assembles batches from the answers; a categorical's categories
/// are read first, by the same requests. It never touches a store and starts no
/// thread: a driver that wants chunks decoded in parallel takes them as
/// [`DecodeJob`]s and runs them where it likes. The blocking
/// [`BatchReader`](super::BatchReader) and the async stream
/// ([`ReaderBuilder::into_stream`](super::ReaderBuilder)) drive it. An answer to
/// no waiting request, or bytes that do not answer what was asked, is an error,
/// never a panic.
#[derive(Debug)]
pub struct RowDecoder {
    schema: SchemaRef,
    columns: Vec<Column>,
    /// What each column read once (a categorical's categories), when read.
    prepared: Vec<Option<ArrayRef>>,
    /// Categories read so far, per column, in chunk order.
    category_parts: Vec<Vec<ArrayRef>>,
    /// Category chunks not yet read.
    categories_left: usize,
    leaves: Vec<Cursor>,
    label: String,
    /// The rows read: all of a row range, or those a selection keeps.
    rows: Selection,
    /// How many of them have been given.
    done: u64,
    batch_size: usize,
    /// Whether batches end early at run boundaries.
    aligned: bool,
    /// Rows from the first not yet given whose chunks are planned (at least
    /// the next batch's): the read-ahead window, the batch being built in it.
    lookahead: u64,
    /// The chunk reads in flight, in the order planned; the first has sequence
    /// number `first_seq`, the next ones follow.
    jobs: VecDeque<Job>,
    first_seq: u64,
    /// This decoder among all (its jobs' chunks are refused by any other).
    token: u64,
    stats: Arc<ReadStats>,
    failed: bool,
}

/// How a [`RowDecoder`] reads: set by [`ReaderBuilder`](super::ReaderBuilder).
#[derive(Debug)]
pub(crate) struct DecoderParts {
    pub schema: SchemaRef,
    pub columns: Vec<Column>,
    pub leaves: Vec<Cursor>,
    pub label: String,
    pub rows: Selection,
    pub batch_size: usize,
    pub aligned: bool,
    pub lookahead: u64,
}

impl RowDecoder {
    pub(crate) fn new(parts: DecoderParts) -> Result<Self> {
        let n = parts.columns.len();
        let mut decoder = Self {
            schema: parts.schema,
            columns: parts.columns,
            prepared: vec![None; n],
            category_parts: vec![Vec::new(); n],
            categories_left: 0,
            leaves: parts.leaves,
            label: parts.label,
            rows: parts.rows,
            done: 0,
            batch_size: parts.batch_size,
            aligned: parts.aligned,
            lookahead: parts.lookahead,
            jobs: VecDeque::new(),
            first_seq: 0,
            token: NEXT_TOKEN.fetch_add(1, Ordering::Relaxed),
            stats: Arc::default(),
            failed: false,
        };
        if decoder.rows.len() > 0 {
            decoder.plan_categories()?;
        }
        Ok(decoder)
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// How many rows this decoder gives.
    pub(crate) fn num_rows(&self) -> u64 {
        self.rows.len()
    }

    #[cfg(feature = "async")]
    /// The read's counters.
    pub(crate) fn stats(&self) -> &Arc<ReadStats> {
        &self.stats
    }

    /// The Arrow bytes of the chunks planned and not yet handed out in batches,
    /// estimated from their types: what the read-ahead holds (or will, once
    /// fetched and decoded). An engine reserves this much of its memory pool.
    pub fn buffered_bytes(&self) -> u64 {
        let planned: u64 = self.jobs.iter().map(|j| j.estimate).sum();
        let queued: u64 = self
            .leaves
            .iter()
            .map(|l| {
                (l.queued.len() as u64)
                    .saturating_mul(l.array.metadata().data_type.estimated_arrow_bytes())
            })
            .sum();
        planned.saturating_add(queued)
    }

    /// The next thing the decoder needs or gives. After an error, `Finished`.
    ///
    /// # Errors
    /// A corrupt chunk ([`Error::Chunk`] naming its key), a column that ends
    /// early, a convention that cannot be applied.
    pub fn try_decode(&mut self) -> Result<DecodeResult> {
        if self.failed {
            return Ok(DecodeResult::Finished);
        }
        let result = self.step();
        if result.is_err() {
            self.fail();
        }
        result
    }

    /// Answer request `id` with what the store gave. The answer is kept: the
    /// next [`try_decode`](RowDecoder::try_decode) decodes it on the calling
    /// thread, unless [`decode_jobs`](RowDecoder::decode_jobs) hands it out
    /// first.
    ///
    /// # Errors
    /// [`Error::UnknownRequest`] when no request `id` is waiting (unknown,
    /// already answered); the decoder then fails.
    pub fn push(&mut self, id: u64, fetched: Fetched) -> Result<()> {
        let result = self.push_inner(id, fetched);
        if result.is_err() {
            self.fail();
        }
        result
    }

    /// The answers pushed and not yet decoded, each as a job that decodes it
    /// on whatever thread runs it ([`DecodeJob::run`]), for a driver that
    /// decodes chunks in parallel. The decoder waits for each job's
    /// [`DecodedChunk`] ([`RowDecoder::push_decoded`]): a job dropped unrun
    /// leaves the decoder waiting for it.
    pub fn decode_jobs(&mut self) -> Vec<DecodeJob> {
        if self.failed {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, job) in self.jobs.iter_mut().enumerate() {
            if !matches!(job.state, State::Fetched(..)) {
                continue;
            }
            let State::Fetched(read, fetched) = std::mem::replace(&mut job.state, State::Decoding)
            else {
                unreachable!("checked above")
            };
            out.push(DecodeJob {
                id: self.first_seq + i as u64,
                token: self.token,
                array: job.array.clone(),
                chunk: job.chunk,
                rows: job.rows.clone(),
                part: job.part,
                read,
                fetched,
                stats: self.stats.clone(),
            });
        }
        out
    }

    /// Give back what a [`DecodeJob`] of this decoder decoded.
    ///
    /// # Errors
    /// The job's error (a corrupt chunk: [`Error::Chunk`] naming its key);
    /// [`Error::UnknownRequest`] when it is not the result of a job this
    /// decoder handed out (another decoder's). The decoder then fails.
    pub fn push_decoded(&mut self, decoded: DecodedChunk) -> Result<()> {
        let result = self.push_decoded_inner(decoded);
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn push_decoded_inner(&mut self, decoded: DecodedChunk) -> Result<()> {
        let DecodedChunk { id, token, state } = decoded;
        if self.failed || token != self.token {
            return Err(Error::UnknownRequest { id });
        }
        let job = self
            .job_mut(id)
            .filter(|job| matches!(job.state, State::Decoding))
            .ok_or(Error::UnknownRequest { id })?;
        job.state = (*state)?;
        Ok(())
    }

    /// The job of sequence number `id`, when still in the decoder.
    fn job_mut(&mut self, id: u64) -> Option<&mut Job> {
        id.checked_sub(self.first_seq)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.jobs.get_mut(i))
    }

    fn fail(&mut self) {
        self.failed = true;
        self.jobs.clear();
    }

    fn step(&mut self) -> Result<DecodeResult> {
        self.decode_inline()?;
        self.drain()?;
        if let Some(batch) = self.next_batch()? {
            return Ok(DecodeResult::Batch(batch));
        }
        if self.done >= self.rows.len() {
            return Ok(DecodeResult::Finished);
        }
        // The next batch's rows, and at least the read-ahead window's (in rows
        // of the store, so that it bounds memory however sparse the selection).
        let n = self.next_len();
        let upto = self
            .rows
            .end_of(self.done.saturating_add(n))
            .max(self.rows.row(self.done).saturating_add(self.lookahead));
        self.plan(upto)?;
        Ok(DecodeResult::NeedsData(self.take_requests()?))
    }

    fn push_inner(&mut self, id: u64, fetched: Fetched) -> Result<()> {
        if self.failed {
            return Err(Error::UnknownRequest { id });
        }
        let job = self
            .job_mut(id)
            .filter(|job| matches!(job.state, State::Waiting(_)))
            .ok_or(Error::UnknownRequest { id })?;
        let State::Waiting(read) = std::mem::replace(&mut job.state, State::Decoding) else {
            unreachable!("checked above")
        };
        let bytes = fetched.len();
        job.state = State::Fetched(read, fetched);
        self.stats.bytes_fetched.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Decode, on this thread, the answers pushed and not handed out as
    /// decode jobs.
    fn decode_inline(&mut self) -> Result<()> {
        for job in &mut self.jobs {
            if matches!(job.state, State::Fetched(..)) {
                let State::Fetched(read, fetched) =
                    std::mem::replace(&mut job.state, State::Decoding)
                else {
                    unreachable!("checked above")
                };
                let started = Instant::now();
                job.state = resume(
                    &job.array,
                    job.chunk,
                    job.rows.clone(),
                    job.part,
                    read,
                    fetched,
                )?;
                let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.stats.decode_nanos.fetch_add(nanos, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Hand the rows of the done jobs at the front to their leaves (or
    /// categories), in the order planned.
    fn drain(&mut self) -> Result<()> {
        while matches!(
            self.jobs.front(),
            Some(Job {
                state: State::Done(_) | State::DonePart(_),
                ..
            })
        ) {
            let Some(job) = self.jobs.pop_front() else {
                break;
            };
            self.first_seq += 1;
            let runs = match job.state {
                State::Done(runs) => runs,
                State::DonePart(part) => {
                    let Owner::Leaf(i) = job.owner else {
                        unreachable!("only a leaf's slab has parts")
                    };
                    let leaf = &mut self.leaves[i];
                    leaf.parts.push(part);
                    let (index, of) = job.part.unwrap_or((0, 1));
                    if index + 1 < of {
                        continue;
                    }
                    vec![job.array.finish_slab(
                        job.chunk,
                        job.rows.clone(),
                        std::mem::take(&mut leaf.parts),
                    )?]
                }
                _ => unreachable!("checked above"),
            };
            let runs = match &job.keep {
                Some(keep) => cut_runs(runs, job.rows.start, keep)?,
                None => runs,
            };
            match job.owner {
                Owner::Leaf(i) => {
                    for run in runs {
                        self.leaves[i].queued.push(run);
                    }
                }
                Owner::Categories(c) => {
                    self.category_parts[c].extend(runs);
                    self.categories_left -= 1;
                    if self.categories_left == 0 {
                        self.finish_categories()?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Plan the reads of every categorical's categories, whole.
    fn plan_categories(&mut self) -> Result<()> {
        for (c, column) in self.columns.iter().enumerate() {
            let Some(categories) = column.categories() else {
                continue;
            };
            categories.check_read_size(categories.len())?;
            let len = categories.len();
            let chunk_len = categories.metadata().chunk_shape[0].max(1);
            for chunk in 0..len.div_ceil(chunk_len) {
                let planned = categories.plan_rows(chunk, 0..len, false);
                self.categories_left += 1;
                self.jobs.push_back(Job {
                    owner: Owner::Categories(c),
                    array: categories.clone(),
                    chunk,
                    estimate: estimate(categories, planned.hi - planned.lo),
                    rows: planned.lo..planned.hi,
                    part: None,
                    keep: None,
                    state: State::Ready(planned.read),
                });
            }
        }
        if self.categories_left == 0 {
            self.finish_categories()?;
        }
        Ok(())
    }

    fn finish_categories(&mut self) -> Result<()> {
        for (c, column) in self.columns.iter().enumerate() {
            if let Some(categories) = column.categories() {
                let parts = std::mem::take(&mut self.category_parts[c]);
                self.prepared[c] = Some(categories.concat(parts)?);
            }
        }
        Ok(())
    }

    fn categories_read(&self) -> bool {
        self.categories_left == 0
    }

    /// The rows of the next batch.
    fn next_len(&self) -> u64 {
        let mut n = (self.rows.len() - self.done).min(self.batch_size as u64);
        if self.aligned {
            // The chosen rows up to the end of the run the next one is in.
            let at = self.rows.row(self.done);
            n = self.leaves.iter().fold(n, |n, leaf| {
                if leaf.run_len < self.batch_size as u64 {
                    n
                } else {
                    let run_end = (at / leaf.run_len + 1).saturating_mul(leaf.run_len);
                    n.min(self.rows.count(at..run_end))
                }
            });
        }
        n
    }

    /// Plan the chunks every leaf needs for the chosen rows up to `upto`, in
    /// row order across the leaves (the order the rows are wanted in): of each
    /// chunk holding a chosen row, the rows from its first chosen one to its
    /// last (a chunk with none is never planned). An N-d leaf's chunk row is a
    /// slab: every chunk of it, read for the rows wanted of it.
    fn plan(&mut self, upto: u64) -> Result<()> {
        let end = self.rows.end_of(self.rows.len());
        let upto = upto.min(end);
        let mut jobs = Vec::new();
        for (i, leaf) in self.leaves.iter_mut().enumerate() {
            while leaf.covered < upto {
                let Some(first) = self.rows.next_from(leaf.covered).filter(|&r| r < upto) else {
                    leaf.covered = upto;
                    break;
                };
                let chunk = first / leaf.chunk_len;
                let chunk_start = chunk * leaf.chunk_len;
                let chunk_end = ((chunk + 1) * leaf.chunk_len).min(end);
                let chosen: Vec<Range<u64>> = self
                    .rows
                    .within(first..chunk_end)
                    .map(|r| r.start - chunk_start..r.end - chunk_start)
                    .collect();
                let wanted = first..chosen.last().map_or(first, |r| r.end + chunk_start);
                let keep = (chosen.len() > 1).then_some(chosen);
                if leaf.slabs {
                    let rows = wanted.start - chunk_start..wanted.end - chunk_start;
                    let reads = leaf.array.plan_slab(chunk, rows.clone())?;
                    let of = reads.len();
                    let per_part = estimate(&leaf.array, leaf.chunk_len) / of.max(1) as u64;
                    for (index, read) in reads.into_iter().enumerate() {
                        jobs.push((
                            first,
                            Job {
                                owner: Owner::Leaf(i),
                                array: leaf.array.clone(),
                                chunk,
                                estimate: per_part,
                                rows: rows.clone(),
                                part: Some((index, of)),
                                keep: keep.clone(),
                                state: State::Ready(read),
                            },
                        ));
                    }
                } else {
                    let planned = leaf.array.plan_rows(chunk, wanted, true);
                    jobs.push((
                        first,
                        Job {
                            owner: Owner::Leaf(i),
                            array: leaf.array.clone(),
                            chunk,
                            estimate: estimate(&leaf.array, planned.hi - planned.lo),
                            rows: planned.lo..planned.hi,
                            part: None,
                            keep,
                            state: State::Ready(planned.read),
                        },
                    ));
                }
                leaf.covered = chunk_end;
            }
        }
        // Stable: a slab's chunks stay together, in order.
        jobs.sort_by_key(|(start, _)| *start);
        self.jobs.extend(jobs.into_iter().map(|(_, job)| job));
        Ok(())
    }

    /// The requests not yet handed out, each numbered by its job.
    fn take_requests(&mut self) -> Result<Vec<Request>> {
        let mut requests = Vec::new();
        for (i, job) in self.jobs.iter_mut().enumerate() {
            let seq = self.first_seq + i as u64;
            let state = std::mem::replace(&mut job.state, State::Decoding);
            job.state = match state {
                State::Ready(mut read) => match read.start().map_err(|source| Error::Chunk {
                    key: read.key().to_string(),
                    source,
                })? {
                    Step::Fetch(request) => {
                        requests.push(Request { id: seq, ..request });
                        State::Waiting(read)
                    }
                    Step::Done(decoded) => {
                        finished(&job.array, job.chunk, job.rows.clone(), job.part, decoded)?
                    }
                },
                State::Next(read, request) => {
                    requests.push(Request { id: seq, ..request });
                    State::Waiting(read)
                }
                other => other,
            };
        }
        self.stats
            .requests
            .fetch_add(requests.len() as u64, Ordering::Relaxed);
        Ok(requests)
    }

    /// The next batch, when every leaf has its rows (and the categories are in).
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let n = self.next_len();
        if n == 0
            || !self.categories_read()
            || self.leaves.iter().any(|l| (l.queued.len() as u64) < n)
        {
            return Ok(None);
        }
        let mut leaves = Vec::with_capacity(self.leaves.len());
        for leaf in &mut self.leaves {
            match leaf.queued.take(n as usize)? {
                Some(array) if array.len() as u64 == n => leaves.push(array),
                _ => {
                    return Err(Error::Table {
                        path: self.label.clone(),
                        problem: crate::error::TableProblem::ColumnEnded {
                            column: leaf.array.column_name().to_string(),
                            row: self.rows.end_of(self.done + n),
                        },
                    });
                }
            }
        }
        let mut leaves = leaves.into_iter();
        let mut arrays = Vec::with_capacity(self.columns.len());
        for (column, prepared) in self.columns.iter().zip(&self.prepared) {
            let own: Vec<ArrayRef> = leaves.by_ref().take(column.leaves().len()).collect();
            arrays.push(column.assemble(prepared.as_ref(), own)?);
        }
        self.done += n;
        Ok(Some(RecordBatch::try_new(self.schema.clone(), arrays)?))
    }
}

/// The Arrow bytes `rows` rows of `array` take, estimated from its type.
fn estimate(array: &ZarrArray, rows: u64) -> u64 {
    rows.saturating_mul(array.metadata().data_type.estimated_arrow_bytes())
}

/// The next state of a chunk read given its answer: another request, or its
/// rows.
fn resume(
    array: &ZarrArray,
    chunk: u64,
    rows: Range<u64>,
    part: Option<(usize, usize)>,
    mut read: ChunkRead,
    fetched: Fetched,
) -> Result<State> {
    match read.resume(fetched).map_err(|source| Error::Chunk {
        key: read.key().to_string(),
        source,
    })? {
        Step::Fetch(request) => Ok(State::Next(read, request)),
        Step::Done(decoded) => finished(array, chunk, rows, part, decoded),
    }
}

/// A finished chunk read as its rows, or as one chunk of a slab.
fn finished(
    array: &ZarrArray,
    chunk: u64,
    rows: Range<u64>,
    part: Option<(usize, usize)>,
    decoded: Option<Decoded>,
) -> Result<State> {
    Ok(match part {
        Some(_) => State::DonePart(array.finish_part(decoded)?),
        None => State::Done(array.finish_rows(chunk, rows, decoded)?),
    })
}

/// The decode of one fetched answer, apart from its [`RowDecoder`]: `Send`,
/// so that a driver can run it on any thread (rayon's, say), then give the
/// result back with [`RowDecoder::push_decoded`].
///
/// ```text
///   decoder.decode_jobs() ──▶ [DecodeJob] ──▶ job.run() on any thread
///                                                 │
///   decoder.push_decoded(done) ◀── DecodedChunk ◀─┘
/// ```
#[derive(Debug)]
#[must_use = "the decoder waits for every job handed out to be given back"]
pub struct DecodeJob {
    id: u64,
    token: u64,
    array: ZarrArray,
    chunk: u64,
    rows: Range<u64>,
    part: Option<(usize, usize)>,
    read: ChunkRead,
    fetched: Fetched,
    stats: Arc<ReadStats>,
}

impl DecodeJob {
    /// The id of the request whose answer it decodes.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Decode, on the calling thread. A panic is caught and given back as
    /// [`Error::Panicked`].
    pub fn run(self) -> DecodedChunk {
        let Self {
            id,
            token,
            array,
            chunk,
            rows,
            part,
            read,
            fetched,
            stats,
        } = self;
        let started = Instant::now();
        let state = catch_unwind(AssertUnwindSafe(|| {
            resume(&array, chunk, rows, part, read, fetched)
        }))
        .unwrap_or(Err(Error::Panicked {
            task: "chunk decoder",
        }));
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        stats.decode_nanos.fetch_add(nanos, Ordering::Relaxed);
        DecodedChunk {
            id,
            token,
            state: Box::new(state),
        }
    }
}

/// What a [`DecodeJob`] decoded (or its error), for
/// [`RowDecoder::push_decoded`].
#[derive(Debug)]
pub struct DecodedChunk {
    id: u64,
    /// The decoder whose job it was.
    token: u64,
    /// Boxed: a chunk read's state is a few hundred bytes, and drivers pass
    /// this through channels beside small values.
    state: Box<Result<State>>,
}

impl DecodedChunk {
    /// The id of the request whose answer was decoded.
    pub fn id(&self) -> u64 {
        self.id
    }
}
