//! numcodecs' `Delta`: each element stored as its difference from the one before.
//!
//! Spec: <https://numcodecs.readthedocs.io/en/stable/filter/delta.html>. numcodecs
//! `Delta` (v2 filter id `delta`; v3 name `numcodecs.delta`, as zarr-python 3
//! writes it through `zarr.codecs.numcodecs.Delta`), an array->array codec:
//!
//! ```json
//! {"name": "numcodecs.delta", "configuration": {"dtype": "<i8"}}
//! ```
//!
//! v2 (`.zarray` `filters`): `{"id": "delta", "dtype": "<i4", "astype": "<i4"}`.
//!
//! Over the chunk flattened in the order it reaches the codec (C order, after a
//! `transpose`): `encoded[0] = decoded[0]`, `encoded[i] = decoded[i] - decoded[i-1]`;
//! decoding is the running sum. Integers wrap (numpy's modular arithmetic), floats
//! add in their own precision, one element at a time, as `numpy.cumsum` does
//! (`float16` rounds at every step, as numpy's half loops do).
//!
//! zarrow reads and writes the integer and float dtypes with `astype` equal to
//! `dtype` (or absent); a narrowing `astype` (`<i8` stored as `<i2`) is refused,
//! naming both. The dtype must be the array's data type (the metadata parsers
//! check it against the array's). One copy each way.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ArrayToArrayCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};
use crate::metadata::{DataType, StringType, parse_dtype};

/// The names of numcodecs' `Delta`.
pub(crate) const NAMES: &[&str] = &["numcodecs.delta", "delta"];

/// numcodecs' `Delta` codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delta {
    /// The numpy dtype as written (`<i4`), kept to be written back.
    dtype: String,
    /// `astype` as written, when it was.
    astype: Option<String>,
    /// The data type `dtype` names: an integer or float type.
    pub(crate) data_type: DataType,
}

#[derive(Deserialize)]
struct Settings {
    dtype: String,
    astype: Option<String>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToArrayCodec>, ConfigError> {
    let Settings { dtype, astype } = settings(name, config)?;
    Ok(Arc::new(Delta::new(dtype, astype)?))
}

impl Delta {
    /// The codec for numpy `dtype` (and `astype`).
    ///
    /// # Errors
    /// A message naming the dtypes when `dtype` is not an integer or float type or
    /// `astype` is another type.
    pub(crate) fn new(dtype: String, astype: Option<String>) -> Result<Self, ConfigError> {
        let refuse = || {
            ConfigError::invalid_found(
                "numcodecs.delta",
                "configuration.dtype",
                "an integer or float dtype, with astype equal to dtype",
                format!(
                    "dtype {dtype:?} with astype {:?}",
                    astype.as_deref().unwrap_or(&dtype)
                ),
            )
        };
        let parsed = parse_dtype("numcodecs.delta", &dtype).map_err(|_| refuse())?;
        if let Some(astype) = &astype
            && parse_dtype("numcodecs.delta", astype).ok() != Some(parsed)
        {
            return Err(refuse());
        }
        let data_type = match parsed.0 {
            Some(
                t @ (DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
                | DataType::Float16
                | DataType::Float32
                | DataType::Float64),
            ) => t,
            _ => return Err(refuse()),
        };
        Ok(Self {
            dtype,
            astype,
            data_type,
        })
    }

    /// Run the codec forwards or backwards; an error says why it does not apply.
    fn run(&self, array: &ArrayRef, decode: bool) -> Result<ArrayRef, EncodeError> {
        let want = self.data_type.arrow_type(StringType::default());
        if array.data_type() != &want {
            return Err(EncodeError::TypeMismatch {
                codec: "numcodecs.delta",
                configured: want,
                found: array.data_type().clone(),
            });
        }
        Ok(match self.data_type {
            DataType::Int8 => apply::<Int8Type>(array, decode),
            DataType::Int16 => apply::<Int16Type>(array, decode),
            DataType::Int32 => apply::<Int32Type>(array, decode),
            DataType::Int64 => apply::<Int64Type>(array, decode),
            DataType::UInt8 => apply::<UInt8Type>(array, decode),
            DataType::UInt16 => apply::<UInt16Type>(array, decode),
            DataType::UInt32 => apply::<UInt32Type>(array, decode),
            DataType::UInt64 => apply::<UInt64Type>(array, decode),
            DataType::Float16 => apply::<Float16Type>(array, decode),
            DataType::Float32 => apply::<Float32Type>(array, decode),
            DataType::Float64 => apply::<Float64Type>(array, decode),
            // `new` admits only the types above.
            _ => {
                return Err(EncodeError::ArrowType {
                    codec: "numcodecs.delta",
                    data_type: want,
                });
            }
        })
    }
}

impl ArrayToArrayCodec for Delta {
    fn encoded_shape(&self, shape: &[u64]) -> Result<Vec<u64>, EncodeError> {
        Ok(shape.to_vec())
    }

    fn decode(&self, array: &ArrayRef, _shape: &[u64]) -> Result<ArrayRef, ChunkError> {
        self.run(array, true).map_err(|e| ChunkError::Decompress {
            codec: "numcodecs.delta",
            message: e.to_string(),
        })
    }

    fn encode(&self, array: &ArrayRef, _shape: &[u64]) -> Result<ArrayRef, EncodeError> {
        self.run(array, false)
    }

    fn metadata(&self) -> Value {
        let mut config = json!({"dtype": self.dtype});
        if let Some(astype) = &self.astype {
            config["astype"] = json!(astype);
        }
        json!({"name": "numcodecs.delta", "configuration": config})
    }
}

/// The running sum (`decode`) or the differences of `array`'s values (one copy).
fn apply<T: ArrowPrimitiveType>(array: &ArrayRef, decode: bool) -> ArrayRef
where
    T::Native: Step,
{
    let values = array.as_primitive::<T>().values();
    let mut out = Vec::with_capacity(values.len());
    let mut previous: Option<T::Native> = None;
    for &v in values.iter() {
        out.push(match (previous, decode) {
            (None, _) => v,
            // `previous` is the last decoded value.
            (Some(p), true) => p.add(v),
            (Some(p), false) => v.sub(p),
        });
        previous = Some(if decode { out[out.len() - 1] } else { v });
    }
    Arc::new(PrimitiveArray::<T>::new(out.into(), array.nulls().cloned()))
}

/// numpy's arithmetic on one dtype: wrapping for integers, IEEE in the type's own
/// precision for floats.
trait Step: Copy {
    fn add(self, other: Self) -> Self;
    fn sub(self, other: Self) -> Self;
}

macro_rules! wrapping_step {
    ($($t:ty),*) => {$(
        impl Step for $t {
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn sub(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }
        }
    )*};
}
wrapping_step!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_step {
    ($($t:ty),*) => {$(
        impl Step for $t {
            fn add(self, other: Self) -> Self {
                self + other
            }
            fn sub(self, other: Self) -> Self {
                self - other
            }
        }
    )*};
}
float_step!(f32, f64);

impl Step for half::f16 {
    // numpy's half loops compute in float32 and round back at every step.
    fn add(self, other: Self) -> Self {
        half::f16::from_f32(self.to_f32() + other.to_f32())
    }
    fn sub(self, other: Self) -> Self {
        half::f16::from_f32(self.to_f32() - other.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float32Array, Int8Array, Int32Array, UInt16Array};

    fn delta(dtype: &str) -> Delta {
        Delta::new(dtype.into(), None).unwrap()
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Delta(dtype="<i4").encode(np.array([10, 12, 11, 20], "<i4"))
        // == [10, 2, -1, 9].
        let stored: ArrayRef = Arc::new(Int32Array::from(vec![10, 2, -1, 9]));
        let codec = delta("<i4");
        let decoded = codec.decode(&stored, &[4]).unwrap();
        assert_eq!(
            decoded.as_primitive::<Int32Type>().values(),
            &[10, 12, 11, 20]
        );
        assert_eq!(
            codec.encode(&decoded, &[4]).unwrap().as_ref(),
            stored.as_ref()
        );
    }

    #[test]
    fn integers_wrap_both_ways() {
        // int8: 100 + 100 wraps to -56, as numpy's int8 cumsum does.
        let values: ArrayRef = Arc::new(Int8Array::from(vec![-128, 127, -128, 100, -56]));
        let codec = delta("|i1");
        let enc = codec.encode(&values, &[5]).unwrap();
        assert_eq!(
            enc.as_primitive::<Int8Type>().values(),
            &[-128, -1, 1, -28, 100]
        );
        assert_eq!(codec.decode(&enc, &[5]).unwrap().as_ref(), values.as_ref());
        let values: ArrayRef = Arc::new(UInt16Array::from(vec![5, 0, u16::MAX, 1]));
        let codec = delta("<u2");
        let enc = codec.encode(&values, &[4]).unwrap();
        assert_eq!(
            enc.as_primitive::<UInt16Type>().values(),
            &[5, u16::MAX - 4, u16::MAX, 2]
        );
        assert_eq!(codec.decode(&enc, &[4]).unwrap().as_ref(), values.as_ref());
    }

    #[test]
    fn floats_and_half_round_trip() {
        let values: ArrayRef = Arc::new(Float32Array::from(vec![1.5, -2.25, 8.0, 8.0]));
        let codec = delta("<f4");
        let enc = codec.encode(&values, &[4]).unwrap();
        assert_eq!(
            enc.as_primitive::<Float32Type>().values(),
            &[1.5, -3.75, 10.25, 0.0]
        );
        assert_eq!(codec.decode(&enc, &[4]).unwrap().as_ref(), values.as_ref());
        let halves: ArrayRef = Arc::new(PrimitiveArray::<Float16Type>::from(vec![
            half::f16::from_f32(0.5),
            half::f16::from_f32(2.0),
            half::f16::from_f32(-1.0),
        ]));
        let codec = delta("<f2");
        let enc = codec.encode(&halves, &[3]).unwrap();
        assert_eq!(codec.decode(&enc, &[3]).unwrap().as_ref(), halves.as_ref());
    }

    #[test]
    fn refuses_other_dtypes_and_astypes() {
        for (dtype, astype) in [
            ("<i8", Some("<i2")),
            ("<U4", None),
            ("|b1", None),
            ("<M8[ns]", None),
            ("nonsense", None),
        ] {
            let err = Delta::new(dtype.into(), astype.map(str::to_string)).unwrap_err();
            assert!(
                matches!(
                    &err,
                    ConfigError::Invalid { field, found: Some(f), .. }
                        if field == "configuration.dtype" && f.contains(dtype)
                ),
                "{dtype}"
            );
        }
        // A dtype that is not the array's is refused when it meets the values.
        let stored: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        assert!(matches!(
            delta("<i8").decode(&stored, &[1]),
            Err(ChunkError::Decompress { .. })
        ));
        // astype equal to dtype (as zarr-python writes v2 filters) is the same codec.
        let both = Delta::new("<i4".into(), Some("<i4".into())).unwrap();
        assert_eq!(both.data_type, DataType::Int32);
        assert_eq!(
            both.metadata(),
            json!({"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i4"}})
        );
    }
}
