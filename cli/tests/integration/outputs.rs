//! What the `zarrow` binary leaves on disk when things go wrong: a kill -9 at any
//! moment leaves the destination absent, old or new (whole); signals remove the
//! partial output; stale partial outputs are cleaned up, live ones never; inputs
//! whose shape promises too much are refused before anything is written; a FIFO
//! never blocks a read; reserved Zarr names are refused as columns.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use zarrow::{LocalStore, ZarrGroup};

use crate::common::{copy_dir, read_output, zarrow};

/// A Parquet file of `rows` rows: a string and an int column whose values depend
/// on `seed`, so two tables are told apart by any value.
fn write_table(path: &Path, rows: usize, seed: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
    ]));
    let names: StringArray = (0..rows)
        .map(|i| Some(format!("cell-{seed}-{i}")))
        .collect();
    let ns = Int64Array::from_iter_values((0..rows as i64).map(|i| i * 7 + seed));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(names) as ArrayRef, Arc::new(ns)],
    )
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    batch
}

/// The whole table at `path`: a Zarr group read by zarrow, or a Parquet file.
fn read_table(path: &Path) -> RecordBatch {
    if path.is_dir() {
        let reader = ZarrGroup::open(Arc::new(LocalStore::new(path)), "")
            .unwrap()
            .reader()
            .build()
            .unwrap();
        let schema = arrow_array::RecordBatchReader::schema(&reader);
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        arrow_select::concat::concat_batches(&schema, &batches).unwrap()
    } else {
        let batches = read_output(path);
        arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
    }
}

/// Whether two tables hold the same columns (by name) and values.
fn same_values(a: &RecordBatch, b: &RecordBatch) -> bool {
    a.num_rows() == b.num_rows()
        && a.num_columns() == b.num_columns()
        && a.schema().fields().iter().all(|f| {
            match (a.column_by_name(f.name()), b.column_by_name(f.name())) {
                (Some(x), Some(y)) => x.as_ref() == y.as_ref(),
                _ => false,
            }
        })
}

/// The names in `dir` other than `keep`, sorted.
fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zarrow"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run zarrow")
}

/// Wait for `child` at most `limit`; `None` if it is still running.
fn wait_for(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Wait until a `.partial` output appears in `dir` (the conversion is writing).
fn wait_for_partial(dir: &Path, child: &mut Child) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if leftovers(dir, &[]).iter().any(|n| n.ends_with(".partial")) {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

#[test]
fn kill_9_leaves_the_destination_absent_old_or_new_never_broken() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let p = |name: &str| dir.join(name);
    let new_parquet = p("new.parquet");
    let new = write_table(&new_parquet, 400_000, 1);
    // The Zarr source of the other direction, in many small chunks.
    let src_zarr = p("src.zarr");
    let out = zarrow(&[
        "convert",
        new_parquet.to_str().unwrap(),
        src_zarr.to_str().unwrap(),
        "--chunk-len",
        "5000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let old_parquet = p("old.parquet");
    write_table(&old_parquet, 1_000, 2);

    // (source, destination name, how to make the old destination)
    let cases: [(&Path, &str, &Path); 2] = [
        (&new_parquet, "dst.zarr", &old_parquet),
        (&src_zarr, "dst.parquet", &old_parquet),
    ];
    for (src, dst_name, old_src) in cases {
        for overwrite in [false, true] {
            let dst = p(dst_name);
            let mut killed_partway = 0;
            // Kill points from the first moment to past the end, by the time a
            // whole run takes.
            let start = Instant::now();
            let whole = zarrow(&["convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
            assert!(
                whole.status.success(),
                "{}",
                String::from_utf8_lossy(&whole.stderr)
            );
            let duration = start.elapsed();
            for step in 0..12u32 {
                remove(&dst);
                let old = overwrite.then(|| {
                    if dst_name.ends_with(".zarr") {
                        let out =
                            zarrow(&["convert", old_src.to_str().unwrap(), dst.to_str().unwrap()]);
                        assert!(out.status.success());
                    } else {
                        std::fs::copy(old_src, &dst).unwrap();
                    }
                    read_table(&dst)
                });
                let mut args = vec!["convert", src.to_str().unwrap(), dst.to_str().unwrap()];
                if overwrite {
                    args.push("--overwrite");
                }
                let mut child = spawn(&args);
                std::thread::sleep(duration * step / 10);
                let finished = child.try_wait().unwrap().is_some();
                let _ = child.kill(); // SIGKILL
                child.wait().unwrap();
                if !finished {
                    killed_partway += 1;
                }
                let context = format!("{dst_name} overwrite={overwrite} step {step}");
                if dst.exists() {
                    let got = read_table(&dst);
                    let is_new = same_values(&got, &new);
                    let is_old = old.as_ref().is_some_and(|o| same_values(&got, o));
                    assert!(
                        is_new || is_old,
                        "{context}: destination is neither old nor new"
                    );
                } else {
                    assert!(old.is_none(), "{context}: the old destination is gone");
                }
            }
            assert!(
                killed_partway >= 3,
                "{dst_name}: only {killed_partway} kills landed mid-run"
            );
            // The next run removes what the killed ones left, and succeeds.
            let out = zarrow(&[
                "convert",
                src.to_str().unwrap(),
                dst.to_str().unwrap(),
                "--overwrite",
            ]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(same_values(&read_table(&dst), &new));
            let left = leftovers(dir, &["new.parquet", "old.parquet", "src.zarr", dst_name]);
            assert!(left.is_empty(), "left behind: {left:?}");
            remove(&dst);
        }
    }
}

fn remove(path: &Path) {
    if path.is_dir() {
        std::fs::remove_dir_all(path).unwrap();
    } else if path.exists() {
        std::fs::remove_file(path).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn signals_remove_the_partial_output() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("big.parquet");
    write_table(&src, 1_500_000, 3);
    let zarr = tmp.path().join("big.zarr");
    let out = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        zarr.to_str().unwrap(),
        "--chunk-len",
        "10000",
    ]);
    assert!(out.status.success());
    for (signal, src, dst_name) in [
        (libc::SIGINT, &src, "a.zarr"),
        (libc::SIGTERM, &src, "b.zarr"),
        (libc::SIGTERM, &zarr, "c.arrow"),
        (libc::SIGHUP, &zarr, "d.parquet"),
    ] {
        let dst = tmp.path().join(dst_name);
        let mut child = spawn(&["convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
        assert!(
            wait_for_partial(tmp.path(), &mut child),
            "{dst_name}: no partial output seen"
        );
        // SAFETY: kill(2) with a live child's pid and a valid signal number.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0);
        let status = wait_for(&mut child, Duration::from_secs(30)).expect("exits after a signal");
        assert_eq!(status.code(), Some(128 + signal), "{dst_name}");
        assert!(!dst.exists(), "{dst_name}");
        let left = leftovers(tmp.path(), &["big.parquet", "big.zarr"]);
        assert!(left.is_empty(), "{dst_name}: left behind: {left:?}");
    }
}

#[test]
fn stale_partials_are_removed_and_live_ones_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let src = testdata_store("obs.zarr");
    let dst = tmp.path().join("obs.parquet");
    // Left by processes that died: a file, and a directory with content.
    let dead_file = tmp.path().join(".obs.parquet.4000001.partial");
    std::fs::write(&dead_file, b"half a parquet file").unwrap();
    // Held by a live writer (this test holds its lock).
    let live: PathBuf = tmp.path().join(".obs.parquet.4000002.partial");
    std::fs::write(&live, b"being written").unwrap();
    let held = File::open(&live).unwrap();
    held.lock().unwrap();
    // Another destination's partial is not this conversion's business.
    let other = tmp.path().join(".other.parquet.4000003.partial");
    std::fs::write(&other, b"x").unwrap();

    let out = zarrow(&["convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!dead_file.exists());
    assert!(stderr.contains(".obs.parquet.4000001.partial"), "{stderr}");
    assert_eq!(std::fs::read(&live).unwrap(), b"being written");
    assert!(other.exists());

    // The same for Zarr directories.
    let zdst = tmp.path().join("t.zarr");
    let dead_dir = tmp.path().join(".t.zarr.4000004.partial");
    std::fs::create_dir_all(dead_dir.join("name/c")).unwrap();
    std::fs::write(dead_dir.join("name/c/0"), b"chunk").unwrap();
    let out = zarrow(&["convert", dst.to_str().unwrap(), zdst.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dead_dir.exists());
    drop(held);
}

fn testdata_store(name: &str) -> PathBuf {
    crate::common::testdata().join("stores").join(name)
}

#[test]
fn shapes_that_promise_too_much_are_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("huge.zarr");
    std::fs::create_dir(&store).unwrap();
    let meta = |shape: &str| {
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}], "data_type": "int8",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [1]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
            "codecs": [{{"name": "bytes"}}]}}"#
        )
    };
    let dst = tmp.path().join("out.parquet");
    let convert = |extra: &[&str]| {
        let mut args = vec!["convert", store.to_str().unwrap(), dst.to_str().unwrap()];
        args.extend(extra);
        let start = Instant::now();
        let out = zarrow(&args);
        assert!(start.elapsed() < Duration::from_secs(30), "{args:?} ran on");
        out
    };
    // 2^31 rows of fill values: refused by the row bound, naming the flag.
    std::fs::write(store.join("zarr.json"), meta("2147483648")).unwrap();
    let out = convert(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("2147483648 rows") && stderr.contains("--max-rows"),
        "{stderr}"
    );
    // Raised rows, then the byte bound (2 GiB of int8).
    let out = convert(&["--max-rows", "3000000000", "--max-bytes", "1G"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--max-bytes 2147483648"), "{stderr}");
    // Also for the linear format.
    let json = tmp.path().join("out.json");
    let out = zarrow(&["convert", store.to_str().unwrap(), json.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-rows"));
    // 2^64 - 1 is no shape anyone can index.
    std::fs::write(store.join("zarr.json"), meta("18446744073709551615")).unwrap();
    let out = convert(&[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("exceeds 2^63 - 1"));
    assert_eq!(leftovers(tmp.path(), &["huge.zarr"]), Vec::<String>::new());
    // Within the bounds, a shape of fill values converts.
    std::fs::write(store.join("zarr.json"), meta("1000")).unwrap();
    let out = convert(&["--max-rows", "1000", "--max-bytes", "1000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_table(&dst).num_rows(), 1000);
}

#[cfg(unix)]
#[test]
fn a_fifo_chunk_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.zarr");
    let src = testdata_store("v3_int32.zarr");
    copy_dir(&src, &store);
    let chunk = store.join("c").join("0");
    assert!(chunk.is_file(), "the fixture has chunk c/0");
    std::fs::remove_file(&chunk).unwrap();
    let c = std::ffi::CString::new(chunk.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let dst = tmp.path().join("out.arrow");
    let mut child = spawn(&["convert", store.to_str().unwrap(), dst.to_str().unwrap()]);
    let status = wait_for(&mut child, Duration::from_secs(30));
    if status.is_none() {
        let _ = child.kill();
        panic!("zarrow waits on a FIFO");
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("not a regular file"), "{stderr}");
}

#[test]
fn reserved_zarr_names_are_refused_as_columns() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"] {
        let schema = Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef],
        )
        .unwrap();
        let src = tmp.path().join("t.parquet");
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&src).unwrap(), schema, None)
            .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        for format in ["3", "2"] {
            let dst = tmp.path().join("t.zarr");
            let out = zarrow(&[
                "convert",
                src.to_str().unwrap(),
                dst.to_str().unwrap(),
                "--zarr-format",
                format,
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{name} v{format}");
            assert!(
                stderr.contains("metadata document"),
                "{name} v{format}: {stderr}"
            );
            assert!(!dst.exists());
        }
    }
}
