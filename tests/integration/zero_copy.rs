//! The copy counts the docs claim: Arrow-layout chunks decode to arrays whose
//! buffers are slices of the decoded chunk buffer itself.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use serde_json::{Value, json};
use zarrow::codec::DecodeContext;
use zarrow::{FillValue, StringType};

use crate::robustness::{chain, vlen_chunk};

const VALUES: [&str; 4] = ["the", "quick", "", "brown fox jumps"];

/// `bytes` in a fresh Arrow-aligned buffer, as the stores and decompressors give.
fn aligned(bytes: &[u8]) -> Buffer {
    let mut b = MutableBuffer::with_capacity(bytes.len());
    b.extend_from_slice(bytes);
    b.into()
}

/// Decode `chunk` as an array of `data_type` with the layout `codecs`.
fn decode(data_type: Value, codecs: Value, chunk: &Buffer, string_type: StringType) -> ArrayRef {
    let (chain, data_type) = chain(data_type, codecs);
    let shape = [VALUES.len() as u64];
    let fill = FillValue::default_for(&data_type);
    chain
        .decode(
            chunk.clone(),
            &DecodeContext::new(&shape, data_type, &fill, string_type, 1 << 20),
        )
        .unwrap()
}

fn offsets_and_data() -> (Vec<i64>, Vec<u8>) {
    let mut offsets = vec![0i64];
    let mut data = Vec::new();
    for v in VALUES {
        data.extend_from_slice(v.as_bytes());
        offsets.push(data.len() as i64);
    }
    (offsets, data)
}

/// A `zarrs.vlen` chunk of `VALUES` with `width` offsets ("uint32" / "uint64"): its
/// codecs, the chunk, and where its data starts.
fn zarrs_vlen(width: &str) -> (Value, Buffer, usize) {
    let (offsets, data) = offsets_and_data();
    let index: Vec<u8> = match width {
        "uint32" => offsets
            .iter()
            .flat_map(|&o| (o as u32).to_le_bytes())
            .collect(),
        _ => offsets
            .iter()
            .flat_map(|&o| (o as u64).to_le_bytes())
            .collect(),
    };
    let mut chunk = (index.len() as u64).to_le_bytes().to_vec();
    chunk.extend_from_slice(&index);
    chunk.extend_from_slice(&data);
    let codecs = json!([{"name": "zarrs.vlen", "configuration": {
        "index_data_type": width, "index_location": "start",
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "data_codecs": [{"name": "bytes"}]}}]);
    (codecs, aligned(&chunk), 8 + index.len())
}

/// A ZEP0007 int32 chunk: offsets, zero padding to 64 bytes, data.
fn zep0007_chunk(offsets: &[i64], data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = offsets
        .iter()
        .flat_map(|&o| (o as i32).to_le_bytes())
        .collect();
    out.resize(out.len().div_ceil(64) * 64, 0);
    out.extend_from_slice(data);
    out
}

#[test]
fn zep0007_to_utf8_is_two_slices() {
    let (offsets, data) = offsets_and_data();
    let chunk = aligned(&zep0007_chunk(&offsets, &data));
    let array = decode(
        json!({"name": "string"}),
        json!([]),
        &chunk,
        StringType::Utf8,
    );
    let strings = array.as_string::<i32>();
    assert_eq!(
        strings.iter().map(Option::unwrap).collect::<Vec<_>>(),
        VALUES
    );
    assert_eq!(strings.offsets().inner().inner().as_ptr(), chunk.as_ptr());
    assert_eq!(strings.values().as_ptr(), chunk.as_ptr().wrapping_add(64));
}

#[test]
fn zarrs_vlen_u64_to_large_utf8_and_u32_to_utf8_are_slices() {
    for (width, target) in [
        ("uint64", StringType::LargeUtf8),
        ("uint32", StringType::Utf8),
    ] {
        let (codecs, chunk, data_start) = zarrs_vlen(width);
        let array = decode(json!("string"), codecs, &chunk, target);
        let (offsets, values, got) = match target {
            StringType::LargeUtf8 => {
                let s = array.as_string::<i64>();
                (
                    s.offsets().inner().inner().as_ptr(),
                    s.values().as_ptr(),
                    s.iter().map(Option::unwrap).collect::<Vec<_>>(),
                )
            }
            _ => {
                let s = array.as_string::<i32>();
                (
                    s.offsets().inner().inner().as_ptr(),
                    s.values().as_ptr(),
                    s.iter().map(Option::unwrap).collect::<Vec<_>>(),
                )
            }
        };
        assert_eq!(got, VALUES, "{width:?}");
        assert_eq!(offsets, chunk.as_ptr().wrapping_add(8), "{width:?}");
        assert_eq!(values, chunk.as_ptr().wrapping_add(data_start), "{width:?}");
    }
}

#[test]
fn vlen_utf8_to_views_points_into_the_chunk() {
    let values: Vec<String> = VALUES.iter().map(|v| v.to_string()).collect();
    let chunk = aligned(&vlen_chunk(&values));
    let array = decode(
        json!("string"),
        json!([{"name": "vlen-utf8"}]),
        &chunk,
        StringType::Utf8View,
    );
    let views = array.as_string_view();
    assert_eq!(views.iter().map(Option::unwrap).collect::<Vec<_>>(), VALUES);
    assert_eq!(views.data_buffers().len(), 1);
    assert_eq!(views.data_buffers()[0].as_ptr(), chunk.as_ptr());
}

#[test]
fn little_endian_numbers_are_the_chunk() {
    let chunk = aligned(
        &[1i64, -2, 3, i64::MAX]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let little = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    let array = decode(json!("int64"), little.clone(), &chunk, StringType::Utf8);
    let ints = array.as_primitive::<Int64Type>();
    assert_eq!(ints.values(), &[1, -2, 3, i64::MAX]);
    assert_eq!(ints.values().inner().as_ptr(), chunk.as_ptr());
    // A misaligned buffer is copied rather than mis-read.
    let misaligned = aligned(&[&[0u8][..], chunk.as_slice()].concat()).slice(1);
    let array = decode(json!("int64"), little, &misaligned, StringType::Utf8);
    assert_eq!(
        array.as_primitive::<Int64Type>().values(),
        &[1, -2, 3, i64::MAX]
    );
    assert_eq!(array.len(), 4);
}

/// With a memory-mapped store, uncompressed Arrow-layout chunks decode to arrays
/// whose offsets and values lie inside the kernel's mapping of the chunk file
/// (checked against `/proc/self/maps`, not against zarrow's own bookkeeping).
#[cfg(target_os = "linux")]
#[test]
fn memory_mapped_chunks_are_not_copied() {
    use std::sync::Arc;
    use zarrow::{LocalStore, ReadOptions, ZarrArray};

    /// The file mapped at `address`, if any.
    fn mapped_file(address: usize) -> Option<std::path::PathBuf> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().find_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            let path = fields.nth(4)?;
            (start <= address && address < end).then(|| path.into())
        })
    }

    for (case, string_type) in [
        ("zep0007_string", StringType::Utf8),
        ("zep0007_large_binary", StringType::LargeUtf8),
        ("zarrs_vlen_u32_start", StringType::Utf8),
        ("zarrs_vlen_u64_start", StringType::LargeUtf8),
    ] {
        let root = crate::common::testdata()
            .join("stores")
            .join(format!("{case}.zarr"));
        // SAFETY: the test data is not modified while the test runs.
        let store = Arc::new(unsafe { LocalStore::new_memory_mapped(&root) });
        let options = ReadOptions {
            string_type: Some(string_type),
            ..ReadOptions::default()
        };
        let array = ZarrArray::open_with(store, "", options).unwrap();
        let mut checked = 0;
        for (i, batch) in array
            .batches(&zarrow::ExecutionContext::default())
            .enumerate()
        {
            let chunk = root.join("c").join(i.to_string()).canonicalize();
            let Ok(chunk) = chunk else { continue }; // a missing chunk is fill
            // Offsets and values: buffers 0 and 1 of every offset-based layout.
            let data = batch.unwrap().column(0).to_data();
            let offsets = data.buffers()[0].as_ptr() as usize;
            let values = data.buffers()[1].as_ptr() as usize;
            for (what, address) in [("offsets", offsets), ("values", values)] {
                assert_eq!(
                    mapped_file(address).as_deref(),
                    Some(chunk.as_path()),
                    "{case} chunk {i}: {what} are not in the chunk file's mapping"
                );
            }
            checked += 1;
        }
        assert!(checked >= 2, "{case}: only {checked} chunks checked");
    }
}
