//! A Zarr scan in the form a distributed engine can hand out in slices.
//!
//! Ballista 55 gives each task a slice of a stage's partitions and cuts the
//! stage's plan down to that slice on the scheduler. It knows how to cut only
//! its own readers and DataFusion's file and memory scans; any other leaf keeps
//! all its partitions, so every task of the stage would read the whole scan (a
//! query's rows counted several times). A [`ZarrTable`] that
//! [`ZarrLogicalCodec`](super::ZarrLogicalCodec) decoded (on a scheduler)
//! therefore plans its scan (and a scan a client planned is decoded so) as a `DataSourceExec` over a [`FileScanConfig`]
//! with one file group per row range (a "file" whose range is the rows) and a
//! [`ZarrRanges`] source; the engine slices its file groups like any file
//! scan's, and [`ZarrPhysicalCodec`](super::ZarrPhysicalCodec) sends the slice
//! to the executor as a `ZarrScanExec` of just those ranges (which reads with
//! the executor's memory pool, object stores and metrics).
//!
//! ```text
//! client:    ZarrTable ─ZarrLogicalCodec─▶ scheduler: ZarrTable (sliceable)
//! scheduler: scan ─▶ DataSourceExec(files r0 r1 r2 r3)
//!            task 1 gets partitions [2, 3] ─▶ DataSourceExec(files r2 r3)
//! executor:  ─ZarrPhysicalCodec─▶ ZarrScanExec(r2 r3)
//! ```

use std::ops::Range;
use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::StreamExt;
use object_store::ObjectStore;

use super::ZarrTable;
use super::filter::ScanFilter;
use super::scan::ZarrScanExec;

/// `scan` as a file scan: one group of one "file" per row range.
pub(crate) fn as_file_scan(scan: &ZarrScanExec) -> DfResult<Arc<dyn ExecutionPlan>> {
    let schema = scan.schema();
    let source = ZarrRanges {
        table: scan.table().clone(),
        columns: scan.columns().to_vec(),
        filter: scan.filter().cloned(),
        table_schema: TableSchema::from(schema.clone()),
        metrics: ExecutionPlanMetricsSet::new(),
    };
    let location = scan.table().location().to_string();
    let groups = scan
        .ranges()
        .iter()
        .map(|rows| {
            let (Ok(start), Ok(end)) = (i64::try_from(rows.start), i64::try_from(rows.end)) else {
                return internal_err!("row range {rows:?} past i64");
            };
            let stats = Statistics::new_unknown(&schema).with_num_rows(Precision::Exact(
                usize::try_from(rows.end.saturating_sub(rows.start)).unwrap_or(usize::MAX),
            ));
            let file = PartitionedFile::new_with_range(location.clone(), rows.end, start, end)
                .with_statistics(Arc::new(stats));
            Ok(FileGroup::new(vec![file]))
        })
        .collect::<DfResult<Vec<_>>>()?;
    let config = FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
        .with_file_groups(groups)
        .with_limit(scan.fetch())
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

/// The scan [`SliceableScans`] made of a [`ZarrScanExec`], back as one over the
/// row ranges of its file groups (a slice of them, after the engine cut it),
/// with its limit; `None` if `plan` is not one.
pub(crate) fn sliced_scan(
    plan: &Arc<dyn ExecutionPlan>,
) -> DfResult<Option<(ZarrScanExec, Option<usize>)>> {
    let Some(exec) = plan.downcast_ref::<DataSourceExec>() else {
        return Ok(None);
    };
    let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>() else {
        return Ok(None);
    };
    let Some(source) = config.file_source().downcast_ref::<ZarrRanges>() else {
        return Ok(None);
    };
    let mut ranges: Vec<Range<u64>> = Vec::with_capacity(config.file_groups.len());
    for group in &config.file_groups {
        // One file per group, as made: a partition is one row range.
        let [file] = group.files() else {
            return internal_err!(
                "a Zarr scan's file group holds {} files, not one row range",
                group.files().len()
            );
        };
        let Some(range) = &file.range else {
            return internal_err!("a Zarr scan's file has no row range");
        };
        let (Ok(start), Ok(end)) = (u64::try_from(range.start), u64::try_from(range.end)) else {
            return internal_err!("a Zarr scan's row range {range:?} is negative");
        };
        ranges.push(start..end);
    }
    let scan = ZarrScanExec::with_partitions(source.table.clone(), source.columns.clone(), ranges)?
        .with_filter(source.filter.clone(), None);
    Ok(Some((scan, config.limit)))
}

/// The source of a Zarr scan in file form: what it reads, carried to the
/// codec (an executor runs the `ZarrScanExec` the codec makes of it). Run where
/// it stands (a plan executed where it was planned), each "file" is read as a
/// `ZarrScanExec` of its rows in a context of its own: no memory pool, no
/// registered object store, no metrics.
#[derive(Clone)]
pub(crate) struct ZarrRanges {
    table: Arc<ZarrTable>,
    columns: Vec<usize>,
    /// The filters the scan evaluates itself.
    filter: Option<Arc<ScanFilter>>,
    table_schema: TableSchema,
    metrics: ExecutionPlanMetricsSet,
}

/// Opens a "file" of a [`ZarrRanges`] scan: its row range.
struct RangeOpener {
    table: Arc<ZarrTable>,
    columns: Vec<usize>,
    filter: Option<Arc<ScanFilter>>,
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
        let scan = ZarrScanExec::try_new(self.table.clone(), self.columns.clone(), vec![rows])?
            .with_filter(self.filter.clone(), None);
        let stream = scan.execute(0, Arc::new(TaskContext::default()))?;
        Ok(Box::pin(async move { Ok(stream.boxed()) }))
    }
}

impl FileSource for ZarrRanges {
    fn create_file_opener(
        &self,
        _store: Arc<dyn ObjectStore>,
        _config: &FileScanConfig,
        _partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        Ok(Arc::new(RangeOpener {
            table: self.table.clone(),
            columns: self.columns.clone(),
            filter: self.filter.clone(),
        }))
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, _batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(self.clone())
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "zarr"
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
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datafusion::ZarrTableOptions;

    fn scan(ranges: Vec<Range<u64>>) -> ZarrScanExec {
        let store = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/stores/obs.zarr");
        let table = ZarrTable::open(
            &crate::Location::parse(store).unwrap(),
            ZarrTableOptions::default(),
            &crate::Stores::default(),
        )
        .unwrap();
        ZarrScanExec::try_new(Arc::new(table), vec![0, 1], ranges).unwrap()
    }

    fn plan_scan(plan: &Arc<dyn ExecutionPlan>) -> ZarrScanExec {
        plan.downcast_ref::<ZarrScanExec>().unwrap().clone()
    }

    #[test]
    fn a_file_group_per_range_and_back() {
        let ranges = vec![0..300, 300..700, 700..1000];
        let plan: Arc<dyn ExecutionPlan> = Arc::new(scan(ranges.clone()));
        let files = as_file_scan(&plan_scan(&plan)).unwrap();
        assert!(files.downcast_ref::<DataSourceExec>().is_some());
        assert_eq!(files.properties().partitioning.partition_count(), 3);
        let (back, limit) = sliced_scan(&files).unwrap().unwrap();
        assert_eq!(back.ranges(), ranges.as_slice());
        assert_eq!(back.columns(), &[0, 1]);
        assert_eq!(limit, None);
    }

    #[tokio::test]
    async fn the_file_form_run_where_it_stands_reads_its_ranges() {
        let plan: Arc<dyn ExecutionPlan> = Arc::new(scan(vec![0..300, 300..700, 700..1000]));
        let files = as_file_scan(&plan_scan(&plan)).unwrap();
        let ctx = Arc::new(TaskContext::default());
        let rows: Vec<usize> = datafusion::physical_plan::collect_partitioned(files, ctx)
            .await
            .unwrap()
            .iter()
            .map(|p| p.iter().map(|b| b.num_rows()).sum())
            .collect();
        assert_eq!(rows, [300, 400, 300]);
    }

    /// A range from another machine is not trusted: backwards or past the
    /// table, it is an error when read, never a panic.
    #[tokio::test]
    async fn a_hostile_range_is_an_error() {
        let store = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/stores/obs.zarr");
        let table = Arc::new(
            ZarrTable::open(
                &crate::Location::parse(store).unwrap(),
                ZarrTableOptions::default(),
                &crate::Stores::default(),
            )
            .unwrap(),
        );
        // A backwards range, as a hostile plan may carry.
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 10..5;
        for range in [backwards, 0..u64::MAX, u64::MAX - 1..u64::MAX] {
            let scan = ZarrScanExec::with_partitions(table.clone(), vec![0], vec![range]).unwrap();
            let ctx = Arc::new(TaskContext::default());
            // The file form refuses it when planned (past i64) or when read.
            if let Ok(files) = as_file_scan(&scan) {
                let read = datafusion::physical_plan::collect(files, ctx.clone()).await;
                assert!(read.is_err());
            }
            let direct = datafusion::physical_plan::collect(Arc::new(scan), ctx).await;
            assert!(direct.is_err());
        }
    }

    #[test]
    fn a_slice_of_the_groups_is_a_scan_of_those_ranges() {
        // What Ballista does to a task's plan: keep some file groups.
        let plan: Arc<dyn ExecutionPlan> = Arc::new(scan(vec![0..300, 300..700, 700..1000]));
        let files = as_file_scan(&plan_scan(&plan)).unwrap();
        let exec = files.downcast_ref::<DataSourceExec>().unwrap();
        let config = exec.data_source().downcast_ref::<FileScanConfig>().unwrap();
        let kept = vec![config.file_groups[2].clone(), config.file_groups[0].clone()];
        let sliced = DataSourceExec::from_data_source(
            FileScanConfigBuilder::from(config.clone())
                .with_file_groups(kept)
                .build(),
        );
        let sliced: Arc<dyn ExecutionPlan> = sliced;
        let (back, _) = sliced_scan(&sliced).unwrap().unwrap();
        assert_eq!(back.ranges(), &[700..1000, 0..300]);
    }
}
