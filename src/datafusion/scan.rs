//! [`ZarrScanExec`]: the physical scan of a [`ZarrTable`].

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs,
};
use futures::StreamExt;

use std::sync::atomic::Ordering;

use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};

use super::df_err;
use super::filter::{Batches, Filtered, ScanFilter};
use super::table::{Source, ZarrTable};
use crate::error::Result;
use crate::location::{Location, Stores};
use crate::read::{ReadBudget, ReadStats, ReaderBuilder};
use crate::store::{AsyncStore, SyncAsAsync};

/// Rows per batch when no column is read (`count(*)` that statistics could not
/// answer): the batches carry a row count only.
const EMPTY_BATCH_ROWS: u64 = 1 << 16;

/// The scan of a [`ZarrTable`]: one partition per row range, each an async
/// stream on the session's runtime (only the projected arrays, only the chunks
/// the rows need; the session's object store, its memory pool for the
/// read-ahead, its metrics), batches in row order.
#[derive(Debug, Clone)]
pub struct ZarrScanExec {
    table: Arc<ZarrTable>,
    columns: Vec<usize>,
    /// Every row range read, in order (what a plan carries to another
    /// machine).
    ranges: Vec<Range<u64>>,
    /// The ranges of each partition, read one after another.
    groups: Vec<Vec<Range<u64>>>,
    schema: SchemaRef,
    /// The filters the scan evaluates itself (the table's exact ones).
    filter: Option<Arc<ScanFilter>>,
    /// The most rows each partition gives (after the filter).
    fetch: Option<usize>,
    /// Rows the chunk statistics excluded when the scan was planned.
    pruned: u64,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl ZarrScanExec {
    /// The scan of `columns` (indices into the table's schema) of `table`, one
    /// partition per row range.
    ///
    /// # Errors
    /// A column index outside the table's schema.
    pub(crate) fn try_new(
        table: Arc<ZarrTable>,
        columns: Vec<usize>,
        ranges: Vec<Range<u64>>,
    ) -> DfResult<Self> {
        let ranges = if ranges.is_empty() {
            std::iter::once(0..0).collect()
        } else {
            ranges
        };
        Self::with_partitions(table, columns, ranges)
    }

    /// The scan with exactly one partition per range, none for none (a slice of
    /// a scan that a distributed engine gave a task no part of).
    pub(crate) fn with_partitions(
        table: Arc<ZarrTable>,
        columns: Vec<usize>,
        ranges: Vec<Range<u64>>,
    ) -> DfResult<Self> {
        let groups = ranges.into_iter().map(|r| vec![r]).collect();
        Self::grouped(table, columns, groups)
    }

    /// The scan with one partition per group of ranges, each partition
    /// reading its ranges one after another (the row ranges a filter keeps,
    /// spread over the session's partitions).
    pub(crate) fn grouped(
        table: Arc<ZarrTable>,
        columns: Vec<usize>,
        groups: Vec<Vec<Range<u64>>>,
    ) -> DfResult<Self> {
        let ranges: Vec<Range<u64>> = groups.iter().flatten().cloned().collect();
        let table_schema = datafusion::catalog::TableProvider::schema(table.as_ref());
        // Field by field (the table's schema carries no metadata of its own).
        let schema = Arc::new(table_schema.project(&columns)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(groups.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            table,
            columns,
            ranges,
            groups,
            schema,
            filter: None,
            fetch: None,
            pruned: 0,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The scan that gives only the rows `filter` keeps (evaluated on its
    /// columns first, the others read only where rows match), at most `fetch`
    /// of them per partition.
    pub(crate) fn with_filter(
        mut self,
        filter: Option<Arc<ScanFilter>>,
        fetch: Option<usize>,
    ) -> Self {
        self.filter = filter;
        self.fetch = fetch;
        self
    }

    /// Record that chunk statistics excluded `rows` rows (shown in `EXPLAIN
    /// ANALYZE`).
    pub(crate) fn with_pruned(mut self, rows: u64) -> Self {
        self.pruned = rows;
        self
    }

    /// The filters the scan evaluates itself.
    pub(crate) fn filter(&self) -> Option<&Arc<ScanFilter>> {
        self.filter.as_ref()
    }

    /// The most rows each partition gives.
    pub(crate) fn fetch(&self) -> Option<usize> {
        self.fetch
    }

    /// The Zarr scan `plan` is: a `ZarrScanExec`, or the file form a table
    /// decoded from a plan (on a distributed engine's scheduler) plans, as a
    /// scan of its row ranges; `None` for any other node.
    ///
    /// # Errors
    /// A file form whose files are not row ranges.
    pub fn of_plan(plan: &Arc<dyn ExecutionPlan>) -> DfResult<Option<Self>> {
        if let Some(scan) = plan.downcast_ref::<Self>() {
            return Ok(Some(scan.clone()));
        }
        Ok(super::distributed::sliced_scan(plan)?.map(|(scan, _)| scan))
    }

    /// The table scanned.
    pub fn table(&self) -> &Arc<ZarrTable> {
        &self.table
    }

    /// The columns read (indices into the table's schema).
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The rows of each partition.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    fn names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The store a partition reads chunks through, and how many requests it
    /// keeps in flight: the object store the session has registered for the
    /// table's URL, else the table's own store (its async form for an object
    /// store; a local one read inline).
    fn read_store(
        &self,
        context: &TaskContext,
        builder: &ReaderBuilder,
    ) -> DfResult<(Arc<dyn AsyncStore>, usize)> {
        if let Location::Url(url) = self.table.location() {
            let stores =
                Stores::default().with_registered(super::session_stores(context.runtime_env()));
            if let Some(store) = stores.registered_async(url) {
                return Ok((Arc::new(store), crate::store::DEFAULT_CONCURRENCY));
            }
        }
        let Some(store) = builder.store() else {
            return internal_err!("ZarrScanExec: a table with no columns");
        };
        let concurrency = store.concurrency();
        Ok(match store.remote() {
            Some(remote) => (remote.store, concurrency),
            None => (Arc::new(SyncAsAsync::reading_on_rayon(store)), concurrency),
        })
    }

    fn rows(&self, partition: Option<usize>) -> u64 {
        match partition {
            Some(p) => self.groups.get(p).map_or(0, |group| {
                group
                    .iter()
                    .map(|r| r.end.saturating_sub(r.start))
                    .fold(0, u64::saturating_add)
            }),
            None => self
                .ranges
                .iter()
                .map(|r| r.end.saturating_sub(r.start))
                .fold(0, u64::saturating_add),
        }
    }
}

impl ZarrScanExec {
    /// The batches of one row range of partition `partition`.
    fn range_stream(
        &self,
        partition: usize,
        range: Range<u64>,
        context: &Arc<TaskContext>,
        metrics: &PartitionMetrics,
    ) -> DfResult<Batches> {
        let schema = self.schema.clone();
        let needs_columns = !self.columns.is_empty() || self.filter.is_some();
        if !needs_columns {
            // No column read: row counts only, no I/O.
            return Ok(row_counts(schema, range.end - range.start).boxed());
        }
        let builder = match self.table.source.clone() {
            Source::Rows(builder) => builder,
            // An N-d array: its elements in C order, a batch per slab.
            Source::Flat(array) => {
                let slab = usize::try_from(array.row_chunk_len()).unwrap_or(usize::MAX);
                array.reader().with_batch_size(slab)
            }
        };
        let (store, concurrency) = self.read_store(context, &builder)?;
        let open = {
            let builder = builder.clone();
            let pool = context.memory_pool().clone();
            let metrics = metrics.clone();
            move |names: Vec<String>,
                  rows: Range<u64>,
                  selection: Option<Vec<Range<u64>>>|
                  -> DfResult<Batches> {
                let reservation =
                    MemoryConsumer::new(format!("ZarrScanExec[{partition}]")).register(&pool);
                let mut reader = builder.clone().with_projection(names).with_row_range(rows);
                if let Some(selection) = selection {
                    reader = reader.with_row_selection(selection);
                }
                let (stream, stats) = reader
                    .into_stream_on(
                        store.clone(),
                        concurrency,
                        Some(Box::new(PoolBudget(reservation))),
                    )
                    .map_err(df_err)?;
                let mut tracker = metrics.track(stats);
                Ok(stream
                    .map(move |batch| {
                        tracker.update();
                        batch.map_err(scan_err)
                    })
                    .boxed())
            }
        };
        let Some(filter) = &self.filter else {
            let batches = open(self.names(), range, None)?;
            return Ok(batches
                .map(move |batch| {
                    // The reader's schema may carry table metadata (pandas'):
                    // the plan's is the projected table schema.
                    Ok(RecordBatch::try_new(
                        schema.clone(),
                        batch?.columns().to_vec(),
                    )?)
                })
                .boxed());
        };
        let longest = builder
            .columns()
            .map_err(df_err)?
            .iter()
            .filter(|c| {
                self.columns.contains(&self.table_index(c.name()))
                    || filter.columns().contains(&self.table_index(c.name()))
            })
            .map(|c| c.chunk_len())
            .max()
            .unwrap_or(1);
        let filtered = Filtered {
            open: Arc::new(open),
            filter: filter.clone(),
            table: self.table.arrow_schema().clone(),
            columns: self.columns.clone(),
            schema,
            longest,
            matched: metrics.matched.clone(),
        };
        Ok(filtered.stream(range))
    }

    /// The index of column `name` in the table's schema (`usize::MAX`: none).
    fn table_index(&self, name: &str) -> usize {
        self.table
            .arrow_schema()
            .index_of(name)
            .unwrap_or(usize::MAX)
    }
}

impl DisplayAs for ZarrScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "ZarrScanExec: location={}, columns=[{}], partitions={}, rows={}",
                    self.table.location(),
                    self.names().join(", "),
                    self.groups.len(),
                    self.rows(None)
                )?;
                if let Some(filter) = &self.filter {
                    write!(f, ", filter=[{}]", filter.display())?;
                }
                if let Some(n) = self.fetch {
                    write!(f, ", fetch={n}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "location={}", self.table.location())?;
                write!(f, "rows={}", self.rows(None))
            }
        }
    }
}

impl ExecutionPlan for ZarrScanExec {
    fn name(&self) -> &str {
        "ZarrScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return internal_err!("ZarrScanExec has no children");
        }
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some(group) = self.groups.get(partition).cloned() else {
            return internal_err!(
                "ZarrScanExec: partition {partition} of {}",
                self.groups.len()
            );
        };
        let metrics = PartitionMetrics::new(&self.metrics, partition);
        if partition == 0 {
            metrics
                .pruned
                .add(usize::try_from(self.pruned).unwrap_or(usize::MAX));
        }
        let batches = match group.as_slice() {
            [range] => self.range_stream(partition, range.clone(), &context, &metrics)?,
            _ => {
                // One range after another, each opened when the last ends.
                let scan = self.clone();
                futures::stream::iter(group)
                    .map(move |range| {
                        match scan.range_stream(partition, range, &context, &metrics) {
                            Ok(stream) => stream,
                            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                        }
                    })
                    .flatten()
                    .boxed()
            }
        };
        let batches = match self.fetch {
            Some(n) => limited(batches, n),
            None => batches,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        let rows = self.rows(args.partition());
        let mut stats = Statistics::new_unknown(&self.schema);
        if let Ok(rows) = usize::try_from(rows) {
            // A filter keeps some of them.
            let rows = match self.fetch {
                Some(n) => rows.min(n),
                None => rows,
            };
            stats = stats.with_num_rows(match self.filter {
                Some(_) => Precision::Inexact(rows),
                None => Precision::Exact(rows),
            });
        }
        Ok(Arc::new(stats))
    }
}

/// A zarrow error from a scan as DataFusion's: running out of the memory pool is
/// DataFusion's `ResourcesExhausted`.
fn scan_err(e: crate::Error) -> DataFusionError {
    match e {
        crate::Error::MemoryExhausted { .. } => DataFusionError::ResourcesExhausted(e.to_string()),
        e => df_err(e),
    }
}

/// A scan partition's read-ahead, reserved in the session's memory pool.
struct PoolBudget(MemoryReservation);

impl ReadBudget for PoolBudget {
    fn resize(&mut self, bytes: u64) -> Result<()> {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        self.0
            .try_resize(bytes)
            .map_err(|e| crate::Error::MemoryExhausted {
                what: format!("{} (its read-ahead)", self.0.consumer().name()),
                bytes: bytes as u64,
                source: Box::new(e),
            })
    }
}

/// A partition's counters in the plan's metrics (`EXPLAIN ANALYZE`).
#[derive(Clone)]
struct PartitionMetrics {
    bytes: Count,
    requests: Count,
    decode: Time,
    /// Rows the filter kept.
    matched: Count,
    /// Rows chunk statistics excluded (of the whole scan, on partition 0).
    pruned: Count,
}

impl PartitionMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Self {
            bytes: MetricBuilder::new(set).counter("bytes_fetched", partition),
            requests: MetricBuilder::new(set).counter("requests", partition),
            decode: MetricBuilder::new(set).subset_time("decode_time", partition),
            matched: MetricBuilder::new(set).counter("rows_matched", partition),
            pruned: MetricBuilder::new(set).counter("rows_pruned_by_statistics", partition),
        }
    }

    /// Copy a read's counters into these as it goes.
    fn track(&self, stats: Arc<ReadStats>) -> Tracker {
        Tracker {
            stats,
            metrics: self.clone(),
            seen: [0; 3],
        }
    }
}

/// Copies one read's counters into its partition's metrics.
struct Tracker {
    stats: Arc<ReadStats>,
    metrics: PartitionMetrics,
    seen: [u64; 3],
}

impl Tracker {
    fn update(&mut self) {
        let now = [
            self.stats.bytes_fetched.load(Ordering::Relaxed),
            self.stats.requests.load(Ordering::Relaxed),
            self.stats.decode_nanos.load(Ordering::Relaxed),
        ];
        let delta = |i: usize| usize::try_from(now[i].saturating_sub(self.seen[i])).unwrap_or(0);
        self.metrics.bytes.add(delta(0));
        self.metrics.requests.add(delta(1));
        self.metrics
            .decode
            .add_duration(std::time::Duration::from_nanos(
                now[2].saturating_sub(self.seen[2]),
            ));
        self.seen = now;
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.update();
    }
}

/// The first `n` rows of `batches`.
fn limited(batches: Batches, n: usize) -> Batches {
    batches
        .scan(n, |left, batch| {
            let out = match batch {
                _ if *left == 0 => None,
                Ok(batch) => {
                    let take = batch.num_rows().min(*left);
                    *left -= take;
                    Some(Ok(batch.slice(0, take)))
                }
                Err(e) => {
                    *left = 0;
                    Some(Err(e))
                }
            };
            futures::future::ready(out)
        })
        .boxed()
}

/// Batches of no columns that count `rows` rows.
fn row_counts(
    schema: SchemaRef,
    rows: u64,
) -> impl futures::Stream<Item = DfResult<RecordBatch>> + Send + 'static {
    let counts = (0..rows.div_ceil(EMPTY_BATCH_ROWS))
        .map(move |i| (rows - i * EMPTY_BATCH_ROWS).min(EMPTY_BATCH_ROWS) as usize);
    futures::stream::iter(counts.map(move |n| {
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            Vec::new(),
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?)
    }))
}
