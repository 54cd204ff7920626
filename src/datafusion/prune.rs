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

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array as _, ArrayRef, BooleanArray, UInt32Array, UInt64Array};
use arrow_schema::DataType;
use datafusion::common::{Column, ScalarValue};
use datafusion::error::Result as DfResult;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::{Expr, utils::conjunction};
use datafusion::physical_optimizer::pruning::{
    PruningPredicate, PruningPredicateBuilder, PruningStatistics,
};

use super::df_err;
use super::filter::plan_locally;
use super::snapshot::Snapshot;
use crate::read::TableSource;
use crate::stats::Bounds;

/// What a scan prunes with, made once from the statistics it read: each
/// filtered column's statistics in the table's types, and the filters as a
/// `PruningPredicate` over them (`None`: no column has statistics, or
/// statistics cannot decide the filters).
#[derive(Debug)]
struct Prepared {
    columns: HashMap<String, Piecewise>,
    pruning: Option<Arc<PruningPredicate>>,
}

impl Prepared {
    fn new(
        schema: &arrow_schema::SchemaRef,
        filters: &[Expr],
        statistics: HashMap<String, Bounds>,
    ) -> DfResult<Self> {
        let mut columns = HashMap::new();
        for (name, bounds) in statistics {
            let field = schema.field_with_name(&name)?;
            columns.insert(name, Piecewise::new(bounds, field.data_type()));
        }
        let predicate = conjunction(filters.to_vec()).filter(|_| !columns.is_empty());
        let pruning = match predicate {
            Some(predicate) => {
                let physical = plan_locally(&predicate, schema, &ExecutionProps::new())?;
                // Pruning is only ever a saving: a panic inside DataFusion's
                // pruning (DataFusion 55 panics formatting a Date64 literal
                // out of chrono's range) prunes nothing instead of failing
                // the query.
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    PruningPredicateBuilder::new()
                        .with_file_schema(schema.clone())
                        .build(physical)
                }))
                .ok()
                .flatten()
            }
            None => None,
        };
        Ok(Self { columns, pruning })
    }

    /// The row ranges of `rows` that may hold a match (`None`: statistics
    /// narrow nothing). Columns chunked differently are cut at every chunk
    /// boundary of any of them: each piece takes the statistics of the chunk
    /// of each column it lies in.
    fn kept(&self, rows: Range<u64>) -> DfResult<Option<Vec<Range<u64>>>> {
        let Some(pruning) = &self.pruning else {
            return Ok(None);
        };
        // More pieces than pruning is worth (a store's file may say
        // anything): such a column prunes nothing here.
        let columns: HashMap<&str, &Piecewise> = self
            .columns
            .iter()
            .filter(|(_, c)| (rows.end - rows.start) / c.bounds.chunk_len.max(1) <= MAX_PIECES)
            .map(|(name, c)| (name.as_str(), c))
            .collect();
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
        // A predicate the statistics cannot evaluate (a cast of a bound
        // that overflows, say) prunes nothing: unsure, every piece is kept.
        let pieces_ = Pieces {
            pieces: &pieces,
            columns: &columns,
        };
        let pruned =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pruning.prune(&pieces_)));
        let Ok(Ok(keep)) = pruned else {
            return Ok(None);
        };
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
}

/// The most chunks of one column a scan cuts its rows at.
pub(super) const MAX_PIECES: u64 = 1 << 20;

/// The filters statistics may prune by: the deterministic ones, their
/// columns unqualified.
/// A conjunct left out prunes less, never wrongly: those where DataFusion's
/// pruning and its evaluation part ways are left out ([`misprunes`]).
fn pruning_filters(filters: &[Expr]) -> Vec<Expr> {
    filters
        .iter()
        .filter(|f| !f.is_volatile() && !misprunes(f))
        .map(|f| unnormalize_col(f.clone()))
        .collect()
}

/// Whether DataFusion 55's pruning may drop rows its own evaluation of
/// `filter` keeps (found by the pruning invariant's property test):
/// - an `IN` list holding a float zero: the list matches floats by their
///   bits (`0.0 NOT IN (-0.0)` is true), the pruning rewrites it into IEEE
///   comparisons (`0.0 <> -0.0` is false);
/// - a NaN literal: engines order NaN differently (`x < -NaN` holds for
///   every number where NaN is the greatest value, for none in totalOrder);
/// - a cast to a timestamp (between one with a time zone and one without,
///   the pruning moves it onto the literal, where it shifts the value by the
///   zone's offset, and may overflow, another way than on the rows).
fn misprunes(filter: &Expr) -> bool {
    use datafusion::common::tree_node::TreeNode;
    use datafusion::logical_expr::{Cast, TryCast};
    let zero = |e: &Expr| matches!(e, Expr::Literal(v, _) if float_zero(v));
    filter
        .exists(|e| {
            Ok(match e {
                Expr::InList(list) => list.list.iter().any(zero),
                Expr::Literal(v, _) => float_nan(v),
                // The filters' columns carry no types here: every cast to a
                // timestamp is left out.
                Expr::Cast(Cast { field, .. }) | Expr::TryCast(TryCast { field, .. }) => {
                    matches!(field.data_type(), DataType::Timestamp(..))
                }
                _ => false,
            })
        })
        .unwrap_or(true)
}

/// Whether `v` is a float zero of either sign.
pub(super) fn float_zero(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Float16(Some(f)) => f.to_f32() == 0.0,
        ScalarValue::Float32(Some(f)) => *f == 0.0,
        ScalarValue::Float64(Some(f)) => *f == 0.0,
        _ => false,
    }
}

/// Whether `v` is a float NaN.
pub(super) fn float_nan(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Float16(Some(f)) => f.is_nan(),
        ScalarValue::Float32(Some(f)) => f.is_nan(),
        ScalarValue::Float64(Some(f)) => f.is_nan(),
        _ => false,
    }
}

/// The columns `filters` name.
fn named_columns(filters: &[Expr]) -> HashSet<String> {
    pruning_filters(filters)
        .iter()
        .flat_map(|f| f.column_refs())
        .map(|c| c.name.clone())
        .collect()
}

/// The chunk statistics one scan reads: each column's at most once, shared by
/// its pruning by the plan's filters and by its run-time filters (each read
/// checks the statistics' freshness: a listing of the column's chunks).
#[derive(Debug, Default)]
pub(crate) struct ScanStatistics(std::sync::Mutex<HashMap<String, Option<Bounds>>>);

impl ScanStatistics {
    /// The statistics of the table's columns in `named` that have them
    /// (blocking: a GET and a listing per column not read before).
    pub(super) fn of(
        &self,
        table: &Snapshot,
        named: &HashSet<String>,
    ) -> DfResult<HashMap<String, Bounds>> {
        let mut out = HashMap::new();
        let TableSource::Rows(builder) = &table.source else {
            return Ok(out);
        };
        if named.is_empty() {
            return Ok(out);
        }
        for column in builder.columns().map_err(df_err)? {
            if !named.contains(column.name()) {
                continue;
            }
            let known = self.lock().get(column.name()).cloned();
            let bounds = match known {
                Some(bounds) => bounds,
                None => {
                    let bounds = column.statistics().map_err(df_err)?;
                    self.lock()
                        .insert(column.name().to_string(), bounds.clone());
                    bounds
                }
            };
            if let Some(bounds) = bounds {
                out.insert(column.name().to_string(), bounds);
            }
        }
        Ok(out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Bounds>>> {
        // A panic elsewhere leaves the map whole (inserts are single calls).
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A column's statistics, its bounds in the table's type.
#[derive(Debug)]
pub(super) struct Piecewise {
    bounds: Bounds,
    min: Option<ArrayRef>,
    max: Option<ArrayRef>,
}

impl Piecewise {
    pub(super) fn new(bounds: Bounds, data_type: &DataType) -> Self {
        // Bounds the table's type cannot hold prune nothing.
        let cast = |a: &ArrayRef| arrow_cast::cast(a, data_type).ok();
        Self {
            min: cast(&bounds.min),
            max: cast(&bounds.max),
            bounds,
        }
    }

    /// The set values (a categorical's codes) that stand for `values`:
    /// `None` where a value or the categories are of a type the sets cannot
    /// answer for exactly. A categorical's null code (-1) is never among
    /// them. Float categories answer nothing here: engines differ on
    /// whether -0.0 equals 0.0 and NaN equals NaN (their bounds still prune).
    #[allow(clippy::mutable_key_type)] // DataFusion's signature: ScalarValue keys
    fn wanted(&self, values: &HashSet<ScalarValue>) -> Option<HashSet<i64>> {
        // Integers only: a cast from a float would round.
        let integer = |value: &ScalarValue| -> Option<i64> {
            if !value.data_type().is_integer() {
                return None;
            }
            match value.cast_to(&DataType::Int64).ok()? {
                ScalarValue::Int64(Some(v)) => Some(v),
                _ => None,
            }
        };
        let Some(categories) = &self.bounds.categories else {
            return values
                .iter()
                .filter(|v| !v.is_null())
                .map(integer)
                .collect();
        };
        let codes_of = |hit: &dyn Fn(usize) -> bool| -> Vec<i64> {
            (0..categories.len())
                .filter(|&i| categories.is_valid(i) && hit(i))
                .map(|i| i as i64)
                .collect()
        };
        let mut wanted = HashSet::new();
        for value in values.iter().filter(|v| !v.is_null()) {
            match categories.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                    let text = value.try_as_str()??;
                    let categories = arrow_cast::cast(categories, &DataType::Utf8).ok()?;
                    let categories = categories.as_string::<i32>();
                    wanted.extend(codes_of(&|i| categories.value(i) == text));
                }
                t if t.is_integer() => {
                    let v = integer(value)?;
                    let categories = arrow_cast::cast(categories, &DataType::Int64).ok()?;
                    let categories = categories.as_primitive::<Int64Type>();
                    wanted.extend(codes_of(&|i| categories.value(i) == v));
                }
                DataType::Boolean => {
                    let ScalarValue::Boolean(Some(v)) = value else {
                        return None;
                    };
                    let categories = categories.as_boolean();
                    wanted.extend(codes_of(&|i| categories.value(i) == *v));
                }
                _ => return None,
            }
        }
        Some(wanted)
    }

    /// The rows of each of its chunks (at least 1).
    pub(super) fn chunk_len(&self) -> u64 {
        self.bounds.chunk_len.max(1)
    }

    /// Whether `rows` lie inside one of its chunks.
    pub(super) fn within_one_chunk(&self, rows: &Range<u64>) -> bool {
        let len = self.chunk_len();
        rows.is_empty() || rows.start / len == (rows.end - 1) / len
    }

    /// The smallest value (`max`: the largest) of the chunk holding `row`,
    /// where its statistics say.
    pub(super) fn bound_of(&self, row: u64, max: bool) -> Option<ScalarValue> {
        let values = if max {
            self.max.as_ref()
        } else {
            self.min.as_ref()
        }?;
        let i = self.row_of(row)?;
        if values.is_null(i) {
            return None;
        }
        ScalarValue::try_from_array(values.as_ref(), i).ok()
    }

    /// The statistics row of the chunk holding `row`.
    fn row_of(&self, row: u64) -> Option<usize> {
        self.bounds
            .chunks
            .binary_search(&(row / self.bounds.chunk_len))
            .ok()
    }
}

/// The pieces of a scan's rows as `PruningStatistics` containers: each lies
/// inside one chunk of each column.
pub(super) struct Pieces<'a> {
    pub(super) pieces: &'a [Range<u64>],
    pub(super) columns: &'a HashMap<&'a str, &'a Piecewise>,
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
        let c = self.columns.get(column.name.as_str())?;
        self.take(c, c.min.as_ref()?)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        let c = self.columns.get(column.name.as_str())?;
        self.take(c, c.max.as_ref()?)
    }

    fn num_containers(&self) -> usize {
        self.pieces.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let c = self.columns.get(column.name.as_str())?;
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

    /// From the sets of values present (small integers, a categorical's
    /// codes): `false` where a piece's chunk holds none of `values`, `true`
    /// where it holds only `values` (and no null), else unknown.
    #[allow(clippy::mutable_key_type)] // DataFusion's signature: ScalarValue keys
    fn contained(&self, column: &Column, values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        let c = self.columns.get(column.name.as_str())?;
        let wanted = c.wanted(values)?;
        Some(
            self.pieces
                .iter()
                .map(|p| {
                    let present = c.bounds.present(c.row_of(p.start)?)?;
                    let (mut any, mut only) = (false, true);
                    for code in present {
                        let hit = wanted.contains(&code);
                        any |= hit;
                        only &= hit;
                    }
                    if !any {
                        Some(false)
                    } else {
                        only.then_some(true)
                    }
                })
                .collect(),
        )
    }
}

/// A scan's filters, and the statistics of the columns they name, read once
/// (by the first range opened) and made ready once for all its ranges.
#[derive(Debug)]
pub(crate) struct Pruning {
    filters: Vec<Expr>,
    prepared: tokio::sync::OnceCell<Arc<Prepared>>,
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
            prepared: tokio::sync::OnceCell::new(),
        })
    }

    /// The same filters with nothing read yet (for another run of the scan:
    /// its statistics read, and checked, again).
    pub(crate) fn unread(&self) -> Self {
        Self {
            filters: self.filters.clone(),
            prepared: tokio::sync::OnceCell::new(),
        }
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
        statistics: &Arc<ScanStatistics>,
        rows: Range<u64>,
    ) -> DfResult<Vec<Range<u64>>> {
        let prepared = self
            .prepared
            .get_or_try_init(|| async {
                let (snapshot, read) = (table.clone(), statistics.clone());
                let named = named_columns(&self.filters);
                let statistics =
                    crate::store::run_blocking("read of chunk statistics", move || {
                        read.of(&snapshot, &named)
                    })
                    .await
                    .map_err(super::df_err)??;
                Prepared::new(table.arrow_schema(), &self.filters, statistics).map(Arc::new)
            })
            .await?;
        Ok(prepared.kept(rows.clone())?.unwrap_or_else(|| vec![rows]))
    }
}

/// The pruning invariant's check, for its property test and fuzz target
/// ([`super::invariant`]): the chunks of a column of `chunk_len` rows that
/// `filters` keep, from `statistics` in the terms of `schema`.
pub(crate) fn kept_chunks(
    schema: &arrow_schema::SchemaRef,
    filters: &[Expr],
    column: &str,
    bounds: Bounds,
    rows: u64,
) -> DfResult<Option<Vec<Range<u64>>>> {
    let filters = pruning_filters(filters);
    let prepared = Prepared::new(
        schema,
        &filters,
        HashMap::from([(column.to_string(), bounds)]),
    )?;
    prepared.kept(0..rows)
}
