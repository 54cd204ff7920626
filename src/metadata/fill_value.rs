//! Fill values: what a missing chunk, or the padding of an edge chunk, holds.
//!
//! Accepted JSON forms, by data type:
//!
//! | data type | forms |
//! |---|---|
//! | `bool` | `true`, `false` (`null` in v2 = `false`) |
//! | integers | a JSON integer in range (`null` in v2 = 0) |
//! | floats (`float16`, `float32`, `float64`) | a number, `"NaN"`, `"Infinity"`, `"-Infinity"`, or `"0x…"` raw IEEE bits (`null` in v2 = 0.0) |
//! | `numpy.datetime64`, `numpy.timedelta64` | an int64 count of the unit, or `"NaT"` (= `i64::MIN`, what zarr-python writes by default; `null` in v2 = NaT) |
//! | `string`, `fixed_length_utf32` | a JSON string; v2 also `null` (= `""`) and a number (its decimal text, as zarr-python reads it) |
//! | bytes types | a base64 string, or an array of integers 0..=255; v2 also `null` (= empty) |

use base64::Engine;
use serde_json::Value;

use super::DataType;

/// A parsed fill value. Equal floats are the same value, NaN included (`"NaN"`
/// equals `"NaN"`: a fill value is a value, not an arithmetic operand).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FillValue {
    /// For `bool`.
    Bool(bool),
    /// For signed integers, and the int64 count of `datetime64` / `timedelta64`
    /// (`i64::MIN` is NaT).
    Int(i64),
    /// For unsigned integers.
    UInt(u64),
    /// For floats (stored as f64; exact for float32 values).
    Float(f64),
    /// For strings (UTF-8) and bytes types.
    Bytes(Vec<u8>),
}

impl PartialEq for FillValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Float(a), Self::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Self::Bool(a), Self::Bool(b)) => a == b,
            (Self::Int(a), Self::Int(b)) => a == b,
            (Self::UInt(a), Self::UInt(b)) => a == b,
            (Self::Bytes(a), Self::Bytes(b)) => a == b,
            _ => false,
        }
    }
}

/// A fill value that does not fit its data type ([`FillValue::parse`]): why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fill_value {found}: expected {expected}")]
pub(crate) struct InvalidFillValue {
    /// What the data type takes.
    pub(crate) expected: String,
    /// The value given, as JSON.
    pub(crate) found: String,
}

impl InvalidFillValue {
    fn new(expected: impl Into<String>, found: &Value) -> Self {
        Self {
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}

impl FillValue {
    /// The fill value zarrow uses when metadata gives none (v2 `null`).
    pub fn default_for(data_type: &DataType) -> Self {
        match data_type {
            DataType::Bool => Self::Bool(false),
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Self::Int(0),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                Self::UInt(0)
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => Self::Float(0.0),
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => Self::Int(i64::MIN),
            _ => Self::Bytes(Vec::new()),
        }
    }

    /// A readable rendering: strings quoted, bytes as a byte-string literal.
    pub(crate) fn describe(&self, data_type: &DataType) -> String {
        match self {
            Self::Bool(b) => b.to_string(),
            Self::Int(i64::MIN) if data_type.has_nat() => "NaT".to_string(),
            Self::Int(v) => v.to_string(),
            Self::UInt(v) => v.to_string(),
            Self::Float(v) => v.to_string(),
            Self::Bytes(b) if data_type.is_text() => format!("{:?}", String::from_utf8_lossy(b)),
            Self::Bytes(b) => format!("b\"{}\"", b.escape_ascii()),
        }
    }

    /// Parse `value` for `data_type`. `v2` enables the Zarr v2 leniencies.
    ///
    /// # Errors
    /// [`InvalidFillValue`], saying why the value does not fit the type.
    pub(crate) fn parse(
        value: &Value,
        data_type: &DataType,
        v2: bool,
    ) -> Result<Self, InvalidFillValue> {
        Self::parse_checked(value, data_type, v2)
    }

    fn parse_checked(
        value: &Value,
        data_type: &DataType,
        v2: bool,
    ) -> Result<Self, InvalidFillValue> {
        let fill = Self::parse_raw(value, data_type, v2)?;
        // Fixed-width values read back with trailing NULs stripped (numpy's rule);
        // the fill value must read back the same way, and must fit the width.
        match (data_type, fill) {
            (DataType::NullTerminatedBytes { length }, Self::Bytes(mut b)) => {
                while b.last() == Some(&0) {
                    b.pop();
                }
                if b.len() > *length {
                    return Err(InvalidFillValue::new(
                        format!("at most {length} bytes"),
                        value,
                    ));
                }
                Ok(Self::Bytes(b))
            }
            (DataType::FixedUtf32 { chars }, Self::Bytes(b)) => {
                let text = String::from_utf8_lossy(&b);
                let text = text.trim_end_matches('\0');
                if text.chars().count() > *chars {
                    return Err(InvalidFillValue::new(
                        format!("at most {chars} characters"),
                        value,
                    ));
                }
                Ok(Self::Bytes(text.as_bytes().to_vec()))
            }
            (_, fill) => Ok(fill),
        }
    }

    fn parse_raw(value: &Value, data_type: &DataType, v2: bool) -> Result<Self, InvalidFillValue> {
        if value.is_null() {
            return if v2 {
                Ok(Self::default_for(data_type))
            } else {
                Err(InvalidFillValue::new(
                    format!("a value of data type {data_type} (Zarr v3 requires one)"),
                    value,
                ))
            };
        }
        let bad = || InvalidFillValue::new(format!("a value of data type {data_type}"), value);
        match data_type {
            DataType::Bool => match value {
                Value::Bool(b) => Ok(Self::Bool(*b)),
                Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                    Ok(Self::Bool(n.as_u64() == Some(1)))
                }
                _ => Err(bad()),
            },
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                let (lo, hi) = int_range(data_type);
                let v = integral(value).ok_or_else(bad)?;
                let v = i64::try_from(v).map_err(|_| bad())?;
                if v < lo || v > hi {
                    return Err(bad());
                }
                Ok(Self::Int(v))
            }
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                let max = uint_max(data_type);
                let v = integral(value).ok_or_else(bad)?;
                let v = u64::try_from(v).map_err(|_| bad())?;
                if v > max {
                    return Err(bad());
                }
                Ok(Self::UInt(v))
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                let width = data_type.fixed_size().unwrap_or(8);
                parse_float(value, width).map(Self::Float).ok_or_else(bad)
            }
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => match value {
                Value::String(s) if s == "NaT" => Ok(Self::Int(i64::MIN)),
                _ => integral(value)
                    .and_then(|v| i64::try_from(v).ok())
                    .map(Self::Int)
                    .ok_or_else(bad),
            },
            DataType::String | DataType::FixedUtf32 { .. } => match value {
                Value::String(s) => Ok(Self::Bytes(s.as_bytes().to_vec())),
                Value::Number(n) if v2 => Ok(Self::Bytes(n.to_string().into_bytes())),
                _ => Err(bad()),
            },
            DataType::Bytes | DataType::NullTerminatedBytes { .. } => match value {
                Value::String(s) => base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map(Self::Bytes)
                    .map_err(|e| InvalidFillValue::new(format!("base64 ({e})"), value)),
                Value::Array(items) => items
                    .iter()
                    .map(|v| v.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect::<Option<Vec<u8>>>()
                    .map(Self::Bytes)
                    .ok_or_else(bad),
                Value::Number(n) if v2 && n.as_u64() == Some(0) => Ok(Self::Bytes(Vec::new())),
                _ => Err(bad()),
            },
        }
    }
}

/// A JSON number that is an integer (including `1.0`), as i128.
fn integral(value: &Value) -> Option<i128> {
    let Value::Number(n) = value else { return None };
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 2f64.powi(63)).then_some(f as i128)
}

fn int_range(data_type: &DataType) -> (i64, i64) {
    match data_type {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    }
}

fn uint_max(data_type: &DataType) -> u64 {
    match data_type {
        DataType::UInt8 => u8::MAX.into(),
        DataType::UInt16 => u16::MAX.into(),
        DataType::UInt32 => u32::MAX.into(),
        _ => u64::MAX,
    }
}

/// A float fill value for a float of `width` bytes (2, 4 or 8); `"0x…"` must
/// spell exactly that many bytes.
fn parse_float(value: &Value, width: usize) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            hex if hex.starts_with("0x") => {
                let digits = &hex[2..];
                match (width, digits.len()) {
                    (2, 4) => u16::from_str_radix(digits, 16)
                        .ok()
                        .map(|b| half::f16::from_bits(b).to_f64()),
                    (4, 8) => u32::from_str_radix(digits, 16)
                        .ok()
                        .map(|b| f32::from_bits(b).into()),
                    (8, 16) => u64::from_str_radix(digits, 16).ok().map(f64::from_bits),
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Expected values are from the Zarr v3 core spec, section "fill_value".
    #[test]
    fn spec_forms() {
        let f64t = DataType::Float64;
        assert!(
            matches!(FillValue::parse(&json!("NaN"), &f64t, false), Ok(FillValue::Float(f)) if f.is_nan())
        );
        assert_eq!(
            FillValue::parse(&json!("-Infinity"), &f64t, false),
            Ok(FillValue::Float(f64::NEG_INFINITY))
        );
        assert_eq!(
            FillValue::parse(&json!("0x3ff0000000000000"), &f64t, false),
            Ok(FillValue::Float(1.0))
        );
        assert_eq!(
            FillValue::parse(&json!("0x3f800000"), &DataType::Float32, false),
            Ok(FillValue::Float(1.0))
        );
        assert_eq!(
            FillValue::parse(&json!(-128), &DataType::Int8, false),
            Ok(FillValue::Int(-128))
        );
        assert!(FillValue::parse(&json!(128), &DataType::Int8, false).is_err());
        assert!(FillValue::parse(&json!(-1), &DataType::UInt8, false).is_err());
        assert_eq!(
            FillValue::parse(&json!(u64::MAX), &DataType::UInt64, false),
            Ok(FillValue::UInt(u64::MAX))
        );
        assert_eq!(
            FillValue::parse(&json!("AAE="), &DataType::Bytes, false),
            Ok(FillValue::Bytes(vec![0, 1]))
        );
        assert_eq!(
            FillValue::parse(&json!([0, 1]), &DataType::Bytes, false),
            Ok(FillValue::Bytes(vec![0, 1]))
        );
        assert!(FillValue::parse(&json!([256]), &DataType::Bytes, false).is_err());
        assert!(FillValue::parse(&Value::Null, &DataType::String, false).is_err());
        assert_eq!(
            FillValue::parse(&Value::Null, &DataType::String, true),
            Ok(FillValue::Bytes(vec![]))
        );
        assert_eq!(
            FillValue::parse(&json!(0), &DataType::String, true),
            Ok(FillValue::Bytes(b"0".to_vec()))
        );
        assert_eq!(
            FillValue::parse(&json!(true), &DataType::Bool, false),
            Ok(FillValue::Bool(true))
        );
    }

    #[test]
    fn float16_and_numpy_time_forms() {
        let f16t = DataType::Float16;
        assert_eq!(
            FillValue::parse(&json!("0x3c00"), &f16t, false),
            Ok(FillValue::Float(1.0))
        );
        assert!(
            matches!(FillValue::parse(&json!("NaN"), &f16t, false), Ok(FillValue::Float(f)) if f.is_nan())
        );
        assert_eq!(
            FillValue::parse(&json!("Infinity"), &f16t, false),
            Ok(FillValue::Float(f64::INFINITY))
        );
        // Four hex digits for float16, not eight.
        assert!(FillValue::parse(&json!("0x3f800000"), &f16t, false).is_err());
        // What zarr-python 3.1.6 writes for NaT, and the string spelling.
        let ns = DataType::DateTime64(crate::metadata::DateTimeUnit::Nanosecond);
        assert_eq!(
            FillValue::parse(&json!(i64::MIN), &ns, false),
            Ok(FillValue::Int(i64::MIN))
        );
        assert_eq!(
            FillValue::parse(&json!("NaT"), &ns, false),
            Ok(FillValue::Int(i64::MIN))
        );
        assert_eq!(FillValue::Int(i64::MIN).describe(&ns), "NaT");
        assert_eq!(
            FillValue::parse(&Value::Null, &ns, true),
            Ok(FillValue::Int(i64::MIN))
        );
        assert_eq!(
            FillValue::parse(&json!(86_400), &ns, false),
            Ok(FillValue::Int(86_400))
        );
        assert!(FillValue::parse(&json!("2020-01-01"), &ns, false).is_err());
    }
}
