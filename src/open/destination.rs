//! Zarr outputs written whole or not at all, wherever they are: a local
//! directory written beside its destination and moved into place
//! ([`Partial`](super::output::Partial)), a URL or a caller's store with every
//! node's metadata after its chunks and every key removed again on failure; an
//! append in place, at the group a path names. What `zarrow convert`,
//! `zarrow.write` and DataFusion's `COPY` and `INSERT INTO` write through
//! ([`Stores::write_zarr`]).

use std::path::Path;
use std::sync::Arc;

use crate::Stores;
use crate::error::{Error, Result, StoreAction};
use crate::location::Location;
use crate::store::{LocalStore, Store};
use crate::write::output::Partial;
use crate::write::{WriteMode, WriteOptions};

impl Stores {
    /// Write a Zarr node at `dst` through `write`, which is given the store and
    /// the node's path in it: whole or not at all (a local directory is written
    /// beside and moved into place; a URL or supplied store gets every node's
    /// metadata after its chunks, and every key removed again if `write` fails);
    /// an existing output is replaced only with `overwrite` (the caller's, or the
    /// options' mode), and only if it is a Zarr store. With `append` (or `mode`
    /// append), in place (the writer keeps a reader's view whole), as a node of the outermost Zarr group above the destination (its
    /// consolidated metadata grows too). What `zarrow convert`,
    /// `zarrow.write` and DataFusion's COPY and INSERT write a Zarr output
    /// through.
    ///
    /// # Errors
    /// An existing `dst` without `overwrite`, or not a Zarr store; a URL that
    /// cannot be opened; store errors; `write`'s errors.
    pub fn write_zarr(
        &self,
        dst: &Location,
        overwrite: bool,
        options: &WriteOptions,
        write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>,
    ) -> Result<u64> {
        // The caller's `overwrite` (`convert`'s) beside the options' mode.
        let mode = options.write_mode(overwrite)?;
        let overwrite = mode == WriteMode::Overwrite;
        if let Location::Icechunk(location) = dst {
            #[cfg(feature = "icechunk")]
            {
                let commit = crate::icechunk::write::Commit {
                    message: options.message.as_deref(),
                    overwrite,
                };
                return crate::icechunk::write::write(
                    location,
                    self.url_options(),
                    self.blocking(),
                    options,
                    commit,
                    write,
                );
            }
            #[cfg(not(feature = "icechunk"))]
            return Err(Error::Location {
                location: location.to_string(),
                reason: crate::location::LocationError::NotBuilt {
                    scheme: "icechunk".into(),
                    feature: "icechunk",
                },
            });
        }
        if let Location::Store { name, .. } = dst
            && let Some(version) = self.open(dst)?.pinned_version()
        {
            // A store that reads one immutable version (an Icechunk session the
            // caller handed over) takes no write: a commit needs the location.
            return Err(Error::ReadOnlyVersion {
                location: name.clone(),
                version: format!("snapshot {version}"),
            });
        }
        if options.message.is_some() {
            return Err(Error::OptionNotApplicable {
                options: vec!["message"],
                applies_to: "Icechunk outputs (icechunk+file://, icechunk+s3://...)",
            });
        }
        if mode == WriteMode::Append {
            let (store, node) = self.open_for_append(dst)?;
            return write(store, &node);
        }
        let write = |store| write(store, "");
        match dst {
            Location::Path(path) => write_dir(path, overwrite, write),
            other => replace_store(self.open_output(other)?, other, overwrite, write),
        }
    }

    /// The store to append to the group at `dst` (a directory, made when absent,
    /// a URL, or a supplied store at its root) in place, and the group's node
    /// path in it: `dst` inside a Zarr hierarchy (a group under groups) is
    /// written as a node of the hierarchy's root, so that the root's consolidated
    /// metadata grows too. What `convert` with `append` writes into (see
    /// [`WriteOptions::append`](crate::write::WriteOptions::append)).
    ///
    /// # Errors
    /// A URL that cannot be opened; store errors.
    pub(crate) fn open_for_append(&self, dst: &Location) -> Result<(Arc<dyn Store>, String)> {
        let mut root = dst.clone();
        let mut node: Vec<String> = Vec::new();
        // Climb while the parent is a Zarr group.
        while let Some((parent, name)) = root.parent() {
            let group = self.open_output(&parent).is_ok_and(|store| {
                // A parent that cannot be read (a bucket's root, a directory
                // without access) is no group of ours.
                matches!(
                    crate::read::read_node(store.as_ref(), ""),
                    Ok(crate::NodeMetadata::Group(_))
                )
            });
            if !group {
                break;
            }
            node.insert(0, name);
            root = parent;
        }
        Ok((self.open_output(&root)?, node.join("/")))
    }
}

/// Write a Zarr store at the directory `dst` through `write`, atomically
/// (see [`Partial`]): a failed `write` leaves nothing. An existing `dst` needs
/// `overwrite` and must be a Zarr store.
fn write_dir(
    dst: &Path,
    overwrite: bool,
    write: impl FnOnce(Arc<dyn Store>) -> Result<u64>,
) -> Result<u64> {
    let partial = Partial::dir(dst, overwrite)?;
    // Nobody reads the partial store: its writes are synced once, by the commit.
    let rows = write(Arc::new(LocalStore::synced_by_caller(partial.path())))?;
    partial.commit()?;
    Ok(rows)
}

/// Write a Zarr store into `store` (at `dst`, a URL or a supplied store).
/// An object store has no rename: chunks are written first and every node's
/// metadata after its chunks, so a reader sees the store complete or sees no
/// metadata for what is missing. An existing store needs `overwrite` (its
/// keys are deleted first); a failed write deletes every key it wrote.
fn replace_store(
    store: Arc<dyn Store>,
    dst: &Location,
    overwrite: bool,
    write: impl FnOnce(Arc<dyn Store>) -> Result<u64>,
) -> Result<u64> {
    let existing = store.list_prefix("")?;
    if !existing.is_empty() {
        if !overwrite {
            return Err(Error::AlreadyExists {
                path: dst.to_string(),
                overwrite: crate::error::Overwrite::WriteOptions,
            });
        }
        // As locally, only a Zarr store is replaced: never other data under the
        // prefix (or a whole bucket).
        let is_zarr = ["zarr.json", ".zgroup", ".zarray"]
            .iter()
            .any(|doc| existing.iter().any(|k| k == doc));
        if !is_zarr {
            return Err(Error::NotAZarrStore {
                path: dst.to_string(),
                entries: Some(existing.len() as u64),
                action: StoreAction::Replace,
            });
        }
        for key in &existing {
            store.delete(key)?;
        }
    }
    match write(store.clone()) {
        Ok(rows) => Ok(rows),
        Err(e) => {
            // Nothing partial stays behind: remove what was written.
            if let Ok(written) = store.list_prefix("") {
                for key in written {
                    let _ = store.delete(&key);
                }
            }
            Err(e)
        }
    }
}
