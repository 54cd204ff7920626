//! Key-value stores that hold Zarr hierarchies.
//!
//! A [`Store`] maps `/`-separated keys (`"obs/cell_type/c/0"`) to byte values. It has
//! few required methods; conveniences live in [`StoreExt`]. Two backends ship:
//! [`LocalStore`] (a directory, the default) and [`MemoryStore`]. Every backend
//! passes the same conformance test (`tests/integration/store.rs`).
//!
//! Keys are checked (`validate_key`): a key that could leave the store root
//! (`..`, an absolute path, a backslash, an empty component) is refused with
//! [`Error::InvalidKey`] before any I/O happens.

#[cfg(feature = "async")]
pub(crate) mod async_store;
#[cfg(feature = "async")]
mod blocking;
mod consolidated;
#[cfg(feature = "object-store")]
mod lease;
mod local;
mod memory;
#[cfg(feature = "object-store")]
mod object;
mod ranges;
pub(crate) mod writeback;

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use arrow_buffer::Buffer;

#[cfg(feature = "async")]
pub use async_store::AsyncStore;
#[cfg(feature = "async")]
pub(crate) use async_store::{Remote, SyncAsAsync};
#[cfg(feature = "async")]
pub(crate) use blocking::Blocking;
#[cfg(feature = "datafusion")]
pub(crate) use blocking::run_blocking;
#[cfg(feature = "async")]
pub use blocking::{BlockingStore, runtime};
pub use consolidated::Consolidated;
#[cfg(feature = "datafusion")]
pub(crate) use consolidated::MetadataSnapshot;
pub(crate) use consolidated::{consolidated_metadata, consolidated_nodes, zmetadata};
pub use local::LocalStore;
pub(crate) use local::is_temporary;
pub use memory::MemoryStore;
#[cfg(feature = "datafusion")]
pub(crate) use object::DEFAULT_CONCURRENCY;
#[cfg(feature = "icechunk")]
pub(crate) use object::ShortRead;
#[cfg(feature = "object-store")]
pub use object::{ObjectStoreAsync, ObjectStoreBackend};
#[cfg(feature = "object-store")]
pub(crate) use ranges::COALESCE_GAP;
pub use ranges::{ByteRange, RangeRead};
#[cfg(feature = "icechunk")]
pub(crate) use ranges::{coalesce, resolve as resolve_ranges, split as split_ranges};
pub(crate) use ranges::{read_coalesced, slice_ranges};

use crate::error::{Error, Result};

/// A key-value store of Zarr nodes and chunks.
///
/// Methods take `&self` so that one store can serve many threads; implementations
/// are `Send + Sync`.
pub trait Store: Debug + Send + Sync {
    /// Where the store is, for messages (a directory, a URL); empty when it has
    /// no name (an in-memory store).
    fn location(&self) -> String {
        String::new()
    }

    /// How many requests a reader should keep in flight: 1 for a local store
    /// (the reader's threads decode what they read); more for a remote one, where
    /// a request mostly waits.
    fn concurrency(&self) -> usize {
        1
    }

    /// The store's async form, when it waits on a network (an object store):
    /// a blocking reader then keeps many requests in flight through the async
    /// driver. `None` (the default): reads are short and run inline.
    #[cfg(feature = "async")]
    fn remote(&self) -> Option<Remote> {
        None
    }

    /// The same store, reading whole values into buffers from `recycler` (an
    /// engine's scan's, which keeps what its batches release: see
    /// `src/recycle.rs`); `None` (the default) where it cannot.
    #[doc(hidden)]
    fn reading_into(&self, recycler: &Arc<crate::recycle::Recycler>) -> Option<Arc<dyn Store>> {
        let _ = recycler;
        None
    }

    /// The whole value at `key`, or `None` when the key is absent.
    ///
    /// The returned buffer is allocated with Arrow's alignment where the backend
    /// allocates, so that decoders can view it as `u32`/`u64` without a copy.
    fn get(&self, key: &str) -> Result<Option<Buffer>>;

    /// The value at `key`, refusing one larger than `max_len` bytes with
    /// [`Error::ValueTooLarge`]. Backends that know a value's size before reading it
    /// refuse without reading (so a huge or sparse file is never allocated).
    fn get_bounded(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        let value = self.get(key)?;
        if let Some(v) = &value {
            check_size(key, v.len() as u64, max_len)?;
        }
        Ok(value)
    }

    /// Bytes `range` of the value at `key`; `None` when the key is absent.
    ///
    /// # Errors
    /// [`Error::RangeOutOfBounds`] when the range ends past the value.
    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>>;

    /// The length of the value at `key`, or `None` when the key is absent. The
    /// default reads the value; backends that know it (a file's size) override.
    fn value_len(&self, key: &str) -> Result<Option<u64>> {
        Ok(self.get(key)?.map(|v| v.len() as u64))
    }

    /// Several byte ranges of the value at `key` (one buffer each, in the order
    /// asked), or `None` when the key is absent. A [`ByteRange::Suffix`] reads the
    /// end of a value whose length the caller does not know (a shard index).
    ///
    /// The default asks [`Store::value_len`] once, then fetches ranges nearer
    /// than 1 MiB to each other with one [`Store::get_range`] each, as
    /// object_store's `get_ranges` does.
    ///
    /// # Errors
    /// [`Error::RangeOutOfBounds`] when a range ends past the value.
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        let Some(len) = self.value_len(key)? else {
            return Ok(None);
        };
        // A value removed between the two calls is absent now.
        read_coalesced(key, ranges, len, |range| self.get_range(key, range))
    }

    /// Store `value` at `key`, replacing any previous value atomically: a reader
    /// sees the old value or the new one, never a part.
    fn set(&self, key: &str, value: &[u8]) -> Result<()>;

    /// Remove `key`. Removing an absent key is not an error.
    fn delete(&self, key: &str) -> Result<()>;

    /// Every key that starts with `prefix`, sorted. A `prefix` of `""` lists all.
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>>;

    /// Every key that starts with `prefix`, with its version: text that
    /// changes whenever the value is stored again (a file's size, modification
    /// and change times in nanoseconds and inode; an object's size and ETag).
    /// One listing, not a request per key. `None` (the default): the store
    /// cannot tell (an HTTP server), and chunk statistics are used as they are.
    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        let _ = prefix;
        Ok(None)
    }

    /// The version of the value at `key`, as [`list_versions`](Self::list_versions)
    /// gives it: `Some(Some(v))`; `Some(None)`: no value is there; `None`: the
    /// store cannot tell. The default lists with `key` as the prefix (one
    /// request).
    fn version(&self, key: &str) -> Result<Option<Option<String>>> {
        Ok(self
            .list_versions(key)?
            .map(|listed| listed.into_iter().find(|(k, _)| k == key).map(|(_, v)| v)))
    }

    /// [`get_bounded`](Self::get_bounded) of a value that a listing just gave
    /// as `version`: a store that keeps values by their version may answer
    /// from memory (the default asks the store). A value stored again since
    /// has another version, so what is kept is never answered for it.
    fn get_version(&self, key: &str, version: &str, max_len: u64) -> Result<Option<Buffer>> {
        let _ = version;
        self.get_bounded(key, max_len)
    }

    /// Keep other writers of this store out until the returned lock drops,
    /// waiting up to `wait` while another writer holds it. `Ok(None)` (the
    /// default): the store cannot keep writers out, and two writers at once may
    /// lose each other's rows.
    ///
    /// # Errors
    /// [`Error::Busy`] when another writer still holds the store after `wait`;
    /// the store's errors.
    fn lock(&self, wait: Duration) -> Result<Option<WriteLock>> {
        let _ = wait;
        Ok(None)
    }

    /// Whether a group written here carries its children's metadata,
    /// consolidated (`true`, the default: one request opens it). `false` for a
    /// store whose every version lists its nodes already (an Icechunk
    /// repository's snapshot), where a copy could only go stale.
    fn wants_consolidated(&self) -> bool {
        true
    }

    /// The immutable version this store reads, when it reads one (an
    /// Icechunk session's snapshot id): what another machine must open to
    /// read the same values. `None` (the default): the store is read as it is.
    fn pinned_version(&self) -> Option<String> {
        None
    }

    /// Whether a chunk can be stored only inside the shape of its array's
    /// stored metadata (an Icechunk session): a writer then stores the
    /// metadata first, its shape grown ahead of the chunks, and the final
    /// document last. `false` (the default): chunks first, the metadata last,
    /// so that a reader never sees metadata without its chunks.
    fn needs_metadata_first(&self) -> bool {
        false
    }

    /// The names directly below `prefix` (a node path, `""` for the root) that have
    /// further keys under them, sorted: the candidate child nodes of a group. A
    /// backend that keeps directories (a local disk) may also name one that
    /// deletes left empty: a candidate, which holds no node.
    fn list_children(&self, prefix: &str) -> Result<Vec<String>>;
}

/// A writer's hold on a store (see [`Store::lock`]): released when dropped.
pub struct WriteLock {
    what: String,
    _held: Box<dyn Send + Sync>,
}

impl WriteLock {
    /// A lock named `what` (a lock file's path, say), released when `held`
    /// drops.
    pub fn new(what: impl Into<String>, held: impl Send + Sync + 'static) -> Self {
        Self {
            what: what.into(),
            _held: Box::new(held),
        }
    }
}

impl Debug for WriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WriteLock").field(&self.what).finish()
    }
}

/// Poll `try_take` until it holds the lock (`Some`) or `wait` has passed.
///
/// # Errors
/// [`Error::Busy`] (naming `store` and `lock`) when `wait` passes first;
/// `try_take`'s errors.
pub(crate) fn wait_for_lock<T>(
    store: &str,
    lock: &str,
    wait: Duration,
    mut try_take: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(held) = try_take()? {
            return Ok(held);
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Err(Error::Busy {
                store: store.to_string(),
                lock: lock.to_string(),
                waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
            });
        }
        std::thread::sleep(pause.min(wait - waited));
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Conveniences built on [`Store`]'s required methods.
pub trait StoreExt: Store {
    /// Whether `key` is present (reads no data).
    fn exists(&self, key: &str) -> Result<bool> {
        Ok(self.get_range(key, 0..0)?.is_some())
    }
}

impl<S: Store + ?Sized> StoreExt for S {}

/// Check that `key` stays inside the store root.
///
/// A key is a `/`-separated relative path of non-empty components, none of which
/// is `.` or `..`, without backslashes or NUL bytes.
///
/// # Errors
/// [`Error::InvalidKey`] naming the rule the key breaks.
pub(crate) fn validate_key(key: &str) -> Result<()> {
    let refuse = |reason| {
        Err(Error::InvalidKey {
            key: key.to_string(),
            reason,
        })
    };
    if key.is_empty() {
        return refuse("empty key");
    }
    if key.starts_with('/') {
        return refuse("absolute keys are not allowed");
    }
    if key.contains('\\') || key.contains('\0') {
        return refuse("backslashes and NUL bytes are not allowed");
    }
    for part in key.split('/') {
        match part {
            "" => return refuse("empty path component"),
            "." | ".." => return refuse("'.' and '..' components would leave the store root"),
            _ => {}
        }
    }
    // A Windows drive prefix such as `C:` as the whole first component.
    let first = key.split('/').next().unwrap_or("");
    if first.len() == 2 && first.ends_with(':') && first.as_bytes()[0].is_ascii_alphabetic() {
        return refuse("drive prefixes are not allowed");
    }
    Ok(())
}

/// Join a node path and a name into a key (`"" + "zarr.json"` = `"zarr.json"`).
/// A node as a user names it in messages: the store's location joined with the
/// node path (`"atlas.zarr/obs"`, not `""`).
pub(crate) fn node_label(store: &dyn Store, path: &str) -> String {
    let location = store.location();
    match (location.is_empty(), path.is_empty()) {
        (true, true) => "/".to_string(),
        (true, false) => path.to_string(),
        (false, true) => location,
        (false, false) => format!("{}/{path}", location.trim_end_matches('/')),
    }
}

/// The key or node path `name` under `prefix` (`""`: the root), joined by
/// one `/`.
///
/// ```
/// assert_eq!(zarrow::store::join_key("", "obs"), "obs");
/// assert_eq!(zarrow::store::join_key("atlas/", "obs"), "atlas/obs");
/// ```
pub fn join_key(prefix: &str, name: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Refuse a value of `size` bytes when it is over `max_len`.
pub(crate) fn check_size(key: &str, size: u64, max_len: u64) -> Result<()> {
    if size > max_len {
        return Err(Error::ValueTooLarge {
            key: key.to_string(),
            size,
            limit: max_len,
        });
    }
    Ok(())
}

/// Check a byte range against a value length.
pub(crate) fn check_range(key: &str, range: &Range<u64>, len: u64) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(Error::RangeOutOfBounds {
            key: key.to_string(),
            range: range.clone(),
            len,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_escape_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "a/./b",
            "a\\b",
            "C:/x",
            "a/",
        ] {
            assert!(
                matches!(validate_key(bad), Err(Error::InvalidKey { .. })),
                "{bad:?} was accepted"
            );
        }
        for good in [
            "zarr.json",
            "a/b/c/0.1",
            ".zarray",
            "c/0",
            "x..y",
            "a:b",
            "C:x",
        ] {
            validate_key(good).unwrap();
        }
    }
}
