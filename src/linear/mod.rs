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
//! `uint8`), and `generic` otherwise (see [`export`] for how each Zarr type is
//! written and [`Linear::to_arrow`] for how `generic` data is typed on import).

mod csv;
mod export;
mod parse;

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Float32Array, Float64Array, Int8Array, Int16Array,
    Int32Array, Int64Array, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};

pub use self::csv::{read_csv, write_csv};
pub use export::write_json;
pub use parse::{parse_json, parse_tokens};

use crate::error::{Error, Result};

/// The RFC's `dtype` values that zarrow reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinearType {
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
    pub fn name(self) -> &'static str {
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
pub enum Order {
    /// `row-major`.
    RowMajor,
    /// `column-major`.
    ColumnMajor,
}

/// One `generic` element.
#[derive(Debug, Clone, PartialEq)]
pub enum Generic {
    /// A JSON integer that fits i64.
    Int(i64),
    /// A JSON integer above i64::MAX.
    UInt(u64),
    /// Any other JSON number.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A JSON string.
    Str(String),
    /// A JSON list of integers 0..=255 (zarrow's form for byte strings).
    Bytes(Vec<u8>),
}

/// The data buffer, typed by the header's `dtype`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Values {
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
    Generic(Vec<Generic>),
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
            Self::Generic(v) => v.len(),
        }
    }
}

/// A parsed, validated linear-format ndarray.
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    /// Dimension sizes (empty for 0-d).
    pub shape: Vec<u64>,
    /// Strides in elements (one 0 for 0-d), possibly negative.
    pub strides: Vec<i64>,
    /// Index of the view's first element in the data buffer.
    pub offset: u64,
    /// The header's `order`.
    pub order: Order,
    /// The header's `dtype`.
    pub dtype: LinearType,
    /// The whole data buffer (`capacity` elements).
    pub data: Values,
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
            Values::Generic(v) => generic_array(&idx.iter().map(|&i| &v[i]).collect::<Vec<_>>())?,
        })
    }
}

fn generic_array(values: &[&Generic]) -> Result<ArrayRef> {
    let mixed = |i: usize| Error::Linear {
        field: "data".into(),
        message: format!(
            "generic element {i} is of another kind than element 0 ({:?})",
            values.first()
        ),
    };
    let Some(first) = values.first() else {
        return Ok(Arc::new(StringArray::from(Vec::<&str>::new())));
    };
    let kind = |g: &Generic| match g {
        Generic::Int(_) | Generic::UInt(_) | Generic::Float(_) => 0,
        Generic::Bool(_) => 1,
        Generic::Str(_) => 2,
        Generic::Bytes(_) => 3,
    };
    if let Some(i) = values.iter().position(|g| kind(g) != kind(first)) {
        return Err(mixed(i));
    }
    Ok(match first {
        Generic::Str(_) => Arc::new(StringArray::from_iter_values(values.iter().map(
            |g| match g {
                Generic::Str(s) => s.as_str(),
                _ => "",
            },
        ))),
        Generic::Bytes(_) => Arc::new(BinaryArray::from_iter_values(values.iter().map(
            |g| match g {
                Generic::Bytes(b) => b.as_slice(),
                _ => &[],
            },
        ))),
        Generic::Bool(_) => Arc::new(
            values
                .iter()
                .map(|g| Some(matches!(g, Generic::Bool(true))))
                .collect::<BooleanArray>(),
        ),
        _ if values.iter().any(|g| matches!(g, Generic::Float(_))) => Arc::new(
            Float64Array::from_iter_values(values.iter().map(|g| match **g {
                Generic::Int(v) => v as f64,
                Generic::UInt(v) => v as f64,
                Generic::Float(v) => v,
                _ => 0.0,
            })),
        ),
        _ if values.iter().any(|g| matches!(g, Generic::UInt(_))) => {
            let negative = values
                .iter()
                .position(|g| matches!(g, Generic::Int(v) if *v < 0));
            if let Some(i) = negative {
                return Err(Error::Linear {
                    field: "data".into(),
                    message: format!(
                        "generic element {i} is negative while others exceed i64::MAX"
                    ),
                });
            }
            Arc::new(UInt64Array::from_iter_values(values.iter().map(
                |g| match **g {
                    Generic::Int(v) => v as u64,
                    Generic::UInt(v) => v,
                    _ => 0,
                },
            )))
        }
        _ => Arc::new(Int64Array::from_iter_values(values.iter().map(
            |g| match **g {
                Generic::Int(v) => v,
                _ => 0,
            },
        ))),
    })
}
