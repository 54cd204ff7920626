//! The errors of [`CodecChain::encode`]: each [`EncodeError`] a chain's codecs
//! raise, triggered through the chain.

use std::sync::Arc;

use arrow_array::ArrayRef;
use serde_json::{Value, json};

use super::CodecChain;
use crate::error::EncodeError;
use crate::metadata::CodecMetadata;

#[test]
fn an_encoding_error_names_its_codec() {
    use arrow_array::Int32Array;

    let codecs: Vec<CodecMetadata> = serde_json::from_value(json!([
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
    ]))
    .unwrap();
    let chain = CodecChain::from_codecs(&codecs).unwrap();
    let whole: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3, 4]));
    let encoded = chain.encode(&whole, &[2, 2]).unwrap();
    assert!(!encoded.is_empty());
    let part: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
    let (codec, error) = chain.encode(&part, &[2, 2]).unwrap_err();
    assert_eq!(codec, "transpose");
    assert!(
        matches!(
            &error,
            EncodeError::PartialChunk { codec: "transpose", values: 3, shape }
                if shape == &[2, 2]
        ),
        "{error}"
    );
    assert!(error.to_string().contains("3 of 4"), "{error}");
}

/// A chain of `codecs` (v3 entries).
fn chain_of(codecs: Value) -> CodecChain {
    let codecs: Vec<CodecMetadata> = serde_json::from_value(codecs).unwrap();
    CodecChain::from_codecs(&codecs).unwrap()
}

fn int32s(n: i32) -> ArrayRef {
    Arc::new(arrow_array::Int32Array::from_iter_values(0..n))
}

#[test]
fn more_values_than_the_chunk_holds() {
    let chain = chain_of(json!([{"name": "bytes", "configuration": {"endian": "little"}}]));
    assert!(chain.encode(&int32s(4), &[4]).is_ok());
    let (codec, error) = chain.encode(&int32s(5), &[4]).unwrap_err();
    assert!(codec.contains("bytes"), "{codec}");
    assert!(
        matches!(
            error,
            EncodeError::TooManyValues {
                values: 5,
                capacity: 4
            }
        ),
        "{error}"
    );
}

#[test]
fn a_chunk_shape_past_usize() {
    let chain = chain_of(json!([{"name": "bytes", "configuration": {"endian": "little"}}]));
    let shape = [u64::MAX, 2];
    let (_, error) = chain.encode(&int32s(1), &shape).unwrap_err();
    assert!(
        matches!(&error, EncodeError::ShapeOverflow { shape: s } if s == &shape),
        "{error}"
    );
}

#[test]
fn an_arrow_type_a_variable_length_layout_does_not_write() {
    let chain = chain_of(json!([{"name": "vlen-utf8"}]));
    let (codec, error) = chain.encode(&int32s(2), &[2]).unwrap_err();
    assert!(codec.contains("vlen-utf8"), "{codec}");
    assert!(
        matches!(
            &error,
            EncodeError::ArrowType {
                codec: "variable-length",
                data_type: arrow_schema::DataType::Int32
            }
        ),
        "{error}"
    );
}

#[test]
fn values_of_another_type_than_deltas_dtype() {
    let chain = chain_of(json!([
        {"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}},
        {"name": "bytes", "configuration": {"endian": "little"}}
    ]));
    assert!(chain.encode(&int32s(3), &[3]).is_ok());
    let floats: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.0, 2.0]));
    let (codec, error) = chain.encode(&floats, &[2]).unwrap_err();
    assert_eq!(codec, "numcodecs.delta");
    assert!(
        matches!(
            &error,
            EncodeError::TypeMismatch {
                codec: "numcodecs.delta",
                configured: arrow_schema::DataType::Int32,
                found: arrow_schema::DataType::Float64,
            }
        ),
        "{error}"
    );
}

#[test]
fn a_transpose_order_of_another_rank() {
    let chain = chain_of(json!([
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "little"}}
    ]));
    let (codec, error) = chain.encode(&int32s(4), &[4]).unwrap_err();
    assert_eq!(codec, "transpose");
    assert!(
        matches!(
            &error,
            EncodeError::RankMismatch { order, shape }
                if order == &[1, 0] && shape == &[4]
        ),
        "{error}"
    );
}

/// A vlen chunk counts its elements in a u32: a chunk of 2^32 elements (all
/// padding) is refused before anything is allocated.
#[test]
fn a_vlen_chunk_past_a_u32_count() {
    let chain = chain_of(json!([{"name": "vlen-utf8"}]));
    let empty: ArrayRef = Arc::new(arrow_array::StringArray::from(Vec::<&str>::new()));
    let (_, error) = chain.encode(&empty, &[1 << 32]).unwrap_err();
    assert!(
        matches!(
            error,
            EncodeError::TooLarge {
                size: 4_294_967_296,
                limit: 4_294_967_295,
                ..
            }
        ),
        "{error}"
    );
}

fn shard(chunk_shape: Value, index_location: &str) -> CodecChain {
    chain_of(json!([{
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": chunk_shape,
            "codecs": [{"name": "vlen-utf8"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": index_location
        }
    }]))
}

#[test]
fn a_shard_index_at_the_start_is_not_written() {
    let strings: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b"]));
    assert!(shard(json!([1]), "end").encode(&strings, &[2]).is_ok());
    let (codec, error) = shard(json!([1]), "start")
        .encode(&strings, &[2])
        .unwrap_err();
    assert!(codec.contains("sharding_indexed"), "{codec}");
    assert!(
        matches!(
            error,
            EncodeError::UnsupportedOption {
                codec: "sharding_indexed",
                option: "index_location",
                value: "start"
            }
        ),
        "{error}"
    );
}

#[test]
fn an_n_d_shard_written_in_part() {
    let strings: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b", "c"]));
    let (_, error) = shard(json!([1, 1]), "end")
        .encode(&strings, &[2, 2])
        .unwrap_err();
    assert!(
        matches!(
            &error,
            EncodeError::PartialChunk { codec: "sharding_indexed", values: 3, shape }
                if shape == &[2, 2]
        ),
        "{error}"
    );
}

/// An inner chunk shape larger than the shard (which metadata checks refuse)
/// repeats the shard's first value over the inner chunk: 4096 copies of a
/// 1 MiB string overflow 32-bit offsets, and arrow-rs says so before it
/// copies anything.
#[test]
fn arrow_refusing_to_cut_an_inner_chunk() {
    let big: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["x".repeat(1 << 20)]));
    let (_, error) = shard(json!([1, 4096]), "end")
        .encode(&big, &[1, 1])
        .unwrap_err();
    assert!(
        matches!(
            error,
            EncodeError::Arrow {
                source: arrow_schema::ArrowError::OffsetOverflowError(_)
            }
        ),
        "{error}"
    );
}

/// An inner chunk that cannot be encoded is named inside the shard's error,
/// with its codec and why.
#[test]
fn a_shard_names_the_inner_chunk_that_fails() {
    let codecs: Vec<CodecMetadata> = serde_json::from_value(json!([{
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [
                {"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"}
            ],
            "index_location": "end"
        }
    }]))
    .unwrap();
    let chain = CodecChain::from_codecs(&codecs).unwrap();
    let strings: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b", "c"]));
    let (codec, error) = chain.encode(&strings, &[4]).unwrap_err();
    assert!(codec.contains("sharding_indexed"), "{codec}");
    match &error {
        EncodeError::Inner {
            what,
            codec,
            source,
        } => {
            assert_eq!(what, "inner chunk 0");
            assert!(codec.contains("bytes"), "{codec}");
            assert!(
                matches!(
                    source.as_ref(),
                    EncodeError::ArrowType {
                        codec: "bytes",
                        data_type: arrow_schema::DataType::Utf8
                    }
                ),
                "{source}"
            );
        }
        other => panic!("{other}"),
    }
}
