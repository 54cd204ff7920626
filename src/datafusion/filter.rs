//! Filters a scan evaluates itself, exactly: late materialization.
//!
//! ```text
//! a block of rows (chunk-aligned) ──▶ read the filter's columns ──▶ evaluate
//!        the rows that match, as row ranges ◀─────────────────────────┘
//!        └─▶ read the other projected columns with that row selection: only
//!            the chunks holding a match, only from its first match to its last
//!            └─▶ the block's batches: the filter columns' matching rows beside
//! ```
//!
//! A block of no match reads nothing but the filter's columns. The first
//! block is read alone and small (a query may stop after it); the next ones
//! grow, and run a few at a time, in order, so that the next block's chunks
//! are read while this one's are decoded. The filters are the table's `Exact` ones
//! ([`exact`]): DataFusion applies them no more.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::downcast_dictionary_array;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::common::tree_node::TreeNode;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion_proto::bytes::Serializeable;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::snapshot::Snapshot;
use crate::read::Selection;
use crate::read::TableSource;

/// How many blocks a partition reads at once (each: its filter columns, then
/// the rest where rows match).
const BLOCKS_AHEAD: usize = 3;

/// The parts a read could skip that must have matched, every one, in the
/// blocks last evaluated before the rest of a range is read as stored. One
/// block of one chunk that holds a match says nothing of the next chunks (W11's
/// `n_genes = 4321 AND score < 0.01` matches in 7 of 100 chunks, and a rule of
/// one dense block read every column of the chunks after the fifth match whole).
const DENSE_PARTS: u64 = 8;

/// The rows of the first block, at least (a whole number of the longest
/// chunks): small, so that a query that stops early (`LIMIT`, Polars'
/// `head`) reads little more than it uses.
const FIRST_BLOCK_ROWS: u64 = 512;

/// The rows a block grows to, by doubling, at least (a whole number of the
/// longest chunks): few readers for many small chunks.
const MAX_BLOCK_ROWS: u64 = 1 << 16;

/// Whether the table evaluates `filter` itself, exactly: a deterministic
/// expression over its columns (of a table of rows, not a flattened N-d array)
/// that needs nothing but a row's values (no subquery, no aggregate).
pub(crate) fn exact(table: &Snapshot, filter: &Expr) -> bool {
    if filter.is_volatile() || !matches!(table.source, TableSource::Rows(_)) {
        return false;
    }
    let columns = filter.column_refs();
    if columns.is_empty()
        || columns
            .iter()
            .any(|c| table.arrow_schema().index_of(&c.name).is_err())
    {
        return false;
    }
    let needs_more = filter
        .exists(|e| {
            Ok(matches!(
                e,
                Expr::ScalarSubquery(_)
                    | Expr::Exists(_)
                    | Expr::InSubquery(_)
                    | Expr::SetComparison(_)
                    | Expr::OuterReferenceColumn(..)
                    | Expr::Placeholder(_)
                    | Expr::AggregateFunction(_)
                    | Expr::WindowFunction(_)
                    | Expr::Unnest(_)
                    | Expr::GroupingSet(_)
            ))
        })
        .unwrap_or(true);
    !needs_more
}

/// The filters a scan evaluates: their conjunction, over the columns they
/// read.
#[derive(Debug)]
pub(crate) struct ScanFilter {
    /// The filters, their columns unqualified (what a plan carries).
    exprs: Vec<Expr>,
    /// The table's columns they read (indices into its schema), in order.
    columns: Vec<usize>,
    /// Those columns' schema.
    schema: SchemaRef,
    /// The conjunction, over `schema`.
    predicate: Arc<dyn PhysicalExpr>,
    /// Where a column the filter reads is an anndata categorical: the
    /// columns with it as a dictionary (its codes and categories), and the
    /// conjunction over them, evaluated once per category rather than per row.
    /// (`None`: DataFusion cannot plan the whole over them).
    codes: Option<(SchemaRef, Option<Arc<dyn PhysicalExpr>>)>,
    /// The same split at its `AND`s: each conjunct over one categorical
    /// alone, evaluated over its categories and looked up by code; the rest
    /// (`None`: nothing else) over the columns as read.
    by_category: Option<Split>,
    /// Of several conjuncts, each alone that reads fewer columns than the
    /// whole, the likeliest to match few rows first ([`stage_order`]): each
    /// in turn is read first, until one matches few rows.
    stages: Vec<ScanFilter>,
}

/// A filter split at its `AND`s ([`ScanFilter::split_by_category`]).
#[derive(Debug)]
struct Split {
    /// The conjuncts over one dictionary alone.
    parts: Vec<ByCategory>,
    /// The others, over the columns as read.
    rest: Option<Arc<dyn PhysicalExpr>>,
}

/// A conjunct over one categorical column alone: its value for each
/// category (and for a null) decides every row of that category.
#[derive(Debug)]
struct ByCategory {
    /// The column's place among the filter's columns.
    column: usize,
    /// The one column, with the table's type.
    schema: SchemaRef,
    predicate: Arc<dyn PhysicalExpr>,
}

impl ByCategory {
    /// Which rows of `column` (codes: a dictionary of its categories) match,
    /// from the conjunct's value for each category; `None` where `column` is
    /// not a dictionary, or has more categories than rows.
    fn evaluate(&self, column: &ArrayRef) -> DfResult<Option<BooleanBuffer>> {
        let Some(codes) = column.as_any_dictionary_opt() else {
            return Ok(None);
        };
        let categories = codes.values();
        if categories.len() > codes.len().max(1024) {
            return Ok(None);
        }
        // Each category, then a null (the value of a row without one).
        let field = self.schema.field(0);
        let values = arrow_cast::cast(categories, field.data_type())?;
        let null = arrow_array::new_null_array(field.data_type(), 1);
        let values = arrow_select::concat::concat(&[values.as_ref(), null.as_ref()])?;
        let batch = RecordBatch::try_new(self.schema.clone(), vec![values])?;
        let result = self
            .predicate
            .evaluate(&batch)?
            .into_array(batch.num_rows())?;
        let table: Vec<bool> = as_mask(&result)?.values().iter().collect();
        Ok(downcast_dictionary_array!(
            column => Some(by_key(column.keys(), &table)),
            _ => None
        ))
    }
}

/// Each row's entry of `table` by its key; a null key takes the last entry.
fn by_key<K: arrow_array::types::ArrowDictionaryKeyType>(
    keys: &arrow_array::PrimitiveArray<K>,
    table: &[bool],
) -> BooleanBuffer {
    let (null_row, entries) = match table.split_last() {
        Some((null_row, entries)) => (*null_row, entries),
        None => (false, table),
    };
    // A narrow key looks up a table of every bit pattern (the entries, then
    // `false`): no bounds to check. A wide one checks them (a dictionary's
    // valid keys index its values: `get` only keeps a broken one from
    // panicking).
    match 8 * std::mem::size_of::<K::Native>() {
        8 => {
            let mut padded = [false; 256];
            let n = entries.len().min(256);
            padded[..n].copy_from_slice(&entries[..n]);
            looked_up(keys, null_row, |k| padded[k & 0xff])
        }
        _ => looked_up(keys, null_row, |k| entries.get(k).copied().unwrap_or(false)),
    }
}

/// Each row's `lookup` of its key; a null key's row is `null_row`.
fn looked_up<K: arrow_array::types::ArrowDictionaryKeyType>(
    keys: &arrow_array::PrimitiveArray<K>,
    null_row: bool,
    lookup: impl Fn(usize) -> bool,
) -> BooleanBuffer {
    use arrow_buffer::ArrowNativeType as _;
    let values = keys.values();
    match keys.nulls() {
        None => BooleanBuffer::collect_bool(values.len(), |i| lookup(values[i].as_usize())),
        Some(nulls) => BooleanBuffer::collect_bool(values.len(), |i| match nulls.is_valid(i) {
            true => lookup(values[i].as_usize()),
            false => null_row,
        }),
    }
}

impl ScanFilter {
    /// The scan's filter of `exprs` (the table's exact ones) over a table of
    /// `schema`; `None` for none.
    ///
    /// # Errors
    /// A filter DataFusion cannot plan over the table's columns.
    pub(crate) fn new(
        schema: &Schema,
        exprs: Vec<Expr>,
        props: &ExecutionProps,
    ) -> DfResult<Option<Self>> {
        let table = schema;
        let exprs: Vec<Expr> = exprs.into_iter().map(unnormalize_col).collect();
        let Some(conjunct) = conjunction(exprs.clone()) else {
            return Ok(None);
        };
        let mut columns: Vec<usize> = conjunct
            .column_refs()
            .iter()
            .map(|c| schema.index_of(&c.name))
            .collect::<Result<_, _>>()?;
        columns.sort_unstable();
        columns.dedup();
        let schema = Arc::new(schema.project(&columns)?);
        let predicate = plan_locally(&conjunct, &schema, props)?;
        let mut filter = Self {
            exprs,
            columns,
            schema,
            predicate,
            codes: None,
            by_category: None,
            stages: Vec::new(),
        };
        filter.by_category = filter.split_by_category(&filter.schema.clone(), props);
        let mut conjuncts: Vec<&Expr> = filter.exprs.iter().flat_map(split_conjunction).collect();
        if conjuncts.len() > 1 {
            // Stable: the query's order among conjuncts of one kind.
            conjuncts.sort_by_key(|c| stage_order(c));
            for conjunct in conjuncts {
                if conjunct.column_refs().len() < filter.columns.len()
                    && let Some(stage) = ScanFilter::new(table, vec![conjunct.clone()], props)?
                {
                    filter.stages.push(stage);
                }
            }
        }
        Ok(Some(filter))
    }

    /// Evaluate over the table's categoricals as dictionaries (`codes`: the
    /// table's schema so), where the filter reads one and DataFusion can plan
    /// the filter over them; else as it is.
    pub(crate) fn with_codes(mut self, codes: Option<&Schema>, props: &ExecutionProps) -> Self {
        let Some(codes) = codes else {
            return self;
        };
        self.stages = std::mem::take(&mut self.stages)
            .into_iter()
            .map(|stage| stage.with_codes(Some(codes), props))
            .collect();
        let Ok(schema) = codes.project(&self.columns) else {
            return self;
        };
        let differs = schema
            .fields()
            .iter()
            .zip(self.schema.fields())
            .any(|(c, v)| c.data_type() != v.data_type());
        if !differs {
            return self;
        }
        let planned = conjunction(self.exprs.clone())
            .and_then(|conjunct| plan_locally(&conjunct, &schema, props).ok());
        let split = self.split_by_category(&schema, props);
        if planned.is_none() && split.is_none() {
            // Read as values.
            return self;
        }
        self.by_category = split;
        self.codes = Some((Arc::new(schema), planned));
        self
    }

    /// The conjuncts over one dictionary alone (in `read`, the filter's
    /// columns as read: a categorical as codes, or a dictionary column), and
    /// the rest over `read`; `None` where no conjunct is over one dictionary
    /// alone, or the rest cannot be planned there.
    fn split_by_category(&self, read: &Schema, props: &ExecutionProps) -> Option<Split> {
        let mut parts = Vec::new();
        let mut rest = Vec::new();
        for conjunct in self.exprs.iter().flat_map(split_conjunction) {
            let refs = conjunct.column_refs();
            let single = match refs.iter().next() {
                Some(c) if refs.len() == 1 => self.schema.index_of(&c.name).ok(),
                _ => None,
            };
            let part = single
                .filter(|&i| matches!(read.field(i).data_type(), DataType::Dictionary(..)))
                .and_then(|i| {
                    let schema = Arc::new(self.schema.project(&[i]).ok()?);
                    let predicate = plan_locally(conjunct, &schema, props).ok()?;
                    Some(ByCategory {
                        column: i,
                        schema,
                        predicate,
                    })
                });
            match part {
                Some(part) => parts.push(part),
                None => rest.push(conjunct.clone()),
            }
        }
        if parts.is_empty() {
            return None;
        }
        let rest = match conjunction(rest) {
            Some(rest) => Some(plan_locally(&rest, read, props).ok()?),
            None => None,
        };
        Some(Split { parts, rest })
    }

    /// The conjuncts read alone first, in the order they are tried.
    fn stages(&self) -> &[ScanFilter] {
        &self.stages
    }

    /// Whether the filter's columns are read with categoricals as codes.
    pub(crate) fn reads_codes(&self) -> bool {
        self.codes.is_some()
    }

    /// The filters, as a plan carries them to another machine.
    ///
    /// # Errors
    /// A filter datafusion-proto cannot encode.
    pub(crate) fn to_bytes(&self) -> DfResult<Vec<Vec<u8>>> {
        to_bytes(&self.exprs)
    }

    /// The filter [`ScanFilter::to_bytes`] carried, over a table of `schema`
    /// (its functions resolved in `ctx`).
    ///
    /// # Errors
    /// Bytes that are not an expression over the table's columns.
    pub(crate) fn from_bytes(
        schema: &Schema,
        bytes: &[Vec<u8>],
        ctx: &TaskContext,
    ) -> DfResult<Option<Self>> {
        Self::new(schema, from_bytes(bytes, ctx)?, &ExecutionProps::new())
    }

    /// The table's columns the filter reads.
    pub(crate) fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The filters, for display.
    pub(crate) fn display(&self) -> String {
        self.exprs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// The filter's columns as read (categoricals as codes, where they are).
    fn read_schema(&self) -> &SchemaRef {
        self.codes
            .as_ref()
            .map_or(&self.schema, |(schema, _)| schema)
    }

    /// `batch` (the filter's columns as read) with the table's types.
    fn as_values(&self, batch: &RecordBatch) -> DfResult<RecordBatch> {
        if self.codes.is_none() {
            return Ok(batch.clone());
        }
        let columns = batch
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| arrow_cast::cast(c, f.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// Which rows of `batch` (the filter's columns as read) match: nulls do
    /// not. Over codes where it can be, else over values.
    fn evaluate(&self, batch: &RecordBatch) -> DfResult<BooleanArray> {
        let n = batch.num_rows();
        if let Some(mask) = self.evaluate_by_category(batch) {
            return Ok(mask);
        }
        let by_codes = self.codes.as_ref().and_then(|(_, p)| {
            p.as_ref()?
                .evaluate(batch)
                .and_then(|v| v.into_array(n))
                .ok()
        });
        let mask = match by_codes {
            Some(mask) => mask,
            None => self
                .predicate
                .evaluate(&self.as_values(batch)?)?
                .into_array(n)?,
        };
        as_mask(&mask)
    }

    /// [`ScanFilter::evaluate`] with each conjunct over one dictionary
    /// looked up by key; `None` where a column read is not a dictionary (or
    /// has more categories than rows), or a part fails.
    fn evaluate_by_category(&self, batch: &RecordBatch) -> Option<BooleanArray> {
        let Split { parts, rest } = self.by_category.as_ref()?;
        let mut mask: Option<BooleanBuffer> = None;
        // Where a category fails (one no row may hold: `CAST(c AS INT)`),
        // the rows are evaluated instead: only a row's failure is an error.
        for part in parts {
            let matches = part.evaluate(batch.column(part.column)).ok()??;
            mask = Some(match mask {
                Some(mask) => &mask & &matches,
                None => matches,
            });
        }
        if let Some(rest) = rest {
            let matches = rest
                .evaluate(batch)
                .and_then(|v| v.into_array(batch.num_rows()))
                .and_then(|v| as_mask(&v))
                .ok()?
                .values()
                .clone();
            mask = Some(match mask {
                Some(mask) => &mask & &matches,
                None => matches,
            });
        }
        mask.map(|m| BooleanArray::new(m, None))
    }
}

/// Where a conjunct comes among the stages a scan reads first: an equality
/// (`=`, `IN`, `IS NULL`) usually keeps few rows, a range more, a negation
/// (`!=`, `NOT IN`, `IS NOT NULL`) most. A guess only: a stage that keeps rows
/// in every part of [`DENSE_PARTS`] parts in a row gives way to the next.
fn stage_order(conjunct: &Expr) -> u8 {
    use datafusion::logical_expr::{BinaryExpr, Operator};
    match conjunct {
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::Eq | Operator::IsNotDistinctFrom,
            ..
        })
        | Expr::IsNull(_)
        | Expr::InList(datafusion::logical_expr::expr::InList { negated: false, .. }) => 0,
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::NotEq | Operator::IsDistinctFrom,
            ..
        })
        | Expr::IsNotNull(_)
        | Expr::InList(_)
        | Expr::Not(_) => 2,
        _ => 1,
    }
}

/// A filter's result as the rows it keeps: a null does not match.
///
/// # Errors
/// A result that is not booleans.
fn as_mask(result: &ArrayRef) -> DfResult<BooleanArray> {
    let Some(mask) = result.as_boolean_opt() else {
        return Err(DataFusionError::Internal(format!(
            "a filter evaluated to {}, not booleans",
            result.data_type()
        )));
    };
    Ok(match mask.null_count() {
        0 => mask.clone(),
        _ => arrow_select::filter::prep_null_mask_filter(mask),
    })
}

/// `expr` (typed by the planner) as a physical expression over `schema`,
/// planned here, not by the session: a session across an FFI boundary
/// (datafusion-python) makes expressions that cannot be sent in a plan, nor
/// looked into by `PruningPredicate`.
///
/// # Errors
/// An expression DataFusion cannot plan over `schema`.
pub(crate) fn plan_locally(
    expr: &Expr,
    schema: &Schema,
    props: &ExecutionProps,
) -> DfResult<Arc<dyn PhysicalExpr>> {
    let df_schema = DFSchema::try_from(schema.clone())?;
    boolean_operands(expr, &df_schema)?;
    create_physical_expr(expr, &df_schema, props, &PhysicalPlanningContext::default())
}

/// Refuse `expr` where, over `schema`, an `AND`, `OR` or `NOT` (or the
/// filter itself) has an operand that is not boolean: the expression was
/// typed for the table's columns, and planned over columns read otherwise (a
/// categorical of booleans read as a dictionary) DataFusion's evaluation
/// panics where its planner would have refused it (found by the end-to-end
/// differential test: `c1 OR ...` over anndata boolean categories aborted a
/// Python process through datafusion-ffi). The caller then evaluates over the
/// table's types.
fn boolean_operands(expr: &Expr, schema: &DFSchema) -> DfResult<()> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::{ExprSchemable, Operator};
    let boolean = |e: &Expr| -> DfResult<()> {
        match e.get_type(schema)? {
            DataType::Boolean | DataType::Null => Ok(()),
            other => Err(DataFusionError::Plan(format!(
                "{e} is {other}, not boolean, over the columns as read"
            ))),
        }
    };
    boolean(expr)?;
    expr.apply(|e| {
        match e {
            Expr::BinaryExpr(b) if matches!(b.op, Operator::And | Operator::Or) => {
                boolean(&b.left)?;
                boolean(&b.right)?;
            }
            Expr::Not(inner) => boolean(inner)?,
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(())
}

/// `exprs` as datafusion-proto encodes them, for a plan to carry.
///
/// # Errors
/// An expression datafusion-proto cannot encode.
pub(crate) fn to_bytes(exprs: &[Expr]) -> DfResult<Vec<Vec<u8>>> {
    exprs.iter().map(|e| Ok(e.to_bytes()?.to_vec())).collect()
}

/// The expressions [`to_bytes`] encoded, their functions resolved in `ctx`.
///
/// # Errors
/// Bytes that are not an expression.
pub(crate) fn from_bytes(bytes: &[Vec<u8>], ctx: &TaskContext) -> DfResult<Vec<Expr>> {
    bytes
        .iter()
        .map(|b| Expr::from_bytes_with_ctx(b, ctx))
        .collect()
}

/// What a late-materialized read of one row range needs: how to open a
/// read of some columns over some rows, the filter, and the columns to give.
pub(crate) struct Filtered {
    /// Opens a stream of `names`' rows in `rows` (of those a selection keeps).
    pub open: Arc<OpenRead>,
    pub filter: Arc<ScanFilter>,
    /// The table's schema.
    pub table: SchemaRef,
    /// The columns to give (indices into the table's schema), and their schema.
    pub columns: Vec<usize>,
    pub schema: SchemaRef,
    /// The longest chunk among the columns read (blocks are whole numbers of
    /// it).
    pub longest: u64,
    /// The fewest rows of the other columns a read can skip (their shortest
    /// chunk, or a shard's inner chunk).
    pub granule: u64,
    /// Counts the rows the filter kept.
    pub matched: datafusion::physical_plan::metrics::Count,
    /// The parts (of `granule` rows) of the blocks last evaluated that each
    /// matched in every part a read of the other columns could skip, summed
    /// until a block that did not: from [`DENSE_PARTS`] on, the rest is read
    /// as stored.
    pub dense_parts: AtomicU64,
    /// The fewest rows of the filter's columns a read can skip.
    pub filter_granule: u64,
    /// The stage ([`ScanFilter::stages`]) read first: one that matched in
    /// every part of a block that a read of the filter's columns could skip
    /// gives way to the next, and after the last the whole filter is read at
    /// once.
    pub stage: AtomicUsize,
    /// The parts (of `filter_granule` rows) of the blocks last evaluated by
    /// the current stage that each matched in every part, summed until a
    /// block that did not: from [`DENSE_PARTS`] on, the next stage is read
    /// first.
    pub stage_parts: AtomicU64,
}

/// A block's filter columns, evaluated.
struct Evaluated {
    /// The matching rows.
    found: Found,
    /// The given filter columns' matching values.
    kept: Option<RecordBatch>,
}

/// A block's matching rows: as ranges (a read of a selection), or as a mask
/// over the block's rows (a read of them all: no range is cut unless a read
/// of the other columns needs them).
enum Found {
    Ranges(Vec<Range<u64>>),
    Mask {
        rows: Range<u64>,
        mask: BooleanBuffer,
    },
}

impl Found {
    /// How many rows match.
    fn matched(&self) -> u64 {
        match self {
            Self::Ranges(ranges) => ranges.iter().map(|r| r.end - r.start).sum(),
            Self::Mask { mask, .. } => mask.count_set_bits() as u64,
        }
    }

    /// Whether every `granule`-row part of `rows` (aligned on multiples of
    /// `granule`) holds a match.
    fn in_every_granule(&self, rows: Range<u64>, granule: u64) -> bool {
        match self {
            Self::Ranges(ranges) => in_every_granule(ranges, rows, granule),
            Self::Mask { rows: of, mask } => {
                let granule = granule.max(1);
                let mut start = rows.start;
                while start < rows.end {
                    let end = ((start / granule + 1) * granule).min(rows.end);
                    let (at, len) = ((start - of.start) as usize, (end - start) as usize);
                    if mask.slice(at, len).count_set_bits() == 0 {
                        return false;
                    }
                    start = end;
                }
                true
            }
        }
    }

    /// The matching rows as ranges.
    fn into_ranges(self) -> Vec<Range<u64>> {
        match self {
            Self::Ranges(ranges) => ranges,
            Self::Mask { rows, mask } => mask
                .set_slices()
                .map(|(a, b)| rows.start + a as u64..rows.start + b as u64)
                .collect(),
        }
    }

    /// The matching rows as a mask over `rows`.
    fn into_mask(self, rows: Range<u64>) -> BooleanArray {
        match self {
            Self::Mask { rows: of, mask } if of == rows => BooleanArray::new(mask, None),
            found => mask_of(&found.into_ranges(), rows),
        }
    }
}

/// `run` (the parts, of `granule` rows, of the blocks in a row that each
/// matched in every part) with the block of `rows` added where it is `dense`,
/// else ended: its length after.
fn dense_run(run: &AtomicU64, dense: bool, rows: &Range<u64>, granule: u64) -> u64 {
    if dense {
        let parts = (rows.end - rows.start).div_ceil(granule.max(1));
        run.fetch_add(parts, Ordering::Relaxed) + parts
    } else {
        run.store(0, Ordering::Relaxed);
        0
    }
}

/// `matches` (sorted, disjoint, inside `rows`) as a mask over `rows`.
fn mask_of(matches: &[Range<u64>], rows: Range<u64>) -> BooleanArray {
    let len = usize::try_from(rows.end - rows.start).unwrap_or(0);
    let mut bits = arrow_buffer::BooleanBufferBuilder::new(len);
    let mut at = rows.start;
    for m in matches {
        bits.append_n(usize::try_from(m.start - at).unwrap_or(0), false);
        bits.append_n(usize::try_from(m.end - m.start).unwrap_or(0), true);
        at = m.end;
    }
    bits.append_n(usize::try_from(rows.end - at).unwrap_or(0), false);
    BooleanArray::new(bits.finish(), None)
}

/// A stream of batches.
pub(crate) type Batches = BoxStream<'static, DfResult<RecordBatch>>;

/// Opens a read of some columns (by name) over some rows (of those a
/// selection keeps), with categoricals as codes or not.
pub(crate) type OpenRead = dyn Fn(Vec<String>, Range<u64>, Option<Vec<Range<u64>>>, bool) -> DfResult<Batches>
    + Send
    + Sync;

impl Filtered {
    /// The rows of `range` that match, the given columns of them.
    pub(crate) fn stream(self: Arc<Self>, range: Range<u64>) -> Batches {
        let (this, end) = (self, range.end);
        let mut blocks = blocks(range, this.longest).into_iter();
        let first = blocks.next().map(|block| this.clone().late(block));
        // The next block decided when it is started: after a block that
        // matched in every part a read of the other columns could skip, the
        // rest of the range is read as it is stored instead (every column,
        // filtered batch by batch): late materialization would skip nothing,
        // and its blocks would cut the other columns' chunks (each cut chunk
        // decoded twice).
        let later =
            futures::stream::unfold((blocks, this, false), move |(mut blocks, this, done)| {
                let next = match done {
                    true => None,
                    false => blocks.next().map(|block| {
                        let dense = this.dense_parts.load(Ordering::Relaxed) >= DENSE_PARTS;
                        match dense && this.has_others() {
                            true => {
                                let stored = this.clone().stored(block.start..end);
                                (futures::future::ready(stored).boxed(), true)
                            }
                            false => (this.clone().late(block), false),
                        }
                    }),
                };
                async move { next.map(|(read, done)| (read, (blocks, this, done))) }
            });
        futures::stream::iter(first)
            .buffered(1)
            .chain(later.buffered(BLOCKS_AHEAD))
            .try_flatten()
            .boxed()
    }

    /// A block read by late materialization, its batches.
    fn late(self: Arc<Self>, rows: Range<u64>) -> BoxFuture<'static, DfResult<Batches>> {
        async move {
            let batches = self.block(rows).await?;
            Ok(futures::stream::iter(batches.into_iter().map(Ok)).boxed())
        }
        .boxed()
    }

    /// Whether columns are given that the filter does not read.
    fn has_others(&self) -> bool {
        self.columns
            .iter()
            .any(|c| !self.filter.columns().contains(c))
    }

    /// `rows` read as they are stored: the filter's columns and the others
    /// together, each batch filtered.
    fn stored(self: Arc<Self>, rows: Range<u64>) -> DfResult<Batches> {
        let filter = self.filter.clone();
        let (given, others) = self.given_and_others();
        let n = filter.columns().len();
        let mut names = self.names(filter.columns());
        names.extend(self.names(&others));
        let read = (self.open)(names, rows, None, filter.reads_codes())?;
        Ok(read
            .map(move |batch| -> DfResult<Option<RecordBatch>> {
                let batch = batch?;
                let (read, rest) = batch.columns().split_at(n);
                let read = RecordBatch::try_new(filter.read_schema().clone(), read.to_vec())?;
                let mask = filter.evaluate(&read)?;
                let matched = mask.true_count();
                self.matched.add(matched);
                if matched == 0 {
                    return Ok(None);
                }
                let kept = match given.iter().any(Option::is_some) {
                    true => Some(
                        filter
                            .as_values(&arrow_select::filter::filter_record_batch(&read, &mask)?)?,
                    ),
                    false => None,
                };
                let rest = rest
                    .iter()
                    .map(|c| arrow_select::filter::filter(c, &mask))
                    .collect::<Result<Vec<_>, _>>()?;
                self.assemble(&given, kept.as_ref(), 0, &rest, matched)
                    .map(Some)
            })
            .try_filter_map(|batch| futures::future::ready(Ok(batch)))
            .boxed())
    }

    /// Of the columns given, those the filter reads (their place among the
    /// filter's columns), and the others.
    fn given_and_others(&self) -> (Vec<Option<usize>>, Vec<usize>) {
        let given: Vec<Option<usize>> = self
            .columns
            .iter()
            .map(|c| self.filter.columns().iter().position(|f| f == c))
            .collect();
        let others = self
            .columns
            .iter()
            .zip(&given)
            .filter(|(_, g)| g.is_none())
            .map(|(&c, _)| c)
            .collect();
        (given, others)
    }

    fn names(&self, columns: &[usize]) -> Vec<String> {
        columns
            .iter()
            .map(|&i| self.table.field(i).name().clone())
            .collect()
    }

    /// The filter's columns of `rows` read and evaluated: the matching rows,
    /// and the given filter columns' matching values. A filter of several
    /// conjuncts first reads one conjunct's columns (its stages, in turn):
    /// where its matches are few, the whole filter is then read and
    /// evaluated only in the chunks holding them (as Parquet's row filters
    /// narrow each next predicate).
    async fn evaluate(&self, rows: Range<u64>, given: &[Option<usize>]) -> DfResult<Evaluated> {
        let at = self.stage.load(Ordering::Relaxed);
        if let Some(first) = self.filter.stages().get(at) {
            let narrowed = self.evaluate_with(first, rows.clone(), None, &[]).await?;
            let dense = narrowed
                .found
                .in_every_granule(rows.clone(), self.filter_granule);
            // Dense in DENSE_PARTS parts in a row (one block of one chunk
            // holding a match says nothing of the next chunks): the next
            // conjunct first, from the next block on (blocks evaluated side by
            // side move on once).
            let run = dense_run(&self.stage_parts, dense, &rows, self.filter_granule);
            if run >= DENSE_PARTS
                && self
                    .stage
                    .compare_exchange(at, at + 1, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                self.stage_parts.store(0, Ordering::Relaxed);
            }
            if narrowed.found.matched() == 0 {
                return Ok(narrowed);
            }
            if !dense {
                let selection = narrowed.found.into_ranges();
                return self
                    .evaluate_with(&self.filter, rows, Some(selection), given)
                    .await;
            }
        }
        self.evaluate_with(&self.filter, rows, None, given).await
    }

    /// `filter`'s columns of `rows` (of those `selection` keeps) read and
    /// evaluated.
    async fn evaluate_with(
        &self,
        filter: &ScanFilter,
        rows: Range<u64>,
        selection: Option<Vec<Range<u64>>>,
        given: &[Option<usize>],
    ) -> DfResult<Evaluated> {
        let mut read = (self.open)(
            self.names(filter.columns()),
            rows.clone(),
            selection.clone(),
            filter.reads_codes(),
        )?;
        // Where each batch's rows lie: the selection's, in order. A read of
        // every row keeps the masks as they come (one bit a row).
        let all = selection.is_none();
        let selected = match selection {
            Some(ranges) => Selection::new(ranges, rows.clone()),
            None => Selection::all(rows.clone()),
        };
        let mut taken = 0;
        let mut matches: Vec<Range<u64>> = Vec::new();
        let mut bits = arrow_buffer::BooleanBufferBuilder::new(match all {
            true => usize::try_from(rows.end - rows.start).unwrap_or(0),
            false => 0,
        });
        let mut kept: Vec<RecordBatch> = Vec::new();
        while let Some(batch) = read.next().await {
            let batch = batch?;
            let batch =
                RecordBatch::try_new(filter.read_schema().clone(), batch.columns().to_vec())?;
            let mask = filter.evaluate(&batch)?;
            if all {
                bits.append_buffer(mask.values());
            } else {
                for (start, end) in mask.values().set_slices() {
                    // The chosen rows from the slice's first to its last.
                    let first = selected.row(taken + start as u64);
                    let last = selected.row(taken + end as u64 - 1);
                    for found in selected.within(first..last + 1) {
                        match matches.last_mut() {
                            Some(last) if last.end == found.start => last.end = found.end,
                            _ => matches.push(found),
                        }
                    }
                }
            }
            taken += batch.num_rows() as u64;
            if mask.true_count() > 0 && given.iter().any(Option::is_some) {
                let matching = arrow_select::filter::filter_record_batch(&batch, &mask)?;
                kept.push(filter.as_values(&matching)?);
            }
        }
        if taken != selected.len() {
            return Err(DataFusionError::Internal(format!(
                "a filter's read gave {taken} rows of {}",
                selected.len()
            )));
        }
        // The filter's columns' matching rows, as one batch.
        let kept = match kept.len() {
            0 => None,
            1 => kept.pop(),
            _ => Some(arrow_select::concat::concat_batches(&filter.schema, &kept)?),
        };
        let found = match all {
            true => Found::Mask {
                rows,
                mask: bits.finish(),
            },
            false => Found::Ranges(matches),
        };
        Ok(Evaluated { found, kept })
    }

    /// The matching rows of one block.
    async fn block(&self, rows: Range<u64>) -> DfResult<Vec<RecordBatch>> {
        let (given, others) = self.given_and_others();
        let evaluated = self.evaluate(rows.clone(), &given).await?;
        let Evaluated { found, kept } = evaluated;
        let matched = found.matched();
        self.matched
            .add(usize::try_from(matched).unwrap_or(usize::MAX));
        // Matches in every part a read could skip: the other columns are
        // read whole and filtered by the mask (a row selection of many
        // pieces would skip nothing, and cost more to cut).
        let dense = found.in_every_granule(rows.clone(), self.granule);
        dense_run(&self.dense_parts, dense, &rows, self.granule);
        if matched == 0 {
            return Ok(Vec::new());
        }
        // 2. The other columns, only where rows match.
        let mut out = Vec::new();
        if others.is_empty() {
            out.push(self.assemble(&given, kept.as_ref(), 0, &[], matched as usize)?);
            return Ok(out);
        }
        let (mask, selection) = match dense {
            true => (Some(found.into_mask(rows.clone())), None),
            false => (None, Some(found.into_ranges())),
        };
        // Categoricals as codes too: only the matching rows become values.
        let mut rest = (self.open)(self.names(&others), rows, selection, true)?;
        let (mut offset, mut read) = (0, 0);
        while let Some(batch) = rest.next().await {
            let mut batch = batch?;
            if let Some(mask) = &mask {
                let part = mask.slice(read, batch.num_rows());
                read += batch.num_rows();
                batch = arrow_select::filter::filter_record_batch(&batch, &part)?;
            }
            let n = batch.num_rows();
            out.push(self.assemble(&given, kept.as_ref(), offset, batch.columns(), n)?);
            offset += n;
        }
        if offset as u64 != matched {
            return Err(DataFusionError::Internal(format!(
                "late materialization read {offset} rows of the other columns for {matched} matches"
            )));
        }
        Ok(out)
    }

    /// The given columns of `n` matching rows, from `offset` on: each either
    /// a filter column (from `kept`) or the next of `rest`'s.
    fn assemble(
        &self,
        given: &[Option<usize>],
        kept: Option<&RecordBatch>,
        offset: usize,
        rest: &[ArrayRef],
        n: usize,
    ) -> DfResult<RecordBatch> {
        let mut rest_columns = rest.iter();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(given.len());
        for (g, field) in given.iter().zip(self.schema.fields()) {
            let column = match (g, kept) {
                (Some(i), Some(kept)) => kept.column(*i).slice(offset, n),
                _ => {
                    let column = rest_columns.next().ok_or_else(|| {
                        DataFusionError::Internal("late materialization lost a column".into())
                    })?;
                    // A categorical read as codes: its values, as the table
                    // gives them.
                    match column.data_type() == field.data_type() {
                        true => column.clone(),
                        false => arrow_cast::cast(column, field.data_type())?,
                    }
                }
            };
            columns.push(column);
        }
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?)
    }
}

/// Whether every `granule`-row part of `rows` (aligned on multiples of
/// `granule`) holds a row of `matches` (sorted, disjoint).
fn in_every_granule(matches: &[Range<u64>], rows: Range<u64>, granule: u64) -> bool {
    if rows.is_empty() {
        return true;
    }
    let granule = granule.max(1);
    let last = (rows.end - 1) / granule;
    let mut next = rows.start / granule;
    for m in matches.iter().filter(|m| !m.is_empty()) {
        if m.start / granule > next {
            return false;
        }
        next = next.max((m.end - 1) / granule + 1);
        if next > last {
            return true;
        }
    }
    false
}

/// `range` cut into blocks of whole `longest`-row chunks (from its start,
/// which is a chunk boundary): the first at least [`FIRST_BLOCK_ROWS`], each
/// next twice the last, up to at least [`MAX_BLOCK_ROWS`].
fn blocks(range: Range<u64>, longest: u64) -> Vec<Range<u64>> {
    let longest = longest.max(1);
    let most = MAX_BLOCK_ROWS.div_ceil(longest).saturating_mul(longest);
    let mut size = FIRST_BLOCK_ROWS.div_ceil(longest).saturating_mul(longest);
    let mut out = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let end = start.saturating_add(size).min(range.end);
        out.push(start..end);
        start = end;
        size = size.saturating_mul(2).min(most).max(size);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Filtered, Found, ScanFilter, blocks, in_every_granule, mask_of};
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use arrow_buffer::BooleanBuffer;
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::execution::context::ExecutionProps;
    use datafusion::prelude::{col, lit};
    use futures::{StreamExt, TryStreamExt};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    /// Blocks read by late materialization, and the rest of the range read
    /// as stored after dense blocks, give the same rows: those that match,
    /// whichever way they were read.
    #[test]
    fn late_and_stored_reads_keep_only_the_matches() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("y", DataType::Int64, false),
        ]));
        let rows = 1000_i64;
        type X = fn(i64) -> i64;
        let cases: [(&str, X); 2] = [
            // Matches every 5 rows of the first 600, then at 753 only.
            ("dense first", |i| if i < 600 { i % 5 } else { i % 250 }),
            // At 3, 253, 503 and 753: every block late, by row selection.
            ("sparse", |i| i % 250),
        ];
        for (what, x) in cases {
            let table = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from_iter_values((0..rows).map(x))) as ArrayRef,
                    Arc::new(Int64Array::from_iter_values(0..rows)),
                ],
            )
            .unwrap();
            // Chunks of 100 rows: the first block (600 rows) is 6 parts, too
            // few to read the rest as stored; of 10 rows, 52 parts: dense
            // first, the rest is read as stored.
            for chunk in [100_u64, 10] {
                let read_rows = Arc::new(AtomicU64::new(0));
                let open = chunked_open(table.clone(), chunk, read_rows.clone());
                // One conjunct; and two, the first read alone first (`y >= 0`
                // keeps every row, so the answer is the same).
                let filters = [
                    vec![col("x").eq(lit(3_i64))],
                    vec![col("x").eq(lit(3_i64)), col("y").gt_eq(lit(0_i64))],
                ];
                for exprs in filters {
                    let staged = exprs.len() > 1;
                    let filter = ScanFilter::new(&schema, exprs, &ExecutionProps::new())
                        .unwrap()
                        .unwrap();
                    assert_eq!(filter.stages().len(), usize::from(staged) * 2);
                    read_rows.store(0, Ordering::Relaxed);
                    let got = matching_y(&schema, open.clone(), filter, chunk, rows as u64);
                    let want: Vec<i64> = (0..rows).filter(|&i| x(i) == 3).collect();
                    assert_eq!(got, want, "{what}, chunks of {chunk}, staged: {staged}");
                    // The rows of `y` read (only the other column when the
                    // filter is one conjunct): every row once the rest is read
                    // as stored; else the dense first block whole and row 753.
                    if !staged && what == "dense first" {
                        let want = if chunk == 10 { 1000 } else { 601 };
                        assert_eq!(read_rows.load(Ordering::Relaxed), want, "chunks of {chunk}");
                    }
                }
            }
        }
    }

    /// Of several conjuncts, an equality is read alone first wherever the
    /// query wrote it (W11's `score < 0.01 AND n_genes = 4321`, as
    /// `zarrow.scan` handed Polars' conjuncts over, read `score` whole
    /// before); one that keeps rows in every part of `DENSE_PARTS` parts in a
    /// row gives way to the next; the answer is the filter's, whichever stage
    /// is read first.
    #[test]
    fn the_conjunct_likeliest_to_keep_few_rows_is_read_first() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("y", DataType::Int64, false),
        ]));
        let rows = 1000_i64;
        // `x` is 3 at rows 3, 253, 503 and 753.
        let table = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i % 250))) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(0..rows)),
            ],
        )
        .unwrap();
        let chunk = 100;
        let read_rows = Arc::new(AtomicU64::new(0));
        let open = chunked_open(table, chunk, read_rows.clone());
        let filter = |exprs| {
            ScanFilter::new(&schema, exprs, &ExecutionProps::new())
                .unwrap()
                .unwrap()
        };
        // The range written first, the equality read first: `y` is read at
        // the equality's 4 matches only (the range read first read `y`
        // whole, twice: 2000 rows).
        let range_first = filter(vec![col("y").gt_eq(lit(0_i64)), col("x").eq(lit(3_i64))]);
        let got = matching_y(&schema, open.clone(), range_first, chunk, rows as u64);
        assert_eq!(got, [3, 253, 503, 753]);
        assert_eq!(read_rows.swap(0, Ordering::Relaxed), 4);
        // Two equalities, in the query's order: `x IN (0..200)` keeps rows in
        // every chunk, so once it has in DENSE_PARTS chunks in a row (the
        // second block), `y = 753` is read first.
        let wide = col("x").in_list((0..200_i64).map(lit).collect(), false);
        let filtered = filtered_y(
            &schema,
            open,
            filter(vec![wide, col("y").eq(lit(753_i64))]),
            chunk,
        );
        assert_eq!(ys(filtered.clone(), rows as u64), [753]);
        assert_eq!(
            filtered.stage.load(Ordering::Relaxed),
            1,
            "moved on to `y = 753`"
        );
        // Chunks longer than a block (W11's): a block of one chunk holding a
        // match is no sign that the next chunks hold one: the equality stays
        // first.
        let (rows, chunk) = (20_000_i64, 1000_u64);
        let hits = [3, 2_500, 5_999, 9_000, 17_001];
        let table = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(
                    (0..rows).map(|i| if hits.contains(&i) { 3 } else { 0 }),
                )) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(0..rows)),
            ],
        )
        .unwrap();
        read_rows.store(0, Ordering::Relaxed);
        let open = chunked_open(table, chunk, read_rows.clone());
        let range_first = filter(vec![col("y").gt_eq(lit(0_i64)), col("x").eq(lit(3_i64))]);
        let filtered = filtered_y(&schema, open, range_first, chunk);
        assert_eq!(ys(filtered.clone(), rows as u64), hits);
        // The first block (one chunk holding a match) whole, the other
        // matches alone; with the equality given up, all 20,000.
        assert_eq!(read_rows.load(Ordering::Relaxed), 1000 + 4);
        assert_eq!(filtered.stage.load(Ordering::Relaxed), 0);
    }

    /// The `y` of the rows of `0..rows` that `filter` keeps, read by late
    /// materialization through `open` (chunks of `chunk` rows).
    fn matching_y(
        schema: &Arc<Schema>,
        open: Arc<super::OpenRead>,
        filter: ScanFilter,
        chunk: u64,
        rows: u64,
    ) -> Vec<i64> {
        ys(filtered_y(schema, open, filter, chunk), rows)
    }

    /// `filter` over `open`'s table (chunks of `chunk` rows), giving `y`.
    fn filtered_y(
        schema: &Arc<Schema>,
        open: Arc<super::OpenRead>,
        filter: ScanFilter,
        chunk: u64,
    ) -> Arc<Filtered> {
        Arc::new(Filtered {
            open,
            filter: Arc::new(filter),
            table: schema.clone(),
            columns: vec![1],
            schema: Arc::new(schema.project(&[1]).unwrap()),
            longest: chunk,
            granule: chunk,
            matched: Default::default(),
            dense_parts: AtomicU64::new(0),
            filter_granule: chunk,
            stage: AtomicUsize::new(0),
            stage_parts: AtomicU64::new(0),
        })
    }

    /// The `y` of the rows of `0..rows` that `filtered` keeps.
    fn ys(filtered: Arc<Filtered>, rows: u64) -> Vec<i64> {
        let got: Vec<RecordBatch> =
            futures::executor::block_on(filtered.stream(0..rows).try_collect()).unwrap();
        got.iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect()
    }

    /// A read of `table` in batches of `chunk` rows (its chunks), cut to the
    /// selection; `read_rows` counts the rows of `y` read.
    fn chunked_open(
        table: RecordBatch,
        chunk: u64,
        read_rows: Arc<AtomicU64>,
    ) -> Arc<super::OpenRead> {
        Arc::new(
            move |names: Vec<String>,
                  rows: std::ops::Range<u64>,
                  selection: Option<Vec<std::ops::Range<u64>>>,
                  _codes: bool|
                  -> datafusion::error::Result<super::Batches> {
                let indices: Vec<usize> = names
                    .iter()
                    .map(|n| table.schema().index_of(n).unwrap())
                    .collect();
                let projected = table.project(&indices).unwrap();
                let mut batches = Vec::new();
                for start in (rows.start..rows.end).step_by(chunk as usize) {
                    let end = (start + chunk).min(rows.end);
                    let pieces = match &selection {
                        Some(s) => s
                            .iter()
                            .filter_map(|r| {
                                let (a, b) = (r.start.max(start), r.end.min(end));
                                (a < b).then_some(a..b)
                            })
                            .collect(),
                        None => std::iter::once(start..end).collect::<Vec<_>>(),
                    };
                    for piece in pieces {
                        let (at, n) = (piece.start as usize, (piece.end - piece.start) as usize);
                        if names.iter().any(|n| n == "y") {
                            read_rows.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        batches.push(Ok(projected.slice(at, n)));
                    }
                }
                Ok(futures::stream::iter(batches).boxed())
            },
        )
    }

    /// Chunks longer than a block (W11's 100,000 rows): each block is one
    /// chunk, and one that holds a match is no sign that the next ones do.
    /// A sparse filter reads the other columns only in the chunks holding a
    /// match, not every chunk after the first few matches.
    #[test]
    fn one_chunk_blocks_with_a_match_keep_reading_late() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("y", DataType::Int64, false),
        ]));
        let (rows, chunk) = (2_000_000_i64, 100_000_u64);
        // Matches in chunks 0, 1, 2, 5, 9 and 17 of 20 (one row each).
        let hits = [7, 100_003, 200_500, 599_999, 900_000, 1_799_998];
        let table = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter_values(
                    (0..rows).map(|i| i64::from(!hits.contains(&i))),
                )) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(0..rows)),
            ],
        )
        .unwrap();
        let read_rows = Arc::new(AtomicU64::new(0));
        let filter = ScanFilter::new(
            &schema,
            vec![col("x").eq(lit(0_i64))],
            &ExecutionProps::new(),
        )
        .unwrap()
        .unwrap();
        let open = chunked_open(table, chunk, read_rows.clone());
        let got = matching_y(&schema, open, filter, chunk, rows as u64);
        assert_eq!(got, hits.to_vec());
        // A dense block reads its chunk whole (no selection of one row): at
        // most the six chunks holding a match.
        let read = read_rows.load(Ordering::Relaxed);
        assert!(read <= 6 * chunk, "{read} rows of y read for 6 matches");
    }

    /// A block's matches kept as a mask answer as the same matches kept as
    /// ranges: their count, whether every granule holds one, the ranges and
    /// the mask (random masks, some empty, some full).
    #[test]
    fn matches_as_a_mask_answer_as_matches_as_ranges() {
        use crate::datafusion::invariant::{Seeded, Source};
        let mut random = Seeded(0x9e37_79b9_7f4a_7c15);
        for case in 0..200 {
            let len = random.below(700);
            let start = random.below(1000) as u64;
            let density = random.below(5);
            let bits: Vec<bool> = (0..len)
                .map(|_| match density {
                    0 => false,
                    1 => true,
                    d => random.one_in(d * d * 7),
                })
                .collect();
            let rows = start..start + len as u64;
            let mask = BooleanBuffer::from(bits.clone());
            let ranges: Vec<std::ops::Range<u64>> = mask
                .set_slices()
                .map(|(a, b)| start + a as u64..start + b as u64)
                .collect();
            let as_mask = || Found::Mask {
                rows: rows.clone(),
                mask: mask.clone(),
            };
            let as_ranges = || Found::Ranges(ranges.clone());
            assert_eq!(as_mask().matched(), as_ranges().matched(), "case {case}");
            for granule in [1, 3, 10, 64, 100, 1000] {
                assert_eq!(
                    as_mask().in_every_granule(rows.clone(), granule),
                    as_ranges().in_every_granule(rows.clone(), granule),
                    "case {case}, granule {granule}"
                );
            }
            assert_eq!(as_mask().into_ranges(), ranges, "case {case}");
            assert_eq!(
                as_mask().into_mask(rows.clone()),
                as_ranges().into_mask(rows.clone()),
                "case {case}"
            );
        }
    }

    #[test]
    fn a_mask_of_matches_covers_the_rows() {
        let mask = mask_of(&[12..13, 20..22], 10..25);
        let set: Vec<usize> = (0..mask.len()).filter(|&i| mask.value(i)).collect();
        assert_eq!(set, vec![2, 10, 11]);
        assert_eq!(mask.len(), 15);
    }

    #[test]
    fn dense_matches_are_in_every_granule() {
        assert!(in_every_granule(&[0..1, 15..16, 29..30], 0..30, 10));
        assert!(!in_every_granule(&[0..1, 29..30], 0..30, 10));
        assert!(in_every_granule(std::slice::from_ref(&(5..25)), 5..25, 10));
        assert!(!in_every_granule(&[], 0..30, 10));
        assert!(!in_every_granule(&[0..1, 12..13], 0..30, 10));
        assert!(in_every_granule(std::slice::from_ref(&(3..4)), 0..30, 100));
    }

    /// Whole chunks, the first small, then doubling up to the most; every
    /// row of the range in exactly one block.
    #[test]
    fn blocks_grow_in_whole_chunks_and_cover_the_range() {
        let sizes = |range, longest| -> Vec<u64> {
            blocks(range, longest)
                .iter()
                .map(|b| b.end - b.start)
                .collect()
        };
        assert_eq!(sizes(0..100_000, 10), {
            let mut want = vec![520, 1040, 2080, 4160, 8320, 16640, 33280, 65540];
            while want.iter().sum::<u64>() > 100_000 {
                want.pop();
            }
            let covered: u64 = want.iter().sum();
            want.push(100_000 - covered);
            want
        });
        assert_eq!(
            sizes(200_000..450_000, 100_000),
            vec![100_000, 100_000, 50_000]
        );
        assert_eq!(sizes(0..0, 10), Vec::<u64>::new());
        for (range, longest) in [(0..12_345, 7), (1000..1001, 0), (0..70_000, 300)] {
            let b = blocks(range.clone(), longest);
            assert_eq!(b.first().map(|r| r.start), Some(range.start));
            assert_eq!(b.last().map(|r| r.end), Some(range.end));
            assert!(b.windows(2).all(|w| w[0].end == w[1].start));
            let longest = longest.max(1);
            assert!(
                b[..b.len() - 1]
                    .iter()
                    .all(|r| (r.end - r.start) % longest == 0)
            );
        }
    }
}
