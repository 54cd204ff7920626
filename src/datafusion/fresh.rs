//! Whether a table's store still holds the metadata the table was opened on:
//! a table opened [tracked](super::ZarrTable::open_tracked) records, before
//! it reads them, the version of every metadata document and the children of
//! every listing its opening read; [`refreshed`](super::ZarrTable::refreshed)
//! asks for them again (a file's status, an object listing: one request each,
//! no document read) and opens the table again only when one has changed.
//!
//! Each version is taken before the document is read, so a change made while
//! the table opens is seen at the next check, never missed. Chunks are never
//! kept, and chunk statistics are checked at each scan against the listing of
//! their array (and read again only when the file's version has changed).

use std::collections::BTreeMap;

use crate::error::Result;
use crate::store::{MetadataSnapshot, Store};

/// The documents at a table's root that opening it may read (consolidated
/// metadata, the root group): checked whether or not the table read them.
const ROOT_DOCUMENTS: [&str; 4] = ["zarr.json", ".zmetadata", ".zgroup", ".zattrs"];

/// The versions of what opening a table read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Versions {
    /// Each document's version (`None`: absent).
    documents: BTreeMap<String, Option<String>>,
    /// Each listed prefix's children, sorted.
    listings: BTreeMap<String, Vec<String>>,
}

impl Versions {
    /// The versions now in `store` (the table's store as it is, below any
    /// consolidated metadata) of the root's documents and, unless the table's
    /// metadata is `consolidated` at the root (then the root's documents hold
    /// all of it), of the documents and listings `known` holds. `None`: the
    /// store cannot tell a version.
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn now(
        store: &dyn Store,
        known: &MetadataSnapshot,
        consolidated: bool,
    ) -> Result<Option<Self>> {
        let mut documents = BTreeMap::new();
        let nodes = if consolidated { None } else { Some(known) };
        let keys = ROOT_DOCUMENTS
            .iter()
            .map(|k| (*k).to_string())
            .chain(nodes.into_iter().flat_map(|k| k.documents.keys().cloned()));
        for key in keys {
            if documents.contains_key(&key) {
                continue;
            }
            let Some(version) = store.version(&key)? else {
                return Ok(None);
            };
            documents.insert(key, version);
        }
        let mut listings = BTreeMap::new();
        for prefix in nodes.into_iter().flat_map(|k| k.listings.keys()) {
            let mut children = store.list_children(prefix)?;
            children.sort();
            listings.insert(prefix.clone(), children);
        }
        Ok(Some(Self {
            documents,
            listings,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LocalStore;

    fn snapshot(keys: &[&str]) -> MetadataSnapshot {
        MetadataSnapshot {
            documents: keys.iter().map(|k| ((*k).to_string(), None)).collect(),
            listings: BTreeMap::from([(String::new(), Vec::new())]),
        }
    }

    #[test]
    fn a_rewritten_document_or_a_new_child_changes_the_versions() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        store.set("zarr.json", b"{}").unwrap();
        store.set("a/zarr.json", b"{}").unwrap();
        store.set("a/c/0", b"x").unwrap();
        let known = snapshot(&["a/zarr.json"]);
        let before = Versions::now(&store, &known, false).unwrap().unwrap();
        // A chunk written again is not metadata.
        store.set("a/c/0", b"y").unwrap();
        assert_eq!(
            Versions::now(&store, &known, false).unwrap().unwrap(),
            before
        );
        // The same bytes stored again are another version.
        store.set("a/zarr.json", b"{}").unwrap();
        let rewritten = Versions::now(&store, &known, false).unwrap().unwrap();
        assert_ne!(rewritten, before);
        // A child added to a listed group.
        store.set("b/zarr.json", b"{}").unwrap();
        assert_ne!(
            Versions::now(&store, &known, false).unwrap().unwrap(),
            rewritten
        );
        // Consolidated metadata written at the root, where there was none.
        let with_child = Versions::now(&store, &known, false).unwrap().unwrap();
        store.set(".zmetadata", b"{}").unwrap();
        assert_ne!(
            Versions::now(&store, &known, false).unwrap().unwrap(),
            with_child
        );
    }

    #[test]
    fn consolidated_metadata_is_told_by_the_root_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        store.set("zarr.json", b"{}").unwrap();
        store.set("a/zarr.json", b"{}").unwrap();
        let known = snapshot(&["a/zarr.json"]);
        let before = Versions::now(&store, &known, true).unwrap().unwrap();
        // A node's own document, or a new child: not what opening it reads.
        store.set("a/zarr.json", b"{}").unwrap();
        store.set("b/zarr.json", b"{}").unwrap();
        assert_eq!(
            Versions::now(&store, &known, true).unwrap().unwrap(),
            before
        );
        store.set("zarr.json", b"{}").unwrap();
        assert_ne!(
            Versions::now(&store, &known, true).unwrap().unwrap(),
            before
        );
    }
}
