//! The one place a sync caller waits for async I/O, and the process's one
//! runtime (feature `async`).
//!
//! - [`runtime`]: the runtime of a process whose caller lent none (the command
//!   line's `convert`, a Python session, a DuckDB host): started by the first
//!   call that needs it, once per process, and shared by everything after.
//! - `Blocking`: waits for a future on the runtime it was lent (the caller's) or
//!   on [`runtime`]. It blocks on the runtime's handle directly where tokio
//!   allows that (a plain thread, a `spawn_blocking` thread); on a worker of a
//!   multi-thread runtime it first gives the worker's other tasks to another
//!   thread (`block_in_place`); only on a single-thread runtime's own thread,
//!   which nothing may block, does it wait from a helper thread.
//! - [`BlockingStore`]: any [`AsyncStore`] as a sync [`Store`], each call
//!   waiting on a `Blocking`: an object store's, an Icechunk session's.

use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arrow_buffer::Buffer;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::{AsyncStore, ByteRange, RangeRead, Remote, Store, WriteLock};
use crate::error::{Error, Result};

/// The process's runtime, started by [`runtime`]'s first call.
static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The process's one runtime, for the I/O of a caller that lent none: started
/// by the first call (a worker per core, threads named `zarrow`), kept for the
/// life of the process. The Python package and the DuckDB extension run all
/// their async work on it; a process that reads only local stores, or that
/// lends its own runtime (an application's, a DataFusion session's), never
/// starts it.
///
/// # Errors
/// [`Error::Runtime`] when the operating system refuses its threads.
pub fn runtime() -> Result<Handle> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime.handle().clone());
    }
    let started = tokio::runtime::Builder::new_multi_thread()
        .thread_name("zarrow")
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime { source })?;
    // Two first calls at once: one runtime is kept, the other shut down
    // (here, outside any runtime's worker, or on a helper thread).
    if let Err(spare) = RUNTIME.set(started) {
        spare.shutdown_background();
    }
    Ok(RUNTIME
        .get()
        .unwrap_or_else(|| unreachable!("set just above"))
        .handle()
        .clone())
}

/// How a sync caller waits for a future: on the runtime it was lent
/// ([`Blocking::on`]), else on the process's ([`runtime`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Blocking(Option<Handle>);

impl Blocking {
    /// Wait on `handle`'s runtime (the caller's).
    pub(crate) fn on(handle: Handle) -> Self {
        Self(Some(handle))
    }

    /// Whether the process's runtime has started.
    #[cfg(test)]
    pub(crate) fn started_runtime() -> bool {
        RUNTIME.get().is_some()
    }

    /// The runtime this waits on (starting the process's, if it is that).
    pub(crate) fn handle(&self) -> Result<Handle> {
        match &self.0 {
            Some(handle) => Ok(handle.clone()),
            None => runtime(),
        }
    }

    /// Run `future` and wait for it, from any thread: see the module's notes
    /// on where it blocks.
    ///
    /// # Errors
    /// [`Error::Runtime`] when the process's runtime cannot start.
    pub(crate) fn block_on<F: Future + Send>(&self, future: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        let handle = self.handle()?;
        match Handle::try_current().map(|current| current.runtime_flavor()) {
            // No runtime here (a plain thread): block.
            Err(_) => Ok(handle.block_on(future)),
            // A multi-thread runtime's thread: a worker hands its other tasks
            // on and leaves the runtime's context (a blocking thread is not in
            // it); then blocking is allowed.
            Ok(RuntimeFlavor::MultiThread) => {
                Ok(tokio::task::block_in_place(|| handle.block_on(future)))
            }
            // A single-thread runtime's own thread must not block on it: wait
            // from a helper thread that ends with the call.
            Ok(_) => std::thread::scope(|s| {
                s.spawn(|| Ok(handle.block_on(future)))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
        }
    }
}

/// Run `f`, which blocks (a store's sync calls), from async code and wait
/// for it. On a multi-thread runtime it runs in place: a thread that blocks
/// on the runtime (Python's, a DuckDB host's) just runs it, and a worker
/// first hands its other tasks to another thread (`block_in_place`); no
/// hand-off of `f` to another thread and back (two thread wake-ups, about
/// as long as a small store's whole listing). Elsewhere (a single-thread
/// runtime, whose own thread must not block) it runs on the runtime's
/// blocking threads.
///
/// # Errors
/// [`Error::Panicked`] (`task`) when `f` panics, wherever it runs;
/// [`Error::Runtime`] when the runtime shuts down before it ran.
#[cfg(feature = "datafusion")]
pub(crate) async fn run_blocking<R: Send + 'static>(
    task: &'static str,
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R> {
    let caught = move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .map_err(|_| Error::Panicked { task })
    };
    match Handle::try_current().map(|current| current.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(caught),
        // `caught` cannot panic: a join error is the runtime shutting down.
        _ => tokio::task::spawn_blocking(caught)
            .await
            .unwrap_or_else(|e| {
                Err(Error::Runtime {
                    source: std::io::Error::other(e),
                })
            }),
    }
}

/// An [`AsyncStore`] as a sync [`Store`]: each call waits for the async one
/// on its runtime (see `Blocking`). What the store says of itself (its
/// concurrency, its lock, its versions) is the async store's. Cheap to clone.
#[derive(Debug)]
pub struct BlockingStore<S> {
    store: Arc<S>,
    blocking: Blocking,
}

impl<S> Clone for BlockingStore<S> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            blocking: self.blocking.clone(),
        }
    }
}

impl<S: AsyncStore + 'static> BlockingStore<S> {
    /// `store`, its calls waiting on `runtime` (the caller's), or on the
    /// process's ([`runtime`]) when `None`.
    pub fn new(store: S, runtime: Option<Handle>) -> Self {
        Self::with_blocking(store, Blocking(runtime))
    }

    pub(crate) fn with_blocking(store: S, blocking: Blocking) -> Self {
        Self {
            store: Arc::new(store),
            blocking,
        }
    }

    /// The async store.
    #[cfg(feature = "icechunk")]
    pub(crate) fn inner(&self) -> &S {
        &self.store
    }

    /// The same, over `change(store)`.
    pub(crate) fn map(self, change: impl FnOnce(S) -> S) -> Self
    where
        S: Clone,
    {
        let store = Arc::unwrap_or_clone(self.store);
        Self::with_blocking(change(store), self.blocking)
    }

    fn wait<T: Send>(&self, future: impl Future<Output = Result<T>> + Send) -> Result<T> {
        self.blocking.block_on(future)?
    }
}

impl<S: AsyncStore + 'static> Store for BlockingStore<S> {
    fn location(&self) -> String {
        self.store.location()
    }

    fn concurrency(&self) -> usize {
        self.store.concurrency()
    }

    fn remote(&self) -> Option<Remote> {
        self.store.reads_remotely().then(|| Remote {
            store: self.store.clone(),
            blocking: self.blocking.clone(),
        })
    }

    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        self.wait(self.store.get_bounded(key, u64::MAX))
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        self.wait(self.store.get_bounded(key, max_len))
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>> {
        let ranges = [ByteRange::Bounded(range)];
        let read = self.wait(self.store.get_ranges(key, &ranges))?;
        Ok(read.and_then(|r| r.buffers.into_iter().next()))
    }

    fn value_len(&self, key: &str) -> Result<Option<u64>> {
        self.wait(self.store.value_len(key))
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        self.wait(self.store.get_ranges(key, ranges))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let value = bytes::Bytes::copy_from_slice(value);
        self.wait(self.store.put(key, value))
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.wait(self.store.delete(key))
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.wait(self.store.list_prefix(prefix))
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        self.wait(self.store.list_versions(prefix))
    }

    fn lock(&self, wait: Duration) -> Result<Option<WriteLock>> {
        let runtime = self.blocking.handle()?;
        self.store.lock(wait, &runtime)
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

    fn list_children(&self, prefix: &str) -> Result<Vec<String>> {
        self.wait(self.store.list_children(prefix))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::thread::ThreadId;

    use super::*;

    /// The threads 200 waits from `caller`'s thread ran their futures on:
    /// a helper thread per call would give 200.
    fn threads_of_200_waits(blocking: &Blocking) -> HashSet<ThreadId> {
        (0..200)
            .map(|_| {
                blocking
                    .block_on(async { std::thread::current().id() })
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn blocking_waits_without_a_thread_per_call() {
        let lent = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let blocking = Blocking::on(lent.handle().clone());
        // A plain thread, a spawn_blocking thread, a worker: each waits on
        // its own thread.
        assert_eq!(threads_of_200_waits(&blocking).len(), 1);
        let on_pool = blocking.clone();
        let seen = lent
            .block_on(lent.spawn_blocking(move || threads_of_200_waits(&on_pool)))
            .unwrap();
        assert_eq!(seen.len(), 1);
        let on_worker = blocking.clone();
        let seen = lent
            .block_on(lent.spawn(async move { threads_of_200_waits(&on_worker) }))
            .unwrap();
        assert_eq!(seen.len(), 1);
        // A single-thread runtime's own thread: from a helper, per call.
        let single = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let from_single = blocking.clone();
        let got = single.block_on(async move { from_single.block_on(async { 7 }).unwrap() });
        assert_eq!(got, 7);
    }

    /// `run_blocking` runs in place on a multi-thread runtime (the thread
    /// blocking on it, a worker), on a blocking thread on a single-thread
    /// runtime; a panic is the task's error either way.
    #[cfg(feature = "datafusion")]
    #[test]
    fn run_blocking_runs_in_place_where_the_runtime_allows() {
        let here = || std::thread::current().id();
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let caller = here();
        let ran = multi.block_on(run_blocking("test", here)).unwrap();
        assert_eq!(ran, caller);
        let (worker, ran) = multi
            .block_on(multi.spawn(async move { (here(), run_blocking("test", here).await) }))
            .unwrap();
        assert_eq!(ran.unwrap(), worker);
        let single = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ran = single.block_on(run_blocking("test", here)).unwrap();
        assert_ne!(ran, caller);
        for runtime in [&multi, &single] {
            let failed = runtime.block_on(run_blocking("test", || panic!("in the test")));
            assert!(matches!(failed, Err(Error::Panicked { task: "test" })));
        }
    }
}
