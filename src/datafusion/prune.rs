//! Filters on sorted columns narrow the rows a scan reads.
//!
//! The rows outside the first and the last row that match a filter cannot
//! match it, whatever the column holds: narrowing to them is always sound. On a
//! column whose values never decrease, a range filter matches one run of rows,
//! and the narrowing is tight; so zarrow evaluates filters this way only on
//! such columns (declared, or xarray dimension coordinates), where reading the
//! column first pays off. The filters stay `Inexact`: DataFusion applies them.

use std::collections::BTreeMap;
use std::ops::Range;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::{Expr, utils::conjunction};
use futures::StreamExt;

use super::df_err;
use super::table::{Source, ZarrTable};
use crate::error::Error;

/// The one column `filter` reads, when the table may narrow rows by it.
fn pruning_column(table: &ZarrTable, filter: &Expr) -> Option<String> {
    if filter.is_volatile() || !matches!(table.source, Source::Rows(_)) {
        return None;
    }
    let columns = filter.column_refs();
    let mut columns = columns.iter();
    match (columns.next(), columns.next()) {
        (Some(c), None) if table.is_sorted(&c.name) => Some(c.name.clone()),
        _ => None,
    }
}

/// Whether a scan narrows its rows by `filter`.
pub(crate) fn prunes(table: &ZarrTable, filter: &Expr) -> bool {
    pruning_column(table, filter).is_some()
}

/// The rows outside of which no row matches `filters` (`None`: no filter
/// narrows). Each sorted column is read once, with all the filters on it.
pub(crate) async fn matching_rows(
    table: &ZarrTable,
    state: &dyn Session,
    filters: &[Expr],
) -> DfResult<Option<Range<u64>>> {
    let Source::Rows(builder) = &table.source else {
        return Ok(None);
    };
    let mut by_column: BTreeMap<String, Vec<Expr>> = BTreeMap::new();
    for filter in filters {
        if let Some(column) = pruning_column(table, filter) {
            by_column
                .entry(column)
                .or_default()
                .push(unnormalize_col(filter.clone()));
        }
    }
    let mut rows: Option<Range<u64>> = None;
    for (column, filters) in by_column {
        let Some(predicate) = conjunction(filters) else {
            continue;
        };
        let field = table.arrow_schema().field_with_name(&column)?.clone();
        let schema = DFSchema::try_from(arrow_schema::Schema::new(vec![field]))?;
        let predicate = state.create_physical_expr(predicate, &schema)?;
        let builder = builder.clone().with_projection([column]);
        let mut row = builder.rows().map_err(df_err)?.start;
        // Read on the caller's runtime, as the scan itself is.
        let mut batches = builder.into_stream();
        let (mut first, mut last) = (None, 0);
        while let Some(batch) = batches.next().await {
            let batch = batch.map_err(df_err)?;
            let n = batch.num_rows();
            let mask = predicate.evaluate(&batch)?.into_array(n)?;
            let mask = mask.as_boolean_opt().ok_or_else(|| {
                df_err(Error::Internal {
                    what: "a filter did not evaluate to booleans",
                })
            })?;
            let matches = |i: &usize| mask.is_valid(*i) && mask.value(*i);
            if let Some(i) = (0..n).find(matches) {
                first.get_or_insert(row + i as u64);
            }
            if let Some(i) = (0..n).rev().find(matches) {
                last = row + i as u64 + 1;
            }
            row += n as u64;
        }
        let found = first.map_or(0..0, |first| first..last);
        rows = Some(match rows {
            None => found,
            Some(r) => {
                let start = r.start.max(found.start);
                start..r.end.min(found.end).max(start)
            }
        });
    }
    Ok(rows)
}
