//! Where a call's work runs and what it may hold, given once by the front end
//! that starts the work (the command line, the Python package, a Rust caller)
//! and handed down: how chunks are decoded (on rayon, or inline), how many
//! bytes a reader may decode ahead of what it has given, how many bytes of
//! released buffers it keeps for reuse, and (with
//! `object-store`) the [`Stores`](crate::Stores) that open locations, with the
//! runtime their I/O waits on. zarrow chooses none of these itself below the
//! front end; inside DataFusion the session is the context (its pool, its
//! stores, its runtime).

/// The Arrow data a reader of a remote store decodes ahead of its caller, at most
/// (estimated from the types): it keeps up to its store's concurrency of chunks
/// in flight, fewer when they are large. A local reader reads one chunk ahead per
/// thread.
pub(crate) const READ_AHEAD_BYTES: u64 = 256 << 20;

use std::sync::Arc;

use crate::recycle::Recycler;

#[cfg(feature = "object-store")]
pub(crate) mod stores;
#[cfg(feature = "datafusion")]
pub(crate) use stores::RegisteredStores;

/// How a reader decodes the chunks it has read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Decode {
    /// On rayon's pool (the caller's, when it runs inside one), as many at
    /// once as it has threads; a read of one chunk still decodes inline.
    #[default]
    Parallel,
    /// On the reading thread, one chunk after another.
    Inline,
}

/// Where a call's work runs and what it may hold: how chunks are decoded, how many bytes a reader
/// decodes ahead, and (with `object-store`) the stores that open locations,
/// with the runtime their I/O waits on. Given once by the front end that
/// starts the work and handed down; zarrow chooses none of these below it.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    decode: Decode,
    read_ahead_bytes: u64,
    recycler: Option<Arc<Recycler>>,
    #[cfg(feature = "object-store")]
    stores: crate::Stores,
}

impl Default for ExecutionContext {
    fn default() -> Self {
        let recycler = Some(Recycler::for_reader());
        Self {
            decode: Decode::default(),
            read_ahead_bytes: READ_AHEAD_BYTES,
            #[cfg(feature = "object-store")]
            stores: crate::Stores::default().with_recycler(recycler.clone()),
            recycler,
        }
    }
}

impl ExecutionContext {
    /// Decode as `decode` says.
    pub fn with_decode(mut self, decode: Decode) -> Self {
        self.decode = decode;
        self
    }

    /// Let a reader of a remote store decode at most `bytes` ahead of what it
    /// has given (estimated from the types; at least one chunk per decoding
    /// thread is always read ahead). Default 256 MiB.
    pub fn with_read_ahead_bytes(mut self, bytes: u64) -> Self {
        self.read_ahead_bytes = bytes;
        self
    }

    /// Keep up to `bytes` of the chunk-sized buffers that a read's arrays release
    /// (values, offsets, views, and local chunk files read whole), and fill the
    /// next chunks' from them, so that their pages are faulted in once and not
    /// per chunk (see `src/recycle.rs`). What is kept stays allocated while the
    /// context, or a reader made with it, lives. Default 256 MiB; 0 keeps
    /// nothing.
    pub fn with_buffer_reuse(mut self, bytes: usize) -> Self {
        self.recycler = (bytes > 0).then(|| Recycler::new(bytes));
        #[cfg(feature = "object-store")]
        {
            self.stores = self.stores.with_recycler(self.recycler.clone());
        }
        self
    }

    /// Open locations through `stores` (their URL options, the runtime their
    /// I/O waits on, an engine's registered stores).
    #[cfg(feature = "object-store")]
    pub fn with_stores(mut self, stores: crate::Stores) -> Self {
        self.stores = stores.with_recycler(self.recycler.clone());
        self
    }

    /// How chunks are decoded.
    pub(crate) fn decode(&self) -> Decode {
        self.decode
    }

    /// Where decoded buffers are kept for reuse, if anywhere.
    pub(crate) fn recycler(&self) -> Option<&Arc<Recycler>> {
        self.recycler.as_ref()
    }

    /// The most bytes a reader decodes ahead.
    pub(crate) fn read_ahead_bytes(&self) -> u64 {
        self.read_ahead_bytes
    }

    /// The stores that open locations.
    #[cfg(feature = "object-store")]
    pub fn stores(&self) -> &crate::Stores {
        &self.stores
    }
}
