//! # zarrow
//!
//! Zarr string, bytes, numeric and bool arrays to and from Apache Arrow, with
//! export to Arrow IPC and Parquet.
//!
//! The modules, from the bottom up: [`metadata`]; [`codec`] (with the private
//! `offsets`, the only place untrusted offsets become Arrow arrays) and [`store`];
//! `conventions` (anndata, CF / xarray, pandas metadata and zarrow's own
//! attributes, each both ways); [`read`] and [`write`](mod@write); [`export`],
//! [`linear`] and, with their features, `convert` and `datafusion`.
//! How they fit together (the layers, the one push decoder under every reader and
//! its two drivers, the rules) is described once, in the repository's
//! [`docs/architecture.md`](../docs/architecture.md); the other pages of `docs/`
//! are the reference (cargo features: `docs/library.md`).
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{Array, StringArray};
//! use zarrow::{LocalStore, ReadOptions, StringType, ZarrArray, ZarrGroup};
//!
//! # fn main() -> zarrow::Result<()> {
//! // A group written by zarr-python: each 1-D array is a column.
//! let store = Arc::new(LocalStore::new("testdata/stores/obs.zarr"));
//! let group = ZarrGroup::open(store.clone(), "")?;
//! let mut reader = group.reader().with_projection(["cell_type", "n_genes"]).build()?;
//! let batch = reader.next().expect("one batch at least")?;
//! assert_eq!(batch.num_columns(), 2);
//!
//! // One array, as Utf8View pointing into the decoded chunks.
//! let options = ReadOptions { string_type: Some(StringType::Utf8View), ..ReadOptions::default() };
//! let cell_type = ZarrArray::open_with(store, "cell_type", options)?;
//! let all = cell_type.read_all()?;
//! assert_eq!(all.len() as u64, cell_type.len());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

#[cfg(target_endian = "big")]
compile_error!(
    "zarrow maps little-endian chunk bytes onto Arrow buffers and needs a little-endian target"
);

mod assemble;
pub mod codec;
mod context;
pub(crate) mod conventions;
#[cfg(feature = "convert")]
pub mod convert;
#[cfg(feature = "datafusion")]
pub mod datafusion;
mod error;
pub mod export;
mod failpoint;
mod fill;
mod grid;
#[cfg(feature = "icechunk")]
pub mod icechunk;
pub mod linear;
#[cfg(feature = "object-store")]
pub mod location;
pub mod metadata;
mod offsets;
#[cfg(feature = "object-store")]
mod open;
pub mod options;
pub mod read;
mod recycle;
mod rows;
mod stats;
pub mod store;
pub mod write;

/// Helpers zarrow's own crates share (the Python package's prefilter packs
/// its bits with the library's packer): not an API, and not covered by
/// semver.
#[doc(hidden)]
pub mod __private {
    pub use crate::offsets::keys::bits;
    /// Store plumbing: a sync store read as an async one (the store
    /// conformance tests run the async checks over it), and what
    /// [`Store::remote`](crate::Store) gives.
    #[cfg(feature = "async")]
    pub use crate::store::async_store::{Remote, SyncAsAsync};

    /// Wait for `future` on `runtime` (the caller's, lent) from a sync
    /// caller on any thread, a runtime's own included: the library's one
    /// blocking adapter, for the Python package's pushed scans.
    ///
    /// # Errors
    /// None in practice: the runtime is lent, none is started.
    #[cfg(feature = "object-store")]
    pub fn block_on<F: std::future::Future + Send>(
        runtime: tokio::runtime::Handle,
        future: F,
    ) -> crate::Result<F::Output>
    where
        F::Output: Send,
    {
        crate::store::Blocking::on(runtime).block_on(future)
    }

    /// The atomic outputs and their partial files, for the command line's
    /// `sql --output` and its signal handler.
    #[cfg(feature = "convert")]
    pub use crate::write::output::{PartialsRemoved, WritebackFile, remove_partials, write_atomic};
}

pub use codec::chain::CodecChain;
#[cfg(feature = "object-store")]
pub use context::stores::Stores;
pub use context::{Decode, ExecutionContext};
pub use error::{
    AppendMismatch, ArrowTypeUse, ChunkError, ConditionalWrite, Convention, ConventionError,
    Conversion, EncodeError, Error, ErrorKind, LimitKind, NameError, NodeKind, Overwrite,
    ParseOptionError, Result, SchemaChange, ShapeProblem, SkipReason, Skipped, StoreAction,
    TableProblem,
};
#[cfg(feature = "object-store")]
pub use location::Location;
pub use metadata::{ArrayMetadata, DataType, FillValue, GroupMetadata, NodeMetadata, StringType};
pub use options::Options;
pub use read::{BatchReader, ReadOptions, ReaderBuilder, ZarrArray, ZarrGroup, read_node};
pub use store::{LocalStore, MemoryStore, Store, StoreExt};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme {}

/// The Rust snippets of the docs pages, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
mod docs_library {}

#[cfg(doctest)]
#[doc = include_str!("../docs/conventions.md")]
mod docs_conventions {}

/// Its snippets use DataFusion: compiled only with the feature.
#[cfg(all(doctest, feature = "datafusion"))]
#[doc = include_str!("../docs/datafusion.md")]
mod docs_datafusion {}
