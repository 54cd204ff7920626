//! The `zarrow` binary: every test store converts to Parquet, IPC file and IPC
//! stream with its writer's values; errors are one line and a non-zero exit.

use std::fs::File;
use std::path::Path;

use arrow_array::RecordBatch;

use crate::common::{column, read_ipc, read_output, testdata, values, zarrow};

#[test]
fn every_store_converts_with_its_writers_values() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut stores: Vec<_> = std::fs::read_dir(testdata().join("stores"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    stores.sort();
    for store in stores {
        let case = store.file_stem().unwrap().to_str().unwrap().to_string();
        let expected = read_ipc(&testdata().join("expected").join(format!("{case}.arrow")));
        // The IPC file is converted from a memory-mapped store.
        for (ext, flags) in [
            ("parquet", &[][..]),
            ("arrow", &["--mmap"][..]),
            ("arrows", &[]),
        ] {
            let out = tmp.path().join(format!("{case}.{ext}"));
            let mut args = vec!["convert", store.to_str().unwrap(), out.to_str().unwrap()];
            args.extend(flags);
            let result = zarrow(&args);
            assert!(
                result.status.success(),
                "{case}.{ext}: {}",
                String::from_utf8_lossy(&result.stderr)
            );
            let got = read_output(&out);
            // Parquet has no seconds: a timestamp in seconds is written in
            // milliseconds (as pyarrow writes it), the same instants.
            let expected: Vec<RecordBatch> = if ext == "parquet" {
                expected.iter().map(seconds_as_millis).collect()
            } else {
                expected.clone()
            };
            let schema = expected[0].schema();
            // Names and types as the writer's; zarrow's fields are non-nullable
            // (Zarr has no nulls but NaT) where pyarrow's defaults are nullable.
            let shape = |s: &arrow_schema::Schema| -> Vec<(String, arrow_schema::DataType)> {
                s.fields()
                    .iter()
                    .map(|f| (f.name().clone(), f.data_type().clone()))
                    .collect()
            };
            assert_eq!(
                shape(&got[0].schema()),
                shape(&schema),
                "{case}.{ext}: schema"
            );
            // Only times can hold a null (numpy's NaT).
            assert!(
                got[0]
                    .schema()
                    .fields()
                    .iter()
                    .all(|f| !f.is_nullable() || f.data_type().is_temporal())
            );
            for field in schema.fields() {
                let g = column(&got, field.name());
                let w = column(&expected, field.name());
                assert_eq!(
                    values(g.as_ref()),
                    values(w.as_ref()),
                    "{case}.{ext}: column {}",
                    field.name()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 3 * 70, "only {checked} conversions checked");
}

/// `batch` with its timestamps in seconds as milliseconds.
fn seconds_as_millis(batch: &RecordBatch) -> RecordBatch {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{TimestampMillisecondType, TimestampSecondType};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};

    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        match field.data_type() {
            DataType::Timestamp(TimeUnit::Second, tz) => {
                let seconds = column.as_primitive::<TimestampSecondType>();
                let millis = seconds
                    .unary::<_, TimestampMillisecondType>(|s| s.wrapping_mul(1000))
                    .with_timezone_opt(tz.clone());
                fields.push(Field::new(
                    field.name(),
                    DataType::Timestamp(TimeUnit::Millisecond, tz.clone()),
                    field.is_nullable(),
                ));
                columns.push(std::sync::Arc::new(millis) as arrow_array::ArrayRef);
            }
            _ => {
                fields.push(field.as_ref().clone());
                columns.push(column.clone());
            }
        }
    }
    RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns).unwrap()
}

#[test]
fn info_describes_an_array() {
    let store = testdata()
        .join("stores")
        .join("v3_string_fill_missing.zarr");
    let out = zarrow(&["info", store.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "array (Zarr v3)",
        "data type:     string",
        "fill value:    \"NA\"",
        "arrow type:    Utf8",
        "present",
        "zstd",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let chunks_line = text.lines().find(|l| l.starts_with("chunks:")).unwrap();
    let present: u64 = chunks_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let total: u64 = chunks_line
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        present < total,
        "the store has missing chunks: {chunks_line}"
    );
    let view = zarrow(&[
        "info",
        store.to_str().unwrap(),
        "--string-type",
        "utf8-view",
    ]);
    assert!(
        String::from_utf8(view.stdout)
            .unwrap()
            .contains("arrow type:    Utf8View")
    );
}

#[test]
fn info_describes_a_group_as_a_table() {
    let out = zarrow(&[
        "info",
        testdata().join("stores").join("obs.zarr").to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("group (Zarr v3)"));
    assert!(
        text.contains("table:         6 columns x 1000 rows"),
        "{text}"
    );
}

#[test]
fn errors_are_one_line_and_nonzero() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("out.parquet");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "convert".into(),
                testdata()
                    .join("bad/zstd_garbage.zarr")
                    .display()
                    .to_string(),
                dst.display().to_string(),
            ],
            "zstd",
        ),
        (
            vec![
                "convert".into(),
                testdata()
                    .join("stores/v3_string.zarr")
                    .display()
                    .to_string(),
                tmp.path().join("x.xlsx").display().to_string(),
            ],
            "output format",
        ),
        (
            vec![
                "convert".into(),
                "/nonexistent/store.zarr".into(),
                dst.display().to_string(),
            ],
            "does not exist",
        ),
        (
            vec![
                "info".into(),
                testdata()
                    .join("bad/meta_unknown_codec.zarr")
                    .display()
                    .to_string(),
            ],
            "numcodecs.zfpy",
        ),
        (
            vec![
                "convert".into(),
                testdata()
                    .join("bad/symlink_escape.zarr")
                    .display()
                    .to_string(),
                dst.display().to_string(),
            ],
            "outside the store root",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = zarrow(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // A failed conversion leaves no output behind.
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
}

#[test]
fn existing_output_is_kept_without_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("out.arrow");
    std::fs::write(&dst, b"precious").unwrap();
    let src = testdata().join("stores").join("v3_string.zarr");
    let out = zarrow(&["convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&dst).unwrap(), b"precious");
    let out = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--overwrite",
    ]);
    assert!(out.status.success());
    assert_eq!(read_output(&dst)[0].schema().field(0).name(), "v3_string");
}

#[test]
fn columns_and_compression_options() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("obs.parquet");
    let src = testdata().join("stores").join("obs.zarr");
    let out = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--columns",
        "n_genes,cell_type",
        "--compression",
        "snappy",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let batches = read_output(&dst);
    let names: Vec<_> = batches[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["n_genes", "cell_type"]);
    let meta = parquet::file::reader::SerializedFileReader::new(File::open(&dst).unwrap()).unwrap();
    let compression = parquet::file::reader::FileReader::metadata(&meta)
        .row_group(0)
        .column(0)
        .compression();
    assert_eq!(compression, parquet::basic::Compression::SNAPPY);
    let bad = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--overwrite",
        "--columns",
        "nope",
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no column named \"nope\""));
}

/// Write a small Parquet file with a null in column `b` (row 2).
fn parquet_with_null(path: &Path) {
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("a", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("b", arrow_schema::DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(arrow_array::Int64Array::from(vec![1, 2, 3])),
            Arc::new(arrow_array::StringArray::from(vec![
                Some("x"),
                Some("y"),
                None,
            ])),
        ],
    )
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn table_to_zarr_refuses_nulls_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("t.parquet");
    parquet_with_null(&src);
    let dst = tmp.path().join("t.zarr");
    let out = zarrow(&["convert", src.to_str().unwrap(), dst.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("column \"b\" has a null at row 2"),
        "{stderr}"
    );
    assert!(stderr.contains("pass --nulls fill"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // No output, and no temporary directory left behind.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("t.parquet")]);

    let out = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--nulls",
        "fill",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = tmp.path().join("back.arrow");
    assert!(
        zarrow(&["convert", dst.to_str().unwrap(), back.to_str().unwrap()])
            .status
            .success()
    );
    let batches = read_output(&back);
    assert_eq!(
        values(column(&batches, "b").as_ref()),
        values(&arrow_array::StringArray::from(vec!["x", "y", ""]))
    );
    assert_eq!(
        batches[0].schema().field(0).name(),
        "a",
        "column order kept"
    );
}

#[test]
fn table_to_zarr_overwrite_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("t.arrow");
    assert!(
        zarrow(&[
            "convert",
            testdata().join("stores/v3_string.zarr").to_str().unwrap(),
            src.to_str().unwrap()
        ])
        .status
        .success()
    );
    let dst = tmp.path().join("out.zarr");
    let src_s = src.to_str().unwrap();
    let dst_s = dst.to_str().unwrap();
    assert!(zarrow(&["convert", src_s, dst_s]).status.success());
    // Exists: refused without --overwrite, replaced with it.
    let again = zarrow(&["convert", src_s, dst_s]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));
    assert!(
        zarrow(&[
            "convert",
            src_s,
            dst_s,
            "--overwrite",
            "--encoding",
            "zarrs-vlen"
        ])
        .status
        .success()
    );
    let meta = std::fs::read_to_string(dst.join("v3_string").join("zarr.json")).unwrap();
    assert!(meta.contains("zarrs.vlen"));
    // A directory that is not a Zarr store is never replaced.
    let precious = tmp.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("notes.txt"), b"keep me").unwrap();
    let out = zarrow(&["convert", src_s, precious.to_str().unwrap(), "--overwrite"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Zarr store"));
    assert_eq!(
        std::fs::read(precious.join("notes.txt")).unwrap(),
        b"keep me"
    );
    // Bad option values are one-line errors.
    for (flag, value) in [
        ("--encoding", "nope"),
        ("--compressor", "lzma"),
        ("--nulls", "maybe"),
        ("--zarr-format", "4"),
    ] {
        let out = zarrow(&[
            "convert",
            src_s,
            tmp.path().join("x.zarr").to_str().unwrap(),
            flag,
            value,
        ]);
        assert!(!out.status.success(), "{flag} {value}");
    }
    let out = zarrow(&[
        "convert",
        src_s,
        tmp.path().join("x.zarr").to_str().unwrap(),
        "--zarr-format",
        "2",
        "--encoding",
        "zep0007",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs Zarr v3"));
}

#[test]
fn linear_json_and_csv_round_trip_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    // Zarr -> CSV -> Zarr -> CSV reproduces the CSV byte for byte.
    let obs = testdata().join("stores/obs.zarr");
    assert!(
        zarrow(&["convert", obs.to_str().unwrap(), &p("obs.csv")])
            .status
            .success()
    );
    let out = zarrow(&["convert", &p("obs.csv"), &p("obs.zarr")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        zarrow(&["convert", &p("obs.zarr"), &p("again.csv")])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read(p("obs.csv")).unwrap(),
        std::fs::read(p("again.csv")).unwrap()
    );

    // A 2-d string array -> JSON -> Zarr keeps its shape and values; JSON -> Parquet
    // gives the flattened column.
    let src = testdata().join("stores/v3_string_2d.zarr");
    assert!(
        zarrow(&["convert", src.to_str().unwrap(), &p("s.json")])
            .status
            .success()
    );
    assert!(
        zarrow(&["convert", &p("s.json"), &p("s.zarr"), "--zarr-format", "2"])
            .status
            .success()
    );
    let back = zarrow::ZarrArray::open(
        std::sync::Arc::new(zarrow::LocalStore::new(p("s.zarr"))),
        "",
    )
    .unwrap();
    assert_eq!(back.metadata().shape, vec![5, 3]);
    assert_eq!(back.metadata().zarr_format, 2);
    let original =
        zarrow::ZarrArray::open(std::sync::Arc::new(zarrow::LocalStore::new(&src)), "").unwrap();
    assert_eq!(
        values(back.read_all().unwrap().as_ref()),
        values(original.read_all().unwrap().as_ref())
    );
    assert!(
        zarrow(&["convert", &p("s.json"), &p("s.parquet")])
            .status
            .success()
    );
    assert_eq!(read_output(Path::new(&p("s.parquet")))[0].num_rows(), 15);

    // A group does not fit one JSON array.
    let out = zarrow(&["convert", obs.to_str().unwrap(), &p("obs.json")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(".csv"));
}

#[test]
fn invalid_linear_input_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"["version","1.0.0","ndarray","shape",2,"strides",1,"offset",0,"order","row-major","dtype","int8","length",2,"capacity",2,"data",1,300]"#,
    )
    .unwrap();
    let dst = tmp.path().join("bad.zarr");
    let out = zarrow(&["convert", bad.to_str().unwrap(), dst.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("linear format: data[1]: expected a value of dtype int8, found 300"),
        "{stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("bad.json")]);
}

#[test]
fn parquet_row_groups_are_bounded_by_size() {
    use std::sync::Arc;
    // ~40 MB of strings in batches of ~4 MB: the writer must close row groups of
    // about zarrow::export::ROW_GROUP_BYTES rather than buffer everything.
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "s",
        arrow_schema::DataType::Utf8,
        false,
    )]));
    let batches: Vec<RecordBatch> = (0..10)
        .map(|b| {
            let values: Vec<String> = (0..100_000)
                .map(|i| format!("{b:02}-{i:08}-{:032}", i * 7919 % 1_000_003))
                .collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(arrow_array::StringArray::from(values))],
            )
            .unwrap()
        })
        .collect();
    let reader = arrow_array::RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.parquet");
    let rows = zarrow::export::write_parquet(
        reader,
        File::create(&path).unwrap(),
        parquet::basic::Compression::UNCOMPRESSED,
    )
    .unwrap();
    assert_eq!(rows, 1_000_000);
    let meta =
        parquet::file::reader::SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
    let groups = parquet::file::reader::FileReader::metadata(&meta).num_row_groups();
    assert!(groups >= 2, "one row group held everything");
}

#[test]
fn the_cli_names_what_it_does_not_convert() {
    // info describes a group whose only child is unreadable, naming it.
    let bad = testdata().join("bad/group_bad_child.zarr");
    let info = zarrow(&["info", bad.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.status.success(),
        "{}",
        String::from_utf8_lossy(&info.stderr)
    );
    assert!(stdout.contains("a: cannot be read"), "{stdout}");
    // convert of the sample obs group names the 2-D array and the subgroup it leaves out.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("obs.arrow");
    let obs = testdata().join("stores/obs.zarr");
    let run = zarrow(&["convert", obs.to_str().unwrap(), out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("not converted: X_umap: a 2-D array"),
        "{stderr}"
    );
    assert!(stderr.contains("not converted: uns: a group"), "{stderr}");
    // A projection that leaves them out says nothing about them.
    let run = zarrow(&[
        "convert",
        obs.to_str().unwrap(),
        out.to_str().unwrap(),
        "--overwrite",
        "--columns",
        "barcode",
    ]);
    assert!(run.status.success());
    assert!(!String::from_utf8_lossy(&run.stderr).contains("not converted"));
}
