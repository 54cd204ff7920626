//! Chunk statistics: what the writer records, and which chunks a filtered
//! DataFusion query then reads, counted on the store and checked against the
//! chunk sets computed from the data itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use zarrow::datafusion::{ZarrTable, ZarrTableOptions};
use zarrow::write::{WriteOptions, write_batches};
use zarrow::{MemoryStore, ReadOptions, Store};

use crate::common::Observed;
use crate::datafusion::{context, query, runtime};

const ROWS: usize = 10_000;
const CHUNK: usize = 500;

/// The table's columns: `sample` in runs of uneven length stored one after
/// another (as an atlas stores them), `day` sorted, `n` pseudo-random, `x`
/// floats with a NaN every 997 rows.
fn columns() -> (Vec<String>, Vec<i64>, Vec<i64>, Vec<f64>) {
    let mut samples = Vec::with_capacity(ROWS);
    let (mut sample, mut left) = (0, 0);
    let mut seed: u64 = 7;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    for _ in 0..ROWS {
        if left == 0 {
            sample += 1;
            left = 50 + next() % 900;
        }
        left -= 1;
        samples.push(format!("S{sample:04}"));
    }
    let days = (0..ROWS as i64).map(|i| i / 37).collect();
    let n = (0..ROWS).map(|_| (next() % 5000) as i64).collect();
    let x = (0..ROWS)
        .map(|i| {
            if i % 997 == 3 {
                f64::NAN
            } else {
                (i % 1000) as f64 / 10.0
            }
        })
        .collect();
    (samples, days, n, x)
}

fn batch() -> RecordBatch {
    let (samples, days, n, x) = columns();
    let schema = Arc::new(Schema::new(vec![
        Field::new("sample", DataType::Utf8, false),
        Field::new("day", DataType::Int64, false),
        Field::new("n", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(samples)),
        Arc::new(Int64Array::from(days)),
        Arc::new(Int64Array::from(n)),
        Arc::new(Float64Array::from(x)),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

fn write(store: Arc<dyn Store>, stats: bool) {
    let batch = batch();
    let options = WriteOptions {
        chunk_len: Some(CHUNK),
        stats,
        ..WriteOptions::default()
    };
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
    write_batches(reader, store, "", options).unwrap();
}

/// The chunks (by number) of the rows where `keep` holds.
fn chunks_of(keep: impl Fn(usize) -> bool) -> BTreeSet<u64> {
    (0..ROWS)
        .filter(|&i| keep(i))
        .map(|i| (i / CHUNK) as u64)
        .collect()
}

/// The chunk numbers read, by array.
fn chunk_reads(store: &Observed) -> BTreeMap<String, BTreeSet<u64>> {
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for (key, _) in store.take() {
        if let Some((array, chunk)) = key.split_once("/c/") {
            out.entry(array.to_string())
                .or_default()
                .insert(chunk.parse().unwrap());
        }
    }
    out
}

/// Run `sql` over the table in `memory`, read through an observing store:
/// the result's rows and the chunks read.
fn run(
    memory: Arc<MemoryStore>,
    options: ZarrTableOptions,
    sql: &str,
) -> (Vec<RecordBatch>, BTreeMap<String, BTreeSet<u64>>) {
    let store = Observed::new(memory);
    let location = zarrow::Location::supplied("t");
    let table = ZarrTable::from_store(store.clone(), &location, options).unwrap();
    store.take();
    let batches = runtime().block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(&ctx, sql).await
    });
    (batches, chunk_reads(&store))
}

fn rows_of(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

#[test]
fn the_writer_records_one_statistics_object_per_array_and_zarr_sees_no_member() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    for name in ["sample", "day", "n", "x"] {
        assert!(
            memory
                .get(&format!("{name}/zarrow.stats"))
                .unwrap()
                .is_some(),
            "{name}"
        );
    }
    // Not a node: the group's children are its columns only.
    let group = zarrow::ZarrGroup::open(memory.clone(), "").unwrap();
    let children: Vec<&str> = group.children().map(|(n, _)| n).collect();
    assert_eq!(children, ["day", "n", "sample", "x"]);
    // Nor a chunk: every chunk key is one of the grid's.
    let array = zarrow::ZarrArray::open(memory.clone(), "x").unwrap();
    assert_eq!(array.chunks_present().unwrap(), (ROWS / CHUNK) as u64);

    let off = Arc::new(MemoryStore::new());
    write(off.clone(), false);
    assert!(off.get("x/zarrow.stats").unwrap().is_none());
}

#[test]
fn an_equality_filter_reads_only_the_chunks_that_can_match() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let (samples, _, n, _) = columns();
    let wanted = samples[ROWS / 2].clone();
    let sql = format!("SELECT n FROM t WHERE sample = '{wanted}'");
    let (batches, reads) = run(memory, ZarrTableOptions::default(), &sql);
    let expected: Vec<i64> = (0..ROWS)
        .filter(|&i| samples[i] == wanted)
        .map(|i| n[i])
        .collect();
    let mut got: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    got.sort_unstable();
    let mut sorted = expected.clone();
    sorted.sort_unstable();
    assert_eq!(got, sorted);
    // The chunks holding the sample, and no other.
    let holding = chunks_of(|i| samples[i] == wanted);
    assert_eq!(reads["sample"], holding);
    assert_eq!(reads["n"], holding);
}

#[test]
fn without_statistics_every_chunk_is_read() {
    let sql = "SELECT n FROM t WHERE day BETWEEN 100 AND 110";
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), false);
    let (with_none, reads) = run(memory, ZarrTableOptions::default(), sql);
    assert_eq!(reads["day"].len(), ROWS / CHUNK);

    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let mut ignoring = ZarrTableOptions::default();
    ignoring.read = ReadOptions {
        use_stats: false,
        ..ignoring.read
    };
    let (ignored, reads) = run(memory.clone(), ignoring, sql);
    assert_eq!(reads["day"].len(), ROWS / CHUNK);
    let (pruned, reads) = run(memory, ZarrTableOptions::default(), sql);
    let (_, days, _, _) = columns();
    assert_eq!(reads["day"], chunks_of(|i| (100..=110).contains(&days[i])));
    assert_eq!(rows_of(&with_none), rows_of(&pruned));
    assert_eq!(rows_of(&ignored), rows_of(&pruned));
    assert_eq!(
        rows_of(&pruned),
        days.iter().filter(|d| (100..=110).contains(*d)).count()
    );
}

/// `x > k`, `x != k` and `x IS NULL` over floats with NaNs: NaN is greater
/// than every number in DataFusion's order, so a chunk with a NaN matches
/// `x > k` whatever its largest number.
#[test]
fn nans_are_never_pruned_away() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let (_, _, _, x) = columns();
    let count = |sql: &str| {
        let (batches, _) = run(memory.clone(), ZarrTableOptions::default(), sql);
        batches[0].column(0).as_primitive::<Int64Type>().value(0) as usize
    };
    let nans = x.iter().filter(|v| v.is_nan()).count();
    assert!(nans > 0);
    assert_eq!(count("SELECT count(*) FROM t WHERE x > 1000"), nans);
    assert_eq!(
        count("SELECT count(*) FROM t WHERE x <> 5"),
        x.iter().filter(|v| v.is_nan() || **v != 5.0).count()
    );
    assert_eq!(count("SELECT count(*) FROM t WHERE x IS NULL"), 0);
    assert_eq!(count("SELECT count(*) FROM t WHERE x IS NOT NULL"), ROWS);
    let (batches, reads) = run(
        memory.clone(),
        ZarrTableOptions::default(),
        "SELECT x FROM t WHERE x > 1000",
    );
    assert!(batches.iter().all(|b| {
        b.column(0)
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .all(|v| v.is_nan())
    }));
    assert_eq!(reads["x"], chunks_of(|i| x[i].is_nan()));
}

/// A time equal to numpy's NaT (`i64::MIN`) is stored as NaT and reads back
/// as a null: the statistics count it as one, so `IS NULL` keeps its chunk
/// and its value bounds no comparison (found by the end-to-end differential
/// test, tests/interop/check_stats_differential.py, seed 2026 case 429).
#[test]
fn a_time_equal_to_nat_counts_as_a_null() {
    use arrow_array::TimestampSecondArray;
    let memory = Arc::new(MemoryStore::new());
    let t: ArrayRef = Arc::new(
        TimestampSecondArray::from(vec![
            Some(1),
            Some(0),
            Some(86400),
            Some(i64::MIN),
            Some(5),
            Some(6),
        ])
        .with_timezone("Europe/Paris"),
    );
    let schema = Arc::new(Schema::new(vec![Field::new(
        "t",
        t.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema, vec![t]).unwrap();
    let options = WriteOptions {
        chunk_len: Some(3),
        ..WriteOptions::default()
    };
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
    write_batches(reader, memory.clone(), "", options).unwrap();
    let count = |options: ZarrTableOptions, sql: &str| {
        let (batches, _) = run(memory.clone(), options, sql);
        batches[0].column(0).as_primitive::<Int64Type>().value(0)
    };
    let ignore = || {
        let mut ignoring = ZarrTableOptions::default();
        ignoring.read = ReadOptions {
            use_stats: false,
            ..ignoring.read
        };
        ignoring
    };
    for sql in [
        "SELECT count(*) FROM t WHERE t IS NULL",
        "SELECT count(*) FROM t WHERE t IS NOT NULL",
        "SELECT count(*) FROM t WHERE t < arrow_cast(0, 'Timestamp(Second, Some(\"UTC\"))')",
    ] {
        assert_eq!(
            count(ZarrTableOptions::default(), sql),
            count(ignore(), sql),
            "{sql}"
        );
    }
    assert_eq!(
        count(
            ZarrTableOptions::default(),
            "SELECT count(*) FROM t WHERE t IS NULL"
        ),
        1
    );
}

/// A chunk stored again after its statistics were written (as zarr-python
/// would write it) is read, and its new values answer.
#[test]
fn a_chunk_rewritten_since_is_read() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    // Chunk 3 of `day` as days 100 to 599: a zarrow without statistics writes it.
    let other = Arc::new(MemoryStore::new());
    let day: ArrayRef = Arc::new(Int64Array::from_iter_values((0..ROWS as i64).map(|i| {
        if (1500..2000).contains(&i) {
            100_000
        } else {
            i / 37
        }
    })));
    let options = WriteOptions {
        chunk_len: Some(CHUNK),
        stats: false,
        ..WriteOptions::default()
    };
    zarrow::write::write_array(other.clone(), "day", &day, options).unwrap();
    let rewritten = other.get("day/c/3").unwrap().unwrap();
    memory.set("day/c/3", &rewritten).unwrap();
    let (batches, reads) = run(
        memory,
        ZarrTableOptions::default(),
        "SELECT count(*) FROM t WHERE day = 100000",
    );
    assert_eq!(
        batches[0].column(0).as_primitive::<Int64Type>().value(0),
        500
    );
    assert!(reads["day"].contains(&3), "{reads:?}");
}

/// COPY records statistics as every write does; `OPTIONS ('stats' 'false')`
/// (the write option's declared key) records none. A table it wrote prunes.
#[test]
fn copy_records_statistics_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = (
        dir.path().join("with.zarr"),
        dir.path().join("without.zarr"),
    );
    let rt = runtime();
    rt.block_on(async {
        let ctx = context(2);
        let copy = |path: &std::path::Path, options: &str| {
            format!(
                "COPY (SELECT v, v * 2 AS w FROM (SELECT unnest(range(0, 5000)) AS v)) TO '{}' \
                 STORED AS ZARR OPTIONS ('chunk_len' '500'{options})",
                path.display()
            )
        };
        query(&ctx, &copy(&with, "")).await;
        query(&ctx, &copy(&without, ", 'stats' 'false'")).await;
    });
    assert!(with.join("v/zarrow.stats").is_file());
    assert!(with.join("w/zarrow.stats").is_file());
    assert!(!without.join("v/zarrow.stats").exists());
    let location = zarrow::Location::Path(with.clone());
    let table = ZarrTable::open(
        &location,
        ZarrTableOptions::default(),
        &zarrow::Stores::default(),
    )
    .unwrap();
    let counted = rt.block_on(async {
        let ctx = context(2);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = query(
            &ctx,
            "EXPLAIN ANALYZE SELECT w FROM t WHERE v BETWEEN 1200 AND 1300",
        )
        .await;
        format!("{:?}", plan)
    });
    // Chunk 2 of `v` and of `w` (rows 1000..1500) only.
    assert!(counted.contains("requests=2,"), "{counted}");
}

/// Every chunk read, as (array, chunk) requests: one per GET.
fn chunk_requests(store: &Observed) -> Vec<(String, u64)> {
    store
        .take()
        .into_iter()
        .filter_map(|(key, _)| {
            let (array, chunk) = key.split_once("/c/")?;
            Some((array.to_string(), chunk.parse().unwrap()))
        })
        .collect()
}

/// A rare filter that statistics cannot prune (`n` random in every chunk):
/// the filter's columns are read whole, the other projected column only in
/// the chunks holding a match, and the answer is the rows that match.
#[test]
fn late_materialization_reads_the_rest_only_where_rows_match() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let (samples, _, n, x) = columns();
    let matches = |i: usize| n[i] == 4321 || (n[i] < 3 && x[i] < 50.0);
    let matching: Vec<usize> = (0..ROWS).filter(|&i| matches(i)).collect();
    assert!(!matching.is_empty() && matching.len() < ROWS / CHUNK);

    let store = Observed::new(memory);
    let location = zarrow::Location::supplied("t");
    let table =
        ZarrTable::from_store(store.clone(), &location, ZarrTableOptions::default()).unwrap();
    store.take();
    let sql = "SELECT sample, n FROM t WHERE n = 4321 OR (n < 3 AND x < 50)";
    let batches = runtime().block_on(async {
        let ctx = context(3);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(&ctx, sql).await
    });
    let mut got: Vec<(String, i64)> = batches
        .iter()
        .flat_map(|b| {
            let s = b.column(0).as_string::<i32>();
            let v = b.column(1).as_primitive::<Int64Type>();
            (0..b.num_rows())
                .map(|i| (s.value(i).to_string(), v.value(i)))
                .collect::<Vec<_>>()
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, i64)> = matching
        .iter()
        .map(|&i| (samples[i].clone(), n[i]))
        .collect();
    want.sort();
    assert_eq!(got, want);

    // The bound of the issue: the filter columns' chunks statistics cannot
    // exclude (here all), plus the projected chunks holding a match, plus
    // one; and the other column only where rows match.
    let requests = chunk_requests(&store);
    let holding = chunks_of(matches);
    let sample_reads: BTreeSet<u64> = requests
        .iter()
        .filter(|(a, _)| a == "sample")
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(sample_reads, holding);
    let bound = 2 * ROWS / CHUNK + holding.len() + 1;
    assert!(requests.len() <= bound, "{} > {bound}", requests.len());
}

/// `LIMIT` over an exact filter: the first matches, and no more of the
/// table read than the blocks that hold them.
#[test]
fn a_limit_over_a_filter_stops_at_the_first_matches() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), false);
    let (_, _, n, _) = columns();
    let store = Observed::new(memory);
    let location = zarrow::Location::supplied("t");
    let table =
        ZarrTable::from_store(store.clone(), &location, ZarrTableOptions::default()).unwrap();
    store.take();
    let batches = runtime().block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        query(&ctx, "SELECT n FROM t WHERE n < 100 LIMIT 5").await
    });
    let got: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(got.len(), 5);
    assert!(got.iter().all(|v| *v < 100));
    assert!(n.iter().filter(|v| **v < 100).count() > 5);
}

/// The scan evaluates the filter itself (no `FilterExec` above it), prunes
/// by statistics as it opens each range (planning reads none), and `EXPLAIN
/// ANALYZE` shows the rows statistics pruned and the rows matched.
#[test]
fn explain_analyze_shows_pruned_and_matched_rows() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let location = zarrow::Location::supplied("t");
    let table = ZarrTable::from_store(memory, &location, ZarrTableOptions::default()).unwrap();
    let (_, days, _, _) = columns();
    let plan = runtime().block_on(async {
        let ctx = context(2);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = query(
            &ctx,
            "EXPLAIN ANALYZE SELECT n FROM t WHERE day BETWEEN 100 AND 110",
        )
        .await;
        format!("{plan:?}")
    });
    assert!(!plan.contains("FilterExec"), "{plan}");
    let matched = days.iter().filter(|d| (100..=110).contains(*d)).count();
    let kept = chunks_of(|i| (100..=110).contains(&days[i])).len() * CHUNK;
    assert!(plan.contains(&format!("rows_matched={matched}")), "{plan}");
    // The scan's "files" are the table's row ranges (planning reads no
    // statistics); as each opens, statistics prune it. DataFusion
    // abbreviates counts: 9000 is "9.00 K".
    let files: u64 = plan
        .split("file_groups={")
        .nth(1)
        .and_then(|groups| groups.split('}').next())
        .unwrap()
        .split(']')
        .filter_map(|part| part.split("t:").nth(1))
        .map(|range| {
            let (a, b) = range.split_once("..").unwrap();
            b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(files, ROWS as u64, "{plan}");
    // The kept chunks of `day` and of `n`, one request each.
    assert!(
        plan.contains(&format!("requests={},", 2 * kept / CHUNK)),
        "{plan}"
    );
    assert_eq!(ROWS - kept, 9000);
    assert!(plan.contains("rows_pruned_by_statistics=9.00 K"), "{plan}");
}

/// Planning a filtered query reads nothing: the statistics are read once per
/// scan as it runs (one GET per filtered column), where it runs.
#[test]
fn planning_reads_no_statistics_and_a_scan_reads_them_once() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), true);
    let store = Observed::new(memory);
    let location = zarrow::Location::supplied("t");
    let table =
        ZarrTable::from_store(store.clone(), &location, ZarrTableOptions::default()).unwrap();
    store.take();
    runtime().block_on(async {
        let ctx = context(4);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = ctx
            .sql("SELECT n FROM t WHERE day BETWEEN 100 AND 110")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        assert_eq!(store.take(), Vec::new());
        datafusion::physical_plan::collect(plan, ctx.task_ctx())
            .await
            .unwrap();
    });
    let stats_reads = store
        .take()
        .into_iter()
        .filter(|(key, _)| key.ends_with("zarrow.stats"))
        .count();
    assert_eq!(stats_reads, 1);
}

/// Sets of values present prune where bounds cannot: every chunk of `cell`
/// (an anndata categorical) holds `A` and `Z` and one letter of its own, and
/// every chunk of `k` holds 0 and 100 (an odd chunk its number too), so
/// every chunk's bounds span every value asked for.
#[test]
fn value_sets_prune_equality_and_in_lists_where_bounds_cannot() {
    let letter = |c: usize| char::from(b'B' + c as u8).to_string();
    let cell: Vec<String> = (0..ROWS)
        .map(|i| match i % CHUNK {
            7 => letter(i / CHUNK),
            _ if i % 2 == 0 => "A".into(),
            _ => "Z".into(),
        })
        .collect();
    let k: Vec<i64> = (0..ROWS)
        .map(|i| match (i % CHUNK, i / CHUNK) {
            (9, c) if c % 2 == 1 => c as i64,
            _ if i % 2 == 0 => 0,
            _ => 100,
        })
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new_dictionary("cell", DataType::Int8, DataType::Utf8, false),
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let cells: arrow_array::DictionaryArray<arrow_array::types::Int8Type> =
        cell.iter().map(String::as_str).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(cells),
            Arc::new(Int64Array::from(k.clone())),
            Arc::new(Int64Array::from_iter_values(0..ROWS as i64)),
        ],
    )
    .unwrap();
    let memory = Arc::new(MemoryStore::new());
    let options = WriteOptions {
        chunk_len: Some(CHUNK),
        layout: zarrow::write::Layout::AnnData,
        ..WriteOptions::default()
    };
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch)], schema);
    write_batches(reader, memory.clone(), "", options).unwrap();

    type Keep = Box<dyn Fn(usize) -> bool>;
    let (c1, c2) = (cell.clone(), cell.clone());
    let (k1, k2) = (k.clone(), k.clone());
    let cases: Vec<(&str, &str, Keep)> = vec![
        ("cell = 'F'", "cell/codes", Box::new(move |i| c1[i] == "F")),
        (
            "cell IN ('C', 'Q')",
            "cell/codes",
            Box::new(move |i| c2[i] == "C" || c2[i] == "Q"),
        ),
        (
            "k IN (3, 17)",
            "k",
            Box::new(move |i| k1[i] == 3 || k1[i] == 17),
        ),
        (
            "k NOT IN (0, 100)",
            "k",
            Box::new(move |i| k2[i] != 0 && k2[i] != 100),
        ),
    ];
    for (filter, array, keep) in cases {
        let sql = format!("SELECT v FROM t WHERE {filter}");
        let (batches, reads) = run(memory.clone(), ZarrTableOptions::default(), &sql);
        let mut got: Vec<i64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect();
        got.sort_unstable();
        let want: Vec<i64> = (0..ROWS).filter(|&i| keep(i)).map(|i| i as i64).collect();
        assert!(!want.is_empty(), "{filter}");
        assert_eq!(got, want, "{filter}");
        let holding = chunks_of(&keep);
        assert_eq!(reads[array], holding, "{filter}: {reads:?}");
        assert_eq!(reads["v"], holding, "{filter}");
    }
}

/// A filter of two conjuncts: the first one's column is read whole, the
/// second's only in the chunks holding a row the first keeps, the projected
/// column only where both do (as Parquet's row filters narrow each next
/// predicate).
#[test]
fn a_second_conjunct_is_read_only_where_the_first_matches() {
    let memory = Arc::new(MemoryStore::new());
    write(memory.clone(), false);
    let (samples, _, n, x) = columns();
    let first = |i: usize| n[i] == 4321 || n[i] == 17;
    let both = |i: usize| first(i) && x[i] < 90.0;
    let sql = "SELECT sample FROM t WHERE (n = 4321 OR n = 17) AND x < 90";
    let (batches, reads) = run(memory, ZarrTableOptions::default(), sql);
    let mut got: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let s = b.column(0).as_string::<i32>();
            (0..b.num_rows())
                .map(|i| s.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..ROWS)
        .filter(|&i| both(i))
        .map(|i| samples[i].clone())
        .collect();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert_eq!(reads["n"].len(), ROWS / CHUNK);
    assert_eq!(reads["x"], chunks_of(first));
    assert_eq!(reads["sample"], chunks_of(both));
}
