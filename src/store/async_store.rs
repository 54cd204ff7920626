//! [`AsyncStore`]: the async side of a store (feature `async`), shaped as
//! object_store is, and the two adapters between it and the sync [`Store`].
//!
//! ```text
//!  AsyncStore ◀── ObjectStoreAsync (object_store: S3, GCS, Azure, HTTP, InMemory, ...)
//!      ▲      ◀── IcechunkStore     (a session of a repository)
//!      │      ◀── SyncAsAsync(Store)   local and memory stores, read inline
//!      ▼
//!  BlockingStore(AsyncStore): the one sync adapter (store/blocking.rs), each
//!            call waiting on the caller's runtime or the process's one
//! ```
//!
//! An `AsyncStore` owns no runtime: its futures run on the caller's (a
//! DataFusion session's, an application's).

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arrow_buffer::Buffer;
use futures::future::BoxFuture;

use super::blocking::Blocking;
use super::{ByteRange, RangeRead, Store, WriteLock};
use crate::error::{Error, Result};

/// Keys with their versions (see [`Store::list_versions`]).
pub(crate) type Versions = Vec<(String, String)>;

/// A key-value store of Zarr nodes and chunks, async (feature `async`): the
/// methods of [`Store`] a read or a write needs, each a future that runs on the
/// caller's runtime.
pub trait AsyncStore: Debug + Send + Sync {
    /// Where the store is, for messages.
    fn location(&self) -> String;

    /// The value at `key` (`None`: absent), refusing one larger than `max_len`
    /// bytes with [`Error::ValueTooLarge`](crate::Error::ValueTooLarge).
    fn get_bounded<'a>(
        &'a self,
        key: &'a str,
        max_len: u64,
    ) -> BoxFuture<'a, Result<Option<Buffer>>>;

    /// Several byte ranges of the value at `key` (one buffer each, in the order
    /// asked; nearby ranges fetched as one), or `None` when the key is absent.
    fn get_ranges<'a>(
        &'a self,
        key: &'a str,
        ranges: &'a [ByteRange],
    ) -> BoxFuture<'a, Result<Option<RangeRead>>>;

    /// The length of the value at `key`, or `None` when the key is absent.
    fn value_len<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>>>;

    /// Store `value` at `key`, replacing any previous value atomically.
    fn put<'a>(&'a self, key: &'a str, value: bytes::Bytes) -> BoxFuture<'a, Result<()>>;

    /// Remove `key` (absent: not an error).
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Every key that starts with `prefix`, sorted.
    fn list_prefix<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>>;

    /// The names directly below `prefix` that have further keys under them.
    fn list_children<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>>;

    /// As [`Store::list_versions`]; `None` (the default): the store cannot say.
    fn list_versions<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Versions>>> {
        let _ = prefix;
        Box::pin(async { Ok(None) })
    }

    /// As [`Store::concurrency`]: how many requests a reader keeps in flight
    /// (default 1).
    fn concurrency(&self) -> usize {
        1
    }

    /// Whether a blocking reader should read it through the async driver, many
    /// requests in flight ([`Store::remote`]; the default), rather than on its
    /// own threads, one read each (a store on this machine's disk).
    fn reads_remotely(&self) -> bool {
        true
    }

    /// As [`Store::lock`], for a sync caller (off any runtime's worker) whose
    /// waits run on `runtime`. `Ok(None)` (the default): no lock.
    ///
    /// # Errors
    /// As [`Store::lock`].
    fn lock(&self, wait: Duration, runtime: &tokio::runtime::Handle) -> Result<Option<WriteLock>> {
        let _ = (wait, runtime);
        Ok(None)
    }

    /// As [`Store::wants_consolidated`] (default `true`).
    fn wants_consolidated(&self) -> bool {
        true
    }

    /// As [`Store::pinned_version`] (default `None`).
    fn pinned_version(&self) -> Option<String> {
        None
    }

    /// As [`Store::needs_metadata_first`] (default `false`).
    fn needs_metadata_first(&self) -> bool {
        false
    }
}

/// A sync [`Store`] as an [`AsyncStore`], for local and memory stores, whose
/// reads are short (a file read, a memory map); a store that waits on a network
/// has an async form of its own ([`Store::remote`]). Each call runs inline, when
/// its future is first polled, except the values' reads of a store made with
/// `SyncAsAsync::reading_on_rayon`.
#[derive(Debug, Clone)]
pub struct SyncAsAsync {
    store: Arc<dyn Store>,
    on_rayon: bool,
}

impl SyncAsAsync {
    /// `store` as an async store, read inline.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            on_rayon: false,
        }
    }

    #[cfg(feature = "datafusion")]
    /// `store` as an async store whose values (`get_bounded`, `get_ranges`) are
    /// read on rayon: a scan's consumer (a DataFusion operator) goes on while
    /// the next chunks are read, as the blocking reader's values are.
    pub(crate) fn reading_on_rayon(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            on_rayon: true,
        }
    }

    /// `read` on rayon when so made, else inline.
    fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&dyn Store) -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let store = self.store.clone();
        if !self.on_rayon {
            return Box::pin(async move { read(store.as_ref()) });
        }
        let (sender, receiver) = futures::channel::oneshot::channel();
        rayon::spawn(move || {
            // A panic on rayon's thread would end the process: caught, it is
            // the read's error.
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(store.as_ref())))
                    .unwrap_or(Err(Error::Panicked {
                        task: "local read on rayon",
                    }));
            // The reader may be gone (a dropped stream): nobody to tell.
            let _ = sender.send(result);
        });
        Box::pin(async move {
            receiver.await.map_err(|_| Error::Panicked {
                task: "local read on rayon",
            })?
        })
    }
}

impl AsyncStore for SyncAsAsync {
    fn location(&self) -> String {
        self.store.location()
    }

    fn get_bounded<'a>(
        &'a self,
        key: &'a str,
        max_len: u64,
    ) -> BoxFuture<'a, Result<Option<Buffer>>> {
        let key = key.to_owned();
        self.read(move |store| store.get_bounded(&key, max_len))
    }

    fn get_ranges<'a>(
        &'a self,
        key: &'a str,
        ranges: &'a [ByteRange],
    ) -> BoxFuture<'a, Result<Option<RangeRead>>> {
        let (key, ranges) = (key.to_owned(), ranges.to_vec());
        self.read(move |store| store.get_ranges(&key, &ranges))
    }

    fn value_len<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<u64>>> {
        Box::pin(async move { self.store.value_len(key) })
    }

    fn put<'a>(&'a self, key: &'a str, value: bytes::Bytes) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store.set(key, &value) })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move { self.store.delete(key) })
    }

    fn list_prefix<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move { self.store.list_prefix(prefix) })
    }

    fn list_children<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move { self.store.list_children(prefix) })
    }

    fn list_versions<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Versions>>> {
        Box::pin(async move { self.store.list_versions(prefix) })
    }

    fn concurrency(&self) -> usize {
        self.store.concurrency()
    }

    fn reads_remotely(&self) -> bool {
        false
    }

    fn lock(&self, wait: Duration, _: &tokio::runtime::Handle) -> Result<Option<WriteLock>> {
        self.store.lock(wait)
    }

    fn wants_consolidated(&self) -> bool {
        self.store.wants_consolidated()
    }

    fn pinned_version(&self) -> Option<String> {
        self.store.pinned_version()
    }

    fn needs_metadata_first(&self) -> bool {
        self.store.needs_metadata_first()
    }
}

/// A store's async form and the runtime its sync calls wait on: what
/// [`Store::remote`] gives, so that a blocking reader keeps many requests in
/// flight through the async driver.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The store, async.
    pub store: Arc<dyn AsyncStore>,
    pub(crate) blocking: Blocking,
}

impl Remote {
    /// Wait for `future`, from a sync caller.
    pub(crate) fn block_on<F: Future + Send>(&self, future: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        self.blocking.block_on(future)
    }
}

// Reads on rayon serve DataFusion only (and futures' executor comes with its
// features).
#[cfg(all(test, feature = "datafusion"))]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_panics_on_rayon_is_an_error_not_an_abort() {
        let store = SyncAsAsync::reading_on_rayon(Arc::new(crate::MemoryStore::new()));
        let read = store.read(|_| -> Result<()> { panic!("a store that panics") });
        let got = futures::executor::block_on(read);
        assert!(matches!(got, Err(Error::Panicked { .. })), "{got:?}");
    }
}
