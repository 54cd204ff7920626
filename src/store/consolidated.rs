//! Consolidated metadata: every node's metadata document in one value at the
//! root, as zarr-python writes it, so that opening a group takes one request and
//! no listing (which an HTTP server cannot do, and an object store does slowly).
//!
//! - Zarr v3: the root `zarr.json`'s `consolidated_metadata`:
//!   `{"kind": "inline", "metadata": {"a": {..a's zarr.json..}, "a/b": {...}}}`;
//! - Zarr v2: `.zmetadata`:
//!   `{"metadata": {".zgroup": {...}, "a/.zarray": {...}, "a/.zattrs": {...}},
//!   "zarr_consolidated_format": 1}`.
//!
//! [`Consolidated::open`] reads them once; the store it returns answers metadata
//! keys and listings from them and passes every other key (the chunks) through.
//! Without consolidated metadata it reads each document (and listing) once,
//! when first asked for, and remembers it: a
//! [`MetadataSnapshot`] of what opening a table took travels in a distributed
//! plan, and [`Consolidated::from_snapshot`] opens the same table again on
//! another machine with no metadata request at all.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock};

use arrow_buffer::Buffer;
use serde_json::{Map, Value, json};

use super::{ByteRange, RangeRead, Store, join_key};
use crate::error::{Error, Result};
use crate::metadata::MAX_METADATA_BYTES;

/// The metadata document names.
const DOCUMENTS: [&str; 4] = ["zarr.json", ".zarray", ".zgroup", ".zattrs"];

/// A store whose metadata documents come from consolidated metadata, or from
/// what it read before.
#[derive(Debug)]
pub struct Consolidated {
    inner: Arc<dyn Store>,
    known: RwLock<MetadataSnapshot>,
    /// Whether `known.documents` holds every node's (consolidated metadata, a
    /// snapshot), or only those read so far (each read once: a remote request
    /// costs a round trip).
    complete: bool,
    /// Values asked for at a version ([`Store::get_version`]: an array's chunk
    /// statistics), kept by key with that version, shared by the stores
    /// this one reads into: a scan whose listing gives the same version
    /// again reads none of them.
    by_version: Arc<RwLock<HashMap<String, (String, Buffer)>>>,
}

/// The metadata documents (by key; `None`: known absent) and child listings
/// (by prefix) a [`Consolidated`] store has read or was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MetadataSnapshot {
    /// Metadata documents by key (`None`: known absent).
    pub documents: BTreeMap<String, Option<Buffer>>,
    /// The children listed below each prefix.
    pub listings: BTreeMap<String, Vec<String>>,
}

impl Consolidated {
    /// `store` with its consolidated metadata, when the root has any, and its
    /// root document read once either way.
    ///
    /// # Errors
    /// Store errors; [`Error::Metadata`] for consolidated metadata that is not
    /// what zarr-python writes.
    pub fn open(store: Arc<dyn Store>) -> Result<Arc<dyn Store>> {
        Ok(Arc::new(Self::opened(store)?))
    }

    /// [`open`](Self::open), as itself.
    pub(crate) fn opened(store: Arc<dyn Store>) -> Result<Self> {
        let mut documents = BTreeMap::new();
        let root = store.get_bounded("zarr.json", MAX_METADATA_BYTES)?;
        documents.insert("zarr.json".to_string(), root.clone());
        let consolidated = match &root {
            Some(bytes) => parse("zarr.json", bytes)?.remove("consolidated_metadata"),
            None => None,
        };
        let complete = if let Some(consolidated) = consolidated.filter(|c| !c.is_null()) {
            let Some(Value::Object(metadata)) = consolidated.get("metadata") else {
                return Err(match consolidated.get("metadata") {
                    Some(found) => Error::metadata_found(
                        "zarr.json",
                        "consolidated_metadata.metadata",
                        "a JSON object",
                        found,
                    ),
                    None => Error::metadata(
                        "zarr.json",
                        "consolidated_metadata.metadata",
                        "a JSON object (the field is required)",
                    ),
                });
            };
            for (path, node) in metadata {
                if !node.is_object() {
                    return Err(Error::metadata_found(
                        "zarr.json",
                        format!("consolidated_metadata.metadata[{path:?}]"),
                        "a JSON object (a node's metadata)",
                        node,
                    ));
                }
                let key = join_key(path.trim_matches('/'), "zarr.json");
                documents.insert(key, Some(Buffer::from(node.to_string().into_bytes())));
            }
            true
        } else if root.is_none()
            && let Some(bytes) = store.get_bounded(".zmetadata", MAX_METADATA_BYTES)?
        {
            let doc = parse(".zmetadata", &bytes)?;
            let Some(Value::Object(metadata)) = doc.get("metadata") else {
                return Err(match doc.get("metadata") {
                    Some(found) => {
                        Error::metadata_found(".zmetadata", "metadata", "a JSON object", found)
                    }
                    None => Error::metadata(
                        ".zmetadata",
                        "metadata",
                        "a JSON object (the field is required)",
                    ),
                });
            };
            for (key, value) in metadata {
                let name = key.rsplit('/').next().unwrap_or("");
                if !DOCUMENTS.contains(&name) {
                    return Err(Error::metadata_found(
                        ".zmetadata",
                        format!("metadata[{key:?}]"),
                        "a key ending in a metadata document's name (.zarray, .zgroup, .zattrs, zarr.json)",
                        format!("{key:?}"),
                    ));
                }
                documents.insert(
                    key.clone(),
                    Some(Buffer::from(value.to_string().into_bytes())),
                );
            }
            true
        } else {
            // No consolidated metadata: only the root document, read once.
            false
        };
        Ok(Self {
            inner: store,
            known: RwLock::new(MetadataSnapshot {
                documents,
                listings: BTreeMap::new(),
            }),
            complete,
            by_version: Arc::default(),
        })
    }

    /// Whether every node's metadata comes from the root's consolidated
    /// metadata (or a snapshot), not from each node's own documents.
    #[cfg(feature = "datafusion")]
    pub(crate) fn is_consolidated(&self) -> bool {
        self.complete
    }

    /// `store` as it is, nothing read yet: each metadata document and listing is
    /// read once, when first asked for, and remembered.
    #[cfg(feature = "datafusion")]
    pub(crate) fn remembering(store: Arc<dyn Store>) -> Self {
        Self {
            inner: store,
            known: RwLock::default(),
            complete: false,
            by_version: Arc::default(),
        }
    }

    #[cfg(feature = "datafusion")]
    /// `store` with the metadata of `snapshot` (taken from a store of the same
    /// data, elsewhere), reading none: a document the snapshot does not hold is
    /// absent, and a listing it does not hold is its documents' nodes.
    pub(crate) fn from_snapshot(store: Arc<dyn Store>, snapshot: MetadataSnapshot) -> Self {
        Self {
            inner: store,
            known: RwLock::new(snapshot),
            complete: true,
            by_version: Arc::default(),
        }
    }

    #[cfg(feature = "datafusion")]
    /// The metadata documents and listings read (or given) so far.
    pub(crate) fn snapshot(&self) -> MetadataSnapshot {
        self.known
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The document at `key` as known: `Some(answer)` from the consolidated
    /// metadata or an earlier read; `None` to ask the store.
    fn known(&self, key: &str) -> Option<Option<Buffer>> {
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(doc) = known.documents.get(key) {
            return Some(doc.clone());
        }
        (self.complete && Self::is_document(key)).then_some(None)
    }

    /// Remember what the store answered for document `key`.
    fn remember(&self, key: &str, doc: &Option<Buffer>) {
        if Self::is_document(key) {
            self.known
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .documents
                .insert(key.to_string(), doc.clone());
        }
    }

    /// Forget document `key` (written or deleted through this store).
    fn forget(&self, key: &str) {
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        known.documents.remove(key);
        known.listings.clear();
        self.by_version
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    fn is_document(key: &str) -> bool {
        DOCUMENTS.contains(&key.rsplit('/').next().unwrap_or(""))
    }
}

fn parse(key: &str, bytes: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Error::metadata_found(
            key,
            "(document)",
            "a JSON object",
            other,
        )),
        Err(source) => Err(Error::Json {
            key: key.to_string(),
            source,
        }),
    }
}

impl Store for Consolidated {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn lock(&self, wait: std::time::Duration) -> Result<Option<super::WriteLock>> {
        self.inner.lock(wait)
    }

    fn concurrency(&self) -> usize {
        self.inner.concurrency()
    }

    #[cfg(feature = "async")]
    fn remote(&self) -> Option<super::Remote> {
        self.inner.remote()
    }

    fn reading_into(&self, recycler: &Arc<crate::recycle::Recycler>) -> Option<Arc<dyn Store>> {
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        Some(Arc::new(Self {
            inner: self.inner.reading_into(recycler)?,
            known: RwLock::new(known.clone()),
            complete: self.complete,
            by_version: self.by_version.clone(),
        }))
    }

    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        match self.known(key) {
            Some(doc) => Ok(doc),
            None => {
                let doc = self.inner.get(key)?;
                self.remember(key, &doc);
                Ok(doc)
            }
        }
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        match self.known(key) {
            Some(doc) => {
                if let Some(d) = &doc {
                    super::check_size(key, d.len() as u64, max_len)?;
                }
                Ok(doc)
            }
            None => {
                let doc = self.inner.get_bounded(key, max_len)?;
                self.remember(key, &doc);
                Ok(doc)
            }
        }
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>> {
        self.inner.get_range(key, range)
    }

    fn value_len(&self, key: &str) -> Result<Option<u64>> {
        self.inner.value_len(key)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        self.inner.get_ranges(key, ranges)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.forget(key);
        self.inner.set(key, value)
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.forget(key);
        self.inner.delete(key)
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.list_prefix(prefix)
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        self.inner.list_versions(prefix)
    }

    fn version(&self, key: &str) -> Result<Option<Option<String>>> {
        self.inner.version(key)
    }

    fn get_version(&self, key: &str, version: &str, max_len: u64) -> Result<Option<Buffer>> {
        let kept = self
            .by_version
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .filter(|(v, _)| v == version)
            .map(|(_, value)| value.clone());
        if let Some(value) = kept {
            super::check_size(key, value.len() as u64, max_len)?;
            return Ok(Some(value));
        }
        let value = self.inner.get_version(key, version, max_len)?;
        let mut kept = self
            .by_version
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match &value {
            Some(bytes) => {
                kept.insert(key.to_string(), (version.to_string(), bytes.clone()));
            }
            None => {
                kept.remove(key);
            }
        }
        Ok(value)
    }

    /// The nodes the consolidated metadata names directly below `prefix` (the
    /// store's listing without it).
    fn needs_metadata_first(&self) -> bool {
        self.inner.needs_metadata_first()
    }

    fn pinned_version(&self) -> Option<String> {
        self.inner.pinned_version()
    }

    fn wants_consolidated(&self) -> bool {
        self.inner.wants_consolidated()
    }

    fn list_children(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.trim_matches('/');
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(names) = known.listings.get(prefix) {
            return Ok(names.clone());
        }
        if !self.complete {
            drop(known);
            let names = self.inner.list_children(prefix)?;
            self.known
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .listings
                .insert(prefix.to_string(), names.clone());
            return Ok(names);
        }
        let mut names: Vec<String> = known
            .documents
            .iter()
            .filter(|(_, doc)| doc.is_some())
            .filter_map(|(key, _)| {
                let rest = if prefix.is_empty() {
                    key.as_str()
                } else {
                    key.strip_prefix(prefix)?.strip_prefix('/')?
                };
                let (child, _) = rest.split_once('/')?;
                Some(child.to_string())
            })
            .collect();
        names.dedup();
        Ok(names)
    }
}

/// The metadata documents below the group at node `path`, for consolidated
/// metadata: v3, each node's `zarr.json` by its path relative to the group (the
/// group's own left out); v2, every `.zarray` / `.zgroup` / `.zattrs` by its key
/// relative to the group (the group's own included).
///
/// # Errors
/// Store errors; invalid JSON in a document.
pub(crate) fn consolidated_nodes(
    store: &dyn Store,
    path: &str,
    zarr_format: u8,
) -> Result<Map<String, Value>> {
    let prefix = join_key(path, "");
    let mut nodes = Map::new();
    for full in store.list_prefix(&prefix)? {
        let key = &full[prefix.len()..];
        let name = key.rsplit('/').next().unwrap_or("");
        let wanted = if zarr_format == 2 {
            matches!(name, ".zarray" | ".zgroup" | ".zattrs")
        } else {
            name == "zarr.json" && key != "zarr.json"
        };
        if !wanted {
            continue;
        }
        let Some(bytes) = store.get_bounded(&full, MAX_METADATA_BYTES)? else {
            continue;
        };
        let doc = Value::Object(parse(&full, &bytes)?);
        let key = if zarr_format == 2 {
            key
        } else {
            key.strip_suffix("/zarr.json").unwrap_or(key)
        };
        nodes.insert(key.to_string(), doc);
    }
    Ok(nodes)
}

/// A v3 group's `consolidated_metadata` member for `nodes`.
pub(crate) fn consolidated_metadata(nodes: Map<String, Value>) -> Value {
    json!({"kind": "inline", "must_understand": false, "metadata": nodes})
}

/// A v2 `.zmetadata` document for `nodes`.
pub(crate) fn zmetadata(nodes: Map<String, Value>) -> Value {
    json!({"metadata": nodes, "zarr_consolidated_format": 1})
}
