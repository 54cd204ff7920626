//! 1,000 DataFusion scans of Zarr tables in one process leave nothing behind:
//! the process's thread count returns to what it was after a warm-up, and its
//! resident memory stays within a bound far below what one scan's buffers
//! would add up to if each leaked.
//!
//! A test binary of its own (Cargo.toml `[[test]] many_scans`), with one test,
//! so that no other test's threads or memory are counted.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, StringArray};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use zarrow::store::ObjectStoreBackend;
use zarrow::write::{WriteOptions, write_array, write_group_metadata};
use zarrow::{LocalStore, Store};

const ROWS: i64 = 50_000;

/// A table of `ROWS` rows (an id, a string, a category of four), in chunks of
/// 5,000 (the strings sharded), about 1 MB decoded.
fn write_table(store: Arc<dyn Store>) {
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..ROWS));
    let names: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..ROWS).map(|i| format!("name {i}")),
    ));
    let kinds: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..ROWS).map(|i| ["a", "b", "c", "d"][(i % 4) as usize]),
    ));
    let options = WriteOptions {
        chunk_len: Some(5_000),
        ..WriteOptions::default()
    };
    write_array(store.clone(), "id", &ids, options.clone()).unwrap();
    write_array(store.clone(), "kind", &kinds, options.clone()).unwrap();
    write_array(
        store.clone(),
        "name",
        &names,
        WriteOptions {
            shard_len: Some(25_000),
            ..options
        },
    )
    .unwrap();
    let columns = ["id", "kind", "name"].map(String::from);
    write_group_metadata(store.as_ref(), "", &columns, 3).unwrap();
}

/// A field of /proc/self/status, in its unit (kB for memory).
fn status(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Threads and resident kB once idle threads have ended (the runtime keeps an
/// idle blocking thread 50 ms).
fn settled() -> (u64, u64) {
    std::thread::sleep(Duration::from_millis(400));
    (status("Threads"), status("VmRSS"))
}

/// Two scans of the local table (even `i`) or of the one in the registered
/// object store (odd): a partitioned aggregate, its row count checked, and a
/// filter whose stream is dropped after its first batch.
async fn scans(ctx: &SessionContext, i: usize) {
    let table = if i.is_multiple_of(2) {
        "local"
    } else {
        "remote"
    };
    let batches = ctx
        .sql(&format!(
            "SELECT kind, count(*) AS n, sum(id) AS s, max(name) AS m FROM {table} GROUP BY kind"
        ))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let counted: i64 = batches
        .iter()
        .flat_map(|b| b.column(1).as_primitive::<Int64Type>().values().to_vec())
        .sum();
    assert_eq!(counted, ROWS, "scan {i} of {table}");
    // A stream dropped part-way.
    let mut stream = ctx
        .sql(&format!("SELECT name FROM {table} WHERE id % 3 = 0"))
        .await
        .unwrap()
        .execute_stream()
        .await
        .unwrap();
    let first = stream.next().await.expect("a first batch").unwrap();
    assert!(first.num_rows() > 0);
    drop(stream);
}

#[test]
fn a_thousand_scans_leave_threads_and_memory_at_their_baseline() {
    let dir = tempfile::tempdir().unwrap();
    write_table(Arc::new(LocalStore::new(dir.path())));
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_table(Arc::new(ObjectStoreBackend::over(
        memory.clone(),
        "t.zarr",
        "memory:///t.zarr",
    )));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_keep_alive(Duration::from_millis(50))
        .enable_all()
        .build()
        .unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
    ctx.register_object_store(&url::Url::parse("s3://mem").unwrap(), memory);
    zarrow::datafusion::register(&ctx);
    let location = dir.path().display().to_string();
    runtime.block_on(async {
        for sql in [
            format!("CREATE EXTERNAL TABLE local STORED AS ZARR LOCATION '{location}'"),
            "CREATE EXTERNAL TABLE remote STORED AS ZARR LOCATION 's3://mem/t.zarr'".to_string(),
        ] {
            ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        }
    });

    let warm_up = 100;
    runtime.block_on(async {
        for i in 0..warm_up {
            scans(&ctx, i).await;
        }
    });
    let (threads, rss) = settled();
    runtime.block_on(async {
        for i in warm_up..1000 {
            scans(&ctx, i).await;
        }
    });
    let (threads_after, rss_after) = settled();
    eprintln!(
        "after {warm_up} scans: {threads} threads, {} MiB resident; after 1,000: {threads_after} threads, {} MiB",
        rss / 1024,
        rss_after / 1024
    );
    assert_eq!(threads_after, threads, "threads after 1,000 scans");
    // Each scan decodes about 1 MB; a leak of one scan's buffers would add
    // most of a gigabyte. The bound leaves room for the allocator's own caching.
    assert!(
        rss_after <= rss + 64 * 1024,
        "resident memory grew from {} MiB to {} MiB over 900 scans",
        rss / 1024,
        rss_after / 1024
    );
}
