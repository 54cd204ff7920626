//! Appending rows to a stored table: the writer lock, a failed append that
//! leaves the table as it was (`zarrow convert --append`: the command line's tests).
//! (zarr-python reads the grown stores in python/tests/test_append.py.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema};
use zarrow::read::{TableOptions, open_table};
use zarrow::store::Consolidated;
use zarrow::write::{GroupWriter, WriteOptions, write_batches};
use zarrow::{AppendMismatch, Error, LimitKind, LocalStore, MemoryStore, ReadOptions, Store};

use crate::common::numbered_batch as batch;

/// The table as zarrow reads it through the consolidated metadata.
fn read(store: &Arc<dyn Store>) -> RecordBatch {
    let store = Consolidated::open(store.clone()).unwrap();
    let reader = open_table(
        store,
        "t",
        ReadOptions::default(),
        &TableOptions::default(),
        &Default::default(),
    )
    .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

fn expected(range: std::ops::Range<i64>) -> (Vec<i64>, Vec<String>) {
    (
        range.clone().collect(),
        range.map(|i| format!("v{i}")).collect(),
    )
}

fn got(table: &RecordBatch) -> (Vec<i64>, Vec<String>) {
    let n = table.column_by_name("n").unwrap();
    let s = table.column_by_name("s").unwrap();
    let n = n.as_any().downcast_ref::<Int64Array>().unwrap();
    let s = s.as_any().downcast_ref::<StringArray>().unwrap();
    (
        n.values().to_vec(),
        s.iter().map(|v| v.unwrap().to_string()).collect(),
    )
}

#[test]
fn a_second_lock_waits_then_gives_up_and_a_dropped_lock_frees_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalStore::new(dir.path().join("t.zarr"));
    let memory = MemoryStore::new();
    for store in [&local as &dyn Store, &memory] {
        let held = store.lock(Duration::ZERO).unwrap().expect("a lock");
        let start = Instant::now();
        let err = store.lock(Duration::from_millis(150)).unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(150));
        assert!(matches!(err, Error::Busy { .. }), "{err}");
        assert!(err.to_string().contains("another writer"), "{err}");
        drop(held);
        assert!(store.lock(Duration::ZERO).unwrap().is_some());
    }
    // The lock file sits beside the store, not in it.
    assert!(dir.path().join(".t.zarr.zarrow-lock").is_file());
}

#[test]
fn a_failed_append_leaves_the_table_and_the_next_one_clears_its_chunks() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let options = WriteOptions {
        chunk_len: Some(8),
        ..WriteOptions::default()
    };
    let first = batch(0, 21, None);
    write_batches(
        arrow_array::RecordBatchIterator::new([Ok(first.clone())], first.schema()),
        store.clone(),
        "",
        options.clone(),
    )
    .unwrap();
    let keys_before = store.list_prefix("").unwrap();

    // 40 rows go in (five new chunks are stored), then a null is refused.
    // The table's own chunks apply: the append sets none.
    let append = WriteOptions {
        append: true,
        ..WriteOptions::default()
    };
    let mut writer =
        GroupWriter::try_new(store.clone(), "", &first.schema(), append.clone()).unwrap();
    writer.write(&batch(21, 40, None)).unwrap();
    let err = writer.write(&batch(61, 5, Some(63))).unwrap_err();
    assert!(matches!(err, Error::Nulls { row: 63, .. }), "{err}");
    drop(writer);
    assert_eq!(got(&read(&store)), expected(0..21));
    // Chunks past the end are debris: the next append removes them.
    assert!(store.list_prefix("").unwrap().len() > keys_before.len());

    let mut writer = GroupWriter::try_new(store.clone(), "", &first.schema(), append).unwrap();
    writer.write(&batch(21, 3, None)).unwrap();
    assert_eq!(writer.finish().unwrap(), 3);
    assert_eq!(got(&read(&store)), expected(0..24));
    let chunks = |array: &str| store.list_prefix(&format!("{array}/c/")).unwrap().len();
    assert_eq!((chunks("n"), chunks("s")), (3, 3));
}

#[test]
fn an_append_waits_for_the_writer_that_holds_the_store() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first = batch(0, 5, None);
    let options = WriteOptions {
        chunk_len: Some(4),
        ..WriteOptions::default()
    };
    write_batches(
        arrow_array::RecordBatchIterator::new([Ok(first.clone())], first.schema()),
        store.clone(),
        "",
        options.clone(),
    )
    .unwrap();
    let append = WriteOptions {
        append: true,
        lock_timeout: Duration::from_millis(100),
        ..WriteOptions::default()
    };
    let holder = GroupWriter::try_new(store.clone(), "", &first.schema(), append.clone()).unwrap();
    let err = GroupWriter::try_new(store.clone(), "", &first.schema(), append.clone()).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    drop(holder);
    let mut writer = GroupWriter::try_new(store.clone(), "", &first.schema(), append).unwrap();
    writer.write(&batch(5, 2, None)).unwrap();
    writer.finish().unwrap();
    assert_eq!(got(&read(&store)), expected(0..7));
}

/// The object store lease: over object_store's in-memory store, which keeps
/// `PutMode::Create` and `PutMode::Update` as S3, GCS and Azure do.
#[cfg(feature = "object-store")]
#[test]
fn an_object_store_lease_keeps_a_second_writer_out_until_released_or_run_out() {
    use object_store::memory::InMemory;
    use object_store::path::Path as ObjectPath;
    use object_store::{ObjectStore, ObjectStoreExt};
    use zarrow::store::ObjectStoreBackend;

    let shared: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = |ttl: Duration| {
        ObjectStoreBackend::over(shared.clone(), "data/t.zarr", "memory:///data/t.zarr")
            .with_lease_ttl(ttl)
    };
    let (a, b) = (
        backend(Duration::from_secs(60)),
        backend(Duration::from_secs(60)),
    );
    let held = a.lock(Duration::ZERO).unwrap().expect("a lease");
    let lease = ObjectPath::from("data/.t.zarr.zarrow-lease");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let body = runtime.block_on(async { shared.get(&lease).await.unwrap().bytes().await.unwrap() });
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        doc["owner"]
            .as_str()
            .unwrap()
            .contains(&std::process::id().to_string())
    );
    let err = b.lock(Duration::from_millis(120)).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    drop(held);
    // Released: the lease object is gone, and the second writer takes it.
    assert!(runtime.block_on(shared.head(&lease)).is_err());
    let second = b.lock(Duration::ZERO).unwrap().expect("a lease");
    drop(second);

    // A writer that dies holding its lease: the lease runs out, then another
    // writer takes it over.
    let short = backend(Duration::from_millis(200));
    std::mem::forget(short.lock(Duration::ZERO).unwrap());
    assert!(b.lock(Duration::from_millis(20)).is_err());
    let start = Instant::now();
    let taken = b.lock(Duration::from_secs(5)).unwrap().expect("taken over");
    assert!(start.elapsed() < Duration::from_secs(2));
    drop(taken);
}

/// A stored chunk grid is the store's word, and the store may be hostile: an
/// append to an array whose chunks would be a terabyte is refused up front,
/// never allocated.
#[test]
fn an_append_to_a_hostile_chunk_grid_is_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    store
        .set(
            "zarr.json",
            br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#,
        )
        .unwrap();
    let array = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1u64 << 40]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
    });
    store
        .set("n/zarr.json", &serde_json::to_vec(&array).unwrap())
        .unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let err = GroupWriter::try_new(
        store,
        "",
        &schema,
        WriteOptions {
            append: true,
            ..WriteOptions::default()
        },
    )
    .unwrap_err();
    // The reader leaves such an array out of the table (its chunks are past
    // the read bound), or the writer refuses its grid: no chunk is allocated.
    assert!(
        matches!(
            err,
            Error::LimitExceeded {
                limit: LimitKind::ChunkBytes,
                ..
            } | Error::AppendMismatch {
                reason: AppendMismatch::Columns { .. },
                ..
            }
        ),
        "{err}"
    );
}
