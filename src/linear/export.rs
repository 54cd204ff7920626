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
            return Err(Error::UnsupportedArrowType {
                column: None,
                data_type: other.clone(),
                by: crate::error::ArrowTypeUse::Linear,
            });
        }
    })
}

/// The values of an array, typed once for random access.
enum Data<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Bool(&'a arrow_array::BooleanArray),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    Utf8View(&'a arrow_array::StringViewArray),
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    BinaryView(&'a arrow_array::BinaryViewArray),
}

/// Every token of one array (version, header, values), by index: nothing is
/// buffered, so CSV rows and JSON stream straight from the Arrow array.
pub(crate) struct Tokens<'a> {
    header: Vec<Token<'static>>,
    data: Data<'a>,
    len: usize,
}

impl<'a> Tokens<'a> {
    /// The tokens of `array` holding the C-order values of an array of `shape`.
    pub(crate) fn new(array: &'a dyn Array, shape: &[u64]) -> Result<Self> {
        let len: u64 = shape.iter().product();
        if len != array.len() as u64 {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                problem: crate::error::ShapeProblem::ValuesDoNotFill {
                    values: array.len() as u64,
                },
            });
        }
        let dtype = dtype_for(array.data_type())?;
        let mut header: Vec<Token<'static>> = ["version", "1.0.0", "ndarray", "shape"]
            .map(Token::Str)
            .to_vec();
        header.extend(shape.iter().map(|&d| Token::UInt(d)));
        header.push(Token::Str("strides"));
        if shape.is_empty() {
            header.push(Token::Int(0));
        }
        header.extend((0..shape.len()).map(|d| Token::UInt(shape[d + 1..].iter().product())));
        header.extend([Token::Str("offset"), Token::Int(0)]);
        header.extend(["order", "row-major", "dtype", dtype.name(), "length"].map(Token::Str));
        header.extend([
            Token::UInt(len),
            Token::Str("capacity"),
            Token::UInt(len),
            Token::Str("data"),
        ]);
        let data = match array.data_type() {
            ArrowType::Float64 => Data::F64(array.as_primitive::<Float64Type>().values()),
            ArrowType::Float32 => Data::F32(array.as_primitive::<Float32Type>().values()),
            ArrowType::Int8 => Data::I8(array.as_primitive::<Int8Type>().values()),
            ArrowType::Int16 => Data::I16(array.as_primitive::<Int16Type>().values()),
            ArrowType::Int32 => Data::I32(array.as_primitive::<Int32Type>().values()),
            ArrowType::Int64 => Data::I64(array.as_primitive::<Int64Type>().values()),
            ArrowType::UInt8 => Data::U8(array.as_primitive::<UInt8Type>().values()),
            ArrowType::UInt16 => Data::U16(array.as_primitive::<UInt16Type>().values()),
            ArrowType::UInt32 => Data::U32(array.as_primitive::<UInt32Type>().values()),
            ArrowType::UInt64 => Data::U64(array.as_primitive::<UInt64Type>().values()),
            ArrowType::Boolean => Data::Bool(array.as_boolean()),
            ArrowType::Utf8 => Data::Utf8(array.as_string::<i32>()),
            ArrowType::LargeUtf8 => Data::LargeUtf8(array.as_string::<i64>()),
            ArrowType::Utf8View => Data::Utf8View(array.as_string_view()),
            ArrowType::Binary => Data::Binary(array.as_binary::<i32>()),
            ArrowType::LargeBinary => Data::LargeBinary(array.as_binary::<i64>()),
            _ => Data::BinaryView(array.as_binary_view()),
        };
        Ok(Self {
            header,
            data,
            len: array.len(),
        })
    }

    /// How many tokens.
    pub(crate) fn len(&self) -> usize {
        self.header.len() + self.len
    }

    /// Token `i`.
    pub(crate) fn get(&self, i: usize) -> Token<'a> {
        if let Some(&t) = self.header.get(i) {
            return t;
        }
        let i = i - self.header.len();
        match &self.data {
            Data::F64(v) => Token::F64(v[i]),
            Data::F32(v) => Token::F32(v[i]),
            Data::I8(v) => Token::Int(v[i].into()),
            Data::I16(v) => Token::Int(v[i].into()),
            Data::I32(v) => Token::Int(v[i].into()),
            Data::I64(v) => Token::Int(v[i]),
            Data::U8(v) => Token::UInt(v[i].into()),
            Data::U16(v) => Token::UInt(v[i].into()),
            Data::U32(v) => Token::UInt(v[i].into()),
            Data::U64(v) => Token::UInt(v[i]),
            Data::Bool(a) => Token::Bool(a.value(i)),
            Data::Utf8(a) => Token::Str(a.value(i)),
            Data::LargeUtf8(a) => Token::Str(a.value(i)),
            Data::Utf8View(a) => Token::Str(a.value(i)),
            Data::Binary(a) => Token::Bytes(a.value(i)),
            Data::LargeBinary(a) => Token::Bytes(a.value(i)),
            Data::BinaryView(a) => Token::Bytes(a.value(i)),
        }
    }
}

/// Write the array as one linear-format JSON document, one token per line.
pub fn write_json(mut w: impl Write, array: &dyn Array, shape: &[u64]) -> Result<()> {
    let tokens = Tokens::new(array, shape)?;
    let io = |source: std::io::Error| Error::Output {
        what: "the linear format (JSON)".into(),
        source,
    };
    let mut buf = Vec::with_capacity(1 << 16);
    buf.push(b'[');
    for i in 0..tokens.len() {
        buf.extend_from_slice(if i == 0 { b"\n  " } else { b",\n  " });
        tokens.get(i).json(&mut buf);
        if buf.len() > 1 << 16 {
            w.write_all(&buf).map_err(io)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(b"\n]\n");
    w.write_all(&buf).map_err(io)
}
