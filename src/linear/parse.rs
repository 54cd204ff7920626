//! Parsing the linear format, one token at a time, as the RFC says a parser must:
//! `"ndarray"` first and `"data"` last in the header, every other field in any
//! order and each exactly once. JSON is streamed through serde (the document is
//! never held as a tree), so memory is the typed data buffer plus small constants.

use std::collections::HashSet;
use std::fmt;
use std::io::Read;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use super::{GenericValues, Linear, LinearType, Order, Values};
use crate::error::{Error, Result};

/// `field` was expected to be `expected`, and `found` was there.
fn err(
    field: impl Into<String>,
    expected: impl Into<String>,
    found: impl std::fmt::Display,
) -> Error {
    Error::linear(field, expected, Some(&found))
}

/// `field` was expected to be `expected` (which says it all: a missing field).
fn missing(field: &str, expected: impl Into<String>) -> Error {
    Error::linear(field, expected, None)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    Version,
    NdArray,
    /// Expecting a field name.
    Field,
    /// Reading shape values (until the next field name).
    Shape,
    /// Reading stride values (until the next field name).
    Strides,
    /// Expecting the single value of a field.
    Value(&'static str),
    Data,
}

/// A token-driven parser of one linear-format array.
#[derive(Debug)]
pub(crate) struct Parser {
    state: State,
    seen: HashSet<&'static str>,
    shape: Vec<u64>,
    strides: Vec<i64>,
    offset: Option<u64>,
    order: Option<Order>,
    dtype: Option<LinearType>,
    length: Option<u64>,
    capacity: Option<u64>,
    data: Option<Values>,
}

const FIELDS: [&str; 8] = [
    "shape", "strides", "offset", "order", "dtype", "length", "capacity", "data",
];

impl Parser {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Start,
            seen: HashSet::new(),
            shape: Vec::new(),
            strides: Vec::new(),
            offset: None,
            order: None,
            dtype: None,
            length: None,
            capacity: None,
            data: None,
        }
    }

    /// Feed the next token.
    pub(crate) fn push(&mut self, token: Value) -> Result<()> {
        match self.state {
            State::Start => match token.as_str() {
                Some("version") => self.state = State::Version,
                _ => {
                    return Err(err(
                        "version",
                        "\"version\" as the array's first element",
                        token,
                    ));
                }
            },
            State::Version => {
                let v = token
                    .as_str()
                    .ok_or_else(|| err("version", "a version string", &token))?;
                let major = v.split('.').next().and_then(|m| m.parse::<u64>().ok());
                if major != Some(1) || v.split('.').count() != 3 {
                    return Err(err(
                        "version",
                        "a version 1.x.y (the versions zarrow reads)",
                        format_args!("{v:?}"),
                    ));
                }
                self.state = State::NdArray;
            }
            State::NdArray => match token.as_str() {
                Some("ndarray") => self.state = State::Field,
                _ => {
                    return Err(err(
                        "ndarray",
                        "\"ndarray\" as the first header element",
                        token,
                    ));
                }
            },
            State::Field | State::Shape | State::Strides => match (&token, self.state) {
                (Value::Number(_), State::Shape) => {
                    let v = token
                        .as_u64()
                        .ok_or_else(|| err("shape", "a dimension size", &token))?;
                    self.shape.push(v);
                }
                (Value::Number(_), State::Strides) => {
                    let v = token
                        .as_i64()
                        .ok_or_else(|| err("strides", "an integer stride", &token))?;
                    self.strides.push(v);
                }
                (Value::String(name), _) => self.field(name)?,
                _ => {
                    return Err(err("header", "a header field name", token));
                }
            },
            State::Value(field) => {
                match field {
                    "order" => {
                        self.order = Some(match token.as_str() {
                            Some("row-major") => Order::RowMajor,
                            Some("column-major") => Order::ColumnMajor,
                            _ => {
                                return Err(err(
                                    "order",
                                    "\"row-major\" or \"column-major\"",
                                    token,
                                ));
                            }
                        })
                    }
                    "dtype" => {
                        let name = token.as_str().unwrap_or_default();
                        self.dtype = Some(LinearType::parse(name).ok_or_else(|| {
                            err("dtype", "one of float64, float32, int8, int16, int32, uint8, uint8c, uint16, uint32, bool, generic", &token)
                        })?);
                    }
                    _ => {
                        let v = token
                            .as_u64()
                            .ok_or_else(|| err(field, "a non-negative integer", &token))?;
                        match field {
                            "offset" => self.offset = Some(v),
                            "length" => self.length = Some(v),
                            _ => self.capacity = Some(v),
                        }
                    }
                }
                self.state = State::Field;
            }
            State::Data => self.push_data(token)?,
        }
        Ok(())
    }

    fn field(&mut self, name: &str) -> Result<()> {
        let Some(field) = FIELDS.iter().copied().find(|f| *f == name) else {
            return Err(err(
                "header",
                "a header field of the RFC",
                format_args!("{name:?}"),
            ));
        };
        if !self.seen.insert(field) {
            return Err(err(field, "one occurrence in the header", "a second"));
        }
        self.state = match field {
            "shape" => State::Shape,
            "strides" => State::Strides,
            "data" => {
                self.start_data()?;
                State::Data
            }
            other => State::Value(other),
        };
        Ok(())
    }

    fn start_data(&mut self) -> Result<()> {
        for field in FIELDS {
            if !self.seen.contains(field) {
                return Err(missing(field, "a header field (it is required)"));
            }
        }
        // Reserve from the declared capacity, but never trust it for a large
        // allocation: the buffer grows with the data actually present.
        let hint = self.capacity.unwrap_or(0).min(1 << 16) as usize;
        self.data = Some(match self.dtype {
            Some(LinearType::Float64) => Values::Float64(Vec::with_capacity(hint)),
            Some(LinearType::Float32) => Values::Float32(Vec::with_capacity(hint)),
            Some(LinearType::Int8) => Values::Int8(Vec::with_capacity(hint)),
            Some(LinearType::Int16) => Values::Int16(Vec::with_capacity(hint)),
            Some(LinearType::Int32) => Values::Int32(Vec::with_capacity(hint)),
            Some(LinearType::UInt8) => Values::UInt8(Vec::with_capacity(hint)),
            Some(LinearType::UInt16) => Values::UInt16(Vec::with_capacity(hint)),
            Some(LinearType::UInt32) => Values::UInt32(Vec::with_capacity(hint)),
            Some(LinearType::Bool) => Values::Bool(Vec::with_capacity(hint)),
            _ => Values::Generic(GenericValues::Empty),
        });
        Ok(())
    }

    fn push_data(&mut self, token: Value) -> Result<()> {
        let Some(data) = self.data.as_mut() else {
            return Ok(());
        };
        let i = data.len();
        let dtype = self.dtype.map_or("generic", LinearType::name);
        let bad = || {
            err(
                format!("data[{i}]"),
                format!("a value of dtype {dtype}"),
                &token,
            )
        };
        let int = || token.as_i64().ok_or_else(bad);
        let uint = || token.as_u64().ok_or_else(bad);
        match data {
            Values::Float64(v) => v.push(float(&token).ok_or_else(bad)?),
            Values::Float32(v) => {
                let f = float(&token).ok_or_else(bad)?;
                let narrow = f as f32;
                // Rounding to the nearest float32 is expected; overflowing it is not.
                if f.is_finite() && narrow.is_infinite() {
                    return Err(bad());
                }
                v.push(narrow);
            }
            Values::Int8(v) => v.push(i8::try_from(int()?).map_err(|_| bad())?),
            Values::Int16(v) => v.push(i16::try_from(int()?).map_err(|_| bad())?),
            Values::Int32(v) => v.push(i32::try_from(int()?).map_err(|_| bad())?),
            Values::UInt8(v) => v.push(u8::try_from(uint()?).map_err(|_| bad())?),
            Values::UInt16(v) => v.push(u16::try_from(uint()?).map_err(|_| bad())?),
            Values::UInt32(v) => v.push(u32::try_from(uint()?).map_err(|_| bad())?),
            Values::Bool(v) => v.push(token.as_bool().ok_or_else(bad)?),
            Values::Generic(g) => push_generic(g, &token)
                .map_err(|problem| err(format!("data[{i}]"), problem, &token))?,
        }
        Ok(())
    }

    /// Validate the whole array once every token is in.
    pub(crate) fn finish(self) -> Result<Linear> {
        if self.state != State::Data {
            return Err(missing("data", "\"data\" before the array ends"));
        }
        let (Some(offset), Some(order), Some(dtype), Some(length), Some(capacity), Some(data)) = (
            self.offset,
            self.order,
            self.dtype,
            self.length,
            self.capacity,
            self.data,
        ) else {
            return Err(missing("header", "every header field before \"data\""));
        };
        let (shape, strides) = (self.shape, self.strides);
        if shape.is_empty() {
            if strides != [0] {
                return Err(err(
                    "strides",
                    "one stride equal to 0 (a 0-d array)",
                    format_args!("{strides:?}"),
                ));
            }
        } else if strides.len() != shape.len() {
            return Err(err(
                "strides",
                format!("one stride per dimension ({})", shape.len()),
                format_args!("{} strides", strides.len()),
            ));
        }
        let elements = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
        if elements != Some(length) {
            return Err(err(
                "length",
                format!("the product of the shape {shape:?}"),
                length,
            ));
        }
        if data.len() as u64 != capacity {
            return Err(err(
                "capacity",
                format!("the number of data elements ({})", data.len()),
                capacity,
            ));
        }
        if length > 0 {
            // The lowest and highest buffer index the view reaches.
            let (mut lo, mut hi) = (offset as i128, offset as i128);
            for (&n, &s) in shape.iter().zip(&strides) {
                let reach = (n as i128 - 1) * s as i128;
                if reach < 0 { lo += reach } else { hi += reach }
            }
            if lo < 0 || hi >= capacity as i128 {
                return Err(err(
                    "offset",
                    format!(
                        "a view inside the data buffer of {capacity} elements (strides {strides:?}, shape {shape:?})"
                    ),
                    format_args!("offset {offset}, which indexes {lo}..={hi}"),
                ));
            }
        }
        Ok(Linear {
            shape,
            strides,
            offset,
            order,
            dtype,
            data,
        })
    }
}

/// A float element: a JSON number, or `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has
/// no literals for them).
fn float(token: &Value) -> Option<f64> {
    match token {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Append one `generic` element; every element must be of the first one's kind.
fn push_generic(
    values: &mut GenericValues,
    token: &Value,
) -> std::result::Result<(), &'static str> {
    if *values == GenericValues::Empty {
        *values = match token {
            Value::String(_) => GenericValues::Text {
                data: Vec::new(),
                ends: Vec::new(),
            },
            Value::Array(_) => GenericValues::Bytes {
                data: Vec::new(),
                ends: Vec::new(),
            },
            Value::Bool(_) => GenericValues::Bool(Vec::new()),
            Value::Number(n) if n.is_f64() => GenericValues::Float(Vec::new()),
            Value::Number(_) => GenericValues::Int(Vec::new()),
            _ => return Err("a string, number, boolean or list of bytes"),
        };
    }
    let other_kind = "a value of the same kind as the generic elements before it";
    match (values, token) {
        (GenericValues::Text { data, ends }, Value::String(s)) => {
            data.extend_from_slice(s.as_bytes());
            ends.push(data.len());
        }
        (GenericValues::Bytes { data, ends }, Value::Array(items)) => {
            for item in items {
                data.push(
                    item.as_u64()
                        .and_then(|b| u8::try_from(b).ok())
                        .ok_or("a list of byte values 0..=255")?,
                );
            }
            ends.push(data.len());
        }
        (GenericValues::Bool(v), Value::Bool(b)) => v.push(*b),
        (GenericValues::Float(v), Value::Number(n)) => v.push(n.as_f64().ok_or(other_kind)?),
        (g @ GenericValues::Int(_), Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => push_int(g, i.into()),
            (None, Some(u)) => push_int(g, u.into()),
            _ => {
                // The first non-integer makes every number a float.
                let GenericValues::Int(ints) = g else {
                    return Err(other_kind);
                };
                let mut floats: Vec<f64> = ints.iter().map(|&x| x as f64).collect();
                floats.push(n.as_f64().ok_or(other_kind)?);
                *g = GenericValues::Float(floats);
            }
        },
        _ => return Err(other_kind),
    }
    Ok(())
}

fn push_int(values: &mut GenericValues, v: i128) {
    if let GenericValues::Int(ints) = values {
        ints.push(v);
    }
}

/// Parse one linear-format JSON document, streaming.
///
/// # Errors
/// [`Error::Linear`] naming the field for every RFC violation; invalid JSON.
pub fn parse_json(reader: impl Read) -> Result<Linear> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut parser = Parser::new();
    let mut failure = None;
    if let Err(e) = de.deserialize_seq(Tokens {
        parser: &mut parser,
        failure: &mut failure,
    }) {
        // The parser's own error stopped the visitor: report it as it is.
        return Err(failure.unwrap_or_else(|| err("json", "a JSON array of tokens", e)));
    }
    de.end()
        .map_err(|e| err("json", "nothing after the array", e))?;
    parser.finish()
}

/// Feeds each top-level JSON element to the parser as it is read.
struct Tokens<'a> {
    parser: &'a mut Parser,
    failure: &'a mut Option<Error>,
}

impl<'de> Visitor<'de> for Tokens<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array in the linear exchange format")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(token) = seq.next_element_seed(TokenSeed)? {
            if let Err(e) = self.parser.push(token) {
                *self.failure = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

struct TokenSeed;

impl<'de> DeserializeSeed<'de> for TokenSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(deserializer)
    }
}
