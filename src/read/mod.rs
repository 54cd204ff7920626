//! Reading: [`ZarrArray`] and [`ZarrGroup`], and their `RecordBatchReader`s.
//!
//! ```text
//! store ─▶ chunk bytes ─▶ CodecChain::decode ─▶ ArrayRef per chunk
//!            ─▶ trim edge / fill missing ─▶ slab (C order) ─▶ RecordBatch
//! ```
//!
//! Memory while streaming is bounded by the read-ahead window, never by the
//! array's length: a few chunks per column for 1-D arrays; for N-d arrays a few
//! chunk rows (the chunks that share a first index, which C-order output needs
//! together), each refused when over [`ReadOptions::max_chunk_bytes`].

mod array;
mod builder;
mod column;
mod decoder;
mod group;
mod info;
mod long;
mod node;
mod plan;
mod selection;
mod source;
#[cfg(feature = "async")]
mod stream;
mod table;

#[cfg(feature = "datafusion")]
pub(crate) use selection::Selection;

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};

pub(crate) use crate::error::Skipped;
pub use array::ZarrArray;
#[cfg(feature = "datafusion")]
pub(crate) use builder::aligned_splits;
pub use builder::{BatchReader, DEFAULT_MAX_BATCH_ROWS, ReaderBuilder};
pub use column::Column;
#[cfg(feature = "async")]
pub(crate) use decoder::ReadStats;
pub use decoder::{DecodeJob, DecodeResult, DecodedChunk, Fetched, Request, RowDecoder};
pub use group::ZarrGroup;
pub use info::{
    ArrayInfo, ChildInfo, ChildNode, ColumnInfo, GroupInfo, NodeInfo, describe_array,
    describe_array_verified, describe_node,
};
#[cfg(feature = "datafusion")]
pub(crate) use long::LongGrid;
use long::LongTable;
pub(crate) use node::Node;
pub use node::read_node;
pub(crate) use source::TableSource;
#[cfg(feature = "async")]
pub(crate) use stream::ReadBudget;
pub use table::{TableOptions, TableReader, open_table};

use crate::context::ExecutionContext;
use crate::error::{Error, Result};
use crate::metadata::StringType;

pub(crate) use crate::context::READ_AHEAD_BYTES;

/// The default bound on one chunk's decoded size: 2 GiB.
pub(crate) const DEFAULT_MAX_CHUNK_BYTES: usize = 2 << 30;

/// The default bound on what one `read_all` / `read_range` call may materialise:
/// 64 GiB of Arrow data.
pub(crate) const DEFAULT_MAX_READ_BYTES: u64 = 64 << 30;

crate::options::options! {
    /// How arrays are read.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ReadOptions("read") {
        /// [from Zarr] The Arrow layout of string and bytes columns: utf8,
        /// large-utf8 or utf8-view (default: the layout zarrow's writer recorded
        /// in the array's attributes, else utf8).
        pub string_type: Option<StringType> as crate::options::Unset = None,
        /// [from Zarr] The most bytes one chunk may decode (or decompress) to;
        /// larger chunks are an error naming their key, rather than an
        /// allocation (suffixes K, M, G, T; default 2 GiB).
        pub max_chunk_bytes: usize as crate::options::Size = DEFAULT_MAX_CHUNK_BYTES,
        /// [from Zarr] Decode CF attributes (xarray's scale_factor, add_offset,
        /// _FillValue, time units) into the values xarray gives; off (the
        /// command line's --no-cf): the raw values.
        pub decode_cf: bool = true; negated_flag("no-cf"),
        /// [from Zarr] Use chunk statistics (`zarrow.stats`) to skip chunks a
        /// filter cannot match, where they still describe the stored chunks;
        /// off (the command line's --ignore-stats): every chunk is read.
        pub use_stats: bool = true; negated_flag("ignore-stats"),
        /// [from Zarr] Read anndata categoricals as their categories' values,
        /// one per row (nulls for missing), instead of dictionaries (zarrow
        /// stores a table's dictionary columns as categoricals; a store
        /// written before it did holds their values). String categories are
        /// utf8-view unless string_type says otherwise: each row's view is
        /// its category's, no string is copied.
        /// What DataFusion's own Parquet scan does with a dictionary-encoded
        /// column, and what its GROUP BY is fastest on: off by default, but for
        /// SQL tables (zarrow sql, CREATE EXTERNAL TABLE), where it is on
        /// (categorical_values=false: dictionaries).
        pub categorical_values: bool = false,
    }
    internal {
        /// The most Arrow data one [`ZarrArray::read_all`] / [`ZarrArray::read_range`]
        /// may materialise, estimated from the element count (exact for fixed widths,
        /// 16 bytes an element for strings and bytes, besides their values): a shape
        /// can promise far more elements than the store holds (missing chunks read as
        /// the fill value). Streaming readers are bounded by their read-ahead instead.
        pub max_read_bytes: u64 = DEFAULT_MAX_READ_BYTES,
    }
}

/// A [`RecordBatchReader`] over one array: a single column named after the array,
/// one batch per slab (per chunk for 1-D arrays), CF-decoded when the options say
/// so.
#[derive(Debug)]
pub(crate) struct ArrayBatchReader {
    schema: SchemaRef,
    /// The reader, or why there is none (a CF attribute that cannot be decoded),
    /// given by the first batch.
    reader: std::result::Result<BatchReader, Option<Error>>,
}

impl ArrayBatchReader {
    /// The reader of every slab, one batch per slab, decoding as `context`
    /// says.
    pub(crate) fn new(array: ZarrArray, context: &ExecutionContext) -> Self {
        let per_slab = array.row_chunk_len();
        let fallback = || Arc::new(Schema::new(vec![array.field()]));
        let batch = usize::try_from(per_slab).unwrap_or(usize::MAX).max(1);
        match array
            .reader()
            .with_context(context)
            .with_batch_size(batch)
            .build()
        {
            Ok(reader) => Self {
                schema: reader.schema(),
                reader: Ok(reader),
            },
            Err(e) => Self {
                schema: fallback(),
                reader: Err(Some(e)),
            },
        }
    }
}

impl Iterator for ArrayBatchReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.reader {
            Ok(reader) => reader.next(),
            Err(e) => e.take().map(|e| Err(ArrowError::from(e))),
        }
    }
}

impl RecordBatchReader for ArrayBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
