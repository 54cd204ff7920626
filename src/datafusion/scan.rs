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

use super::df_err;
use super::table::{Source, ZarrTable};
use crate::error::Result;
use crate::read::stream;

/// Batches a partition's reader keeps ready ahead of its consumer.
const BUFFERED_BATCHES: usize = 2;

/// Rows per batch when no column is read (`count(*)` that statistics could not
/// answer): the batches carry a row count only.
const EMPTY_BATCH_ROWS: u64 = 1 << 16;

/// The scan of a [`ZarrTable`]: one partition per row range, each read by its own
/// reader (only the projected arrays, only the chunks the rows need) on a thread
/// of its own, batches in row order.
#[derive(Debug, Clone)]
pub struct ZarrScanExec {
    table: Arc<ZarrTable>,
    columns: Vec<usize>,
    ranges: Vec<Range<u64>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl ZarrScanExec {
    /// The scan of `columns` (indices into the table's schema) of `table`, one
    /// partition per row range.
    ///
    /// # Errors
    /// A column index outside the table's schema.
    pub fn try_new(
        table: Arc<ZarrTable>,
        columns: Vec<usize>,
        ranges: Vec<Range<u64>>,
    ) -> DfResult<Self> {
        let table_schema = datafusion::catalog::TableProvider::schema(table.as_ref());
        // Field by field (the table's schema carries no metadata of its own).
        let schema = Arc::new(table_schema.project(&columns)?);
        let ranges = if ranges.is_empty() {
            std::iter::once(0..0).collect()
        } else {
            ranges
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(ranges.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            table,
            columns,
            ranges,
            schema,
            properties: Arc::new(properties),
        })
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

    fn rows(&self, partition: Option<usize>) -> u64 {
        match partition {
            Some(p) => self.ranges.get(p).map_or(0, |r| r.end - r.start),
            None => self.ranges.iter().map(|r| r.end - r.start).sum(),
        }
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
                self.ranges.len(),
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
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some(range) = self.ranges.get(partition).cloned() else {
            return internal_err!(
                "ZarrScanExec: partition {partition} of {}",
                self.ranges.len()
            );
        };
        let schema = self.schema.clone();
        let batches = if self.columns.is_empty() {
            // No column read: row counts only, no I/O.
            row_counts(schema.clone(), range.end - range.start).boxed()
        } else {
            let names = self.names();
            let source = self.table.source.clone();
            stream::spawn(move || open(source, names, range), BUFFERED_BATCHES)
                .map(move |batch| {
                    let batch = batch.map_err(df_err)?;
                    // The reader's schema may carry table metadata (pandas'):
                    // the plan's is the projected table schema.
                    Ok(RecordBatch::try_new(
                        schema.clone(),
                        batch.columns().to_vec(),
                    )?)
                })
                .boxed()
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
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

/// The batches of `range` from `source`'s columns `names` (blocking: runs on the
/// partition's thread).
fn open(
    source: Source,
    names: Vec<String>,
    range: Range<u64>,
) -> Result<
    Box<dyn Iterator<Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>> + Send>,
> {
    match source {
        Source::Rows(builder) => Ok(Box::new(
            builder
                .with_projection(names)
                .with_row_range(range)
                .build()?,
        )),
        Source::Flat(array) => {
            // Ranges start on slab boundaries; a LIMIT may end one inside a slab.
            let per_slab = array.slab_len(0).max(1);
            let slabs = range.start / per_slab..range.end.div_ceil(per_slab);
            let mut left = range.end - range.start;
            let reader = array.batches().with_slabs(slabs);
            Ok(Box::new(reader.map_while(move |batch| {
                if left == 0 {
                    return None;
                }
                Some(batch.map(|batch| {
                    let n = (batch.num_rows() as u64).min(left);
                    left -= n;
                    batch.slice(0, n as usize)
                }))
            })))
        }
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
