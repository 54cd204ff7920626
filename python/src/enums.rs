//! Ordered categoricals (anndata's `ordered: true`) as Polars `Enum`s. zarrow
//! reads one as an Arrow dictionary marked ordered, which Polars imports as a
//! `Categorical`: sorted and compared by its strings. An `Enum` of its
//! categories keeps their order, as pandas does; the Polars side casts to it
//! (`zarrow.scan`, `Reader.to_polars`) with the categories read here, from the
//! categories array itself (so a read of no row types them the same).

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_schema::{DataType, Schema};
use zarrow::Store;
use zarrow::read::{ReadOptions, ZarrGroup};

/// The columns of `schema` that are ordered dictionaries of strings.
pub(crate) fn ordered_columns(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter(|f| {
            matches!(f.data_type(), DataType::Dictionary(_, values) if is_string(values))
                && f.dict_is_ordered() == Some(true)
        })
        .map(|f| f.name().clone())
        .collect()
}

/// Whether `t` is one of Arrow's three string layouts.
pub(crate) fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The values of a string array of any of the three layouts (`None`: not
/// strings); the categories both the prefilter and the Enums compare.
pub(crate) fn strings_of(values: &dyn Array) -> Option<Vec<Option<&str>>> {
    Some(match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
        DataType::Utf8View => values.as_string_view().iter().collect(),
        _ => return None,
    })
}

/// Each of `columns` (ordered categoricals of the group at the root of
/// `store`, named `name`) with its categories, in order.
///
/// # Errors
/// The categories' read; a missing or repeated category (an `Enum` has
/// neither); a column that is not a categorical of the group.
pub(crate) fn read_categories(
    store: Arc<dyn Store>,
    name: &str,
    options: ReadOptions,
    columns: &[String],
) -> Result<Vec<(String, Vec<String>)>, String> {
    let group = ZarrGroup::open_with(store, "", options)
        .and_then(|g| g.with_column_name(name))
        .map_err(|e| e.to_string())?;
    columns
        .iter()
        .map(|wanted| {
            let categories = group
                .columns()
                .iter()
                .find(|c| c.name() == wanted.as_str())
                .and_then(|c| c.categories())
                .ok_or_else(|| format!("ordered categorical {wanted:?}: no categories array"))?;
            let values = categories.read_all().map_err(|e| e.to_string())?;
            Ok((wanted.clone(), strings(wanted, values.as_ref())?))
        })
        .collect()
}

/// `values` (the categories of `name`) as distinct strings.
fn strings(name: &str, values: &dyn Array) -> Result<Vec<String>, String> {
    let strings = strings_of(values).ok_or_else(|| {
        format!(
            "ordered categorical {name:?}: categories of type {}",
            values.data_type()
        )
    })?;
    let mut seen = HashSet::with_capacity(strings.len());
    strings
        .into_iter()
        .map(|category| {
            let category = category
                .ok_or_else(|| format!("ordered categorical {name:?}: a missing category"))?;
            if !seen.insert(category) {
                return Err(format!(
                    "ordered categorical {name:?}: the category {category:?} twice"
                ));
            }
            Ok(category.to_string())
        })
        .collect()
}
