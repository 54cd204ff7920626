//! The stdlib "linear exchange format": an ndarray as one flat JSON array (or one
//! CSV column), for spreadsheets and tools that speak only JSON or CSV.
//!
//! Spec: the stdlib RFC "a simple flat array format for ndarrays"
//! (`shared/seeds/stdlib-linear-exchange-format-rfc.txt`):
//!
//! ```text
//! ["version", "1.0.0", "ndarray", "shape", 2, 2, "strides", 2, 1, "offset", 0,
//!  "order", "row-major", "dtype", "float64", "length", 4, "capacity", 4,
//!  "data", 1, 2, 3, 4]
//! ```
//!
//! `"ndarray"` comes first and `"data"` last in the header; the other fields may come
//! in any order. Element `(i0, i1, ...)` of the view is
//! `data[offset + i0 * strides[0] + i1 * strides[1] + ...]`; the data buffer may hold
//! elements the view does not index. A 0-d array has no shape values and one stride,
//! 0.
//!
//! Data types: the stdlib names where stdlib has one (`float64`, `float32`,
//! `int8`/`int16`/`int32`, `uint8`/`uint16`/`uint32`, `bool`; `uint8c` is read as
//! `uint8`), and `generic` otherwise. How each Zarr type is written:
//!
//! | Zarr data type | `dtype` | each element |
//! |---|---|---|
//! | `float64`, `float32` | `float64`, `float32` | a JSON number; NaN and infinities (which JSON cannot spell) as `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `int8`..`int32`, `uint8`..`uint32`, `bool` | the same name | a JSON number / boolean |
//! | `int64`, `uint64` | `generic` | an exact JSON integer (JavaScript rounds beyond 2^53; zarrow does not) |
//! | `string`, `fixed_length_utf32` | `generic` | a JSON string |
//! | bytes types | `generic` | a JSON list of the byte values |
//!
//! [`Linear::to_arrow`] says how `generic` data is typed on import.

mod csv;
mod export;
mod parse;

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{Buffer, OffsetBuffer};

pub use self::csv::{read_csv, write_csv};
pub use export::write_json;
pub use parse::parse_json;

use crate::error::{Error, Result};

/// The RFC's `dtype` values that zarrow reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum LinearType {
    /// `float64`.
    Float64,
    /// `float32`.
    Float32,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `uint8` (and `uint8c`, read as `uint8`).
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `bool`.
    Bool,
    /// `generic`: any JSON values (strings, 64-bit integers, bytes as lists).
    Generic,
}

impl LinearType {
    /// The RFC spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Float64 => "float64",
            Self::Float32 => "float32",
            Self::Int8 => "int8",
            Self::Int16 => "int16",
            Self::Int32 => "int32",
            Self::UInt8 => "uint8",
            Self::UInt16 => "uint16",
            Self::UInt32 => "uint32",
            Self::Bool => "bool",
            Self::Generic => "generic",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "float64" => Self::Float64,
            "float32" => Self::Float32,
            "int8" => Self::Int8,
            "int16" => Self::Int16,
            "int32" => Self::Int32,
            "uint8" | "uint8c" => Self::UInt8,
            "uint16" => Self::UInt16,
            "uint32" => Self::UInt32,
            "bool" => Self::Bool,
            "generic" => Self::Generic,
            _ => return None,
        })
    }
}

/// Memory order named in the header (the strides define the indexing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// `row-major`.
    RowMajor,
    /// `column-major`.
    ColumnMajor,
}

/// `generic` data, stored by kind (the kind of the first element; every element
/// must share it). Strings and bytes are packed into one buffer.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub(crate) enum GenericValues {
    /// No elements yet.
    #[default]
    Empty,
    /// JSON strings: UTF-8 values and the end of each.
    Text {
        /// The values, concatenated.
        data: Vec<u8>,
        /// Where each value ends in `data`.
        ends: Vec<usize>,
    },
    /// JSON lists of byte values (zarrow's form for byte strings).
    Bytes {
        /// The values, concatenated.
        data: Vec<u8>,
        /// Where each value ends in `data`.
        ends: Vec<usize>,
    },
    /// JSON integers (any that fit i64 or u64).
    Int(Vec<i128>),
    /// JSON numbers, at least one not an integer.
    Float(Vec<f64>),
    /// `true` / `false`.
    Bool(Vec<bool>),
}

impl GenericValues {
    fn len(&self) -> usize {
        match self {
            Self::Empty => 0,
            Self::Text { ends, .. } | Self::Bytes { ends, .. } => ends.len(),
            Self::Int(v) => v.len(),
            Self::Float(v) => v.len(),
            Self::Bool(v) => v.len(),
        }
    }
}

/// The data buffer, typed by the header's `dtype`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub(crate) enum Values {
    /// `float64` (also what NaN / infinities arrive as).
    Float64(Vec<f64>),
    /// `float32`.
    Float32(Vec<f32>),
    /// `int8`.
    Int8(Vec<i8>),
    /// `int16`.
    Int16(Vec<i16>),
    /// `int32`.
    Int32(Vec<i32>),
    /// `uint8`.
    UInt8(Vec<u8>),
    /// `uint16`.
    UInt16(Vec<u16>),
    /// `uint32`.
    UInt32(Vec<u32>),
    /// `bool`.
    Bool(Vec<bool>),
    /// `generic`.
    Generic(GenericValues),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Self::Float64(v) => v.len(),
            Self::Float32(v) => v.len(),
            Self::Int8(v) => v.len(),
            Self::Int16(v) => v.len(),
            Self::Int32(v) => v.len(),
            Self::UInt8(v) => v.len(),
            Self::UInt16(v) => v.len(),
            Self::UInt32(v) => v.len(),
            Self::Bool(v) => v.len(),
            Self::Generic(g) => g.len(),
        }
    }
}

/// A parsed, validated linear-format ndarray.
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    /// Dimension sizes (empty for 0-d).
    pub shape: Vec<u64>,
    /// Strides in elements (one 0 for 0-d), possibly negative.
    pub(crate) strides: Vec<i64>,
    /// Index of the view's first element in the data buffer.
    pub(crate) offset: u64,
    /// The header's `order`.
    pub(crate) order: Order,
    /// The header's `dtype`.
    pub(crate) dtype: LinearType,
    /// The whole data buffer (`capacity` elements).
    pub(crate) data: Values,
}

impl Linear {
    /// Elements the view indexes (1 for 0-d).
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Data-buffer indices of the view's elements, in row-major order. Bounds were
    /// checked when the header was validated.
    fn view_indices(&self) -> Vec<usize> {
        let n = self.len() as usize;
        let mut out = Vec::with_capacity(n);
        let mut index = vec![0u64; self.shape.len()];
        for _ in 0..n {
            let pos = index
                .iter()
                .zip(&self.strides)
                .fold(self.offset as i64, |acc, (&i, &s)| acc + i as i64 * s);
            out.push(pos as usize);
            for d in (0..self.shape.len()).rev() {
                index[d] += 1;
                if index[d] < self.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        out
    }

    /// Whether the view is the whole buffer in order (offset 0, row-major contiguous
    /// strides, capacity = length): then the buffer is the array.
    fn is_identity(&self) -> bool {
        let mut expected = 1i64;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n > 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(n as i64);
        }
        self.offset == 0 && self.data.len() as u64 == self.len()
    }

    /// Like [`Linear::to_arrow`], moving the buffer into the array (no copy) when the
    /// view is the whole buffer in order, as zarrow writes it.
    ///
    /// # Errors
    /// As [`Linear::to_arrow`].
    pub fn into_arrow(self) -> Result<ArrayRef> {
        if !self.is_identity() {
            return self.to_arrow();
        }
        let text_or_bytes =
            |data: Vec<u8>, ends: Vec<usize>| -> Result<(OffsetBuffer<i32>, Buffer)> {
                let offsets = std::iter::once(0)
                    .chain(ends)
                    .map(i32::try_from)
                    .collect::<std::result::Result<Vec<i32>, _>>()
                    .map_err(|_| {
                        Error::linear(
                            "data",
                            "at most 2 GiB of generic values in one array",
                            Some(&format_args!("{} bytes", data.len())),
                        )
                    })?;
                Ok((OffsetBuffer::new(offsets.into()), Buffer::from_vec(data)))
            };
        Ok(match self.data {
            Values::Float64(v) => Arc::new(Float64Array::from(v)),
            Values::Float32(v) => Arc::new(Float32Array::from(v)),
            Values::Int32(v) => Arc::new(Int32Array::from(v)),
            Values::Generic(GenericValues::Text { data, ends }) => {
                let (offsets, values) = text_or_bytes(data, ends)?;
                Arc::new(StringArray::try_new(offsets, values, None)?)
            }
            Values::Generic(GenericValues::Bytes { data, ends }) => {
                let (offsets, values) = text_or_bytes(data, ends)?;
                Arc::new(BinaryArray::try_new(offsets, values, None)?)
            }
            _ => self.to_arrow()?,
        })
    }

    /// The viewed elements in row-major order as an Arrow array.
    ///
    /// `generic` data is typed by its values: all strings -> `Utf8`; all byte lists
    /// -> `Binary`; all booleans -> `Boolean`; all integers -> `Int64` (`UInt64` when
    /// one exceeds i64::MAX); numbers with any non-integer -> `Float64`. An empty
    /// `generic` view is `Utf8`.
    ///
    /// # Errors
    /// [`Error::Linear`] when `generic` values mix kinds (strings and numbers, ...).
    pub fn to_arrow(&self) -> Result<ArrayRef> {
        let idx = self.view_indices();
        macro_rules! gather {
            ($v:expr, $array:ty) => {
                Arc::new(<$array>::from_iter_values(idx.iter().map(|&i| $v[i]))) as ArrayRef
            };
        }
        Ok(match &self.data {
            Values::Float64(v) => gather!(v, Float64Array),
            Values::Float32(v) => gather!(v, Float32Array),
            Values::Int8(v) => gather!(v, Int8Array),
            Values::Int16(v) => gather!(v, Int16Array),
            Values::Int32(v) => gather!(v, Int32Array),
            Values::UInt8(v) => gather!(v, UInt8Array),
            Values::UInt16(v) => gather!(v, UInt16Array),
            Values::UInt32(v) => gather!(v, UInt32Array),
            Values::Bool(v) => Arc::new(idx.iter().map(|&i| Some(v[i])).collect::<BooleanArray>()),
            Values::Generic(g) => generic_array(g, &idx)?,
        })
    }
}

fn generic_array(values: &GenericValues, idx: &[usize]) -> Result<ArrayRef> {
    let range = |ends: &[usize], i: usize| (if i == 0 { 0 } else { ends[i - 1] })..ends[i];
    Ok(match values {
        GenericValues::Empty => Arc::new(StringArray::from(Vec::<&str>::new())),
        GenericValues::Text { data, ends } => {
            // Each value was a JSON string, so each range is valid UTF-8.
            let text = std::str::from_utf8(data)
                .map_err(|e| Error::linear("data", "UTF-8 text", Some(&e)))?;
            Arc::new(StringArray::from_iter_values(
                idx.iter().map(|&i| &text[range(ends, i)]),
            ))
        }
        GenericValues::Bytes { data, ends } => Arc::new(BinaryArray::from_iter_values(
            idx.iter().map(|&i| &data[range(ends, i)]),
        )),
        GenericValues::Bool(v) => {
            Arc::new(idx.iter().map(|&i| Some(v[i])).collect::<BooleanArray>())
        }
        GenericValues::Float(v) => {
            Arc::new(Float64Array::from_iter_values(idx.iter().map(|&i| v[i])))
        }
        GenericValues::Int(v) => {
            let viewed = || idx.iter().map(|&i| v[i]);
            if viewed().all(|x| i64::try_from(x).is_ok()) {
                Arc::new(Int64Array::from_iter_values(viewed().map(|x| x as i64)))
            } else if viewed().all(|x| u64::try_from(x).is_ok()) {
                Arc::new(UInt64Array::from_iter_values(viewed().map(|x| x as u64)))
            } else {
                return Err(Error::linear(
                    "data",
                    "generic integers that all fit i64 or all fit u64",
                    Some(&"negative values beside values above i64::MAX"),
                ));
            }
        }
    })
}
