//! [`ObjectStoreBackend`]: a [`Store`] over any `object_store` store (S3, GCS,
//! Azure, HTTP, ...) under a prefix: the crate DataFusion uses, so a DataFusion
//! user shares one store (feature `object-store`).
//!
//! [`ObjectStoreAsync`] is the store as an [`AsyncStore`], on the caller's
//! runtime; [`ObjectStoreBackend`] is the sync [`Store`] over it (each call
//! waits on [`Blocking`]), whose readers still keep many requests in flight
//! through the async driver ([`Store::remote`]).
//!
//! | `Store` | object_store |
//! |---|---|
//! | `get`, `get_bounded` | `get` (the size checked from the response head before the body is read) |
//! | `get_range` | `get_range` (a zero-length range: `head`) |
//! | `get_ranges` | a suffix: `get_opts` with `GetRange::Suffix`; bounded ranges merged when nearer than `COALESCE_GAP`, each a ranged `get_opts`, concurrently (the responses give the length) |
//! | `value_len` | `head` |
//! | `set` | `put`; values over [`MULTIPART_THRESHOLD`] as a multipart upload |
//! | `delete` | `delete` (absent: not an error) |
//! | `list_prefix`, `list_children` | `list`, `list_with_delimiter` |
//! | `lock` | a lease object beside the prefix, `put_opts` with `PutMode::Create` (`store/lease.rs`) |
//!
//! A 404 is an absent key (a missing chunk reads as the fill value); every other
//! error (403, a 500 that outlived object_store's retries) is [`Error::Remote`]
//! naming the URL.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use arrow_buffer::Buffer;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart,
};

use futures::future::BoxFuture;

use super::async_store::{AsyncStore, Versions};
use super::blocking::{Blocking, BlockingStore};
use super::lease::{DEFAULT_LEASE_TTL, lease_path, take};
use super::ranges::{coalesce, split};
use super::{ByteRange, COALESCE_GAP, RangeRead, WriteLock, check_range, check_size, validate_key};
use crate::error::{Error, Result};

/// Values larger than this are uploaded in parts (S3 needs parts of 5 MiB at
/// least; a part is [`MULTIPART_CHUNK`]).
pub(crate) const MULTIPART_THRESHOLD: usize = 16 << 20;

/// The size of one part of a multipart upload.
pub(crate) const MULTIPART_CHUNK: usize = 8 << 20;

/// How many times a transient failure is retried by default (object_store's
/// own default, which its `RetryConfig` sets with a cloud's client).
const DEFAULT_RETRIES: usize = 10;

/// The default number of requests a reader keeps in flight on an object store.
pub(crate) const DEFAULT_CONCURRENCY: usize = 32;

/// An [`AsyncStore`] over an `object_store` store, under a prefix: no runtime
/// of its own, its futures run on the caller's (a DataFusion session reads
/// through the store it has registered).
#[derive(Debug, Clone)]
pub struct ObjectStoreAsync {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    location: String,
    /// Retries of a response body cut off mid-way (object_store retries the
    /// request itself, not the body).
    body_retries: usize,
    /// Requests a reader keeps in flight.
    concurrency: usize,
    /// How long a writer's lease lasts (see [`Store::lock`]).
    lease_ttl: Duration,
    /// Whether the store can list its keys (a plain HTTP server cannot).
    lists: bool,
}

/// A [`Store`](crate::Store) over an `object_store` store, under a prefix: the one sync
/// adapter over [`ObjectStoreAsync`], each call waiting on a runtime (the
/// caller's, or the process's).
pub type ObjectStoreBackend = BlockingStore<ObjectStoreAsync>;

impl ObjectStoreAsync {
    /// The store `store`, its keys under `prefix` (`""`: the store's root);
    /// `location` names it in messages (a URL).
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, location: &str) -> Self {
        Self {
            store,
            prefix: prefix.trim_matches('/').to_string(),
            location: location.trim_end_matches('/').to_string(),
            body_retries: DEFAULT_RETRIES,
            concurrency: DEFAULT_CONCURRENCY,
            lease_ttl: DEFAULT_LEASE_TTL,
            lists: true,
        }
    }

    /// Whether the store can list its keys: not a plain HTTP server's (the
    /// opener knows, from the location's [`Cloud`](crate::location::Cloud)).
    pub(crate) fn with_listing(mut self, lists: bool) -> Self {
        self.lists = lists;
        self
    }

    /// Retry a response body cut off mid-way up to `n` times.
    pub(crate) fn with_body_retries(mut self, n: usize) -> Self {
        self.body_retries = n;
        self
    }

    fn path(&self, key: &str) -> Result<Path> {
        validate_key(key)?;
        let full = if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.prefix)
        };
        Path::parse(&full).map_err(|e| remote(&self.url(key), e))
    }

    /// The object path of directory `dir` (a node path, `""` for the root) under
    /// the prefix; `None` for the store's root.
    fn dir_path(&self, dir: &str) -> Result<Option<Path>> {
        let full = match (self.prefix.is_empty(), dir.is_empty()) {
            (true, true) => return Ok(None),
            (true, false) => dir.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{dir}", self.prefix),
        };
        Path::parse(full)
            .map(Some)
            .map_err(|e| remote(&self.url(dir), e))
    }

    fn url(&self, key: &str) -> String {
        format!("{}/{key}", self.location)
    }

    /// The key relative to the prefix of an object path.
    fn key_of(&self, path: &Path) -> Option<String> {
        let path = path.as_ref();
        if self.prefix.is_empty() {
            return Some(path.to_string());
        }
        path.strip_prefix(&self.prefix)?
            .strip_prefix('/')
            .map(str::to_string)
    }

    async fn get_inner(&self, key: &str, max_len: Option<u64>) -> Result<Option<Buffer>> {
        let path = self.path(key)?;
        let url = self.url(key);
        let got = self.fetch(key, &path, &url, None, max_len).await?;
        Ok(got.map(|(bytes, _)| Buffer::from(bytes)))
    }

    /// One GET (of `range`, or all): its body and the whole value's length;
    /// `None` for a 404. A body cut off mid-way is asked for again, with
    /// backoff, up to `body_retries` times; `max_len` refuses a larger value
    /// before its body is read.
    async fn fetch(
        &self,
        key: &str,
        path: &Path,
        url: &str,
        range: Option<GetRange>,
        max_len: Option<u64>,
    ) -> Result<Option<(bytes::Bytes, u64)>> {
        let mut attempt = 0;
        loop {
            let options = GetOptions {
                range: range.clone(),
                ..GetOptions::default()
            };
            let result = match self.store.get_opts(path, options).await {
                Ok(r) => r,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(remote(url, e)),
            };
            let size = result.meta.size;
            if let Some(max) = max_len {
                check_size(key, size, max)?;
            }
            match result.bytes().await {
                Ok(bytes) => return Ok(Some((bytes, size))),
                Err(e) if attempt >= self.body_retries => return Err(remote(url, e)),
                Err(_) => {
                    attempt += 1;
                    let wait = 50u64.saturating_mul(1 << attempt.min(6));
                    tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
                }
            }
        }
    }

    /// Suffixes first (each response says the value's length), then the
    /// bounded ranges, nearby ones merged ([`COALESCE_GAP`]), fetched
    /// concurrently; a ranged response says the length too, so no `head` is
    /// needed unless every range is empty.
    async fn ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        let path = self.path(key)?;
        let url = self.url(key);
        let mut len = None;
        let mut suffixes = Vec::new();
        for range in ranges {
            if let ByteRange::Suffix(n) = range {
                if *n == 0 {
                    suffixes.push(Buffer::from(Vec::<u8>::new()));
                    continue;
                }
                let Some((bytes, size)) = self
                    .fetch(key, &path, &url, Some(GetRange::Suffix(*n)), None)
                    .await?
                else {
                    return Ok(None);
                };
                len = Some(size);
                suffixes.push(Buffer::from(bytes));
            }
        }
        let bounded: Vec<Range<u64>> = ranges
            .iter()
            .filter_map(|r| match r {
                ByteRange::Bounded(r) => Some(r.clone()),
                ByteRange::Suffix(_) => None,
            })
            .collect();
        if let Some(bad) = bounded.iter().find(|r| r.start > r.end) {
            return Err(Error::RangeOutOfBounds {
                key: key.to_string(),
                range: bad.clone(),
                len: len.unwrap_or(0),
            });
        }
        let merged = coalesce(&bounded, COALESCE_GAP);
        let fetches = merged
            .iter()
            .map(|m| self.fetch(key, &path, &url, Some(GetRange::Bounded(m.clone())), None));
        let mut fetched = Vec::with_capacity(merged.len());
        for got in futures::future::try_join_all(fetches).await? {
            let Some((bytes, size)) = got else {
                return Ok(None);
            };
            len = Some(size);
            fetched.push(Buffer::from(bytes));
        }
        let len = match len {
            Some(len) => len,
            None => match self.store.head(&path).await {
                Ok(meta) => meta.size,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(remote(&url, e)),
            },
        };
        // A range past the end comes back short (object_store returns what
        // there is): check against the length the responses gave.
        for r in &bounded {
            check_range(key, r, len)?;
        }
        for (m, b) in merged.iter().zip(&fetched) {
            if b.len() as u64 != m.end - m.start {
                return Err(remote(&url, ShortRead));
            }
        }
        let mut parts = split(&bounded, &merged, &fetched).into_iter();
        let mut suffixes = suffixes.into_iter();
        let buffers = ranges
            .iter()
            .map(|r| match r {
                ByteRange::Bounded(_) => parts.next(),
                ByteRange::Suffix(_) => suffixes.next(),
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| remote(&url, ShortRead))?;
        Ok(Some(RangeRead::new(buffers, len)))
    }

    async fn put_inner(&self, key: &str, value: bytes::Bytes) -> Result<()> {
        let path = self.path(key)?;
        let url = self.url(key);
        if value.len() > MULTIPART_THRESHOLD {
            let upload = self
                .store
                .put_multipart(&path)
                .await
                .map_err(|e| remote(&url, e))?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, MULTIPART_CHUNK);
            writer.put(value);
            writer.finish().await.map_err(|e| remote(&url, e))?;
        } else {
            self.store
                .put(&path, PutPayload::from(value))
                .await
                .map_err(|e| remote(&url, e))?;
        }
        Ok(())
    }

    async fn len_inner(&self, key: &str) -> Result<Option<u64>> {
        let path = self.path(key)?;
        match self.store.head(&path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(remote(&self.url(key), e)),
        }
    }

    async fn delete_inner(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(remote(&self.url(key), e)),
        }
    }

    /// Every object whose key starts with `prefix`, with its key.
    async fn list_objects(&self, prefix: &str) -> Result<Vec<(String, ObjectMeta)>> {
        // object_store lists whole path segments: list the directory the prefix
        // names, then keep the keys that start with it.
        let dir = match prefix.rsplit_once('/') {
            Some((dir, _)) => dir,
            None => "",
        };
        let base = self.dir_path(dir)?;
        let metas: Vec<ObjectMeta> = self
            .store
            .list(base.as_ref())
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| remote(&self.url(prefix), e))?;
        let mut objects: Vec<(String, ObjectMeta)> = metas
            .into_iter()
            .filter_map(|m| Some((self.key_of(&m.location)?, m)))
            .filter(|(k, _)| k.starts_with(prefix))
            .collect();
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(objects)
    }

    async fn list_prefix_inner(&self, prefix: &str) -> Result<Vec<String>> {
        let objects = self.list_objects(prefix).await?;
        Ok(objects.into_iter().map(|(key, _)| key).collect())
    }

    /// The keys under `prefix` with their versions (size and ETag, else size
    /// and modification time); `None` for a plain HTTP server, which cannot
    /// list.
    async fn list_versions_inner(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        if !self.lists {
            return Ok(None);
        }
        let objects = self.list_objects(prefix).await?;
        Ok(Some(
            objects
                .into_iter()
                .map(|(key, m)| {
                    let version = match &m.e_tag {
                        Some(etag) => format!("{}:{etag}", m.size),
                        None => format!("{}:{}", m.size, m.last_modified.to_rfc3339()),
                    };
                    (key, version)
                })
                .collect(),
        ))
    }

    async fn list_children_inner(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.trim_matches('/');
        let base = self.dir_path(prefix)?;
        let listed = self
            .store
            .list_with_delimiter(base.as_ref())
            .await
            .map_err(|e| remote(&self.url(prefix), e))?;
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }
}

impl AsyncStore for ObjectStoreAsync {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn get_bounded<'a>(
        &'a self,
        key: &'a str,
        max_len: u64,
    ) -> BoxFuture<'a, Result<Option<Buffer>>> {
        Box::pin(self.get_inner(key, Some(max_len)))
    }

    fn get_ranges<'a>(
        &'a self,
        key: &'a str,
        ranges: &'a [ByteRange],
    ) -> BoxFuture<'a, Result<Option<RangeRead>>> {
        Box::pin(self.ranges(key, ranges))
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

    fn list_versions<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Versions>>> {
        Box::pin(self.list_versions_inner(prefix))
    }

    fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// A lease object beside the prefix, created only if absent
    /// (`store/lease.rs`).
    fn lock(&self, wait: Duration, runtime: &tokio::runtime::Handle) -> Result<Option<WriteLock>> {
        let path = lease_path(&self.prefix)?;
        take(
            self.store.clone(),
            path,
            &self.location,
            self.lease_ttl,
            wait,
            Blocking::on(runtime.clone()),
        )
        .map(Some)
    }
}

impl ObjectStoreBackend {
    /// A backend over `store`, its keys under `prefix` (`""`: the store's root);
    /// `location` names it in messages (a URL). Its calls wait on the
    /// process's runtime ([`runtime`](crate::store::runtime)): a sync caller
    /// has none to lend.
    pub fn over(store: Arc<dyn ObjectStore>, prefix: &str, location: &str) -> Self {
        Self::new(ObjectStoreAsync::new(store, prefix, location), None)
    }

    /// A writer's lease runs out after `ttl` (see [`Store::lock`](crate::Store::lock)): a writer
    /// that died holding it blocks others this long.
    pub fn with_lease_ttl(self, ttl: Duration) -> Self {
        self.map(|s| ObjectStoreAsync {
            lease_ttl: ttl,
            ..s
        })
    }

    /// Retry a response body cut off mid-way up to `n` times.
    pub(crate) fn with_body_retries(self, n: usize) -> Self {
        self.map(|s| s.with_body_retries(n))
    }

    /// Keep at most `n` requests in flight.
    pub(crate) fn with_concurrency(self, n: usize) -> Self {
        self.map(|s| ObjectStoreAsync {
            concurrency: n.max(1),
            ..s
        })
    }
}

fn remote(location: &str, source: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Remote {
        location: location.to_string(),
        source: Box::new(source),
    }
}

/// A server (or an Icechunk repository's storage) sent fewer bytes than the
/// range asked for.
#[derive(Debug)]
pub(crate) struct ShortRead;

impl std::fmt::Display for ShortRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server returned a different number of bytes than the range asked for")
    }
}

impl std::error::Error for ShortRead {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    #[test]
    fn a_backend_can_be_dropped_inside_another_runtime() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let backend = ObjectStoreBackend::over(store, "x.zarr", "memory:///x.zarr");
        assert!(backend.get("absent").unwrap().is_none());
        // The first blocking call started the process's one I/O runtime.
        assert!(Blocking::started_runtime());
        let clone = backend.clone();
        drop(backend);
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // The last clone, dropped in an async context (as a DataFusion worker drops
        // a finished plan); it panicked there before.
        outer.block_on(async move { drop(clone) });
    }
}
