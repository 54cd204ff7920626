//! zarrow inside a DataFusion session: reading through the object store the
//! session registered (no network, no store of zarrow's own), its memory pool
//! bounding the read-ahead, its metrics, and a dropped stream asking for no more.
//! Expected values are the rows the tests wrote.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::memory_pool::{MemoryPool, MemoryReservation};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use zarrow::store::ObjectStoreBackend;
use zarrow::write::{WriteOptions, write_array, write_group_metadata};

use crate::datafusion::{query, rows, runtime, write_table};

/// An object store that counts the GETs of chunk values (not metadata) and
/// holds each one `delay` (a slow remote store).
#[derive(Debug)]
struct Slow {
    inner: Arc<dyn ObjectStore>,
    delay: Duration,
    chunk_gets: AtomicUsize,
}

impl fmt::Display for Slow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slow({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Slow {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let name = location.filename().unwrap_or("");
        if !matches!(
            name,
            "zarr.json" | ".zarray" | ".zgroup" | ".zattrs" | ".zmetadata"
        ) {
            self.chunk_gets.fetch_add(1, Ordering::SeqCst);
        }
        tokio::time::sleep(self.delay).await;
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// A session with `store` registered for `s3://mem` and the ZARR file type.
fn session_over(store: Arc<dyn ObjectStore>, config: SessionConfig) -> SessionContext {
    session_with(store, config, RuntimeEnvBuilder::new())
}

fn session_with(
    store: Arc<dyn ObjectStore>,
    config: SessionConfig,
    runtime: RuntimeEnvBuilder,
) -> SessionContext {
    let ctx = SessionContext::new_with_config_rt(config, runtime.build_arc().unwrap());
    ctx.register_object_store(&url::Url::parse("s3://mem").unwrap(), store);
    zarrow::datafusion::register(&ctx);
    ctx
}

/// datafusion.rs's table, written into `memory` under `t.zarr`.
fn write_into(memory: Arc<dyn ObjectStore>) {
    let backend = ObjectStoreBackend::over(memory, "t.zarr", "memory:///t.zarr");
    write_table(Arc::new(backend));
}

#[test]
fn an_in_memory_store_registered_under_s3_answers_create_external_table() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_into(memory.clone());
    // No credentials, no endpoint: any request outside the registered store fails.
    let ctx = session_over(memory, SessionConfig::new().with_target_partitions(3));
    let got = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/t.zarr'",
        )
        .await;
        query(
            &ctx,
            "SELECT kind, count(*) AS n, sum(id) AS s FROM t GROUP BY kind ORDER BY kind",
        )
        .await
    });
    let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let (ids, _, kinds) = rows();
    for (id, kind) in ids.iter().zip(kinds) {
        let entry = want.entry(kind.to_string()).or_default();
        entry.0 += 1;
        entry.1 += id;
    }
    let mut have = BTreeMap::new();
    for batch in &got {
        let kind = datafusion::arrow::compute::cast(batch.column(0), &arrow_schema::DataType::Utf8)
            .unwrap();
        let kind = kind.as_string::<i32>();
        let n = batch.column(1).as_primitive::<Int64Type>();
        let s = batch.column(2).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            have.insert(kind.value(i).to_string(), (n.value(i), s.value(i)));
        }
    }
    assert_eq!(have, want);
}

#[test]
fn explain_analyze_shows_what_the_scan_fetched_and_decoded() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_into(memory.clone());
    let ctx = session_over(memory, SessionConfig::new().with_target_partitions(1));
    let plan = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/t.zarr'",
        )
        .await;
        let batches = query(&ctx, "EXPLAIN ANALYZE SELECT max(name) FROM t").await;
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    });
    let scan = plan
        .lines()
        .find(|l| l.contains("file_type=zarr"))
        .unwrap_or_else(|| panic!("no scan in {plan}"));
    // `name` has 10,007 rows in chunks of 300: 34 chunks, one request each.
    assert!(scan.contains("requests=34"), "{scan}");
    assert!(scan.contains("bytes_fetched="), "{scan}");
    assert!(!scan.contains("bytes_fetched=0,"), "{scan}");
    assert!(scan.contains("decode_time="), "{scan}");
}

#[test]
fn a_memory_limit_too_small_for_the_read_ahead_is_a_clean_error() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_into(memory.clone());
    let ctx = session_with(
        memory,
        SessionConfig::new().with_target_partitions(1),
        RuntimeEnvBuilder::new().with_memory_limit(16 << 10, 1.0),
    );
    let err = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/t.zarr'",
        )
        .await;
        ctx.sql("SELECT max(name) FROM t")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap_err()
    });
    assert!(
        matches!(err.find_root(), DataFusionError::ResourcesExhausted(_)),
        "{err:?}"
    );
    assert!(err.to_string().contains("ZarrScan[0]"), "{err}");
}

#[test]
fn a_limit_over_a_slow_store_stops_requesting_once_its_rows_are_in() {
    const ROWS: usize = 100_000;
    const CHUNK: u64 = 300;
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = Arc::new(ObjectStoreBackend::over(
        memory.clone(),
        "t.zarr",
        "memory:///t.zarr",
    ));
    let name: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..ROWS).map(|i| format!("n{i}")),
    ));
    write_array(
        backend.clone(),
        "name",
        &name,
        WriteOptions {
            chunk_len: Some(CHUNK as usize),
            ..WriteOptions::default()
        },
    )
    .unwrap();
    write_group_metadata(backend.as_ref(), "", &["name".to_string()], 3).unwrap();
    let chunks = (ROWS as u64).div_ceil(CHUNK) as usize;
    let slow = Arc::new(Slow {
        inner: memory,
        delay: Duration::from_millis(20),
        chunk_gets: AtomicUsize::new(0),
    });
    let ctx = session_over(slow.clone(), SessionConfig::new().with_target_partitions(1));
    let rt = runtime();
    let (got, asked) = rt.block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/t.zarr'",
        )
        .await;
        // The filter reaches the scan as `Inexact` (chunk statistics may
        // skip chunks), so the limit does not: the scan streams what the
        // statistics keep until the limit has its rows and drops it.
        let mut stream = ctx
            .sql("SELECT name FROM t WHERE name LIKE 'n1%' LIMIT 5")
            .await
            .unwrap()
            .execute_stream()
            .await
            .unwrap();
        let mut got: Vec<RecordBatch> = Vec::new();
        while let Some(batch) = stream.next().await {
            got.push(batch.unwrap());
        }
        drop(stream);
        let asked = slow.chunk_gets.load(Ordering::SeqCst);
        // Nothing more once the stream is gone.
        tokio::time::sleep(Duration::from_millis(200)).await;
        (got, asked)
    });
    let names: Vec<String> = got
        .iter()
        .flat_map(|b| {
            let c = datafusion::arrow::compute::cast(b.column(0), &arrow_schema::DataType::Utf8)
                .unwrap();
            c.as_string::<i32>()
                .iter()
                .map(|s| s.unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(names, ["n1", "n10", "n11", "n12", "n13"]);
    assert_eq!(slow.chunk_gets.load(Ordering::SeqCst), asked);
    // The read-ahead window (32 requests in flight) at most, of 334 chunks.
    assert!(asked <= 40, "{asked} of {chunks} chunks requested");
}

/// Delete every Zarr metadata document below `dir`; how many there were.
fn remove_metadata(dir: &std::path::Path) -> usize {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().unwrap().is_dir() {
            removed += remove_metadata(&entry.path());
        } else if ["zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"].contains(&&*name) {
            std::fs::remove_file(entry.path()).unwrap();
            removed += 1;
        }
    }
    removed
}

/// A plan sent to another machine through datafusion-proto (as Ballista sends
/// it) opens its table from the metadata it carries: with every metadata
/// document gone from the store, the decoded plan still gives the same answer,
/// and the URL options travel with it.
#[test]
fn a_decoded_plan_reads_no_metadata_and_keeps_its_url_options() {
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::physical_plan::collect;
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    use zarrow::datafusion::{ZarrPhysicalCodec, ZarrTable, ZarrTableOptions};
    use zarrow::location::UrlOptions;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("obs.zarr");
    crate::common::copy_dir(&crate::common::testdata().join("stores/obs.zarr"), &path);
    let location = path.display().to_string();
    let mut url = UrlOptions::default();
    url.anonymous = true;
    url.retries = Some(3);
    let location = zarrow::Location::parse(&location).unwrap();
    let stores = zarrow::Stores::new(url.clone());
    let table = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
    runtime().block_on(async {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
        ctx.register_table("obs", Arc::new(table)).unwrap();
        let plan = ctx
            .sql(
                "SELECT cell_type, count(*) AS cells, sum(n_genes) AS genes, min(barcode) AS first \
                 FROM obs GROUP BY cell_type ORDER BY cell_type",
            )
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let codec = ZarrPhysicalCodec::default();
        let bytes = physical_plan_to_bytes_with_extension_codec(plan.clone(), &codec).unwrap();
        let want = pretty_format_batches(&collect(plan, ctx.task_ctx()).await.unwrap())
            .unwrap()
            .to_string();

        assert!(remove_metadata(&path) >= 5);
        assert!(ZarrTable::open(&location, ZarrTableOptions::default(), &stores).is_err());

        // A context that knows no table: everything comes from the bytes.
        let other = SessionContext::new();
        let decoded =
            physical_plan_from_bytes_with_extension_codec(&bytes, &other.task_ctx(), &codec)
                .unwrap();
        // The scan, read with the URL options carried (the endpoint of a
        // store this context never registered).
        assert!(crate::datafusion::find_scan(&decoded).is_some());
        let got = pretty_format_batches(&collect(decoded, other.task_ctx()).await.unwrap())
            .unwrap()
            .to_string();
        assert_eq!(got, want);
    });
}

/// An N-d array is read by the same push decoder on the session's runtime
/// (slab by slab, every chunk of a slab one request): its elements in C order,
/// with the scan's metrics.
/// The named metric of the scans in an `EXPLAIN ANALYZE` plan, summed.
fn scan_metric(plan: &str, name: &str) -> u64 {
    plan.lines()
        .filter(|l| l.contains("file_type=zarr"))
        .filter_map(|l| l.split(&format!("{name}=")).nth(1))
        .filter_map(|r| {
            r.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// A `LIMIT` over an N-d sharded array reads each shard's index and the first
/// row of inner chunks only (N-d partial reads), through the session's store.
#[test]
fn a_limit_over_nd_shards_reads_the_first_inner_chunks_only() {
    use arrow_array::Int64Array;
    use zarrow::write::write_nd_array;

    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::over(memory.clone(), "grid.zarr", "memory:///grid.zarr");
    // An 8 x 6 grid whose element (r, c) is r * 6 + c, in shards of 4 x 6 made
    // of inner chunks of 2 x 3.
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..48));
    let options = WriteOptions {
        chunk_shape: Some(vec![2, 3]),
        shard_shape: Some(vec![4, 6]),
        ..WriteOptions::default()
    };
    write_nd_array(Arc::new(backend), "", &values, &[8, 6], options).unwrap();
    let shard = runtime()
        .block_on(object_store::ObjectStoreExt::head(
            &memory,
            &object_store::path::Path::from("grid.zarr/c/0/0"),
        ))
        .unwrap()
        .size;
    let ctx = session_over(memory, SessionConfig::new().with_target_partitions(2));
    let (head, plan) = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/grid.zarr'",
        )
        .await;
        let head = query(&ctx, "SELECT grid FROM t LIMIT 7").await;
        let plan = query(&ctx, "EXPLAIN ANALYZE SELECT grid FROM t LIMIT 7").await;
        let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        (head, plan)
    });
    let head: Vec<i64> = head
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(head, (0..7).collect::<Vec<i64>>());
    // Elements 0..7 are rows 0 and 1: the index of shard c/0/0, then its two
    // inner chunks of rows 0..2 (neighbours: one request).
    assert_eq!(scan_metric(&plan, "requests"), 2, "{plan}");
    let bytes = scan_metric(&plan, "bytes_fetched");
    assert!(
        bytes < shard,
        "{bytes} bytes of a {shard}-byte shard: {plan}"
    );
}

#[test]
fn an_nd_array_streams_through_the_registered_store() {
    use arrow_array::Int64Array;
    use zarrow::write::write_nd_array;

    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::over(memory.clone(), "grid.zarr", "memory:///grid.zarr");
    // A 10 x 6 grid whose element (r, c) is r * 6 + c: in C order, 0..60.
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..60));
    let options = WriteOptions {
        chunk_shape: Some(vec![3, 4]),
        ..WriteOptions::default()
    };
    write_nd_array(Arc::new(backend), "", &values, &[10, 6], options).unwrap();
    let ctx = session_over(memory, SessionConfig::new().with_target_partitions(3));
    let (sums, head, plan) = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/grid.zarr'",
        )
        .await;
        let sums = query(&ctx, "SELECT sum(grid), min(grid), max(grid) FROM t").await;
        let head = query(&ctx, "SELECT grid FROM t LIMIT 7").await;
        let plan = query(&ctx, "EXPLAIN ANALYZE SELECT sum(grid) FROM t").await;
        let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        (sums, head, plan)
    });
    let got: Vec<i64> = (0..3)
        .map(|i| sums[0].column(i).as_primitive::<Int64Type>().value(0))
        .collect();
    assert_eq!(got, [(0..60).sum::<i64>(), 0, 59]);
    let head: Vec<i64> = head
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(head, (0..7).collect::<Vec<i64>>());
    // 4 slabs (chunk rows of 3) of 2 chunks each: 8 requests over the partitions.
    assert_eq!(scan_metric(&plan, "requests"), 8, "{plan}");
}

/// A reader over an object store (the async driver) asked again after its end
/// (pyarrow does, through the C stream) stays ended: its stream must not be
/// polled after it finished (that panicked, and aborted Python through FFI).
#[test]
fn a_remote_reader_asked_again_after_its_end_stays_ended() {
    use zarrow::Store;
    use zarrow::read::{ReadOptions, TableOptions, open_table};

    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_into(memory.clone());
    let backend: Arc<dyn Store> = Arc::new(ObjectStoreBackend::over(
        memory,
        "t.zarr",
        "memory:///t.zarr",
    ));
    assert!(backend.remote().is_some(), "not the async driver");
    let mut reader = open_table(
        backend,
        "t",
        ReadOptions::default(),
        &TableOptions::default(),
        &zarrow::ExecutionContext::default(),
    )
    .unwrap();
    let rows: usize = reader.by_ref().map(|b| b.unwrap().num_rows()).sum();
    assert!(rows > 0);
    for _ in 0..3 {
        assert!(reader.next().is_none());
    }
}

/// A memory pool without a limit that follows what the scans' kept buffers hold.
#[derive(Debug, Default)]
struct Watched {
    inner: datafusion::execution::memory_pool::UnboundedMemoryPool,
    kept: AtomicUsize,
    kept_peak: AtomicUsize,
}

impl Watched {
    fn follow(&self, reservation: &MemoryReservation, grown: isize) {
        if reservation.consumer().name().contains("kept buffers") {
            let now = if grown >= 0 {
                self.kept.fetch_add(grown.unsigned_abs(), Ordering::SeqCst) + grown.unsigned_abs()
            } else {
                self.kept.fetch_sub(grown.unsigned_abs(), Ordering::SeqCst) - grown.unsigned_abs()
            };
            self.kept_peak.fetch_max(now, Ordering::SeqCst);
        }
    }
}

impl fmt::Display for Watched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "watched({} bytes)", self.reserved())
    }
}

impl MemoryPool for Watched {
    fn name(&self) -> &str {
        "watched"
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.follow(reservation, additional as isize);
        self.inner.grow(reservation, additional);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.follow(reservation, -(shrink as isize));
        self.inner.shrink(reservation, shrink);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> DfResult<()> {
        self.inner.try_grow(reservation, additional)?;
        self.follow(reservation, additional as isize);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }
}

#[test]
fn buffers_a_scan_keeps_for_its_next_chunks_are_in_the_pool_and_gone_with_it() {
    // 2M int64 rows (the default compressor: blosc, which states its size) in
    // chunks of 250,000: 2 MB decoded a chunk, worth keeping for the next.
    const ROWS: i64 = 2_000_000;
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend: Arc<dyn zarrow::Store> = Arc::new(ObjectStoreBackend::over(
        memory.clone(),
        "t.zarr",
        "memory:///t.zarr",
    ));
    let values: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(
        (0..ROWS).map(|i| i * 7 % 1_000_003),
    ));
    let options = WriteOptions {
        chunk_len: Some(250_000),
        ..WriteOptions::default()
    };
    write_array(backend.clone(), "v", &values, options).unwrap();
    write_group_metadata(backend.as_ref(), "", &["v".to_string()], 3).unwrap();
    let pool = Arc::new(Watched::default());
    let ctx = session_with(
        memory,
        SessionConfig::new().with_target_partitions(1),
        RuntimeEnvBuilder::new().with_memory_pool(pool.clone()),
    );
    let got = runtime().block_on(async {
        query(
            &ctx,
            "CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION 's3://mem/t.zarr'",
        )
        .await;
        query(&ctx, "SELECT sum(v) AS s, count(*) AS n FROM t").await
    });
    let want: i64 = (0..ROWS).map(|i| i * 7 % 1_000_003).sum();
    assert_eq!(got[0].column(0).as_primitive::<Int64Type>().value(0), want);
    assert_eq!(got[0].column(1).as_primitive::<Int64Type>().value(0), ROWS);
    // Buffers were kept, and the pool was told of them...
    let peak = pool.kept_peak.load(Ordering::SeqCst);
    assert!(peak >= 2 << 20, "kept at most {peak} bytes");
    // ... and given back with the scan: nothing stays reserved.
    assert_eq!(pool.kept.load(Ordering::SeqCst), 0);
    assert_eq!(pool.reserved(), 0);
}

#[test]
fn batches_held_while_a_local_scan_reuses_its_buffers_keep_their_values() {
    // Uncompressed int64 chunks of 250,000 rows: 2 MB files, read into the
    // scan's kept buffers, which the arrays then hold (the bytes codec copies
    // nothing).
    const ROWS: i64 = 3_000_000;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn zarrow::Store> = Arc::new(zarrow::LocalStore::new(dir.path()));
    let values: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(
        (0..ROWS).map(|i| i * 5 - 3),
    ));
    let options = WriteOptions {
        chunk_len: Some(250_000),
        compressor: zarrow::write::Compressor::None,
        ..WriteOptions::default()
    };
    write_array(store.clone(), "v", &values, options).unwrap();
    write_group_metadata(store.as_ref(), "", &["v".to_string()], 3).unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    zarrow::datafusion::register(&ctx);
    let location = dir.path().display();
    let held = runtime().block_on(async {
        query(
            &ctx,
            &format!("CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{location}'"),
        )
        .await;
        let frame = ctx.sql("SELECT v FROM t").await.unwrap();
        let mut stream = frame.execute_stream().await.unwrap();
        let (mut held, mut start, mut i) = (Vec::new(), 0, 0);
        while let Some(batch) = stream.next().await {
            // Every other batch dropped at once: its buffers go back and are
            // read into while the others are held.
            let batch = batch.unwrap();
            let rows = batch.num_rows() as i64;
            if i % 2 == 0 {
                held.push((start, batch));
            }
            start += rows;
            i += 1;
        }
        assert_eq!(start, ROWS);
        held
    });
    assert!(held.len() >= 6, "{} batches held", held.len());
    for (start, batch) in &held {
        let column = batch.column(0).as_primitive::<Int64Type>();
        let want = (*start..start + column.len() as i64).map(|i| i * 5 - 3);
        assert!(
            column.values().iter().copied().eq(want),
            "rows from {start}"
        );
    }
}
