//! Chunk statistics narrow the rows a scan reads: DataFusion's
//! `PruningPredicate` over each filtered column's statistics (`zarrow.stats`)
//! keeps the row ranges whose chunks may hold a match. A stale or missing
//! statistic keeps its chunk: pruning never changes an answer.
//!
//! A scan prunes as it opens each row range ([`Pruning::kept`]): the
//! statistics are read once per scan on the machine that runs it (one GET and
//! one listing per filtered column), with its stores, never at planning.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, UInt32Array, UInt64Array};
use arrow_schema::DataType;
use datafusion::common::DFSchema;
use datafusion::common::{Column, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, utils::conjunction};
use datafusion::physical_expr::create_physical_expr;
use datafusion::physical_optimizer::pruning::{PruningPredicateBuilder, PruningStatistics};

use super::df_err;
use super::snapshot::{Snapshot, Source};
use crate::stats::Bounds;

/// The row ranges of `rows` that may hold a row matching `filters`, from the
/// chunk statistics of the columns the filters name (DataFusion's
/// `PruningPredicate` over them); `None` when no named column has
/// statistics. Columns chunked differently are cut at every chunk boundary of
/// any of them: each piece takes the statistics of the chunk of each column
/// it lies in.
fn by_statistics(
    table: &Snapshot,
    props: &ExecutionProps,
    filters: &[Expr],
    rows: Range<u64>,
    statistics: HashMap<String, Bounds>,
) -> DfResult<Option<Vec<Range<u64>>>> {
    let Some(predicate) = conjunction(pruning_filters(filters)) else {
        return Ok(None);
    };
    let schema = table.arrow_schema().clone();
    let mut columns = HashMap::new();
    for (name, bounds) in statistics {
        if (rows.end - rows.start) / bounds.chunk_len.max(1) > MAX_PIECES {
            // More pieces than pruning is worth (a store's file may say
            // anything): this column prunes nothing.
            continue;
        }
        let field = schema.field_with_name(&name)?;
        columns.insert(name, Piecewise::new(bounds, field.data_type()));
    }
    if columns.is_empty() || rows.is_empty() {
        return Ok(None);
    }
    let mut cuts = BTreeSet::from([rows.start, rows.end]);
    for column in columns.values() {
        let len = column.bounds.chunk_len;
        let mut at = (rows.start / len + 1).saturating_mul(len);
        while at < rows.end {
            cuts.insert(at);
            at = at.saturating_add(len);
        }
    }
    let cuts: Vec<u64> = cuts.into_iter().collect();
    let pieces: Vec<Range<u64>> = cuts.windows(2).map(|w| w[0]..w[1]).collect();
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    // Made here, not by the session: a session across an FFI boundary
    // (datafusion-python) makes expressions `PruningPredicate` cannot look
    // into. The filters are already typed by the planner.
    let physical = create_physical_expr(
        &predicate,
        &df_schema,
        props,
        &PhysicalPlanningContext::default(),
    )?;
    // A predicate statistics cannot decide keeps every piece.
    let Some(pruning) = PruningPredicateBuilder::new()
        .with_file_schema(schema)
        .build(physical)
    else {
        return Ok(None);
    };
    let keep = pruning.prune(&Pieces {
        pieces: &pieces,
        columns: &columns,
    })?;
    let mut kept: Vec<Range<u64>> = Vec::new();
    for (piece, keep) in pieces.into_iter().zip(keep) {
        if !keep {
            continue;
        }
        match kept.last_mut() {
            Some(last) if last.end == piece.start => last.end = piece.end,
            _ => kept.push(piece),
        }
    }
    Ok(Some(kept))
}

/// The most chunks of one column a scan cuts its rows at.
const MAX_PIECES: u64 = 1 << 20;

/// The filters statistics may prune by: the deterministic ones, their
/// columns unqualified.
fn pruning_filters(filters: &[Expr]) -> Vec<Expr> {
    filters
        .iter()
        .filter(|f| !f.is_volatile())
        .map(|f| unnormalize_col(f.clone()))
        .collect()
}

/// The columns `filters` name.
fn named_columns(filters: &[Expr]) -> HashSet<String> {
    pruning_filters(filters)
        .iter()
        .flat_map(|f| f.column_refs())
        .map(|c| c.name.clone())
        .collect()
}

/// The chunk statistics of the table's columns in `named` that have them
/// (blocking: a GET and a listing per column).
fn statistics(table: &Snapshot, named: &HashSet<String>) -> DfResult<HashMap<String, Bounds>> {
    let mut out = HashMap::new();
    let Source::Rows(builder) = &table.source else {
        return Ok(out);
    };
    if named.is_empty() {
        return Ok(out);
    }
    for column in builder.columns().map_err(df_err)? {
        if named.contains(column.name())
            && let Some(bounds) = column.statistics().map_err(df_err)?
        {
            out.insert(column.name().to_string(), bounds);
        }
    }
    Ok(out)
}

/// A column's statistics, its bounds in the table's type.
struct Piecewise {
    bounds: Bounds,
    min: Option<ArrayRef>,
    max: Option<ArrayRef>,
}

impl Piecewise {
    fn new(bounds: Bounds, data_type: &DataType) -> Self {
        // Bounds the table's type cannot hold prune nothing.
        let cast = |a: &ArrayRef| arrow_cast::cast(a, data_type).ok();
        Self {
            min: cast(&bounds.min),
            max: cast(&bounds.max),
            bounds,
        }
    }

    /// The statistics row of the chunk holding `row`.
    fn row_of(&self, row: u64) -> Option<usize> {
        self.bounds
            .chunks
            .binary_search(&(row / self.bounds.chunk_len))
            .ok()
    }
}

/// The pieces of a scan's rows as `PruningStatistics` containers.
struct Pieces<'a> {
    pieces: &'a [Range<u64>],
    columns: &'a HashMap<String, Piecewise>,
}

impl Pieces<'_> {
    /// `values` (a statistic per chunk row) taken for each piece.
    fn take(&self, column: &Piecewise, values: &ArrayRef) -> Option<ArrayRef> {
        let indices: UInt32Array = self
            .pieces
            .iter()
            .map(|p| column.row_of(p.start).and_then(|i| u32::try_from(i).ok()))
            .collect();
        arrow_select::take::take(values.as_ref(), &indices, None).ok()
    }
}

impl PruningStatistics for Pieces<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        let c = self.columns.get(&column.name)?;
        self.take(c, c.min.as_ref()?)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        let c = self.columns.get(&column.name)?;
        self.take(c, c.max.as_ref()?)
    }

    fn num_containers(&self) -> usize {
        self.pieces.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let c = self.columns.get(&column.name)?;
        // A whole chunk's count; a part of a chunk without nulls has none; of
        // other parts nothing is known.
        let counts: UInt64Array = self
            .pieces
            .iter()
            .map(|p| {
                let i = c.row_of(p.start)?;
                let nulls = c.bounds.nulls[i]?;
                let chunk = p.start / c.bounds.chunk_len * c.bounds.chunk_len;
                let whole = p.start == chunk && p.end - p.start == c.bounds.rows[i];
                (whole || nulls == 0).then_some(nulls)
            })
            .collect();
        Some(Arc::new(counts))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let rows: UInt64Array = self.pieces.iter().map(|p| Some(p.end - p.start)).collect();
        Some(Arc::new(rows))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// A scan's filters, and the statistics of the columns they name, read once
/// (by the first range opened) and shared by all its ranges.
#[derive(Debug)]
pub(crate) struct Pruning {
    filters: Vec<Expr>,
    loaded: tokio::sync::OnceCell<Arc<HashMap<String, Bounds>>>,
}

impl Pruning {
    /// Pruning by `filters` (the deterministic ones are used); `None` when
    /// none names a column.
    pub(crate) fn new(filters: &[Expr]) -> Option<Self> {
        let filters = pruning_filters(filters);
        if named_columns(&filters).is_empty() {
            return None;
        }
        Some(Self {
            filters,
            loaded: tokio::sync::OnceCell::new(),
        })
    }

    /// The filters, for a plan to carry.
    pub(crate) fn filters(&self) -> &[Expr] {
        &self.filters
    }

    /// The parts of `rows` whose chunks may hold a match (all of them where
    /// no statistic says otherwise).
    ///
    /// # Errors
    /// Reading the statistics (a store's error, a corrupt file), or a filter
    /// DataFusion cannot plan.
    pub(crate) async fn kept(
        &self,
        table: &Arc<Snapshot>,
        rows: Range<u64>,
    ) -> DfResult<Vec<Range<u64>>> {
        let statistics = self
            .loaded
            .get_or_try_init(|| async {
                let table = table.clone();
                let named = named_columns(&self.filters);
                tokio::task::spawn_blocking(move || statistics(&table, &named))
                    .await
                    .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?
                    .map(Arc::new)
            })
            .await?;
        let kept = by_statistics(
            table,
            &ExecutionProps::new(),
            &self.filters,
            rows.clone(),
            statistics.as_ref().clone(),
        )?;
        Ok(kept.unwrap_or_else(|| vec![rows]))
    }
}
