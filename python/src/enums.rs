//! Ordered categoricals (anndata's `ordered: true`) as Polars `Enum`s. zarrow
//! reads one as an Arrow dictionary marked ordered, which Polars imports as a
//! `Categorical`: sorted and compared by its strings. An `Enum` of its
//! categories keeps their order, as pandas does; the Polars side casts to it
//! (`zarrow.scan`, `Reader.to_polars`) with the categories found here.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};

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

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// Each ordered dictionary column of `batch` with its categories, in order
/// (the dictionary's values: a reader's batches share them, so one batch
/// tells them all).
///
/// # Errors
/// A missing or repeated category (an `Enum` has neither).
pub(crate) fn ordered_categories(
    batch: &RecordBatch,
) -> Result<Vec<(String, Vec<String>)>, String> {
    let schema = batch.schema();
    ordered_columns(&schema)
        .into_iter()
        .map(|name| {
            let column = batch
                .column_by_name(&name)
                .ok_or_else(|| format!("ordered categorical {name:?}: not in the batch"))?;
            let values = column
                .as_any_dictionary_opt()
                .ok_or_else(|| format!("ordered categorical {name:?}: not a dictionary"))?
                .values();
            let strings: Vec<Option<&str>> = match values.data_type() {
                DataType::Utf8 => values.as_string::<i32>().iter().collect(),
                DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
                DataType::Utf8View => values.as_string_view().iter().collect(),
                other => {
                    return Err(format!(
                        "ordered categorical {name:?}: categories of type {other}"
                    ));
                }
            };
            let mut seen = HashSet::with_capacity(strings.len());
            let categories = strings
                .into_iter()
                .map(|category| {
                    let category = category.ok_or_else(|| {
                        format!("ordered categorical {name:?}: a missing category")
                    })?;
                    if !seen.insert(category) {
                        return Err(format!(
                            "ordered categorical {name:?}: the category {category:?} twice"
                        ));
                    }
                    Ok(category.to_string())
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok((name, categories))
        })
        .collect()
}
