//! What DataFusion learns about a scan only while the query runs: the filters
//! it derives at run time ("dynamic filters": a TopK's threshold for
//! `ORDER BY ... LIMIT`, a hash join's build side), pushed to the source by
//! `FileSource::try_pushdown_filters`, and the order a sort above wants
//! (`try_pushdown_sort`).
//!
//! A scan that has them cuts its kept rows at its chunks
//! ([`Dynamic::blocks`]), reads the chunks whose statistics hold the most
//! promising values first (for `ORDER BY day DESC`, the largest `day`s), and
//! before each block asks the filters as they stand then whether its chunks'
//! statistics can hold a match ([`Dynamic::keeps`]): a TopK's threshold,
//! tightened by the first block, prunes the rest.
//!
//! Nothing here changes an answer: DataFusion still applies every filter it
//! pushed (the scan answers `PushedDown::No`) and still sorts (the sort's
//! pushdown is `Inexact`); a block is skipped only where statistics say it
//! holds no row the filters keep, and a filter the statistics cannot decide
//! keeps it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::TreeNode;
use datafusion::error::Result as DfResult;
use datafusion::physical_expr::expressions::{CastExpr, Column, InListExpr, Literal, TryCastExpr};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};

use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;

use super::prune::{Pieces, Piecewise, ScanStatistics, float_nan, float_zero};
use super::snapshot::Snapshot;

/// The most chunks of a scan read as one run when no order is asked: a hash
/// join's filter is final before its probe side opens, so fewer, longer
/// reads serve it best.
const RUN_CHUNKS: usize = 16;

/// A scan's run-time filters and wanted order, and the statistics of the
/// columns they name (read once, by the first range opened).
#[derive(Debug)]
pub(crate) struct Dynamic {
    /// The filters pushed, in the terms of the scan's schema.
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// The column a sort above wants first, and whether descending.
    order: Option<(String, bool)>,
    /// The scan's schema (the projected table's).
    schema: SchemaRef,
    stats: tokio::sync::OnceCell<Arc<HashMap<String, Piecewise>>>,
}

impl Dynamic {
    /// Run-time filters `filters` and the order `order` over a scan of
    /// `schema`; `None` when there is nothing to prune by.
    ///
    /// `order` is the column a sort above wants first and whether it wants
    /// it descending ([`wanted_order`]).
    pub(crate) fn new(
        schema: SchemaRef,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        order: Option<(String, bool)>,
    ) -> Option<Arc<Self>> {
        let filters: Vec<_> = filters.into_iter().filter(|f| !misprunes(f)).collect();
        // An order helps only a filter that tightens as rows arrive.
        (!filters.is_empty()).then(|| {
            Arc::new(Self {
                filters,
                order,
                schema,
                stats: tokio::sync::OnceCell::new(),
            })
        })
    }

    /// The same filters and order with nothing read yet (for another run of
    /// the scan: its statistics read, and checked, again).
    pub(crate) fn unread(&self) -> Arc<Self> {
        Arc::new(Self {
            filters: self.filters.clone(),
            order: self.order.clone(),
            schema: self.schema.clone(),
            stats: tokio::sync::OnceCell::new(),
        })
    }

    /// The statistics of the columns the filters and the order name, in the
    /// scan's types (blocking reads, once).
    ///
    /// # Errors
    /// Reading the statistics.
    pub(crate) async fn prepare(
        &self,
        table: &Arc<Snapshot>,
        statistics: &Arc<ScanStatistics>,
    ) -> DfResult<Arc<HashMap<String, Piecewise>>> {
        self.stats
            .get_or_try_init(|| async {
                let mut named: HashSet<String> = self
                    .filters
                    .iter()
                    .flat_map(collect_columns)
                    .map(|c| c.name().to_string())
                    .collect();
                named.extend(self.order.iter().map(|(c, _)| c.clone()));
                let (snapshot, read) = (table.clone(), statistics.clone());
                let bounds = crate::store::run_blocking("read of chunk statistics", move || {
                    read.of(&snapshot, &named)
                })
                .await
                .map_err(super::df_err)??;
                let mut columns = HashMap::new();
                for (name, bounds) in bounds {
                    if let Ok(field) = self.schema.field_with_name(&name) {
                        columns.insert(name, Piecewise::new(bounds, field.data_type()));
                    }
                }
                Ok(Arc::new(columns))
            })
            .await
            .cloned()
    }

    /// `kept` cut into blocks of a chunk (of the ordered column, else of the
    /// finest chunked one), the most promising first when an order is wanted.
    pub(crate) fn blocks(
        &self,
        stats: &HashMap<String, Piecewise>,
        kept: Vec<Range<u64>>,
    ) -> VecDeque<Range<u64>> {
        // A coarser chunked column answers for a block inside one of its
        // chunks only (`keeps`).
        let ordered = self.order.as_ref().and_then(|(c, _)| stats.get(c));
        let Some(chunk_len) = ordered
            .map(Piecewise::chunk_len)
            .or_else(|| stats.values().map(Piecewise::chunk_len).min())
        else {
            return kept.into();
        };
        let mut blocks = Vec::new();
        for range in kept {
            // A hostile chunk length must not make a block per row.
            if (range.end - range.start) / chunk_len > super::prune::MAX_PIECES {
                blocks.push(range);
                continue;
            }
            let mut at = range.start;
            while at < range.end {
                let end = ((at / chunk_len + 1).saturating_mul(chunk_len)).min(range.end);
                blocks.push(at..end);
                at = end;
            }
        }
        if let Some((column, descending)) = &self.order
            && let Some(c) = stats.get(column)
        {
            // The blocks whose chunk holds the smallest minimum (ascending)
            // or the largest maximum (descending) first; blocks without
            // statistics last, in their order.
            let mut keyed: Vec<(Option<ScalarValue>, Range<u64>)> = blocks
                .into_iter()
                .map(|b| (c.bound_of(b.start, *descending), b))
                .collect();
            keyed.sort_by(|(a, _), (b, _)| match (a, b) {
                (Some(a), Some(b)) => {
                    let ord = a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal);
                    if *descending { ord.reverse() } else { ord }
                }
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            });
            return keyed.into_iter().map(|(_, b)| b).collect();
        }
        blocks.into()
    }

    /// The next rows to read from `blocks`, asked as the filters stand now:
    /// blocks they prune are dropped (their rows counted in the first
    /// value), and a kept one is joined by the kept blocks right after it,
    /// up to [`RUN_CHUNKS`] (none when an order is wanted: a TopK's
    /// threshold tightens after each).
    pub(crate) fn next_run(
        &self,
        stats: &HashMap<String, Piecewise>,
        blocks: &mut VecDeque<Range<u64>>,
    ) -> (u64, Option<Range<u64>>) {
        let mut pruned = 0;
        while let Some(block) = blocks.pop_front() {
            if !self.keeps(stats, &block) {
                pruned += block.end - block.start;
                continue;
            }
            let mut run = block;
            let most = if self.order.is_some() { 1 } else { RUN_CHUNKS };
            for _ in 1..most {
                match blocks.front() {
                    Some(next) if next.start == run.end && self.keeps(stats, next) => {
                        run.end = next.end;
                        blocks.pop_front();
                    }
                    _ => break,
                }
            }
            return (pruned, Some(run));
        }
        (pruned, None)
    }

    /// Whether `block` may hold a row the filters, as they stand now, keep.
    pub(crate) fn keeps(&self, stats: &HashMap<String, Piecewise>, block: &Range<u64>) -> bool {
        // A column chunked finer than the block would answer for the chunk
        // its start lies in only: each column is asked about the block only
        // where the block lies in one of its chunks.
        let columns: HashMap<&str, &Piecewise> = stats
            .iter()
            .filter(|(_, c)| c.within_one_chunk(block))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let pieces = [block.clone()];
        if columns.is_empty() {
            return true;
        }
        let statistics = Pieces {
            pieces: &pieces,
            columns: &columns,
        };
        for filter in &self.filters {
            let Ok(now) = snapshot_physical_expr(filter.clone()) else {
                continue;
            };
            if misprunes(&now) {
                continue;
            }
            // Unsure (a filter the statistics cannot evaluate, a panic in
            // DataFusion's pruning): the block is kept.
            let pruned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                PruningPredicateBuilder::new()
                    .with_file_schema(self.schema.clone())
                    .try_build(now)
                    .and_then(|p| p.prune(&statistics))
            }));
            if let Ok(Ok(keep)) = pruned
                && keep.first() == Some(&false)
            {
                return false;
            }
        }
        true
    }
}

/// The column `sort` wants first (and whether descending), when it is a
/// column of `schema`.
pub(crate) fn wanted_order(
    schema: &SchemaRef,
    sort: &[PhysicalSortExpr],
) -> Option<(String, bool)> {
    let first = sort.first()?;
    let column = first.expr.downcast_ref::<Column>()?;
    schema.field_with_name(column.name()).ok()?;
    Some((column.name().to_string(), first.options.descending))
}

/// Whether DataFusion's pruning may drop rows its evaluation of `filter`
/// keeps: the physical forms of the cases `prune::misprunes` leaves out
/// (an `IN` list holding a float zero, a NaN literal, a cast to a
/// timestamp).
fn misprunes(filter: &Arc<dyn PhysicalExpr>) -> bool {
    let zero = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<Literal>()
            .is_some_and(|l| float_zero(l.value()))
    };
    let timestamp = |t: &arrow_schema::DataType| matches!(t, arrow_schema::DataType::Timestamp(..));
    // A dynamic filter's expression changes: `keeps` judges each as it
    // stands when a block is asked.
    filter
        .exists(|e| {
            Ok(if let Some(list) = e.downcast_ref::<InListExpr>() {
                list.list().iter().any(zero)
            } else if let Some(l) = e.downcast_ref::<Literal>() {
                float_nan(l.value())
            } else if let Some(c) = e.downcast_ref::<CastExpr>() {
                timestamp(c.cast_type())
            } else if let Some(c) = e.downcast_ref::<TryCastExpr>() {
                timestamp(c.cast_type())
            } else {
                false
            })
        })
        .unwrap_or(true)
}
