//! kill -9 at every store write of an append and of a COPY (the `failpoints`
//! feature: `ZARROW_KILL_AT=store-write:N` ends the `zarrow` process by SIGKILL
//! at its N-th write, after the value's temporary file is written and before it
//! is renamed). After each kill a reader sees the old table or the new one,
//! whole, and the next write succeeds and leaves no debris. The expected rows
//! are the inputs'.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use arrow_array::{Array, Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow_schema::{DataType, Field, Schema};
use zarrow::read::{TableOptions, open_table};
use zarrow::store::Consolidated;
use zarrow::{LocalStore, ReadOptions, StringType};

fn parquet(path: &Path, rows: std::ops::Range<i64>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let n: Int64Array = rows.clone().collect();
    let s: StringArray = rows.map(|i| Some(format!("value {i}"))).collect();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(n), Arc::new(s)]).unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn zarrow_killed_at(write: usize, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zarrow"))
        .args(args)
        .env("ZARROW_KILL_AT", format!("store-write:{write}"))
        .output()
        .unwrap()
}

fn zarrow_ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_zarrow"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `n` column of the table at `path`, read through its consolidated
/// metadata (as zarrow and zarr-python open a group), with `s` checked
/// against it.
fn table_rows(path: &Path) -> Vec<i64> {
    let store = Consolidated::open(Arc::new(LocalStore::new(path))).unwrap();
    // Utf8 whatever type the writer recorded (DataFusion's strings are views).
    let options = ReadOptions {
        string_type: Some(StringType::Utf8),
        ..ReadOptions::default()
    };
    let reader = open_table(
        store,
        "t",
        options,
        &TableOptions::default(),
        &Default::default(),
    )
    .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    let n = all.column_by_name("n").unwrap();
    let n = n.as_any().downcast_ref::<Int64Array>().unwrap();
    let s = all.column_by_name("s").unwrap();
    let s = s.as_any().downcast_ref::<StringArray>().unwrap();
    for i in 0..n.len() {
        assert_eq!(s.value(i), format!("value {}", n.value(i)));
    }
    n.values().to_vec()
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn kill_9_at_each_write_of_an_append_leaves_the_old_table_or_the_new() {
    let dir = tempfile::tempdir().unwrap();
    let (first, more) = (
        dir.path().join("first.parquet"),
        dir.path().join("more.parquet"),
    );
    parquet(&first, 0..30);
    parquet(&more, 30..70);
    let (old, new): (Vec<i64>, Vec<i64>) = ((0..30).collect(), (0..70).collect());
    let mut kills = 0;
    for write in 1.. {
        let t = dir.path().join(format!("t{write}.zarr"));
        let t_s = t.to_str().unwrap();
        zarrow_ok(&["convert", first.to_str().unwrap(), t_s, "--chunk-len", "8"]);
        let clean = files(&t);
        let out = zarrow_killed_at(write, &["convert", more.to_str().unwrap(), t_s, "--append"]);
        if out.status.success() {
            // Past the last write: the append finished.
            assert_eq!(table_rows(&t), new);
            break;
        }
        assert_eq!(out.status.signal(), Some(9), "write {write}: {out:?}");
        kills += 1;
        assert_eq!(table_rows(&t), old, "killed at write {write}");
        // The next append (its lock freed by the kernel) clears the debris.
        zarrow_ok(&["convert", more.to_str().unwrap(), t_s, "--append"]);
        assert_eq!(table_rows(&t), new, "after the kill at write {write}");
        let mut after = files(&t);
        after.retain(|f| !clean.contains(f));
        // New chunks only: c/4 .. c/8 of each column, nothing temporary.
        let want: Vec<String> = ["n", "s"]
            .iter()
            .flat_map(|c| (4..9).map(move |i| format!("{c}/c/{i}")))
            .collect();
        assert_eq!(after, want, "after the kill at write {write}");
    }
    assert!(kills >= 12, "{kills} kills");
}

#[test]
fn kill_9_at_each_write_of_a_copy_leaves_no_table_or_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    parquet(&input, 0..50);
    let table = format!("p={}", input.display());
    let mut kills = 0;
    for write in 1.. {
        let out_dir = dir.path().join(format!("copy{write}"));
        std::fs::create_dir(&out_dir).unwrap();
        let target = out_dir.join("c.zarr");
        let copy = format!(
            "COPY (SELECT * FROM p WHERE n >= 10) TO '{}' STORED AS ZARR OPTIONS (chunk_len 8)",
            target.display()
        );
        let out = zarrow_killed_at(write, &["sql", &copy, "--table", &table]);
        if out.status.success() {
            assert_eq!(table_rows(&target), (10..50).collect::<Vec<_>>());
            break;
        }
        assert_eq!(out.status.signal(), Some(9), "write {write}: {out:?}");
        kills += 1;
        // A COPY that did not finish left no table.
        assert!(!target.exists(), "killed at write {write}");
        // The next one writes it whole and removes what the killed one left.
        zarrow_ok(&["sql", &copy, "--table", &table]);
        assert_eq!(table_rows(&target), (10..50).collect::<Vec<_>>());
        let left: Vec<_> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["c.zarr"], "killed at write {write}");

        // Over an existing table, with overwrite: the old one or the new one.
        let over = format!(
            "COPY (SELECT * FROM p WHERE n < 5) TO '{}' OPTIONS (overwrite true, chunk_len 2)",
            target.display()
        );
        let out = zarrow_killed_at(write, &["sql", &over, "--table", &table]);
        let rows = table_rows(&target);
        if out.status.success() {
            assert_eq!(rows, (0..5).collect::<Vec<_>>());
        } else {
            assert_eq!(out.status.signal(), Some(9));
            assert_eq!(
                rows,
                (10..50).collect::<Vec<_>>(),
                "overwrite killed at write {write}"
            );
        }
    }
    assert!(kills >= 12, "{kills} kills");
}

/// What `zarrow sql` prints for filters over the table at `path`, with
/// `extra` flags.
fn answers(path: &Path, extra: &[&str]) -> Vec<String> {
    let table = format!("t={}", path.display());
    [
        "SELECT n, s FROM t WHERE n BETWEEN 5 AND 45 ORDER BY n",
        "SELECT count(*) FROM t WHERE n > 60",
        "SELECT count(*) FROM t WHERE s = 'value 33'",
    ]
    .iter()
    .map(|query| {
        let mut args = vec!["sql", query, "--table", &table];
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_zarrow"))
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    })
    .collect()
}

/// kill -9 at each write of an append that records statistics, and of
/// `zarrow stats` over a table without any: every filtered query answers as
/// it does reading every chunk (`--ignore-stats`).
#[test]
fn kill_9_during_an_append_or_zarrow_stats_never_changes_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (first, more) = (
        dir.path().join("first.parquet"),
        dir.path().join("more.parquet"),
    );
    parquet(&first, 0..30);
    parquet(&more, 30..70);
    let mut kills = 0;
    for (name, create, run) in [
        (
            "append",
            vec!["--chunk-len", "8"],
            vec!["convert", "MORE", "T", "--append"],
        ),
        (
            "stats",
            vec!["--chunk-len", "8", "--no-stats"],
            vec!["stats", "T"],
        ),
    ] {
        for write in 1.. {
            let t = dir.path().join(format!("{name}{write}.zarr"));
            let t_s = t.to_str().unwrap();
            let mut args = vec!["convert", first.to_str().unwrap(), t_s];
            args.extend_from_slice(&create);
            zarrow_ok(&args);
            let args: Vec<&str> = run
                .iter()
                .map(|a| match *a {
                    "MORE" => more.to_str().unwrap(),
                    "T" => t_s,
                    other => other,
                })
                .collect();
            let out = zarrow_killed_at(write, &args);
            let done = out.status.success();
            if !done {
                assert_eq!(
                    out.status.signal(),
                    Some(9),
                    "{name} write {write}: {out:?}"
                );
                kills += 1;
            }
            assert_eq!(
                answers(&t, &[]),
                answers(&t, &["--ignore-stats"]),
                "{name} killed at write {write}"
            );
            if done {
                break;
            }
        }
    }
    assert!(kills >= 10, "{kills} kills");
}
