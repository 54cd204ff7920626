//! The scan of a [`ZarrTable`](super::ZarrTable): a `DataSourceExec` over
//! a [`ZarrSource`], whose "files" are row ranges.
//!
//! ```text
//! ZarrTable::scan ─▶ DataSourceExec(FileScanConfig: a file group per
//!   partition, a "file" per row range it reads in turn; ZarrSource)
//!     └▶ open(range): an async stream on the session's runtime: only the
//!        projected arrays, only the chunks the rows need (with a filter, its
//!        columns first, the others where rows match: `filter`)
//! ```
//!
//! The source reads with the resources of the session that planned it (its
//! registered object stores and memory pool, captured at `scan`), or, for a
//! plan decoded on another machine (a Ballista executor), with that
//! machine's task context (captured by the codec). A distributed engine
//! slices the file groups like any file scan's.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use arrow_schema::SortOptions;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Statistics, internal_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_expr::expressions::{Column, DynamicFilterTracking};
use datafusion::physical_expr::{
    EquivalenceProperties, LexOrdering, PhysicalExpr, PhysicalSortExpr,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, Time};
use datafusion::physical_plan::sort_pushdown::SortOrderPushdownResult;
use futures::StreamExt;
use object_store::ObjectStore;

use super::df_err;
use super::dynamic::{Dynamic, wanted_order};
use super::filter::{Batches, Filtered, ScanFilter};
use super::prune::{Pruning, ScanStatistics};
use super::snapshot::Snapshot;
use crate::error::Result;
use crate::location::Location;
use crate::read::{DEFAULT_MAX_BATCH_ROWS, TableSource};
use crate::read::{ReadBudget, ReadStats, ReaderBuilder};
use crate::recycle::{KeptBudget, Recycler};
use crate::store::{AsyncStore, SyncAsAsync};
use crate::{Decode, Stores};

/// Rows per batch when no column is read (`count(*)` that statistics could not
/// answer): the batches carry a row count only.
const EMPTY_BATCH_ROWS: u64 = 1 << 16;

/// What a scan reads.
pub(crate) struct Scan {
    pub snapshot: Arc<Snapshot>,
    /// The columns given (indices into the table's schema).
    pub columns: Vec<usize>,
    /// The row ranges of each partition, read in turn.
    pub groups: Vec<Vec<Range<u64>>>,
    /// The filters the scan evaluates itself.
    pub filter: Option<Arc<ScanFilter>>,
    /// The filters chunk statistics prune by, as each range opens.
    pub pruning: Option<Arc<Pruning>>,
    /// The most rows each partition gives (after the filter).
    pub fetch: Option<usize>,
    /// The resources it reads with.
    pub runtime: Arc<RuntimeEnv>,
    /// How it decodes: the session's [`ExecutionContext`](crate::ExecutionContext)'s.
    pub decode: Decode,
}

/// The plan of `scan`: a `DataSourceExec` over a [`ZarrSource`].
///
/// # Errors
/// A row range past `i64` (a file range's type).
pub(crate) fn scan_plan(scan: Scan) -> DfResult<Arc<dyn ExecutionPlan>> {
    let Scan {
        snapshot,
        columns,
        groups,
        filter,
        pruning,
        fetch,
        runtime,
        decode,
    } = scan;
    let schema = Arc::new(snapshot.arrow_schema().project(&columns)?);
    let location = snapshot.location().to_string();
    // Each partition gives its rows in order: a column declared sorted
    // (`WITH ORDER`, the `sorted` option) is sorted within it. Dimension
    // coordinates are not declared: they may decrease.
    let orderings: Vec<LexOrdering> = snapshot
        .options()
        .sorted
        .iter()
        .filter_map(|name| {
            let i = schema.index_of(name).ok()?;
            LexOrdering::new([PhysicalSortExpr::new(
                Arc::new(Column::new(name, i)),
                SortOptions {
                    descending: false,
                    nulls_first: false,
                },
            )])
        })
        .collect();
    let groups = groups
        .into_iter()
        .map(|ranges| {
            let files = ranges
                .into_iter()
                .map(|rows| {
                    range_file(
                        &location,
                        &schema,
                        rows,
                        filter.is_some() || pruning.is_some(),
                    )
                })
                .collect::<DfResult<Vec<_>>>()?;
            Ok(FileGroup::new(files))
        })
        .collect::<DfResult<Vec<_>>>()?;
    let source = ZarrSource {
        snapshot,
        columns,
        filter,
        pruning,
        runtime,
        decode,
        table_schema: TableSchema::from(schema),
        metrics: ExecutionPlanMetricsSet::new(),
        batch_size: None,
        pushed: Vec::new(),
        order: None,
        dynamic: None,
        statistics: Arc::default(),
    };
    let mut config =
        FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
            .with_file_groups(groups)
            .with_limit(fetch)
            // Each partition reads its own ranges, in order (DataFusion would
            // otherwise let an idle partition take another's): rows come in
            // order within a partition, and a limit takes the first matches.
            .with_preserve_order(true);
    if !orderings.is_empty() {
        config = config.with_output_ordering(orderings);
    }
    let config = config.build();
    Ok(DataSourceExec::from_data_source(config))
}

/// A "file" of rows `rows`, with its row count (exact unless a filter keeps
/// some of them, or statistics skip some).
fn range_file(
    location: &str,
    schema: &SchemaRef,
    rows: Range<u64>,
    filtered: bool,
) -> DfResult<PartitionedFile> {
    let (Ok(start), Ok(end)) = (i64::try_from(rows.start), i64::try_from(rows.end)) else {
        return internal_err!("row range {rows:?} past i64");
    };
    let n = usize::try_from(rows.end.saturating_sub(rows.start)).unwrap_or(usize::MAX);
    let n = if filtered {
        Precision::Inexact(n)
    } else {
        Precision::Exact(n)
    };
    let stats = Statistics::new_unknown(schema).with_num_rows(n);
    Ok(
        PartitionedFile::new_with_range(location.to_string(), rows.end, start, end)
            .with_statistics(Arc::new(stats)),
    )
}

/// `plan` (a physical plan over Zarr tables, run or not) made ready to run
/// again: every node's state reset as DataFusion resets it
/// ([`ExecutionPlan::reset_state`]), and every Zarr scan's per-run state new,
/// so that the run reads the chunk statistics again and checks their
/// freshness (the store may have changed since the plan was made or last
/// ran). A plan kept and run many times (a notebook's repeated query) is
/// planned once.
///
/// Returns `None` when a Zarr scan in `plan` prunes by a dynamic filter (a
/// TopK's or a join's): plan the query again then.
///
/// # Errors
/// A node's reset (DataFusion's).
pub fn for_another_run(plan: &Arc<dyn ExecutionPlan>) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    let mut refused = false;
    let again = Arc::clone(plan)
        .transform_up(|node| {
            let Some((source, config)) = zarr_source(node.as_ref()) else {
                return Ok(Transformed::yes(node.reset_state()?));
            };
            let (Some(source), Some(exec)) =
                (source.unrun(), node.downcast_ref::<DataSourceExec>())
            else {
                refused = true;
                return Ok(Transformed::new(node, false, TreeNodeRecursion::Stop));
            };
            let mut config = config.clone();
            config.file_source = Arc::new(source);
            let exec = exec.clone().with_data_source(Arc::new(config));
            Ok(Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>))
        })?
        .data;
    Ok((!refused).then_some(again))
}

/// The Zarr source in `plan`, with its scan's configuration, when `plan` is
/// a Zarr scan.
pub(crate) fn zarr_source(plan: &dyn ExecutionPlan) -> Option<(&ZarrSource, &FileScanConfig)> {
    let exec = plan.downcast_ref::<DataSourceExec>()?;
    let config = exec.data_source().downcast_ref::<FileScanConfig>()?;
    let source = config.file_source().downcast_ref::<ZarrSource>()?;
    Some((source, config))
}

/// The row ranges of a Zarr scan's partitions.
///
/// # Errors
/// A "file" with no row range, or a negative one.
pub(crate) fn scan_groups(config: &FileScanConfig) -> DfResult<Vec<Vec<Range<u64>>>> {
    config
        .file_groups
        .iter()
        .map(|group| {
            group
                .files()
                .iter()
                .map(|file| match &file.range {
                    Some(r) => match (u64::try_from(r.start), u64::try_from(r.end)) {
                        (Ok(start), Ok(end)) => Ok(start..end),
                        _ => internal_err!("a Zarr scan's row range {r:?} is negative"),
                    },
                    None => internal_err!("a Zarr scan's file has no row range"),
                })
                .collect()
        })
        .collect()
}

/// The source of a Zarr scan: the table snapshot it reads, its columns and
/// filter, and the resources it reads with.
#[derive(Clone)]
pub(crate) struct ZarrSource {
    snapshot: Arc<Snapshot>,
    columns: Vec<usize>,
    filter: Option<Arc<ScanFilter>>,
    pruning: Option<Arc<Pruning>>,
    runtime: Arc<RuntimeEnv>,
    /// On rayon (the default), or on the thread that polls the partition.
    decode: Decode,
    table_schema: TableSchema,
    metrics: ExecutionPlanMetricsSet,
    /// The session's batch size: the most rows a batch has (DataFusion's
    /// operators work batch by batch, best on batches that stay in cache).
    batch_size: Option<usize>,
    /// The filters DataFusion pushed at physical planning (its dynamic
    /// filters among them), which it still applies itself.
    pushed: Vec<Arc<dyn PhysicalExpr>>,
    /// The column a sort above wants first, and whether descending.
    order: Option<(String, bool)>,
    /// `pushed` and `order`, as the scan prunes and orders its blocks.
    dynamic: Option<Arc<Dynamic>>,
    /// The chunk statistics `pruning` and `dynamic` read, each column's once.
    statistics: Arc<ScanStatistics>,
}

impl ZarrSource {
    /// The same source, pruning by `pushed` and reading in `order`.
    fn with_pushed(
        &self,
        pushed: Vec<Arc<dyn PhysicalExpr>>,
        order: Option<(String, bool)>,
    ) -> Self {
        let schema = self.table_schema.table_schema().clone();
        Self {
            dynamic: Dynamic::new(schema, pushed.clone(), order.clone()),
            pushed,
            order,
            ..self.clone()
        }
    }

    /// The same scan with nothing of a run kept: its statistics read, and
    /// checked for freshness, again when it runs, its metrics from zero.
    /// `None` when it prunes by a dynamic filter (a TopK's, a join's): the
    /// node that updates it makes a new one when reset, which this scan would
    /// not see.
    fn unrun(&self) -> Option<Self> {
        let dynamic = |e: &Arc<dyn PhysicalExpr>| {
            DynamicFilterTracking::classify(e).contains_dynamic_filter()
        };
        if self.pushed.iter().any(dynamic) {
            return None;
        }
        Some(Self {
            pruning: self.pruning.as_deref().map(|p| Arc::new(p.unread())),
            dynamic: self.dynamic.as_deref().map(Dynamic::unread),
            statistics: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
            ..self.clone()
        })
    }

    /// The snapshot read.
    pub(crate) fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The columns given (indices into the table's schema).
    pub(crate) fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The filters the scan evaluates itself.
    pub(crate) fn filter(&self) -> Option<&Arc<ScanFilter>> {
        self.filter.as_ref()
    }

    /// The filters chunk statistics prune by.
    pub(crate) fn pruning(&self) -> Option<&Arc<Pruning>> {
        self.pruning.as_ref()
    }
}

impl FileSource for ZarrSource {
    fn create_file_opener(
        &self,
        _store: Arc<dyn ObjectStore>,
        _config: &FileScanConfig,
        partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let metrics = PartitionMetrics::new(&self.metrics, partition);
        Ok(Arc::new(RangeOpener(Arc::new(Opener {
            source: self.clone(),
            partition,
            metrics,
        }))))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            batch_size: Some(batch_size),
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "zarr"
    }

    fn fmt_extra(
        &self,
        t: datafusion::physical_plan::DisplayFormatType,
        f: &mut std::fmt::Formatter,
    ) -> std::fmt::Result {
        use datafusion::physical_plan::DisplayFormatType;
        if matches!(t, DisplayFormatType::Default | DisplayFormatType::Verbose)
            && let Some(filter) = &self.filter
        {
            write!(f, ", predicate={}", filter.display())?;
        }
        Ok(())
    }

    fn supports_repartitioning(&self) -> bool {
        false
    }

    // A row range is not a byte range: never split by size.
    fn repartitioned(
        &self,
        _target_partitions: usize,
        _repartition_file_min_size: usize,
        _output_ordering: Option<LexOrdering>,
        _config: &FileScanConfig,
    ) -> DfResult<Option<FileScanConfig>> {
        Ok(None)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        for expr in &self.pushed {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Filters pushed at physical planning (a TopK's, a hash join's dynamic
    /// filters) prune blocks by their chunks' statistics as they stand when
    /// each block opens (`dynamic.rs`); DataFusion still applies them all.
    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        let answer = vec![PushedDown::No; filters.len()];
        let mut pushed = self.pushed.clone();
        pushed.extend(filters);
        let source: Arc<dyn FileSource> = Arc::new(self.with_pushed(pushed, self.order.clone()));
        Ok(
            FilterPushdownPropagation::with_parent_pushdown_result(answer)
                .with_updated_node(source),
        )
    }

    /// A sort on a column of the scan: its blocks are read the most
    /// promising first (by their chunks' statistics) while a dynamic filter
    /// can prune the rest. `Inexact`: the sort stays.
    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
        _eq_properties: &EquivalenceProperties,
    ) -> DfResult<SortOrderPushdownResult<Arc<dyn FileSource>>> {
        let Some(wanted) = wanted_order(self.table_schema.table_schema(), order) else {
            return Ok(SortOrderPushdownResult::Unsupported);
        };
        Ok(SortOrderPushdownResult::Inexact {
            inner: Arc::new(self.with_pushed(self.pushed.clone(), Some(wanted))),
        })
    }
}

/// Opens a "file" of a Zarr scan: its row range, less the parts chunk
/// statistics exclude.
struct RangeOpener(Arc<Opener>);

/// What a partition's ranges are opened with.
struct Opener {
    source: ZarrSource,
    partition: usize,
    metrics: PartitionMetrics,
}

impl FileOpener for RangeOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let rows = match &file.range {
            Some(r) => match (u64::try_from(r.start), u64::try_from(r.end)) {
                (Ok(start), Ok(end)) => start..end,
                _ => return internal_err!("a Zarr scan's row range {r:?} is negative"),
            },
            None => return internal_err!("a Zarr scan's file has no row range"),
        };
        let opener = self.0.clone();
        Ok(Box::pin(async move {
            let kept = match &opener.source.pruning {
                Some(pruning) => {
                    let source = &opener.source;
                    pruning
                        .kept(&source.snapshot, &source.statistics, rows.clone())
                        .await?
                }
                None => vec![rows.clone()],
            };
            let read: u64 = kept.iter().map(|r| r.end - r.start).sum();
            opener
                .metrics
                .pruned
                .add(usize::try_from(rows.end - rows.start - read).unwrap_or(usize::MAX));
            // With run-time filters, the kept rows in blocks (the most
            // promising first), each asked again as it is reached.
            let dynamic = match opener.source.dynamic.clone() {
                // Nothing kept: no run-time filter can keep less.
                Some(_) if kept.is_empty() => None,
                dynamic => dynamic,
            };
            let Some(dynamic) = dynamic else {
                // Each kept range opened when the last ends.
                return Ok(futures::stream::iter(kept)
                    .map(move |range| opener.stream_or_error(range))
                    .flatten()
                    .boxed());
            };
            let source = &opener.source;
            let stats = dynamic
                .prepare(&source.snapshot, &source.statistics)
                .await?;
            let blocks = dynamic.blocks(&stats, kept);
            Ok(futures::stream::unfold(blocks, move |mut blocks| {
                let (opener, dynamic, stats) = (opener.clone(), dynamic.clone(), stats.clone());
                async move {
                    let (pruned, run) = dynamic.next_run(&stats, &mut blocks);
                    opener
                        .metrics
                        .pruned
                        .add(usize::try_from(pruned).unwrap_or(usize::MAX));
                    Some((opener.stream_or_error(run?), blocks))
                }
            })
            .flatten()
            .boxed())
        }))
    }
}

impl Opener {
    /// The batches of rows `range`, or a stream of the error opening them.
    fn stream_or_error(&self, range: Range<u64>) -> Batches {
        match self.stream(range) {
            Ok(stream) => stream,
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    fn names(&self) -> Vec<String> {
        let schema = self.source.snapshot.arrow_schema();
        self.source
            .columns
            .iter()
            .map(|&i| schema.field(i).name().clone())
            .collect()
    }

    /// The batches of rows `range`.
    fn stream(&self, range: Range<u64>) -> DfResult<Batches> {
        let source = &self.source;
        let schema = source.table_schema.table_schema().clone();
        if source.columns.is_empty() && source.filter.is_none() {
            // No column read: row counts only, no I/O.
            return Ok(row_counts(schema, range.end - range.start).boxed());
        }
        let builder = match source.snapshot.source.clone() {
            TableSource::Rows(builder) => builder,
            // An N-d array: its elements in C order, a batch per slab.
            TableSource::Flat(array) => {
                let slab = usize::try_from(array.row_chunk_len()).unwrap_or(usize::MAX);
                array.reader().with_batch_size(slab)
            }
            TableSource::Long(..) => return self.gathered(range, schema),
        };
        let pool = source.runtime.memory_pool.clone();
        let partition = self.partition;
        // Buffers the scan's batches released, kept for its next chunks (their
        // pages faulted in once), as far as the pool grants them.
        let kept =
            MemoryConsumer::new(format!("ZarrScan[{partition}] kept buffers")).register(&pool);
        let recycler = Recycler::with_budget(SCAN_KEPT_BYTES, Box::new(PoolKept(kept)));
        let (store, concurrency) = self.read_store(&builder, &recycler)?;
        let open = {
            let builder = builder.clone();
            let filtered = source.filter.is_some();
            let inline = source.decode == Decode::Inline;
            let batch_size = source.batch_size;
            let codes = source.snapshot.codes.clone();
            let metrics = self.metrics.clone();
            move |names: Vec<String>,
                  rows: Range<u64>,
                  selection: Option<Vec<Range<u64>>>,
                  as_codes: bool|
                  -> DfResult<Batches> {
                let reservation =
                    MemoryConsumer::new(format!("ZarrScan[{partition}]")).register(&pool);
                let builder = match (&codes, as_codes) {
                    (Some(codes), true) => codes,
                    _ => &builder,
                };
                let mut reader = builder
                    .clone()
                    .with_recycler(Some(recycler.clone()))
                    .with_projection(names)
                    .with_row_range(rows);
                if let Some(rows) = batch_size {
                    // (An N-d array's slabs: its batch size wins.)
                    reader = reader.with_max_batch_rows(rows);
                }
                if let Some(selection) = selection {
                    reader = reader.with_row_selection(selection);
                }
                if inline {
                    // The host's threads are the parallelism (DuckDB's).
                    reader = reader.with_decode(Decode::Inline);
                } else if filtered {
                    // Blocks read a few at a time, each often one chunk per
                    // column: decoded on rayon, side by side.
                    reader = reader.never_inline();
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
        let Some(filter) = &source.filter else {
            let batches = open(self.names(), range, None, false)?;
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
        let table = source.snapshot.arrow_schema().clone();
        // Blocks are whole chunks of the longest column read; a part of the
        // other columns (and of the filter's) a read can skip is their
        // shortest chunk (or a shard's inner chunk); none read: 1.
        let (mut longest, mut granule, mut filter_granule) = (1, u64::MAX, u64::MAX);
        for column in builder.columns().map_err(df_err)? {
            let Ok(i) = table.index_of(column.name()) else {
                continue;
            };
            let (given, filtered) = (source.columns.contains(&i), filter.columns().contains(&i));
            if given || filtered {
                longest = longest.max(column.chunk_len());
            }
            let fewest = column.leaves().iter().map(|l| l.read_granule()).min();
            let fewest = fewest.unwrap_or(u64::MAX);
            if filtered {
                filter_granule = filter_granule.min(fewest);
            } else if given {
                granule = granule.min(fewest);
            }
        }
        let known = |g: u64| if g == u64::MAX { 1 } else { g };
        let (granule, filter_granule) = (known(granule), known(filter_granule));
        let filtered = Filtered {
            open: Arc::new(open),
            filter: filter.clone(),
            table,
            columns: source.columns.clone(),
            schema,
            longest,
            granule,
            matched: self.metrics.matched.clone(),
            dense_parts: std::sync::atomic::AtomicU64::new(0),
            filter_granule,
            stage: std::sync::atomic::AtomicUsize::new(0),
            stage_parts: std::sync::atomic::AtomicU64::new(0),
        };
        Ok(Arc::new(filtered).stream(range))
    }

    /// Rows `range` of a long table, gathered from its variables (read when
    /// it opened), a batch at a time. Its filters are DataFusion's (none is
    /// pushed: there are no chunks to skip).
    fn gathered(&self, range: Range<u64>, schema: SchemaRef) -> DfResult<Batches> {
        let source = &self.source;
        let Some(grid) = source.snapshot.long.clone() else {
            return internal_err!("a long table without its variables");
        };
        if source.filter.is_some() {
            return internal_err!("a filter pushed into a long table");
        }
        let columns = source.columns.clone();
        let step = source.batch_size.unwrap_or(DEFAULT_MAX_BATCH_ROWS).max(1) as u64;
        let starts = (range.start..range.end).step_by(usize::try_from(step).unwrap_or(usize::MAX));
        Ok(futures::stream::iter(starts.map(move |start| {
            let rows = start..range.end.min(start.saturating_add(step));
            let arrays = grid.gather(rows, &columns).map_err(df_err)?;
            Ok(RecordBatch::try_new(schema.clone(), arrays)?)
        }))
        .boxed())
    }

    /// The store a partition reads chunks through, and how many requests it
    /// keeps in flight: the object store the session has registered for the
    /// table's URL, else the table's own store (its async form for an object
    /// store; a local one read on rayon, into `recycler`'s kept buffers).
    fn read_store(
        &self,
        builder: &ReaderBuilder,
        recycler: &Arc<Recycler>,
    ) -> DfResult<(Arc<dyn AsyncStore>, usize)> {
        if let Location::Url(url) = self.source.snapshot.location() {
            let stores = Stores::default()
                .with_registered(super::session_stores(self.source.runtime.clone()));
            if let Some(store) = stores.registered_async(url) {
                return Ok((Arc::new(store), crate::store::DEFAULT_CONCURRENCY));
            }
        }
        let Some(store) = builder.store() else {
            return internal_err!("a Zarr scan of a table with no columns");
        };
        let concurrency = store.concurrency();
        Ok(match store.remote() {
            Some(remote) => (remote.store, concurrency),
            None => {
                // A local store reads chunk files into the scan's kept buffers
                // (on rayon, or inline where the session decodes inline).
                let store = store.reading_into(recycler).unwrap_or(store);
                let store = match self.source.decode {
                    Decode::Inline => SyncAsAsync::new(store),
                    _ => SyncAsAsync::reading_on_rayon(store),
                };
                (Arc::new(store), concurrency)
            }
        })
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

/// The most bytes of released buffers a scan partition keeps for its next chunks
/// (while the session's memory pool grants them).
const SCAN_KEPT_BYTES: usize = 64 << 20;

/// A scan's kept buffers, reserved in the session's memory pool.
struct PoolKept(MemoryReservation);

impl KeptBudget for PoolKept {
    fn resize(&mut self, bytes: usize) -> bool {
        self.0.try_resize(bytes).is_ok()
    }
}

/// A read's read-ahead, reserved in the session's memory pool.
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
    /// Rows chunk statistics excluded.
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
