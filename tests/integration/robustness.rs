//! Hostile bytes through every chunk decoder: random input and mutations of valid
//! chunks must give `Ok` or a `ChunkError`, never a panic. Every `Ok` array must
//! pass arrow-rs's full validation, which checks that the unchecked constructors
//! in zarrow were only ever given valid offsets, views and UTF-8.

use arrow_array::Array;
use arrow_buffer::Buffer;
use proptest::prelude::*;
use zarrow::codec::{
    ArrayToBytes, BytesToBytes, CodecChain, DecodeContext, IndexLocation, OffsetWidth, ZarrsVlen,
};
use zarrow::metadata::Endian;
use zarrow::{DataType, StringType};

fn plain(endian: Endian) -> CodecChain {
    CodecChain {
        array_to_array: vec![],
        array_to_bytes: ArrayToBytes::Bytes { endian },
        bytes_to_bytes: vec![],
    }
}

fn layouts() -> Vec<(ArrayToBytes, DataType)> {
    let mut out = vec![
        (ArrayToBytes::VlenInterleaved, DataType::String),
        (ArrayToBytes::VlenInterleaved, DataType::Bytes),
        (ArrayToBytes::Zep0007 { large: false }, DataType::String),
        (ArrayToBytes::Zep0007 { large: true }, DataType::Bytes),
        (
            ArrayToBytes::Bytes {
                endian: Endian::Little,
            },
            DataType::FixedUtf32 { chars: 2 },
        ),
        (
            ArrayToBytes::Bytes {
                endian: Endian::Big,
            },
            DataType::NullTerminatedBytes { length: 3 },
        ),
        (
            ArrayToBytes::Bytes {
                endian: Endian::Big,
            },
            DataType::Int32,
        ),
        (
            ArrayToBytes::Bytes {
                endian: Endian::Little,
            },
            DataType::Bool,
        ),
    ];
    for width in [OffsetWidth::U32, OffsetWidth::U64] {
        for location in [IndexLocation::Start, IndexLocation::End] {
            let config = ZarrsVlen {
                index_data_type: width,
                index_location: location,
                index_codecs: plain(Endian::Little),
                data_codecs: plain(Endian::Little),
            };
            out.push((ArrayToBytes::ZarrsVlen(Box::new(config)), DataType::String));
        }
    }
    out
}

fn decode_all_ways(bytes: &[u8], elements: usize) {
    for (layout, data_type) in layouts() {
        for b2b in [
            vec![],
            vec![BytesToBytes::Crc32c],
            vec![BytesToBytes::Zstd {
                level: 0,
                checksum: false,
            }],
        ] {
            for string_type in [
                StringType::Utf8,
                StringType::LargeUtf8,
                StringType::Utf8View,
            ] {
                let chain = CodecChain {
                    array_to_array: vec![],
                    array_to_bytes: layout.clone(),
                    bytes_to_bytes: b2b.clone(),
                };
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
fn vlen_chunk(values: &[String]) -> Vec<u8> {
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
        for (chunk, layout) in [(vlen_chunk(&values), ArrayToBytes::VlenInterleaved), (zep_chunk(&values), ArrayToBytes::Zep0007 { large: false })] {
            for string_type in [StringType::Utf8, StringType::LargeUtf8, StringType::Utf8View] {
                let chain = CodecChain { array_to_array: vec![], array_to_bytes: layout.clone(), bytes_to_bytes: vec![] };
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

/// Decode `chunk` compressed with zstd through the fused path (called directly, so
/// that views take it whatever the value lengths) and uncompressed through the
/// plain path: they must agree, on values and on success.
fn fused_and_plain(
    chunk: &[u8],
    elements: usize,
    string_type: StringType,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let shape = [elements as u64];
    let fill = zarrow::FillValue::default_for(&DataType::String);
    let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 24);
    let run = |fused: bool, bytes: Vec<u8>| {
        let decoded = if fused {
            zarrow::codec::vlen_interleaved::decode_zstd(&bytes, &ctx)
        } else {
            let chain = CodecChain {
                array_to_array: vec![],
                array_to_bytes: ArrayToBytes::VlenInterleaved,
                bytes_to_bytes: vec![],
            };
            chain.decode(Buffer::from(bytes), &ctx)
        };
        decoded.ok().map(|a| {
            a.to_data().validate_full().expect("valid Arrow data");
            let mut flat = Vec::new();
            for i in 0..a.len() {
                let v = match string_type {
                    StringType::Utf8View => arrow_array::cast::AsArray::as_string_view(&a)
                        .value(i)
                        .to_string(),
                    StringType::LargeUtf8 => arrow_array::cast::AsArray::as_string::<i64>(&a)
                        .value(i)
                        .to_string(),
                    _ => arrow_array::cast::AsArray::as_string::<i32>(&a)
                        .value(i)
                        .to_string(),
                };
                flat.extend_from_slice(&(v.len() as u32).to_le_bytes());
                flat.extend_from_slice(v.as_bytes());
            }
            flat
        })
    };
    let compressed = zarrow::codec::compress::zstd_encode(chunk, 1, false).unwrap();
    (run(true, compressed), run(false, chunk.to_vec()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Values of up to ~600 bytes in chunks of up to ~600 KB cross the fused
    /// decoder's 128 KiB windows at every point of the layout.
    #[test]
    fn fused_zstd_path_agrees_with_the_plain_path(
        // Printable ASCII (whole windows ASCII: views skip the UTF-8 checks, most
        // values inline) or any text (multi-byte, values up to ~1 KB).
        values in prop_oneof![
            proptest::collection::vec("[ -~]{0,40}", 0..6000),
            proptest::collection::vec(".{0,300}", 0..2000),
        ],
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut chunk = vlen_chunk(&values);
        for (at, byte) in &flips {
            let i = at.index(chunk.len());
            chunk[i] ^= byte;
        }
        if let Some(cut) = cut {
            chunk.truncate(cut.index(chunk.len() + 1));
        }
        for string_type in [StringType::Utf8, StringType::LargeUtf8, StringType::Utf8View] {
            let (fused, plain) = fused_and_plain(&chunk, values.len(), string_type);
            prop_assert_eq!(&fused, &plain);
            if flips.is_empty() && cut.is_none() {
                prop_assert_eq!(fused, Some(chunk.clone()[4..].to_vec()));
            }
        }
    }
}

#[test]
fn fused_zstd_path_handles_values_larger_than_a_window() {
    let values = vec![
        "x".repeat(300_000),
        String::new(),
        "é".repeat(70_000),
        "tail".into(),
    ];
    let chunk = vlen_chunk(&values);
    for string_type in [
        StringType::Utf8,
        StringType::LargeUtf8,
        StringType::Utf8View,
    ] {
        let (fused, plain) = fused_and_plain(&chunk, values.len(), string_type);
        assert_eq!(fused.as_deref(), Some(&chunk[4..]));
        assert_eq!(fused, plain);
    }
}
