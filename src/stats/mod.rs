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
//!   apart (the bounds of a chunk with a NaN are not used: engines order NaN
//!   differently), a zero bound widened to -0.0 below and +0.0 above.
//! - Small integers (anndata's category codes) also record the set of values
//!   present.
//! - Each row names the version of the stored object its chunk lives in (its
//!   size and times locally, its ETag elsewhere) and its rows: a statistic
//!   whose object or rows have changed since is not used ([`fresh`]).
//!
//! The convention is specified in docs/spec/chunk-statistics.md.

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
pub(crate) const VERSION: &str = "2";

/// The longest string or bytes bound recorded, in bytes (Parquet's column
/// index default).
pub(crate) const PREFIX_BYTES: usize = 64;

/// Integer chunks whose values all lie in `-1..=MAX_SET_VALUE` record the set
/// of values present (a bitmap of at most [`MAX_SET_BYTES`]).
pub(crate) const MAX_SET_VALUE: i64 = 2046;

/// The longest set a file may record.
pub(crate) const MAX_SET_BYTES: usize = 256;

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
    pub(crate) array: serde_json::Value,
    /// `chunk`, `rows`, `nulls`, `nans`, `min`, `max`, `set`, `version`.
    pub(crate) batch: RecordBatch,
}

impl ArrayStats {
    /// The type of the bounds.
    pub(crate) fn bound_type(&self) -> &ArrowType {
        self.batch.schema_ref().field(format::MIN).data_type()
    }
}

/// What of an array's metadata decides the values a reader sees, as its
/// document stored it: `data_type` (v2: `dtype`), `fill_value` and
/// `attributes` (CF's among them). Statistics recorded under another
/// fingerprint are not used: rewriting the metadata makes them stale, as
/// rewriting a chunk does (docs/spec/chunk-statistics.md, "Freshness").
pub(crate) fn fingerprint(meta: &crate::ArrayMetadata) -> serde_json::Value {
    let (data_type, fill_value) = match &meta.stored.0 {
        Some(stored) => stored.clone(),
        // Metadata made in code (a writer's): its members as it writes them.
        None => written_members(meta),
    };
    serde_json::json!({
        "data_type": data_type,
        "fill_value": fill_value,
        "attributes": meta.attributes,
    })
}

/// The `data_type` (`dtype`) and `fill_value` of `meta`'s own document as
/// zarrow writes it (nulls when it cannot be written).
fn written_members(meta: &crate::ArrayMetadata) -> (serde_json::Value, serde_json::Value) {
    use serde_json::Value;
    let documents = meta.to_documents().unwrap_or_default();
    let document = documents
        .iter()
        .find(|(name, _)| matches!(*name, "zarr.json" | ".zarray"))
        .map(|(_, doc)| doc);
    let member = |name: &str| {
        document
            .and_then(|doc| doc.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let data_type = if meta.zarr_format == 2 {
        member("dtype")
    } else {
        member("data_type")
    };
    (data_type, member("fill_value"))
}

/// The stored objects of the array at `path` with their versions, from one
/// listing, as the store lists them (`None`: the store cannot tell,
/// [`Store::list_versions`]).
///
/// # Errors
/// Listing the store.
pub(crate) fn listed(store: &dyn Store, path: &str) -> Result<Option<Vec<(String, String)>>> {
    store.list_versions(&join_key(path, ""))
}

/// [`listed`], by key.
///
/// # Errors
/// Listing the store.
pub(crate) fn versions(
    store: &dyn Store,
    path: &str,
) -> Result<Option<std::collections::HashMap<String, String>>> {
    Ok(listed(store, path)?.map(|v| v.into_iter().collect()))
}

/// Which rows of `stats` still describe the stored chunks: a row whose
/// rows are its chunk's rows in an array of `array_len` rows now (a resize
/// that rewrote only the metadata changes them), and whose object the store
/// lists with the version it recorded. `versions` is the store's listing of
/// the array's keys with their versions (`None`: the store cannot tell, and
/// versions are trusted); `object_key` gives the key of the object holding a
/// chunk.
pub(crate) fn fresh(
    stats: &ArrayStats,
    versions: Option<&std::collections::HashMap<String, String>>,
    array_len: u64,
    object_key: impl Fn(u64) -> String,
) -> Vec<bool> {
    use arrow_array::Array as _;
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let column = |i: usize| stats.batch.column(i).as_primitive::<UInt64Type>();
    let (chunks, rows) = (column(format::CHUNK), column(format::ROWS));
    let recorded = stats
        .batch
        .column(format::VERSION_COLUMN)
        .as_string::<i32>();
    (0..stats.batch.num_rows())
        .map(|i| {
            let chunk = chunks.value(i);
            // The chunk's rows now (none at or past the end; checked: the
            // numbers are the file's).
            let now = chunk
                .checked_mul(stats.chunk_len)
                .filter(|&start| start < array_len)
                .map(|start| (array_len - start).min(stats.chunk_len));
            let same_rows = now == Some(rows.value(i));
            let same_object = match versions {
                None => true,
                Some(versions) => {
                    recorded.is_valid(i)
                        && versions.get(&object_key(chunk)).map(String::as_str)
                            == Some(recorded.value(i))
                }
            };
            same_rows && same_object
        })
        .collect()
}

/// Each row's chunk and recorded version, in the file's order.
pub(crate) fn recorded_versions(stats: &ArrayStats) -> Vec<(u64, Option<String>)> {
    use arrow_array::Array as _;
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let chunks = stats
        .batch
        .column(format::CHUNK)
        .as_primitive::<UInt64Type>();
    let versions = stats
        .batch
        .column(format::VERSION_COLUMN)
        .as_string::<i32>();
    (0..chunks.len())
        .map(|i| {
            let version = versions.is_valid(i).then(|| versions.value(i).to_string());
            (chunks.value(i), version)
        })
        .collect()
}

/// An array's statistics file, checked.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// The file (`None`: another version of the convention, not used).
    pub(crate) stats: Option<ArrayStats>,
    /// Which rows still describe their chunks.
    pub(crate) fresh: Vec<bool>,
    /// Whether the store could tell (`false`: an HTTP store; all are trusted).
    pub(crate) verified: bool,
    /// Why none is used (another version of the convention, other
    /// metadata, another CF decoding, another chunking); `None`: they
    /// describe the values as read.
    pub(crate) unusable: Option<String>,
}

impl Report {
    /// The chunks whose statistics are stale.
    pub(crate) fn stale(&self) -> Vec<u64> {
        use arrow_array::cast::AsArray;
        let Some(stats) = &self.stats else {
            return Vec::new();
        };
        let chunks = stats.batch.column(format::CHUNK);
        let chunks = chunks.as_primitive::<arrow_array::types::UInt64Type>();
        (0..chunks.len())
            .filter(|&i| !self.fresh[i])
            .map(|i| chunks.value(i))
            .collect()
    }
}
