//! [`read_node`]: a node's metadata documents fetched from a store and parsed;
//! [`Node`]: with the conventions its attributes declare, decided there.

use std::sync::Arc;

use crate::conventions::Conventions;
use crate::error::{Error, Result};
use crate::metadata::{
    MAX_METADATA_BYTES, NodeMetadata, parse_zarr_json, parse_zarray, parse_zattrs, parse_zgroup,
};
use crate::store::{Store, join_key};

/// Read the metadata of the node at `path` (`""` for the root): `zarr.json` first,
/// then v2 `.zarray`, then `.zgroup` (each with `.zattrs`).
///
/// The codecs are parsed as written; building them (`CodecChain::from_metadata`,
/// which opening an array does) checks them.
///
/// # Errors
/// [`Error::NodeNotFound`] when none exists; metadata errors naming the key.
pub fn read_node(store: &dyn Store, path: &str) -> Result<NodeMetadata> {
    let key = join_key(path, "zarr.json");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        return parse_zarr_json(&key, &bytes);
    }
    let attributes = || -> Result<_> {
        let key = join_key(path, ".zattrs");
        match store.get_bounded(&key, MAX_METADATA_BYTES)? {
            Some(bytes) => parse_zattrs(&key, &bytes),
            None => Ok(Default::default()),
        }
    };
    let key = join_key(path, ".zarray");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        let meta = parse_zarray(&key, &bytes, attributes()?)?;
        return Ok(NodeMetadata::Array(Box::new(meta)));
    }
    let key = join_key(path, ".zgroup");
    if let Some(bytes) = store.get_bounded(&key, MAX_METADATA_BYTES)? {
        return Ok(NodeMetadata::Group(parse_zgroup(
            &key,
            &bytes,
            attributes()?,
        )?));
    }
    Err(Error::NodeNotFound {
        path: crate::store::node_label(store, path),
    })
}

/// A node as opened: its metadata and the conventions its attributes declare
/// (anndata's encoding, CF decoding, zarrow's recorded attributes), decided
/// once here and carried to the [`ZarrArray`](crate::ZarrArray) or
/// [`ZarrGroup`](crate::ZarrGroup) made from it.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    metadata: NodeMetadata,
    conventions: Arc<Conventions>,
}

impl Node {
    /// The node at `path` ([`read_node`]) and its conventions.
    ///
    /// # Errors
    /// As [`read_node`].
    pub(crate) fn read(store: &dyn Store, path: &str) -> Result<Self> {
        let metadata = read_node(store, path)?;
        let conventions = Arc::new(Conventions::of(&metadata));
        Ok(Self {
            metadata,
            conventions,
        })
    }

    /// Its metadata.
    pub(crate) fn metadata(&self) -> &NodeMetadata {
        &self.metadata
    }

    /// The conventions it follows.
    pub(crate) fn conventions(&self) -> &Arc<Conventions> {
        &self.conventions
    }

    /// Its metadata and conventions.
    pub(crate) fn into_parts(self) -> (NodeMetadata, Arc<Conventions>) {
        (self.metadata, self.conventions)
    }
}
