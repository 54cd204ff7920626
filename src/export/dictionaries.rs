//! One growing dictionary per column across an IPC output's batches.
//!
//! A reader may encode each batch's dictionary column on its own (a dictionary
//! column zarrow's writer recorded, read back batch by batch): each batch then
//! carries a dictionary of its own values. The IPC file format refuses a
//! dictionary that replaces an earlier one and takes one that extends it (a
//! delta). [`GrowingDictionaries`] moves each batch's keys into one dictionary
//! per column that only grows, so the writer (with
//! [`DictionaryHandling::Delta`](arrow_ipc::writer::DictionaryHandling::Delta))
//! sends the first dictionary, then only the values each batch adds.
//!
//! Batches that share their dictionary (anndata categoricals: one categories
//! array for every batch) pass through untouched.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array, make_array};
use arrow_buffer::ScalarBuffer;
use arrow_cast::{CastOptions, cast_with_options};
use arrow_data::ArrayData;
use arrow_schema::{ArrowError, DataType, SchemaRef};

/// The dictionary so far of each dictionary column (by index).
pub(crate) struct GrowingDictionaries {
    columns: Vec<Option<Growing>>,
}

/// One column's dictionary so far.
#[derive(Default)]
struct Growing {
    /// The values, in key order (`None` before the first batch).
    values: Option<ArrayRef>,
    /// Each value's key, by the value's bytes (`None`: a null value).
    keys: HashMap<Option<Vec<u8>>, u64>,
}

impl GrowingDictionaries {
    /// For the batches of `schema`.
    pub(crate) fn new(schema: &SchemaRef) -> Self {
        let columns = schema
            .fields()
            .iter()
            .map(|f| matches!(f.data_type(), DataType::Dictionary(..)).then(Growing::default))
            .collect();
        Self { columns }
    }

    /// `batch` with each dictionary column keyed into its column's dictionary.
    ///
    /// # Errors
    /// More distinct values across the batches than the key type numbers; a
    /// dictionary of values that have no bytes to tell them by (nested types).
    pub(crate) fn batch(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        if self.columns.iter().all(Option::is_none) {
            return Ok(batch);
        }
        let mut arrays = batch.columns().to_vec();
        for (array, growing) in arrays.iter_mut().zip(&mut self.columns) {
            if let Some(growing) = growing {
                *array = growing.rekey(array)?;
            }
        }
        RecordBatch::try_new(batch.schema(), arrays)
    }
}

impl Growing {
    /// `array` (a dictionary) with its keys into this column's dictionary, which
    /// takes any values it lacks.
    fn rekey(&mut self, array: &ArrayRef) -> Result<ArrayRef, ArrowError> {
        let Some(dictionary) = array.as_any_dictionary_opt() else {
            return Ok(array.clone());
        };
        let values = dictionary.values();
        match &self.values {
            // The first batch's dictionary is the column's.
            None => {
                for (i, key) in value_keys(values.as_ref())?.into_iter().enumerate() {
                    self.keys.entry(key).or_insert(i as u64);
                }
                self.values = Some(values.clone());
                return Ok(array.clone());
            }
            // The same dictionary as before: nothing to do.
            Some(so_far) if so_far.to_data().ptr_eq(&values.to_data()) => {
                return Ok(array.clone());
            }
            Some(_) => {}
        }
        let batch_keys = value_keys(values.as_ref())?;
        // Each of this batch's values' key in the column's dictionary; new ones
        // take the next keys, in the order they first appear.
        let mut added = Vec::new();
        let mut next = self.values.as_ref().map_or(0, |v| v.len()) as u64;
        let remap: Vec<u64> = batch_keys
            .into_iter()
            .enumerate()
            .map(|(i, key)| {
                *self.keys.entry(key).or_insert_with(|| {
                    added.push(i as u64);
                    next += 1;
                    next - 1
                })
            })
            .collect();
        if !added.is_empty() {
            let new = arrow_select::take::take(values.as_ref(), &UInt64Array::from(added), None)?;
            let so_far = self.values.take().unwrap_or_else(|| new.clone());
            self.values = Some(arrow_select::concat::concat(&[
                so_far.as_ref(),
                new.as_ref(),
            ])?);
        }
        let keys: ScalarBuffer<u64> = dictionary
            .normalized_keys()
            .into_iter()
            .map(|k| remap.get(k).copied().unwrap_or(0))
            .collect();
        let keys = UInt64Array::new(keys, dictionary.keys().logical_nulls());
        let DataType::Dictionary(key_type, _) = array.data_type() else {
            return Ok(array.clone());
        };
        // Not `safe`: a key past the key type is an error, never a null.
        let strict = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        let keys = cast_with_options(&keys, key_type, &strict).map_err(|_| {
            ArrowError::InvalidArgumentError(format!(
                "a dictionary column has more distinct values across its batches than {key_type} keys number"
            ))
        })?;
        let values = self.values.clone().unwrap_or_else(|| values.clone());
        let data: ArrayData = keys
            .to_data()
            .into_builder()
            .data_type(array.data_type().clone())
            .child_data(vec![values.to_data()])
            .build()?;
        Ok(make_array(data))
    }
}

/// Each value's bytes (`None` for a null value), by which equal values are told.
fn value_keys(values: &dyn Array) -> Result<Vec<Option<Vec<u8>>>, ArrowError> {
    let bytes: Vec<Option<&[u8]>> = match values.data_type() {
        DataType::Utf8 => values
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::LargeUtf8 => values
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::Utf8View => values
            .as_string_view()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::Binary => values.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => values.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => values.as_binary_view().iter().collect(),
        t => match t.primitive_width() {
            // A fixed-width value is its bytes in the values buffer.
            Some(width) => {
                let data = values.to_data();
                let buffer = data
                    .buffers()
                    .first()
                    .map(|b| b.as_slice())
                    .unwrap_or_default();
                return Ok((0..values.len())
                    .map(|i| {
                        let start = (data.offset() + i) * width;
                        values.is_valid(i).then(|| {
                            buffer
                                .get(start..start + width)
                                .unwrap_or_default()
                                .to_vec()
                        })
                    })
                    .collect());
            }
            None => {
                return Err(ArrowError::InvalidArgumentError(format!(
                    "dictionaries of {t} differ between batches, which an IPC file cannot hold"
                )));
            }
        },
    };
    Ok(bytes.into_iter().map(|b| b.map(<[u8]>::to_vec)).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int8Type;
    use arrow_array::{DictionaryArray, Int8Array, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn dictionary(keys: Vec<Option<i8>>, values: Vec<&str>) -> ArrayRef {
        Arc::new(
            DictionaryArray::<Int8Type>::try_new(
                Int8Array::from(keys),
                Arc::new(StringArray::from(values)),
            )
            .unwrap(),
        )
    }

    fn strings(array: &ArrayRef) -> Vec<Option<String>> {
        let cast = arrow_cast::cast(array, &DataType::Utf8).unwrap();
        cast.as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    /// Batches with dictionaries of their own come out keyed into one
    /// dictionary that only grows: each a prefix of the next, values unchanged.
    #[test]
    fn batches_share_one_growing_dictionary() {
        let t = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![Field::new("d", t, true)]));
        let mut growing = GrowingDictionaries::new(&schema);
        let batches = [
            dictionary(vec![Some(0), Some(1), Some(0)], vec!["a", "b"]),
            dictionary(vec![Some(0), None, Some(1), Some(2)], vec!["c", "a", "b"]),
            dictionary(vec![Some(0)], vec!["d"]),
        ];
        let mut previous: Option<ArrayRef> = None;
        for array in batches {
            let batch = RecordBatch::try_new(schema.clone(), vec![array.clone()]).unwrap();
            let out = growing.batch(batch).unwrap();
            let column = out.column(0);
            assert_eq!(strings(column), strings(&array));
            let values = column.as_any_dictionary().values().clone();
            if let Some(previous) = previous {
                assert_eq!(
                    values.slice(0, previous.len()).to_data(),
                    previous.to_data()
                );
            }
            previous = Some(values);
        }
        assert_eq!(
            strings(&previous.unwrap()),
            ["a", "b", "c", "d"].map(|s| Some(s.to_string()))
        );
    }

    /// Past what the key type numbers is an error, not a null.
    #[test]
    fn too_many_values_for_the_keys_is_an_error() {
        let t = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![Field::new("d", t, true)]));
        let mut growing = GrowingDictionaries::new(&schema);
        let mut failed = false;
        for n in 0..3 {
            let values: Vec<String> = (0..100).map(|i| format!("{n}-{i}")).collect();
            let keys: Vec<Option<i8>> = (0..100).map(Some).collect();
            let array = dictionary(keys, values.iter().map(String::as_str).collect());
            let batch = RecordBatch::try_new(schema.clone(), vec![array]).unwrap();
            failed |= growing.batch(batch).is_err();
        }
        assert!(failed);
    }
}
