//! `zarrow stats --verify`: every recorded chunk checked against the store,
//! exit code 1 when a statistic is stale or a file is not used. The store is
//! changed as zarr-python changes it: a chunk file stored again, the shape
//! rewritten in the metadata alone.

use crate::common::{copy_dir, testdata, zarrow};

fn verify(store: &std::path::Path) -> (bool, String) {
    let out = zarrow(&["stats", store.to_str().unwrap(), "--verify"]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn verify_names_stale_chunks_and_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("obs.zarr");
    copy_dir(&testdata().join("stores").join("obs.zarr"), &store);
    let record = zarrow(&["stats", store.to_str().unwrap()]);
    assert!(record.status.success(), "{record:?}");
    let (ok, text) = verify(&store);
    assert!(ok, "{text}");
    assert!(text.contains("n_genes:"), "{text}");
    assert!(!text.contains("stale"), "{text}");

    // A chunk stored again (a new file, as zarr-python writes one).
    let n_genes = store.join("n_genes");
    // v3 default keys: n_genes/c/0, c/1, ...
    let chunk = n_genes.join("c").join("0");
    assert!(chunk.is_file(), "{chunk:?}");
    let bytes = std::fs::read(&chunk).unwrap();
    std::fs::remove_file(&chunk).unwrap();
    std::fs::write(&chunk, &bytes).unwrap();
    let (ok, text) = verify(&store);
    assert!(!ok, "a rewritten chunk must fail the check: {text}");
    assert!(
        text.contains("n_genes: ") && text.contains("stale"),
        "{text}"
    );

    // Recorded again: clean; then the metadata changed under them.
    assert!(zarrow(&["stats", store.to_str().unwrap()]).status.success());
    assert!(verify(&store).0);
    let meta = ["zarr.json", ".zattrs"]
        .iter()
        .map(|m| n_genes.join(m))
        .find(|p| p.exists())
        .unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    let attributes = if meta.ends_with("zarr.json") {
        doc.as_object_mut()
            .unwrap()
            .entry("attributes")
            .or_insert_with(|| serde_json::json!({}))
    } else {
        &mut doc
    };
    attributes
        .as_object_mut()
        .unwrap()
        .insert("units".into(), serde_json::json!("genes"));
    std::fs::write(&meta, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (ok, text) = verify(&store);
    assert!(!ok, "{text}");
    let line = text.lines().find(|l| l.starts_with("n_genes: ")).unwrap();
    // None is used: no count of fresh or stale chunks beside it.
    assert_eq!(
        line,
        "n_genes: not used: recorded for other metadata (data type, fill value or attributes)",
        "{text}"
    );
}

/// A sharded array's statistics describe its inner chunks: the count is of
/// those, as the stale chunks' numbers are.
#[test]
fn show_counts_the_chunks_statistics_describe() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("t.arrow");
    let store = tmp.path().join("t.zarr");
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "x",
        arrow_schema::DataType::Int32,
        false,
    )]));
    let batch = arrow_array::RecordBatch::try_new(
        schema.clone(),
        vec![std::sync::Arc::new(
            arrow_array::Int32Array::from_iter_values(0..40),
        )],
    )
    .unwrap();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&src).unwrap(), &schema)
            .unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    let out = zarrow(&[
        "convert",
        src.to_str().unwrap(),
        store.to_str().unwrap(),
        "--chunk-len",
        "5",
        "--shard-len",
        "20",
    ]);
    assert!(out.status.success(), "{out:?}");
    let (ok, text) = verify(&store);
    assert!(ok, "{text}");
    // 40 rows: 2 shards of 4 inner chunks of 5 rows each.
    assert!(text.contains("x: 8 of 8 chunks"), "{text}");
}
