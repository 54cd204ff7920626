//! `zarrow convert --append` and `zarrow sql`'s INSERT: rows appended to a table
//! through the command line (the library's appends: tests/integration/append.rs).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int64Array, StringArray};
use zarrow::read::{TableOptions, open_table};
use zarrow::store::Consolidated;
use zarrow::{LocalStore, ReadOptions, Store as _};

use crate::common::{column, numbered_batch as batch, read_output, values, zarrow};

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

/// `zarrow sql` runs `;`-separated statements in order and prints the last
/// one's answer: a COPY, then an INSERT through the table the COPY wrote.
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
        &zarrow::ExecutionContext::default(),
    )
    .unwrap()
    .total_rows();
    assert!(stdout.contains(&format!("| {rows} ")), "{stdout}");
    let written = open_table(
        Consolidated::open(Arc::new(LocalStore::new(&out))).unwrap(),
        "c",
        ReadOptions::default(),
        &TableOptions::default(),
        &zarrow::ExecutionContext::default(),
    )
    .unwrap();
    assert_eq!(written.total_rows(), rows);
}
