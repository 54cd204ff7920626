//! Zarr v3 `zarr.json`.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html#array-metadata>.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    ArrayMetadata, CodecMetadata, DataType, DateTimeUnit, FillValue, GroupMetadata,
    MAX_ELEMENT_BYTES, NodeMetadata, Zep0007Offsets, from_value_at, parse_json,
    unsupported_time_unit,
};
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};

/// A v3 node document as written.
#[derive(Deserialize)]
struct Document {
    zarr_format: Value,
    node_type: Option<Value>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
    /// Every other field (the array's, and extensions).
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// The array fields of a v3 document.
#[derive(Deserialize)]
struct ArrayFields {
    shape: Vec<u64>,
    data_type: Option<Value>,
    chunk_grid: Named,
    chunk_key_encoding: Option<Named>,
    fill_value: Option<Value>,
    #[serde(default)]
    codecs: Option<Vec<CodecMetadata>>,
    storage_transformers: Option<Vec<Value>>,
    dimension_names: Option<Vec<Option<String>>>,
    /// Fields the spec does not name: extensions, each of which must be an object
    /// with `"must_understand": false` (spec: "Extension points").
    #[serde(flatten)]
    extensions: Map<String, Value>,
}

/// `{"name": ..., "configuration": {...}}`.
#[derive(Deserialize)]
struct Named {
    name: String,
    #[serde(default)]
    configuration: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct RegularGrid {
    chunk_shape: Vec<u64>,
}

#[derive(Deserialize)]
struct KeySettings {
    separator: Option<String>,
}

/// Parse a `zarr.json` document (`key` names it in errors).
///
/// # Errors
/// [`Error::Json`] when it is not JSON; [`Error::Metadata`],
/// [`Error::UnsupportedDataType`] when it is not a valid v3 node.
pub(crate) fn parse_zarr_json(key: &str, bytes: &[u8]) -> Result<NodeMetadata> {
    let doc: Document = from_map(key, "", parse_json(key, bytes)?)?;
    if doc.zarr_format.as_u64() != Some(3) {
        return Err(Error::metadata_found(
            key,
            "zarr_format",
            "3",
            &doc.zarr_format,
        ));
    }
    let attributes = doc.attributes.unwrap_or_default();
    match doc.node_type.as_ref().and_then(Value::as_str) {
        Some("group") => Ok(NodeMetadata::Group(GroupMetadata {
            zarr_format: 3,
            attributes,
        })),
        Some("array") => Ok(NodeMetadata::Array(Box::new(parse_array(
            key, doc.rest, attributes,
        )?))),
        _ => Err(match &doc.node_type {
            Some(other) => Error::metadata_found(key, "node_type", "\"array\" or \"group\"", other),
            None => Error::metadata(
                key,
                "node_type",
                "\"array\" or \"group\" (the field is required)",
            ),
        }),
    }
}

/// A serde-derived view of `map`, its errors naming `key` and the field (its
/// path after `prefix`, where `map` sits in the document).
fn from_map<T: serde::de::DeserializeOwned>(
    key: &str,
    prefix: &str,
    map: Map<String, Value>,
) -> Result<T> {
    from_value_at(key, prefix, Value::Object(map))
}

/// The data type, and the offset width that ZEP0007's object form names.
fn data_type(key: &str, value: Option<&Value>) -> Result<(DataType, Option<Zep0007Offsets>)> {
    let unsupported = |name: String| Error::UnsupportedDataType {
        name,
        key: key.to_string(),
    };
    match value {
        Some(Value::String(name)) => DataType::from_v3_name(name)
            .map(|t| (t, None))
            .ok_or_else(|| unsupported(format!("{name:?}"))),
        Some(Value::Object(obj)) => {
            let name = obj.get("name").and_then(Value::as_str).ok_or_else(|| {
                Error::metadata(key, "data_type.name", "a string (the field is required)")
            })?;
            let length_bytes = || -> Result<usize> {
                obj.get("configuration")
                    .and_then(|c| c.get("length_bytes"))
                    .and_then(Value::as_u64)
                    .filter(|&l| l <= MAX_ELEMENT_BYTES as u64)
                    .map(|l| l as usize)
                    .ok_or_else(|| {
                        let expected =
                            format!("an integer of at most {MAX_ELEMENT_BYTES} (for {name})");
                        match obj.get("configuration").and_then(|c| c.get("length_bytes")) {
                            Some(found) => Error::metadata_found(
                                key,
                                "data_type.configuration.length_bytes",
                                expected,
                                found,
                            ),
                            None => Error::metadata(
                                key,
                                "data_type.configuration.length_bytes",
                                expected,
                            ),
                        }
                    })
            };
            Ok(match name {
                "fixed_length_utf32" => {
                    let bytes = length_bytes()?;
                    if bytes % 4 != 0 {
                        return Err(Error::metadata_found(
                            key,
                            "data_type.configuration.length_bytes",
                            "a multiple of 4 (for fixed_length_utf32)",
                            bytes,
                        ));
                    }
                    (DataType::FixedUtf32 { chars: bytes / 4 }, None)
                }
                "null_terminated_bytes" => (
                    DataType::NullTerminatedBytes {
                        length: length_bytes()?,
                    },
                    None,
                ),
                "numpy.datetime64" | "numpy.timedelta64" => (numpy_time(key, name, obj)?, None),
                // ZEP0007 (draft): the data type names the chunk layout.
                "string" => (DataType::String, Some(Zep0007Offsets::Int32)),
                "binary" => (DataType::Bytes, Some(Zep0007Offsets::Int32)),
                "large_string" => (DataType::String, Some(Zep0007Offsets::Int64)),
                "large_binary" => (DataType::Bytes, Some(Zep0007Offsets::Int64)),
                other => match DataType::from_v3_name(other) {
                    Some(t) => (t, None),
                    None => return Err(unsupported(format!("{other:?}"))),
                },
            })
        }
        Some(other) => Err(unsupported(other.to_string())),
        None => Err(Error::metadata(
            key,
            "data_type",
            "a data type (the field is required)",
        )),
    }
}

/// zarr-python's `{"name": "numpy.datetime64", "configuration": {"unit": "ns",
/// "scale_factor": 1}}` (and `numpy.timedelta64`).
fn numpy_time(key: &str, name: &str, obj: &Map<String, Value>) -> Result<DataType> {
    let config = obj.get("configuration");
    let unit = config
        .and_then(|c| c.get("unit"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::metadata(
                key,
                "data_type.configuration.unit",
                format!("a unit string (for {name}; the field is required)"),
            )
        })?;
    let scale = config
        .and_then(|c| c.get("scale_factor"))
        .map_or(Some(1), Value::as_u64);
    let parsed = DateTimeUnit::parse(unit).filter(|_| scale == Some(1));
    match (name, parsed) {
        ("numpy.datetime64", Some(u)) => Ok(DataType::DateTime64(u)),
        ("numpy.timedelta64", Some(u)) if u != DateTimeUnit::Day => Ok(DataType::TimeDelta64(u)),
        _ => {
            let written = match scale {
                Some(1) => unit.to_string(),
                Some(n) => format!("{n}{unit}"),
                None => format!(
                    "{unit}, scale_factor {}",
                    config.map_or(Value::Null, |c| c["scale_factor"].clone())
                ),
            };
            Err(Error::UnsupportedDataType {
                name: unsupported_time_unit(name, &written),
                key: key.to_string(),
            })
        }
    }
}

fn parse_array(
    key: &str,
    fields: Map<String, Value>,
    attributes: Map<String, Value>,
) -> Result<ArrayMetadata> {
    let doc: ArrayFields = from_map(key, "", fields)?;
    for (field, value) in &doc.extensions {
        if value.get("must_understand") != Some(&Value::Bool(false)) {
            return Err(Error::metadata_found(
                key,
                field.as_str(),
                "no field zarrow does not know, or an extension with \"must_understand\": false",
                "an unknown field that must be understood",
            ));
        }
    }
    let (data_type, zep0007) = data_type(key, doc.data_type.as_ref())?;
    let stored_data_type = doc.data_type.clone();
    if doc.chunk_grid.name != "regular" {
        return Err(Error::metadata_found(
            key,
            "chunk_grid.name",
            "\"regular\" (the only chunk grid supported)",
            format!("{:?}", doc.chunk_grid.name),
        ));
    }
    let grid: RegularGrid = from_map(
        key,
        "chunk_grid.configuration",
        doc.chunk_grid.configuration.unwrap_or_default(),
    )?;
    let chunk_key_encoding = match doc.chunk_key_encoding {
        None => ChunkKeyEncoding {
            kind: KeyKind::Default,
            separator: '/',
        },
        Some(enc) => {
            let (kind, default_sep) = match enc.name.as_str() {
                "default" => (KeyKind::Default, '/'),
                "v2" => (KeyKind::V2, '.'),
                other => {
                    return Err(Error::metadata_found(
                        key,
                        "chunk_key_encoding.name",
                        "\"default\" or \"v2\"",
                        format!("{other:?}"),
                    ));
                }
            };
            let settings: KeySettings = from_map(
                key,
                "chunk_key_encoding.configuration",
                enc.configuration.unwrap_or_default(),
            )?;
            let separator = match settings.separator.as_deref() {
                None => default_sep,
                Some("/") => '/',
                Some(".") => '.',
                Some(other) => {
                    return Err(Error::metadata_found(
                        key,
                        "chunk_key_encoding.configuration.separator",
                        "\"/\" or \".\"",
                        format!("{other:?}"),
                    ));
                }
            };
            ChunkKeyEncoding { kind, separator }
        }
    };
    let fill_value = FillValue::parse(
        doc.fill_value.as_ref().unwrap_or(&Value::Null),
        &data_type,
        false,
    )
    .map_err(|e| Error::metadata_found(key, "fill_value", e.expected, e.found))?;
    if let Some(transformers) = doc.storage_transformers.filter(|t| !t.is_empty()) {
        return Err(Error::metadata_found(
            key,
            "storage_transformers",
            "none (storage transformers are not supported)",
            Value::Array(transformers),
        ));
    }
    if let Some(names) = &doc.dimension_names
        && names.len() != doc.shape.len()
    {
        return Err(Error::metadata_found(
            key,
            "dimension_names",
            format!("one name per dimension ({})", doc.shape.len()),
            format!("{} names", names.len()),
        ));
    }
    let codecs = doc.codecs.unwrap_or_default();
    for codec in &codecs {
        super::v2::check_delta(key, codec, &data_type, super::Endian::Little)?;
    }
    let meta = ArrayMetadata {
        zarr_format: 3,
        shape: doc.shape,
        chunk_shape: grid.chunk_shape,
        data_type,
        fill_value,
        fill_value_unset: false,
        chunk_key_encoding,
        codecs,
        zep0007,
        attributes,
        dimension_names: doc.dimension_names,
        stored: super::Stored(Some((
            stored_data_type.unwrap_or(Value::Null),
            doc.fill_value.clone().unwrap_or(Value::Null),
        ))),
    };
    meta.validate(key)?;
    Ok(meta)
}
