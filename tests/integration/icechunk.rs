//! Icechunk repositories (feature `icechunk`): a plan read on another machine
//! reads the snapshot its client resolved, and a commit that changes chunks
//! without zarrow's statistics never lets the old statistics decide an answer.
//! icechunk-python's side is tests/interop/check_icechunk.py.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::{DataType, Field, Schema};
use datafusion::physical_plan::collect;
use datafusion::prelude::{SessionConfig, SessionContext};
use zarrow::datafusion::{ZarrTable, ZarrTableOptions};
use zarrow::write::{WriteOptions, write_batches};
use zarrow::{Location, Stores};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `n` rows from `start`: `n` (the row number) and `s` (its text).
fn rows(start: i64, n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let ns: Vec<i64> = (start..start + n).collect();
    let ss: Vec<String> = ns.iter().map(|i| format!("row {i}")).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ns)),
            Arc::new(StringArray::from(ss)),
        ],
    )
    .unwrap()
}

/// Write (or with `append`, append) `batch` to `location` as one commit.
fn commit(location: &Location, batch: RecordBatch, append: bool) -> u64 {
    let options = WriteOptions {
        append,
        // An append keeps the table's chunks.
        chunk_len: (!append).then_some(100),
        ..WriteOptions::default()
    };
    let schema = batch.schema();
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    let how = options.clone();
    Stores::default()
        .write_zarr(location, false, &how, |store, node| {
            write_batches(reader, store, node, options)
        })
        .unwrap()
}

async fn count(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .value(0)
}

/// A plan sent to another machine (datafusion-proto, as Ballista sends it)
/// carries the snapshot its client read, not the branch: a commit made in
/// between is not seen by the decoded plan, and is by a table opened again.
#[test]
fn a_decoded_plan_reads_the_snapshot_its_client_resolved() {
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    use zarrow::datafusion::ZarrPhysicalCodec;

    let dir = tempfile::tempdir().unwrap();
    let location = Location::parse(&format!(
        "icechunk+file://{}?path=obs/t",
        dir.path().join("repo").display()
    ))
    .unwrap();
    assert_eq!(commit(&location, rows(0, 1000), false), 1000);
    let stores = Stores::default();
    let table = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
    runtime().block_on(async {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = ctx
            .sql("SELECT count(*), sum(n) FROM t")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let codec = ZarrPhysicalCodec::default();
        let bytes = physical_plan_to_bytes_with_extension_codec(plan, &codec).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("snapshot="), "no snapshot id in the plan");

        // Another writer commits to the branch before the plan runs.
        assert_eq!(commit(&location, rows(1000, 500), true), 500);

        let other = SessionContext::new();
        let decoded =
            physical_plan_from_bytes_with_extension_codec(&bytes, &other.task_ctx(), &codec)
                .unwrap();
        let got = collect(decoded, other.task_ctx()).await.unwrap();
        let n = got[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(n.value(0), 1000, "the plan read the branch's new tip");

        let fresh = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
        let again = SessionContext::new();
        again.register_table("t", Arc::new(fresh)).unwrap();
        assert_eq!(count(&again, "SELECT count(*) FROM t").await, 1500);
    });
}

/// zarrow's statistics describe the snapshot whose commit recorded them: a
/// later commit by another writer (here the icechunk crate itself, as
/// icechunk-python would) that stores other values in a chunk leaves no
/// statistics behind to skip that chunk by, and the filter finds the rows.
#[test]
fn a_commit_without_statistics_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let location = Location::parse(&format!("icechunk+file://{}?path=t", repo.display())).unwrap();
    commit(&location, rows(0, 1000), false);
    let stores = Stores::default();
    let query = "SELECT count(*) FROM t WHERE n = 950";
    runtime().block_on(async {
        let ctx = SessionContext::new();
        let table = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        assert_eq!(count(&ctx, query).await, 1);

        // Chunk 0 of `n` becomes a copy of chunk 9 (rows 900..1000), through
        // icechunk's own API: a commit with no zarrow properties.
        let storage = icechunk::new_local_filesystem_storage(&repo).await.unwrap();
        let ic = icechunk::Repository::open(storage).execute().await.unwrap();
        let session = ic.writable_session("main").await.unwrap();
        let store =
            icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(session))).await;
        let nine = store
            .get("t/n/c/9", &icechunk::format::ByteRange::ALL)
            .await
            .unwrap();
        store.set("t/n/c/0", nine).await.unwrap();
        store
            .session()
            .write()
            .await
            .commit("another writer")
            .execute()
            .await
            .unwrap();

        let ctx = SessionContext::new();
        let table = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        assert_eq!(
            count(&ctx, query).await,
            2,
            "a stale statistic skipped chunk 0"
        );
    });
}
