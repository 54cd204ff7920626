//! Chunk statistics: zarrow's convention for what each chunk of a 1-D array
//! holds, so that a filter can skip chunks without reading them
//! (docs/formats.md, "Chunk statistics").
//!
//! ```text
//! obs.zarr/sample/zarr.json        the array, as every Zarr reader sees it
//! obs.zarr/sample/c/0 .. c/39      its chunks
//! obs.zarr/sample/zarrow.stats     one Arrow IPC file: a row per chunk
//!     chunk rows nulls nans  min      max      set   version
//!     0     50k  0     0     "S0001"  "S0005"  null  "1320:1732…"
//!     1     50k  0     0     "S0005"  "S0009"  null  "1320:1732…"
//! ```
//!
//! - One object per array (one GET gives every chunk's statistics), beside
//!   the chunks, where no Zarr reader looks: it is neither a metadata document
//!   nor a chunk key.
//! - Values as a reader with the default options sees them: bounds of the
//!   decoded values; strings and bytes as bounded prefixes (a lower bound and
//!   an upper bound, as Parquet's column index truncates them); NaN counted
//!   apart, and a chunk with a NaN has NaN as its maximum (the greatest float
//!   in Arrow's order, so that `x > k` keeps it).
//! - Small integers (anndata's category codes) also record the set of values
//!   present.
//! - Each row names the version of the stored object its chunk lives in (its
//!   size and times locally, its ETag elsewhere): a statistic whose object has
//!   changed since is not used ([`fresh`]).

#[cfg(feature = "datafusion")]
mod bounds;
mod compute;
mod format;

use arrow_array::RecordBatch;
use arrow_schema::DataType as ArrowType;

use crate::error::Result;
use crate::store::{Store, join_key};

#[cfg(feature = "datafusion")]
pub(crate) use bounds::Bounds;
pub(crate) use compute::{ChunkStats, stats_type};
pub(crate) use format::{Header, decode, encode, rows};

/// The key of an array's statistics, below its node.
pub(crate) const STATS_KEY: &str = "zarrow.stats";

/// The convention's version, recorded in the file.
pub(crate) const VERSION: &str = "1";

/// The longest string or bytes bound recorded, in bytes (Parquet's column
/// index default).
pub(crate) const PREFIX_BYTES: usize = 64;

/// Integer chunks whose values all lie in `-1..=MAX_SET_VALUE` record the set
/// of values present (a bitmap of at most 256 bytes).
pub(crate) const MAX_SET_VALUE: i64 = 2046;

/// The largest statistics file read.
pub(crate) const MAX_STATS_BYTES: u64 = 64 << 20;

/// An array's statistics, as read: one row per chunk that has them.
#[derive(Debug, Clone)]
pub(crate) struct ArrayStats {
    /// Rows per statistic (the inner chunk's length when sharded).
    pub(crate) chunk_len: u64,
    /// Whether they describe values with CF decoding applied.
    pub(crate) decode_cf: bool,
    /// The [`fingerprint`] of the array's metadata when they were recorded.
    pub(crate) array: String,
    /// `chunk`, `rows`, `nulls`, `nans`, `min`, `max`, `set`, `version`.
    pub(crate) batch: RecordBatch,
}

impl ArrayStats {
    /// The type of the bounds.
    pub(crate) fn bound_type(&self) -> &ArrowType {
        self.batch.schema_ref().field(format::MIN).data_type()
    }
}

/// What of an array's metadata decides the values a reader sees: its data
/// type, fill value and attributes (CF's among them). Statistics recorded
/// under another fingerprint are not used: rewriting the metadata makes them
/// stale, as rewriting a chunk does.
pub(crate) fn fingerprint(meta: &crate::ArrayMetadata) -> String {
    serde_json::json!({
        "data_type": meta.data_type.to_string(),
        "fill_value": meta.fill_value.describe(&meta.data_type),
        "fill_value_unset": meta.fill_value_unset,
        "attributes": meta.attributes,
    })
    .to_string()
}

/// The stored objects of the array at `path` with their versions, from one
/// listing (`None`: the store cannot tell, [`Store::list_versions`]).
///
/// # Errors
/// Listing the store.
pub(crate) fn versions(
    store: &dyn Store,
    path: &str,
) -> Result<Option<std::collections::HashMap<String, String>>> {
    let listed = store.list_versions(&join_key(path, ""))?;
    Ok(listed.map(|v| v.into_iter().collect()))
}

/// Which rows of `stats` still describe the stored chunks: a row whose object
/// the store lists with the version it recorded. `versions` is the store's
/// listing of the array's keys with their versions (`None`: the store cannot
/// tell, and every row is trusted); `object_key` gives the key of the object
/// holding a chunk.
pub(crate) fn fresh(
    stats: &ArrayStats,
    versions: Option<&std::collections::HashMap<String, String>>,
    object_key: impl Fn(u64) -> String,
) -> Vec<bool> {
    use arrow_array::Array as _;
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let chunks = stats
        .batch
        .column(format::CHUNK)
        .as_primitive::<UInt64Type>();
    let recorded = stats
        .batch
        .column(format::VERSION_COLUMN)
        .as_string::<i32>();
    (0..stats.batch.num_rows())
        .map(|i| match versions {
            None => true,
            Some(versions) => {
                recorded.is_valid(i)
                    && versions
                        .get(&object_key(chunks.value(i)))
                        .map(String::as_str)
                        == Some(recorded.value(i))
            }
        })
        .collect()
}

/// An array's statistics file, checked.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub(crate) stats: ArrayStats,
    /// Which rows still describe their chunks.
    pub(crate) fresh: Vec<bool>,
    /// Whether the store could tell (`false`: an HTTP store; all are trusted).
    pub(crate) verified: bool,
    /// Whether they describe the values as read (the same metadata, the same
    /// CF decoding, whole chunks).
    pub(crate) usable: bool,
}

impl Report {
    /// The chunks whose statistics are stale.
    pub(crate) fn stale(&self) -> Vec<u64> {
        use arrow_array::cast::AsArray;
        let chunks = self.stats.batch.column(format::CHUNK);
        let chunks = chunks.as_primitive::<arrow_array::types::UInt64Type>();
        (0..chunks.len())
            .filter(|&i| !self.fresh[i])
            .map(|i| chunks.value(i))
            .collect()
    }
}
