//! Appending rows to a table that is already stored: its 1-D arrays grow.
//!
//! New rows continue each array's chunk grid with the array's own codecs and
//! chunk keys (the write options' format, codecs and chunk sizes do not apply).
//!
//! - The last grid chunk (the shard, when sharded), when partly filled, is read
//!   and stored again whole, its old rows first: one new value replaces it (a
//!   file renamed into place, one PUT), and a reader of the old metadata still
//!   finds its rows there. New chunks follow.
//! - Each array's metadata then records its new length, and last the
//!   consolidated metadata, which zarrow and zarr-python read: a reader sees
//!   the old table or the new one, whole. (A group without consolidated
//!   metadata grows array by array in that last step.)
//! - The debris of an append that did not finish (chunks past the recorded
//!   length, a killed write's temporary file) is removed by the next one,
//!   under the writer lock (see [`Store::lock`]).

use std::sync::Arc;

use arrow_array::{ArrayRef, make_array};
use arrow_schema::DataType as ArrowType;
use serde_json::{Map, Value, json};

use super::metadata::write_documents;
use crate::codec::CodecChain;
use crate::error::{Error, Result};
use crate::grid::{ChunkKeyEncoding, KeyKind};
use crate::metadata::{ArrayMetadata, MAX_METADATA_BYTES, StringType, parse_json};
use crate::read::{ReadOptions, ZarrArray};
use crate::store::{
    Store, consolidated_metadata, consolidated_nodes, is_temporary, join_key, zmetadata,
};

/// One stored 1-D array that grows: its metadata as stored, and how its chunks
/// are laid out.
#[derive(Debug)]
pub(crate) struct Existing {
    array: ZarrArray,
    /// The metadata document as stored, and its name.
    doc: Map<String, Value>,
    doc_name: &'static str,
}

impl Existing {
    /// The array at `path`, its values to be read as `arrow_type` (the
    /// appended column's type: the string layout follows it).
    ///
    /// # Errors
    /// No array there, an N-d array, metadata errors.
    pub(crate) fn open(store: &Arc<dyn Store>, path: &str, arrow_type: &ArrowType) -> Result<Self> {
        let string_type = match arrow_type {
            ArrowType::LargeUtf8 | ArrowType::LargeBinary => StringType::LargeUtf8,
            ArrowType::Utf8View | ArrowType::BinaryView => StringType::Utf8View,
            _ => StringType::Utf8,
        };
        let options = ReadOptions {
            decode_cf: false,
            string_type: Some(string_type),
            ..ReadOptions::default()
        };
        let array = ZarrArray::open_with(store.clone(), path, options)?;
        if array.metadata().shape.len() != 1 {
            return Err(Error::NotOneDimensional {
                path: array.label(),
                shape: array.metadata().shape.clone(),
                operation: "an append (only 1-D arrays grow by rows)",
            });
        }
        let doc_name = if array.metadata().zarr_format == 2 {
            ".zarray"
        } else {
            "zarr.json"
        };
        let key = join_key(path, doc_name);
        let bytes = store
            .get_bounded(&key, MAX_METADATA_BYTES)?
            .ok_or_else(|| {
                Error::metadata_found(
                    &key,
                    "(document)",
                    "the array's metadata document",
                    "nothing: it was removed while it was being appended to",
                )
            })?;
        let doc = parse_json(&key, &bytes)?;
        Ok(Self {
            array,
            doc,
            doc_name,
        })
    }

    pub(crate) fn metadata(&self) -> &ArrayMetadata {
        self.array.metadata()
    }

    /// Every stored value (a categorical's categories).
    ///
    /// # Errors
    /// Read errors.
    pub(crate) fn read_all(&self) -> Result<ArrayRef> {
        self.array.read_all()
    }

    /// The rows stored.
    pub(crate) fn rows(&self) -> u64 {
        self.array.len()
    }

    /// Elements per chunk of the grid (per shard, when sharded).
    pub(crate) fn grid_len(&self) -> u64 {
        self.metadata().chunk_shape[0].max(1)
    }

    pub(crate) fn codecs(&self) -> Arc<CodecChain> {
        Arc::new(self.array.codecs().clone())
    }

    pub(crate) fn key_encoding(&self) -> ChunkKeyEncoding {
        self.metadata().chunk_key_encoding
    }

    /// The rows of the last grid chunk when it is partly filled, as
    /// `arrow_type`: they are stored again, with the new rows after them.
    ///
    /// # Errors
    /// Read errors; values that cannot be `arrow_type`.
    pub(crate) fn head(&self, arrow_type: &ArrowType) -> Result<Option<ArrayRef>> {
        let rows = self.rows();
        let kept = rows % self.grid_len();
        if kept == 0 {
            return Ok(None);
        }
        let values = self.array.read_range(rows - kept..rows)?;
        retype(values, arrow_type, &self.array.label()).map(Some)
    }

    /// Whether a reader with the default options decodes the array's values
    /// (CF attributes), so that its raw values are not what a reader sees.
    pub(crate) fn decodes_cf(&self) -> Result<bool> {
        self.array.has_cf_decoding()
    }

    /// Remove what an append that did not finish left in the array: chunks at
    /// or past the grid's end, temporary files.
    ///
    /// # Errors
    /// Store errors.
    pub(crate) fn clear_debris(&self, store: &dyn Store) -> Result<()> {
        let prefix = join_key(self.array.path(), "");
        let chunks = self.rows().div_ceil(self.grid_len());
        let encoding = self.key_encoding();
        for key in store.list_prefix(&prefix)? {
            let name = &key[prefix.len()..];
            let file = name.rsplit('/').next().unwrap_or(name);
            let temporary = is_temporary(file);
            let past_end = chunk_index(name, encoding).is_some_and(|i| i >= chunks);
            if temporary || past_end {
                store.delete(&key)?;
            }
        }
        Ok(())
    }

    /// Record the new length `rows` in the array's metadata.
    ///
    /// # Errors
    /// Store errors.
    pub(crate) fn commit(&self, store: &dyn Store, rows: u64) -> Result<()> {
        let mut doc = self.doc.clone();
        doc.insert("shape".into(), json!([rows]));
        write_documents(
            store,
            self.array.path(),
            vec![(self.doc_name, Value::Object(doc))],
        )
    }
}

/// The index of a 1-D array's chunk key `name` (relative to the array), or
/// `None` when `name` is no chunk key (a metadata document).
fn chunk_index(name: &str, encoding: ChunkKeyEncoding) -> Option<u64> {
    let index = match encoding.kind {
        KeyKind::Default => name.strip_prefix('c')?.strip_prefix(encoding.separator)?,
        _ => name,
    };
    index.parse().ok()
}

/// `values` (a stored array's rows) as `arrow_type`: the same values when
/// the types differ only in what the bytes mean (a timestamp's zone, say).
fn retype(values: ArrayRef, arrow_type: &ArrowType, label: &str) -> Result<ArrayRef> {
    if values.data_type() == arrow_type {
        return Ok(values);
    }
    let same_width = values
        .data_type()
        .primitive_width()
        .is_some_and(|w| Some(w) == arrow_type.primitive_width());
    if !same_width {
        return Err(Error::AppendMismatch {
            path: label.to_string(),
            reason: crate::error::AppendMismatch::DataType {
                column: label.to_string(),
                stored: values.data_type().to_string(),
                input: arrow_type.to_string(),
                arrow_type: arrow_type.clone(),
            },
        });
    }
    let data = values
        .to_data()
        .into_builder()
        .data_type(arrow_type.clone())
        .build()?;
    Ok(make_array(data))
}

/// Remove the temporary files a killed write left beside the metadata of the
/// group at `path` and of every group above it (where an append writes
/// documents).
///
/// # Errors
/// Store errors.
pub(crate) fn clear_temporary(store: &dyn Store, path: &str) -> Result<()> {
    for group in groups_up(path) {
        let prefix = join_key(group, ".");
        for key in store.list_prefix(&prefix)? {
            let name = &key[prefix.len() - 1..];
            if !name.contains('/') && is_temporary(name) {
                store.delete(&key)?;
            }
        }
    }
    Ok(())
}

/// The group at `path` and every group above it, the root (`""`) last.
fn groups_up(path: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(path.trim_matches('/')), |group| match *group {
        "" => None,
        _ => Some(group.rsplit_once('/').map_or("", |(parent, _)| parent)),
    })
}

/// Write the consolidated metadata again of the group at `path` and of every
/// group above it that has some (the root last: what readers open).
///
/// # Errors
/// Store errors; invalid metadata documents.
pub(crate) fn reconsolidate(store: &dyn Store, path: &str) -> Result<()> {
    for group in groups_up(path) {
        let v3 = join_key(group, "zarr.json");
        if let Some(bytes) = store.get_bounded(&v3, MAX_METADATA_BYTES)? {
            let mut doc = parse_json(&v3, &bytes)?;
            let consolidated = doc
                .get("consolidated_metadata")
                .is_some_and(|c| !c.is_null());
            if consolidated {
                let nodes = consolidated_nodes(store, group, 3)?;
                doc.insert("consolidated_metadata".into(), consolidated_metadata(nodes));
                write_documents(store, group, vec![("zarr.json", Value::Object(doc))])?;
            }
        } else if store.value_len(&join_key(group, ".zmetadata"))?.is_some() {
            let nodes = consolidated_nodes(store, group, 2)?;
            write_documents(store, group, vec![(".zmetadata", zmetadata(nodes))])?;
        }
    }
    Ok(())
}
