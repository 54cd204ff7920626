//! Every store in testdata/bad/ must give the typed error testdata/bad/expected.json
//! names for it: never a panic, never success. A store without an expectation (or
//! an expectation without a store) fails the suite, so new corpus files cannot be
//! added silently.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use zarrow::{
    ChunkError, Error, LocalStore, NodeMetadata, ReadOptions, StringType, ZarrArray, ZarrGroup,
    read_node,
};

use crate::common::testdata;

/// "Variant" or "Chunk:Variant" for an error.
fn kind(e: &Error) -> String {
    fn variant(debug: String) -> String {
        debug
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("")
            .to_string()
    }
    match e {
        Error::Chunk { source, .. } => format!("Chunk:{}", variant(format!("{source:?}"))),
        other => variant(format!("{other:?}")),
    }
}

/// Read everything in the store the way `zarrow convert` does.
fn read_everything(
    path: &std::path::Path,
    string_type: StringType,
    memory_map: bool,
) -> zarrow::Result<()> {
    let store = Arc::new(if memory_map {
        // SAFETY: the corpus files are checked in and nothing writes them while
        // the tests run.
        unsafe { LocalStore::new_memory_mapped(path) }
    } else {
        LocalStore::new(path)
    });
    let options = ReadOptions {
        string_type: Some(string_type),
        ..ReadOptions::default()
    };
    match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            // Streamed first, as `zarrow convert` reads; then whole (which refuses
            // to materialise past `max_read_bytes` before it reads a chunk).
            let array = ZarrArray::open_with(store, "", options)?;
            for batch in array.batches(&zarrow::ExecutionContext::default()) {
                batch?;
            }
            array.read_all()?;
        }
        NodeMetadata::Group(_) => {
            for batch in ZarrGroup::open_with(store, "", options)?.reader().build()? {
                batch?;
            }
        }
    }
    Ok(())
}

#[test]
fn every_bad_store_gives_its_typed_error() {
    let dir = testdata().join("bad");
    let expected: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let mut stores: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|n| n.strip_suffix(".zarr").map(str::to_string))
        .collect();
    stores.sort();
    let listed: Vec<String> = expected.keys().cloned().collect();
    assert_eq!(
        stores, listed,
        "testdata/bad/*.zarr and expected.json disagree: add an expectation for every case"
    );

    let mut failures = Vec::new();
    for (case, want) in &expected {
        let runs = [
            StringType::Utf8,
            StringType::LargeUtf8,
            StringType::Utf8View,
        ]
        .into_iter()
        .flat_map(|t| [(t, false), (t, true)]);
        for (string_type, mapped) in runs {
            let path = dir.join(format!("{case}.zarr"));
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                read_everything(&path, string_type, mapped)
            }));
            let how = format!("{string_type:?}{}", if mapped { ", mapped" } else { "" });
            match outcome {
                Err(_) => failures.push(format!("{case} ({how}): PANICKED")),
                Ok(Ok(())) => failures.push(format!(
                    "{case} ({how}): read without error, expected {want}"
                )),
                Ok(Err(e)) if &kind(&e) != want => failures.push(format!(
                    "{case} ({how}): got {} ({e}), expected {want}",
                    kind(&e)
                )),
                Ok(Err(e)) => {
                    // The message names the chunk key for chunk errors.
                    if let Error::Chunk { key, .. } = &e {
                        assert!(e.to_string().contains(key.as_str()));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn chunk_errors_keep_their_source() {
    let path = testdata().join("bad").join("crc32c_mismatch.zarr");
    let err = read_everything(&path, StringType::Utf8, false).unwrap_err();
    let source = std::error::Error::source(&err).expect("a source");
    assert!(source.downcast_ref::<ChunkError>().is_some());
    let arrow: arrow_schema::ArrowError = err.into();
    assert!(arrow.to_string().contains("crc32c"));
}
