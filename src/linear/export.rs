//! Writing the linear format from an Arrow array (the C-order values of an array of
//! `shape`).
//!
//! How each Zarr / Arrow type is written:
//!
//! | Zarr data type | `dtype` | each element |
//! |---|---|---|
//! | `float64`, `float32` | `float64`, `float32` | a JSON number; NaN and infinities (which JSON cannot spell) as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `int8`, `int16`, `int32`, `uint8`, `uint16`, `uint32`, `bool` | the same name | a JSON number / boolean |
//! | `int64`, `uint64` | `generic` (stdlib has no 64-bit integers) | an exact JSON integer; JavaScript and spreadsheets read numbers as doubles and round those beyond 2^53, zarrow reads them exactly |
//! | `string`, `fixed_length_utf32` | `generic` | a JSON string |
//! | bytes types | `generic` | a JSON list of the byte values, e.g. `[104, 105]` |
//!
//! The view is always row-major and contiguous: strides in elements, offset 0,
//! capacity = length.

use std::io::Write;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_schema::DataType as ArrowType;

use super::LinearType;
use crate::error::{Error, Result};

/// One token as zarrow writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Token<'a> {
    Str(&'a str),
    Int(i64),
    UInt(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Bytes(&'a [u8]),
}

impl Token<'_> {
    /// The token's JSON text.
    pub(crate) fn json(self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = match self {
            Token::Str(s) => serde_json::to_writer(&mut *out, s),
            Token::Int(v) => serde_json::to_writer(&mut *out, &v),
            Token::UInt(v) => serde_json::to_writer(&mut *out, &v),
            Token::F32(v) if v.is_finite() => serde_json::to_writer(&mut *out, &v),
            Token::F64(v) if v.is_finite() => serde_json::to_writer(&mut *out, &v),
            Token::F32(v) => serde_json::to_writer(&mut *out, non_finite(v.into())),
            Token::F64(v) => serde_json::to_writer(&mut *out, non_finite(v)),
            Token::Bool(v) => serde_json::to_writer(&mut *out, &v),
            Token::Bytes(b) => serde_json::to_writer(&mut *out, b),
        };
    }
}

pub(crate) fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

fn dtype_for(t: &ArrowType) -> Result<LinearType> {
    Ok(match t {
        ArrowType::Float64 => LinearType::Float64,
        ArrowType::Float32 => LinearType::Float32,
        ArrowType::Int8 => LinearType::Int8,
        ArrowType::Int16 => LinearType::Int16,
        ArrowType::Int32 => LinearType::Int32,
        ArrowType::UInt8 => LinearType::UInt8,
        ArrowType::UInt16 => LinearType::UInt16,
        ArrowType::UInt32 => LinearType::UInt32,
        ArrowType::Boolean => LinearType::Bool,
        ArrowType::Int64
        | ArrowType::UInt64
        | ArrowType::Utf8
        | ArrowType::LargeUtf8
        | ArrowType::Utf8View
        | ArrowType::Binary
        | ArrowType::LargeBinary
        | ArrowType::BinaryView => LinearType::Generic,
        other => {
            return Err(Error::InvalidArgument(format!(
                "the linear format has no form for {other}"
            )));
        }
    })
}

/// Call `f` with every token of the array: version, header, then the values.
pub(crate) fn for_each_token(
    array: &dyn Array,
    shape: &[u64],
    mut f: impl FnMut(Token),
) -> Result<()> {
    let len: u64 = shape.iter().product();
    if len != array.len() as u64 {
        return Err(Error::InvalidArgument(format!(
            "{} values for shape {shape:?}",
            array.len()
        )));
    }
    let dtype = dtype_for(array.data_type())?;
    for t in ["version", "1.0.0", "ndarray", "shape"] {
        f(Token::Str(t));
    }
    shape.iter().for_each(|&d| f(Token::UInt(d)));
    f(Token::Str("strides"));
    if shape.is_empty() {
        f(Token::Int(0));
    }
    for d in 0..shape.len() {
        f(Token::UInt(shape[d + 1..].iter().product()));
    }
    f(Token::Str("offset"));
    f(Token::Int(0));
    for t in ["order", "row-major", "dtype", dtype.name(), "length"] {
        f(Token::Str(t));
    }
    f(Token::UInt(len));
    f(Token::Str("capacity"));
    f(Token::UInt(len));
    f(Token::Str("data"));
    match array.data_type() {
        ArrowType::Float64 => array
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::F64(v))),
        ArrowType::Float32 => array
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::F32(v))),
        ArrowType::Int8 => array
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::Int(v.into()))),
        ArrowType::Int16 => array
            .as_primitive::<Int16Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::Int(v.into()))),
        ArrowType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::Int(v.into()))),
        ArrowType::Int64 => array
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::Int(v))),
        ArrowType::UInt8 => array
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::UInt(v.into()))),
        ArrowType::UInt16 => array
            .as_primitive::<UInt16Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::UInt(v.into()))),
        ArrowType::UInt32 => array
            .as_primitive::<UInt32Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::UInt(v.into()))),
        ArrowType::UInt64 => array
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .for_each(|&v| f(Token::UInt(v))),
        ArrowType::Boolean => array
            .as_boolean()
            .values()
            .iter()
            .for_each(|v| f(Token::Bool(v))),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            crate::write::for_each_value(array, |v| {
                f(Token::Str(std::str::from_utf8(v).unwrap_or_default()))
            })
            .map_err(Error::InvalidArgument)?
        }
        _ => crate::write::for_each_value(array, |v| f(Token::Bytes(v)))
            .map_err(Error::InvalidArgument)?,
    }
    Ok(())
}

/// Write the array as one linear-format JSON document, one token per line.
pub fn write_json(mut w: impl Write, array: &dyn Array, shape: &[u64]) -> Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    buf.push(b'[');
    let mut first = true;
    let mut io = Ok(());
    for_each_token(array, shape, |token| {
        buf.extend_from_slice(if first { b"\n  " } else { b",\n  " });
        first = false;
        token.json(&mut buf);
        if buf.len() > 1 << 16 && io.is_ok() {
            io = w.write_all(&buf);
            buf.clear();
        }
    })?;
    buf.extend_from_slice(b"\n]\n");
    io.and_then(|()| w.write_all(&buf))
        .map_err(|e| Error::InvalidArgument(format!("writing JSON: {e}")))
}
