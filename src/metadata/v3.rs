//! Zarr v3 `zarr.json`.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/core/v3.0.html#array-metadata>.

use serde_json::{Map, Value};

use super::{
    ArrayMetadata, DataType, FillValue, GroupMetadata, MAX_ELEMENT_BYTES, NodeMetadata, u64_list,
};
use crate::codec::{ArrayToBytes, parse::parse_v3};
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};

pub(super) fn parse(key: &str, doc: &Map<String, Value>) -> Result<NodeMetadata> {
    match doc.get("zarr_format") {
        Some(v) if v.as_u64() == Some(3) => {}
        other => {
            return Err(Error::metadata(
                key,
                format!("zarr_format must be 3, found {other:?}"),
            ));
        }
    }
    let attributes = match doc.get("attributes") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("\"attributes\" is not an object: {other}"),
            ));
        }
    };
    match doc.get("node_type").and_then(Value::as_str) {
        Some("group") => Ok(NodeMetadata::Group(GroupMetadata {
            zarr_format: 3,
            attributes,
        })),
        Some("array") => Ok(NodeMetadata::Array(Box::new(parse_array(
            key, doc, attributes,
        )?))),
        other => Err(Error::metadata(
            key,
            format!("node_type must be \"array\" or \"group\", found {other:?}"),
        )),
    }
}

/// The data type, and the chunk layout that ZEP0007's object form implies.
fn data_type(key: &str, value: Option<&Value>) -> Result<(DataType, Option<ArrayToBytes>)> {
    let unsupported = |name: String| Error::UnsupportedDataType {
        name,
        key: key.to_string(),
    };
    match value {
        Some(Value::String(name)) => DataType::from_v3_name(name)
            .map(|t| (t, None))
            .ok_or_else(|| unsupported(format!("{name:?}"))),
        Some(Value::Object(obj)) => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::metadata(key, "data_type object has no \"name\""))?;
            let length_bytes = || -> Result<usize> {
                obj.get("configuration")
                    .and_then(|c| c.get("length_bytes"))
                    .and_then(Value::as_u64)
                    .filter(|&l| l <= MAX_ELEMENT_BYTES as u64)
                    .map(|l| l as usize)
                    .ok_or_else(|| {
                        Error::metadata(
                            key,
                            format!("{name}: configuration.length_bytes is missing or over {MAX_ELEMENT_BYTES}"),
                        )
                    })
            };
            Ok(match name {
                "fixed_length_utf32" => {
                    let bytes = length_bytes()?;
                    if bytes % 4 != 0 {
                        return Err(Error::metadata(
                            key,
                            format!(
                                "fixed_length_utf32: length_bytes {bytes} is not a multiple of 4"
                            ),
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
                // ZEP0007 (draft): the data type names the chunk layout.
                "string" => (
                    DataType::String,
                    Some(ArrayToBytes::Zep0007 { large: false }),
                ),
                "binary" => (
                    DataType::Bytes,
                    Some(ArrayToBytes::Zep0007 { large: false }),
                ),
                "large_string" => (
                    DataType::String,
                    Some(ArrayToBytes::Zep0007 { large: true }),
                ),
                "large_binary" => (DataType::Bytes, Some(ArrayToBytes::Zep0007 { large: true })),
                other => match DataType::from_v3_name(other) {
                    Some(t) => (t, None),
                    None => return Err(unsupported(format!("{other:?}"))),
                },
            })
        }
        Some(other) => Err(unsupported(other.to_string())),
        None => Err(Error::metadata(key, "\"data_type\" is missing")),
    }
}

/// The array fields of the v3 spec; any other field must be an object with
/// `"must_understand": false` (spec: "Extension points").
const ARRAY_FIELDS: [&str; 11] = [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "storage_transformers",
    "dimension_names",
];

fn parse_array(
    key: &str,
    doc: &Map<String, Value>,
    attributes: Map<String, Value>,
) -> Result<ArrayMetadata> {
    for (field, value) in doc {
        let optional = value.get("must_understand") == Some(&Value::Bool(false));
        if !ARRAY_FIELDS.contains(&field.as_str()) && !optional {
            return Err(Error::metadata(
                key,
                format!("unknown field {field:?} that must be understood"),
            ));
        }
    }
    let shape = u64_list(key, "shape", doc.get("shape"))?;
    let (data_type, implicit) = data_type(key, doc.get("data_type"))?;

    let grid = doc
        .get("chunk_grid")
        .ok_or_else(|| Error::metadata(key, "\"chunk_grid\" is missing"))?;
    match grid.get("name").and_then(Value::as_str) {
        Some("regular") => {}
        other => {
            return Err(Error::metadata(
                key,
                format!("only the regular chunk grid is supported, found {other:?}"),
            ));
        }
    }
    let chunk_shape = u64_list(
        key,
        "chunk_grid.configuration.chunk_shape",
        grid.get("configuration").and_then(|c| c.get("chunk_shape")),
    )?;

    let chunk_key_encoding = match doc.get("chunk_key_encoding") {
        None => ChunkKeyEncoding {
            kind: KeyKind::Default,
            separator: '/',
        },
        Some(enc) => {
            let (kind, default_sep) = match enc.get("name").and_then(Value::as_str) {
                Some("default") => (KeyKind::Default, '/'),
                Some("v2") => (KeyKind::V2, '.'),
                other => {
                    return Err(Error::metadata(
                        key,
                        format!("unknown chunk_key_encoding {other:?}"),
                    ));
                }
            };
            let separator = match enc.get("configuration").and_then(|c| c.get("separator")) {
                None => default_sep,
                Some(Value::String(s)) if s == "/" => '/',
                Some(Value::String(s)) if s == "." => '.',
                Some(other) => {
                    return Err(Error::metadata(
                        key,
                        format!("chunk key separator must be \"/\" or \".\", found {other}"),
                    ));
                }
            };
            ChunkKeyEncoding { kind, separator }
        }
    };

    let fill_value = FillValue::parse(
        doc.get("fill_value").unwrap_or(&Value::Null),
        &data_type,
        false,
    )
    .map_err(|m| Error::metadata(key, m))?;
    let codecs = parse_v3(doc.get("codecs").unwrap_or(&Value::Null), key, implicit)?;

    match doc.get("storage_transformers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(t)) if t.is_empty() => {}
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("storage transformers are not supported: {other}"),
            ));
        }
    }
    let dimension_names = match doc.get("dimension_names") {
        None | Some(Value::Null) => None,
        Some(Value::Array(names)) if names.len() == shape.len() => Some(
            names
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect(),
        ),
        Some(Value::Array(names)) => {
            return Err(Error::metadata(
                key,
                format!(
                    "{} dimension_names for {} dimensions",
                    names.len(),
                    shape.len()
                ),
            ));
        }
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("\"dimension_names\" is not a list: {other}"),
            ));
        }
    };
    let meta = ArrayMetadata {
        zarr_format: 3,
        shape,
        chunk_shape,
        data_type,
        fill_value,
        chunk_key_encoding,
        codecs,
        attributes,
        dimension_names,
    };
    meta.validate(key)?;
    Ok(meta)
}
