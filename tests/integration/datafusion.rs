//! Zarr as a DataFusion table: what a scan reads (counted by an observing store)
//! and what queries return. Expected values are the rows the test wrote, or
//! zarr-python's reading of the test stores (testdata/expected).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use datafusion::catalog::TableProvider as _;
use datafusion::common::stats::Precision;
use datafusion::physical_plan::{ExecutionPlan, collect, collect_partitioned};
use datafusion::prelude::{SessionConfig, SessionContext};
use zarrow::datafusion::{ZarrPhysicalCodec, ZarrTable, ZarrTableOptions};
use zarrow::write::{WriteOptions, write_array, write_group_metadata};
use zarrow::{LocalStore, MemoryStore, Store};

use crate::common::{Observed, column, grouped, obs_expected, read_ipc, strings, testdata, values};

const ROWS: usize = 10_007;
const KINDS: [&str; 7] = ["alpha", "beta", "gamma", "delta", "é-epsilon", "zeta", ""];

/// The input rows: `id` = 3i - 7 (increasing), `name` = "n{i}", `kind` cycles
/// through KINDS.
pub(crate) fn rows() -> (Vec<i64>, Vec<String>, Vec<&'static str>) {
    let ids = (0..ROWS as i64).map(|i| i * 3 - 7).collect();
    let names = (0..ROWS).map(|i| format!("n{i}")).collect();
    let kinds = (0..ROWS)
        .map(|i| KINDS[(i * 5 + i / 3) % KINDS.len()])
        .collect();
    (ids, names, kinds)
}

/// The table written at the root of `store`: `id` in chunks of 1000, `name` in
/// chunks of 300, `kind` in shards of 2000 (inner chunks of 250).
pub(crate) fn write_table(store: Arc<dyn Store>) {
    let (ids, names, kinds) = rows();
    let options = WriteOptions::default();
    let id: ArrayRef = Arc::new(Int64Array::from(ids));
    let name: ArrayRef = Arc::new(StringArray::from(names));
    let kind: ArrayRef = Arc::new(StringArray::from(kinds));
    write_array(
        store.clone(),
        "id",
        &id,
        WriteOptions {
            chunk_len: Some(1000),
            ..options.clone()
        },
    )
    .unwrap();
    write_array(
        store.clone(),
        "name",
        &name,
        WriteOptions {
            chunk_len: Some(300),
            ..options.clone()
        },
    )
    .unwrap();
    let sharded = WriteOptions {
        chunk_len: Some(250),
        shard_len: Some(2000),
        ..options
    };
    write_array(store.clone(), "kind", &kind, sharded).unwrap();
    let columns = ["id", "name", "kind"].map(String::from);
    write_group_metadata(store.as_ref(), "", &columns, 3).unwrap();
}

/// `columns` as a Zarr table in memory (chunks of `chunk_len`), and as the
/// same rows in one batch (for a DataFusion `MemTable` to answer alike).
fn zarr_and_memory(columns: &[(&str, ArrayRef)], chunk_len: usize) -> (ZarrTable, RecordBatch) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let options = WriteOptions {
        chunk_len: Some(chunk_len),
        ..WriteOptions::default()
    };
    for (name, values) in columns {
        write_array(store.clone(), name, values, options.clone()).unwrap();
    }
    let names: Vec<String> = columns.iter().map(|(n, _)| n.to_string()).collect();
    write_group_metadata(store.as_ref(), "", &names, 3).unwrap();
    let location = zarrow::Location::supplied("t");
    let table = ZarrTable::from_store(store, &location, ZarrTableOptions::default()).unwrap();
    let memory = RecordBatch::try_from_iter(columns.iter().map(|(n, v)| (*n, v.clone()))).unwrap();
    (table, memory)
}

/// The table at the local `path`.
fn open_table(path: &std::path::Path, options: ZarrTableOptions) -> ZarrTable {
    let location = zarrow::Location::Path(path.to_path_buf());
    ZarrTable::open(&location, options, &zarrow::Stores::default()).unwrap()
}

/// The table in memory behind an observing store, its metadata already read.
fn observed_table(options: ZarrTableOptions) -> (Arc<Observed>, ZarrTable) {
    let memory = Arc::new(MemoryStore::new());
    write_table(memory.clone());
    let store = Observed::new(memory);
    let location = zarrow::Location::supplied("t");
    let table = ZarrTable::from_store(store.clone(), &location, options).unwrap();
    store.take();
    (store, table)
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub(crate) fn context(partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    zarrow::datafusion::register(&ctx);
    ctx
}

pub(crate) async fn query(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The chunk keys read (not metadata), by array.
fn chunk_reads(store: &Observed) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, _) in store.take() {
        if let Some((array, rest)) = key.split_once("/c/") {
            out.entry(array.to_string())
                .or_default()
                .push(rest.to_string());
        }
    }
    out
}

fn utf8(array: &ArrayRef) -> ArrayRef {
    datafusion::arrow::compute::cast(array, &DataType::Utf8).unwrap()
}

#[test]
fn count_star_reads_no_chunk() {
    let (store, table) = observed_table(ZarrTableOptions::default());
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let batches = query(&ctx, "SELECT count(*) AS n FROM t").await;
        let n = column(&batches, "n");
        assert_eq!(n.as_primitive::<Int64Type>().value(0), ROWS as i64);
    });
    assert_eq!(chunk_reads(&store), BTreeMap::new());
}

#[test]
fn a_projection_reads_only_its_arrays() {
    let (store, table) = observed_table(ZarrTableOptions::default());
    let (_, names, _) = rows();
    let rt = runtime();
    let batches = rt.block_on(async {
        let ctx = context(1);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(&ctx, "SELECT name FROM t").await
    });
    assert_eq!(strings(&column(&batches, "name")), names);
    let reads = chunk_reads(&store);
    assert_eq!(reads.keys().collect::<Vec<_>>(), ["name"]);
    assert_eq!(reads["name"].len(), ROWS.div_ceil(300));
}

#[test]
fn limit_reads_one_chunk_per_column() {
    let (store, table) = observed_table(ZarrTableOptions::default());
    let (ids, names, kinds) = rows();
    let rt = runtime();
    let batches = rt.block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(&ctx, "SELECT id, name, kind FROM t LIMIT 10").await
    });
    assert_eq!(
        column(&batches, "id").as_primitive::<Int64Type>().values(),
        &ids[..10]
    );
    assert_eq!(strings(&column(&batches, "name")), names[..10]);
    assert_eq!(strings(&column(&batches, "kind")), kinds[..10]);
    let reads = chunk_reads(&store);
    for array in ["id", "name", "kind"] {
        let mut keys = reads[array].clone();
        keys.dedup();
        assert_eq!(keys, ["0"], "{array}: {:?}", reads[array]);
    }
}

#[test]
fn partitions_split_on_chunk_boundaries_in_row_order() {
    let (_, table) = observed_table(ZarrTableOptions::default());
    let (ids, _, _) = rows();
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = ctx
            .sql("SELECT id FROM t")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let ranges: Vec<_> = find_scan(&plan)
            .expect("a Zarr scan in the plan")
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(ranges.len(), 4);
        // Aligned on the longest chunks (kind's shards of 2000 rows).
        for range in &ranges[1..] {
            assert_eq!(range.start % 2000, 0, "{range:?}");
        }
        let parts = collect_partitioned(plan, ctx.task_ctx()).await.unwrap();
        let mut all = Vec::new();
        for (p, batches) in parts.iter().enumerate() {
            let got: Vec<i64> = batches
                .iter()
                .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
                .collect();
            let range = &ranges[p];
            assert_eq!(got, ids[range.start as usize..range.end as usize]);
            all.extend(got);
        }
        assert_eq!(all, ids);
    });
}

/// A scan's batches have at most the session's batch size of rows (as
/// DataFusion's Parquet scan gives them), and none spans two chunks of a
/// column whose chunks are that long or longer (`id`'s 1000 rows, `kind`'s
/// 2000-row shards): its rows are a slice of one decoded chunk.
#[test]
fn batches_follow_the_session_batch_size_within_chunks() {
    let (_, table) = observed_table(ZarrTableOptions::default());
    let (ids, _, _) = rows();
    let rt = runtime();
    rt.block_on(async {
        let config = SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(700);
        let ctx = SessionContext::new_with_config(config);
        zarrow::datafusion::register(&ctx);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let batches = query(&ctx, "SELECT id, kind FROM t").await;
        let mut start = 0usize;
        for batch in &batches {
            let n = batch.num_rows();
            assert!(n <= 700, "a batch of {n} rows");
            assert_eq!(
                start / 1000,
                (start + n - 1) / 1000,
                "rows {start}..{}",
                start + n
            );
            start += n;
        }
        let got: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(got, ids);
        // Each 1000 rows cut into 700 + 300, and the last 7.
        assert_eq!(batches.len(), 2 * (ROWS / 1000) + 1);
    });
}

/// The row ranges of each partition of the Zarr scan in `plan`: a
/// `DataSourceExec` of `file_type=zarr`, whose "files" are row ranges.
pub(crate) fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<Vec<std::ops::Range<u64>>>> {
    use datafusion::datasource::physical_plan::FileScanConfig;
    use datafusion::datasource::source::DataSourceExec;
    let config = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|exec| exec.data_source().downcast_ref::<FileScanConfig>())
        .filter(|config| config.file_source().file_type() == "zarr");
    let Some(config) = config else {
        return plan.children().into_iter().find_map(find_scan);
    };
    let groups = config
        .file_groups
        .iter()
        .map(|group| {
            group
                .files()
                .iter()
                .map(|f| {
                    let r = f.range.as_ref().expect("a row range");
                    r.start as u64..r.end as u64
                })
                .collect()
        })
        .collect();
    Some(groups)
}

/// A session whose config carries an `ExecutionContext` that decodes inline
/// (a host whose own threads are the parallelism: DuckDB's, each polling a
/// scan's partition) reads each partition's chunks on the thread that polls
/// it; by default they are read (and decoded) on rayon. The answers are the
/// same.
#[test]
fn a_session_that_decodes_inline_reads_on_the_polling_thread() {
    let sql = "SELECT id, kind FROM t WHERE id % 2 = 0";
    let run = |decode: Option<zarrow::Decode>| {
        let (store, table) = observed_table(ZarrTableOptions::default());
        let mut config = SessionConfig::new().with_target_partitions(3);
        // The scan's partitions are the plan's, as a host polls them.
        config
            .options_mut()
            .optimizer
            .enable_round_robin_repartition = false;
        if let Some(decode) = decode {
            let context = zarrow::ExecutionContext::default().with_decode(decode);
            config = config.with_extension(Arc::new(context));
        }
        let ctx = SessionContext::new_with_config(config);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let rt = runtime();
        let plan = rt.block_on(async {
            let frame = ctx.sql(sql).await.unwrap();
            frame.create_physical_plan().await.unwrap()
        });
        let handle = rt.handle().clone();
        let partitions = plan.properties().partitioning.partition_count();
        assert_eq!(partitions, 3);
        let batches: Vec<RecordBatch> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..partitions)
                .map(|p| {
                    let (plan, task, handle) = (plan.clone(), ctx.task_ctx(), handle.clone());
                    std::thread::Builder::new()
                        .name(format!("host-{p}"))
                        .spawn_scoped(s, move || {
                            let stream = plan.execute(p, task).unwrap();
                            handle.block_on(datafusion::physical_plan::common::collect(stream))
                        })
                        .unwrap()
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap().unwrap())
                .collect()
        });
        let id = column(&batches, "id");
        let mut rows: Vec<(i64, String)> = id
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .copied()
            .zip(strings(&utf8(&column(&batches, "kind"))))
            .collect();
        rows.sort();
        (rows, store.take_chunk_threads())
    };
    let (inline, inline_threads) = run(Some(zarrow::Decode::Inline));
    let (default, default_threads) = run(None);
    let (ids, _, kinds) = rows();
    let mut expected: Vec<(i64, String)> = ids
        .iter()
        .zip(&kinds)
        .filter(|(id, _)| *id % 2 == 0)
        .map(|(id, kind)| (*id, kind.to_string()))
        .collect();
    expected.sort();
    assert_eq!(inline, expected);
    assert_eq!(default, expected);
    assert!(!inline_threads.is_empty());
    assert!(
        inline_threads.iter().all(|t| t.starts_with("host-")),
        "{inline_threads:?}"
    );
    assert!(
        !default_threads.iter().any(|t| t.starts_with("host-")),
        "{default_threads:?}"
    );
}

#[test]
fn group_by_and_filter_match_the_input() {
    let (_, table) = observed_table(ZarrTableOptions::default());
    let (ids, _, kinds) = rows();
    let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (id, kind) in ids.iter().zip(&kinds) {
        if id % 2 == 0 {
            let e = expected.entry(kind.to_string()).or_default();
            e.0 += 1;
            e.1 += id;
        }
    }
    let rt = runtime();
    let batches = rt.block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(
            &ctx,
            "SELECT kind, count(*) AS n, sum(id) AS s FROM t WHERE id % 2 = 0 GROUP BY kind ORDER BY kind",
        )
        .await
    });
    let got = grouped(&batches);
    assert_eq!(got, expected);
}

#[test]
fn a_filter_on_a_sorted_column_reads_only_the_matching_chunks() {
    let mut options = ZarrTableOptions::default();
    options.sorted = vec!["id".into()];
    let (store, table) = observed_table(options);
    let (ids, names, _) = rows();
    let expected: Vec<String> = ids
        .iter()
        .zip(&names)
        .filter(|(id, _)| (3000..=3300).contains(*id))
        .map(|(_, n)| n.clone())
        .collect();
    let rt = runtime();
    let batches = rt.block_on(async {
        let ctx = context(2);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(
            &ctx,
            "SELECT name FROM t WHERE id >= 3000 AND id <= 3300 ORDER BY name",
        )
        .await
    });
    let mut expected = expected;
    expected.sort();
    assert_eq!(strings(&column(&batches, "name")), expected);
    // Rows 1003..=1102: name's chunks 3 (900..1200) and 3 only; id is read
    // whole once to find them, then its chunk 1 again.
    let reads = chunk_reads(&store);
    let mut name_chunks = reads["name"].clone();
    name_chunks.sort();
    name_chunks.dedup();
    assert_eq!(name_chunks, ["3"]);
}

/// A column declared sorted is sorted within each partition (its rows in
/// order): `ORDER BY` it merges the partitions, no sort; undeclared, it sorts.
/// The answer is the rows in order either way.
#[test]
fn a_declared_sorted_column_needs_no_sort() {
    let (ids, _, _) = rows();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort_unstable();
    for declared in [true, false] {
        let mut options = ZarrTableOptions::default();
        if declared {
            options.sorted = vec!["id".into()];
        }
        let (_, table) = observed_table(options);
        let rt = runtime();
        let (plan, batches) = rt.block_on(async {
            let ctx = context(3);
            ctx.register_table("t", Arc::new(table)).unwrap();
            let sql = "SELECT id FROM t ORDER BY id";
            let plan = query(&ctx, &format!("EXPLAIN {sql}")).await;
            let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
                .unwrap()
                .to_string();
            (plan, query(&ctx, sql).await)
        });
        assert_eq!(plan.contains("SortExec"), !declared, "{plan}");
        let got: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(got, sorted_ids);
    }
}

#[test]
fn create_external_table_takes_options_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.zarr");
    std::fs::create_dir(&path).unwrap();
    write_table(Arc::new(LocalStore::new(&path)));
    let location = path.display().to_string();
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(2);
        query(
            &ctx,
            &format!(
                "CREATE EXTERNAL TABLE t STORED AS ZARR WITH ORDER (id ASC) LOCATION '{location}' \
                 OPTIONS ('string_type' 'utf8-view', 'columns' 'name,id')"
            ),
        )
        .await;
        let provider = ctx.table_provider("t").await.unwrap();
        let table = provider.downcast_ref::<ZarrTable>().unwrap();
        assert_eq!(table.sorted_columns(), ["id"]);
        let schema = provider.schema();
        let fields: Vec<_> = schema
            .fields()
            .iter()
            .map(|f| (f.name().as_str(), f.data_type().clone()))
            .collect();
        assert_eq!(
            fields,
            [("name", DataType::Utf8View), ("id", DataType::Int64)]
        );
        let batches = query(&ctx, "SELECT name FROM t WHERE id = 20").await;
        assert_eq!(strings(&column(&batches, "name")), ["n9"]);

        for (options, message) in [
            ("('colour' 'red')", "unknown ZARR table option"),
            ("('string_type' 'utf16')", "string_type"),
            ("('columns' 'nope')", "no column named \"nope\""),
            ("('categorical_values' 'maybe')", "categorical_values"),
        ] {
            let sql = format!(
                "CREATE EXTERNAL TABLE bad STORED AS ZARR LOCATION '{location}' OPTIONS {options}"
            );
            let err = ctx.sql(&sql).await.err().unwrap_or_else(|| panic!("{sql}"));
            assert!(err.to_string().contains(message), "{sql}: {err}");
        }
        let sql = "CREATE EXTERNAL TABLE bad STORED AS ZARR LOCATION '/no/such/store'";
        let Err(err) = ctx.sql(sql).await else {
            panic!("a missing store opened");
        };
        assert!(err.to_string().contains("/no/such/store"), "{err}");
    });
}

#[test]
fn categorical_values_are_anndatas_values() {
    // anndata wrote the store; the expected file is anndata's read of it, as
    // pyarrow converted it (testdata/gen/conventions.py).
    let conventions = testdata().join("conventions");
    let location = conventions.join("stores/anndata_v3.zarr/obs");
    let expected = read_ipc(&conventions.join("expected/anndata_v3__obs.arrow"));
    let want: Vec<Option<String>> = expected
        .iter()
        .flat_map(|b| {
            let column = utf8(b.column_by_name("cell_type").unwrap());
            let column = column.as_string::<i32>().clone();
            (0..column.len())
                .map(|i| column.is_valid(i).then(|| column.value(i).to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    let rt = runtime();
    rt.block_on(async {
        // The default is the values as views of the categories, as DataFusion
        // reads a dictionary-encoded Parquet column; a string type chosen is
        // kept; `false` keeps the dictionary.
        for (options, want_type) in [
            ("", DataType::Utf8View),
            (
                "OPTIONS ('categorical_values' 'true', 'string_type' 'utf8-view')",
                DataType::Utf8View,
            ),
            ("OPTIONS ('string_type' 'large-utf8')", DataType::LargeUtf8),
            (
                "OPTIONS ('categorical_values' 'false')",
                DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            ),
        ] {
            // One partition: rows in row order.
            let ctx = context(1);
            query(
                &ctx,
                &format!(
                    "CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION '{}' {options}",
                    location.display()
                ),
            )
            .await;
            let provider = ctx.table_provider("obs").await.unwrap();
            let schema = provider.schema();
            let field = schema.field_with_name("cell_type").unwrap();
            assert_eq!(field.data_type(), &want_type, "{options}");
            let batches = query(&ctx, "SELECT cell_type FROM obs").await;
            let got: Vec<Option<String>> = batches
                .iter()
                .flat_map(|b| {
                    let column = utf8(b.column(0));
                    let column = column.as_string::<i32>().clone();
                    (0..column.len())
                        .map(|i| column.is_valid(i).then(|| column.value(i).to_string()))
                        .collect::<Vec<_>>()
                })
                .collect();
            assert_eq!(got, want, "{options}");
        }
    });
}

/// `ZarrTable::categories`: each anndata categorical's categories, in the
/// order anndata wrote them (strings and integers alike), and nothing for any
/// other column.
#[test]
fn categories_are_anndatas_categories() {
    let conventions = testdata().join("conventions");
    let location = conventions.join("stores/anndata_v3.zarr/obs");
    let expected = read_ipc(&conventions.join("expected/anndata_v3__obs.arrow"));
    let want: Vec<(String, ArrayRef)> = expected[0]
        .schema()
        .fields()
        .iter()
        .filter(|f| matches!(f.data_type(), DataType::Dictionary(..)))
        .map(|f| {
            let column = expected[0].column_by_name(f.name()).unwrap();
            (
                f.name().clone(),
                column.as_any_dictionary().values().clone(),
            )
        })
        .collect();
    assert_eq!(want.len(), 3);
    let location = zarrow::Location::parse(location.to_str().unwrap()).unwrap();
    for values in [true, false] {
        let mut options = ZarrTableOptions::default();
        options.read.categorical_values = values;
        let table = ZarrTable::open(&location, options, &zarrow::Stores::default()).unwrap();
        let got = table.categories().unwrap();
        let names: Vec<_> = got.iter().map(|(n, _)| n.clone()).collect();
        let want_names: Vec<_> = want.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, want_names);
        for ((name, got), (_, want)) in got.iter().zip(&want) {
            let got = arrow_cast::cast(got, want.data_type()).unwrap();
            assert_eq!(&got, want, "{name}");
        }
    }
}

#[test]
fn every_string_type_answers_alike() {
    let (_, names, _) = rows();
    let expected = names.iter().filter(|n| n.starts_with("n1")).count() as i64;
    let rt = runtime();
    for string_type in ["utf8", "large-utf8", "utf8-view"] {
        let mut options = ZarrTableOptions::default();
        options.read.string_type = Some(string_type.parse().unwrap());
        let (_, table) = observed_table(options);
        let batches = rt.block_on(async {
            let ctx = context(2);
            ctx.register_table("t", Arc::new(table)).unwrap();
            query(
                &ctx,
                "SELECT count(*) AS n, max(name) AS m FROM t WHERE name LIKE 'n1%'",
            )
            .await
        });
        let n = column(&batches, "n").as_primitive::<Int64Type>().value(0);
        assert_eq!(n, expected, "{string_type}");
        let max = names.iter().filter(|n| n.starts_with("n1")).max().unwrap();
        assert_eq!(
            strings(&column(&batches, "m")),
            std::slice::from_ref(max),
            "{string_type}"
        );
    }
}

#[test]
fn obs_group_by_matches_zarr_python() {
    let location = testdata().join("stores/obs.zarr").display().to_string();
    let rt = runtime();
    let batches = rt.block_on(async {
        let ctx = context(2);
        query(
            &ctx,
            &format!("CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION '{location}'"),
        )
        .await;
        query(
            &ctx,
            "SELECT cell_type, count(*) AS n, sum(n_genes) AS s FROM obs \
             WHERE total_counts > 100.5 GROUP BY cell_type",
        )
        .await
    });
    assert_eq!(grouped(&batches), obs_expected(100.5));
}

/// An N-d array is one flattened column; LIMIT ends inside a slab.
#[test]
fn an_nd_array_is_flattened() {
    let expected = read_ipc(&testdata().join("expected/v2_string_2d.arrow"));
    let want = values(column(&expected, "v2_string_2d").as_ref());
    let location = testdata().join("stores/v2_string_2d.zarr");
    let table = open_table(&location, ZarrTableOptions::default());
    let statistics = table.statistics().expect("the table's statistics");
    assert_eq!(statistics.num_rows, Precision::Exact(want.len()));
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(3);
        ctx.register_table("t", Arc::new(table)).unwrap();
        // Partitions in order are the rows in order.
        let plan = ctx
            .sql("SELECT * FROM t")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        assert_eq!(find_scan(&plan).unwrap().len(), 3);
        let parts = collect_partitioned(plan, ctx.task_ctx()).await.unwrap();
        let all: Vec<RecordBatch> = parts.into_iter().flatten().collect();
        assert_eq!(values(column(&all, "v2_string_2d").as_ref()), want);
        let some = query(&ctx, "SELECT * FROM t LIMIT 4").await;
        assert_eq!(values(column(&some, "v2_string_2d").as_ref()), want[..4]);
    });
}

/// A physical plan with a Zarr scan survives datafusion-proto: the decoded plan
/// opens the store again and returns the same rows.
#[test]
fn the_scan_travels_through_datafusion_proto() {
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.zarr");
    std::fs::create_dir(&path).unwrap();
    write_table(Arc::new(LocalStore::new(&path)));
    let (ids, _, kinds) = rows();
    let mut options = ZarrTableOptions::default();
    options.sorted = vec!["id".into()];
    let table = open_table(&path, options);
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(3);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = ctx
            .sql("SELECT kind, id FROM t WHERE id < 100 ORDER BY id")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let codec = ZarrPhysicalCodec::default();
        let bytes = physical_plan_to_bytes_with_extension_codec(plan.clone(), &codec).unwrap();
        // A context that knows no table: everything comes from the bytes.
        let other = SessionContext::new();
        let decoded =
            physical_plan_from_bytes_with_extension_codec(&bytes, &other.task_ctx(), &codec)
                .unwrap();
        assert!(find_scan(&decoded).is_some());
        let batches = collect(decoded, other.task_ctx()).await.unwrap();
        let want: Vec<(i64, String)> = ids
            .iter()
            .zip(&kinds)
            .filter(|(id, _)| **id < 100)
            .map(|(id, k)| (*id, k.to_string()))
            .collect();
        let got_ids = column(&batches, "id");
        let got: Vec<(i64, String)> = got_ids
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .copied()
            .zip(strings(&column(&batches, "kind")))
            .collect();
        assert_eq!(got, want);
    });
}

#[test]
fn the_table_names_what_it_leaves_out() {
    let table = open_table(
        &testdata().join("stores/obs.zarr"),
        ZarrTableOptions::default(),
    );
    let skipped = table.skipped();
    let skipped: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
    assert!(skipped.contains(&"X_umap"), "{skipped:?}");
    assert!(skipped.contains(&"uns"), "{skipped:?}");
}

/// A filter on a string column, and on an anndata categorical (evaluated
/// over its codes, once per category, or, where DataFusion cannot over a
/// dictionary, over its values): the rows are those a full read, filtered
/// here, gives.
#[test]
fn filters_on_a_categorical_answer_as_its_values() {
    // obs.zarr's `cell_type` is a string array; anndata_v3's a categorical
    // (with nulls) of B, NK, T and mono.
    let stores = [
        (
            "stores/obs.zarr",
            "n_genes",
            ["B cell", "NK cell", "T cell"],
        ),
        (
            "conventions/stores/anndata_v3.zarr/obs",
            "n_counts",
            ["B", "NK", "T"],
        ),
    ];
    for (store, number, [b, nk, t]) in stores {
        let path = testdata().join(store);
        let local = Arc::new(LocalStore::new(&path));
        let full: Vec<RecordBatch> = zarrow::ZarrGroup::open(local, "")
            .unwrap()
            .reader()
            .with_projection(["cell_type", number])
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let cell_types = column(&full, "cell_type");
        let cell_types = arrow_cast::cast(&cell_types, &DataType::Utf8).unwrap();
        let cell_types: Vec<Option<String>> = cell_types
            .as_string::<i32>()
            .iter()
            .map(|c| c.map(str::to_string))
            .collect();
        let ints = |batches: &[RecordBatch]| -> Vec<i64> {
            let c = column(batches, number);
            let c = arrow_cast::cast(&c, &DataType::Int64).unwrap();
            c.as_primitive::<Int64Type>().values().to_vec()
        };
        let numbers = ints(&full);
        let keep = |pick: &dyn Fn(usize, &str) -> bool| -> Vec<i64> {
            let mut v: Vec<i64> = (0..cell_types.len())
                .filter(|&i| cell_types[i].as_deref().is_some_and(|c| pick(i, c)))
                .map(|i| numbers[i])
                .collect();
            v.sort_unstable();
            v
        };
        let mut cases: Vec<(String, Vec<i64>)> = vec![
            (format!("cell_type = '{b}'"), keep(&|_, c| c == b)),
            (
                format!("cell_type IN ('{b}', '{nk}')"),
                keep(&|_, c| c == b || c == nk),
            ),
            (format!("cell_type <> '{b}'"), keep(&|_, c| c != b)),
            (
                format!("lower(cell_type) = '{}'", b.to_lowercase()),
                keep(&|_, c| c.to_lowercase() == b.to_lowercase()),
            ),
            (
                format!("cell_type LIKE '%{t}'"),
                keep(&|_, c| c.ends_with(t)),
            ),
        ];
        // One conjunct over the categorical alone, one over another column;
        // and one over both.
        let median = {
            let mut sorted = numbers.clone();
            sorted.sort_unstable();
            sorted[sorted.len() / 2]
        };
        cases.push((
            format!("cell_type = '{b}' AND {number} > {median}"),
            keep(&|i, c| c == b && numbers[i] > median),
        ));
        let mut either: Vec<i64> = (0..cell_types.len())
            .filter(|&i| cell_types[i].as_deref() == Some(b) || numbers[i] > median)
            .map(|i| numbers[i])
            .collect();
        either.sort_unstable();
        cases.push((format!("cell_type = '{b}' OR {number} > {median}"), either));
        let location = zarrow::Location::Path(path.clone());
        let table = ZarrTable::open(
            &location,
            ZarrTableOptions::default(),
            &zarrow::Stores::default(),
        )
        .unwrap();
        runtime().block_on(async {
            let ctx = context(2);
            ctx.register_table("t", Arc::new(table)).unwrap();
            for (filter, want) in cases {
                assert!(!want.is_empty(), "{store}: {filter}");
                let batches = query(&ctx, &format!("SELECT {number} FROM t WHERE {filter}")).await;
                let mut got = ints(&batches);
                got.sort_unstable();
                assert_eq!(got, want, "{store}: {filter}");
            }
        });
    }
}

/// A categorical with nulls: a filter over it alone is decided once per
/// category and once for a null, and a row without a category takes the
/// null's answer (`IS NULL`, `coalesce`), as over its values.
#[test]
fn filters_on_a_categorical_with_nulls_answer_as_its_values() {
    const N: usize = 3000;
    let cells: Vec<Option<&str>> = (0..N)
        .map(|i| match i % 7 {
            0 => None,
            k if k % 2 == 0 => Some("a"),
            _ => Some("b"),
        })
        .collect();
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new_dictionary("c", DataType::Int8, DataType::Utf8, true),
        arrow_schema::Field::new("v", DataType::Int64, false),
    ]));
    let dictionary: arrow_array::DictionaryArray<arrow_array::types::Int8Type> =
        cells.iter().copied().collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(dictionary),
            Arc::new(Int64Array::from_iter_values(0..N as i64)),
        ],
    )
    .unwrap();
    let memory = Arc::new(MemoryStore::new());
    let options = WriteOptions {
        chunk_len: Some(500),
        layout: zarrow::write::Layout::AnnData,
        nulls: zarrow::write::NullPolicy::Fill,
        ..WriteOptions::default()
    };
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch)], schema);
    zarrow::write::write_batches(reader, memory.clone(), "", options).unwrap();
    let location = zarrow::Location::supplied("t");
    let table = ZarrTable::from_store(memory, &location, ZarrTableOptions::default()).unwrap();
    let keep = |pick: &dyn Fn(Option<&str>) -> bool| -> Vec<i64> {
        (0..N)
            .filter(|&i| pick(cells[i]))
            .map(|i| i as i64)
            .collect()
    };
    let cases: Vec<(&str, Vec<i64>)> = vec![
        ("c IS NULL", keep(&|c| c.is_none())),
        ("c IS NOT NULL", keep(&|c| c.is_some())),
        ("c <> 'a'", keep(&|c| c == Some("b"))),
        ("c = 'a' OR c IS NULL", keep(&|c| c != Some("b"))),
        ("coalesce(c, 'none') = 'none'", keep(&|c| c.is_none())),
        ("c = 'b' AND v % 2 = 0", {
            let b = keep(&|c| c == Some("b"));
            b.into_iter().filter(|v| v % 2 == 0).collect()
        }),
    ];
    runtime().block_on(async {
        let ctx = context(2);
        ctx.register_table("t", Arc::new(table)).unwrap();
        for (filter, want) in cases {
            assert!(!want.is_empty(), "{filter}");
            let batches = query(&ctx, &format!("SELECT v FROM t WHERE {filter}")).await;
            let mut got: Vec<i64> = batches
                .iter()
                .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
                .collect();
            got.sort_unstable();
            assert_eq!(got, want, "{filter}");
        }
    });
}

/// The distinct chunks of `array` read.
fn distinct(reads: &BTreeMap<String, Vec<String>>, array: &str) -> Vec<u64> {
    let mut chunks: Vec<u64> = reads
        .get(array)
        .into_iter()
        .flatten()
        .map(|c| c.parse().unwrap())
        .collect();
    chunks.sort_unstable();
    chunks.dedup();
    chunks
}

/// DataFusion's dynamic filters reach the scan: a TopK reads the chunks whose
/// statistics hold its top rows first (`id` undeclared: the order is the
/// statistics'), and its threshold, tightened by them, prunes the rest; the
/// other columns are read only where the top rows are.
#[test]
fn order_by_limit_reads_the_chunks_of_its_top_rows() {
    let (ids, names, _) = rows();
    let mut by_id: Vec<(i64, String)> = ids.into_iter().zip(names).collect();
    for (descending, partitions) in [(false, 1), (true, 1), (false, 2), (true, 2)] {
        let (store, table) = observed_table(ZarrTableOptions::default());
        let order = if descending { "DESC" } else { "ASC" };
        let sql = format!("SELECT id, name FROM t ORDER BY id {order} LIMIT 5");
        let batches = runtime().block_on(async {
            let ctx = context(partitions);
            ctx.register_table("t", Arc::new(table)).unwrap();
            query(&ctx, &sql).await
        });
        by_id.sort_by_key(|(id, _)| if descending { -*id } else { *id });
        let want: Vec<String> = by_id[..5].iter().map(|(_, n)| n.clone()).collect();
        assert_eq!(strings(&column(&batches, "name")), want, "{sql}");
        let reads = chunk_reads(&store);
        let id_chunks = distinct(&reads, "id");
        // 11 chunks of 1000 rows: at most 2 per partition.
        assert!(
            id_chunks.len() <= 2 * partitions,
            "{sql}, {partitions}: {id_chunks:?}"
        );
        let top = if descending { 10 } else { 0 };
        assert!(id_chunks.contains(&top), "{sql}: {id_chunks:?}");
        // `name` (chunks of 300) only inside the id chunks read.
        for chunk in distinct(&reads, "name") {
            let rows = chunk * 300..(chunk + 1) * 300;
            assert!(
                id_chunks
                    .iter()
                    .any(|c| rows.start < (c + 1) * 1000 && c * 1000 < rows.end),
                "{sql}: name chunk {chunk} outside {id_chunks:?}"
            );
        }
    }
}

/// A hash join's dynamic filter (the build side's keys) prunes the probe
/// side's chunks: a join with three ids reads no more chunks than the same
/// filter written as `IN`.
#[test]
fn a_join_reads_only_the_chunks_its_build_side_can_match() {
    let (ids, names, _) = rows();
    let wanted = [ids[10], ids[20], ids[5000]];
    let list = wanted.map(|i| i.to_string()).join(", ");
    let chunks_of = |sql: &str, join: bool| {
        let (store, table) = observed_table(ZarrTableOptions::default());
        let batches = runtime().block_on(async {
            let ctx = context(2);
            ctx.register_table("t", Arc::new(table)).unwrap();
            if join {
                let keys = RecordBatch::try_from_iter([(
                    "id",
                    Arc::new(Int64Array::from(wanted.to_vec())) as ArrayRef,
                )])
                .unwrap();
                ctx.register_batch("s", keys).unwrap();
            }
            query(&ctx, sql).await
        });
        let mut got = strings(&column(&batches, "name"));
        got.sort();
        (got, distinct(&chunk_reads(&store), "id"))
    };
    let (by_in, in_chunks) = chunks_of(&format!("SELECT name FROM t WHERE id IN ({list})"), false);
    let (by_join, join_chunks) = chunks_of("SELECT t.name FROM t JOIN s ON t.id = s.id", true);
    let mut want: Vec<String> = [10, 20, 5000].map(|i| names[i].clone()).to_vec();
    want.sort();
    assert_eq!(by_in, want);
    assert_eq!(by_join, want);
    assert_eq!(in_chunks, [0, 5]);
    assert!(
        join_chunks.len() <= in_chunks.len(),
        "{join_chunks:?} against IN's {in_chunks:?}"
    );
}

/// The float values the random TopK cases draw from: the orderings engines
/// disagree on (NaN, -0.0 and 0.0, infinities).
const TOPK_VALUES: [Option<f64>; 8] = [
    Some(f64::NAN),
    Some(-0.0),
    Some(0.0),
    Some(f64::INFINITY),
    Some(f64::NEG_INFINITY),
    Some(1.5),
    Some(-2.0),
    Some(7.0),
];

/// Dynamic filters never change an answer: `ORDER BY x ... LIMIT k` over a
/// Zarr table (its chunks pruned by the TopK's threshold as it tightens)
/// gives the values DataFusion gives over the same rows in memory, for
/// random floats and times with nulls (NaT), chunkings, orders and partitions.
#[test]
fn topk_over_zarr_answers_as_over_memory() {
    use arrow_array::Float64Array;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let rt = runtime();
    let mut runner = TestRunner::new(Config {
        cases: 96,
        ..Config::default()
    });
    let case = (
        proptest::collection::vec((0..TOPK_VALUES.len(), any::<Option<i8>>()), 1..300),
        1usize..40,
        1usize..12,
        any::<(bool, bool)>(),
        1usize..4,
    );
    runner
        .run(
            &case,
            |(rows, chunk_len, k, (descending, nulls_first), partitions)| {
                let x: ArrayRef = Arc::new(Float64Array::from(
                    rows.iter()
                        .map(|(i, _)| TOPK_VALUES[*i])
                        .collect::<Vec<_>>(),
                ));
                // A time's null is stored as NaT, and reads back as a null.
                let n: ArrayRef = Arc::new(arrow_array::TimestampNanosecondArray::from(
                    rows.iter()
                        .map(|(_, v)| v.map(i64::from))
                        .collect::<Vec<_>>(),
                ));
                let (table, memory) = zarr_and_memory(&[("x", x), ("n", n)], chunk_len);
                let order = format!(
                    "{} NULLS {}",
                    if descending { "DESC" } else { "ASC" },
                    if nulls_first { "FIRST" } else { "LAST" }
                );
                for column in ["x", "n"] {
                    let answer = |name: &str| {
                        format!("SELECT {column} FROM {name} ORDER BY {column} {order} LIMIT {k}")
                    };
                    let (got, want) = rt.block_on(async {
                        let ctx = context(partitions);
                        ctx.register_table("z", Arc::new(table.clone())).unwrap();
                        ctx.register_batch("m", memory.clone()).unwrap();
                        (
                            query(&ctx, &answer("z")).await,
                            query(&ctx, &answer("m")).await,
                        )
                    });
                    // Compared as the bits of each value (NaN's), nulls as None,
                    // the zeros as one: DataFusion 55's TopK orders by the total
                    // order (-0.0 < 0.0) but its own threshold filter compares
                    // as IEEE does (0.0 > -0.0 is false), so over batches that
                    // arrive apart (from any source) it may keep a -0.0 where
                    // 0.0 ranks above it.
                    let bits = |batches: &[RecordBatch]| -> Vec<Option<u64>> {
                        let c = column_of(batches, column);
                        if let Some(c) = c.as_primitive_opt::<arrow_array::types::Float64Type>() {
                            let zero = |v: f64| if v == 0.0 { 0.0 } else { v };
                            return c.iter().map(|v| v.map(|v| zero(v).to_bits())).collect();
                        }
                        let c = datafusion::arrow::compute::cast(&c, &DataType::Int64).unwrap();
                        let c = c.as_primitive::<Int64Type>();
                        c.iter().map(|v| v.map(|v| v as u64)).collect()
                    };
                    prop_assert_eq!(bits(&got), bits(&want), "{}", answer("z"));
                }
                Ok(())
            },
        )
        .unwrap();
}

/// `batches`' column `name`, concatenated.
fn column_of(batches: &[RecordBatch], name: &str) -> ArrayRef {
    let parts: Vec<ArrayRef> = batches
        .iter()
        .map(|b| b.column_by_name(name).unwrap().clone())
        .collect();
    let parts: Vec<&dyn Array> = parts.iter().map(AsRef::as_ref).collect();
    datafusion::arrow::compute::concat(&parts).unwrap()
}

/// `local` seen through an [`Observed`] store, as a supplied location and the
/// stores that resolve it.
fn observed_location(local: &Arc<dyn Store>) -> (Arc<Observed>, zarrow::Location, zarrow::Stores) {
    let observed = Observed::new(local.clone());
    let location = zarrow::Location::supplied("t");
    let zarrow::Location::Store { id, .. } = &location else {
        unreachable!()
    };
    let stores = zarrow::Stores::default().with_store(*id, observed.clone());
    (observed, location, stores)
}

/// 1,000 numbered rows (`n`, `s`) that zarrow writes in chunks of 100 rows
/// (with statistics) to a local store under `dir`, registered as `t` in a
/// session of 2 partitions and read through an observed store.
fn numbered_table(dir: &std::path::Path) -> (Arc<dyn Store>, Arc<Observed>, SessionContext) {
    use crate::common::numbered_batch;
    use zarrow::write::write_batches;
    let local: Arc<dyn Store> = Arc::new(LocalStore::new(dir.join("t.zarr")));
    let batch = numbered_batch(0, 1000, None);
    let schema = batch.schema();
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch)], schema);
    let options = WriteOptions {
        chunk_len: Some(100),
        ..WriteOptions::default()
    };
    write_batches(reader, local.clone(), "", options).unwrap();
    let (observed, location, stores) = observed_location(&local);
    let table = ZarrTable::open(&location, ZarrTableOptions::default(), &stores).unwrap();
    let ctx = context(2);
    ctx.register_table("t", Arc::new(table)).unwrap();
    (local, observed, ctx)
}

/// A scan whose plan's filter and whose run-time filter (a TopK's threshold)
/// name the same column checks that column's statistics once (one listing of
/// its chunks), not once for each; a scan pruned entirely asks the run-time
/// filter nothing.
#[test]
fn one_scan_checks_a_columns_statistics_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_, observed, ctx) = numbered_table(dir.path());
    let rt = runtime();
    let topk = "SELECT n FROM t WHERE n > 100 ORDER BY n DESC LIMIT 3";
    for (sql, expected) in [
        (topk, vec![999, 998, 997]),
        (
            "SELECT n FROM t WHERE n > 5000 ORDER BY n DESC LIMIT 3",
            vec![],
        ),
    ] {
        observed.take_lists();
        let batches = rt.block_on(query(&ctx, sql));
        let got: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        assert_eq!(got, expected, "{sql}");
        assert_eq!(observed.take_lists(), 1, "{sql}: one listing of n's chunks");
        // The TopK's threshold reached the scan: of the 9 chunks the plan's
        // filter keeps, only the top rows' (one a partition at most) are read.
        let chunks: std::collections::BTreeSet<String> = observed
            .take()
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.contains("/c/"))
            .collect();
        assert!(chunks.len() <= 2, "{sql}: {chunks:?}");
    }
}

/// A physical plan kept and run again through `for_another_run` reads its
/// chunk statistics, and checks their freshness, at every run: another
/// writer's in-place rewrite of a chunk (its statistics now stale) is seen by
/// the next run. A plan whose scan prunes by a TopK's dynamic filter is not
/// run again (planned again instead).
#[test]
fn a_plan_run_again_checks_its_statistics_again() {
    use zarrow::datafusion::for_another_run;
    let dir = tempfile::tempdir().unwrap();
    let (local, observed, ctx) = numbered_table(dir.path());
    let rt = runtime();
    let plan_of = |sql: &str| {
        rt.block_on(async { ctx.sql(sql).await?.create_physical_plan().await })
            .unwrap()
    };
    let run = |plan: Arc<dyn ExecutionPlan>| {
        let batches = rt.block_on(collect(plan, ctx.task_ctx())).unwrap();
        let mut got: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        got.sort_unstable();
        got
    };
    let plan = plan_of("SELECT n FROM t WHERE n > 950");
    let top: Vec<i64> = (951..1000).collect();
    for _ in 0..2 {
        observed.take_lists();
        let again = for_another_run(&plan)
            .unwrap()
            .expect("a plan with no dynamic filter");
        assert_eq!(run(again), top);
        assert_eq!(observed.take_lists(), 1, "one listing of n's chunks a run");
    }
    // Another writer puts rows 900..999 in chunk 0 too (chunk 9's bytes):
    // zarrow's statistics of chunk 0 (0..99) no longer hold.
    let moved = local.get("n/c/9").unwrap().unwrap();
    local.set("n/c/0", &moved).unwrap();
    let again = for_another_run(&plan).unwrap().unwrap();
    let mut twice: Vec<i64> = top.iter().chain(&top).copied().collect();
    twice.sort_unstable();
    assert_eq!(run(again), twice);

    let topk = plan_of("SELECT n FROM t WHERE n > 100 ORDER BY n DESC LIMIT 3");
    assert!(for_another_run(&topk).unwrap().is_none());
}

/// A table opened tracked and checked again: an unchanged store is neither
/// opened again nor are its statistics read again (only versions are asked
/// for), and rows appended since are found.
#[test]
fn a_tracked_table_reads_no_metadata_or_statistics_again_until_the_store_changes() {
    use crate::common::numbered_batch;
    use zarrow::write::write_batches;
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Store> = Arc::new(LocalStore::new(dir.path().join("t.zarr")));
    let write = |start: i64, n: i64, append: bool| {
        let batch = numbered_batch(start, n, None);
        let schema = batch.schema();
        let reader = arrow_array::RecordBatchIterator::new([Ok(batch)], schema);
        let options = WriteOptions {
            chunk_len: (!append).then_some(100),
            append,
            ..WriteOptions::default()
        };
        write_batches(reader, local.clone(), "", options).unwrap();
    };
    write(0, 1000, false);
    let (observed, location, stores) = observed_location(&local);
    let table = ZarrTable::open_tracked(&location, ZarrTableOptions::default(), &stores).unwrap();
    let rt = runtime();
    // `n` runs 0..: none is above 5000 (every chunk pruned), 901.. are above 900.
    let count = |table: &ZarrTable, sql: &str| -> i64 {
        let ctx = context(2);
        ctx.register_table("t", Arc::new(table.clone())).unwrap();
        let batches = rt.block_on(query(&ctx, sql));
        batches[0].column(0).as_primitive::<Int64Type>().value(0)
    };
    let above = |n: i64| format!("SELECT count(*) FROM t WHERE n > {n}");
    observed.take();
    assert_eq!(count(&table, &above(5000)), 0);
    let first: Vec<String> = observed.take().into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        first,
        ["n/zarrow.stats"],
        "the first scan reads the statistics"
    );
    assert_eq!(count(&table, &above(900)), 99);
    let second: Vec<String> = observed.take().into_iter().map(|(k, _)| k).collect();
    assert!(
        second.iter().all(|k| k.starts_with("n/c/")),
        "the second scan reads chunks only: {second:?}"
    );
    assert_eq!(second.len(), 1, "one chunk holds 901..999: {second:?}");
    // Unchanged: not opened again, nothing read.
    observed.take_lists();
    assert!(table.refreshed().unwrap().is_none());
    assert!(observed.take().is_empty());
    assert!(observed.take_lists() > 0, "versions are asked for");
    // Rows appended: the table is opened again and has them.
    write(1000, 500, true);
    let table = table.refreshed().unwrap().expect("the store changed");
    assert_eq!(count(&table, &above(900)), 599);
    assert_eq!(count(&table, &above(1400)), 99);
    assert!(table.refreshed().unwrap().is_none(), "unchanged since");
    // A statistics file written again (the same rows) is read again.
    observed.take();
    assert_eq!(count(&table, &above(5000)), 0);
    assert!(observed.take().is_empty(), "nothing new to read");
    let stats = dir.path().join("t.zarr/n/zarrow.stats");
    let bytes = std::fs::read(&stats).unwrap();
    std::fs::remove_file(&stats).unwrap();
    std::fs::write(&stats, bytes).unwrap();
    assert_eq!(count(&table, &above(5000)), 0);
    let read: Vec<String> = observed.take().into_iter().map(|(k, _)| k).collect();
    assert_eq!(read, ["n/zarrow.stats"]);
}

/// A filter the simplifier folds to a constant after it was pushed into the
/// scan (`NOT (i IN (7, NULL))` becomes `i != 7 AND i != NULL`, pushed whole,
/// then `i != 7 AND NULL`: DataFusion applies the `NULL` nowhere) is honoured
/// by the scan: each query answers as over the same rows in memory, limits
/// and a constant that does not fold included.
#[test]
fn a_filter_folded_to_a_constant_after_pushdown_answers_as_over_memory() {
    let i: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(1),
        Some(7),
        Some(3),
        Some(7),
        Some(2),
        Some(3),
    ]));
    let row: ArrayRef = Arc::new(Int64Array::from_iter_values(0..6));
    let (table, memory) = zarr_and_memory(&[("i", i), ("row", row)], 2);
    let rt = runtime();
    for filter in [
        "NOT (i IN (7, NULL))",
        "i NOT IN (3, NULL)",
        "i NOT IN (3, NULL) OR i = 7",
        "NOT (i IN (7, NULL)) OR row < 2",
        "i NOT IN (7, NULL) AND row >= 0",
        "i IN (7, NULL)",
    ] {
        for limit in ["", " LIMIT 1"] {
            let (got, want) = rt.block_on(async {
                let ctx = context(2);
                ctx.register_table("z", Arc::new(table.clone())).unwrap();
                ctx.register_batch("m", memory.clone()).unwrap();
                let sql =
                    |t: &str| format!("SELECT row FROM {t} WHERE {filter} ORDER BY row{limit}");
                (query(&ctx, &sql("z")).await, query(&ctx, &sql("m")).await)
            });
            let rows = |batches: &[RecordBatch]| -> Vec<i64> {
                if batches.iter().all(|b| b.num_rows() == 0) {
                    return Vec::new();
                }
                column_of(batches, "row")
                    .as_primitive::<Int64Type>()
                    .values()
                    .to_vec()
            };
            assert_eq!(rows(&got), rows(&want), "WHERE {filter}{limit}");
        }
    }
}
