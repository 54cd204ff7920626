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
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
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
    ) -> DfResult<futures::stream::BoxStream<'static, DfResult<RecordBatch>>> {
        let schema = self.schema.clone();
        let batches = if self.columns.is_empty() {
            // No column read: row counts only, no I/O.
            row_counts(schema.clone(), range.end - range.start).boxed()
        } else {
            let names = self.names();
            let builder = match self.table.source.clone() {
                Source::Rows(builder) => builder,
                // An N-d array: its elements in C order, a batch per slab.
                Source::Flat(array) => {
                    let slab = usize::try_from(array.row_chunk_len()).unwrap_or(usize::MAX);
                    array.reader().with_batch_size(slab)
                }
            };
            let (store, concurrency) = self.read_store(context, &builder)?;
            let reservation = MemoryConsumer::new(format!("ZarrScanExec[{partition}]"))
                .register(context.memory_pool());
            let (stream, stats) = builder
                .with_projection(names)
                .with_row_range(range)
                .into_stream_on(store, concurrency, Some(Box::new(PoolBudget(reservation))))
                .map_err(df_err)?;
            let mut metrics = ScanMetrics::new(&self.metrics, partition, stats);
            stream
                .map(move |batch| {
                    metrics.update();
                    let batch = batch.map_err(scan_err)?;
                    // The reader's schema may carry table metadata (pandas'):
                    // the plan's is the projected table schema.
                    Ok(RecordBatch::try_new(
                        schema.clone(),
                        batch.columns().to_vec(),
                    )?)
                })
                .boxed()
        };
        Ok(batches)
    }
}

impl DisplayAs for ZarrScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "ZarrScanExec: location={}, columns=[{}], partitions={}, rows={}",
                self.table.location(),
                self.names().join(", "),
                self.groups.len(),
                self.rows(None)
            ),
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
        let batches = match group.as_slice() {
            [range] => self.range_stream(partition, range.clone(), &context)?,
            _ => {
                // One range after another, each opened when the last ends.
                let scan = self.clone();
                futures::stream::iter(group)
                    .map(
                        move |range| match scan.range_stream(partition, range, &context) {
                            Ok(stream) => stream,
                            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                        },
                    )
                    .flatten()
                    .boxed()
            }
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
            stats = stats.with_num_rows(Precision::Exact(rows));
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

/// A partition's counters in the plan's metrics (`EXPLAIN ANALYZE`), copied
/// from the read's as it goes.
struct ScanMetrics {
    stats: Arc<ReadStats>,
    bytes: Count,
    requests: Count,
    decode: Time,
    seen: [u64; 3],
}

impl ScanMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize, stats: Arc<ReadStats>) -> Self {
        Self {
            stats,
            bytes: MetricBuilder::new(set).counter("bytes_fetched", partition),
            requests: MetricBuilder::new(set).counter("requests", partition),
            decode: MetricBuilder::new(set).subset_time("decode_time", partition),
            seen: [0; 3],
        }
    }

    fn update(&mut self) {
        let now = [
            self.stats.bytes_fetched.load(Ordering::Relaxed),
            self.stats.requests.load(Ordering::Relaxed),
            self.stats.decode_nanos.load(Ordering::Relaxed),
        ];
        let delta = |i: usize| usize::try_from(now[i].saturating_sub(self.seen[i])).unwrap_or(0);
        self.bytes.add(delta(0));
        self.requests.add(delta(1));
        self.decode.add_duration(std::time::Duration::from_nanos(
            now[2].saturating_sub(self.seen[2]),
        ));
        self.seen = now;
    }
}

impl Drop for ScanMetrics {
    fn drop(&mut self) {
        self.update();
    }
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
