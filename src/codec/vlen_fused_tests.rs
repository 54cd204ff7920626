//! The fused vlen + zstd decoder against the plain one: called directly, so that
//! views take the fused path whatever the value lengths. They must agree, on values
//! and on success, with a recycler (views then point into the decoded chunk) and
//! without.

use arrow_array::Array;
use arrow_buffer::Buffer;
use proptest::prelude::*;

use super::{decode, decode_zstd};
use crate::codec::DecodeContext;
use crate::metadata::{DataType, StringType};

/// A valid vlen-utf8 chunk for `values`.
fn vlen_chunk(values: &[String]) -> Vec<u8> {
    let mut out = (values.len() as u32).to_le_bytes().to_vec();
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    out
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
    let fill = crate::metadata::FillValue::default_for(&DataType::String);
    let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 24);
    let recycler = crate::recycle::Recycler::new(64 << 20);
    let reusing = ctx.with_recycler(Some(&recycler));
    let run = |fused: bool, bytes: Vec<u8>| {
        let decoded = if fused {
            let decoded = decode_zstd(&bytes, &ctx);
            // Twice with a recycler: the second time in the first's buffers.
            for _ in 0..2 {
                let again = decode_zstd(&bytes, &reusing);
                assert_eq!(
                    again.as_ref().ok().map(|a| a.to_data()),
                    decoded.as_ref().ok().map(|a| a.to_data()),
                    "with a recycler"
                );
                if let Ok(a) = again {
                    a.to_data().validate_full().expect("valid Arrow data");
                }
            }
            decoded
        } else {
            decode(Buffer::from(bytes), &ctx)
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
    let compressed = zstd::bulk::compress(chunk, 1).unwrap();
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

/// The block path takes one frame that states its size; two frames back to
/// back, and a frame without its size, go through the streaming path: all agree.
#[test]
fn two_frames_and_an_unsized_frame_decode_alike() {
    let values: Vec<String> = (0..50_000).map(|i| format!("v{i}-{}", i % 97)).collect();
    let chunk = vlen_chunk(&values);
    let shape = [values.len() as u64];
    let fill = crate::metadata::FillValue::default_for(&DataType::String);
    let (head, tail) = chunk.split_at(chunk.len() / 3);
    let two = [
        zstd::bulk::compress(head, 3).unwrap(),
        zstd::bulk::compress(tail, 3).unwrap(),
    ]
    .concat();
    let mut unsized_frame = Vec::new();
    let mut encoder = zstd::stream::write::Encoder::new(&mut unsized_frame, 3).unwrap();
    encoder.include_contentsize(false).unwrap();
    std::io::Write::write_all(&mut encoder, &chunk).unwrap();
    encoder.finish().unwrap();
    for string_type in [
        StringType::Utf8,
        StringType::LargeUtf8,
        StringType::Utf8View,
    ] {
        let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 24);
        let plain = decode(Buffer::from(chunk.clone()), &ctx).unwrap();
        let recycler = crate::recycle::Recycler::new(64 << 20);
        for ctx in [ctx, ctx.with_recycler(Some(&recycler))] {
            for frames in [&two, &unsized_frame] {
                let fused = decode_zstd(frames, &ctx).unwrap();
                assert_eq!(fused.to_data(), plain.to_data(), "{string_type:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Corrupt compressed bytes (the frame header, a block header, the stated
    /// size, the checksum) and cut frames: an error or valid data, never a panic.
    #[test]
    fn hostile_frames_are_errors_or_valid_data(
        values in proptest::collection::vec(".{0,60}", 1..3000),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        checksum in any::<bool>(),
    ) {
        let chunk = vlen_chunk(&values);
        let mut frame = crate::codec::zstd::zstd_encode(&chunk, 3, checksum).unwrap();
        for (at, byte) in &flips {
            let i = at.index(frame.len());
            frame[i] ^= byte;
        }
        if let Some(cut) = cut {
            frame.truncate(cut.index(frame.len() + 1));
        }
        let shape = [values.len() as u64];
        let fill = crate::metadata::FillValue::default_for(&DataType::String);
        let recycler = crate::recycle::Recycler::new(64 << 20);
        for string_type in [StringType::Utf8, StringType::LargeUtf8, StringType::Utf8View] {
            let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 24);
            for ctx in [ctx, ctx.with_recycler(Some(&recycler))] {
                if let Ok(array) = decode_zstd(&frame, &ctx) {
                    prop_assert!(array.to_data().validate_full().is_ok());
                    prop_assert_eq!(array.len(), values.len());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Wanting only the first `k` elements (a LIMIT, late materialization's last
    /// chosen row): the fused decoder stops once they are whole and gives
    /// exactly them, equal to the plain decoder's first `k`, for every string
    /// type, with a recycler and without; a hostile frame is an error or valid
    /// data of `k` elements (or all of them, from the streaming path).
    #[test]
    fn wanting_the_first_elements_gives_the_plain_decoders_first_elements(
        values in proptest::collection::vec(".{0,200}", 1..4000),
        wanted in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    ) {
        let chunk = vlen_chunk(&values);
        let k = wanted.index(values.len() + 1);
        let mut frame = zstd::bulk::compress(&chunk, 1).unwrap();
        for (at, byte) in &flips {
            let i = at.index(frame.len());
            frame[i] ^= byte;
        }
        let shape = [values.len() as u64];
        let fill = crate::metadata::FillValue::default_for(&DataType::String);
        let recycler = crate::recycle::Recycler::new(64 << 20);
        for string_type in [StringType::Utf8, StringType::LargeUtf8, StringType::Utf8View] {
            let ctx = DecodeContext::new(&shape, DataType::String, &fill, string_type, 1 << 24);
            let plain = decode(Buffer::from(chunk.clone()), &ctx).unwrap();
            for ctx in [ctx.wanting(k), ctx.with_recycler(Some(&recycler)).wanting(k)] {
                let got = decode_zstd(&frame, &ctx);
                if flips.is_empty() {
                    let got = got.unwrap();
                    prop_assert_eq!(got.len(), k);
                    prop_assert_eq!(got.to_data(), plain.slice(0, k).to_data());
                } else if let Ok(array) = got {
                    prop_assert!(array.to_data().validate_full().is_ok());
                    prop_assert!(array.len() == k || array.len() == values.len());
                }
            }
        }
    }
}
