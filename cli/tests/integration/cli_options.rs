//! Options of `zarrow convert` that reach the library: `--max-chunk-bytes`
//! (`ReadOptions::max_chunk_bytes`) and `--compression` (parquet's `Compression`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::basic::Compression;

use crate::common::{column, read_output, testdata, values, zarrow};

/// The strings of [`long_strings_store`]: 8 of 1000 bytes each.
fn long_strings() -> Vec<String> {
    (0..8u8)
        .map(|i| char::from(b'a' + i).to_string().repeat(1000))
        .collect()
}

/// A Zarr group (written by the CLI: vlen-utf8 + zstd) with one array `s` whose
/// one chunk `s/c/0` holds [`long_strings`]: about 8 KB decoded, a few dozen bytes
/// on disk, and only 8 elements (so a per-element bound cannot be what refuses it).
fn long_strings_store(dir: &Path) -> PathBuf {
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(long_strings()))],
    )
    .unwrap();
    let table = dir.join("long.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(&table).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let store = dir.join("long.zarr");
    let out = zarrow(&[
        "convert",
        table.to_str().unwrap(),
        store.to_str().unwrap(),
        "--chunk-len",
        "8",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chunk = std::fs::metadata(store.join("s/c/0")).unwrap().len();
    assert!(chunk < 1024, "the chunk is {chunk} bytes on disk");
    store
}

/// A chunk that decompresses past `--max-chunk-bytes` is a one-line error naming
/// the chunk and the limit, for a table and for the linear format, and nothing is
/// written; the default limit (and one above the chunk's size) converts it.
#[test]
fn max_chunk_bytes_reaches_the_reader() {
    let tmp = tempfile::tempdir().unwrap();
    let store = long_strings_store(tmp.path());
    let store = store.to_str().unwrap();
    for ext in ["parquet", "arrows", "csv"] {
        let dst = tmp.path().join(format!("small.{ext}"));
        let out = zarrow(&[
            "convert",
            store,
            dst.to_str().unwrap(),
            "--max-chunk-bytes",
            "1K",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{ext}: converted past the limit");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{ext}: {stderr}");
        assert!(
            stderr.starts_with("zarrow: error: chunk s/c/0: ") && stderr.contains("1024 bytes"),
            "{ext}: {stderr}"
        );
        assert!(!dst.exists(), "{ext}: output left behind");
    }
    for (name, flags) in [("default", &[][..]), ("8k", &["--max-chunk-bytes", "8K"])] {
        let dst = tmp.path().join(format!("{name}.parquet"));
        let mut args = vec!["convert", store, dst.to_str().unwrap()];
        args.extend(flags);
        let out = zarrow(&args);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            values(column(&read_output(&dst), "s").as_ref()),
            values(&StringArray::from(long_strings())),
            "{name}"
        );
    }
    // A bad size is refused before anything is read.
    let out = zarrow(&[
        "convert",
        store,
        tmp.path().join("x.parquet").to_str().unwrap(),
        "--max-chunk-bytes",
        "12X",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("max_chunk_bytes \"12X\"") && stderr.contains("K, M, G or T"),
        "{stderr}"
    );
}

/// The Parquet compression of column 0 of the file at `path`.
fn parquet_compression(path: &Path) -> Compression {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    reader.metadata().row_group(0).column(0).compression()
}

/// Every `--compression` spelling docs/cli.md and `--help` document (and parquet's
/// own) writes that codec; a bad one is refused, naming the accepted forms, and
/// nothing is written.
#[test]
fn compression_spellings() {
    let tmp = tempfile::tempdir().unwrap();
    let src = testdata().join("stores/obs.zarr/n_genes");
    let src = src.to_str().unwrap();
    let zstd = Compression::ZSTD(Default::default());
    let gzip = Compression::GZIP(Default::default());
    for (i, (name, expected)) in [
        ("zstd", zstd),
        ("zstd:5", zstd),
        ("zstd(5)", zstd),
        ("gzip", gzip),
        ("gzip(9)", gzip),
        ("snappy", Compression::SNAPPY),
        ("lz4", Compression::LZ4_RAW),
        ("lz4_raw", Compression::LZ4_RAW),
        ("none", Compression::UNCOMPRESSED),
        ("uncompressed", Compression::UNCOMPRESSED),
    ]
    .into_iter()
    .enumerate()
    {
        let dst = tmp.path().join(format!("{i}.parquet"));
        let out = zarrow(&["convert", src, dst.to_str().unwrap(), "--compression", name]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The file records the codec, not its level.
        assert_eq!(
            std::mem::discriminant(&parquet_compression(&dst)),
            std::mem::discriminant(&expected),
            "{name}"
        );
        assert_eq!(read_output(&dst)[0].num_rows(), 1000, "{name}");
    }
    let dst = tmp.path().join("bad.parquet");
    // What the option says it takes, as the declaration has it.
    let compressions = <zarrow::export::ExportOptions as zarrow::Options>::entries()
        .into_iter()
        .find(|e| e.key == "compression")
        .expect("a compression option")
        .takes;
    for name in ["bogus", "zstd:99", "zstd(", "zstd(é", "brotli(3)", "lzo"] {
        let out = zarrow(&["convert", src, dst.to_str().unwrap(), "--compression", name]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} accepted");
        assert!(stderr.contains(compressions), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(!dst.exists(), "{name}: output written");
    }
}

/// `--rows` and `--limit` against zarr-python's own reading of obs.zarr (the
/// expected IPC file written by the fixture generator), sliced.
#[test]
fn rows_and_limit_select_rows() {
    let dir = tempfile::tempdir().unwrap();
    let src = testdata().join("stores/obs.zarr");
    let expected = crate::common::read_ipc(&testdata().join("expected/obs.arrow"));
    for (args, range) in [
        (vec!["--rows", "3..9"], 3..9),
        (vec!["--limit", "4"], 0..4),
        (vec!["--rows", "2..10", "--limit", "3"], 2..5),
        (vec!["--rows", "5..5"], 5..5),
    ] {
        let out = dir.path().join("out.arrows");
        let mut command = vec![
            "convert",
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            "--overwrite",
        ];
        command.extend(&args);
        let run = zarrow(&command);
        assert!(
            run.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let got = read_output(&out);
        let rows: usize = got.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, range.len(), "{args:?}");
        for field in expected[0].schema().fields() {
            let want = column(&expected, field.name());
            let want = want.slice(range.start, range.len());
            if rows > 0 {
                assert_eq!(
                    values(column(&got, field.name()).as_ref()),
                    values(want.as_ref()),
                    "{args:?} {}",
                    field.name()
                );
            }
        }
    }
    for bad in [
        ["--rows", "9..3"],
        ["--rows", "x..3"],
        ["--rows", "0..99999"],
    ] {
        let out = dir.path().join("bad.arrows");
        let run = zarrow(&[
            "convert",
            src.to_str().unwrap(),
            out.to_str().unwrap(),
            bad[0],
            bad[1],
        ]);
        assert!(!run.status.success(), "{bad:?} was accepted");
        assert!(!out.exists());
    }
    // An N-d array has no rows to select.
    let nd = testdata().join("stores/v3_string_2d.zarr");
    let out = dir.path().join("nd.arrows");
    let run = zarrow(&[
        "convert",
        nd.to_str().unwrap(),
        out.to_str().unwrap(),
        "--limit",
        "2",
    ]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("1-D"));
}

/// The command line's hints follow the error's kind: columns of different
/// lengths, a group without a column, CF attributes zarrow cannot decode.
#[test]
fn hints_follow_the_kind_of_error() {
    use arrow_array::{ArrayRef, Int64Array};
    use zarrow::write::{WriteOptions, write_array, write_group_metadata};
    use zarrow::{LocalStore, Store};

    let tmp = tempfile::tempdir().unwrap();
    let convert = |store: &Path| {
        let out = zarrow(&[
            "convert",
            store.to_str().unwrap(),
            tmp.path().join("x.parquet").to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    // Two 1-D arrays of 3 and 4 rows.
    let uneven = tmp.path().join("uneven.zarr");
    std::fs::create_dir(&uneven).unwrap();
    let store: Arc<dyn Store> = Arc::new(LocalStore::new(&uneven));
    for (name, n) in [("a", 3), ("b", 4)] {
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        write_array(store.clone(), name, &values, WriteOptions::default()).unwrap();
    }
    write_group_metadata(store.as_ref(), "", &["a".into(), "b".into()], 3).unwrap();
    let stderr = convert(&uneven);
    assert!(stderr.contains("columns differ in length"), "{stderr}");
    assert!(
        stderr.contains("pick equal-length columns with --columns"),
        "{stderr}"
    );

    // A group whose one child is a group: no column.
    let nested = tmp.path().join("nested.zarr");
    std::fs::create_dir(&nested).unwrap();
    let store: Arc<dyn Store> = Arc::new(LocalStore::new(&nested));
    write_group_metadata(store.as_ref(), "inner", &[], 3).unwrap();
    write_group_metadata(store.as_ref(), "", &[], 3).unwrap();
    let stderr = convert(&nested);
    assert!(stderr.contains("no 1-D arrays"), "{stderr}");
    assert!(stderr.contains("convert a child on its own"), "{stderr}");

    // A CF calendar zarrow does not decode.
    let cf = tmp.path().join("noleap.zarr");
    std::fs::create_dir(&cf).unwrap();
    let store: Arc<dyn Store> = Arc::new(LocalStore::new(&cf));
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..3));
    write_array(store.clone(), "time", &values, WriteOptions::default()).unwrap();
    let key = "time/zarr.json";
    let mut doc: serde_json::Value =
        serde_json::from_slice(&store.get(key).unwrap().unwrap()).unwrap();
    doc["attributes"]["units"] = "days since 2000-01-01".into();
    doc["attributes"]["calendar"] = "noleap".into();
    store.set(key, &serde_json::to_vec(&doc).unwrap()).unwrap();
    write_group_metadata(store.as_ref(), "", &["time".into()], 3).unwrap();
    let stderr = convert(&cf);
    assert!(stderr.contains("noleap"), "{stderr}");
    assert!(stderr.contains("pass --no-cf"), "{stderr}");
}

/// The flags are the options' one declaration: each option of
/// `ConvertOptions` is a flag of `convert` (a flag on by default, its negation),
/// documented with its doc, and set by it.
#[test]
fn every_declared_option_is_a_flag() {
    use zarrow::Options as _;
    let help = zarrow(&["convert", "--help"]);
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for entry in zarrow::convert::ConvertOptions::entries() {
        let flag = entry.negated_flag.unwrap_or(entry.key).replace('_', "-");
        assert!(
            help.contains(&format!("--{flag}")),
            "--{flag} missing:\n{help}"
        );
        assert!(
            help.contains(&entry.paragraphs()[0]),
            "{}: no help",
            entry.key
        );
    }
    // A flag with the wrong value names its option, and nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let obs = testdata().join("stores/obs.zarr");
    let out = dir.path().join("t.parquet");
    let run = zarrow(&[
        "convert",
        obs.to_str().unwrap(),
        out.to_str().unwrap(),
        "--retry-timeout",
        "soon",
    ]);
    assert!(!run.status.success());
    assert!(String::from_utf8_lossy(&run.stderr).contains("retry_timeout \"soon\""));
    assert!(!out.exists());
    // lock_timeout applies to an append only, whichever flag asks for it.
    let run = zarrow(&[
        "convert",
        obs.to_str().unwrap(),
        out.to_str().unwrap(),
        "--lock-timeout",
        "5",
    ]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        (stderr.contains("lock_timeout") || stderr.contains("--lock-timeout"))
            && stderr.contains("Zarr output"),
        "{stderr}"
    );
    let run = zarrow(&["convert", obs.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(run.status.success());
    for append in [&["--append"][..], &["--mode", "append"]] {
        let zarr = dir.path().join(format!("t{}.zarr", append.len()));
        let mut args = vec![
            "convert",
            out.to_str().unwrap(),
            zarr.to_str().unwrap(),
            "--lock-timeout",
            "5",
        ];
        args.extend_from_slice(append);
        let run = zarrow(&args);
        assert!(
            run.status.success(),
            "{append:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(zarr.join("zarr.json").exists(), "{append:?}");
    }
}

/// docs/cli.md documents every flag the declaration makes.
#[test]
fn the_reference_lists_every_flag() {
    use zarrow::Options as _;
    let doc = std::fs::read_to_string(testdata().join("../docs/cli.md")).unwrap();
    let url = zarrow::location::UrlOptions::entries();
    for entry in zarrow::convert::ConvertOptions::entries()
        .into_iter()
        .chain(url)
    {
        let flag = entry.negated_flag.unwrap_or(entry.key).replace('_', "-");
        assert!(doc.contains(&format!("`--{flag}")), "docs/cli.md: --{flag}");
    }
}
