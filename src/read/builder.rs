//! [`ReaderBuilder`]: which columns and rows to read, in which batches; and
//! [`BatchReader`], the `RecordBatchReader` it builds.
//!
//! ```text
//! ZarrGroup / ZarrArray (metadata loaded once, shared)
//!   └─▶ ReaderBuilder: with_projection, with_row_range / with_offset / with_limit,
//!        with_batch_size; splits(n): chunk-aligned row ranges, one reader each
//!         └─▶ BatchReader: per batch, the chunks each column needs (only the rows
//!             asked for: a shard's index and inner chunks, not the whole shard);
//!             the next batch's chunks decode on rayon's pool while the caller
//!             works on this one
//! ```

use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use rayon::prelude::*;

use super::{Column, READ_AHEAD_BYTES, ReadOptions, Skipped, ZarrArray, ZarrGroup, gate};
use crate::conventions::anndata;
use crate::error::{Error, Result};
use crate::rows::RowQueue;

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
    options: ReadOptions,
    projection: Option<Vec<String>>,
    rows: Option<Range<u64>>,
    offset: u64,
    limit: Option<u64>,
    batch_size: Option<usize>,
}

impl ReaderBuilder {
    pub(crate) fn for_group(group: ZarrGroup) -> Self {
        let options = *group.options();
        Self::new(Source::Group(group), options)
    }

    pub(crate) fn for_array(array: ZarrArray) -> Self {
        let options = *array.options();
        Self::new(Source::Array(array), options)
    }

    fn new(source: Source, options: ReadOptions) -> Self {
        Self {
            source,
            options,
            projection: None,
            rows: None,
            offset: 0,
            limit: None,
            batch_size: None,
        }
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

    /// The node read, as the user names it (for messages).
    fn label(&self) -> String {
        match &self.source {
            Source::Group(g) => g.label(),
            Source::Array(a) => a.label(),
        }
    }

    fn table_err(&self, message: String) -> Error {
        Error::Table {
            path: self.label(),
            message,
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
    pub fn columns(&self) -> Result<Vec<Column>> {
        let (available, skipped): (Vec<Column>, &[Skipped]) = match &self.source {
            Source::Group(group) => (group.columns().to_vec(), group.skipped()),
            Source::Array(array) if array.metadata().shape.len() == 1 => {
                (vec![Column::array(array.clone())?], &[])
            }
            Source::Array(array) => {
                return Err(self.table_err(format!(
                    "a reader needs 1-D arrays; this one has shape {:?} (read it with ZarrArray::batches)",
                    array.metadata().shape
                )));
            }
        };
        let columns = match &self.projection {
            None => {
                // A column that reads only raw is refused, not left out.
                if let Some(s) = skipped.iter().find(|s| s.convention) {
                    return Err(Error::Convention {
                        path: self.label(),
                        message: format!("{s} (leave it out with a projection)"),
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
                        return Err(self.table_err(format!("{name:?} is {}", s.reason)));
                    }
                    Err(self.table_err(format!(
                        "no column named {name:?} (have: {})",
                        available
                            .iter()
                            .map(Column::name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let Some(first) = columns.first() else {
            let mut message = "it has no 1-D arrays".to_string();
            if !skipped.is_empty() {
                message.push_str(" (skipped: ");
                message.push_str(
                    &skipped
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                );
                message.push(')');
            }
            return Err(self.table_err(message));
        };
        if let Some(other) = columns.iter().find(|c| c.len() != first.len()) {
            return Err(self.table_err(format!(
                "columns differ in length: {} has {} rows, {} has {} (select equal-length columns)",
                first.name(),
                first.len(),
                other.name(),
                other.len()
            )));
        }
        Ok(columns)
    }

    /// The rows this builder reads, given the table's `len`.
    fn row_range(&self, len: u64) -> Result<Range<u64>> {
        let range = self.rows.clone().unwrap_or(0..len);
        if range.start > range.end || range.end > len {
            return Err(Error::InvalidArgument(format!(
                "rows {}..{} are outside {:?} ({len} rows)",
                range.start,
                range.end,
                self.label()
            )));
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
    /// As [`ReaderBuilder::columns`]; a row range past the end.
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

    /// Build the reader: reads what columns read once (a categorical's
    /// categories).
    ///
    /// # Errors
    /// As [`ReaderBuilder::rows`]; errors reading the categories.
    pub fn build(self) -> Result<BatchReader> {
        let columns = self.columns()?;
        let rows = self.row_range(columns[0].len())?;
        let longest = longest_chunk(&columns);
        let aligned = self.batch_size.is_none();
        let batch_size = self.batch_size.unwrap_or_else(|| {
            usize::try_from(longest_run(&columns))
                .unwrap_or(usize::MAX)
                .min(DEFAULT_MAX_BATCH_ROWS)
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
                    "pandas".to_string(),
                    anndata::pandas_metadata(&Vec::from_iter(index), &pandas),
                )]
                .into(),
            );
        }
        // Read ahead at least one batch, and at least one of the longest chunks per
        // thread: decoding then overlaps with the caller's work on earlier batches.
        // A remote store wants many requests in flight: as many chunks ahead, read
        // by as many threads of a fetch pool (a request mostly waits; rayon's pool
        // stays one thread per core).
        let concurrency = columns
            .iter()
            .flat_map(|c| c.leaves())
            .map(ZarrArray::store_concurrency)
            .max()
            .unwrap_or(1);
        let pool = if self.options.parallel {
            super::fetch_pool(concurrency)?
        } else {
            None
        };
        // As many chunks ahead as requests in flight, but no more than fit in
        // READ_AHEAD_BYTES (estimated from the types): memory is bounded by that
        // window whatever the store's size, and many small chunks still get many
        // requests in flight.
        let row_bytes: u64 = columns
            .iter()
            .flat_map(|c| c.leaves())
            .map(|a| a.metadata().data_type.estimated_arrow_bytes())
            .sum::<u64>()
            .max(1);
        let fits = (READ_AHEAD_BYTES / longest.saturating_mul(row_bytes).max(1)) as usize;
        let ahead = self.options.read_ahead().max(concurrency.min(fits)) as u64;
        let lookahead = (batch_size as u64).max(longest.saturating_mul(ahead));
        let prepared = columns
            .iter()
            .map(Column::prepare)
            .collect::<Result<Vec<_>>>()?;
        let leaves = columns
            .iter()
            .flat_map(|c| c.leaves().into_iter().cloned())
            .map(|array| Cursor::new(array, rows.start))
            .collect();
        Ok(BatchReader {
            schema: Arc::new(schema),
            columns,
            prepared,
            leaves,
            label: self.label(),
            rows: rows.clone(),
            done: rows.start,
            batch_size,
            aligned,
            lookahead,
            parallel: self.options.parallel,
            pool,
            pending: VecDeque::new(),
            failed: false,
        })
    }
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
        .map(|a| a.run_len().unwrap_or(a.metadata().chunk_shape[0]))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// One leaf array's cursor: the chunks asked for, and decoded rows not yet
/// handed out.
#[derive(Debug)]
struct Cursor {
    array: ZarrArray,
    chunk_len: u64,
    /// The rows of one decoded run: the chunk, or a shard's inner chunk.
    run_len: u64,
    /// The first chunk not yet asked for.
    next_chunk: u64,
    /// Rows up to here are decoded or being decoded.
    covered: u64,
    queued: RowQueue,
}

impl Cursor {
    fn new(array: ZarrArray, start: u64) -> Self {
        let chunk_len = array.metadata().chunk_shape[0].max(1);
        let run_len = array.run_len().unwrap_or(chunk_len).max(1);
        Self {
            array,
            chunk_len,
            run_len,
            next_chunk: start / chunk_len,
            covered: start,
            queued: RowQueue::default(),
        }
    }
}

/// One chunk to decode: rows `rows` of chunk `chunk` of leaf `leaf`.
struct Job {
    leaf: usize,
    array: ZarrArray,
    chunk: u64,
    rows: Range<u64>,
    /// Its place in line to decode (see [`gate`]): jobs are planned in row order.
    ticket: u64,
}

impl Job {
    /// The rows as runs (a shard's inner chunks, when they are long: see
    /// [`ZarrArray::run_len`]), each with the leaf's index.
    fn run(&self) -> Result<Vec<(usize, ArrayRef)>> {
        let runs = gate::in_line(self.ticket, || {
            self.array
                .chunk_row_runs(self.chunk, self.rows.clone(), true)
        })?;
        Ok(runs.into_iter().map(|run| (self.leaf, run)).collect())
    }
}

/// Decoded runs of chunks: each with the index of its leaf, in row order per leaf.
type Decoded = Vec<(usize, ArrayRef)>;

/// Decode `jobs`, in parallel when asked (on `pool` when there is one, else
/// rayon's global pool); results in job order.
fn run_jobs(jobs: &[Job], parallel: bool, pool: Option<&rayon::ThreadPool>) -> Result<Decoded> {
    let runs: Vec<Decoded> = match pool {
        _ if !parallel || jobs.len() <= 1 => jobs.iter().map(Job::run).collect::<Result<_>>()?,
        Some(pool) => pool.install(|| jobs.par_iter().map(Job::run).collect::<Result<_>>())?,
        None => jobs.par_iter().map(Job::run).collect::<Result<_>>()?,
    };
    Ok(runs.into_iter().flatten().collect())
}

/// A [`RecordBatchReader`] over a group's 1-D arrays (or one 1-D array), for a range
/// of rows. Columns with different chunk lengths still line up row for row: each
/// batch takes the same rows from every column, slicing (and, across chunk
/// boundaries, concatenating) as needed.
#[derive(Debug)]
pub struct BatchReader {
    schema: SchemaRef,
    columns: Vec<Column>,
    /// What each column read once (a categorical's categories).
    prepared: Vec<Option<ArrayRef>>,
    /// The arrays read row by row, the columns' leaves in column order.
    leaves: Vec<Cursor>,
    label: String,
    rows: Range<u64>,
    done: u64,
    batch_size: usize,
    /// Whether batches end early at run boundaries (the default batch size; see
    /// [`ReaderBuilder::with_batch_size`]).
    aligned: bool,
    /// Rows past the current batch whose chunks decode while the caller works.
    lookahead: u64,
    parallel: bool,
    /// The fetch threads of a remote store (many requests in flight).
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Chunks decoding on the pool, in the order they were asked for.
    pending: VecDeque<Receiver<Result<Decoded>>>,
    failed: bool,
}

impl BatchReader {
    /// Total rows this reader yields.
    pub fn total_rows(&self) -> u64 {
        self.rows.end - self.rows.start
    }

    /// The rows this reader yields.
    pub fn row_range(&self) -> Range<u64> {
        self.rows.clone()
    }

    /// The chunks every leaf still needs for rows up to `upto`, marked asked for.
    fn plan(&mut self, upto: u64) -> Vec<Job> {
        let end = self.rows.end;
        let mut jobs = Vec::new();
        for (c, col) in self.leaves.iter_mut().enumerate() {
            while col.covered < upto.min(end) {
                let chunk = col.next_chunk;
                let chunk_end = ((chunk + 1) * col.chunk_len).min(end);
                jobs.push(Job {
                    leaf: c,
                    array: col.array.clone(),
                    chunk,
                    rows: col.covered..chunk_end,
                    ticket: 0,
                });
                col.covered = chunk_end;
                col.next_chunk += 1;
            }
        }
        // In row order across the leaves: the order the rows are wanted in.
        jobs.sort_by_key(|job| job.rows.start);
        for job in &mut jobs {
            job.ticket = gate::ticket();
        }
        jobs
    }

    /// Start decoding, in the background, the chunks every leaf needs for rows up
    /// to `upto` that are not yet asked for (when the reader is parallel).
    fn read_ahead(&mut self, upto: u64) {
        if !self.parallel {
            return;
        }
        // One task and one answer per chunk: the reader takes each chunk as soon
        // as it is decoded, not when the slowest of those asked for together is.
        for job in self.plan(upto) {
            let (sender, receiver) = channel();
            let task = move || {
                let result = catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|_| {
                    Err(Error::Panicked {
                        task: "chunk decoder",
                    })
                });
                // The reader may be gone (dropped early): nobody to tell.
                let _ = sender.send(result);
            };
            match &self.pool {
                Some(pool) => pool.spawn(task),
                None => rayon::spawn(task),
            }
            self.pending.push_back(receiver);
        }
    }

    fn queue(&mut self, decoded: Decoded) {
        for (c, array) in decoded {
            self.leaves[c].queued.push(array);
        }
    }

    fn next_inner(&mut self) -> Result<Option<RecordBatch>> {
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
        if n == 0 {
            return Ok(None);
        }
        // The chunks decoded ahead, as far as this batch needs them (they come
        // before any chunk asked for below).
        while self.leaves.iter().any(|c| (c.queued.len() as u64) < n) {
            let Some(pending) = self.pending.pop_front() else {
                break;
            };
            let decoded = pending.recv().unwrap_or_else(|_| {
                Err(Error::Panicked {
                    task: "chunk decoder",
                })
            })?;
            self.queue(decoded);
        }
        let jobs = self.plan(self.done + n);
        // The next chunks are asked for before this batch's are decoded: their
        // requests are in flight (and they decode) meanwhile, and while the caller
        // works on this batch.
        self.read_ahead((self.done + n).saturating_add(self.lookahead));
        let decoded = run_jobs(&jobs, self.parallel, self.pool.as_deref())?;
        self.queue(decoded);
        let mut leaves = Vec::with_capacity(self.leaves.len());
        for col in &mut self.leaves {
            match col.queued.take(n as usize)? {
                Some(array) if array.len() as u64 == n => leaves.push(array),
                _ => {
                    return Err(Error::Table {
                        path: self.label.clone(),
                        message: format!(
                            "column {} ended before row {}",
                            col.array.column_name(),
                            self.done + n
                        ),
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

#[cfg(feature = "async")]
impl BatchReader {
    /// The batches as an async `Stream` (feature `async`): the reader runs on a
    /// thread of its own, at most `buffer` batches ahead of the consumer, so an
    /// async caller (a DataFusion plan, say) never blocks its executor. Dropping
    /// the stream stops the reader after the batch in hand.
    pub fn into_stream(
        self,
        buffer: usize,
    ) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
        super::stream::spawn(move || Ok(self), buffer)
    }
}

#[cfg(feature = "async")]
impl ReaderBuilder {
    /// Build the reader on a thread of its own (building reads what columns read
    /// once, such as a categorical's categories) and stream its batches, as
    /// [`BatchReader::into_stream`]; an error building it is the stream's only
    /// item.
    pub fn into_stream(
        self,
        buffer: usize,
    ) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
        super::stream::spawn(move || self.build(), buffer)
    }
}

impl Iterator for BatchReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_inner();
        self.failed = result.is_err();
        result.map_err(ArrowError::from).transpose()
    }
}

impl RecordBatchReader for BatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
