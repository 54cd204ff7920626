//! Zarr metadata: v3 `zarr.json` and v2 `.zarray` / `.zgroup` / `.zattrs`, parsed
//! into one [`ArrayMetadata`] or [`GroupMetadata`].

mod data_type;
mod fill_value;
mod v2;
mod v3;

use serde_json::{Map, Value};

pub use data_type::{DataType, Endian, StringType};
pub use fill_value::FillValue;

use crate::codec::{ArrayToArray, ArrayToBytes, CodecChain};
use crate::error::{Error, Result};
use crate::grid::ChunkKeyEncoding;
use crate::store::{Store, join_key};

/// The most elements one chunk may hold (vlen chunks store the count as u32).
pub const MAX_CHUNK_ELEMENTS: u64 = u32::MAX as u64;

/// The widest fixed-width element zarrow reads (`length_bytes`, numpy `<U`n / `|S`n).
pub const MAX_ELEMENT_BYTES: usize = 1 << 24;

/// The largest metadata document zarrow reads.
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

/// Everything zarrow needs to know about an array.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArrayMetadata {
    /// 2 or 3.
    pub zarr_format: u8,
    /// Array shape (empty for 0-d).
    pub shape: Vec<u64>,
    /// Regular chunk grid: the shape of every chunk.
    pub chunk_shape: Vec<u64>,
    /// The element type.
    pub data_type: DataType,
    /// What missing chunks hold.
    pub fill_value: FillValue,
    /// How chunk indices become store keys.
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// The codecs.
    pub codecs: CodecChain,
    /// User attributes (`attributes`, or v2 `.zattrs`).
    pub attributes: Map<String, Value>,
    /// Optional dimension names (v3).
    pub dimension_names: Option<Vec<Option<String>>>,
}

/// A group's metadata.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GroupMetadata {
    /// 2 or 3.
    pub zarr_format: u8,
    /// User attributes.
    pub attributes: Map<String, Value>,
}

/// An array or a group.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeMetadata {
    /// An array.
    Array(Box<ArrayMetadata>),
    /// A group.
    Group(GroupMetadata),
}

impl ArrayMetadata {
    /// Total number of elements.
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements in one chunk.
    pub fn chunk_len(&self) -> u64 {
        self.chunk_shape.iter().product()
    }

    /// Whether `data_type` uses a variable-length layout.
    pub fn is_variable_length(&self) -> bool {
        self.data_type.fixed_size().is_none()
    }

    /// Check the parts against each other (shape vs. chunks, data type vs. codec).
    fn validate(&self, key: &str) -> Result<()> {
        if self.shape.len() != self.chunk_shape.len() {
            return Err(Error::metadata(
                key,
                format!(
                    "shape has {} dimensions but the chunk shape has {}",
                    self.shape.len(),
                    self.chunk_shape.len()
                ),
            ));
        }
        if self.chunk_shape.contains(&0) {
            return Err(Error::metadata(key, "chunk shape has a zero extent"));
        }
        let elements = self
            .chunk_shape
            .iter()
            .try_fold(1u64, |acc, &c| acc.checked_mul(c))
            .filter(|&e| e <= MAX_CHUNK_ELEMENTS);
        if elements.is_none() {
            return Err(Error::metadata(
                key,
                format!("a chunk may hold at most {MAX_CHUNK_ELEMENTS} elements"),
            ));
        }
        // numpy, zarr-python and Arrow index with i64: no extent or element count
        // beyond that can be read by anyone.
        let max = i64::MAX as u64;
        if self.shape.iter().any(|&s| s > max)
            || self
                .shape
                .iter()
                .try_fold(1u64, |acc, &s| acc.checked_mul(s))
                .is_none_or(|e| e > max)
        {
            return Err(Error::metadata(
                key,
                format!(
                    "shape {:?} exceeds 2^63 - 1 elements, the most numpy, zarr-python and Arrow can index",
                    self.shape
                ),
            ));
        }
        if self.codecs.array_to_bytes.is_variable_length() != self.is_variable_length() {
            return Err(Error::metadata(
                key,
                format!(
                    "data type {} cannot use the array->bytes codec {}",
                    self.data_type.zarr_name(),
                    self.codecs.array_to_bytes
                ),
            ));
        }
        check_chain(key, &self.codecs, &self.chunk_shape)?;
        if let Some(size) = self.data_type.fixed_size()
            && size == 0
        {
            return Err(Error::metadata(key, "fixed-width data type of zero bytes"));
        }
        Ok(())
    }
}

/// The string layout zarrow's writer recorded in `attributes.zarrow.arrow_type`.
pub fn recorded_string_type(attributes: &Map<String, Value>) -> Option<StringType> {
    let name = attributes.get("zarrow")?.get("arrow_type")?.as_str()?;
    match name {
        "Utf8" | "Binary" => Some(StringType::Utf8),
        "LargeUtf8" | "LargeBinary" => Some(StringType::LargeUtf8),
        "Utf8View" | "BinaryView" => Some(StringType::Utf8View),
        _ => None,
    }
}

/// The column order zarrow's writer recorded in a group's `attributes.zarrow.columns`.
pub fn recorded_columns(attributes: &Map<String, Value>) -> Option<Vec<String>> {
    let columns = attributes.get("zarrow")?.get("columns")?.as_array()?;
    columns
        .iter()
        .map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// Check a codec chain against the shape of the chunks it encodes: transpose
/// orders match the rank; inner chunks divide their shard.
fn check_chain(key: &str, chain: &CodecChain, shape: &[u64]) -> Result<()> {
    let mut shape = shape.to_vec();
    for codec in &chain.array_to_array {
        let ArrayToArray::Transpose { order } = codec;
        if order.len() != shape.len() {
            return Err(Error::metadata(
                key,
                format!(
                    "transpose order {order:?} does not match {} dimensions",
                    shape.len()
                ),
            ));
        }
        shape = crate::codec::transpose::permute(&shape, order);
    }
    if let ArrayToBytes::Sharding(sharding) = &chain.array_to_bytes {
        let inner = &sharding.chunk_shape;
        if inner.len() != shape.len()
            || inner.contains(&0)
            || shape.iter().zip(inner).any(|(s, c)| s % c != 0)
        {
            return Err(Error::metadata(
                key,
                format!(
                    "sharding_indexed: inner chunk shape {inner:?} does not divide the shard shape {shape:?}"
                ),
            ));
        }
        check_chain(key, &sharding.codecs, inner)?;
    }
    Ok(())
}

/// Parse JSON metadata, naming the key on failure.
pub(crate) fn parse_json(key: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    let value: Value = serde_json::from_slice(bytes).map_err(|source| Error::Json {
        key: key.to_string(),
        source,
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::metadata(
            key,
            format!("expected a JSON object, found {other}"),
        )),
    }
}

/// Read the metadata of the node at `path` (`""` for the root): `zarr.json` first,
/// then v2 `.zarray`, then `.zgroup`.
///
/// # Errors
/// [`Error::NodeNotFound`] when none exists; metadata errors naming the key.
pub fn read_node(store: &dyn Store, path: &str) -> Result<NodeMetadata> {
    let key = join_key(path, "zarr.json");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        return v3::parse(&key, &parse_json(&key, &bytes)?);
    }
    let attributes = || -> Result<Map<String, Value>> {
        let key = join_key(path, ".zattrs");
        match store.get_bounded(&key, MAX_METADATA_BYTES)? {
            Some(bytes) => parse_json(&key, &bytes),
            None => Ok(Map::new()),
        }
    };
    let key = join_key(path, ".zarray");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        let meta = v2::parse_array(&key, &parse_json(&key, &bytes)?, attributes()?)?;
        return Ok(NodeMetadata::Array(Box::new(meta)));
    }
    let key = join_key(path, ".zgroup");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        let doc = parse_json(&key, &bytes)?;
        v2::check_format(&key, &doc)?;
        return Ok(NodeMetadata::Group(GroupMetadata {
            zarr_format: 2,
            attributes: attributes()?,
        }));
    }
    Err(Error::NodeNotFound {
        path: path.to_string(),
    })
}

/// A `u64` list field (`shape`, `chunk_shape`, `chunks`).
pub(crate) fn u64_list(key: &str, field: &str, value: Option<&Value>) -> Result<Vec<u64>> {
    let items = value.and_then(Value::as_array).ok_or_else(|| {
        Error::metadata(
            key,
            format!("\"{field}\" must be a list of non-negative integers"),
        )
    })?;
    items
        .iter()
        .map(|v| {
            v.as_u64().ok_or_else(|| {
                Error::metadata(
                    key,
                    format!("\"{field}\" holds {v}, not a non-negative integer"),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::MemoryStore;

    fn array(doc: serde_json::Value) -> Result<ArrayMetadata> {
        let store = MemoryStore::new();
        store
            .set("zarr.json", &serde_json::to_vec(&doc).unwrap())
            .unwrap();
        match read_node(&store, "")? {
            NodeMetadata::Array(meta) => Ok(*meta),
            NodeMetadata::Group(_) => panic!("not an array"),
        }
    }

    fn base(
        data_type: serde_json::Value,
        codecs: serde_json::Value,
        fill: serde_json::Value,
    ) -> serde_json::Value {
        json!({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type,
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs})
    }

    #[test]
    fn object_form_string_is_zep0007_only_without_a_layout_codec() {
        let zep = array(base(json!({"name": "string"}), json!([]), json!(""))).unwrap();
        assert_eq!(
            zep.codecs.array_to_bytes,
            ArrayToBytes::Zep0007 { large: false }
        );
        let plain = array(base(
            json!({"name": "string"}),
            json!([{"name": "vlen-utf8"}]),
            json!(""),
        ))
        .unwrap();
        assert_eq!(plain.codecs.array_to_bytes, ArrayToBytes::VlenInterleaved);
        assert_eq!(plain.data_type, DataType::String);
    }

    #[test]
    fn extension_fields_follow_must_understand() {
        let mut doc = base(json!("int32"), json!([{"name": "bytes"}]), json!(0));
        doc["x_extension"] = json!({"must_understand": false, "anything": 1});
        assert!(array(doc.clone()).is_ok());
        doc["x_extension"] = json!({"anything": 1});
        assert!(matches!(array(doc), Err(Error::Metadata { .. })));
    }

    #[test]
    fn fixed_width_fill_values_read_like_elements() {
        let t = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}});
        let meta = array(base(t, json!([{"name": "bytes"}]), json!("YQAA"))).unwrap(); // b"a\0\0"
        assert_eq!(meta.fill_value, FillValue::Bytes(b"a".to_vec()));
        let t = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}});
        assert!(array(base(t, json!([{"name": "bytes"}]), json!("abc"))).is_err());
    }
}
