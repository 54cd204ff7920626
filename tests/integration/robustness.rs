//! Hostile bytes through every chunk decoder: random input and mutations of valid
//! chunks must give `Ok` or a `ChunkError`, never a panic. Every `Ok` array must
//! pass arrow-rs's full validation, which checks that the unchecked constructors
//! in zarrow were only ever given valid offsets, views and UTF-8.

use arrow_array::Array;
use arrow_buffer::Buffer;
use proptest::prelude::*;
use serde_json::{Value, json};
use zarrow::CodecChain;
use zarrow::codec::DecodeContext;
use zarrow::{DataType, MemoryStore, NodeMetadata, Store, StringType};

/// The chain and data type of a one-chunk array with `codecs` and `data_type`,
/// built from its `zarr.json` as a reader builds it.
pub(crate) fn chain(data_type: Value, codecs: Value) -> (CodecChain, DataType) {
    let fill = match data_type.as_str() {
        Some("bool") => json!(false),
        Some("int32") | Some("int64") => json!(0),
        _ => json!(""),
    };
    let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [1],
        "data_type": data_type, "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs});
    let store = MemoryStore::new();
    store.set("zarr.json", doc.to_string().as_bytes()).unwrap();
    let NodeMetadata::Array(meta) = zarrow::read_node(&store, "").unwrap() else {
        panic!("not an array")
    };
    (
        CodecChain::from_metadata(&meta, "zarr.json").unwrap(),
        meta.data_type,
    )
}

/// Every layout, as (data type, layout codecs).
fn layouts() -> Vec<(Value, Value)> {
    let mut out = vec![
        (json!("string"), json!([{"name": "vlen-utf8"}])),
        (json!("bytes"), json!([{"name": "vlen-bytes"}])),
        (json!({"name": "string"}), json!([])),
        (json!({"name": "large_binary"}), json!([])),
        (
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}),
            json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        ),
        (
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}}),
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
        ),
        (
            json!("int32"),
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
        ),
        (json!("bool"), json!([{"name": "bytes"}])),
    ];
    for width in ["uint32", "uint64"] {
        for location in ["start", "end"] {
            out.push((
                json!("string"),
                json!([{"name": "zarrs.vlen", "configuration": {
                    "index_data_type": width, "index_location": location,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                    "data_codecs": [{"name": "bytes"}]}}]),
            ));
        }
    }
    out
}

fn decode_all_ways(bytes: &[u8], elements: usize) {
    for (data_type, layout) in layouts() {
        for b2b in [
            json!([]),
            json!([{"name": "crc32c"}]),
            json!([{"name": "zstd", "configuration": {"level": 0, "checksum": false}}]),
        ] {
            let mut codecs = layout.as_array().unwrap().clone();
            codecs.extend(b2b.as_array().unwrap().iter().cloned());
            let (chain, data_type) = chain(data_type.clone(), Value::Array(codecs));
            for string_type in [
                StringType::Utf8,
                StringType::LargeUtf8,
                StringType::Utf8View,
            ] {
                let shape = [elements as u64];
                let fill = zarrow::FillValue::default_for(&data_type);
                let ctx = DecodeContext::new(&shape, data_type, &fill, string_type, 1 << 20);
                if let Ok(array) = chain.decode(Buffer::from(bytes.to_vec()), &ctx) {
                    assert_eq!(array.len(), elements);
                    array
                        .to_data()
                        .validate_full()
                        .expect("zarrow built an invalid Arrow array");
                }
            }
        }
    }
}

/// A valid vlen-utf8 chunk for `values`.
pub(crate) fn vlen_chunk(values: &[String]) -> Vec<u8> {
    let mut out = (values.len() as u32).to_le_bytes().to_vec();
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// A valid ZEP0007 (int32) chunk for `values`.
fn zep_chunk(values: &[String]) -> Vec<u8> {
    let mut offsets = vec![0i32];
    for v in values {
        offsets.push(offsets.last().unwrap() + v.len() as i32);
    }
    let mut out: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    out.resize(out.len().div_ceil(64) * 64, 0);
    out.extend(values.iter().flat_map(|v| v.bytes()));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), elements in 0usize..12) {
        decode_all_ways(&bytes, elements);
    }

    #[test]
    fn mutated_valid_chunks_never_panic(
        values in proptest::collection::vec(".{0,6}", 1..8),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        for mut chunk in [vlen_chunk(&values), zep_chunk(&values)] {
            for (at, byte) in &flips {
                let i = at.index(chunk.len());
                chunk[i] ^= byte;
            }
            decode_all_ways(&chunk, values.len());
            let cut = cut.index(chunk.len() + 1);
            decode_all_ways(&chunk[..cut], values.len());
        }
    }

    #[test]
    fn valid_chunks_decode_to_their_values(values in proptest::collection::vec(".{0,20}", 0..30)) {
        for (chunk, (chain, _)) in [
            (vlen_chunk(&values), chain(json!("string"), json!([{"name": "vlen-utf8"}]))),
            (zep_chunk(&values), chain(json!({"name": "string"}), json!([]))),
        ] {
            for string_type in [StringType::Utf8, StringType::LargeUtf8, StringType::Utf8View] {
                let shape = [values.len() as u64];
                let fill = zarrow::FillValue::default_for(&DataType::String);
                let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 20);
                let array = chain.decode(Buffer::from(chunk.clone()), &ctx).unwrap();
                let got: Vec<String> = match string_type {
                    StringType::Utf8View => arrow_array::cast::AsArray::as_string_view(&array).iter().map(|s| s.unwrap().to_string()).collect(),
                    StringType::LargeUtf8 => arrow_array::cast::AsArray::as_string::<i64>(&array).iter().map(|s| s.unwrap().to_string()).collect(),
                    _ => arrow_array::cast::AsArray::as_string::<i32>(&array).iter().map(|s| s.unwrap().to_string()).collect(),
                };
                prop_assert_eq!(&got, &values);
            }
        }
    }
}
