//! # zarrow
//!
//! Zarr string, bytes, numeric and bool arrays to and from Apache Arrow, with
//! export to Arrow IPC and Parquet.
//!
//! ```text
//!  store key ──get──▶ Buffer (encoded chunk)
//!                       │ bytes->bytes codecs, undone in reverse (zstd, gzip, blosc, crc32c)
//!                       ▼
//!                     Buffer (decoded chunk; Arrow-aligned)
//!                       │ array->bytes layout (vlen-utf8, zarrs.vlen, ZEP0007, bytes)
//!                       ▼
//!                     ArrayRef per chunk (offsets + values are slices where possible)
//!                       │ trim edge chunks, fill missing chunks, flatten N-d in C order
//!                       ▼
//!                     RecordBatch stream ──▶ IPC / Parquet / DataFusion / pyarrow
//! ```
//!
//! Modules follow that flow: [`store`] → [`metadata`] → [`codec`] (with the
//! offsets checks in one private module) → [`read`] → [`export`].
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
mod error;
pub mod export;
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
pub use error::{ChunkError, Error, Result};
pub use metadata::{ArrayMetadata, DataType, FillValue, GroupMetadata, NodeMetadata, StringType};
pub use read::{
    ArrayBatchReader, BatchReader, ReadOptions, ReaderBuilder, ZarrArray, ZarrGroup, read_node,
};
pub use store::{LocalStore, MemoryStore, Store, StoreExt};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
