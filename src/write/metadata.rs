//! The metadata documents the writer emits: v3 `zarr.json` in the form zarr-python
//! 3.1 writes, or v2 `.zarray` + `.zattrs`; and the group documents.

use std::sync::Arc;

use arrow_schema::DataType as ArrowType;
use serde_json::{Map, Value, json};

use super::{Encoding, WriteOptions};
use crate::codec::{
    ArrayToBytesCodec, Bytes, BytesToBytesCodec, CodecChain, Sharding, Vlen, ZarrsVlen, Zep0007,
};
use crate::error::{Error, Result};
use crate::metadata::{DataType, DateTimeUnit, Endian};
use crate::store::{Store, consolidated_metadata, consolidated_nodes, join_key, zmetadata};

/// The attribute under which zarrow records what a reader of its own needs.
pub const ZARROW_ATTRIBUTE: &str = "zarrow";

/// What one array is written as.
#[derive(Debug, Clone)]
pub(crate) struct ArraySpec {
    /// The Arrow type of the input (dictionaries already resolved to their values).
    pub arrow_type: ArrowType,
    /// The Zarr data type.
    pub data_type: DataType,
    /// The string layout asked for (the data type's JSON depends on it).
    pub encoding: Encoding,
    /// The chunk layout.
    layout: Arc<dyn ArrayToBytesCodec>,
    /// The compressor, if any.
    compressor: Option<Arc<dyn BytesToBytesCodec>>,
}

impl ArraySpec {
    /// The spec for an Arrow type under `options`.
    pub(crate) fn new(name: &str, arrow_type: &ArrowType, options: &WriteOptions) -> Result<Self> {
        let data_type = match arrow_type {
            ArrowType::Boolean => DataType::Bool,
            ArrowType::Int8 => DataType::Int8,
            ArrowType::Int16 => DataType::Int16,
            ArrowType::Int32 => DataType::Int32,
            ArrowType::Int64 => DataType::Int64,
            ArrowType::UInt8 => DataType::UInt8,
            ArrowType::UInt16 => DataType::UInt16,
            ArrowType::UInt32 => DataType::UInt32,
            ArrowType::UInt64 => DataType::UInt64,
            ArrowType::Float16 => DataType::Float16,
            ArrowType::Float32 => DataType::Float32,
            ArrowType::Float64 => DataType::Float64,
            // Times are stored in UTC; a timezone is kept in the attributes.
            ArrowType::Timestamp(unit, _) => {
                DataType::DateTime64(DateTimeUnit::from_time_unit(*unit))
            }
            ArrowType::Date32 => DataType::DateTime64(DateTimeUnit::Day),
            ArrowType::Date64 => DataType::DateTime64(DateTimeUnit::Millisecond),
            ArrowType::Duration(unit) => DataType::TimeDelta64(DateTimeUnit::from_time_unit(*unit)),
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => DataType::String,
            ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => DataType::Bytes,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "column {name:?} has Arrow type {other}, which zarrow does not write (strings, bytes, integers, floats, bools, timestamps, dates and durations)"
                )));
            }
        };
        let large = large_offsets(arrow_type);
        let layout: Arc<dyn ArrayToBytesCodec> = match (data_type.fixed_size(), options.encoding) {
            // zarr-python leaves the byte order out for one-byte types.
            (Some(size), _) => Arc::new(Bytes {
                endian: (size > 1).then_some(Endian::Little),
            }),
            (None, Encoding::Default) if data_type == DataType::String => {
                Arc::new(Vlen { name: "vlen-utf8" })
            }
            (None, Encoding::Default) => Arc::new(Vlen { name: "vlen-bytes" }),
            (None, Encoding::ZarrsVlen) => Arc::new(ZarrsVlen::plain(large)),
            (None, Encoding::Zep0007) => Arc::new(Zep0007 { large }),
        };
        let compressor = options
            .compressor
            .codec(options.level, data_type.fixed_size().unwrap_or(1));
        Ok(Self {
            arrow_type: arrow_type.clone(),
            data_type,
            encoding: options.encoding,
            layout,
            compressor,
        })
    }

    /// The codecs of every chunk: the layout and compressor, inside a
    /// `sharding_indexed` codec with inner chunks of `inner` when sharded (as
    /// zarr-python 3.1 writes: the index at the end, with `crc32c`).
    pub(crate) fn codecs(&self, inner: Option<Vec<u64>>) -> CodecChain {
        let chain = CodecChain::new(
            vec![],
            self.layout.clone(),
            self.compressor.iter().cloned().collect(),
        );
        match inner {
            None => chain,
            Some(inner) => CodecChain::new(vec![], Arc::new(Sharding::new(inner, chain)), vec![]),
        }
    }

    /// The key/value documents of the array's metadata for an array of `shape` in
    /// chunks of `chunk_shape`, encoded with `codecs`.
    pub(crate) fn documents(
        &self,
        shape: &[u64],
        chunk_shape: &[u64],
        codecs: &CodecChain,
        zarr_format: u8,
    ) -> Vec<(&'static str, Value)> {
        let mut attributes =
            json!({ ZARROW_ATTRIBUTE: { "arrow_type": arrow_type_name(&self.arrow_type) } });
        // numpy's datetime64 has no timezone: the values are UTC, the zone kept here.
        if let ArrowType::Timestamp(_, Some(tz)) = &self.arrow_type {
            attributes[ZARROW_ATTRIBUTE]["timezone"] = json!(tz.as_ref());
        }
        if zarr_format == 2 {
            // Attributes first: the node appears (`.zarray`) complete.
            return vec![
                (".zattrs", attributes),
                (".zarray", self.v2(shape, chunk_shape, codecs)),
            ];
        }
        let data_type = match (self.encoding, self.data_type) {
            (Encoding::Zep0007, t) if t.fixed_size().is_none() => {
                json!({"name": match (t, large_offsets(&self.arrow_type)) {
                    (DataType::String, false) => "string",
                    (DataType::String, true) => "large_string",
                    (_, false) => "binary",
                    (_, true) => "large_binary",
                }})
            }
            (Encoding::ZarrsVlen, DataType::Bytes) => json!("bytes"),
            (_, DataType::Bytes) => json!("variable_length_bytes"),
            (_, DataType::DateTime64(unit)) => json!({"name": "numpy.datetime64",
                "configuration": {"unit": unit.as_str(), "scale_factor": 1}}),
            (_, DataType::TimeDelta64(unit)) => json!({"name": "numpy.timedelta64",
                "configuration": {"unit": unit.as_str(), "scale_factor": 1}}),
            (_, t) => json!(t.zarr_name()),
        };
        let codecs = codecs.metadata();
        let fill = match (self.encoding, self.data_type) {
            // zarrs writes (and expects) the `bytes` type's fill as a byte list.
            (Encoding::ZarrsVlen, DataType::Bytes) => json!([]),
            _ => self.fill_json(),
        };
        vec![(
            "zarr.json",
            json!({
                "shape": shape,
                "data_type": data_type,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": fill,
                "codecs": codecs,
                "attributes": attributes,
                "zarr_format": 3,
                "node_type": "array",
                "storage_transformers": [],
            }),
        )]
    }

    fn fill_json(&self) -> Value {
        match self.data_type {
            DataType::Bool => json!(false),
            DataType::Float16 | DataType::Float32 | DataType::Float64 => json!(0.0),
            // NaT, as zarr-python writes by default.
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => json!(i64::MIN),
            DataType::String | DataType::Bytes => json!(""),
            _ => json!(0),
        }
    }

    /// xarray reads a v2 `fill_value` as `_FillValue`, masking the values equal to
    /// it: numbers, bools, strings and bytes get `null` (no fill value:
    /// zarr-python and zarrow read missing chunks as 0, false, ""), floats NaN,
    /// times NaT.
    fn v2_fill_json(&self) -> Value {
        match self.data_type {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => json!("NaN"),
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => self.fill_json(),
            _ => Value::Null,
        }
    }

    fn v2(&self, shape: &[u64], chunk_shape: &[u64], codecs: &CodecChain) -> Value {
        let (dtype, filters) = match self.data_type {
            DataType::String => ("|O".to_string(), json!([{"id": "vlen-utf8"}])),
            DataType::Bytes => ("|O".to_string(), json!([{"id": "vlen-bytes"}])),
            DataType::Bool => ("|b1".to_string(), Value::Null),
            DataType::DateTime64(unit) => (format!("<M8[{}]", unit.as_str()), Value::Null),
            DataType::TimeDelta64(unit) => (format!("<m8[{}]", unit.as_str()), Value::Null),
            t => {
                let size = t.fixed_size().unwrap_or(1);
                let kind = match t {
                    DataType::Float16 | DataType::Float32 | DataType::Float64 => 'f',
                    DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => 'u',
                    _ => 'i',
                };
                (
                    format!("{}{kind}{size}", if size == 1 { '|' } else { '<' }),
                    Value::Null,
                )
            }
        };
        json!({
            "zarr_format": 2,
            "shape": shape,
            "chunks": chunk_shape,
            "dtype": dtype,
            "compressor": codecs.bytes_to_bytes().first().map(|c| c.metadata(2)),
            "fill_value": self.v2_fill_json(),
            "order": "C",
            "filters": filters,
            "dimension_separator": ".",
        })
    }
}

/// The attributes of a plain group: the column order, for zarrow's reader.
pub(crate) fn columns_attributes(columns: &[String]) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert(ZARROW_ATTRIBUTE.into(), json!({ "columns": columns }));
    attributes
}

/// Write the metadata of the group at `path` (with `attributes`), whose children
/// are all written: the last step. With `consolidate`, the group also carries
/// every child's metadata, as zarr-python consolidates it (v3: in the group's
/// `zarr.json`, written once; v2: `.zmetadata`, after `.zgroup`), so a reader
/// opens it in one request, without listing.
pub(crate) fn write_group_documents(
    store: &dyn Store,
    path: &str,
    zarr_format: u8,
    attributes: Map<String, Value>,
    consolidate: bool,
) -> Result<()> {
    if zarr_format == 2 {
        write_documents(
            store,
            path,
            vec![
                (".zattrs", Value::Object(attributes)),
                (".zgroup", json!({"zarr_format": 2})),
            ],
        )?;
        if consolidate {
            let nodes = consolidated_nodes(store, path, 2)?;
            write_documents(store, path, vec![(".zmetadata", zmetadata(nodes))])?;
        }
        return Ok(());
    }
    let mut doc = json!({"zarr_format": 3, "node_type": "group", "attributes": attributes});
    if consolidate {
        doc["consolidated_metadata"] = consolidated_metadata(consolidated_nodes(store, path, 3)?);
    }
    write_documents(store, path, vec![("zarr.json", doc)])
}

/// Whether values of `arrow_type` get 64-bit offsets on disk (`zarrs.vlen` uint64,
/// ZEP0007 `large_*`): the large types, and views (whose chunks may pass 2 GiB).
fn large_offsets(arrow_type: &ArrowType) -> bool {
    matches!(
        arrow_type,
        ArrowType::LargeUtf8 | ArrowType::LargeBinary | ArrowType::Utf8View | ArrowType::BinaryView
    )
}

/// The name zarrow records for an Arrow type (read back by [`recorded_string_type`]).
///
/// [`recorded_string_type`]: crate::metadata::recorded_string_type
pub(crate) fn arrow_type_name(t: &ArrowType) -> String {
    t.to_string()
}

/// Store metadata documents (`name`, JSON) of the node at `path`, in order.
pub(crate) fn write_documents(
    store: &dyn Store,
    path: &str,
    documents: Vec<(&'static str, Value)>,
) -> Result<()> {
    for (name, doc) in documents {
        let key = join_key(path, name);
        let bytes = serde_json::to_vec_pretty(&doc).map_err(|source| Error::Json {
            key: key.clone(),
            source,
        })?;
        store.set(&key, &bytes)?;
    }
    Ok(())
}
