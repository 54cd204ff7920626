//! [`Categories`]: a `categorical` element's categories, gathered from the
//! batches of a column as they come, and each batch's codes into them.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int32Array};
use arrow_cast::{CastOptions, cast_with_options};
use arrow_schema::DataType as ArrowType;

use crate::conventions::ConventionError;

/// A categorical column's categories, unified across batches: each distinct
/// value gets the next code the first time it is seen, so the first batch's
/// dictionary keeps its order (and its unused values); a batch with the first
/// batch's dictionary reuses its codes without hashing.
#[derive(Debug)]
pub(crate) struct Categories {
    /// The categories' type.
    value_type: ArrowType,
    /// The codes' type: Int32, or a stored element's own (anndata writes
    /// pandas' smallest).
    codes_type: ArrowType,
    /// The categories in code order, one slice per value.
    parts: Vec<ArrayRef>,
    /// Each category's bytes (the value's, or its fixed-width encoding) to code.
    codes: HashMap<Vec<u8>, i32>,
    /// The first batch's dictionary and its entries' codes.
    first: Option<(ArrayRef, Vec<i32>)>,
}

impl Categories {
    /// Whether categories can be of type `values`: a primitive, string or
    /// bytes type.
    pub(crate) fn hold(values: &ArrowType) -> bool {
        values.is_primitive()
            || matches!(
                values,
                ArrowType::Utf8
                    | ArrowType::LargeUtf8
                    | ArrowType::Utf8View
                    | ArrowType::Binary
                    | ArrowType::LargeBinary
                    | ArrowType::BinaryView
            )
    }

    /// No categories yet, of type `values`, with Int32 codes.
    ///
    /// # Errors
    /// Categories of a type other than a primitive, string or bytes one.
    pub(crate) fn new(values: &ArrowType) -> Result<Self, ConventionError> {
        if !Self::hold(values) {
            return Err(ConventionError::CategoryType(values.clone()));
        }
        Ok(Self {
            value_type: values.clone(),
            codes_type: ArrowType::Int32,
            parts: Vec::new(),
            codes: HashMap::new(),
            first: None,
        })
    }

    /// The categories stored already (`stored`, in code order), which new ones
    /// follow, and codes of the stored codes' type, `codes_type` (a signed
    /// integer type).
    ///
    /// # Errors
    /// As [`Categories::new`]; a stored category that is missing or appears
    /// twice.
    pub(crate) fn seeded(
        values: &ArrowType,
        codes_type: &ArrowType,
        stored: &ArrayRef,
    ) -> Result<Self, ConventionError> {
        let mut categories = Self::new(values)?;
        categories.codes_type = codes_type.clone();
        for i in 0..stored.len() {
            if stored.is_null(i) {
                return Err(ConventionError::MissingCategory);
            }
            let code = i32::try_from(i).map_err(|_| ConventionError::TooManyCategories)?;
            if categories
                .codes
                .insert(value_key(stored, i), code)
                .is_some()
            {
                return Err(ConventionError::DuplicateCategory);
            }
            categories.parts.push(stored.slice(i, 1));
        }
        Ok(categories)
    }

    /// The categories' type.
    pub(crate) fn value_type(&self) -> &ArrowType {
        &self.value_type
    }

    /// The codes' type.
    pub(crate) fn codes_type(&self) -> &ArrowType {
        &self.codes_type
    }

    /// The code of each entry of dictionary `values` (-1 for a null entry).
    fn entry_codes(&mut self, values: &ArrayRef) -> Result<Vec<i32>, ConventionError> {
        if let Some((first, codes)) = &self.first
            && first.to_data() == values.to_data()
        {
            return Ok(codes.clone());
        }
        let out = self.entry_codes_uncached(values)?;
        if self.first.is_none() {
            self.first = Some((values.clone(), out.clone()));
        }
        Ok(out)
    }

    /// The code of each of `values` (-1 for a null), new values taking the
    /// next codes.
    fn entry_codes_uncached(&mut self, values: &ArrayRef) -> Result<Vec<i32>, ConventionError> {
        if values.data_type() != &self.value_type {
            return Err(ConventionError::CategoriesChanged {
                expected: self.value_type.clone(),
                found: values.data_type().clone(),
            });
        }
        let mut out = Vec::with_capacity(values.len());
        for i in 0..values.len() {
            if values.is_null(i) {
                out.push(-1);
                continue;
            }
            let next =
                i32::try_from(self.parts.len()).map_err(|_| ConventionError::TooManyCategories)?;
            let code = *self.codes.entry(value_key(values, i)).or_insert(next);
            if code == next {
                self.parts.push(values.slice(i, 1));
            }
            out.push(code);
        }
        Ok(out)
    }

    /// The codes (of [`codes_type`](Self::codes_type); -1: missing) of one
    /// batch's dictionary array, or of its values one by one (an append of a
    /// column given as values).
    ///
    /// # Errors
    /// Categories of another type than the column's; more categories than the
    /// codes' type counts.
    pub(crate) fn codes(&mut self, array: &ArrayRef) -> Result<ArrayRef, ConventionError> {
        let Some(dict) = array.as_any_dictionary_opt() else {
            let codes = self.entry_codes_uncached(array)?;
            return self.narrow(Int32Array::from(codes));
        };
        let map = self.entry_codes(dict.values())?;
        let keys = widen_keys(dict.keys())?;
        let codes: Int32Array = keys
            .iter()
            .map(|k| Some(k.and_then(|k| map.get(k as usize).copied()).unwrap_or(-1)))
            .collect();
        self.narrow(codes)
    }

    /// Int32 `codes` (-1: missing) as the codes' type (a code that does not
    /// fit: too many categories for it).
    fn narrow(&self, codes: Int32Array) -> Result<ArrayRef, ConventionError> {
        if !matches!(
            self.codes_type,
            ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 | ArrowType::Int64
        ) {
            return Err(ConventionError::CodeType(self.codes_type.clone()));
        }
        let strict = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        cast_with_options(&codes, &self.codes_type, &strict)
            .map_err(|_| ConventionError::CodesOverflow(self.codes_type.clone()))
    }

    /// Every category, in code order.
    ///
    /// # Errors
    /// A column without categories.
    pub(crate) fn values(&self) -> Result<ArrayRef, ConventionError> {
        if self.parts.is_empty() {
            return Err(ConventionError::NoCategories);
        }
        let refs: Vec<&dyn Array> = self.parts.iter().map(AsRef::as_ref).collect();
        Ok(arrow_select::concat::concat(&refs)?)
    }
}

/// The dictionary's keys as UInt64 indices (nulls kept; a negative key is
/// a null too).
fn widen_keys(keys: &dyn Array) -> Result<arrow_array::UInt64Array, ConventionError> {
    if !keys.data_type().is_integer() {
        return Err(ConventionError::KeyType(keys.data_type().clone()));
    }
    Ok(arrow_cast::cast(keys, &ArrowType::UInt64)?
        .as_primitive::<arrow_array::types::UInt64Type>()
        .clone())
}

/// The bytes that identify value `i` of `values` (a byte or primitive array).
fn value_key(values: &ArrayRef, i: usize) -> Vec<u8> {
    if let Some(a) = values.as_string_opt::<i32>() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_string_opt::<i64>() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_string_view_opt() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_binary_opt::<i32>() {
        return a.value(i).to_vec();
    }
    if let Some(a) = values.as_binary_opt::<i64>() {
        return a.value(i).to_vec();
    }
    if let Some(a) = values.as_binary_view_opt() {
        return a.value(i).to_vec();
    }
    let data = values.to_data();
    let width = values.data_type().primitive_width().unwrap_or(0);
    let start = (data.offset() + i) * width;
    data.buffers()
        .first()
        .map(|b| b.as_slice()[start..start + width].to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{DictionaryArray, StringArray};

    use super::*;

    fn dictionary(keys: Vec<i32>, values: Vec<&str>) -> ArrayRef {
        let values: ArrayRef = Arc::new(StringArray::from(values));
        Arc::new(DictionaryArray::<Int32Type>::new(
            Int32Array::from(keys),
            values,
        ))
    }

    #[test]
    fn batches_share_one_set_of_codes() {
        let mut categories = Categories::new(&ArrowType::Utf8).unwrap();
        let codes = categories
            .codes(&dictionary(vec![0, 1, 0], vec!["a", "b"]))
            .unwrap();
        assert_eq!(codes.as_primitive::<Int32Type>().values(), &[0, 1, 0]);
        let codes = categories
            .codes(&dictionary(vec![0, 1], vec!["c", "a"]))
            .unwrap();
        assert_eq!(codes.as_primitive::<Int32Type>().values(), &[2, 0]);
        let values = categories.values().unwrap();
        let values: Vec<_> = values.as_string::<i32>().iter().flatten().collect();
        assert_eq!(values, ["a", "b", "c"]);
    }

    #[test]
    fn stored_codes_keep_their_type_until_it_is_full() {
        let stored: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..128).map(|i| i.to_string()),
        ));
        let mut categories =
            Categories::seeded(&ArrowType::Utf8, &ArrowType::Int8, &stored).unwrap();
        let known: ArrayRef = Arc::new(StringArray::from(vec!["5"]));
        let codes = categories.codes(&known).unwrap();
        assert_eq!(codes.data_type(), &ArrowType::Int8);
        let new: ArrayRef = Arc::new(StringArray::from(vec!["new"]));
        assert!(matches!(
            categories.codes(&new),
            Err(ConventionError::CodesOverflow(ArrowType::Int8))
        ));
    }
}
