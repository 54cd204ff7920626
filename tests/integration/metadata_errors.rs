//! A metadata document that is not valid Zarr gives an `Error::Metadata` whose
//! typed fields name the document, the field at fault, what was expected there
//! and what was found: each test writes one corruption and checks the fields
//! against what it wrote, not against zarrow's message.

use std::sync::Arc;

use serde_json::{Value, json};
use zarrow::{Error, ErrorKind, MemoryStore, Store, ZarrArray, read_node};

/// A valid v3 int32 array document, for a test to corrupt.
fn v3_array() -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    })
}

/// The error opening the array at `obs` whose `zarr.json` is `doc`.
fn open_error(doc: &Value) -> Error {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    store
        .set("obs/zarr.json", doc.to_string().as_bytes())
        .unwrap();
    // Parsed alone, or opened (which builds the codecs): the same error.
    match read_node(store.as_ref(), "obs") {
        Err(e) => e,
        Ok(_) => match ZarrArray::open(store, "obs") {
            Err(e) => e,
            Ok(_) => panic!("{doc} opened"),
        },
    }
}

/// The error's metadata fields: (key, field, codec, expected, found).
type Parts = (String, String, Option<String>, String, Option<String>);

fn parts(e: Error) -> Parts {
    assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{e}");
    match e {
        Error::Metadata {
            key,
            field,
            codec,
            expected,
            found,
        } => (
            key,
            field,
            codec.map(String::from),
            expected,
            found.map(String::from),
        ),
        other => panic!("not a metadata error: {other:?}"),
    }
}

#[test]
fn a_negative_extent_names_the_shape_and_the_value() {
    let mut doc = v3_array();
    doc["shape"] = json!([4, -7]);
    doc["chunk_grid"]["configuration"]["chunk_shape"] = json!([2, 2]);
    let (key, field, codec, expected, found) = parts(open_error(&doc));
    assert_eq!(key, "obs/zarr.json");
    assert_eq!(field, "shape[1]");
    assert_eq!(codec, None);
    assert!(expected.contains("u64"), "{expected}");
    assert!(
        found.as_deref().is_some_and(|f| f.contains("-7")),
        "{found:?}"
    );
}

#[test]
fn a_missing_field_is_named_with_its_path() {
    let mut doc = v3_array();
    doc["chunk_grid"]["configuration"] = json!({"chunk_shap": [2]});
    let (key, field, _, expected, found) = parts(open_error(&doc));
    assert_eq!(key, "obs/zarr.json");
    assert_eq!(field, "chunk_grid.configuration.chunk_shape");
    assert!(expected.contains("required"), "{expected}");
    assert_eq!(found, None);
}

#[test]
fn a_wrong_value_says_what_was_expected_and_found() {
    let mut doc = v3_array();
    doc["node_type"] = json!("tree");
    let (_, field, _, expected, found) = parts(open_error(&doc));
    assert_eq!(field, "node_type");
    assert!(expected.contains("\"array\""), "{expected}");
    assert_eq!(found.as_deref(), Some("\"tree\""));

    let mut doc = v3_array();
    doc["chunk_key_encoding"]["configuration"]["separator"] = json!("-");
    let (_, field, _, _, found) = parts(open_error(&doc));
    assert_eq!(field, "chunk_key_encoding.configuration.separator");
    assert_eq!(found.as_deref(), Some("\"-\""));

    let mut doc = v3_array();
    doc["chunk_grid"]["configuration"]["chunk_shape"] = json!([0]);
    let (_, field, _, _, found) = parts(open_error(&doc));
    assert_eq!(field, "chunk_grid.configuration.chunk_shape");
    assert_eq!(found.as_deref(), Some("[0]"));

    let mut doc = v3_array();
    doc["fill_value"] = json!("zero");
    let (_, field, _, expected, found) = parts(open_error(&doc));
    assert_eq!(field, "fill_value");
    assert!(expected.contains("int32"), "{expected}");
    assert_eq!(found.as_deref(), Some("\"zero\""));
}

#[test]
fn a_codec_configuration_error_names_the_codec_and_its_field() {
    // A value out of range (checked by the codec).
    let mut doc = v3_array();
    doc["codecs"] = json!([
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "gzip", "configuration": {"level": 5}},
        {"name": "transpose", "configuration": {"order": [0]}},
    ]);
    let (key, field, codec, expected, _) = parts(open_error(&doc));
    assert_eq!(key, "obs/zarr.json");
    assert_eq!(field, "codecs");
    assert_eq!(codec.as_deref(), Some("transpose"));
    assert!(
        expected.contains("before the array->bytes codec"),
        "{expected}"
    );

    // A value of the wrong type (found by serde, with its path).
    let mut doc = v3_array();
    doc["codecs"] = json!([
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": "high"}},
    ]);
    let (_, field, codec, _, found) = parts(open_error(&doc));
    assert_eq!(field, "configuration.level");
    assert_eq!(codec.as_deref(), Some("zstd"));
    assert!(
        found.as_deref().is_some_and(|f| f.contains("high")),
        "{found:?}"
    );

    // A value the codec does not take.
    let mut doc = v3_array();
    doc["codecs"] = json!([{"name": "bytes", "configuration": {"endian": "middle"}}]);
    let (_, field, codec, expected, found) = parts(open_error(&doc));
    assert_eq!(field, "configuration.endian");
    assert_eq!(codec.as_deref(), Some("bytes"));
    assert!(expected.contains("\"little\""), "{expected}");
    assert_eq!(found.as_deref(), Some("\"middle\""));
}

#[test]
fn a_v2_document_is_named_by_its_own_key() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let zarray = json!({
        "zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4",
        "compressor": null, "fill_value": 0, "order": "Q", "filters": null,
    });
    store
        .set("x/.zarray", zarray.to_string().as_bytes())
        .unwrap();
    let (key, field, _, expected, found) = parts(read_node(store.as_ref(), "x").unwrap_err());
    assert_eq!(key, "x/.zarray");
    assert_eq!(field, "order");
    assert!(expected.contains("\"F\""), "{expected}");
    assert_eq!(found.as_deref(), Some("\"Q\""));
}

#[test]
fn the_fields_accessor_and_the_message_agree_with_the_variant() {
    let mut doc = v3_array();
    doc["node_type"] = json!("tree");
    let e = open_error(&doc);
    let fields = e.fields();
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("key"), Some("obs/zarr.json"));
    assert_eq!(get("field"), Some("node_type"));
    assert_eq!(get("found"), Some("\"tree\""));
    assert_eq!(get("codec"), None);
    // One sentence that names all of them.
    let message = e.to_string();
    for part in ["obs/zarr.json", "node_type", "\"tree\""] {
        assert!(message.contains(part), "{message}");
    }
}

#[test]
fn found_is_cut_but_the_message_stays_short() {
    let mut doc = v3_array();
    doc["node_type"] = json!("x".repeat(100_000));
    let e = open_error(&doc);
    assert!(e.to_string().len() < 500, "{}", e.to_string().len());
    let (_, _, _, _, found) = parts(e);
    assert!(found.unwrap().len() < 300);
}
