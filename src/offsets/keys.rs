//! Untrusted dictionary keys: anndata's categorical codes (pandas' `-1` for a
//! missing category) become the keys of an Arrow `DictionaryArray`.
//!
//! The codes are checked in one pass for their smallest and largest value (a
//! loop the compiler vectorises), rather than code by code with the null mask
//! as arrow-rs' checked constructor does; a null mask is built only when a `-1`
//! is present. Then the unchecked constructor is called, its one requirement
//! (every valid key indexes the values) proven by that check.

use std::sync::Arc;

use arrow_array::types::ArrowDictionaryKeyType;
use arrow_array::{Array, ArrayRef, DictionaryArray, PrimitiveArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};

use crate::error::ConventionError;

/// `codes` as keys into `categories` entries: `-1` a null, every other code
/// checked to lie in `0..categories`.
///
/// # Errors
/// The first code found below -1 or past the last category.
pub(crate) fn codes_as_keys<K>(
    codes: &PrimitiveArray<K>,
    categories: usize,
) -> Result<PrimitiveArray<K>, ConventionError>
where
    K: ArrowDictionaryKeyType,
    K::Native: Into<i64> + Ord,
{
    let values = codes.values();
    let n = i64::try_from(categories).unwrap_or(i64::MAX);
    let Some((low, high)) = bounds(values) else {
        return Ok(codes.clone());
    };
    let (low, high): (i64, i64) = (low.into(), high.into());
    if low < -1 || high >= n {
        let bad = values
            .iter()
            .map(|&c| c.into())
            .find(|&c: &i64| c < -1 || c >= n)
            .unwrap_or(low);
        return Err(ConventionError::CodeOutOfRange {
            code: bad,
            categories: n,
        });
    }
    if low >= 0 {
        return Ok(codes.clone());
    }
    let valid = bits(values, |c| c.into() != -1);
    let nulls = NullBuffer::union(codes.nulls(), Some(&NullBuffer::new(valid)));
    Ok(PrimitiveArray::<K>::new(values.clone(), nulls))
}

/// `test` of each of `values`, as bits (`BooleanBuffer::collect_bool` calls a
/// closure per index, which bounds checks defeat).
pub fn bits<T: Copy>(values: &[T], test: impl Fn(T) -> bool) -> BooleanBuffer {
    // Bits of up to 8 values, then 8 of those to a word: the compiler keeps
    // this nesting in registers (3x faster than one loop of 64 shifts).
    let byte = |eight: &[T]| {
        eight
            .iter()
            .enumerate()
            .fold(0u64, |byte, (bit, &v)| byte | (u64::from(test(v)) << bit))
    };
    let word = |chunk: &[T]| {
        chunk
            .chunks_exact(8)
            .enumerate()
            .fold(0u64, |word, (i, eight)| word | (byte(eight) << (8 * i)))
    };
    let chunks = values.chunks_exact(64);
    let rest = chunks.remainder();
    let mut words: Vec<u64> = chunks.map(word).collect();
    if !rest.is_empty() {
        // Fewer than 64: as one "byte" (bits past the 8th still land in place).
        words.push(byte(rest));
    }
    BooleanBuffer::new(Buffer::from_vec(words), 0, values.len())
}

/// The smallest and largest of `values`, in one pass written as selects (a
/// loop LLVM vectorises; `Iterator::min` and `max` are not).
fn bounds<T: Copy + Ord>(values: &[T]) -> Option<(T, T)> {
    let first = *values.first()?;
    let (mut low, mut high) = (first, first);
    for &value in values {
        low = if value < low { value } else { low };
        high = if value > high { value } else { high };
    }
    Some((low, high))
}

/// `codes` into `categories` as a `DictionaryArray` (no copy of either).
///
/// # Errors
/// As [`codes_as_keys`].
pub(crate) fn dictionary<K>(
    codes: &PrimitiveArray<K>,
    categories: &ArrayRef,
) -> Result<ArrayRef, ConventionError>
where
    K: ArrowDictionaryKeyType,
    K::Native: Into<i64> + Ord,
{
    let keys = codes_as_keys(codes, categories.len())?;
    // SAFETY: `new_unchecked` requires every valid key to index `categories`:
    // `codes_as_keys` checked every code to be -1 or in 0..categories.len(),
    // and made each -1 a null.
    let dictionary = unsafe { DictionaryArray::<K>::new_unchecked(keys, categories.clone()) };
    Ok(Arc::new(dictionary))
}

#[cfg(test)]
mod tests {
    use arrow_array::types::{Int8Type, Int16Type};
    use arrow_array::{Int8Array, Int16Array, StringArray};

    use super::*;

    fn categories() -> ArrayRef {
        Arc::new(StringArray::from(vec!["a", "b", "c"]))
    }

    #[test]
    fn minus_one_is_a_null_and_other_codes_index_the_categories() {
        let codes = Int8Array::from(vec![0, -1, 2, 1, -1]);
        let array = dictionary::<Int8Type>(&codes, &categories()).unwrap();
        let dictionary = array
            .as_any()
            .downcast_ref::<DictionaryArray<Int8Type>>()
            .unwrap();
        let strings: Vec<Option<&str>> = dictionary
            .downcast_dict::<StringArray>()
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(strings, [Some("a"), None, Some("c"), Some("b"), None]);
        // Passes arrow-rs' own checks.
        dictionary.to_data().validate_full().unwrap();
    }

    #[test]
    fn codes_without_missing_pass_through_without_a_mask() {
        let codes = Int16Array::from(vec![2, 0, 1]);
        let keys = codes_as_keys::<Int16Type>(&codes, 3).unwrap();
        assert_eq!(keys.nulls(), None);
        assert_eq!(keys.values(), codes.values());
    }

    #[test]
    fn codes_outside_the_categories_are_refused_naming_the_first() {
        for (codes, bad) in [(vec![0, 3, 1], 3), (vec![1, -2, 5], -2), (vec![-5], -5)] {
            let error = codes_as_keys::<Int8Type>(&Int8Array::from(codes), 3).unwrap_err();
            assert!(
                matches!(error, ConventionError::CodeOutOfRange { code, categories: 3 } if code == bad),
                "{error}"
            );
        }
        // No categories: only -1 (all missing) is a code.
        assert!(codes_as_keys::<Int8Type>(&Int8Array::from(vec![-1, -1]), 0).is_ok());
        assert!(codes_as_keys::<Int8Type>(&Int8Array::from(vec![0]), 0).is_err());
    }

    #[test]
    fn bits_are_each_value_tested_in_order_whatever_the_length() {
        for n in [0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 200, 1000] {
            let values: Vec<i16> = (0..n).map(|i| ((i * 7919) % 13) as i16 - 1).collect();
            let got = bits(&values, |v| v != -1);
            assert_eq!(got.len(), n);
            let want: Vec<bool> = values.iter().map(|&v| v != -1).collect();
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "{n} values");
        }
    }
}
