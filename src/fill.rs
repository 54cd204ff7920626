//! Arrays that hold one fill value repeated: what a missing chunk (or a missing
//! inner chunk of a shard) reads as.

use std::sync::Arc;

use arrow_array::types::{
    Date32Type, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray, new_null_array};
use arrow_buffer::BooleanBuffer;
use num_like::FromFill;

use crate::error::ChunkError;
use crate::metadata::{DataType, DateTimeUnit, FillValue, StringType};
use crate::offsets::ValuesBuilder;

/// `n` copies of `fill` as the Arrow type `data_type` reads into.
///
/// # Errors
/// [`ChunkError::TooLarge`] when the array would exceed `max_bytes`.
pub(crate) fn fill_array(
    data_type: &DataType,
    fill: &FillValue,
    n: usize,
    string_type: StringType,
    max_bytes: usize,
) -> Result<ArrayRef, ChunkError> {
    // Value bytes plus the per-element Arrow structure (exact for fixed widths).
    let per_element = data_type.arrow_bytes_per_element()
        + match fill {
            FillValue::Bytes(b) => b.len(),
            _ => 0,
        };
    if n.saturating_mul(per_element) > max_bytes {
        return Err(ChunkError::TooLarge {
            codec: "fill value",
            limit: max_bytes as u64,
        });
    }
    Ok(match data_type {
        DataType::Bool => {
            let v = matches!(fill, FillValue::Bool(true));
            let bits = if v {
                BooleanBuffer::new_set(n)
            } else {
                BooleanBuffer::new_unset(n)
            };
            Arc::new(BooleanArray::new(bits, None))
        }
        DataType::Int8 => repeat::<Int8Type>(fill, n),
        DataType::Int16 => repeat::<Int16Type>(fill, n),
        DataType::Int32 => repeat::<Int32Type>(fill, n),
        DataType::Int64 => repeat::<Int64Type>(fill, n),
        DataType::UInt8 => repeat::<UInt8Type>(fill, n),
        DataType::UInt16 => repeat::<UInt16Type>(fill, n),
        DataType::UInt32 => repeat::<UInt32Type>(fill, n),
        DataType::UInt64 => repeat::<UInt64Type>(fill, n),
        DataType::Float16 => repeat::<Float16Type>(fill, n),
        DataType::Float32 => repeat::<Float32Type>(fill, n),
        DataType::Float64 => repeat::<Float64Type>(fill, n),
        // NaT is a null.
        DataType::DateTime64(_) | DataType::TimeDelta64(_) if *fill == FillValue::Int(i64::MIN) => {
            new_null_array(&data_type.arrow_type(string_type), n)
        }
        DataType::DateTime64(DateTimeUnit::Day) => {
            let days = match *fill {
                FillValue::Int(days) => days,
                _ => 0,
            };
            let days = i32::try_from(days).map_err(|_| ChunkError::Decompress {
                codec: "fill value",
                message: format!("datetime64[D] fill value {days} is outside Arrow Date32's range"),
            })?;
            Arc::new(PrimitiveArray::<Date32Type>::from_value(days, n))
        }
        DataType::DateTime64(unit) => match unit {
            DateTimeUnit::Second | DateTimeUnit::Day => repeat::<TimestampSecondType>(fill, n),
            DateTimeUnit::Millisecond => repeat::<TimestampMillisecondType>(fill, n),
            DateTimeUnit::Microsecond => repeat::<TimestampMicrosecondType>(fill, n),
            DateTimeUnit::Nanosecond => repeat::<TimestampNanosecondType>(fill, n),
        },
        DataType::TimeDelta64(unit) => match unit {
            DateTimeUnit::Second | DateTimeUnit::Day => repeat::<DurationSecondType>(fill, n),
            DateTimeUnit::Millisecond => repeat::<DurationMillisecondType>(fill, n),
            DateTimeUnit::Microsecond => repeat::<DurationMicrosecondType>(fill, n),
            DateTimeUnit::Nanosecond => repeat::<DurationNanosecondType>(fill, n),
        },
        DataType::String
        | DataType::Bytes
        | DataType::FixedUtf32 { .. }
        | DataType::NullTerminatedBytes { .. } => {
            let value: &[u8] = match fill {
                FillValue::Bytes(b) => b,
                _ => &[],
            };
            let mut out = ValuesBuilder::new(string_type, n, value.len() * n, None);
            for _ in 0..n {
                out.push(value)?;
            }
            out.finish(data_type.is_text())?
        }
    })
}

fn repeat<T: ArrowPrimitiveType>(fill: &FillValue, n: usize) -> ArrayRef
where
    T::Native: FromFill,
{
    Arc::new(PrimitiveArray::<T>::from_value(
        T::Native::from_fill(fill),
        n,
    ))
}

mod num_like {
    use crate::metadata::FillValue;

    /// Convert a parsed fill value (already range-checked for the type) to a native.
    pub(crate) trait FromFill {
        fn from_fill(fill: &FillValue) -> Self;
    }

    macro_rules! from_fill {
        ($($t:ty),*) => {$(
            impl FromFill for $t {
                fn from_fill(fill: &FillValue) -> Self {
                    match *fill {
                        FillValue::Int(v) => v as $t,
                        FillValue::UInt(v) => v as $t,
                        FillValue::Float(v) => v as $t,
                        FillValue::Bool(v) => u8::from(v) as $t,
                        FillValue::Bytes(_) => 0 as $t,
                    }
                }
            }
        )*};
    }
    from_fill!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

    impl FromFill for half::f16 {
        fn from_fill(fill: &FillValue) -> Self {
            half::f16::from_f64(f64::from_fill(fill))
        }
    }
}
