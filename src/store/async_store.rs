//! [`AsyncStore`]: the async side of a store (feature `async`), shaped as
//! object_store is, and the two adapters between it and the sync [`Store`].
//!
//! ```text
//!  AsyncStore ◀── ObjectStoreAsync (object_store: S3, GCS, Azure, HTTP, InMemory, ...)
//!      ▲      ◀── SyncAsAsync(Store)   local and memory stores, read inline
//!      │
//!  Blocking: the one place a sync caller waits for an async store
//!            (ObjectStoreBackend's calls, BatchReader over a remote store)
//! ```
//!
//! An `AsyncStore` owns no runtime: its futures run on the caller's (a
//! DataFusion session's, an application's).

use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use arrow_buffer::Buffer;
use futures::future::BoxFuture;

use super::{ByteRange, RangeRead, Store};
use crate::error::{Error, Result};

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
                        task: "a local read on rayon",
                    }));
            // The reader may be gone (a dropped stream): nobody to tell.
            let _ = sender.send(result);
        });
        Box::pin(async move {
            receiver.await.map_err(|_| Error::Panicked {
                task: "a local read on rayon",
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

/// The one place a sync caller waits for async I/O: a sync store over an async
/// one (`ObjectStoreBackend`) and a blocking reader over a remote store. It runs
/// futures on the runtime it was given (the caller's, by [`Blocking::on`]), or,
/// for a sync caller that has none ([`Blocking::default`]), on the process's one
/// I/O runtime: the only runtime zarrow ever starts, started by the first
/// blocking call that needs it and shared by every store and reader after.
#[derive(Debug, Clone, Default)]
pub(crate) struct Blocking(Option<tokio::runtime::Handle>);

/// The runtime of a sync caller that has none (the command line's `convert`
/// and `info`): object_store's clients need one. Started by the first
/// blocking call on a [`Blocking::default`], so that a process that reads
/// only local stores, or reads remote ones only async (a DataFusion scan, a
/// plan decoded on an executor), never starts it; two worker threads, kept for
/// the life of the process.
static IO_RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

impl Blocking {
    /// Wait on `handle`'s runtime (the caller's).
    #[cfg(feature = "object-store")]
    pub(crate) fn on(handle: tokio::runtime::Handle) -> Self {
        Self(Some(handle))
    }

    /// Whether the process's I/O runtime (see [`Blocking::default`]) has
    /// started.
    #[cfg(test)]
    pub(crate) fn started_runtime() -> bool {
        IO_RUNTIME.get().is_some()
    }

    fn handle(&self) -> Result<tokio::runtime::Handle> {
        if let Some(handle) = &self.0 {
            return Ok(handle.clone());
        }
        if let Some(runtime) = IO_RUNTIME.get() {
            return Ok(runtime.handle().clone());
        }
        // The caller lent no runtime (`Blocking::default`) and has none: a
        // sync program's object store I/O needs one to run on at all.
        let started = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zarrow-io")
            .enable_all()
            .build()
            .map_err(|e| Error::io("a runtime for object store I/O", e))?;
        // Two first calls at once: one runtime is kept, the other dropped
        // (here, outside any runtime's thread or on a scoped one).
        if let Err(spare) = IO_RUNTIME.set(started) {
            spare.shutdown_background();
        }
        Ok(IO_RUNTIME
            .get()
            .unwrap_or_else(|| unreachable!("set just above"))
            .handle()
            .clone())
    }

    /// Run `future` and wait for it: from any thread, including a thread of a
    /// runtime (where it waits on a scoped thread rather than block that
    /// runtime's worker, which `block_on` refuses).
    ///
    /// # Errors
    /// [`Error::Io`] when the runtime of its own cannot start.
    pub(crate) fn block_on<F: Future + Send>(&self, future: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            // A runtime's worker must not block on a future (tokio panics):
            // the runtime this waits on (the caller's, or its own) runs it,
            // waited on from a scoped thread that ends with the call.
            std::thread::scope(|s| {
                s.spawn(|| Ok(self.handle()?.block_on(future)))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        } else {
            Ok(self.handle()?.block_on(future))
        }
    }
}

#[cfg(test)]
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
