//! Zarr metadata, pure parsing and serializing: v3 `zarr.json` and v2 `.zarray` /
//! `.zgroup` / `.zattrs` documents (bytes in, plain data out) into one
//! [`ArrayMetadata`] or [`GroupMetadata`], and back
//! (what the writer stores). No store and no codec here: the codecs stay as
//! written ([`CodecMetadata`]) until [`CodecChain::from_metadata`](crate::CodecChain::from_metadata)
//! builds them, and reading the documents from a store is
//! [`read_node`](crate::read_node)'s job (the way to parse a document: put it
//! in a [`MemoryStore`](crate::MemoryStore)).

mod data_type;
mod fill_value;
mod serialize;
mod v2;
mod v3;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

pub(crate) use data_type::Endian;
pub(crate) use data_type::{ARROW_BYTES_PER_ELEMENT, unsupported_time_unit};
pub use data_type::{DataType, DateTimeUnit, StringType};
pub use fill_value::FillValue;
pub(crate) use v2::{parse_dtype, parse_zarray, parse_zattrs, parse_zgroup};
pub(crate) use v3::parse_zarr_json;

use crate::error::{Error, Result};
pub use crate::grid::{ChunkKeyEncoding, KeyKind};

/// The most elements one chunk may hold (vlen chunks store the count as u32).
pub(crate) const MAX_CHUNK_ELEMENTS: u64 = u32::MAX as u64;

/// The widest fixed-width element zarrow reads (`length_bytes`, numpy `<U`n / `|S`n).
pub(crate) const MAX_ELEMENT_BYTES: usize = 1 << 24;

/// The largest metadata document zarrow reads.
pub(crate) const MAX_METADATA_BYTES: u64 = 64 << 20;

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
    /// A v2 `fill_value` of `null`: no fill value was given, and `fill_value`
    /// is the type's default (xarray masks a given one, not this).
    pub fill_value_unset: bool,
    /// How chunk indices become store keys.
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// The codecs as written, in v3 form (a v2 array's `order`, dtype byte order,
    /// `filters` and `compressor` become `transpose`, `bytes` / `vlen-*` and the
    /// compressor's entry, named by its v2 id).
    pub codecs: Vec<CodecMetadata>,
    /// The ZEP0007 draft's object-form data types (`string`, `binary`,
    /// `large_string`, `large_binary`) name the chunk layout too: its offset width.
    pub zep0007: Option<Zep0007Offsets>,
    /// User attributes (`attributes`, or v2 `.zattrs`).
    pub attributes: Map<String, Value>,
    /// Optional dimension names (v3).
    pub dimension_names: Option<Vec<Option<String>>>,
    /// The data type and fill value as the document stored them (chunk
    /// statistics record them: [`crate::stats::fingerprint`]).
    pub(crate) stored: Stored,
}

/// A document's `data_type` (v2: `dtype`) and `fill_value` members as stored
/// (`None`: metadata made in code, not read). Not part of the metadata's
/// meaning: any two compare equal.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored(pub(crate) Option<(Value, Value)>);

impl PartialEq for Stored {
    fn eq(&self, _: &Self) -> bool {
        true
    }
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

/// The offset width a ZEP0007 data type names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Zep0007Offsets {
    /// `string`, `binary`: int32 offsets.
    Int32,
    /// `large_string`, `large_binary`: int64 offsets.
    Int64,
}

/// One entry of a v3 `codecs` list: `{"name": ..., "configuration": {...}}` (or a
/// bare name, which zarrs accepts).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CodecMetadata {
    /// The codec's name (v3 name, alias, or a v2 id for a v2 array).
    pub name: String,
    /// Its configuration (empty when absent).
    pub configuration: Map<String, Value>,
}

impl CodecMetadata {
    /// An entry without configuration.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_string(),
            configuration: Map::new(),
        }
    }

    /// The entry with one more configuration field.
    pub(crate) fn with(mut self, field: &str, value: Value) -> Self {
        self.configuration.insert(field.to_string(), value);
        self
    }
}

impl<'de> Deserialize<'de> for CodecMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Entry {
            // zarrs accepts bare names; zarr-python does not. Reading them is harmless.
            Name(String),
            Object {
                name: String,
                #[serde(default)]
                configuration: Option<Map<String, Value>>,
            },
        }
        let entry = Entry::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "a codec entry must be a name or an object with a \"name\" and an object \"configuration\"",
            )
        })?;
        Ok(match entry {
            Entry::Name(name) => Self::named(&name),
            Entry::Object {
                name,
                configuration,
            } => Self {
                name,
                configuration: configuration.unwrap_or_default(),
            },
        })
    }
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
    pub(crate) fn len(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether `data_type` uses a variable-length layout.
    pub(crate) fn is_variable_length(&self) -> bool {
        self.data_type.fixed_size().is_none()
    }

    /// Check the parts against each other (shape vs. chunks; the codecs are checked
    /// when they are built).
    fn validate(&self, key: &str) -> Result<()> {
        let chunks = if self.zarr_format == 2 {
            "chunks"
        } else {
            "chunk_grid.configuration.chunk_shape"
        };
        if self.shape.len() != self.chunk_shape.len() {
            return Err(Error::metadata_found(
                key,
                chunks,
                format!("as many dimensions as the shape ({})", self.shape.len()),
                format!("{} dimensions", self.chunk_shape.len()),
            ));
        }
        if self.chunk_shape.contains(&0) {
            return Err(Error::metadata_found(
                key,
                chunks,
                "extents of 1 or more",
                format!("{:?}", self.chunk_shape),
            ));
        }
        let elements = self
            .chunk_shape
            .iter()
            .try_fold(1u64, |acc, &c| acc.checked_mul(c))
            .filter(|&e| e <= MAX_CHUNK_ELEMENTS);
        if elements.is_none() {
            return Err(Error::metadata_found(
                key,
                chunks,
                format!("a chunk of at most {MAX_CHUNK_ELEMENTS} elements"),
                format!("{:?}", self.chunk_shape),
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
            return Err(Error::metadata_found(
                key,
                "shape",
                "at most 2^63 - 1 elements (a shape that exceeds 2^63 - 1 is more than numpy, zarr-python and Arrow can index)",
                format!("{:?}", self.shape),
            ));
        }
        if let Some(size) = self.data_type.fixed_size()
            && size == 0
        {
            let field = if self.zarr_format == 2 {
                "dtype"
            } else {
                "data_type"
            };
            return Err(Error::metadata_found(
                key,
                field,
                "a data type of 1 or more bytes",
                "a fixed-width data type of zero bytes",
            ));
        }
        Ok(())
    }
}

/// Parse JSON metadata, naming the key on failure.
pub(crate) fn parse_json(key: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    let value: Value = serde_json::from_slice(bytes).map_err(|source| Error::Json {
        key: key.to_string(),
        source,
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(Error::metadata_found(
            key,
            "(document)",
            "a JSON object",
            other,
        )),
    }
}

/// `value` as a `T`, or an [`Error::Metadata`] naming the document `key`, the
/// field at fault (its path from `value`, after `prefix`) and what serde expected
/// there.
pub(crate) fn from_value_at<T: serde::de::DeserializeOwned>(
    key: &str,
    prefix: &str,
    value: Value,
) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let p = json_problem(prefix, &e);
        Error::Metadata {
            key: key.to_string(),
            field: p.field,
            codec: None,
            expected: p.expected,
            found: p.found.map(Into::into),
        }
    })
}

/// What a serde error says, as typed parts: the field (its path, after `prefix`),
/// what was expected, what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonProblem {
    /// The field's path (`(document)` for the value itself).
    pub(crate) field: String,
    /// What was expected.
    pub(crate) expected: String,
    /// What was found, cut.
    pub(crate) found: Option<String>,
}

/// Split serde's message (`invalid type: string "x", expected u64`, `missing
/// field `shape``) into the field, the expectation and what was there.
pub(crate) fn json_problem(
    prefix: &str,
    e: &serde_path_to_error::Error<serde_json::Error>,
) -> JsonProblem {
    let mut path = join_path(prefix, &e.path().to_string());
    let message = e.inner().to_string();
    let cut = |s: &str| Some(crate::error::cut_owned(s));
    let (expected, found) = if let Some(name) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        path = join_path(&path, name);
        ("a value (the field is required)".to_string(), None)
    } else if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .or_else(|| message.strip_prefix("invalid length "))
        .or_else(|| message.strip_prefix("unknown variant "))
        .or_else(|| message.strip_prefix("unknown field "))
        && let Some((found, expected)) = rest.split_once(", expected ")
    {
        (expected.to_string(), cut(found))
    } else {
        // A message of a type's own (`Deserialize` by hand): it says both.
        (format!("a valid value ({message})"), None)
    };
    let field = if path.is_empty() {
        "(document)".to_string()
    } else {
        path
    };
    JsonProblem {
        field,
        expected,
        found,
    }
}

/// `prefix.path`, either part possibly empty (`.` is serde_path_to_error's root).
fn join_path(prefix: &str, path: &str) -> String {
    let path = if path == "." { "" } else { path };
    match (prefix.is_empty(), path.is_empty()) {
        (true, true) => String::new(),
        (true, false) => path.to_string(),
        (false, true) => prefix.to_string(),
        (false, false) if path.starts_with('[') => format!("{prefix}{path}"),
        (false, false) => format!("{prefix}.{path}"),
    }
}
