//! `read_zarr(location, <options>)`: a Zarr group or array as a DuckDB table.
//!
//! ```text
//! bind          open the table (metadata only): its columns, its exact row
//!               count; the children that are not columns named on stderr
//! pushdown      each filter translated (filter.rs); an exact one accepted
//! init_global   one DataFusion plan: the table filtered by the translated
//!               filters, projected to DuckDB's columns, in row ranges
//!               (DataFusion partitions, chunk-aligned, pruned by statistics)
//! init_local    nothing: a thread claims ranges as it goes
//! exec          the next chunk of the thread's range; at its end, the next
//!               unclaimed range; none left: done
//! ```
//!
//! Every DuckDB thread the query gives the scan claims ranges from one
//! counter, so `SET threads` bounds it; the plan's I/O waits on the
//! process's one runtime. A thread's stream is dropped with its state (an
//! interrupted query, a `LIMIT` reached): its reads stop.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, cast, col};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use duckdb_neo::bind_arguments::BindArgument;
use duckdb_neo::connection::Context;
use duckdb_neo::data_chunk::DataChunkRef;
use duckdb_neo::extension::Extension;
use duckdb_neo::signature::{FunctionParameter, SignatureBuilder};
use duckdb_neo::table_function::{
    BindFunctionHandle, ExecColumnInfo, InitColumnData, OrderPreservation, PartitionData,
    PushdownData, TableFilterPushdownCallbacks, TableFunctionBuilder, TableFunctionCallbacks,
    TablePartitioningCallbacks,
};
use duckdb_neo::{Error, Result};
use futures::StreamExt;
use zarrow::datafusion::ZarrTable;
use zarrow::{Decode, ExecutionContext, Location};

use crate::category::Categories;
use crate::filter::{self, Fidelity};
use crate::import::{Imported, duckdb_columns};
use crate::{guard, options, zarrow_error};

/// The table function's name.
pub(crate) const FUNCTION: &str = "read_zarr";

/// What bind found, and the filters pushed since.
pub(crate) struct Bound {
    table: Arc<ZarrTable>,
    schema: SchemaRef,
    /// Each column's categories where DuckDB was told it is an `ENUM`.
    enums: Vec<Option<Categories>>,
    /// The translated filters (exact and supersets): the scan's.
    filters: Mutex<Vec<Expr>>,
}

/// One query's scan: its plan's ranges and how many are claimed.
pub(crate) struct Global {
    plan: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
    ranges: usize,
    /// Each output column's categories where it is an `ENUM`.
    enums: Vec<Option<Categories>>,
    next: AtomicUsize,
    done: AtomicUsize,
}

/// A thread's scan: the range it reads, the chunks it has not handed on.
#[derive(Default)]
pub(crate) struct Local {
    stream: Option<SendableRecordBatchStream>,
    imported: Imported,
    /// The range being read, and the chunks of it handed on so far: the last
    /// chunk's batch index is `range << CHUNK_BITS | chunks - 1`.
    range: usize,
    chunks: usize,
}

/// The bits of a batch index that count a range's chunks: DuckDB orders the
/// chunks by `range << CHUNK_BITS | chunk` (the ranges in row order, as their
/// indices are), and wants indices below about 10^13.
const CHUNK_BITS: u32 = 30;

struct ReadZarr;

impl TableFunctionCallbacks for ReadZarr {
    type BindData = Bound;
    type GlobalState = Global;
    type LocalState = Local;

    fn bind(
        &self,
        context: &Context,
        arguments: Vec<BindArgument>,
        bind: BindFunctionHandle<'_>,
    ) -> Result<Bound> {
        guard(|| {
            let location = arguments
                .first()
                .and_then(|a| a.value.as_ref())
                .map(|v| v.get::<String>())
                .transpose()?
                .flatten()
                .ok_or_else(|| Error::invalid_input("zarrow: read_zarr needs a location"))?;
            let (url, table_options) = options::parse(context, &arguments, 1)?;
            let location = Location::parse(&location).map_err(zarrow_error)?;
            // The table this process bound before at the same location with
            // the same options, brought up to date, where it has one.
            let table = crate::kept::table(&location, table_options, url).map_err(zarrow_error)?;
            report_skipped(&location, &table);
            let schema = table.schema();
            let enums = enums(&table, &schema)?;
            let columns = duckdb_columns(context, &handed_over(&schema))?;
            for ((name, logical_type), categories) in columns.into_iter().zip(&enums) {
                match categories {
                    Some(c) => bind.add_result_column(&name, &c.logical_type(context)?)?,
                    None => bind.add_result_column(&name, &logical_type)?,
                }
            }
            if let Some(rows) = table
                .statistics()
                .and_then(|s| s.num_rows.get_value().copied())
            {
                bind.set_cardinality(rows, true)?;
            }
            // Rows in the table's order where the query keeps it, read by
            // several threads (their chunks ordered by batch index).
            bind.set_order(OrderPreservation::Insertion)?;
            Ok(Bound {
                table: Arc::new(table),
                schema,
                enums,
                filters: Mutex::new(Vec::new()),
            })
        })
    }

    fn init_global_state(
        &self,
        bound: &Bound,
        context: &Context,
        columns: InitColumnData<'_>,
    ) -> Result<(Option<Global>, Option<usize>)> {
        guard(|| {
            let mut names = Vec::with_capacity(columns.count()?);
            let mut enums = Vec::with_capacity(columns.count()?);
            for i in 0..columns.count()? {
                let index = columns.get_column_index(i)?;
                let field = bound.schema.fields().get(index).ok_or_else(|| {
                    Error::invalid_input(format!(
                        "zarrow: read_zarr has no column {index} (a row id is not offered)"
                    ))
                })?;
                names.push(field.name().clone());
                enums.push(bound.enums.get(index).cloned().flatten());
            }
            // (A poisoned lock still holds every filter pushed: none is lost,
            // since an accepted one is DuckDB's no more.)
            let filters = bound
                .filters
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let threads = threads(context);
            let (plan, task) = plan(&bound.table, filters, names, threads)?;
            let ranges = plan.properties().partitioning.partition_count();
            let global = Global {
                plan,
                task,
                ranges,
                enums,
                next: AtomicUsize::new(0),
                done: AtomicUsize::new(0),
            };
            Ok((Some(global), Some(ranges.max(1))))
        })
    }

    fn init_local_state(
        &self,
        _bound: &Bound,
        _global: Option<&Global>,
        _context: &Context,
        _columns: InitColumnData<'_>,
    ) -> Result<Option<Local>> {
        Ok(Some(Local::default()))
    }

    fn exec(
        &self,
        _bound: &Bound,
        global: Option<&Global>,
        local: Option<&mut Local>,
        context: &Context,
        mut output: DataChunkRef<'_>,
        _columns: ExecColumnInfo<'_>,
    ) -> Result<()> {
        guard(|| {
            let (Some(global), Some(local)) = (global, local) else {
                return Err(Error::invalid_input(
                    "zarrow: read_zarr: scan state missing",
                ));
            };
            loop {
                if local.imported.emit(&mut output, &global.enums)? {
                    local.chunks += 1;
                    return Ok(());
                }
                let stream = match &mut local.stream {
                    Some(stream) => stream,
                    None => {
                        let range = global.next.fetch_add(1, Ordering::Relaxed);
                        if range >= global.ranges {
                            return finish(&mut output);
                        }
                        let stream = global
                            .plan
                            .execute(range, global.task.clone())
                            .map_err(query_error)?;
                        (local.range, local.chunks) = (range, 0);
                        local.stream.insert(stream)
                    }
                };
                let runtime = zarrow::store::runtime().map_err(zarrow_error)?;
                match zarrow::__private::block_on(runtime, stream.next()).map_err(zarrow_error)? {
                    Some(Ok(batch)) if batch.num_rows() == 0 => {}
                    Some(Ok(batch)) => {
                        let rows = output.capacity()?;
                        local.imported.push(context, batch, rows, &global.enums)?
                    }
                    Some(Err(e)) => return Err(query_error(e)),
                    None => {
                        local.stream = None;
                        global.done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    }

    fn progress(
        &self,
        _bound: &Bound,
        global: Option<&Global>,
        _context: &Context,
    ) -> Result<Option<f64>> {
        Ok(global.map(|g| {
            if g.ranges == 0 {
                100.0
            } else {
                100.0 * g.done.load(Ordering::Relaxed) as f64 / g.ranges as f64
            }
        }))
    }
}

impl TableFilterPushdownCallbacks for ReadZarr {
    fn pushdown_filter(
        &self,
        bound: &Bound,
        context: &Context,
        pushed: PushdownData<'_>,
    ) -> Result<()> {
        guard(|| {
            let mut translated = Vec::new();
            for i in 0..pushed.filter_count()? {
                let expression = pushed.filter(i)?;
                if let Some(t) = filter::translate(context, &expression, &bound.schema, &pushed)? {
                    if t.fidelity == Fidelity::Exact {
                        pushed.accept_pushdown(i)?;
                    }
                    translated.push(t.expr);
                }
            }
            bound
                .filters
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(translated);
            Ok(())
        })
    }
}

impl TablePartitioningCallbacks for ReadZarr {
    /// The batch index of the chunk the thread just handed on: DuckDB keeps
    /// the table's order by it while its threads read ranges side by side.
    fn partition_data(
        &self,
        _bound: &Bound,
        _global: Option<&Global>,
        local: Option<&mut Local>,
        _context: &Context,
        _partition: PartitionData<'_>,
    ) -> Result<usize> {
        guard(|| {
            let local = local
                .ok_or_else(|| Error::invalid_input("zarrow: read_zarr: scan state missing"))?;
            let chunk = local.chunks.saturating_sub(1);
            if chunk >> CHUNK_BITS != 0 || local.range >= 1 << (43 - CHUNK_BITS) {
                return Err(Error::invalid_input(
                    "zarrow: read_zarr: a range of more than 2^30 chunks cannot be ordered",
                ));
            }
            Ok(local.range << CHUNK_BITS | chunk)
        })
    }
}

impl filter::Columns for PushdownData<'_> {
    fn column(&self, index: usize) -> Result<usize> {
        self.get_column_index(index)
    }
}

/// The output's end: no rows.
fn finish(output: &mut DataChunkRef<'_>) -> Result<()> {
    if output.col_count() > 0 {
        output
            .get_vector_at_mut::<duckdb_neo::vector::Unknown>(0)?
            .set_size(0)?;
    }
    Ok(())
}

/// The threads DuckDB runs a query on (`SET threads`).
fn threads(context: &Context) -> usize {
    context
        .config()
        .and_then(|c| c.get_value("threads"))
        .ok()
        .and_then(|(v, _)| v.get::<i64>().ok().flatten())
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(1)
        .max(1)
}

/// The plan of `table` filtered by `filters`, projected to `columns`, in row
/// ranges for `threads` threads.
fn plan(
    table: &Arc<ZarrTable>,
    filters: Vec<Expr>,
    columns: Vec<String>,
    threads: usize,
) -> Result<(Arc<dyn ExecutionPlan>, Arc<TaskContext>)> {
    // Each range read and decoded on the DuckDB thread that claimed it:
    // DuckDB's threads are the scan's parallelism (`SET threads`), not a pool
    // beside them.
    let context = ExecutionContext::default().with_decode(Decode::Inline);
    let mut config = SessionConfig::new()
        // A few ranges per thread: a thread that finishes early (its ranges
        // pruned, or fast) takes another.
        .with_target_partitions(threads.saturating_mul(2))
        .with_batch_size(zarrow::read::DEFAULT_MAX_BATCH_ROWS)
        .with_extension(Arc::new(context));
    // The scan's ranges are the partitions: no repartition, no coalescing
    // (DuckDB's own vectors are smaller than a batch).
    config.options_mut().execution.coalesce_batches = false;
    config
        .options_mut()
        .optimizer
        .enable_round_robin_repartition = false;
    let ctx = SessionContext::new_with_config(config);
    let frame = ctx.read_table(table.clone()).map_err(query_error)?;
    let frame = match filters.into_iter().reduce(Expr::and) {
        Some(predicate) => frame.filter(predicate).map_err(query_error)?,
        None => frame,
    };
    // Each column as DuckDB was told it comes (`handed_over`).
    let (read, handed) = (table.schema(), handed_over(&table.schema()));
    let exprs: Vec<Expr> = columns
        .iter()
        .map(|name| {
            let column = col(datafusion::common::Column::new_unqualified(name));
            match (read.field_with_name(name), handed.field_with_name(name)) {
                (Ok(r), Ok(h)) if r.data_type() != h.data_type() => {
                    cast(column, h.data_type().clone()).alias(name)
                }
                _ => column,
            }
        })
        .collect();
    let logical = frame
        .select(exprs)
        .and_then(|f| f.into_optimized_plan())
        .map_err(query_error)?;
    let state = ctx.state();
    let runtime = zarrow::store::runtime().map_err(zarrow_error)?;
    let physical = zarrow::__private::block_on(runtime, state.create_physical_plan(&logical))
        .map_err(zarrow_error)?
        .map_err(query_error)?;
    Ok((physical, ctx.task_ctx()))
}

/// The table's columns as the scan hands them to DuckDB: as they are read,
/// but for the types DuckDB's Arrow import lacks, each cast exactly to one it
/// has (`plan` casts to these types): float16 to float32.
fn handed_over(schema: &Schema) -> Schema {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Float16 => f.as_ref().clone().with_data_type(DataType::Float32),
            _ => f.as_ref().clone(),
        })
        .collect();
    Schema::new(fields)
}

/// Each column's categories where it is handed over as an `ENUM`: the
/// anndata categoricals the table reads as dictionaries (`categorical_values
/// := false`) whose categories can be one (category.rs).
fn enums(table: &ZarrTable, schema: &Schema) -> Result<Vec<Option<Categories>>> {
    let mut enums = vec![None; schema.fields().len()];
    if !schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Dictionary(..)))
    {
        return Ok(enums);
    }
    for (name, values) in table.categories().map_err(zarrow_error)? {
        if let Ok(i) = schema.index_of(&name)
            && matches!(schema.field(i).data_type(), DataType::Dictionary(..))
        {
            enums[i] = Categories::of(&name, values);
        }
    }
    Ok(enums)
}

/// A DataFusion error as DuckDB's, with zarrow's message where it is zarrow's.
fn query_error(e: datafusion::error::DataFusionError) -> Error {
    match e.find_root() {
        datafusion::error::DataFusionError::External(inner) => zarrow_error(inner),
        root => zarrow_error(root.message()),
    }
}

/// Name the table's children that are not columns on stderr, once per
/// process for each location and child (DuckDB binds some statements twice).
fn report_skipped(location: &Location, table: &ZarrTable) {
    static REPORTED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let reported = REPORTED.get_or_init(Default::default);
    for skipped in table.skipped() {
        let line = format!("zarrow: read_zarr('{location}'): not a column: {skipped}");
        if reported
            .lock()
            .map(|mut r| r.insert(line.clone()))
            .unwrap_or(true)
        {
            eprintln!("{line}");
        }
    }
}

/// Register `read_zarr`.
pub(crate) fn register(extension: &Extension) -> Result<()> {
    let signature = options::declare(
        SignatureBuilder::new().param(FunctionParameter::new::<String>("location")),
    );
    TableFunctionBuilder::new(FUNCTION, signature, ReadZarr)
        .with_projection_pushdown(true)
        .with_filter_pushdown()
        .with_partitioning()
        .with_progress()
        .register(extension)
}
