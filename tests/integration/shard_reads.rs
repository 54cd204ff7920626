//! Partial shard reads, counted: a store wrapper records every request and every
//! byte the reader fetches. Expected byte counts come from the shard index as the
//! sharding spec lays it out (parsed here by hand), expected values from the input
//! or from what zarr-python wrote.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StringArray};
use zarrow::write::{WriteOptions, write_array};
use zarrow::{ChunkError, Error, LocalStore, MemoryStore, Store, ZarrArray};

use crate::common::{Observed, column, read_ipc, strings, testdata};

/// The (offset, nbytes) entries of a shard whose index (`n` entries, little-endian,
/// then a crc32c) sits at its end, as the sharding spec lays it out.
fn shard_index(shard: &[u8], n: usize) -> Vec<(u64, u64)> {
    let index = &shard[shard.len() - (16 * n + 4)..shard.len() - 4];
    index
        .chunks_exact(16)
        .map(|e| {
            let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
            (word(&e[..8]), word(&e[8..]))
        })
        .collect()
}

const INNER: usize = 100;
const SHARD: usize = 100 * INNER;
const ROWS: usize = 25_000;

/// A 1-D string array in shards of 100 inner chunks, written by zarrow.
fn sharded() -> (Arc<MemoryStore>, Vec<String>) {
    let values: Vec<String> = (0..ROWS)
        .map(|i| format!("value {i} {}", "x".repeat(i % 7)))
        .collect();
    let store = Arc::new(MemoryStore::new());
    let array: ArrayRef = Arc::new(StringArray::from(values.clone()));
    let options = WriteOptions {
        chunk_len: Some(INNER),
        shard_len: Some(SHARD),
        ..WriteOptions::default()
    };
    write_array(store.clone(), "s", &array, options).unwrap();
    (store, values)
}

#[test]
fn ten_rows_of_a_shard_fetch_its_index_and_one_inner_chunk() {
    let (store, values) = sharded();
    let shard = store.get("s/c/0").unwrap().unwrap();
    let index = shard_index(shard.as_slice(), SHARD / INNER);
    let counting = Observed::new(store.clone());
    let array = ZarrArray::open(counting.clone(), "s").unwrap();
    counting.take_counts();

    let got = array.read_range(0..10).unwrap();
    assert_eq!(strings(&got), values[..10]);
    let (requests, bytes) = counting.take_counts();
    assert_eq!(requests, 2, "the index, then one inner chunk");
    assert_eq!(bytes, (16 * 100 + 4) + index[0].1);
    assert!(
        bytes * 10 < shard.len() as u64,
        "{bytes} of a {}-byte shard",
        shard.len()
    );

    // Rows in inner chunk 50 of the second shard.
    let got = array.read_range(15_020..15_030).unwrap();
    assert_eq!(strings(&got), values[15_020..15_030]);
    let second = shard_index(store.get("s/c/1").unwrap().unwrap().as_slice(), 100);
    assert_eq!(counting.take_counts(), (2, (16 * 100 + 4) + second[50].1));

    // Rows across two neighbouring inner chunks: fetched together, in one request.
    let got = array.read_range(95..105).unwrap();
    assert_eq!(strings(&got), values[95..105]);
    assert_eq!(
        counting.take_counts(),
        (2, (16 * 100 + 4) + index[0].1 + index[1].1)
    );

    // Rows across two shards: two partial reads.
    let got = array.read_range(9_990..10_010).unwrap();
    assert_eq!(strings(&got), values[9_990..10_010]);
    assert_eq!(counting.take_counts().0, 4);

    // Reading everything still reads each shard whole, once.
    let all = array.read_all().unwrap();
    assert_eq!(strings(&all), values);
    assert_eq!(counting.take_counts().0, 3);
}

/// zarr-python's sharded store: inner chunk 1 of shard 0 is absent (all fill).
#[test]
fn zarr_python_shards_read_in_part() {
    let root = testdata().join("stores/v3_string_sharded.zarr");
    let expected = column(
        &read_ipc(&testdata().join("expected/v3_string_sharded.arrow")),
        "v3_string_sharded",
    );
    let expected = strings(&expected);
    let shard = std::fs::read(root.join("c/0")).unwrap();
    let index = shard_index(&shard, 2);
    assert_eq!(
        index[1],
        (u64::MAX, u64::MAX),
        "the fixture's absent inner chunk"
    );

    let counting = Observed::new(Arc::new(LocalStore::new(&root)));
    let array = ZarrArray::open(counting.clone(), "").unwrap();
    counting.take_counts();
    // The absent inner chunk: the index alone, then the fill value.
    let got = array.read_range(3..6).unwrap();
    assert_eq!(strings(&got), expected[3..6]);
    assert_eq!(counting.take_counts(), (1, 2 * 16 + 4));
    let got = array.read_range(1..3).unwrap();
    assert_eq!(strings(&got), expected[1..3]);
    assert_eq!(counting.take_counts(), (2, 2 * 16 + 4 + index[0].1));
    // The edge shard (elements 12..14).
    let got = array.read_range(12..14).unwrap();
    assert_eq!(strings(&got), expected[12..14]);
}

#[test]
fn an_index_entry_outside_the_shard_is_a_typed_error() {
    let (store, _) = sharded();
    let mut shard = store.get("s/c/0").unwrap().unwrap().to_vec();
    let len = shard.len();
    let start = len - (16 * 100 + 4);
    // Inner chunk 3 claims 10 bytes past the shard's end; the crc32c is recomputed
    // so that the index itself is valid.
    shard[start + 3 * 16..start + 3 * 16 + 8].copy_from_slice(&(len as u64).to_le_bytes());
    shard[start + 3 * 16 + 8..start + 4 * 16].copy_from_slice(&10u64.to_le_bytes());
    let crc = crc32c::crc32c(&shard[start..len - 4]);
    shard[len - 4..].copy_from_slice(&crc.to_le_bytes());
    store.set("s/c/0", &shard).unwrap();

    let array = ZarrArray::open(store.clone(), "s").unwrap();
    for result in [array.read_range(300..310), array.read_all()] {
        match result {
            Err(Error::Chunk {
                key,
                source: ChunkError::OffsetOutOfBounds { .. },
            }) => assert_eq!(key, "s/c/0"),
            other => panic!("expected an out-of-bounds inner chunk, got {other:?}"),
        }
    }
    // The whole index is checked before any inner chunk is used.
    assert!(array.read_range(0..10).is_err());
    // Other shards are intact.
    assert_eq!(array.read_range(10_000..10_010).unwrap().len(), 10);
}

/// A shard behind a checksum (codecs `[sharding_indexed, crc32c]`) is still read
/// in part: crc32c only appends 4 bytes, so the ranges pass through it (a part
/// cannot be checked against a checksum of the whole). A whole read checks it.
#[test]
fn a_checksummed_shard_is_read_in_part_and_checked_whole() {
    let (store, values) = sharded();
    let mut meta: serde_json::Value =
        serde_json::from_slice(&store.get("s/zarr.json").unwrap().unwrap()).unwrap();
    meta["codecs"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "crc32c"}));
    store
        .set("s/zarr.json", &serde_json::to_vec(&meta).unwrap())
        .unwrap();
    let keys: Vec<String> = store.list_prefix("s/c/").unwrap().into_iter().collect();
    assert_eq!(keys.len(), 3);
    let mut first = Vec::new();
    for key in &keys {
        let mut shard = store.get(key).unwrap().unwrap().to_vec();
        if first.is_empty() {
            first = shard.clone();
        }
        let checksum = crc32c::crc32c(&shard);
        shard.extend_from_slice(&checksum.to_le_bytes());
        store.set(key, &shard).unwrap();
    }
    let index = shard_index(&first, SHARD / INNER);
    let counting = Observed::new(store.clone());
    let array = ZarrArray::open(counting.clone(), "s").unwrap();
    counting.take_counts();

    let got = array.read_range(0..10).unwrap();
    assert_eq!(strings(&got), values[..10]);
    // The index with its own crc32c and the shard's 4 bytes, then one inner chunk.
    assert_eq!(counting.take_counts(), (2, (16 * 100 + 4 + 4) + index[0].1));
    let got = array.read_range(24_990..25_000).unwrap();
    assert_eq!(strings(&got), values[24_990..]);

    let all = array.read_all().unwrap();
    assert_eq!(strings(&all), values);

    // A wrong checksum: the whole read fails on it, naming the shard.
    let mut shard = store.get("s/c/1").unwrap().unwrap().to_vec();
    let last = shard.len() - 1;
    shard[last] ^= 0xff;
    store.set("s/c/1", &shard).unwrap();
    let err = array.read_all().unwrap_err();
    assert!(
        matches!(&err, Error::Chunk { key, .. } if key == "s/c/1"),
        "{err}"
    );
}

/// Elements `rows` (C order) of `array`, through the reader.
fn read_rows(array: &ZarrArray, rows: std::ops::Range<u64>) -> Vec<String> {
    let reader = array.reader().with_row_range(rows).build().unwrap();
    let mut got = Vec::new();
    for batch in reader {
        got.extend(strings(batch.unwrap().column(0)));
    }
    got
}

/// zarr-python's 2-D sharded store: shape (10, 6), shards (4, 6) of inner chunks
/// (2, 3). Some rows of a shard fetch its index, then only the rows of inner
/// chunks that hold them.
#[test]
fn zarr_python_nd_shards_read_in_part() {
    let root = testdata().join("stores/v3_string_sharded_2d.zarr");
    let expected = column(
        &read_ipc(&testdata().join("expected/v3_string_sharded_2d.arrow")),
        "v3_string_sharded_2d",
    );
    let expected = strings(&expected);
    assert_eq!(expected.len(), 60);
    let shard = |key: &str| std::fs::read(root.join(key)).unwrap();
    // Every shard has 2 x 2 inner chunks; its index is 4 entries + crc32c.
    let index_len = 4 * 16 + 4;
    let first = shard_index(&shard("c/0/0"), 4);
    let second = shard_index(&shard("c/1/0"), 4);
    assert_eq!(
        second[0],
        (u64::MAX, u64::MAX),
        "the fixture's absent inner chunk"
    );

    let counting = Observed::new(Arc::new(LocalStore::new(&root)));
    let array = ZarrArray::open(counting.clone(), "").unwrap();
    counting.take_counts();

    // Row 1 (elements 6..12) lies in the first row of inner chunks of c/0/0:
    // the index, then inner chunks 0 and 1 (neighbours: one request).
    assert_eq!(read_rows(&array, 6..12), expected[6..12]);
    assert_eq!(
        counting.take_counts(),
        (2, index_len + first[0].1 + first[1].1)
    );
    // Part of row 3 (elements 20..22): the second row of inner chunks only.
    assert_eq!(read_rows(&array, 20..22), expected[20..22]);
    assert_eq!(
        counting.take_counts(),
        (2, index_len + first[2].1 + first[3].1)
    );
    // Rows 4..5 of c/1/0: one inner chunk absent (the fill value), one present.
    assert_eq!(read_rows(&array, 24..36), expected[24..36]);
    assert_eq!(counting.take_counts(), (2, index_len + second[1].1));
    // Rows 3..5 span two shards: two partial reads of a row of inner chunks.
    assert_eq!(read_rows(&array, 18..30), expected[18..30]);
    assert_eq!(counting.take_counts().0, 4);
    // The edge shard (rows 8..10) wanted whole: one request.
    assert_eq!(read_rows(&array, 48..60), expected[48..60]);
    assert_eq!(counting.take_counts().0, 1);
    // Everything: each shard whole, once, and exactly zarr-python's values.
    assert_eq!(read_rows(&array, 0..60), expected);
    let total: u64 = ["c/0/0", "c/1/0", "c/2/0"]
        .iter()
        .map(|k| shard(k).len() as u64)
        .sum();
    assert_eq!(counting.take_counts(), (3, total));
    assert_eq!(strings(&array.read_all().unwrap()), expected);
}

/// The expected column of `case`, as byte strings.
fn expected_bytes(case: &str) -> Vec<Vec<u8>> {
    bytes_of(&column(
        &read_ipc(&testdata().join(format!("expected/{case}.arrow"))),
        case,
    ))
}

fn bytes_of(array: &ArrayRef) -> Vec<Vec<u8>> {
    if let Some(s) = array.as_string_opt::<i32>() {
        return s.iter().map(|v| v.unwrap().as_bytes().to_vec()).collect();
    }
    let b = array.as_binary::<i32>();
    b.iter().map(|v| v.unwrap().to_vec()).collect()
}

/// The index length at the start of a `zarrs.vlen` chunk (its first `u64`).
fn index_len(case: &str, key: &str) -> u64 {
    let chunk = std::fs::read(testdata().join(format!("stores/{case}.zarr/{key}"))).unwrap();
    u64::from_le_bytes(chunk[..8].try_into().unwrap())
}

/// zarrs' `zarrs.vlen` chunks (zarrs 0.23 wrote them) read in part: the index
/// length and the index (one request when the index is not compressed, so its
/// size is known), then only the values the wanted elements span. The values'
/// bytes are counted from what zarrs read back; the index sizes from the
/// layout (`u64` length, then `(n + 1)` offsets).
#[test]
fn zarrs_vlen_chunks_read_in_part() {
    // (case, elements read, requests, index bytes asked for)
    let cases: &[(&str, std::ops::Range<u64>, u64, u64)] = &[
        // Index at the start, plain u64 offsets of a 4-element chunk.
        ("zarrs_vlen_bytes", 1..3, 2, 8 + 5 * 8),
        // Index at the end, u32 offsets of a 3-element chunk.
        ("zarrs_vlen_bytes_fill", 2..3, 2, 8 + 4 * 4),
        // A compressed index (zstd + crc32c): its length first, then it; the
        // values end in a crc32c, which their range skips.
        (
            "zarrs_vlen_index_zstd",
            5..7,
            3,
            8 + index_len("zarrs_vlen_index_zstd", "c/1"),
        ),
    ];
    for (case, range, requests, index) in cases {
        let expected = expected_bytes(case);
        let root = testdata().join(format!("stores/{case}.zarr"));
        let counting = Observed::new(Arc::new(LocalStore::new(&root)));
        let array = ZarrArray::open(counting.clone(), "").unwrap();
        counting.take_counts();
        let got = array.read_range(range.clone()).unwrap();
        let want = &expected[range.start as usize..range.end as usize];
        assert_eq!(bytes_of(&got), want, "{case}");
        let values: u64 = want.iter().map(|v| v.len() as u64).sum();
        assert_eq!(
            counting.take_counts(),
            (*requests, index + values),
            "{case}: requests and bytes"
        );
        // The whole array is still read a chunk a request, equal to zarrs.
        assert_eq!(bytes_of(&array.read_all().unwrap()), expected, "{case}");
    }
    // A missing chunk read in part is the fill value (zarrs_vlen_bytes_fill
    // has no c/1).
    let case = "zarrs_vlen_bytes_fill";
    let root = testdata().join(format!("stores/{case}.zarr"));
    assert!(!root.join("c/1").exists());
    let array = ZarrArray::open(Arc::new(LocalStore::new(&root)), "").unwrap();
    assert_eq!(
        bytes_of(&array.read_range(4..5).unwrap()),
        expected_bytes(case)[4..5]
    );
}

/// A `zarrs.vlen` index whose offsets run past the values, or decrease, is a
/// typed error in a partial read too, never a panic or an out-of-bounds read.
#[test]
fn a_corrupt_zarrs_vlen_index_read_in_part_is_a_typed_error() {
    let source = testdata().join("stores/zarrs_vlen_bytes.zarr");
    // Elements 1..3 use offsets 1..=3 (of 0, 0, 3, 4, 9).
    for (offset, value) in [(3usize, 1_000_000u64), (2, 5), (1, u64::MAX)] {
        let store = Arc::new(MemoryStore::new());
        store
            .set(
                "zarr.json",
                &std::fs::read(source.join("zarr.json")).unwrap(),
            )
            .unwrap();
        let mut chunk = std::fs::read(source.join("c/0")).unwrap();
        let at = 8 + offset * 8; // after the u64 index length
        chunk[at..at + 8].copy_from_slice(&value.to_le_bytes());
        store.set("c/0", &chunk).unwrap();
        let array = ZarrArray::open(store, "").unwrap();
        let err = array.read_range(1..3).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Chunk {
                    source: ChunkError::OffsetOutOfBounds { .. }
                        | ChunkError::OffsetsDecrease { .. },
                    ..
                }
            ),
            "offset {offset} = {value}: {err:?}"
        );
    }
}
