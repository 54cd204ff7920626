//! The Polars scan's prefilter on categoricals: a row whose categorical
//! column holds none of the categories a filter compares it with cannot match,
//! and is dropped before it crosses to Python. The categories are compared
//! once (per dictionary), then each row's code is looked up. The scan still
//! applies its whole filter to the rows that remain: this only narrows them.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchReader};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{ArrowError, DataType, SchemaRef};

/// Rows of `inner` whose every listed categorical column holds one of its
/// listed categories.
pub(crate) struct KeepCategories {
    inner: Box<dyn RecordBatchReader + Send>,
    columns: Vec<Kept>,
}

struct Kept {
    index: usize,
    categories: HashSet<String>,
    /// The last dictionary seen, and which of its entries are kept: a reader's
    /// batches share their categories, so they are compared once.
    seen: Option<(ArrayRef, Vec<bool>)>,
}

impl KeepCategories {
    /// # Errors
    /// A column that is not in the schema, or not a dictionary of strings.
    pub(crate) fn new(
        inner: Box<dyn RecordBatchReader + Send>,
        keep: Vec<(String, Vec<String>)>,
    ) -> Result<Self, String> {
        let schema = inner.schema();
        let mut columns = Vec::with_capacity(keep.len());
        for (name, categories) in keep {
            let index = schema
                .index_of(&name)
                .map_err(|_| format!("keep: {name:?} is not a column"))?;
            match schema.field(index).data_type() {
                DataType::Dictionary(_, values)
                    if matches!(
                        values.as_ref(),
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                    ) => {}
                other => {
                    return Err(format!(
                        "keep: {name:?} is {other}, not a dictionary of strings"
                    ));
                }
            }
            columns.push(Kept {
                index,
                categories: categories.into_iter().collect(),
                seen: None,
            });
        }
        Ok(Self { inner, columns })
    }

    fn keep(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mut mask: Option<BooleanBuffer> = None;
        for kept in &mut self.columns {
            let column = batch.column(kept.index);
            let Some(dictionary) = column.as_any_dictionary_opt() else {
                return Err(ArrowError::SchemaError(format!(
                    "keep: column {} is not a dictionary",
                    kept.index
                )));
            };
            let values = dictionary.values();
            if !kept
                .seen
                .as_ref()
                .is_some_and(|(seen, _)| std::sync::Arc::ptr_eq(seen, values))
            {
                let allowed = kept_entries(values.as_ref(), &kept.categories)?;
                kept.seen = Some((values.clone(), allowed));
            }
            let allowed = kept.seen.as_ref().map(|(_, a)| a.as_slice()).unwrap_or(&[]);
            // Codes in 0..values.len() for every row, null or not.
            let keys = dictionary.normalized_keys();
            let nulls = column.logical_nulls();
            let rows = BooleanBuffer::collect_bool(keys.len(), |i| {
                nulls.as_ref().is_none_or(|n| n.is_valid(i)) && allowed[keys[i]]
            });
            mask = Some(match mask {
                None => rows,
                Some(before) => &before & &rows,
            });
        }
        match mask {
            None => Ok(batch),
            Some(mask) => {
                arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(mask, None))
            }
        }
    }
}

/// Which entries of a dictionary's `values` are among `categories`.
fn kept_entries(values: &dyn Array, categories: &HashSet<String>) -> Result<Vec<bool>, ArrowError> {
    let kept = |v: Option<&str>| v.is_some_and(|v| categories.contains(v));
    Ok(match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().map(kept).collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().map(kept).collect(),
        DataType::Utf8View => values.as_string_view().iter().map(kept).collect(),
        other => {
            return Err(ArrowError::SchemaError(format!(
                "keep: categories of type {other}"
            )));
        }
    })
}

impl Iterator for KeepCategories {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let batch = match self.inner.next()? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e)),
            };
            match self.keep(batch) {
                // Nothing kept: no batch crosses.
                Ok(kept) if kept.num_rows() == 0 => continue,
                other => return Some(other),
            }
        }
    }
}

impl RecordBatchReader for KeepCategories {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
