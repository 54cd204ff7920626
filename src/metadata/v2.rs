//! Zarr v2 `.zarray` / `.zgroup` (with `.zattrs`).
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html>.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    ArrayMetadata, CodecMetadata, DataType, DateTimeUnit, Endian, FillValue, GroupMetadata,
    MAX_ELEMENT_BYTES, from_value_at, parse_json, unsupported_time_unit,
};
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};

/// A `.zarray` document as written.
#[derive(Deserialize)]
struct Zarray {
    shape: Vec<u64>,
    chunks: Vec<u64>,
    dtype: Option<Value>,
    compressor: Option<Map<String, Value>>,
    fill_value: Option<Value>,
    order: Option<String>,
    filters: Option<Vec<Map<String, Value>>>,
    dimension_separator: Option<String>,
}

fn check_format(key: &str, zarr_format: Option<&Value>) -> Result<()> {
    match zarr_format {
        Some(v) if v.as_u64() == Some(2) => Ok(()),
        Some(other) => Err(Error::metadata_found(key, "zarr_format", "2", other)),
        None => Err(Error::metadata(
            key,
            "zarr_format",
            "2 (the field is required)",
        )),
    }
}

/// Parse a `.zattrs` document.
///
/// # Errors
/// [`Error::Json`] or [`Error::Metadata`] when it is not a JSON object.
pub(crate) fn parse_zattrs(key: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    parse_json(key, bytes)
}

/// Parse a `.zgroup` document, with the group's `attributes` (from `.zattrs`).
///
/// # Errors
/// [`Error::Json`] or [`Error::Metadata`].
pub(crate) fn parse_zgroup(
    key: &str,
    bytes: &[u8],
    attributes: Map<String, Value>,
) -> Result<GroupMetadata> {
    let doc = parse_json(key, bytes)?;
    check_format(key, doc.get("zarr_format"))?;
    Ok(GroupMetadata {
        zarr_format: 2,
        attributes,
    })
}

/// A v2 `{"id": ..., ...}` object as a codec entry named by its id.
fn codec_entry(key: &str, what: &str, object: Map<String, Value>) -> Result<CodecMetadata> {
    CodecMetadata::from_v2(object).map_err(|object| {
        Error::metadata_found(key, what, "an object with an \"id\"", Value::Object(object))
    })
}

/// A numpy dtype string: `<i8`, `|b1`, `>f4`, `<U5`, `|S5`, `|O`, `<M8[ns]`,
/// `<m8[s]` (also the `dtype` of a numcodecs filter).
pub(crate) fn parse_dtype(key: &str, dtype: &str) -> Result<(Option<DataType>, Endian)> {
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
    // numpy datetime64 / timedelta64: `M8[unit]`, `m8[unit]` (a bare `M8` has no
    // unit, and numpy refuses to store it).
    if kind == "M" || kind == "m" {
        let Some(unit) = size.strip_prefix("8[").and_then(|u| u.strip_suffix(']')) else {
            return Err(unsupported());
        };
        let name = if kind == "M" {
            "numpy.datetime64"
        } else {
            "numpy.timedelta64"
        };
        return match (kind, DateTimeUnit::parse(unit)) {
            ("M", Some(u)) => Ok((Some(DataType::DateTime64(u)), endian)),
            ("m", Some(u)) if u != DateTimeUnit::Day => {
                Ok((Some(DataType::TimeDelta64(u)), endian))
            }
            _ => Err(Error::UnsupportedDataType {
                name: format!("{dtype:?}: {}", unsupported_time_unit(name, unit)),
                key: key.to_string(),
            }),
        };
    }
    let size: usize = size.parse().map_err(|_| unsupported())?;
    if size > MAX_ELEMENT_BYTES / 4 {
        return Err(Error::metadata_found(
            key,
            "dtype",
            format!("elements of at most {MAX_ELEMENT_BYTES} bytes"),
            format!("{dtype:?}"),
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
        ("f", 2) => DataType::Float16,
        ("f", 4) => DataType::Float32,
        ("f", 8) => DataType::Float64,
        ("U", n) if n > 0 => DataType::FixedUtf32 { chars: n },
        ("S", n) if n > 0 => DataType::NullTerminatedBytes { length: n },
        _ => return Err(unsupported()),
    };
    Ok((Some(t), endian))
}

/// A numcodecs `delta` filter (`numcodecs.delta` codec) works on the array's own
/// elements, viewed as its `dtype`: that dtype must be the array's data type, in
/// the byte order of the elements it sees (`endian`; zarr-python 3 hands v3 codecs
/// native, little-endian arrays). Other codecs pass.
pub(crate) fn check_delta(
    key: &str,
    codec: &CodecMetadata,
    data_type: &DataType,
    endian: Endian,
) -> Result<()> {
    if codec.name != "delta" && codec.name != "numcodecs.delta" {
        return Ok(());
    }
    let Some(dtype) = codec.configuration.get("dtype").and_then(Value::as_str) else {
        return Err(Error::Metadata {
            key: key.to_string(),
            field: "configuration.dtype".to_string(),
            codec: Some(codec.name.as_str().into()),
            expected: "a numpy dtype string (the field is required)".to_string(),
            found: None,
        });
    };
    let (t, e) = parse_dtype(key, dtype)?;
    let same_order = e == endian || data_type.fixed_size() == Some(1);
    if t != Some(*data_type) || !same_order {
        return Err(Error::Metadata {
            key: key.to_string(),
            field: "configuration.dtype".to_string(),
            codec: Some(codec.name.as_str().into()),
            expected: format!(
                "the array's data type ({}, {} endian)",
                data_type,
                match endian {
                    Endian::Little => "little",
                    Endian::Big => "big",
                }
            ),
            found: Some(crate::error::cut_owned(&format!("{dtype:?}")).into()),
        });
    }
    Ok(())
}

/// Parse a `.zarray` document, with the array's `attributes` (from `.zattrs`).
///
/// # Errors
/// [`Error::Json`], [`Error::Metadata`] or [`Error::UnsupportedDataType`].
pub(crate) fn parse_zarray(
    key: &str,
    bytes: &[u8],
    attributes: Map<String, Value>,
) -> Result<ArrayMetadata> {
    let map = parse_json(key, bytes)?;
    check_format(key, map.get("zarr_format"))?;
    let doc: Zarray = from_value_at(key, "", Value::Object(map))?;
    let dtype = match &doc.dtype {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::UnsupportedDataType {
                name: other.to_string(),
                key: key.to_string(),
            });
        }
        None => {
            return Err(Error::metadata(
                key,
                "dtype",
                "a numpy dtype string (the field is required)",
            ));
        }
    };
    let (fixed, endian) = parse_dtype(key, dtype)?;
    let filters = doc
        .filters
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, f)| codec_entry(key, &format!("filters[{i}]"), f))
        .collect::<Result<Vec<_>>>()?;
    // The object dtype's filter names the data type; other filters stay codecs
    // (which the codec chain refuses when it does not know them).
    let vlen = filters
        .iter()
        .map(|f| f.name.as_str())
        .find(|n| *n == "vlen-utf8" || *n == "vlen-bytes")
        .map(str::to_string);
    let data_type = match (fixed, vlen.as_deref()) {
        (None, Some("vlen-utf8")) => DataType::String,
        (None, Some(_)) => DataType::Bytes,
        // Another object codec (`json2`, `msgpack2`, `pickle`...): not one zarrow reads.
        (None, None) if !filters.is_empty() => {
            return Err(Error::UnsupportedCodec {
                name: filters[0].name.clone(),
                key: key.to_string(),
            });
        }
        (None, None) => {
            return Err(Error::metadata_found(
                key,
                "filters",
                "a vlen-utf8 or vlen-bytes filter (dtype \"|O\" needs one)",
                "none",
            ));
        }
        (Some(t), None) => t,
        (Some(t), Some(f)) => {
            return Err(Error::metadata_found(
                key,
                "filters",
                format!("no {f:?} filter: it does not apply to dtype {t}"),
                format!("{f:?}"),
            ));
        }
    };
    // Fortran order is a transpose with the dimensions reversed.
    let mut codecs = match doc.order.as_deref() {
        Some("C") | None => vec![],
        Some("F") if doc.shape.len() <= 1 => vec![],
        Some("F") => vec![CodecMetadata::named("transpose").with(
            "order",
            json!((0..doc.shape.len()).rev().collect::<Vec<_>>()),
        )],
        Some(other) => {
            return Err(Error::metadata_found(
                key,
                "order",
                "\"C\" or \"F\"",
                format!("{other:?}"),
            ));
        }
    };
    // Filters apply before the layout; the vlen filter is the layout itself.
    let (layout, others): (Vec<_>, Vec<_>) = filters
        .into_iter()
        .partition(|f| Some(&f.name) == vlen.as_ref());
    for filter in &others {
        check_delta(key, filter, &data_type, endian)?;
    }
    codecs.extend(others);
    match layout.into_iter().next() {
        Some(vlen) => codecs.push(vlen),
        None => codecs.push(CodecMetadata::named("bytes").with(
            "endian",
            json!(match endian {
                Endian::Little => "little",
                Endian::Big => "big",
            }),
        )),
    }
    if let Some(compressor) = doc.compressor {
        codecs.push(codec_entry(key, "compressor", compressor)?);
    }
    let separator = match doc.dimension_separator.as_deref() {
        None | Some(".") => '.',
        Some("/") => '/',
        Some(other) => {
            return Err(Error::metadata_found(
                key,
                "dimension_separator",
                "\".\" or \"/\"",
                format!("{other:?}"),
            ));
        }
    };
    let fill_value_unset = doc.fill_value.as_ref().is_none_or(Value::is_null);
    let fill_value = FillValue::parse(
        doc.fill_value.as_ref().unwrap_or(&Value::Null),
        &data_type,
        true,
    )
    .map_err(|e| Error::metadata_found(key, "fill_value", e.expected, e.found))?;
    let meta = ArrayMetadata {
        zarr_format: 2,
        shape: doc.shape,
        chunk_shape: doc.chunks,
        data_type,
        fill_value,
        fill_value_unset,
        chunk_key_encoding: ChunkKeyEncoding {
            kind: KeyKind::V2,
            separator,
        },
        codecs,
        zep0007: None,
        attributes,
        dimension_names: None,
        stored: super::Stored(Some((
            doc.dtype.clone().unwrap_or(Value::Null),
            doc.fill_value.clone().unwrap_or(Value::Null),
        ))),
    };
    meta.validate(key)?;
    Ok(meta)
}
