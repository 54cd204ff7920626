//! [`RowDecoder`]: the push decoder under every row reader, sans IO.
//!
//! ```text
//!   try_decode() ──▶ NeedsData(requests) ──▶ the driver fetches each (any
//!        ▲                                    store, any order, concurrently)
//!        │                                          │
//!        │        push(id, fetched) ◀───────────────┘
//!        │           └─▶ decoded on rayon (or inline when not parallel)
//!        └──────── Batch(RecordBatch) | Finished
//! ```
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use super::plan::{ChunkRead, Decoded, Step};
use super::{Column, ZarrArray};
use crate::assemble::Part;
use crate::error::{Error, Result};
use crate::rows::RowQueue;

pub use super::plan::{Fetched, Request};

/// What [`RowDecoder::try_decode`] gives.
#[derive(Debug)]
pub enum DecodeResult {
    /// Fetch these and [`push`](RowDecoder::push) each answer. Empty: the
    /// decoder waits for answers to requests already handed out, or for chunks
    /// decoding on rayon ([`RowDecoder::wait`], [`RowDecoder::poll_decoded`]).
    NeedsData(Vec<Request>),
    /// The next batch, in row order.
    Batch(RecordBatch),
    /// Every row has been given.
    Finished,
}

/// Counters of a read, updated as it goes (shared: a driver or an engine's
/// metrics read them while the decoder works).
#[derive(Debug, Default)]
pub struct ReadStats {
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
    /// The first chunk not yet planned.
    next_chunk: u64,
    /// Rows up to here are planned.
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
            next_chunk: start / chunk_len,
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
    /// Answered, to decode inline (a decoder that is not parallel).
    Fetched(ChunkRead, Fetched),
    /// Decoding on rayon.
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
    /// The Arrow bytes its rows take, estimated from the type.
    estimate: u64,
    state: State,
}

/// What a decode on rayon sends back: the job's sequence number and its next
/// state.
type Outcome = (u64, Result<State>);

/// The push decoder of a table's rows, sans IO.
///
/// ```text
///   try_decode() ──▶ NeedsData(requests) ──▶ the driver fetches each (any
///        ▲                                    store, any order, concurrently)
///        │        push(id, fetched) ◀───────────────┘
///        │           └─▶ decoded on rayon (or inline when not parallel)
///        └──────── Batch(RecordBatch) | Finished
/// ```
///
/// It plans, in row order, the chunks each leaf array needs for the next batch
/// and for a read-ahead window behind it (bounded in bytes), hands out their
/// requests and assembles batches from the answers; a categorical's categories
/// are read first, by the same requests. It never touches a store: the blocking
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
    rows: Range<u64>,
    done: u64,
    batch_size: usize,
    /// Whether batches end early at run boundaries.
    aligned: bool,
    /// Rows from the first not yet given whose chunks are planned (at least
    /// the next batch's): the read-ahead window, the batch being built in it.
    lookahead: u64,
    parallel: bool,
    /// The chunk reads in flight, in the order planned; the first has sequence
    /// number `first_seq`, the next ones follow.
    jobs: VecDeque<Job>,
    first_seq: u64,
    sender: Sender<Outcome>,
    receiver: Receiver<Outcome>,
    /// Outcomes received while polling, not yet applied.
    received: Vec<Outcome>,
    /// Chunks decoding on rayon.
    decoding: usize,
    waker: Arc<Mutex<Option<Waker>>>,
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
    pub rows: Range<u64>,
    pub batch_size: usize,
    pub aligned: bool,
    pub lookahead: u64,
    pub parallel: bool,
}

impl RowDecoder {
    pub(crate) fn new(parts: DecoderParts) -> Result<Self> {
        let (sender, receiver) = channel();
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
            parallel: parts.parallel,
            jobs: VecDeque::new(),
            first_seq: 0,
            sender,
            receiver,
            received: Vec::new(),
            decoding: 0,
            waker: Arc::default(),
            stats: Arc::default(),
            failed: false,
        };
        decoder.done = decoder.rows.start;
        if !decoder.rows.is_empty() {
            decoder.plan_categories()?;
        }
        Ok(decoder)
    }

    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The rows this decoder gives.
    pub fn row_range(&self) -> Range<u64> {
        self.rows.clone()
    }

    /// The read's counters.
    pub fn stats(&self) -> &Arc<ReadStats> {
        &self.stats
    }

    /// Whether answers are decoded on rayon (else on the pushing thread).
    pub fn is_parallel(&self) -> bool {
        self.parallel
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

    /// Whether chunks are decoding on rayon (then [`RowDecoder::wait`] returns
    /// when one is done).
    pub fn is_decoding(&self) -> bool {
        self.decoding > 0
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

    /// Answer request `id` with what the store gave. When the decoder is
    /// parallel, the answer starts decoding on rayon at once.
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

    /// Block until a chunk decoding on rayon is done (the blocking driver's
    /// wait). Returns at once when none is.
    ///
    /// # Errors
    /// As [`RowDecoder::try_decode`].
    pub fn wait(&mut self) -> Result<()> {
        if self.decoding == 0 || !self.received.is_empty() {
            return Ok(());
        }
        match self.receiver.recv() {
            Ok(outcome) => {
                self.received.push(outcome);
                Ok(())
            }
            Err(_) => Err(Error::Panicked {
                task: "chunk decoder",
            }),
        }
    }

    /// Ready when a chunk decoding on rayon is done, or when none is (the
    /// async driver's wait).
    pub fn poll_decoded(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.decoding == 0 || !self.received.is_empty() {
            return Poll::Ready(());
        }
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        match self.receiver.try_recv() {
            Ok(outcome) => {
                self.received.push(outcome);
                Poll::Ready(())
            }
            Err(TryRecvError::Empty) => Poll::Pending,
            // Cannot happen: the decoder holds a sender.
            Err(TryRecvError::Disconnected) => Poll::Ready(()),
        }
    }

    fn fail(&mut self) {
        self.failed = true;
        self.jobs.clear();
        self.received.clear();
    }

    fn step(&mut self) -> Result<DecodeResult> {
        self.collect()?;
        self.decode_inline()?;
        self.drain()?;
        if let Some(batch) = self.next_batch()? {
            return Ok(DecodeResult::Batch(batch));
        }
        if self.done >= self.rows.end {
            return Ok(DecodeResult::Finished);
        }
        let n = self.next_len();
        self.plan(self.done.saturating_add(n.max(self.lookahead)))?;
        Ok(DecodeResult::NeedsData(self.take_requests()?))
    }

    fn push_inner(&mut self, id: u64, fetched: Fetched) -> Result<()> {
        let parallel = self.parallel;
        let job = id
            .checked_sub(self.first_seq)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.jobs.get_mut(i))
            .filter(|job| matches!(job.state, State::Waiting(_)))
            .ok_or_else(|| Error::UnknownRequest { id })?;
        let bytes = fetched.len();
        self.stats.bytes_fetched.fetch_add(bytes, Ordering::Relaxed);
        let State::Waiting(read) = std::mem::replace(&mut job.state, State::Decoding) else {
            unreachable!("checked above")
        };
        if !parallel {
            job.state = State::Fetched(read, fetched);
            return Ok(());
        }
        let array = job.array.clone();
        let (chunk, rows, part) = (job.chunk, job.rows.clone(), job.part);
        let sender = self.sender.clone();
        let waker = self.waker.clone();
        let stats = self.stats.clone();
        self.decoding += 1;
        rayon::spawn(move || {
            let started = Instant::now();
            let state = catch_unwind(AssertUnwindSafe(|| {
                resume(&array, chunk, rows, part, read, fetched)
            }))
            .unwrap_or(Err(Error::Panicked {
                task: "chunk decoder",
            }));
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            stats.decode_nanos.fetch_add(nanos, Ordering::Relaxed);
            // The decoder may be gone (dropped early): nobody to tell.
            let _ = sender.send((id, state));
            if let Some(waker) = waker.lock().unwrap_or_else(PoisonError::into_inner).take() {
                waker.wake();
            }
        });
        Ok(())
    }

    /// Apply the outcomes of decodes on rayon that are done.
    fn collect(&mut self) -> Result<()> {
        let mut outcomes = std::mem::take(&mut self.received);
        while let Ok(outcome) = self.receiver.try_recv() {
            outcomes.push(outcome);
        }
        for (seq, state) in outcomes {
            self.decoding = self.decoding.saturating_sub(1);
            let state = state?;
            let job = seq
                .checked_sub(self.first_seq)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| self.jobs.get_mut(i))
                .ok_or(Error::Panicked {
                    task: "chunk decoder (an answer for no job)",
                })?;
            job.state = state;
        }
        Ok(())
    }

    /// Decode, on this thread, what was pushed to a decoder that is not
    /// parallel.
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
        let mut n = (self.rows.end - self.done).min(self.batch_size as u64);
        if self.aligned {
            n = self.leaves.iter().fold(n, |n, leaf| {
                if leaf.run_len < self.batch_size as u64 {
                    n
                } else {
                    n.min(leaf.run_len - self.done % leaf.run_len)
                }
            });
        }
        n
    }

    /// Plan the chunks every leaf needs for rows up to `upto`, in row order
    /// across the leaves (the order the rows are wanted in). An N-d leaf's
    /// chunk row is a slab: every chunk of it, read for the rows wanted of it.
    fn plan(&mut self, upto: u64) -> Result<()> {
        let end = self.rows.end;
        let mut jobs = Vec::new();
        for (i, leaf) in self.leaves.iter_mut().enumerate() {
            while leaf.covered < upto.min(end) {
                let chunk = leaf.next_chunk;
                let chunk_start = chunk * leaf.chunk_len;
                let chunk_end = ((chunk + 1) * leaf.chunk_len).min(end);
                if leaf.slabs {
                    let rows = leaf.covered - chunk_start..chunk_end - chunk_start;
                    let reads = leaf.array.plan_slab(chunk, rows.clone())?;
                    let of = reads.len();
                    let per_part = estimate(&leaf.array, leaf.chunk_len) / of.max(1) as u64;
                    for (index, read) in reads.into_iter().enumerate() {
                        jobs.push((
                            leaf.covered,
                            Job {
                                owner: Owner::Leaf(i),
                                array: leaf.array.clone(),
                                chunk,
                                estimate: per_part,
                                rows: rows.clone(),
                                part: Some((index, of)),
                                state: State::Ready(read),
                            },
                        ));
                    }
                } else {
                    let planned = leaf.array.plan_rows(chunk, leaf.covered..chunk_end, true);
                    jobs.push((
                        leaf.covered,
                        Job {
                            owner: Owner::Leaf(i),
                            array: leaf.array.clone(),
                            chunk,
                            estimate: estimate(&leaf.array, planned.hi - planned.lo),
                            rows: planned.lo..planned.hi,
                            part: None,
                            state: State::Ready(planned.read),
                        },
                    ));
                }
                leaf.covered = chunk_end;
                leaf.next_chunk += 1;
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
                            row: self.done + n,
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
