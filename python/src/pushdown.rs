//! A filter pushed into a Zarr table from Python's engines: DuckDB's filters
//! (which reach `zarrow.dataset` as pyarrow expressions) and the Polars scan's
//! predicate (turned into pyarrow expressions by `zarrow/_polars.py`).
//!
//! ```text
//! pyarrow Expression --pickled (Expression.__reduce__)--> bytes
//!   --expression.rs--> DataFusion Expr
//!   --> read_table(ZarrTable).filter(expr).select(columns) --> batches
//! ```
//!
//! The table's scan takes the filter as DataFusion hands it down: chunks whose
//! statistics rule out every row are not read, the filter's columns are read
//! first and the others only where rows match, and the scan keeps exactly the
//! matching rows (or DataFusion's `FilterExec` does, for a filter the scan
//! cannot evaluate), so the engine may trust the answer (DuckDB applies a
//! filter it hands over no more).
//!
//! The plan runs in one partition: the rows come in the table's order, as
//! `zarrow.read` gives them (the scan still reads ahead and decodes on rayon).
//!
//! A filter that `expression.rs` or DataFusion cannot take (another function,
//! a cast, a type the table's column cannot be compared with) is refused with the
//! reason, before anything is read: the caller then filters as it did without
//! pushdown. Failures of the read itself are errors.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use datafusion::error::DataFusionError;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::optimizer::OptimizerRule;
use datafusion::optimizer::eliminate_filter::EliminateFilter;
use datafusion::optimizer::optimize_projections::OptimizeProjections;
use datafusion::optimizer::push_down_filter::PushDownFilter;
use datafusion::optimizer::simplify_expressions::SimplifyExpressions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::ensure_coop::EnsureCooperative;
use datafusion::physical_optimizer::filter_pushdown::FilterPushdown;
use datafusion::physical_optimizer::projection_pushdown::ProjectionPushdown;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::runtime::Handle;
use zarrow::datafusion::ZarrTable;

use crate::errors::to_py;
use crate::location::PyLocation;
use crate::stream::Reader;

/// Why a filter was not taken: the caller filters itself.
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

/// What planning ended with: a plan, or a filter refused.
pub(crate) enum Planned {
    Plan(Arc<dyn ExecutionPlan>),
    Refused(Refused),
}

/// Read `columns` (in this order; none: only the count of matching rows) of
/// the table at `location` (a directory, a URL or an obstore store), opened
/// with `options` (the keys of `zarrow.table`'s options and a URL's), where
/// `filter` holds: a pyarrow expression of the table's columns, pickled
/// (`Expression.__reduce__`'s buffer: `expression.rs`), in batches that grow
/// to `batch_size` rows (default: `zarrow.read`'s largest).
///
/// Returns the reader, or (`None`, why) when the filter cannot be taken: an
/// expression `expression.rs` does not take, or DataFusion's planner
/// refuses. Opening or reading the store
/// raises as `zarrow.read` does.
#[pyfunction]
#[pyo3(signature = (location, options, filter, columns, batch_size=None))]
pub(crate) fn filtered(
    py: Python<'_>,
    location: PyLocation,
    options: &Bound<'_, PyDict>,
    filter: &[u8],
    columns: Vec<String>,
    batch_size: Option<usize>,
) -> PyResult<(Option<Reader>, Option<String>)> {
    let (url, options): crate::options::TableGroups =
        crate::options::keywords("filtered", options)?;
    let handle = crate::runtime().map_err(to_py)?;
    let stores = location
        .stores(url)
        .map_err(to_py)?
        .with_runtime(handle.clone());
    let table = py
        .detach(|| ZarrTable::open(&location.0, options, &stores))
        .map_err(to_py)?;
    filtered_table(py, table, filter, columns, batch_size)
}

/// Why the pickled pyarrow expression `filter` cannot be pushed (`None`: it
/// can, as far as its form goes; DataFusion may still refuse it against a
/// table's types when the scan is planned).
#[pyfunction]
pub(crate) fn refusal(filter: &[u8]) -> Option<String> {
    crate::expression::from_pyarrow(filter).err()
}

/// [`filtered`] over a table already open (a `zarrow.Dataset`'s).
pub(crate) fn filtered_table(
    py: Python<'_>,
    table: ZarrTable,
    filter: &[u8],
    columns: Vec<String>,
    batch_size: Option<usize>,
) -> PyResult<(Option<Reader>, Option<String>)> {
    let batch_rows = batch_rows(batch_size);
    match planned(py, table, filter, columns, batch_rows)? {
        Planned::Plan(plan) => Ok((Some(run(py, plan, batch_rows)?), None)),
        Planned::Refused(Refused(why)) => Ok((None, Some(why))),
    }
}

/// The largest batch handed on: the engine's size, else `zarrow.read`'s.
pub(crate) fn batch_rows(batch_size: Option<usize>) -> usize {
    batch_size
        .unwrap_or(zarrow::read::DEFAULT_MAX_BATCH_ROWS)
        .max(1)
}

/// The plan of `table`'s rows where the pickled pyarrow expression `filter`
/// holds, their `columns`, in batches of `batch_rows` rows at most (not run);
/// or why the filter cannot be taken.
pub(crate) fn planned(
    py: Python<'_>,
    table: ZarrTable,
    filter: &[u8],
    columns: Vec<String>,
    batch_rows: usize,
) -> PyResult<Planned> {
    let handle = crate::runtime().map_err(to_py)?;
    py.detach(|| {
        let predicate = match crate::expression::from_pyarrow(filter) {
            Ok(e) => e,
            Err(why) => return Ok(Planned::Refused(Refused(why))),
        };
        zarrow::__private::block_on(handle, plan(table, predicate, columns, batch_rows))?
    })
    .map_err(to_py)
}

/// `plan` (of [`planned`], for batches of `batch_rows` rows) started, as a
/// reader.
pub(crate) fn run(
    py: Python<'_>,
    plan: Arc<dyn ExecutionPlan>,
    batch_rows: usize,
) -> PyResult<Reader> {
    let handle = crate::runtime().map_err(to_py)?;
    let stream = py
        .detach(|| {
            let _entered = handle.enter();
            execute_stream(plan, session(batch_rows).1)
        })
        .map_err(|e| to_py(query_error(e)))?;
    let reader = Filtered {
        schema: stream.schema(),
        stream,
        handle,
        ended: false,
    };
    // The matches of many blocks gathered into growing batches (as
    // `zarrow.read`'s prefilter gathers its rows): a selective filter would
    // otherwise hand the engine a batch of a few hundred rows per chunk, each
    // paying a Python round.
    let gathered = crate::keep::KeepCategories::new(Box::new(reader), Vec::new(), batch_rows)
        .map_err(|e| crate::errors::zarrow_error(&e))?;
    Ok(Reader::new(Box::new(gathered), None, Vec::new()))
}

/// The plan of `table` filtered by `expression` and projected to `columns`;
/// refused where the expression cannot be taken.
async fn plan(
    table: ZarrTable,
    predicate: Expr,
    columns: Vec<String>,
    batch_rows: usize,
) -> zarrow::Result<Planned> {
    let (ctx, _) = session(batch_rows);
    let frame = ctx.read_table(Arc::new(table)).map_err(query_error)?;
    // The filter checked against the table's columns and types (analysis,
    // type coercion), then optimised (the scan gets it as its filters).
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let optimised = frame
        .filter(predicate)
        .and_then(|f| f.select_columns(&names))
        .and_then(|f| f.into_optimized_plan());
    let logical = match optimised {
        Ok(plan) => plan,
        Err(e) => {
            return Ok(Planned::Refused(Refused(format!(
                "DataFusion cannot apply it to the table: {}",
                e.strip_backtrace()
            ))));
        }
    };
    let state = ctx.state();
    let physical = match state.create_physical_plan(&logical).await {
        Ok(plan) => plan,
        // Expressions with no physical form: refused, nothing read.
        Err(e @ (DataFusionError::NotImplemented(_) | DataFusionError::Plan(_))) => {
            return Ok(Planned::Refused(Refused(format!(
                "DataFusion cannot plan it: {}",
                e.strip_backtrace()
            ))));
        }
        // Reading the statistics, or the sorted columns, failed.
        Err(e) => return Err(query_error(e)),
    };
    Ok(Planned::Plan(physical))
}

/// The session filtered scans of batches of `batch_rows` rows plan in: made
/// once per batch size and shared (making one registers every built-in
/// function, a fixed cost each scan paid); a plan registers nothing in it
/// (`read_table`), so scans cannot see each other's tables. With it, the
/// task context its plans run in, made once too (making one copies the
/// session's state and its function registries).
fn session(batch_rows: usize) -> (SessionContext, Arc<TaskContext>) {
    /// Sessions kept, the oldest dropped first (Polars asks for one batch size).
    const KEPT: usize = 4;
    /// By batch rows: the session, and the task context its plans run in.
    type Kept = Vec<(usize, SessionContext, Arc<TaskContext>)>;
    static SESSIONS: OnceLock<Mutex<Kept>> = OnceLock::new();
    let mut sessions = SESSIONS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some((_, ctx, task)) = sessions.iter().find(|(rows, ..)| *rows == batch_rows) {
        return (ctx.clone(), task.clone());
    }
    // One partition: the rows in the table's order.
    // The scan's batches as the reader makes them (up to `zarrow.read`'s
    // largest), not cut to DataFusion's default 8192 rows: the engine takes
    // them whole, and the gathering below would copy the slices together
    // again.
    let mut config = SessionConfig::new()
        .with_target_partitions(1)
        .with_batch_size(batch_rows);
    // The filter's batches handed on as they come (a slice of a chunk each),
    // not coalesced to the batch size first: a consumer that stops early
    // (`filter(...).head(3)`) has read little more than it used (the reader
    // above gathers them into batches that grow).
    config.options_mut().execution.coalesce_batches = false;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_optimizer_rules(logical_rules())
        .with_physical_optimizer_rules(physical_rules())
        .build();
    let ctx = SessionContext::new_with_state(state);
    let task = ctx.task_ctx();
    if sessions.len() == KEPT {
        sessions.remove(0);
    }
    sessions.push((batch_rows, ctx.clone(), task.clone()));
    (ctx, task)
}

/// The optimizer's rules a filtered scan's plan (a projection of a filter of
/// one table) is worth: its expressions simplified (literals cast to the
/// column's type, constants folded), a filter that is always false made an
/// empty plan, the filter and the projection pushed into the table's scan.
/// DataFusion's others (joins, subqueries, unions, aggregates, limits) find
/// nothing in such a plan, and each query paid their walks of it (the
/// analyzer, which checks and coerces types, runs as ever).
fn logical_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    vec![
        Arc::new(SimplifyExpressions::new()),
        Arc::new(EliminateFilter::new()),
        Arc::new(PushDownFilter::new()),
        Arc::new(OptimizeProjections::new()),
    ]
}

/// The physical optimizer's rules such a plan is worth: a filter the scan
/// does not evaluate exactly handed to it too (its statistics may still prune
/// by it), projections merged into the scan, and the scan made to yield to
/// the runtime cooperatively, as in any DataFusion plan.
fn physical_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    vec![
        Arc::new(FilterPushdown::new()),
        Arc::new(ProjectionPushdown::new()),
        Arc::new(EnsureCooperative::new()),
        Arc::new(FilterPushdown::new_post_optimization()),
    ]
}

/// A DataFusion error as zarrow's: a store's error that crossed DataFusion
/// comes back as itself.
pub(crate) fn query_error(e: DataFusionError) -> zarrow::Error {
    match e {
        DataFusionError::External(inner) => match inner.downcast::<zarrow::Error>() {
            Ok(ours) => *ours,
            Err(other) => zarrow::Error::from(ArrowError::ExternalError(other)),
        },
        other => zarrow::Error::from(ArrowError::ExternalError(Box::new(other))),
    }
}

/// The filtered plan's batches, waited for on the package's runtime.
struct Filtered {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
    handle: Handle,
    /// The stream ended or failed: it is not polled again.
    ended: bool,
}

impl Iterator for Filtered {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let next = match zarrow::__private::block_on(self.handle.clone(), self.stream.next()) {
            Ok(next) => next.map(|batch| batch.map_err(|e| ArrowError::from(query_error(e)))),
            Err(e) => Some(Err(ArrowError::from(e))),
        };
        self.ended = !matches!(next, Some(Ok(_)));
        next
    }
}

impl RecordBatchReader for Filtered {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
