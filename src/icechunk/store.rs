//! [`IcechunkAsync`]: one session of an Icechunk repository as a zarrow store,
//! rooted at a node. Async ([`AsyncStore`]) on the caller's runtime, and sync
//! ([`IcechunkStore`]) through the one blocking adapter.
//!
//! Icechunk holds Zarr v3 keys only (`zarr.json`, `c/0/1`): a v2 key reads as
//! absent, and writing one is an error. Its listings gather every key of the
//! node listed, in memory (as icechunk's own `list_prefix` does).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use arrow_buffer::Buffer;
use futures::TryStreamExt;
use futures::future::BoxFuture;
use icechunk::format::ByteRange as IcByteRange;
use icechunk::store::{KeyNotFoundError, ListDirItem, StoreErrorKind};

use crate::error::{Error, Result};
use crate::stats::STATS_KEY;
use crate::store::{AsyncStore, BlockingStore, ByteRange, RangeRead, check_size};

/// How many requests a reader keeps in flight on a repository in the cloud.
const CONCURRENCY: usize = 32;

/// A session of an Icechunk repository, rooted at the node `root`: cheap to
/// clone (the session is shared).
#[derive(Clone)]
pub(crate) struct IcechunkAsync {
    inner: Arc<Inner>,
}

struct Inner {
    store: icechunk::Store,
    /// The node's path in the repository, with a trailing `/` (empty: the root).
    root: String,
    /// The location, for messages.
    label: String,
    /// The snapshot read (a branch's tip when the session opened).
    snapshot: String,
    /// A branch's writable session (else read-only).
    writable: bool,
    /// The repository is on this machine's disk.
    local: bool,
    stats: Mutex<StatsTable>,
}

/// The chunk statistics files (`ARRAY/zarrow.stats`) of a session, kept
/// beside it (Icechunk holds Zarr keys only) and committed in the commit's
/// properties ([`IcechunkStore::commit_stats`]): each describes the chunks
/// of the snapshot its commit made.
#[derive(Debug, Default)]
pub(crate) struct StatsTable {
    /// Those of the snapshot the session opened, of arrays the session has
    /// not written to since (a write to an array drops its entry).
    pub(crate) carried: BTreeMap<String, bytes::Bytes>,
    /// Those this session wrote.
    pub(crate) written: BTreeMap<String, bytes::Bytes>,
}

impl StatsTable {
    fn get(&self, key: &str) -> Option<&bytes::Bytes> {
        self.written.get(key).or_else(|| self.carried.get(key))
    }

    /// A write to `key` (not a statistics file): the carried statistics of
    /// the array it is in no longer describe it.
    fn written_to(&mut self, key: &str) {
        self.carried.retain(|stats, _| {
            let array = stats.strip_suffix(STATS_KEY).unwrap_or(stats);
            !key.starts_with(array)
        });
    }
}

/// A session's store, what it reads and the statistics beside it.
pub(crate) struct SessionStore {
    pub(crate) store: icechunk::Store,
    /// The snapshot it reads (a branch's tip when it opened), its id.
    pub(crate) snapshot: String,
    /// A branch's writable session (else read-only).
    pub(crate) writable: bool,
    pub(crate) stats: StatsTable,
}

/// Whether `key` is an array's statistics file.
fn is_stats_key(key: &str) -> bool {
    key.rsplit('/').next() == Some(STATS_KEY)
}

impl std::fmt::Debug for IcechunkAsync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcechunkAsync")
            .field("location", &self.inner.label)
            .field("snapshot", &self.inner.snapshot)
            .finish_non_exhaustive()
    }
}

/// Whether `e` says the key is absent (a chunk never written, a missing node,
/// a Zarr v2 key, which Icechunk never holds).
fn is_absent(e: &StoreErrorKind) -> bool {
    matches!(
        e,
        StoreErrorKind::NotFound(
            KeyNotFoundError::ChunkNotFound { .. }
                | KeyNotFoundError::NodeNotFound { .. }
                | KeyNotFoundError::ZarrV2KeyNotFound { .. }
        )
    )
}

impl IcechunkAsync {
    /// `session`'s store rooted at the node `root`, named `label` in messages.
    pub(crate) fn new(session: SessionStore, root: &str, label: String, local: bool) -> Self {
        let root = root.trim_matches('/');
        Self {
            inner: Arc::new(Inner {
                store: session.store,
                root: if root.is_empty() {
                    String::new()
                } else {
                    format!("{root}/")
                },
                label,
                snapshot: session.snapshot,
                writable: session.writable,
                local,
                stats: Mutex::new(session.stats),
            }),
        }
    }

    /// The icechunk store (its session: what a commit commits).
    pub(crate) fn icechunk(&self) -> &icechunk::Store {
        &self.inner.store
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, StatsTable> {
        self.inner
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The statistics files this session wrote, by their keys in the
    /// repository: what its commit records.
    pub(crate) fn commit_stats(&self) -> BTreeMap<String, bytes::Bytes> {
        let stats = self.stats();
        // Those carried describe the snapshot this session opened: kept only
        // while the commit's parent is that snapshot (the caller's to drop).
        let mut all = stats.carried.clone();
        all.extend(stats.written.clone());
        all
    }

    /// Forget the statistics carried from the snapshot the session opened
    /// (a commit rebased onto another parent).
    pub(crate) fn drop_carried_stats(&self) {
        self.stats().carried.clear();
    }

    /// A write to a read-only session (a tag's, a snapshot's, a branch's
    /// read, a session the caller handed over) is refused: only a write's own
    /// session commits.
    fn refuse_read_only(&self, key: &str) -> Result<()> {
        if self.inner.writable {
            return Ok(());
        }
        Err(Error::ReadOnlyVersion {
            location: format!("{} ({key})", self.inner.label),
            version: format!("snapshot {}", self.inner.snapshot),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}{}", self.inner.root, key.trim_start_matches('/'))
    }

    /// A partial read that came back shorter than asked, as an object
    /// store's does.
    fn short(&self, key: &str) -> Error {
        Error::Remote {
            location: format!("{} ({key})", self.inner.label),
            source: Box::new(crate::store::ShortRead),
        }
    }

    fn error(&self, key: &str, e: icechunk::store::StoreError) -> Error {
        super::ic_error(&format!("{} ({key})", self.inner.label), e)
    }

    /// `result` with an absent key as `None`.
    fn absent<T>(&self, key: &str, result: icechunk::store::StoreResult<T>) -> Result<Option<T>> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(e) if is_absent(&e.kind) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    async fn get_inner(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        let full = self.key(key);
        if is_stats_key(&full) {
            let Some(bytes) = self.stats().get(&full).cloned() else {
                return Ok(None);
            };
            check_size(key, bytes.len() as u64, max_len)?;
            return Ok(Some(Buffer::from(bytes)));
        }
        if max_len < u64::MAX {
            // The size first: a hostile manifest's length is refused before
            // anything of that size is fetched.
            let Some(size) = self.absent(key, self.inner.store.getsize(&full).await)? else {
                return Ok(None);
            };
            check_size(key, size, max_len)?;
        }
        let got = self.inner.store.get(&full, &IcByteRange::ALL).await;
        let got = self.absent(key, got)?;
        if let Some(bytes) = &got {
            check_size(key, bytes.len() as u64, max_len)?;
        }
        Ok(got.map(Buffer::from))
    }

    async fn len_inner(&self, key: &str) -> Result<Option<u64>> {
        let full = self.key(key);
        if is_stats_key(&full) {
            return Ok(self.stats().get(&full).map(|b| b.len() as u64));
        }
        self.absent(key, self.inner.store.getsize(&full).await)
    }

    /// Several ranges of the value at `key`: resolved against its size,
    /// nearby ones merged ([`COALESCE_GAP`](crate::store::COALESCE_GAP)) and
    /// fetched at once (`get_partial_values`), then split back.
    async fn ranges_inner(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        let Some(len) = self.len_inner(key).await? else {
            return Ok(None);
        };
        let wanted = crate::store::resolve_ranges(key, ranges, len)?;
        let merged = crate::store::coalesce(&wanted, crate::store::COALESCE_GAP);
        let full = self.key(key);
        let mut asked = Vec::with_capacity(merged.len());
        for m in &merged {
            asked.push((full.clone(), IcByteRange::from(m.start..m.end)));
        }
        let got = self.inner.store.get_partial_values(asked).await;
        let Some(got) = self.absent(key, got)? else {
            return Ok(None);
        };
        let mut fetched = Vec::with_capacity(merged.len());
        for (m, part) in merged.iter().zip(got) {
            let Some(bytes) = self.absent(key, part)? else {
                return Ok(None);
            };
            if bytes.len() as u64 != m.end - m.start {
                return Err(self.short(key));
            }
            fetched.push(Buffer::from(bytes));
        }
        if fetched.len() != merged.len() {
            return Err(self.short(key));
        }
        let buffers = crate::store::split_ranges(&wanted, &merged, &fetched);
        Ok(Some(RangeRead::new(buffers, len)))
    }

    async fn put_inner(&self, key: &str, value: bytes::Bytes) -> Result<()> {
        let full = self.key(key);
        if is_stats_key(&full) {
            self.refuse_read_only(key)?;
            self.stats().written.insert(full, value);
            return Ok(());
        }
        self.refuse_read_only(key)?;
        self.stats().written_to(&full);
        if !full.ends_with("zarr.json") {
            crate::failpoint::hit("icechunk-chunk");
        }
        self.inner
            .store
            .set(&full, value)
            .await
            .map_err(|e| self.error(key, e))
    }

    async fn delete_inner(&self, key: &str) -> Result<()> {
        self.refuse_read_only(key)?;
        let full = self.key(key);
        if is_stats_key(&full) {
            let mut stats = self.stats();
            stats.written.remove(&full);
            stats.carried.remove(&full);
            return Ok(());
        }
        self.stats().written_to(&full);
        self.inner
            .store
            .delete(&full)
            .await
            .map_err(|e| self.error(key, e))
    }

    /// Every key under `prefix` (relative to the root), sorted: listed from the
    /// deepest node above it that Icechunk lists (it refuses a prefix inside an
    /// array, such as `a/c/`).
    async fn list_prefix_inner(&self, prefix: &str) -> Result<Vec<String>> {
        let full = self.key(prefix);
        let mut from = full.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
        let keys: Vec<String> = loop {
            let listed = if from.is_empty() {
                match self.inner.store.list().await {
                    Ok(s) => s.try_collect().await,
                    Err(e) => Err(e),
                }
            } else {
                match self.inner.store.list_prefix(&from).await {
                    Ok(s) => s.try_collect().await,
                    Err(e) => Err(e),
                }
            };
            match listed {
                Ok(keys) => break keys,
                Err(e) if matches!(e.kind, StoreErrorKind::BadKeyPrefix { .. }) => {
                    from = from.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
                }
                Err(e) if is_absent(&e.kind) => return Ok(Vec::new()),
                Err(e) => return Err(self.error(prefix, e)),
            }
        };
        let root = self.inner.root.len();
        let mut keys: Vec<String> = keys
            .into_iter()
            .map(|k| k.trim_start_matches('/').to_string())
            .filter(|k| k.starts_with(&full))
            .map(|k| k[root..].to_string())
            .collect();
        keys.sort_unstable();
        Ok(keys)
    }

    async fn list_children_inner(&self, prefix: &str) -> Result<Vec<String>> {
        let full = self.key(prefix);
        let dir = full.trim_end_matches('/');
        let listed = match self.inner.store.list_dir_items(dir).await {
            Ok(s) => s.try_collect::<Vec<_>>().await,
            Err(e) => Err(e),
        };
        let items = match listed {
            Ok(items) => items,
            Err(e) if is_absent(&e.kind) => return Ok(Vec::new()),
            Err(e) => return Err(self.error(prefix, e)),
        };
        let mut names: Vec<String> = items
            .into_iter()
            .filter_map(|item| match item {
                ListDirItem::Prefix(name) => Some(name),
                ListDirItem::Key(_) => None,
            })
            .collect();
        names.sort_unstable();
        Ok(names)
    }
}

impl AsyncStore for IcechunkAsync {
    fn location(&self) -> String {
        self.inner.label.clone()
    }

    fn get_bounded<'a>(
        &'a self,
        key: &'a str,
        max_len: u64,
    ) -> BoxFuture<'a, Result<Option<Buffer>>> {
        Box::pin(self.get_inner(key, max_len))
    }

    fn get_ranges<'a>(
        &'a self,
        key: &'a str,
        ranges: &'a [ByteRange],
    ) -> BoxFuture<'a, Result<Option<RangeRead>>> {
        Box::pin(self.ranges_inner(key, ranges))
    }

    fn value_len<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        Box::pin(self.len_inner(key))
    }

    fn put<'a>(&'a self, key: &'a str, value: bytes::Bytes) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.put_inner(key, value))
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.delete_inner(key))
    }

    fn list_prefix<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(self.list_prefix_inner(prefix))
    }

    fn list_children<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(self.list_children_inner(prefix))
    }

    fn concurrency(&self) -> usize {
        if self.inner.local { 1 } else { CONCURRENCY }
    }

    fn reads_remotely(&self) -> bool {
        // A local repository is read as a local store is, on the reader's
        // threads, each waiting for its own file read: measured faster
        // (benches/RESULTS.md, issue 41) than many requests in flight on one
        // async driver.
        !self.inner.local
    }

    fn needs_metadata_first(&self) -> bool {
        true
    }

    fn pinned_version(&self) -> Option<String> {
        Some(self.inner.snapshot.clone())
    }

    fn wants_consolidated(&self) -> bool {
        false
    }
}

/// A session of an Icechunk repository as a sync [`Store`](crate::Store):
/// the one blocking adapter over [`IcechunkAsync`].
pub(crate) type IcechunkStore = BlockingStore<IcechunkAsync>;
