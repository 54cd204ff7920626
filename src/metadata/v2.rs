//! Zarr v2 `.zarray` / `.zgroup` (with `.zattrs`).
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>.

use serde_json::{Map, Value};

use super::{ArrayMetadata, DataType, Endian, FillValue, MAX_ELEMENT_BYTES, u64_list};
use crate::codec::parse::{parse_v2_compressor, parse_v2_filters};
use crate::codec::{ArrayToArray, ArrayToBytes, CodecChain};
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};

pub(super) fn check_format(key: &str, doc: &Map<String, Value>) -> Result<()> {
    match doc.get("zarr_format") {
        Some(v) if v.as_u64() == Some(2) => Ok(()),
        other => Err(Error::metadata(
            key,
            format!("zarr_format must be 2, found {other:?}"),
        )),
    }
}

/// A numpy dtype string: `<i8`, `|b1`, `>f4`, `<U5`, `|S5`, `|O`.
fn parse_dtype(key: &str, dtype: &str) -> Result<(Option<DataType>, Endian)> {
    let unsupported = || Error::UnsupportedDataType {
        name: format!("{dtype:?}"),
        key: key.to_string(),
    };
    let mut chars = dtype.chars();
    let endian = match chars.next() {
        Some('<') | Some('|') | Some('=') => Endian::Little,
        Some('>') => Endian::Big,
        _ => return Err(unsupported()),
    };
    if !dtype.is_ascii() {
        return Err(unsupported());
    }
    let rest = chars.as_str();
    let (kind, size) = rest.split_at(rest.len().min(1));
    if kind == "O" && size.is_empty() {
        return Ok((None, endian));
    }
    let size: usize = size.parse().map_err(|_| unsupported())?;
    if size > MAX_ELEMENT_BYTES / 4 {
        return Err(Error::metadata(
            key,
            format!(
                "dtype {dtype:?}: elements wider than {MAX_ELEMENT_BYTES} bytes are not supported"
            ),
        ));
    }
    let t = match (kind, size) {
        ("b", 1) => DataType::Bool,
        ("i", 1) => DataType::Int8,
        ("i", 2) => DataType::Int16,
        ("i", 4) => DataType::Int32,
        ("i", 8) => DataType::Int64,
        ("u", 1) => DataType::UInt8,
        ("u", 2) => DataType::UInt16,
        ("u", 4) => DataType::UInt32,
        ("u", 8) => DataType::UInt64,
        ("f", 4) => DataType::Float32,
        ("f", 8) => DataType::Float64,
        ("U", n) if n > 0 => DataType::FixedUtf32 { chars: n },
        ("S", n) if n > 0 => DataType::NullTerminatedBytes { length: n },
        _ => return Err(unsupported()),
    };
    Ok((Some(t), endian))
}

pub(super) fn parse_array(
    key: &str,
    doc: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Result<ArrayMetadata> {
    check_format(key, doc)?;
    let shape = u64_list(key, "shape", doc.get("shape"))?;
    let chunk_shape = u64_list(key, "chunks", doc.get("chunks"))?;
    let dtype = match doc.get("dtype") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::UnsupportedDataType {
                name: other.to_string(),
                key: key.to_string(),
            });
        }
        None => return Err(Error::metadata(key, "\"dtype\" is missing")),
    };
    let (fixed, endian) = parse_dtype(key, dtype)?;
    let vlen = parse_v2_filters(doc.get("filters").unwrap_or(&Value::Null), key)?;
    let (data_type, array_to_bytes) = match (fixed, vlen) {
        (None, Some("vlen-utf8")) => (DataType::String, ArrayToBytes::VlenInterleaved),
        (None, Some(_)) => (DataType::Bytes, ArrayToBytes::VlenInterleaved),
        (None, None) => {
            return Err(Error::metadata(
                key,
                "dtype \"|O\" needs a vlen-utf8 or vlen-bytes filter",
            ));
        }
        (Some(t), None) => (t, ArrayToBytes::Bytes { endian }),
        (Some(t), Some(f)) => {
            return Err(Error::metadata(
                key,
                format!("filter {f:?} does not apply to dtype {}", t.zarr_name()),
            ));
        }
    };
    let compressor = parse_v2_compressor(doc.get("compressor").unwrap_or(&Value::Null), key)?;
    // Fortran order is a transpose with the dimensions reversed.
    let order = match doc.get("order") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("order must be \"C\" or \"F\", found {other}"),
            ));
        }
    };
    let array_to_array = match order {
        Some("C") | None => vec![],
        Some("F") if shape.len() <= 1 => vec![],
        Some("F") => vec![ArrayToArray::Transpose {
            order: (0..shape.len()).rev().collect(),
        }],
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("order must be \"C\" or \"F\", found {other:?}"),
            ));
        }
    };
    let separator = match doc.get("dimension_separator") {
        None | Some(Value::Null) => '.',
        Some(Value::String(s)) if s == "." => '.',
        Some(Value::String(s)) if s == "/" => '/',
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("dimension_separator must be \".\" or \"/\", found {other}"),
            ));
        }
    };
    let fill_value = FillValue::parse(
        doc.get("fill_value").unwrap_or(&Value::Null),
        &data_type,
        true,
    )
    .map_err(|m| Error::metadata(key, m))?;
    let meta = ArrayMetadata {
        zarr_format: 2,
        shape,
        chunk_shape,
        data_type,
        fill_value,
        chunk_key_encoding: ChunkKeyEncoding {
            kind: KeyKind::V2,
            separator,
        },
        codecs: CodecChain {
            array_to_array,
            array_to_bytes,
            bytes_to_bytes: compressor.into_iter().collect(),
        },
        attributes,
        dimension_names: None,
    };
    meta.validate(key)?;
    Ok(meta)
}
