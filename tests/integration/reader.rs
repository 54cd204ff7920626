//! The reader builder: row ranges, offset and limit, batch sizes and chunk-aligned
//! splits, over columns with different chunk lengths (one of them sharded).
//! Expected values are the input's rows.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use zarrow::write::{WriteOptions, write_array, write_group_metadata};
use zarrow::{Error, MemoryStore, ReaderBuilder, TableProblem, ZarrArray, ZarrGroup};

use crate::common::Observed;

const ROWS: u64 = 10_007;

/// A group with three columns: `id` (chunks of 1000), `name` (chunks of 300),
/// `tag` (shards of 2000 in inner chunks of 250).
fn table() -> (ZarrGroup, Vec<i64>, Vec<String>) {
    table_on(Arc::new(MemoryStore::new()))
}

/// [`table`], written to `store`.
fn table_on(store: Arc<MemoryStore>) -> (ZarrGroup, Vec<i64>, Vec<String>) {
    let ids: Vec<i64> = (0..ROWS as i64).map(|i| i * 3 - 7).collect();
    let names: Vec<String> = (0..ROWS).map(|i| format!("n{i}")).collect();
    let id: ArrayRef = Arc::new(Int64Array::from(ids.clone()));
    let name: ArrayRef = Arc::new(StringArray::from(names.clone()));
    let tag: ArrayRef = Arc::new(StringArray::from(
        names.iter().map(|n| format!("tag-{n}")).collect::<Vec<_>>(),
    ));
    let options = WriteOptions::default();
    write_array(
        store.clone(),
        "t/id",
        &id,
        WriteOptions {
            chunk_len: Some(1000),
            ..options.clone()
        },
    )
    .unwrap();
    write_array(
        store.clone(),
        "t/name",
        &name,
        WriteOptions {
            chunk_len: Some(300),
            ..options.clone()
        },
    )
    .unwrap();
    let sharded = WriteOptions {
        chunk_len: Some(250),
        shard_len: Some(2000),
        ..options
    };
    write_array(store.clone(), "t/tag", &tag, sharded).unwrap();
    let columns = ["id", "name", "tag"].map(String::from);
    write_group_metadata(store.as_ref(), "t", &columns, 3).unwrap();
    (ZarrGroup::open(store, "t").unwrap(), ids, names)
}

/// Every batch of `builder`'s reader, checked against the input rows `rows`.
fn check(builder: ReaderBuilder, rows: Range<u64>, ids: &[i64], names: &[String]) -> Vec<usize> {
    let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    let mut sizes = Vec::new();
    let mut at = rows.start as usize;
    for batch in &batches {
        let n = batch.num_rows();
        let id = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(id.values(), &ids[at..at + n]);
        let name = batch.column(1).as_string::<i32>();
        let tag = batch.column(2).as_string::<i32>();
        for i in 0..n {
            assert_eq!(name.value(i), names[at + i]);
            assert_eq!(tag.value(i), format!("tag-{}", names[at + i]));
        }
        at += n;
        sizes.push(n);
    }
    assert_eq!(at as u64, rows.end, "rows {rows:?}");
    sizes
}

#[test]
fn row_ranges_offsets_and_limits() {
    let (group, ids, names) = table();
    check(group.reader(), 0..ROWS, &ids, &names);
    let sizes = check(
        group
            .reader()
            .with_row_range(1234..5678)
            .with_batch_size(500),
        1234..5678,
        &ids,
        &names,
    );
    assert!(sizes.iter().all(|&n| n <= 500));
    assert_eq!(sizes.len(), (5678 - 1234usize).div_ceil(500));
    check(group.reader().with_offset(9_990), 9_990..ROWS, &ids, &names);
    check(group.reader().with_limit(7), 0..7, &ids, &names);
    check(
        group
            .reader()
            .with_row_range(100..9000)
            .with_offset(50)
            .with_limit(1001),
        150..1151,
        &ids,
        &names,
    );
    check(
        group.reader().with_row_range(500..500),
        500..500,
        &ids,
        &names,
    );
    assert_eq!(group.reader().with_limit(3).rows().unwrap(), 0..3);
    assert!(matches!(
        group.reader().with_row_range(0..ROWS + 1).build(),
        Err(Error::RowsOutOfRange { start: 0, end, len: ROWS, .. }) if end == ROWS + 1
    ));
}

#[test]
fn splits_are_chunk_aligned_and_read_independently() {
    let (group, ids, names) = table();
    for (rows, n) in [(0..ROWS, 4), (1234..5678, 3), (0..ROWS, 100), (10..20, 2)] {
        let builder = group.reader().with_row_range(rows.clone());
        let splits = builder.splits(n).unwrap();
        assert!(splits.len() <= n, "{splits:?}");
        assert_eq!(splits.first().unwrap().start, rows.start);
        assert_eq!(splits.last().unwrap().end, rows.end);
        for pair in splits.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            // The longest chunks are `tag`'s shards of 2000.
            assert_eq!(pair[0].end % 2000, 0, "{splits:?}");
        }
        for split in splits {
            check(
                group.reader().with_row_range(split.clone()),
                split,
                &ids,
                &names,
            );
        }
    }
}

/// `ids` written as the array `id` in chunks of 1000, opened.
fn ids_array(store: Arc<dyn zarrow::Store>, ids: &[i64]) -> ZarrArray {
    let id: ArrayRef = Arc::new(Int64Array::from(ids.to_vec()));
    let options = WriteOptions {
        chunk_len: Some(1000),
        ..WriteOptions::default()
    };
    write_array(store.clone(), "id", &id, options).unwrap();
    ZarrArray::open(store, "id").unwrap()
}

#[test]
fn one_array_reads_through_the_same_builder() {
    let (group, ids, _) = table();
    let array = ids_array(Arc::new(MemoryStore::new()), &ids);
    let batches: Vec<RecordBatch> = array
        .reader()
        .with_row_range(999..2001)
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let got: Vec<i64> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    assert_eq!(got, ids[999..2001]);
    // A projection that names no column is an error naming the columns there are.
    match group.reader().with_projection(["nope"]).build() {
        Err(Error::Table {
            problem: TableProblem::NoSuchColumn { name, have },
            ..
        }) => {
            assert_eq!(name, "nope");
            assert_eq!(have, ["id", "name", "tag"]);
        }
        other => panic!("{other:?}"),
    }
}

/// While the caller holds a batch, the next chunks are already being fetched and
/// decoded (the reader does not wait to be asked).
#[test]
fn the_next_chunks_decode_while_the_caller_works() {
    let store = Observed::new(Arc::new(MemoryStore::new()));
    let array = ids_array(store.clone(), &(0..10_000i64).collect::<Vec<_>>());
    let mut reader = array.reader().with_batch_size(1000).build().unwrap();
    store.take();
    let mut keys = Vec::new();
    let first = reader.next().unwrap().unwrap();
    assert_eq!(first.num_rows(), 1000);
    // Without asking for another batch, chunk 1 gets read (wait up to 10 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !keys.iter().any(|(k, _)| k == "id/c/1") {
        keys.extend(store.take());
        assert!(
            std::time::Instant::now() < deadline,
            "chunk 1 was never read ahead"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let rest: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rest, 9000);
    // Each chunk was read once.
    keys.extend(store.take());
    let mut keys: Vec<String> = keys.into_iter().map(|(k, _)| k).collect();
    keys.sort();
    let read = keys.len();
    keys.dedup();
    assert_eq!((read, keys.len()), (10, 10), "{keys:?}");
}

/// The async stream gives the blocking reader's batches, in order; dropping it
/// early stops the reader.
#[cfg(feature = "async")]
#[test]
fn the_async_stream_gives_the_blocking_readers_batches() {
    use futures::StreamExt;
    let store = std::sync::Arc::new(zarrow::LocalStore::new(
        crate::common::testdata().join("stores/obs.zarr").as_path(),
    ));
    let group = zarrow::ZarrGroup::open(store, "").unwrap();
    let blocking: Vec<_> = group
        .reader()
        .with_batch_size(100)
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let streamed: Vec<_> = runtime.block_on(async {
        let stream = group.reader().with_batch_size(100).into_stream();
        stream.map(|b| b.unwrap()).collect::<Vec<_>>().await
    });
    assert_eq!(streamed.len(), 10);
    assert_eq!(streamed, blocking);
    let first_two: Vec<_> = runtime.block_on(async {
        let stream = group.reader().with_batch_size(100).into_stream();
        stream.take(2).map(|b| b.unwrap()).collect::<Vec<_>>().await
    });
    assert_eq!(first_two, blocking[..2]);
}

/// By default a batch ends where a chunk of a long-chunked column ends: every
/// column's rows in a batch are then a slice of one decoded chunk (no copy to line
/// the columns up). Columns `a` (chunks of 70,000) and `b` (100,000); the default
/// batch is at most 65,536 rows.
#[test]
fn default_batches_end_at_long_chunks_boundaries() {
    const N: i64 = 300_000;
    let store = Arc::new(MemoryStore::new());
    let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..N));
    let b: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..N).map(|i| format!("s{i}")),
    ));
    let options = WriteOptions::default();
    write_array(
        store.clone(),
        "t/a",
        &a,
        WriteOptions {
            chunk_len: Some(70_000),
            ..options.clone()
        },
    )
    .unwrap();
    write_array(
        store.clone(),
        "t/b",
        &b,
        WriteOptions {
            chunk_len: Some(100_000),
            ..options
        },
    )
    .unwrap();
    write_group_metadata(store.as_ref(), "t", &["a".into(), "b".into()], 3).unwrap();
    let group = ZarrGroup::open(store, "t").unwrap();
    let batches: Vec<RecordBatch> = group
        .reader()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Cut at 65,536 rows after the last cut, or earlier at a multiple of 70,000 or of 100,000.
    let sizes: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(
        sizes,
        [
            65_536, 4_464, 30_000, 40_000, 60_000, 10_000, 65_536, 4_464, 20_000
        ]
    );
    let mut at = 0i64;
    for batch in &batches {
        let n = batch.num_rows() as i64;
        let a = batch.column(0).as_primitive::<Int64Type>();
        assert!(a.values().iter().copied().eq(at..at + n));
        let b = batch.column(1).as_string::<i32>();
        assert!(
            b.iter()
                .map(Option::unwrap)
                .eq((at..at + n).map(|i| format!("s{i}")))
        );
        at += n;
    }
    // The first three batches are rows of b's first chunk: one values buffer.
    let values = |i: usize| batches[i].column(1).as_string::<i32>().values().as_ptr();
    assert_eq!(values(0), values(1));
    assert_eq!(values(1), values(2));
    // An explicit batch size is kept exactly.
    let sizes: Vec<usize> = group
        .reader()
        .with_batch_size(65_536)
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .collect();
    assert_eq!(sizes, [65_536, 65_536, 65_536, 65_536, 37_856]);
}

/// A 1-D shard whose inner chunks have at least 8,192 rows is decoded as runs,
/// one per inner chunk, not gathered into one array (a copy of every value): by
/// default a batch is one inner chunk's rows, also from a range that starts inside
/// a shard (read in part).
#[test]
fn long_inner_chunks_of_a_shard_are_batches_of_their_own() {
    const N: usize = 120_000;
    let store = Arc::new(MemoryStore::new());
    let names: Vec<String> = (0..N).map(|i| format!("name-{i}")).collect();
    let array: ArrayRef = Arc::new(StringArray::from(names.clone()));
    let options = WriteOptions {
        chunk_len: Some(10_000),
        shard_len: Some(50_000),
        ..WriteOptions::default()
    };
    write_array(store.clone(), "a", &array, options).unwrap();
    let array = ZarrArray::open(store, "a").unwrap();
    let read = |builder: ReaderBuilder, start: usize| {
        let batches: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
        let mut at = start;
        for batch in &batches {
            let values = batch.column(0).as_string::<i32>();
            assert!(
                values
                    .iter()
                    .map(Option::unwrap)
                    .eq(names[at..at + batch.num_rows()].iter())
            );
            at += batch.num_rows();
        }
        (batches, at)
    };
    let (batches, end) = read(array.reader(), 0);
    assert_eq!(end, N);
    assert!(
        batches.iter().all(|b| b.num_rows() == 10_000),
        "{}",
        batches.len()
    );
    // Two inner chunks of one shard: two decoded buffers, not slices of one.
    let values = |i: usize| batches[i].column(0).as_string::<i32>().values().as_ptr();
    assert_ne!(values(0), values(1));
    let (batches, end) = read(array.reader().with_row_range(12_345..87_000), 12_345);
    assert_eq!(end, 87_000);
    let sizes: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(
        sizes,
        [7_655, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 7_000]
    );
    // An explicit batch size across a shard boundary, and the rows in one piece.
    let across = array
        .reader()
        .with_row_range(49_990..50_020)
        .with_batch_size(7);
    assert_eq!(read(across, 49_990).1, 50_020);
    let whole = array.read_range(0..N as u64).unwrap();
    assert!(
        whole
            .as_string::<i32>()
            .iter()
            .map(Option::unwrap)
            .eq(names.iter())
    );
}

/// A 0-d array reads as one row, by its batches and whole.
#[test]
fn a_zero_dimensional_array_is_one_row() {
    let store: Arc<dyn zarrow::Store> = Arc::new(MemoryStore::new());
    let value: ArrayRef = Arc::new(StringArray::from(vec!["only"]));
    zarrow::write::write_nd_array(store.clone(), "a", &value, &[], WriteOptions::default())
        .unwrap();
    let array = ZarrArray::open(store, "a").unwrap();
    let batches: Vec<RecordBatch> = array
        .batches(&zarrow::ExecutionContext::default())
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(batches.len(), 1);
    let text = batches[0].column(0).as_string::<i32>();
    assert_eq!(text.iter().collect::<Vec<_>>(), [Some("only")]);
    let whole = array.read_all().unwrap();
    assert_eq!(whole.len(), 1);
}

/// A driver of its own: the decoder decodes nothing it hands out as jobs; the
/// jobs run on other threads, in reverse order, and given back they make the
/// blocking reader's batches. A job's chunk given to another decoder is
/// refused, and that decoder then fails.
#[test]
fn decode_jobs_run_anywhere_give_the_blocking_readers_batches() {
    use zarrow::Store;
    use zarrow::read::{DecodeResult, Fetched, Request};
    let store = Arc::new(MemoryStore::new());
    let (group, _, _) = table_on(store.clone());
    let builder = group
        .reader()
        .with_row_range(123..9_876)
        .with_batch_size(700);
    let blocking: Vec<RecordBatch> = builder
        .clone()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let fetch = |request: &Request| -> Fetched {
        match &request.ranges {
            None => store
                .get_bounded(&request.key, request.max_len)
                .unwrap()
                .map_or(Fetched::Missing, Fetched::Whole),
            Some(ranges) => store
                .get_ranges(&request.key, ranges)
                .unwrap()
                .map_or(Fetched::Missing, Fetched::Ranges),
        }
    };
    let mut decoder = builder.clone().build_decoder().unwrap();
    let mut got = Vec::new();
    let mut ran = 0;
    loop {
        match decoder.try_decode().unwrap() {
            DecodeResult::Batch(batch) => got.push(batch),
            DecodeResult::Finished => break,
            DecodeResult::NeedsData(requests) => {
                for request in requests {
                    decoder.push(request.id, fetch(&request)).unwrap();
                }
                // Handed out before `try_decode` can decode them inline, run
                // on threads of their own, the last first.
                let jobs = decoder.decode_jobs();
                assert!(!jobs.is_empty(), "the decoder waits for nothing");
                let done: Vec<_> = std::thread::scope(|s| {
                    let handles: Vec<_> = jobs
                        .into_iter()
                        .rev()
                        .map(|job| s.spawn(move || job.run()))
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                ran += done.len();
                for chunk in done {
                    decoder.push_decoded(chunk).unwrap();
                }
            }
        }
    }
    assert!(ran > 10, "{ran} jobs");
    assert_eq!(got, blocking);
    // A job's chunk given to another decoder is refused.
    let mut other = builder.clone().build_decoder().unwrap();
    let DecodeResult::NeedsData(requests) = other.try_decode().unwrap() else {
        panic!("a first batch without data");
    };
    let request = &requests[0];
    other.push(request.id, fetch(request)).unwrap();
    let job = other.decode_jobs().pop().unwrap();
    let chunk = job.run();
    let id = chunk.id();
    // Even where a job of that id is out.
    let mut third = builder.build_decoder().unwrap();
    let DecodeResult::NeedsData(requests) = third.try_decode().unwrap() else {
        panic!("a first batch without data");
    };
    for request in &requests {
        third.push(request.id, fetch(request)).unwrap();
    }
    let out = third.decode_jobs();
    assert!(out.iter().any(|job| job.id() == id));
    assert!(matches!(
        third.push_decoded(chunk),
        Err(Error::UnknownRequest { id: refused }) if refused == id
    ));
    assert!(matches!(third.try_decode(), Ok(DecodeResult::Finished)));
}

/// A reader whose context reuses buffers (as the command line's conversions do):
/// batches held while later chunks decode keep their values, under every string
/// layout, both the fused (vlen + zstd) and plain (uncompressed) decoders, and
/// chunks read from a local directory into reused buffers (opened through
/// `Stores`, which needs the `object-store` feature).
#[cfg(feature = "object-store")]
#[test]
fn reused_buffers_never_change_a_batch_still_held() {
    use zarrow::write::{Compressor, write_batches};
    use zarrow::{ExecutionContext, LocalStore, Location, ReadOptions, StringType};
    // Chunks of 150,000 strings of 21-41 bytes and int64s: their values,
    // offsets, views, decompressed int64s and (uncompressed) files are over the
    // 1 MiB that the recycler keeps.
    let rows = 1_800_000usize;
    let names: Vec<String> = (0..rows)
        .map(|i| format!("{i:>20}-{}", "x".repeat(i % 21)))
        .collect();
    for compressor in [Compressor::Zstd, Compressor::None] {
        let dir = tempfile::tempdir().unwrap();
        let numbers = (0..rows as i64).map(|i| i * 3 - 7);
        let batch = RecordBatch::try_from_iter([
            ("s", Arc::new(StringArray::from(names.clone())) as ArrayRef),
            (
                "n",
                Arc::new(arrow_array::Int64Array::from_iter_values(numbers)) as ArrayRef,
            ),
        ])
        .unwrap();
        let reader = arrow_array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
        let options = WriteOptions {
            chunk_len: Some(150_000),
            compressor,
            ..WriteOptions::default()
        };
        write_batches(reader, Arc::new(LocalStore::new(dir.path())), "", options).unwrap();
        for string_type in [
            StringType::Utf8,
            StringType::LargeUtf8,
            StringType::Utf8View,
        ] {
            let read = ReadOptions {
                string_type: Some(string_type),
                ..ReadOptions::default()
            };
            let context = ExecutionContext::default().with_buffer_reuse(64 << 20);
            let location = Location::parse(dir.path().to_str().unwrap()).unwrap();
            let store = context.stores().open(&location).unwrap();
            let group = ZarrGroup::open_with(store, "", read).unwrap();
            let mut start = 0;
            let mut held = Vec::new();
            for (i, batch) in group
                .reader()
                .with_context(&context)
                .build()
                .unwrap()
                .enumerate()
            {
                let batch = batch.unwrap();
                // Every other batch is dropped at once: its buffers go back and
                // fill later chunks' while the others are still held.
                if i % 2 == 0 {
                    held.push((start, batch.clone()));
                }
                start += batch.num_rows();
            }
            assert_eq!(start, rows);
            assert!(
                held.len() >= 6,
                "{string_type:?}: {} batches held",
                held.len()
            );
            for (start, batch) in &held {
                let got: Vec<String> = (0..batch.num_rows())
                    .map(|i| {
                        arrow_cast::display::array_value_to_string(batch.column(0), i).unwrap()
                    })
                    .collect();
                let expected = &names[*start..start + batch.num_rows()];
                assert_eq!(got, expected, "{compressor:?} {string_type:?} at {start}");
                let numbers = batch
                    .column(1)
                    .as_primitive::<arrow_array::types::Int64Type>();
                let expected =
                    (*start as i64..(start + batch.num_rows()) as i64).map(|i| i * 3 - 7);
                assert!(
                    numbers.values().iter().copied().eq(expected),
                    "{compressor:?} {string_type:?}: int64s at {start}"
                );
            }
        }
    }
}
