//! [`ReaderBuilder`]: which columns and rows to read, in which batches; and
//! [`BatchReader`], the `RecordBatchReader` it builds.
//!
//! ```text
//! ZarrGroup / ZarrArray (metadata loaded once, shared)
//!   └─▶ ReaderBuilder: with_projection, with_row_range / with_offset / with_limit,
//!        with_batch_size; splits(n): chunk-aligned row ranges, one reader each
//!         └─▶ BatchReader: per batch, the chunks each column needs (only the rows
//!             asked for: a shard's index and inner chunks, not the whole shard);
//!             the next batch's chunks are read and decoded on rayon's pool (the
//!             decoder's DecodeJobs) while the caller works on this one
//! ```

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::decoder::{Cursor, DecodeJob, DecodeResult, DecodedChunk, DecoderParts, RowDecoder};
use super::selection::Selection;
use super::{Column, READ_AHEAD_BYTES, Skipped, ZarrArray, ZarrGroup, plan};
use crate::context::{Decode, ExecutionContext};
use crate::conventions::pandas::{self, pandas_metadata};
use crate::error::{Error, Result, SkipReason, TableProblem};

/// The largest default batch: the largest chunk length among the columns, capped
/// here so that a column with tiny chunks does not mean millions of decode jobs
/// for one batch.
pub const DEFAULT_MAX_BATCH_ROWS: usize = 1 << 16;

/// `rows` split into at most `n` ranges of as equal a number of `align`-row
/// blocks as can be (exactly `n` when there are that many blocks), each starting
/// on a multiple of `align` except the first.
pub(crate) fn aligned_splits(rows: Range<u64>, align: u64, n: usize) -> Vec<Range<u64>> {
    let align = align.max(1);
    let first = rows.start / align;
    let blocks = rows.end.div_ceil(align).saturating_sub(first);
    if rows.is_empty() || blocks == 0 {
        return vec![rows];
    }
    let n = (n.max(1) as u64).min(blocks);
    (0..n)
        .map(|i| {
            let start = if i == 0 {
                rows.start
            } else {
                (first + i * blocks / n) * align
            };
            let end = ((first + (i + 1) * blocks / n) * align).min(rows.end);
            start..end
        })
        .collect()
}

/// What a reader reads from.
#[derive(Debug, Clone)]
enum Source {
    Group(ZarrGroup),
    Array(ZarrArray),
}

/// Configures a [`BatchReader`] over a group's 1-D arrays (or one 1-D array).
///
/// Cheap to clone: the metadata is shared, so a caller can make one builder per
/// [split](ReaderBuilder::splits) and read them on different threads.
#[derive(Debug, Clone)]
pub struct ReaderBuilder {
    source: Source,
    /// How chunks are decoded.
    decode: Decode,
    recycler: Option<Arc<crate::recycle::Recycler>>,
    /// The most bytes decoded ahead.
    read_ahead_bytes: u64,
    projection: Option<Vec<String>>,
    rows: Option<Range<u64>>,
    /// Of those rows, only these (in row order).
    selection: Option<Vec<Range<u64>>>,
    /// Decode on rayon even a read of one chunk (one of many reads that run
    /// at once, as late materialization's blocks do).
    never_inline: bool,
    offset: u64,
    limit: Option<u64>,
    batch_size: Option<usize>,
    max_batch_rows: Option<usize>,
}

impl ReaderBuilder {
    pub(crate) fn for_group(group: ZarrGroup) -> Self {
        Self::new(Source::Group(group))
    }

    pub(crate) fn for_array(array: ZarrArray) -> Self {
        Self::new(Source::Array(array))
    }

    fn new(source: Source) -> Self {
        Self {
            source,
            decode: Decode::default(),
            recycler: Some(crate::recycle::Recycler::for_reader()),
            read_ahead_bytes: READ_AHEAD_BYTES,
            projection: None,
            rows: None,
            selection: None,
            never_inline: false,
            offset: 0,
            limit: None,
            batch_size: None,
            max_batch_rows: None,
        }
    }

    /// Decode, and read ahead, as `context` says (the default: on rayon, at
    /// most 256 MiB ahead).
    pub fn with_context(mut self, context: &ExecutionContext) -> Self {
        self.decode = context.decode();
        self.recycler = context.recycler().cloned();
        self.read_ahead_bytes = context.read_ahead_bytes();
        self
    }

    /// Read only these columns, in this order.
    pub fn with_projection<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.projection = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Read rows `range` only (then [`with_offset`](Self::with_offset) and
    /// [`with_limit`](Self::with_limit) apply within it).
    pub fn with_row_range(mut self, range: Range<u64>) -> Self {
        self.rows = Some(range);
        self
    }

    /// Of the rows read (the row range, after the offset and the limit), give
    /// only those in `ranges`, in row order: only the chunks holding one are
    /// read, and of a sharded chunk only the inner chunks from its first
    /// chosen row to its last (late materialization's second step).
    #[cfg(any(test, feature = "datafusion"))]
    pub(crate) fn with_row_selection(mut self, ranges: Vec<Range<u64>>) -> Self {
        self.selection = Some(ranges);
        self
    }

    /// Decode as `decode` says (the rest of the context unchanged).
    #[cfg(feature = "datafusion")]
    pub(crate) fn with_decode(mut self, decode: Decode) -> Self {
        self.decode = decode;
        self
    }

    /// Decode on rayon (when the context decodes in parallel) even a read of
    /// one chunk: for reads that run many at once, whose one-chunk decodes
    /// would otherwise take turns on the driver's thread.
    #[cfg(feature = "datafusion")]
    pub(crate) fn never_inline(mut self) -> Self {
        self.never_inline = true;
        self
    }

    /// Skip the first `rows` rows (of the row range, when one is set).
    pub fn with_offset(mut self, rows: u64) -> Self {
        self.offset = rows;
        self
    }

    /// Read at most `rows` rows.
    pub fn with_limit(mut self, rows: u64) -> Self {
        self.limit = Some(rows);
        self
    }

    /// Rows per batch: every batch but the last has exactly `rows` rows.
    ///
    /// By default a batch has at most the largest run length among the columns,
    /// at most [`DEFAULT_MAX_BATCH_ROWS`], and ends early where a run of a column
    /// whose runs are at least that long ends: each such column's rows are then a
    /// slice of one decoded run, never copied into a concatenation to line up with
    /// the other columns. Columns with shorter runs are concatenated. A run is a
    /// chunk, or for a 1-D shard whose inner chunks have at least 8,192 rows, an
    /// inner chunk (the shard's inner chunks are not gathered into one array).
    pub fn with_batch_size(mut self, rows: usize) -> Self {
        self.batch_size = Some(rows.max(1));
        self
    }

    /// Released buffers kept for reuse by `recycler` (an engine's, whose memory
    /// pool accounts for what it keeps: DataFusion's), or by none.
    #[cfg(feature = "datafusion")]
    pub(crate) fn with_recycler(mut self, recycler: Option<Arc<crate::recycle::Recycler>>) -> Self {
        self.recycler = recycler;
        self
    }

    /// At most `rows` rows per batch (default [`DEFAULT_MAX_BATCH_ROWS`]),
    /// batches otherwise cut as by default (ending where a long run ends, never
    /// a concatenation across runs of such a column): an engine's batch size.
    /// [`with_batch_size`](Self::with_batch_size) wins.
    #[cfg(feature = "datafusion")]
    pub(crate) fn with_max_batch_rows(mut self, rows: usize) -> Self {
        self.max_batch_rows = Some(rows.max(1));
        self
    }

    /// The node read, as the user names it (for messages).
    fn label(&self) -> String {
        match &self.source {
            Source::Group(g) => g.label(),
            Source::Array(a) => a.label(),
        }
    }

    fn table_err(&self, problem: TableProblem) -> Error {
        Error::Table {
            path: self.label(),
            problem,
        }
    }

    /// The children of the group that are not read as columns (an N-d array, a
    /// sparse matrix, an array zarrow cannot read), each with the reason: of all
    /// of them without a projection, else none (a projection names what it reads).
    pub fn skipped(&self) -> Vec<Skipped> {
        match (&self.source, &self.projection) {
            (Source::Group(group), None) => group.skipped().to_vec(),
            _ => Vec::new(),
        }
    }

    /// The columns read, in order, all of one length.
    ///
    /// # Errors
    /// [`Error::Table`] when there is no column, a projected name is not one (a
    /// skipped child is named with the reason), or the columns differ in length.
    pub(crate) fn columns(&self) -> Result<Vec<Column>> {
        let (available, skipped): (Vec<Column>, &[Skipped]) = match &self.source {
            Source::Group(group) => (group.columns().to_vec(), group.skipped()),
            // An N-d array's rows are its elements, flattened in C order (read
            // slab by slab).
            Source::Array(array) => (vec![Column::array(array.clone())?], &[]),
        };
        let columns = match &self.projection {
            None => {
                // A column that reads only raw is refused, not left out.
                // (A projection that leaves it out reads the others.)
                if let Some(SkipReason::Convention {
                    path,
                    convention,
                    source,
                }) = skipped
                    .iter()
                    .map(|s| &s.reason)
                    .find(|r| matches!(r, SkipReason::Convention { .. }))
                {
                    return Err(Error::Convention {
                        path: path.clone(),
                        convention: *convention,
                        source: source.clone(),
                    });
                }
                available
            }
            Some(names) => names
                .iter()
                .map(|name| {
                    if let Some(c) = available.iter().find(|c| c.name() == name) {
                        return Ok(c.clone());
                    }
                    if let Some(s) = skipped.iter().find(|s| &s.name == name) {
                        return Err(self.table_err(TableProblem::Skipped(s.clone())));
                    }
                    Err(self.table_err(TableProblem::NoSuchColumn {
                        name: name.clone(),
                        have: available.iter().map(|c| c.name().to_string()).collect(),
                    }))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let Some(first) = columns.first() else {
            return Err(Error::NoColumns {
                path: self.label(),
                skipped: skipped.to_vec(),
            });
        };
        if let Some(other) = columns.iter().find(|c| c.len() != first.len()) {
            return Err(Error::LengthsDiffer {
                path: self.label(),
                first: first.name().to_string(),
                first_rows: first.len(),
                other: other.name().to_string(),
                other_rows: other.len(),
            });
        }
        Ok(columns)
    }

    /// The rows this builder reads, given the table's `len`.
    fn row_range(&self, len: u64) -> Result<Range<u64>> {
        let range = self.rows.clone().unwrap_or(0..len);
        if range.start > range.end || range.end > len {
            return Err(Error::RowsOutOfRange {
                path: self.label(),
                start: range.start,
                end: range.end,
                len,
            });
        }
        let start = range.start.saturating_add(self.offset).min(range.end);
        let end = match self.limit {
            Some(limit) => start.saturating_add(limit).min(range.end),
            None => range.end,
        };
        Ok(start..end)
    }

    /// The rows this builder reads.
    ///
    /// # Errors
    /// [`Error::Table`] when there is no column, a projected name is not one,
    /// or the columns differ in length; a row range past the end.
    pub fn rows(&self) -> Result<Range<u64>> {
        let columns = self.columns()?;
        self.row_range(columns[0].len())
    }

    /// The rows split into at most `n` ranges (fewer when there are fewer
    /// chunks), each starting and ending on a chunk boundary of every column whose
    /// chunks (shards) are the longest, except at the ends of the rows read. Each
    /// range reads independently: `builder.clone().with_row_range(range)`.
    ///
    /// # Errors
    /// As [`ReaderBuilder::rows`].
    pub fn splits(&self, n: usize) -> Result<Vec<Range<u64>>> {
        let columns = self.columns()?;
        let rows = self.row_range(columns[0].len())?;
        Ok(aligned_splits(rows, longest_chunk(&columns), n))
    }

    /// The push decoder of the rows this builder reads: sans IO, driven by
    /// [`BatchReader`] (blocking) or `ReaderBuilder::into_stream` (async, with
    /// the `async` feature), or by the caller's own driver.
    ///
    /// # Errors
    /// As [`ReaderBuilder::rows`].
    pub fn build_decoder(self) -> Result<RowDecoder> {
        let concurrency = self.store_concurrency();
        Ok(self.decoder(concurrency)?.decoder)
    }

    /// How many requests the columns' store wants in flight.
    fn store_concurrency(&self) -> usize {
        self.store().map_or(1, |s| s.concurrency())
    }

    /// The store the columns read from (one for all: a group's children share
    /// its store).
    pub(crate) fn store(&self) -> Option<Arc<dyn crate::Store>> {
        match &self.source {
            Source::Group(g) => g.columns().first().map(|c| c.leaves()[0].store().clone()),
            Source::Array(a) => Some(a.store().clone()),
        }
    }

    /// The decoder, its read-ahead sized for `concurrency` requests in flight,
    /// and whether its driver should decode in parallel.
    fn decoder(self, concurrency: usize) -> Result<Planned> {
        let columns = self.columns()?;
        let rows = self.row_range(columns[0].len())?;
        let longest = longest_chunk(&columns);
        let aligned = self.batch_size.is_none();
        let batch_size = self.batch_size.unwrap_or_else(|| {
            usize::try_from(longest_run(&columns))
                .unwrap_or(usize::MAX)
                .min(self.max_batch_rows.unwrap_or(DEFAULT_MAX_BATCH_ROWS))
        });
        let mut schema = Schema::new(
            columns
                .iter()
                .map(|c| c.field().clone())
                .collect::<Vec<_>>(),
        );
        if let Source::Group(group) = &self.source
            && group.is_dataframe()
        {
            let index = group
                .dataframe_index()
                .filter(|i| columns.iter().any(|c| c.name() == *i));
            let pandas: Vec<_> = columns.iter().map(Column::pandas).collect();
            schema = schema.with_metadata(
                [(
                    pandas::SCHEMA_KEY.to_string(),
                    pandas_metadata(&Vec::from_iter(index), &pandas),
                )]
                .into(),
            );
        }
        // The read-ahead window, from the first row not yet given: at least one
        // batch, and one of the longest chunks per thread (as many decode at once
        // as there are threads; more only queue, and hold memory).
        // A remote store wants many requests in flight: as many chunks ahead, but
        // no more than fit in the context's read-ahead bytes (estimated from the
        // types): memory
        // is bounded by that window whatever the store's size.
        let row_bytes: u64 = columns
            .iter()
            .flat_map(|c| c.leaves())
            .map(|a| a.metadata().data_type.estimated_arrow_bytes())
            .sum::<u64>()
            .max(1);
        let fits = (self.read_ahead_bytes / longest.saturating_mul(row_bytes).max(1)) as usize;
        let parallel = self.decode == Decode::Parallel;
        let threads = if parallel { decode_threads() } else { 1 };
        let ahead = threads.max(concurrency.min(fits)) as u64;
        let lookahead = (batch_size as u64).max(longest.saturating_mul(ahead));
        let rows = match &self.selection {
            Some(ranges) => Selection::new(ranges.iter().cloned(), rows),
            None => Selection::all(rows),
        };
        let first = rows.row(0);
        let leaves = columns
            .iter()
            .flat_map(|c| c.leaves().into_iter().cloned())
            .map(|array| Cursor::new(array.with_recycler(self.recycler.clone()), first))
            .collect();
        // One chunk to read: on this thread (no pool to wake, no hand-off).
        let span = first..rows.end_of(rows.len());
        let parallel = parallel && (self.never_inline || chunks_to_read(&columns, &span) > 1);
        let decoder = RowDecoder::new(DecoderParts {
            schema: Arc::new(schema),
            columns,
            leaves,
            label: self.label(),
            rows,
            batch_size,
            aligned,
            lookahead,
        })?;
        Ok(Planned { decoder, parallel })
    }

    /// Build the blocking reader.
    ///
    /// # Errors
    /// As [`ReaderBuilder::rows`].
    pub fn build(self) -> Result<BatchReader> {
        let Some(store) = self.store() else {
            // No column: the columns' error says why.
            self.columns()?;
            return Err(self.table_err(TableProblem::NoColumns));
        };
        #[cfg(feature = "async")]
        if let Some(remote) = store.remote() {
            // Many requests in flight, on the store's runtime: the async driver,
            // waited for batch by batch.
            let concurrency = store.concurrency();
            let Planned { decoder, parallel } = self.decoder(concurrency)?;
            let schema = decoder.schema();
            let rows = decoder.num_rows();
            let stream =
                super::stream::drive(decoder, remote.store.clone(), concurrency, parallel, None);
            return Ok(BatchReader {
                schema,
                rows,
                driver: Driver::Remote {
                    stream: Box::pin(stream),
                    remote,
                },
                ended: false,
            });
        }
        let concurrency = self.store_concurrency();
        let Planned { decoder, parallel } = self.decoder(concurrency)?;
        Ok(BatchReader {
            schema: decoder.schema(),
            rows: decoder.num_rows(),
            driver: Driver::Local {
                decoder: Box::new(decoder),
                store,
                pool: parallel.then(LocalPool::default),
            },
            ended: false,
        })
    }
}

/// A decoder, and whether its driver should decode in parallel (more than one
/// chunk to read, and the options allow it).
struct Planned {
    decoder: RowDecoder,
    parallel: bool,
}

/// How many chunks reading `rows` of `columns` takes (at most 2 counted: the
/// question is whether there is more than one).
fn chunks_to_read(columns: &[Column], rows: &Range<u64>) -> u64 {
    let mut chunks = 0u64;
    for column in columns {
        if column.categories().is_some() {
            chunks += 1;
        }
        for leaf in column.leaves() {
            let per_row = leaf.row_chunk_len().max(1);
            let slabs = rows.end.div_ceil(per_row) - rows.start / per_row;
            let per_slab: u64 = leaf.grid().grid_shape().iter().skip(1).product();
            chunks = chunks.saturating_add(slabs.saturating_mul(per_slab.max(1)));
            if chunks > 1 {
                return chunks;
            }
        }
    }
    chunks
}

/// The longest chunk (shard) length among `columns`, at least 1.
fn longest_chunk(columns: &[Column]) -> u64 {
    columns
        .iter()
        .map(Column::chunk_len)
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The longest run among `columns`' leaves, at least 1: a chunk, or the inner
/// chunk of a shard decoded as runs ([`ZarrArray::run_len`]).
fn longest_run(columns: &[Column]) -> u64 {
    columns
        .iter()
        .flat_map(|c| c.leaves())
        .map(|a| a.run_len().unwrap_or_else(|| a.row_chunk_len()))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// A [`RecordBatchReader`] over a group's 1-D arrays (or one 1-D array), for a range
/// of rows. Columns with different chunk lengths still line up row for row: each
/// batch takes the same rows from every column, slicing (and, across chunk
/// boundaries, concatenating) as needed.
///
/// The blocking driver of a [`RowDecoder`]: a local store's values are read on
/// rayon and decoded there (the decoder's [`DecodeJob`]s) while the caller works
/// on the batch before, or, for a read of one chunk, read and decoded on the
/// calling thread; a remote store's are fetched many at a time by the async
/// driver, on the store's runtime.
pub struct BatchReader {
    schema: SchemaRef,
    /// How many rows it gives.
    rows: u64,
    driver: Driver,
    /// The last batch was read, or reading failed: every later call gets
    /// `None` (an async driver's stream must not be polled after its end).
    ended: bool,
}

/// What a parallel blocking read of a local store hands to rayon: reading
/// values, and decoding them ([`DecodeJob`]s), each task sending its outcome
/// back to the reader's thread.
struct LocalPool {
    sender: Sender<Done>,
    receiver: Receiver<Done>,
    /// Tasks on rayon whose outcome has not been received.
    pending: usize,
}

/// A [`LocalPool`] task's outcome.
enum Done {
    /// A value read, for the request of this id.
    Fetched(u64, Result<plan::Fetched>),
    /// A chunk decoded.
    Decoded(DecodedChunk),
}

impl Default for LocalPool {
    fn default() -> Self {
        let (sender, receiver) = channel();
        Self {
            sender,
            receiver,
            pending: 0,
        }
    }
}

impl LocalPool {
    /// Read each of `requests` on rayon.
    fn fetch(&mut self, store: &Arc<dyn crate::Store>, requests: Vec<plan::Request>) {
        for request in requests {
            let (store, sender) = (store.clone(), self.sender.clone());
            self.pending += 1;
            rayon::spawn(move || {
                let fetched =
                    catch_unwind(AssertUnwindSafe(|| plan::fetch(store.as_ref(), &request)))
                        .unwrap_or(Err(Error::Panicked { task: "store read" }));
                // The reader may be gone (dropped early): nobody to tell.
                let _ = sender.send(Done::Fetched(request.id, fetched));
            });
        }
    }

    /// Run each of `jobs` on rayon (a job catches its own panic).
    fn decode(&mut self, jobs: Vec<DecodeJob>) {
        for job in jobs {
            let sender = self.sender.clone();
            self.pending += 1;
            rayon::spawn(move || {
                let _ = sender.send(Done::Decoded(job.run()));
            });
        }
    }

    /// Give `decoder` the next outcome, waiting for one, then those already
    /// in, without waiting; a value read is handed back to rayon to decode.
    ///
    /// # Errors
    /// A store error or a corrupt chunk; [`Error::Panicked`] when nothing is
    /// on rayon (the decoder waits for nothing: a bug).
    fn give(&mut self, decoder: &mut RowDecoder) -> Result<()> {
        if self.pending == 0 {
            return Err(Error::Panicked {
                task: "row decoder (waiting for nothing)",
            });
        }
        let mut done = Some(
            self.receiver
                .recv()
                .map_err(|_| Error::Panicked { task: "store read" })?,
        );
        let mut fetched = false;
        while let Some(outcome) = done {
            self.pending -= 1;
            match outcome {
                Done::Fetched(id, value) => {
                    decoder.push(id, value?)?;
                    fetched = true;
                }
                Done::Decoded(chunk) => decoder.push_decoded(chunk)?,
            }
            done = match self.pending {
                0 => None,
                _ => self.receiver.try_recv().ok(),
            };
        }
        if fetched {
            self.decode(decoder.decode_jobs());
        }
        Ok(())
    }
}

enum Driver {
    Local {
        decoder: Box<RowDecoder>,
        store: Arc<dyn crate::Store>,
        /// Reads and decodes on rayon (a parallel read); `None`: all on the
        /// reader's thread.
        pool: Option<LocalPool>,
    },
    #[cfg(feature = "async")]
    Remote {
        stream: std::pin::Pin<Box<dyn futures::Stream<Item = Result<RecordBatch>> + Send>>,
        remote: crate::store::Remote,
    },
}

impl std::fmt::Debug for BatchReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchReader")
            .field("schema", &self.schema)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl BatchReader {
    /// Total rows this reader yields.
    pub(crate) fn total_rows(&self) -> u64 {
        self.rows
    }

    /// The next batch, with zarrow's error.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        match &mut self.driver {
            Driver::Local {
                decoder,
                store,
                pool,
            } => loop {
                match decoder.try_decode()? {
                    DecodeResult::Batch(batch) => return Ok(Some(batch)),
                    DecodeResult::Finished => return Ok(None),
                    // Reading a file is part of the work to share: each value
                    // is read on rayon, then decoded there.
                    DecodeResult::NeedsData(requests) => match pool.as_mut() {
                        Some(pool) if requests.is_empty() => pool.give(decoder)?,
                        Some(pool) => pool.fetch(store, requests),
                        // One chunk: read and decoded (by the next
                        // `try_decode`) on this thread.
                        None if requests.is_empty() => {
                            return Err(Error::Panicked {
                                task: "row decoder (waiting for nothing)",
                            });
                        }
                        None => {
                            for request in requests {
                                let fetched = plan::fetch(store.as_ref(), &request)?;
                                decoder.push(request.id, fetched)?;
                            }
                        }
                    },
                }
            },
            #[cfg(feature = "async")]
            Driver::Remote { stream, remote } => {
                use futures::StreamExt;
                remote.block_on(stream.next())?.transpose()
            }
        }
    }
}

#[cfg(feature = "async")]
impl ReaderBuilder {
    /// The batches as an async `Stream` (feature `async`), read through `store`
    /// on the caller's runtime with up to `concurrency` requests in flight, the
    /// chunks decoded on rayon, and the read's counters, updated as it goes.
    /// With a `budget` (an engine's memory pool) the read-ahead is held within
    /// it: running out is [`Error::MemoryExhausted`]. Dropping the stream
    /// drops the requests in flight and asks for no more.
    ///
    /// # Errors
    /// As [`ReaderBuilder::rows`].
    #[allow(clippy::type_complexity)]
    pub(crate) fn into_stream_on(
        self,
        store: Arc<dyn crate::store::AsyncStore>,
        concurrency: usize,
        budget: Option<Box<dyn super::ReadBudget>>,
    ) -> Result<(
        impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static,
        Arc<super::ReadStats>,
    )> {
        let Planned { decoder, parallel } = self.decoder(concurrency.max(1))?;
        let stats = decoder.stats().clone();
        let stream = super::stream::drive(decoder, store, concurrency.max(1), parallel, budget);
        Ok((stream, stats))
    }

    /// The batches as an async `Stream` (feature `async`) through the columns'
    /// own store (its async form for an object store, with the store's
    /// concurrency; a local store is read inline, each read a short one), on
    /// the caller's runtime, the chunks decoded on rayon. Dropping the stream
    /// drops the requests in flight and asks for no more. An error building
    /// the decoder is the stream's only item.
    pub fn into_stream(self) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
        use futures::StreamExt;
        let store = self.store();
        let opened = match store {
            Some(store) => {
                let concurrency = store.concurrency();
                let store: Arc<dyn crate::store::AsyncStore> = match store.remote() {
                    Some(remote) => remote.store,
                    None => Arc::new(crate::store::SyncAsAsync::new(store)),
                };
                self.into_stream_on(store, concurrency, None)
                    .map(|(stream, _)| stream)
            }
            None => self
                .columns()
                .and_then(|_| Err(self.table_err(TableProblem::NoColumns))),
        };
        match opened {
            Ok(stream) => stream.boxed(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }
}

impl Iterator for BatchReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let result = self.next_batch();
        self.ended = !matches!(result, Ok(Some(_)));
        result.map_err(ArrowError::from).transpose()
    }
}

impl RecordBatchReader for BatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The threads rayon decodes on, without starting its global pool to ask (a
/// read of one chunk never needs it): the current pool's inside one, else what
/// the global pool has or would have (`RAYON_NUM_THREADS`, or the cores; worked
/// out once, as the pool's size is: the cores' count reads the process's
/// cgroup files each time).
fn decode_threads() -> usize {
    static GLOBAL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    if rayon::current_thread_index().is_some() {
        return rayon::current_num_threads().max(1);
    }
    *GLOBAL.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}
