//! [`ZarrGroup`]: a group whose 1-D arrays are the columns of one table.

use std::sync::Arc;

use super::{ReadOptions, ReaderBuilder, ZarrArray, read_node};
use crate::error::{Error, Result};
use crate::metadata::{GroupMetadata, NodeMetadata, recorded_columns};
use crate::store::{Store, join_key};

/// A Zarr group opened for reading: its metadata and its children's, loaded once.
///
/// Cheap to clone (the store and metadata are shared).
#[derive(Debug, Clone)]
pub struct ZarrGroup {
    store: Arc<dyn Store>,
    path: String,
    meta: Arc<GroupMetadata>,
    children: Arc<Vec<(String, NodeMetadata)>>,
    options: ReadOptions,
}

impl ZarrGroup {
    /// Open the group at node `path` (`""` for the root) with default options.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], metadata errors, or [`Error::InvalidArgument`] when
    /// the node is an array.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        Self::open_with(store, path, ReadOptions::default())
    }

    /// Open with explicit options: reads the group's metadata and every child's.
    ///
    /// # Errors
    /// As [`ZarrGroup::open`]; a child whose metadata is present but invalid is an
    /// error (it is not skipped silently); directories without metadata are
    /// skipped.
    pub fn open_with(store: Arc<dyn Store>, path: &str, options: ReadOptions) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let meta = match read_node(store.as_ref(), &path)? {
            NodeMetadata::Group(meta) => meta,
            NodeMetadata::Array(_) => {
                return Err(Error::InvalidArgument(format!(
                    "{path:?} is an array, not a group"
                )));
            }
        };
        let mut children = Vec::new();
        for name in store.list_children(&path)? {
            match read_node(store.as_ref(), &join_key(&path, &name)) {
                Ok(node) => children.push((name, node)),
                Err(Error::NodeNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Self {
            store,
            path,
            meta: Arc::new(meta),
            children: Arc::new(children),
            options,
        })
    }

    /// The group's node path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The group's metadata.
    pub fn metadata(&self) -> &GroupMetadata {
        &self.meta
    }

    /// The direct children that are Zarr nodes, by name, sorted.
    pub fn children(&self) -> &[(String, NodeMetadata)] {
        &self.children
    }

    /// The 1-D child arrays: the table's columns, in the order zarrow's writer
    /// recorded, else sorted by name.
    ///
    /// # Errors
    /// A child array whose codecs cannot be built.
    pub fn columns(&self) -> Result<Vec<ZarrArray>> {
        let mut available = self
            .children
            .iter()
            .filter_map(|(name, node)| match node {
                NodeMetadata::Array(meta) if meta.shape.len() == 1 => {
                    Some(ZarrArray::from_metadata(
                        self.store.clone(),
                        join_key(&self.path, name),
                        (**meta).clone(),
                        self.options,
                    ))
                }
                _ => None,
            })
            .collect::<Result<Vec<_>>>()?;
        let Some(order) = recorded_columns(&self.meta.attributes) else {
            return Ok(available);
        };
        let mut ordered = Vec::with_capacity(available.len());
        for name in order {
            if let Some(pos) = available.iter().position(|a| a.column_name() == name) {
                ordered.push(available.remove(pos));
            }
        }
        ordered.extend(available);
        Ok(ordered)
    }

    /// The read options in force.
    pub fn options(&self) -> &ReadOptions {
        &self.options
    }

    /// A builder for a table reader over this group's 1-D arrays.
    pub fn reader(&self) -> ReaderBuilder {
        ReaderBuilder::for_group(self.clone())
    }
}
