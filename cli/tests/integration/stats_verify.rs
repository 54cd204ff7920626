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
    assert!(
        text.contains("not used: recorded for other metadata"),
        "{text}"
    );
}
