//! One chunk's statistics, from its values as a reader sees them.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, PrimitiveArray, StringArray,
    downcast_primitive_array,
};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType as ArrowType;

use super::{MAX_SET_VALUE, PREFIX_BYTES};

/// What one chunk holds.
#[derive(Debug, Clone)]
pub(crate) struct ChunkStats {
    /// Rows of the chunk inside the array.
    pub(crate) rows: u64,
    /// Null rows (NaT times).
    pub(crate) nulls: u64,
    /// NaN rows (floats).
    pub(crate) nans: u64,
    /// A lower bound of the non-null, non-NaN values (one element of the
    /// bound type; null when there is none).
    pub(crate) min: ArrayRef,
    /// An upper bound of the non-null, non-NaN values (null when none is
    /// known).
    pub(crate) max: ArrayRef,
    /// For small integers, the values present: bit `v + 1` for value `v`.
    pub(crate) set: Option<Vec<u8>>,
}

/// The type statistics record bounds in for values of `arrow_type`: the type
/// itself for numbers, booleans and times; `Utf8` for strings and `Binary`
/// for bytes (whatever their layout); `None` where zarrow records none.
pub(crate) fn stats_type(arrow_type: &ArrowType) -> Option<ArrowType> {
    use ArrowType as T;
    match arrow_type {
        T::Boolean
        | T::Int8
        | T::Int16
        | T::Int32
        | T::Int64
        | T::UInt8
        | T::UInt16
        | T::UInt32
        | T::UInt64
        | T::Float16
        | T::Float32
        | T::Float64
        | T::Date32
        | T::Date64
        | T::Timestamp(..)
        | T::Duration(_)
        | T::Time32(_)
        | T::Time64(_) => Some(arrow_type.clone()),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => Some(T::Utf8),
        T::Binary | T::LargeBinary | T::BinaryView | T::FixedSizeBinary(_) => Some(T::Binary),
        _ => None,
    }
}

impl ChunkStats {
    /// The statistics of `values`, one chunk's rows; `None` for a type
    /// [`stats_type`] has none for.
    pub(crate) fn of(values: &dyn Array) -> Option<Self> {
        stats_type(values.data_type())?;
        let rows = values.len() as u64;
        let nulls = values.null_count() as u64;
        let mut nans = 0;
        let mut set = None;
        let (min, max): (ArrayRef, ArrayRef) = match values.data_type() {
            ArrowType::Boolean => booleans(values.as_boolean()),
            ArrowType::Utf8 => strings(values.as_string::<i32>().iter()),
            ArrowType::LargeUtf8 => strings(values.as_string::<i64>().iter()),
            ArrowType::Utf8View => strings(values.as_string_view().iter()),
            ArrowType::Binary => bytes(values.as_binary::<i32>().iter()),
            ArrowType::LargeBinary => bytes(values.as_binary::<i64>().iter()),
            ArrowType::BinaryView => bytes(values.as_binary_view().iter()),
            ArrowType::FixedSizeBinary(_) => bytes(values.as_fixed_size_binary().iter()),
            ArrowType::Float16 => {
                let (bounds, n) = floats::<Float16Type>(values, half::f16::from_bits(1));
                nans = n;
                bounds
            }
            ArrowType::Float32 => {
                let (bounds, n) = floats::<Float32Type>(values, f32::from_bits(1));
                nans = n;
                bounds
            }
            ArrowType::Float64 => {
                let (bounds, n) = floats::<Float64Type>(values, f64::from_bits(1));
                nans = n;
                bounds
            }
            _ => downcast_primitive_array!(
                values => {
                    let (lo, hi) = range(values.iter().flatten());
                    if values.data_type().is_integer() {
                        set = value_set(values, lo, hi);
                    }
                    (one(values, lo), one(values, hi))
                }
                _ => return None,
            ),
        };
        Some(Self {
            rows,
            nulls,
            nans,
            min,
            max,
            set,
        })
    }
}

/// The least and the greatest of `values`.
fn range<T: PartialOrd + Copy>(values: impl Iterator<Item = T>) -> (Option<T>, Option<T>) {
    let mut lo: Option<T> = None;
    let mut hi: Option<T> = None;
    for v in values {
        if lo.is_none_or(|lo| v < lo) {
            lo = Some(v);
        }
        if hi.is_none_or(|hi| v > hi) {
            hi = Some(v);
        }
    }
    (lo, hi)
}

/// A one-element array of `like`'s type (its time zone too) holding `value`.
fn one<T: ArrowPrimitiveType>(like: &PrimitiveArray<T>, value: Option<T::Native>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::from_iter([value]).with_data_type(like.data_type().clone()))
}

/// Bounds of floats, NaN apart: the count of NaNs (of either sign, any
/// payload), and the least and greatest other values, a zero bound widened
/// to the least subnormal below (`-tiny`) or above (`tiny`). Engines differ
/// on zeros (IEEE's comparisons: -0.0 = 0.0; DataFusion's `IN` lists and
/// totalOrder: -0.0 < 0.0), and a bound strictly beyond both zeros holds for
/// every one of them.
fn floats<T: ArrowPrimitiveType>(values: &dyn Array, tiny: T::Native) -> ((ArrayRef, ArrayRef), u64)
where
    T::Native: PartialOrd + std::ops::Neg<Output = T::Native> + Default,
{
    let values = values.as_primitive::<T>();
    let mut nans = 0;
    // A NaN is the one value not equal to itself.
    #[allow(clippy::eq_op)]
    let (lo, hi) = range(values.iter().flatten().filter(|v| {
        let number = v == v;
        nans += u64::from(!number);
        number
    }));
    (
        (
            one(values, lo.map(|v| widened(v, -tiny))),
            one(values, hi.map(|v| widened(v, tiny))),
        ),
        nans,
    )
}

/// `v`, or `tiny` where `v` is a zero of either sign.
pub(super) fn widened<F: PartialOrd + Default>(v: F, tiny: F) -> F {
    // -0.0 == +0.0 == default.
    if v == F::default() { tiny } else { v }
}

fn booleans(values: &BooleanArray) -> (ArrayRef, ArrayRef) {
    let (lo, hi) = range(values.iter().flatten());
    (
        Arc::new(BooleanArray::from(vec![lo])),
        Arc::new(BooleanArray::from(vec![hi])),
    )
}

/// The set of values present, when every value lies in `-1..=MAX_SET_VALUE`.
fn value_set<T: ArrowPrimitiveType>(
    values: &PrimitiveArray<T>,
    lo: Option<T::Native>,
    hi: Option<T::Native>,
) -> Option<Vec<u8>> {
    let (lo, hi) = (lo?.to_i64()?, hi?.to_i64()?);
    if lo < -1 || hi > MAX_SET_VALUE {
        return None;
    }
    let mut bits = vec![0u8; ((hi + 2) as usize).div_ceil(8)];
    for v in values.iter().flatten() {
        // In range: checked above.
        let bit = (v.to_i64().unwrap_or(-1) + 1) as usize;
        bits[bit / 8] |= 1 << (bit % 8);
    }
    Some(bits)
}

/// Bounds of strings: the least value's prefix, and the greatest value's
/// prefix raised to stay above every value that starts with it.
fn strings<'a>(values: impl Iterator<Item = Option<&'a str>>) -> (ArrayRef, ArrayRef) {
    let (lo, hi) = range(values.flatten());
    let lo = lo.map(|s| &s[..floor_char_boundary(s, PREFIX_BYTES)]);
    let hi = hi.and_then(raised_string);
    (
        Arc::new(StringArray::from(vec![lo])),
        Arc::new(StringArray::from(vec![hi])),
    )
}

/// Bounds of bytes, as [`strings`].
fn bytes<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> (ArrayRef, ArrayRef) {
    let (lo, hi) = range(values.flatten());
    let lo = lo.map(|b| &b[..b.len().min(PREFIX_BYTES)]);
    let hi = hi.and_then(bytes_upper_bound);
    (
        Arc::new(BinaryArray::from(vec![lo])),
        Arc::new(BinaryArray::from(vec![hi.as_deref()])),
    )
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `s` itself when short enough; else the shortest string above every string
/// that starts with `s`'s first `PREFIX_BYTES` bytes (cut at a char boundary):
/// that prefix with its last char raised by one (chars that cannot be raised
/// dropped first). `None` when no such string exists.
fn raised_string(s: &str) -> Option<String> {
    if s.len() <= PREFIX_BYTES {
        return Some(s.to_string());
    }
    let mut prefix: Vec<char> = s[..floor_char_boundary(s, PREFIX_BYTES)].chars().collect();
    while let Some(last) = prefix.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            prefix.push(next);
            return Some(prefix.into_iter().collect());
        }
    }
    None
}

/// As [`raised_string`], for bytes.
fn bytes_upper_bound(b: &[u8]) -> Option<Vec<u8>> {
    if b.len() <= PREFIX_BYTES {
        return Some(b.to_vec());
    }
    let mut prefix = b[..PREFIX_BYTES].to_vec();
    while let Some(last) = prefix.pop() {
        if last < u8::MAX {
            prefix.push(last + 1);
            return Some(prefix);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use arrow_array::{BinaryArray, Float64Array, Int8Array, StringArray};

    use super::*;

    fn text(a: &ArrayRef) -> Option<String> {
        let a = a.as_string::<i32>();
        a.is_valid(0).then(|| a.value(0).to_string())
    }

    /// Cut strings still bound every value: the minimum's prefix below, the
    /// raised prefix above; cuts fall on char boundaries.
    #[test]
    fn long_strings_are_bounded() {
        let long = "é".repeat(40); // 80 bytes
        let values = StringArray::from(vec![long.clone(), format!("{long}z"), "b".into()]);
        let s = ChunkStats::of(&values).unwrap();
        let (min, max) = (text(&s.min).unwrap(), text(&s.max).unwrap());
        assert_eq!(min, "b");
        assert!(max.len() <= PREFIX_BYTES);
        for v in [&long, &format!("{long}z")] {
            assert!(max.as_str() > v.as_str(), "{max:?} above {v:?}");
        }
        let low = StringArray::from(vec![format!("{long}a"), format!("{long}b")]);
        let s = ChunkStats::of(&low).unwrap();
        assert!(text(&s.min).unwrap().as_str() <= format!("{long}a").as_str());
        // Bytes that cannot be raised: no upper bound.
        let top = BinaryArray::from(vec![&[0xffu8; 80][..]]);
        let s = ChunkStats::of(&top).unwrap();
        assert!(s.max.is_null(0));
    }

    /// A NaN of either sign is counted apart, outside the bounds; nulls are
    /// counted; a zero bound is widened past both zeros.
    #[test]
    fn nans_nulls_and_zeros() {
        let values = Float64Array::from(vec![Some(1.0), None, Some(-f64::NAN), Some(-2.0)]);
        let s = ChunkStats::of(&values).unwrap();
        assert_eq!((s.rows, s.nulls, s.nans), (4, 1, 1));
        let bound = |a: &ArrayRef| a.as_primitive::<Float64Type>().value(0);
        assert_eq!((bound(&s.min), bound(&s.max)), (-2.0, 1.0));
        let tiny = f64::from_bits(1);
        let zeros = ChunkStats::of(&Float64Array::from(vec![0.0, 0.0])).unwrap();
        assert_eq!((bound(&zeros.min), bound(&zeros.max)), (-tiny, tiny));
        let zeros = ChunkStats::of(&Float64Array::from(vec![-0.0, 3.0])).unwrap();
        assert_eq!((bound(&zeros.min), bound(&zeros.max)), (-tiny, 3.0));
    }

    /// Small integers record the values present (bit v + 1).
    #[test]
    fn small_integer_sets() {
        let s = ChunkStats::of(&Int8Array::from(vec![-1, 3, 3, 0])).unwrap();
        assert_eq!(s.set, Some(vec![0b0001_0011]));
        let s = ChunkStats::of(&Int8Array::from(vec![-2, 3])).unwrap();
        assert_eq!(s.set, None);
    }
}
