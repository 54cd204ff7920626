//! The order in which a conversion makes its output durable, read from the kernel's
//! side (`strace -y`, which names each descriptor's file): every file and
//! directory of the output synced before the rename that makes it appear, its
//! parent directory after; and the writeback of the output started while it is
//! being written, not only at the end. Linux only (`sync_file_range`); `strace`
//! must be installed (`.ci/run` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

/// A Parquet file of `rows` rows of a string and an int column.
fn write_input(path: &Path, rows: usize) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("n", DataType::Int64, false),
    ]));
    let names: StringArray = (0..rows)
        .map(|i| Some(format!("cell-{i}-{}", i * 7919 % 1_000_003)))
        .collect();
    let ns = Int64Array::from_iter_values((0..rows as i64).map(|i| i * 31));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(names) as ArrayRef, Arc::new(ns)],
    )
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// One traced system call: its name and its text (arguments and result).
#[derive(Debug)]
struct Call {
    name: String,
    text: String,
}

/// Run `zarrow ARGS` under strace; the calls that matter here, in order.
fn traced(dir: &Path, args: &[&str]) -> Vec<Call> {
    let trace = dir.join("trace");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "8", "-o"])
        .arg(&trace)
        .args([
            "-e",
            "trace=fsync,fdatasync,sync_file_range,rename,renameat,renameat2,write,pwrite64",
        ])
        .arg(env!("CARGO_BIN_EXE_zarrow"))
        .args(args)
        .status()
        .expect("strace must be installed to run this test (apt-get install strace)");
    assert!(status.success(), "zarrow {args:?} failed under strace");
    let text = std::fs::read_to_string(&trace).unwrap();
    text.lines()
        .filter_map(|line| {
            // `PID name(args) = result`, or `PID name(args <unfinished ...>`;
            // a `<... name resumed>` line continues a call already counted.
            let rest = line.split_once(' ')?.1.trim_start();
            if rest.starts_with("<...") {
                return None;
            }
            let (name, _) = rest.split_once('(')?;
            Some(Call {
                name: name.to_string(),
                text: rest.to_string(),
            })
        })
        .collect()
}

/// The index of the first call named one of `names` whose text holds `needle`.
fn first(calls: &[Call], names: &[&str], needle: &str) -> Option<usize> {
    calls
        .iter()
        .position(|c| names.contains(&c.name.as_str()) && c.text.contains(needle))
}

/// The index of the last such call.
fn last(calls: &[Call], names: &[&str], needle: &str) -> Option<usize> {
    calls
        .iter()
        .rposition(|c| names.contains(&c.name.as_str()) && c.text.contains(needle))
}

/// A descriptor argument as `strace -y` prints it: `N</path>`.
fn fd(path: &Path) -> String {
    format!("<{}>", path.display())
}

const RENAMES: &[&str] = &["rename", "renameat", "renameat2"];
const SYNCS: &[&str] = &["fsync", "fdatasync"];

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    // strace prints descriptors' canonical paths.
    let dir = tmp.path().canonicalize().unwrap();
    (tmp, dir)
}

#[test]
fn a_file_output_is_written_back_as_it_grows_and_synced_before_it_appears() {
    let (_tmp, dir) = tmp();
    let parquet = dir.join("in.parquet");
    write_input(&parquet, 600_000);
    let input = dir.join("in.zarr");
    let made = crate::common::zarrow(&[
        "convert",
        parquet.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(made.status.success());
    let out = dir.join("out.arrow");
    let calls = traced(
        &dir,
        &["convert", input.to_str().unwrap(), out.to_str().unwrap()],
    );
    // The partial file beside the destination, as the final rename names it.
    let rename = last(&calls, RENAMES, &format!("\"{}\"", out.display()))
        .expect("the output is renamed into place");
    let partial = calls[rename]
        .text
        .split('"')
        .nth(1)
        .map(PathBuf::from)
        .unwrap();
    assert!(
        partial.to_string_lossy().ends_with(".partial"),
        "{partial:?}"
    );
    let partial_fd = fd(&partial);
    let last_write = last(&calls, &["write", "pwrite64"], &partial_fd).unwrap();
    // Writeback starts while the file is written (the output is over 8 MB: at
    // least two steps of 4 MB), not only once at the end.
    let started: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name == "sync_file_range" && c.text.contains(&partial_fd))
        .map(|(i, _)| i)
        .collect();
    assert!(std::fs::metadata(&out).unwrap().len() > 8 << 20);
    assert!(
        started.len() >= 2 && started[0] < last_write,
        "writeback started at calls {started:?}, the last write is call {last_write}"
    );
    // Synced after its last write, before it appears; its directory after that.
    let synced = last(&calls, SYNCS, &partial_fd).expect("the partial file is synced");
    assert!(last_write < synced && synced < rename);
    let dir_synced = last(&calls, SYNCS, &fd(&dir)).expect("the directory is synced");
    assert!(dir_synced > rename);
}

#[test]
fn every_file_and_directory_of_a_zarr_output_is_synced_before_it_appears() {
    let (_tmp, dir) = tmp();
    let input = dir.join("in.parquet");
    write_input(&input, 50_000);
    let out = dir.join("out.zarr");
    let calls = traced(
        &dir,
        &[
            "convert",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "--chunk-len",
            "10000",
        ],
    );
    let appear = last(&calls, RENAMES, &format!("\"{}\"", out.display()))
        .expect("the store is renamed into place");
    let partial = PathBuf::from(calls[appear].text.split('"').nth(1).unwrap());
    // What the store holds now, at its final place, is what the partial held.
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(out.join(&rel)).unwrap() {
            let entry = entry.unwrap();
            let rel = rel.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                dirs.push(rel.clone());
                stack.push(rel);
            } else {
                files.push(rel);
            }
        }
    }
    // 2 columns x 5 chunks, their arrays' and the group's metadata.
    assert!(files.len() >= 13, "{files:?}");
    for file in &files {
        let path = partial.join(file);
        let written = last(&calls, RENAMES, &format!("\"{}\"", path.display()))
            .unwrap_or_else(|| panic!("{path:?} written (by a rename of its temporary file)"));
        let synced = last(&calls, SYNCS, &fd(&path))
            .unwrap_or_else(|| panic!("{path:?} is synced before the store appears"));
        assert!(written < synced && synced < appear, "{path:?}");
    }
    for sub in &dirs {
        let path = if sub.as_os_str().is_empty() {
            partial.clone()
        } else {
            partial.join(sub)
        };
        let synced = last(&calls, SYNCS, &fd(&path))
            .unwrap_or_else(|| panic!("the directory {path:?} is synced"));
        assert!(synced < appear, "{path:?}");
    }
    assert!(last(&calls, SYNCS, &fd(&dir)).unwrap() > appear);
    // The writes themselves start writeback instead of waiting for the disk.
    let chunk = partial.join(&files[0]);
    assert!(first(&calls, &["sync_file_range"], &partial.display().to_string()).is_some());
    assert!(first(&calls, &["fdatasync"], &chunk.display().to_string()).is_none());
}
