//! DuckDB's pushed filters as DataFusion expressions over the table's columns:
//! what the scan prunes chunks by (their statistics) and evaluates first
//! (late materialization), through zarrow's one pruning module.
//!
//! A filter is translated only where DataFusion's answer is DuckDB's:
//!
//! - **exact**: comparisons (`=`, `<>`, `<`, `<=`, `>`, `>=`), `IN`, `NOT IN`
//!   of a column with constants, for integer, boolean and string columns (a
//!   categorical's too); `IS [NOT] NULL` of any column; `AND`, `OR`, `NOT` of
//!   exact ones. The scan evaluates these; DuckDB is told so (it does not check
//!   them again).
//! - **a superset**: `BETWEEN` (the C API does not say whether a bound is
//!   inclusive: both are taken inclusive), and an `AND` with a part that is not
//!   translated (the other parts). The scan prunes and filters by the superset
//!   and DuckDB keeps its filter, which drops the rest.
//! - **not at all**: floating-point comparisons (DuckDB orders NaN above every
//!   number and treats -0.0 as 0.0; Arrow's kernels order by IEEE totalOrder),
//!   casts of a column, functions, times and decimals (not yet). DuckDB
//!   evaluates them; nothing is pruned by them.
//!
//! A superset is safe because the scan then keeps every row DuckDB's filter
//! keeps: pruning by statistics never drops a row that may match (the
//! invariant the pruning module is tested for).

use arrow_schema::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, col, lit};
use duckdb_neo::connection::Context;
use duckdb_neo::enums::LogicalTypeID;
use duckdb_neo::expression::{Expression, ExpressionType};
use duckdb_neo::logical_type::LogicalType;
use duckdb_neo::value::Value;
use duckdb_neo::{Parameters, Result};

/// How faithfully a translation follows DuckDB's filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fidelity {
    /// The same rows.
    Exact,
    /// At least DuckDB's rows.
    Superset,
}

/// A translated filter.
#[derive(Debug, Clone)]
pub(crate) struct Translated {
    pub expr: Expr,
    pub fidelity: Fidelity,
}

impl Translated {
    fn exact(expr: Expr) -> Self {
        Self {
            expr,
            fidelity: Fidelity::Exact,
        }
    }
}

/// The columns a filter's column references resolve to.
pub(crate) trait Columns {
    /// The table's column that the filter's reference `index` names.
    fn column(&self, index: usize) -> Result<usize>;
}

/// `expression` translated, or `None` where it cannot be (DuckDB keeps it).
pub(crate) fn translate(
    context: &Context,
    expression: &Expression<'_>,
    schema: &Schema,
    columns: &dyn Columns,
) -> Result<Option<Translated>> {
    use ExpressionType as T;
    let kind = expression.expression_type()?;
    Ok(match kind {
        T::ConjunctionAnd => {
            let mut parts = Vec::new();
            let mut fidelity = Fidelity::Exact;
            for child in expression.children()? {
                match translate(context, &child, schema, columns)? {
                    Some(t) => {
                        if t.fidelity == Fidelity::Superset {
                            fidelity = Fidelity::Superset;
                        }
                        parts.push(t.expr);
                    }
                    // Dropping a part of an AND keeps more rows.
                    None => fidelity = Fidelity::Superset,
                }
            }
            let expr = parts.into_iter().reduce(Expr::and);
            expr.map(|expr| Translated { expr, fidelity })
        }
        T::ConjunctionOr => {
            let mut parts = Vec::new();
            let mut fidelity = Fidelity::Exact;
            for child in expression.children()? {
                // An OR with an untranslated part could match anything.
                let Some(t) = translate(context, &child, schema, columns)? else {
                    return Ok(None);
                };
                if t.fidelity == Fidelity::Superset {
                    fidelity = Fidelity::Superset;
                }
                parts.push(t.expr);
            }
            let expr = parts.into_iter().reduce(Expr::or);
            expr.map(|expr| Translated { expr, fidelity })
        }
        T::OperatorNot => {
            let Some(child) = expression.children()?.into_iter().next() else {
                return Ok(None);
            };
            // The complement of a superset is a subset: only exact ones.
            match translate(context, &child, schema, columns)? {
                Some(t) if t.fidelity == Fidelity::Exact => Some(Translated::exact(!t.expr)),
                _ => None,
            }
        }
        T::OperatorIsNull | T::OperatorIsNotNull => {
            let Some(child) = expression.children()?.into_iter().next() else {
                return Ok(None);
            };
            let Some((name, _)) = column(&child, schema, columns)? else {
                return Ok(None);
            };
            let c = col_named(&name);
            Some(Translated::exact(if kind == T::OperatorIsNull {
                c.is_null()
            } else {
                c.is_not_null()
            }))
        }
        T::CompareEqual
        | T::CompareNotEqual
        | T::CompareLessThan
        | T::CompareLessThanOrEqualTo
        | T::CompareGreaterThan
        | T::CompareGreaterThanOrEqualTo => {
            let children = expression.children()?;
            let [left, right] = children.as_slice() else {
                return Ok(None);
            };
            // The column on either side; flipped to the left.
            let (c, v, flipped) = match (column(left, schema, columns)?, constant(context, right)?)
            {
                (Some(c), Some(v)) => (c, v, false),
                _ => match (column(right, schema, columns)?, constant(context, left)?) {
                    (Some(c), Some(v)) => (c, v, true),
                    _ => return Ok(None),
                },
            };
            let ((name, data_type), value) = (c, v);
            if !exactly_comparable(&data_type, &value) {
                return Ok(None);
            }
            // An ENUM constant orders by its category's position, not as a
            // string: only (in)equality is the string's.
            let ordering = !matches!(kind, T::CompareEqual | T::CompareNotEqual);
            if ordering && (is_enum(left)? || is_enum(right)?) {
                return Ok(None);
            }
            let (c, v) = (col_named(&name), lit(value));
            let expr = match (kind, flipped) {
                (T::CompareEqual, _) => c.eq(v),
                (T::CompareNotEqual, _) => c.not_eq(v),
                (T::CompareLessThan, false) | (T::CompareGreaterThan, true) => c.lt(v),
                (T::CompareLessThanOrEqualTo, false) | (T::CompareGreaterThanOrEqualTo, true) => {
                    c.lt_eq(v)
                }
                (T::CompareGreaterThan, false) | (T::CompareLessThan, true) => c.gt(v),
                _ => c.gt_eq(v),
            };
            Some(Translated::exact(expr))
        }
        T::CompareIn | T::CompareNotIn => {
            let children = expression.children()?;
            let Some((first, rest)) = children.split_first() else {
                return Ok(None);
            };
            let Some((name, data_type)) = column(first, schema, columns)? else {
                return Ok(None);
            };
            let mut list = Vec::with_capacity(rest.len());
            for child in rest {
                match constant(context, child)? {
                    Some(v) if exactly_comparable(&data_type, &v) => list.push(lit(v)),
                    _ => return Ok(None),
                }
            }
            Some(Translated::exact(
                col_named(&name).in_list(list, kind == T::CompareNotIn),
            ))
        }
        T::CompareBetween => {
            let children = expression.children()?;
            let [input, lower, upper] = children.as_slice() else {
                return Ok(None);
            };
            // An ENUM's range is by position (as an ordering comparison).
            if is_enum(input)? {
                return Ok(None);
            }
            let Some((name, data_type)) = column(input, schema, columns)? else {
                return Ok(None);
            };
            match (constant(context, lower)?, constant(context, upper)?) {
                (Some(lo), Some(hi))
                    if exactly_comparable(&data_type, &lo)
                        && exactly_comparable(&data_type, &hi) =>
                {
                    let c = col_named(&name);
                    Some(Translated {
                        expr: c.clone().gt_eq(lit(lo)).and(c.lt_eq(lit(hi))),
                        fidelity: Fidelity::Superset,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    })
}

/// A column by its exact name (no SQL identifier rules: any name works).
fn col_named(name: &str) -> Expr {
    col(datafusion::common::Column::new_unqualified(name))
}

/// Whether `expression` is of an `ENUM` type (an `ENUM` column or constant).
fn is_enum(expression: &Expression<'_>) -> Result<bool> {
    Ok(expression.return_type()?.id()? == LogicalTypeID::Enum)
}

/// The table column a reference names, with its type; or the column a cast
/// of a categorical to `VARCHAR` names (DuckDB compares an `ENUM` with a
/// string's order so: the category's string, exactly its value).
fn column(
    expression: &Expression<'_>,
    schema: &Schema,
    columns: &dyn Columns,
) -> Result<Option<(String, DataType)>> {
    let reference = match expression.expression_type()? {
        ExpressionType::BoundColumnRef => expression.reference_index()?,
        ExpressionType::OperatorCast
            if expression.return_type()?.id()? == LogicalTypeID::Varchar =>
        {
            match expression.children()?.into_iter().next() {
                Some(child)
                    if child.expression_type()? == ExpressionType::BoundColumnRef
                        && is_enum(&child)? =>
                {
                    child.reference_index()?
                }
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    let index = columns.column(reference)?;
    Ok(schema
        .fields()
        .get(index)
        .map(|f| (f.name().clone(), f.data_type().clone())))
}

/// A constant as DataFusion's, where its type is one the scan compares
/// exactly as DuckDB does. `NULL` is not translated.
fn constant(context: &Context, expression: &Expression<'_>) -> Result<Option<ScalarValue>> {
    if expression.expression_type()? != ExpressionType::ValueConstant {
        return Ok(None);
    }
    let value = expression.get_constant_value()?;
    if !value.is_null()? && value.logical_type()?.id()? == LogicalTypeID::Enum {
        // An ENUM constant as its category's string.
        let varchar =
            LogicalType::create_from_id(context, LogicalTypeID::Varchar, Parameters::None)?;
        return scalar(&value.cast(context, &varchar)?);
    }
    scalar(&value)
}

/// A DuckDB value as DataFusion's (integers, booleans, strings).
pub(crate) fn scalar(value: &Value) -> Result<Option<ScalarValue>> {
    use LogicalTypeID as L;
    if value.is_null()? {
        return Ok(None);
    }
    Ok(match value.logical_type()?.id()? {
        L::Boolean => value.get::<bool>()?.map(ScalarValue::from),
        L::TinyInt => value.get::<i8>()?.map(ScalarValue::from),
        L::SmallInt => value.get::<i16>()?.map(ScalarValue::from),
        L::Integer => value.get::<i32>()?.map(ScalarValue::from),
        L::BigInt => value.get::<i64>()?.map(ScalarValue::from),
        L::UTinyInt => value.get::<u8>()?.map(ScalarValue::from),
        L::USmallInt => value.get::<u16>()?.map(ScalarValue::from),
        L::UInteger => value.get::<u32>()?.map(ScalarValue::from),
        L::UBigInt => value.get::<u64>()?.map(ScalarValue::from),
        L::Varchar => value.get::<String>()?.map(|s| ScalarValue::Utf8(Some(s))),
        _ => None,
    })
}

/// Whether comparing a column of `data_type` with `value` in DataFusion gives
/// DuckDB's answer: integers with integers, booleans with booleans, strings
/// (and a categorical's values) with strings, byte by byte.
fn exactly_comparable(data_type: &DataType, value: &ScalarValue) -> bool {
    let column = match data_type {
        DataType::Dictionary(_, values) => values.as_ref(),
        other => other,
    };
    match value {
        ScalarValue::Utf8(_) => matches!(
            column,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ),
        ScalarValue::Boolean(_) => matches!(column, DataType::Boolean),
        v if v.data_type().is_integer() => column.is_integer(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use arrow_schema::DataType;
    use datafusion::common::ScalarValue;

    use super::exactly_comparable;

    #[test]
    fn only_exact_comparisons() {
        let utf8 = ScalarValue::Utf8(Some("NK".into()));
        assert!(exactly_comparable(&DataType::Utf8View, &utf8));
        assert!(exactly_comparable(
            &DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            &utf8
        ));
        assert!(exactly_comparable(
            &DataType::Int32,
            &ScalarValue::Int32(Some(3))
        ));
        assert!(exactly_comparable(
            &DataType::UInt64,
            &ScalarValue::UInt64(Some(3))
        ));
        // Floats are not compared here: NaN and -0.0 differ between the engines.
        assert!(!exactly_comparable(
            &DataType::Float64,
            &ScalarValue::Int64(Some(3))
        ));
        assert!(!exactly_comparable(
            &DataType::Float32,
            &ScalarValue::Float32(Some(0.5))
        ));
        assert!(!exactly_comparable(&DataType::Int32, &utf8));
        assert!(!exactly_comparable(
            &DataType::Utf8,
            &ScalarValue::Int64(Some(1))
        ));
        assert!(!exactly_comparable(
            &DataType::Boolean,
            &ScalarValue::Int8(Some(1))
        ));
    }
}
