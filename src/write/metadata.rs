//! The metadata documents the writer emits: v3 `zarr.json` in the form zarr-python
//! 3.1 writes, or v2 `.zarray` + `.zattrs`; and the group documents.

use std::sync::Arc;

use arrow_schema::DataType as ArrowType;
use serde_json::{Map, Value, json};

use super::{Encoding, WriteOptions};
use crate::codec::{
    ArrayToBytesCodec, Bytes, BytesToBytesCodec, CodecChain, Sharding, Vlen, ZarrsVlen, Zep0007,
};
use crate::conventions::{cf, zarrow};
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};
use crate::metadata::{
    ArrayMetadata, CodecMetadata, DataType, DateTimeUnit, Endian, FillValue, GroupMetadata,
    Zep0007Offsets,
};
use crate::store::{Store, consolidated_metadata, consolidated_nodes, join_key, zmetadata};

/// What one array is written as.
#[derive(Debug, Clone)]
pub(crate) struct ArraySpec {
    /// The Arrow type of the input (dictionaries already resolved to their values).
    pub arrow_type: ArrowType,
    /// The Arrow type recorded for a reader: the input's own, a dictionary
    /// included (its values are what is stored).
    recorded: ArrowType,
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
                return Err(Error::UnsupportedArrowType {
                    column: Some(name.to_string()),
                    data_type: other.clone(),
                    by: crate::error::ArrowTypeUse::Zarr,
                });
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
            recorded: arrow_type.clone(),
            arrow_type: arrow_type.clone(),
            data_type,
            encoding: options.encoding,
            layout,
            compressor,
        })
    }

    /// Record `input` as the Arrow type written (a dictionary whose values this
    /// spec stores).
    pub(crate) fn recording(mut self, input: &ArrowType) -> Self {
        self.recorded = input.clone();
        self
    }

    /// The array's metadata: `shape` in chunks of `chunk_shape` (shards, with
    /// inner chunks of `inner`: as zarr-python 3.1 writes them, the index at the
    /// end with `crc32c`), its attributes zarrow's own (the Arrow type, a
    /// timezone: [`zarrow::array_attributes`]) then `user`'s, and the
    /// dimension's name for xarray ([`cf::record_dimension_names`]). The codecs
    /// are the entries each codec's module writes; [`Self::chain`] builds the
    /// chain that encodes from them, through the codec table, as a read does.
    pub(crate) fn metadata(
        &self,
        shape: &[u64],
        chunk_shape: &[u64],
        inner: Option<Vec<u64>>,
        zarr_format: u8,
        user: &Map<String, Value>,
        dimension: Option<&str>,
    ) -> Result<ArrayMetadata> {
        let mut attributes = zarrow::array_attributes(&self.recorded);
        attributes.extend(user.iter().map(|(k, v)| (k.clone(), v.clone())));
        let v2 = zarr_format == 2;
        let variable = self.data_type.fixed_size().is_none();
        let zep0007 = (self.encoding == Encoding::Zep0007 && variable).then(|| {
            if large_offsets(&self.arrow_type) {
                Zep0007Offsets::Int64
            } else {
                Zep0007Offsets::Int32
            }
        });
        let codecs = if v2 {
            self.v2_codecs()
        } else {
            let mut chain = CodecChain::new(
                vec![],
                self.layout.clone(),
                self.compressor.iter().cloned().collect(),
            );
            if let Some(inner) = inner {
                chain = CodecChain::new(vec![], Arc::new(Sharding::new(inner, chain)), vec![]);
            }
            chain
                .metadata()
                .into_iter()
                .map(serde_json::from_value::<CodecMetadata>)
                .collect::<std::result::Result<_, _>>()
                // The chain's own entries: one that is not a codec entry is
                // zarrow's bug, not a document's.
                .map_err(|_| Error::Internal {
                    what: "a codec's metadata is not a codec entry",
                })?
        };
        let (fill_value, fill_value_unset) = self.fill(v2);
        let mut meta = ArrayMetadata {
            zarr_format,
            shape: shape.to_vec(),
            chunk_shape: chunk_shape.to_vec(),
            data_type: self.data_type,
            fill_value,
            fill_value_unset,
            chunk_key_encoding: key_encoding(zarr_format),
            codecs,
            zep0007,
            attributes,
            dimension_names: None,
            stored: Default::default(),
        };
        if let Some(dimension) = dimension {
            cf::record_dimension_names(&mut meta, &[dimension]);
        }
        Ok(meta)
    }

    /// The chain that encodes the chunks of `meta` (the array at `path`): built
    /// from its codec entries through the codec table, as a read builds it.
    pub(crate) fn chain(meta: &ArrayMetadata, path: &str) -> Result<Arc<CodecChain>> {
        let key = join_key(
            path,
            if meta.zarr_format == 2 {
                ".zarray"
            } else {
                "zarr.json"
            },
        );
        CodecChain::from_metadata(meta, &key).map(Arc::new)
    }

    /// A v2 array's codecs, in the form the v2 parser gives them: the layout (a
    /// `vlen-*` filter, or `bytes` in `dtype`'s byte order), the compressor by its
    /// v2 id.
    fn v2_codecs(&self) -> Vec<CodecMetadata> {
        let layout = match self.data_type {
            DataType::String => CodecMetadata::named("vlen-utf8"),
            DataType::Bytes => CodecMetadata::named("vlen-bytes"),
            _ => CodecMetadata::named("bytes").with("endian", json!("little")),
        };
        let compressor = self.compressor.iter().filter_map(|c| match c.metadata(2) {
            Value::Object(entry) => CodecMetadata::from_v2(entry).ok(),
            _ => None,
        });
        std::iter::once(layout).chain(compressor).collect()
    }

    /// The fill value, and whether it is left unset (v2 `null`). v3: 0, false,
    /// "" and NaT, as zarr-python writes by default. v2: xarray reads a given
    /// `fill_value` as `_FillValue`, masking the values equal to it, so numbers,
    /// bools, strings and bytes get none (read as 0, false, ""), floats NaN,
    /// times NaT.
    fn fill(&self, v2: bool) -> (FillValue, bool) {
        let t = &self.data_type;
        match t {
            DataType::Float16 | DataType::Float32 | DataType::Float64 if v2 => {
                (FillValue::Float(f64::NAN), false)
            }
            DataType::DateTime64(_) | DataType::TimeDelta64(_) => (FillValue::Int(i64::MIN), false),
            _ => (FillValue::default_for(t), v2),
        }
    }
}

/// How the writer names chunks: v3 `c/0/1`, v2 `0.1` (as zarr-python writes).
pub(crate) fn key_encoding(zarr_format: u8) -> ChunkKeyEncoding {
    match zarr_format {
        2 => ChunkKeyEncoding {
            kind: KeyKind::V2,
            separator: '.',
        },
        _ => ChunkKeyEncoding {
            kind: KeyKind::Default,
            separator: '/',
        },
    }
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
    let group = GroupMetadata {
        zarr_format,
        attributes,
    };
    let mut documents = group.to_documents();
    if consolidate && zarr_format == 2 {
        // .zmetadata lists the group's own documents too: written after them.
        write_documents(store, path, documents)?;
        let nodes = consolidated_nodes(store, path, 2)?;
        return write_documents(store, path, vec![(".zmetadata", zmetadata(nodes))]);
    }
    if let (true, Some((_, doc))) = (consolidate, documents.last_mut()) {
        doc["consolidated_metadata"] = consolidated_metadata(consolidated_nodes(store, path, 3)?);
    }
    write_documents(store, path, documents)
}

/// Whether values of `arrow_type` get 64-bit offsets on disk (`zarrs.vlen` uint64,
/// ZEP0007 `large_*`): the large types, and views (whose chunks may pass 2 GiB).
fn large_offsets(arrow_type: &ArrowType) -> bool {
    matches!(
        arrow_type,
        ArrowType::LargeUtf8 | ArrowType::LargeBinary | ArrowType::Utf8View | ArrowType::BinaryView
    )
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
