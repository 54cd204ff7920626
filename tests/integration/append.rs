//! Appending rows to a stored table: the writer lock, a failed append that
//! leaves the table as it was, and `zarrow convert --append`. (zarr-python reads
//! the grown stores in python/tests/test_append.py.)

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema};
use zarrow::read::{TableOptions, open_table};
use zarrow::store::Consolidated;
use zarrow::write::{GroupWriter, WriteOptions, write_batches};
use zarrow::{Error, LocalStore, MemoryStore, ReadOptions, Store};

use crate::common::{column, read_output, values, zarrow};

fn batch(start: i64, n: i64, null_at: Option<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, true),
        Field::new("s", DataType::Utf8, false),
    ]));
    let n_values: Int64Array = (start..start + n)
        .map(|i| (Some(i) != null_at).then_some(i))
        .collect();
    let s: StringArray = (start..start + n).map(|i| Some(format!("v{i}"))).collect();
    RecordBatch::try_new(schema, vec![Arc::new(n_values), Arc::new(s)]).unwrap()
}

/// The table as zarrow reads it through the consolidated metadata.
fn read(store: &Arc<dyn Store>) -> RecordBatch {
    let store = Consolidated::open(store.clone()).unwrap();
    let reader = open_table(store, "t", ReadOptions::default(), &TableOptions::default()).unwrap();
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
    let options = WriteOptions::default().with_chunk_len(8);
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
    let append = WriteOptions::default().with_append(true);
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
    let options = WriteOptions::default().with_chunk_len(4);
    write_batches(
        arrow_array::RecordBatchIterator::new([Ok(first.clone())], first.schema()),
        store.clone(),
        "",
        options.clone(),
    )
    .unwrap();
    let append = WriteOptions::default()
        .with_append(true)
        .with_lock_timeout(Duration::from_millis(100));
    let holder = GroupWriter::try_new(store.clone(), "", &first.schema(), append.clone()).unwrap();
    let err = GroupWriter::try_new(store.clone(), "", &first.schema(), append.clone()).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    drop(holder);
    let mut writer = GroupWriter::try_new(store.clone(), "", &first.schema(), append).unwrap();
    writer.write(&batch(5, 2, None)).unwrap();
    writer.finish().unwrap();
    assert_eq!(got(&read(&store)), expected(0..7));
}

#[test]
fn convert_append_three_times_then_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.zarr");
    let out_s = out.to_str().unwrap();
    for (i, (start, n)) in [(0, 30), (30, 7), (37, 50)].into_iter().enumerate() {
        let input = dir.path().join(format!("in{i}.parquet"));
        let b = batch(start, n, None);
        let mut w = parquet::arrow::ArrowWriter::try_new(
            std::fs::File::create(&input).unwrap(),
            b.schema(),
            None,
        )
        .unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        let mut args = vec!["convert", input.to_str().unwrap(), out_s, "--append"];
        if i == 0 {
            // The first append makes the table (with its chunk length).
            args = vec![
                "convert",
                input.to_str().unwrap(),
                out_s,
                "--chunk-len",
                "16",
            ];
        }
        let result = zarrow(&args);
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );
    }
    let exported = dir.path().join("back.parquet");
    let result = zarrow(&["convert", out_s, exported.to_str().unwrap()]);
    assert!(result.status.success());
    let back = read_output(&exported);
    assert_eq!(
        values(column(&back, "n").as_ref()),
        values(&Int64Array::from_iter_values(0..87) as &dyn arrow_array::Array)
    );
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..87).map(|i| format!("v{i}")),
    ));
    assert_eq!(values(column(&back, "s").as_ref()), values(s.as_ref()));

    // Format options conflict with --append (the table's own apply).
    let input = dir.path().join("in0.parquet");
    let result = zarrow(&[
        "convert",
        input.to_str().unwrap(),
        out_s,
        "--append",
        "--compressor",
        "gzip",
    ]);
    assert!(!result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("--compressor"));
    // A Zarr input is not appended anywhere.
    let result = zarrow(&[
        "convert",
        out_s,
        dir.path().join("x.parquet").to_str().unwrap(),
        "--append",
    ]);
    assert!(!result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("--append applies to a Zarr output"));
    // A held lock: the CLI gives up, says why and how to wait longer.
    let lock = LocalStore::new(&out).lock(Duration::ZERO).unwrap();
    let result = zarrow(&[
        "convert",
        input.to_str().unwrap(),
        out_s,
        "--append",
        "--lock-timeout",
        "0.2",
    ]);
    drop(lock);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success());
    assert!(
        stderr.contains("another writer") && stderr.contains("--lock-timeout"),
        "{stderr}"
    );
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
        ObjectStoreBackend::new(shared.clone(), "data/t.zarr", "memory:///data/t.zarr")
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

/// `zarrow sql` runs `;`-separated statements in order and prints the last
/// one's answer: a COPY, then an INSERT through the table the COPY wrote.
#[cfg(feature = "datafusion")]
#[test]
fn zarrow_sql_runs_statements_in_order_and_prints_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.zarr");
    let obs = crate::common::testdata().join("stores").join("obs.zarr");
    let query = format!(
        "COPY (SELECT cell_type, n_genes FROM obs WHERE n_genes > 1000) TO '{o}' STORED AS ZARR OPTIONS (chunk_len 64); \
         CREATE EXTERNAL TABLE c STORED AS ZARR LOCATION '{o}'; \
         INSERT INTO c SELECT cell_type, n_genes FROM obs WHERE n_genes <= 1000; \
         SELECT count(*) AS rows FROM c",
        o = out.display()
    );
    let result = zarrow(&["sql", &query, "--table", &format!("obs={}", obs.display())]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    // Every obs row, once: the COPY's and the INSERT's.
    let rows = open_table(
        Consolidated::open(Arc::new(LocalStore::new(&obs))).unwrap(),
        "obs",
        ReadOptions::default(),
        &TableOptions::default(),
    )
    .unwrap()
    .total_rows();
    assert!(stdout.contains(&format!("| {rows} ")), "{stdout}");
    let written = open_table(
        Consolidated::open(Arc::new(LocalStore::new(&out))).unwrap(),
        "c",
        ReadOptions::default(),
        &TableOptions::default(),
    )
    .unwrap();
    assert_eq!(written.total_rows(), rows);
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
        WriteOptions::default().with_append(true),
    )
    .unwrap_err();
    // The reader leaves such an array out of the table (its chunks are past
    // the read bound), or the writer refuses its grid: no chunk is allocated.
    let message = err.to_string();
    assert!(
        message.contains("larger than zarrow writes") || message.contains("not in the table"),
        "{message}"
    );
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
