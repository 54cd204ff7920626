//! # zarrow
//!
//! Zarr string, bytes, numeric and bool arrays to and from Apache Arrow, with
//! export to Arrow IPC and Parquet.
//!
//! ```text
//!  metadata ──▶ CodecChain::from_metadata          (metadata/, codec/chain.rs)
//!      │
//!  plan: what the rows need ──▶ [(key, whole value or byte ranges)]
//!      │   (read/plan.rs, sans IO: a shard's index, then its inner chunks)
//!  fetch ──▶ Buffers                              (store/: get, get_ranges)
//!      │
//!  decode: bytes->bytes codecs undone, then the layout ──▶ ArrayRef per chunk
//!      │   (codec/, one module per codec; offsets/ checks every untrusted offset)
//!  assemble: trim edges, fill missing chunks, gather N-d, apply conventions
//!      │   (anndata categorical -> Dictionary, mask -> nulls, CF -> values xarray
//!      │   gives) ──▶ RecordBatch stream (read/, assemble.rs, conventions/)
//!      ▼
//!  IPC / Parquet (export) / DataFusion / pyarrow;  write/: the same path backwards
//! ```
//!
//! Modules follow that flow: [`metadata`] → [`codec`] → `read::plan` → [`store`] →
//! [`conventions`] → [`read`] → [`export`]; [`write`](mod@write) runs it backwards.
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
//! let options = ReadOptions::default().with_string_type(StringType::Utf8View);
//! let cell_type = ZarrArray::open_with(store, "cell_type", options)?;
//! let all = cell_type.read_all()?;
//! assert_eq!(all.len() as u64, cell_type.len());
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

#[cfg(target_endian = "big")]
compile_error!(
    "zarrow maps little-endian chunk bytes onto Arrow buffers and needs a little-endian target"
);

mod assemble;
pub mod codec;
pub mod conventions;
#[cfg(feature = "convert")]
pub mod convert;
#[cfg(feature = "datafusion")]
pub mod datafusion;
mod error;
pub mod export;
mod failpoint;
mod fill;
pub mod grid;
pub mod linear;
pub mod metadata;
mod offsets;
pub mod read;
mod rows;
pub mod store;
pub mod write;

pub use codec::CodecChain;
pub use error::{ChunkError, Convention, Error, ParseOptionError, Result};
pub use metadata::{ArrayMetadata, DataType, FillValue, GroupMetadata, NodeMetadata, StringType};
pub use read::{
    ArrayBatchReader, BatchReader, ReadOptions, ReaderBuilder, ZarrArray, ZarrGroup, read_node,
};
pub use store::{LocalStore, MemoryStore, Store, StoreExt};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
