//! Recording statistics for arrays something else wrote (`zarrow stats`).

use std::sync::Arc;

use arrow_array::RecordBatchReader;

use crate::error::Result;
use crate::read::{ReadOptions, ZarrArray};
use crate::stats::{ChunkStats, Header, STATS_KEY, encode, fingerprint, stats_type};
use crate::store::{Store, join_key};

/// Record the statistics of the 1-D array at `path`, reading it whole, one
/// chunk at a time, as a reader with the default options sees it. Each
/// chunk's version is listed before any chunk is read: a chunk stored again
/// meanwhile keeps the old version, so its statistics are never used.
/// `wrap` wraps the array's reader (a progress bar). Returns the chunks
/// described; 0 (and nothing written) for an array of a type without
/// statistics.
///
/// # Errors
/// Reading the array; storing the file.
pub(crate) fn record(
    store: Arc<dyn Store>,
    path: &str,
    wrap: &dyn Fn(Box<dyn RecordBatchReader + Send>, u64) -> Box<dyn RecordBatchReader + Send>,
) -> Result<u64> {
    let array = ZarrArray::open_with(store.clone(), path, ReadOptions::default())?;
    let meta = array.metadata().clone();
    let Some(&grid_len) = meta.chunk_shape.first() else {
        return Ok(0);
    };
    if meta.shape.len() != 1 || grid_len == 0 {
        return Ok(0);
    }
    let versions = crate::stats::versions(store.as_ref(), path)?.unwrap_or_default();
    let batch_size = usize::try_from(grid_len).unwrap_or(usize::MAX);
    let reader = array.reader().with_batch_size(batch_size).build()?;
    // The values as read (CF-decoded: their type may not be the stored one).
    let Some(bound) = stats_type(reader.schema().field(0).data_type()) else {
        return Ok(0);
    };
    let mut rows = Vec::new();
    let mut chunk = 0u64;
    for batch in wrap(Box::new(reader), meta.shape[0]) {
        let batch = batch?;
        // Batches hold whole chunks (the batch size is the chunk length);
        // each is cut at chunk boundaries all the same.
        let mut start = 0;
        while start < batch.num_rows() {
            let n = batch_size.min(batch.num_rows() - start);
            if let Some(stats) = ChunkStats::of(batch.column(0).slice(start, n).as_ref()) {
                let key = array.chunk_key(&[chunk]);
                rows.push((chunk, stats, versions.get(&key).cloned()));
            }
            chunk += 1;
            start += n;
        }
    }
    let header = Header {
        chunk_len: grid_len,
        array_len: meta.shape[0],
        array: &fingerprint(&meta),
    };
    store.set(&join_key(path, STATS_KEY), &encode(&rows, &bound, &header)?)?;
    Ok(chunk)
}
