//! Encode throughput for each string layout: a `Utf8` array of ~80 MB of values
//! (5M strings, 1M-element chunks) written with `write_array` into an in-memory
//! store, with and without zstd; and the `zstd compress only` bound (compressing
//! the same vlen-utf8 chunks, nothing else). Throughput counts value bytes.
//!
//! `cargo bench --bench encode`

mod common;

use std::hint::black_box;
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use common::{CHUNK, strings};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use zarrow::write::{Compressor, Encoding, WriteOptions, write_array};
use zarrow::{MemoryStore, Store};

fn bench(c: &mut Criterion) {
    let values = strings();
    let value_bytes: u64 = values.iter().map(|v| v.len() as u64).sum();
    let array: ArrayRef = Arc::new(StringArray::from_iter_values(
        values.iter().map(|v| std::str::from_utf8(v).unwrap()),
    ));
    for compressor in [Compressor::None, Compressor::Zstd] {
        let mut group = c.benchmark_group(if compressor == Compressor::Zstd {
            "encode_zstd"
        } else {
            "encode"
        });
        group
            .throughput(Throughput::Bytes(value_bytes))
            .sample_size(10);
        if compressor == Compressor::Zstd {
            let chunks: Vec<Vec<u8>> = values
                .chunks(CHUNK)
                .map(|c| {
                    let mut out = (c.len() as u32).to_le_bytes().to_vec();
                    for v in c {
                        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                        out.extend_from_slice(v);
                    }
                    out
                })
                .collect();
            group.bench_function("bound: zstd compress only (vlen-utf8 chunks)", |b| {
                b.iter(|| {
                    black_box(
                        chunks
                            .par_iter()
                            .map(|c| zstd::bulk::compress(c, 0).unwrap().len())
                            .sum::<usize>(),
                    )
                })
            });
        }
        for (name, encoding) in [
            ("Utf8 -> vlen-utf8", Encoding::Default),
            ("Utf8 -> zarrs.vlen", Encoding::ZarrsVlen),
        ] {
            let options = WriteOptions {
                encoding,
                compressor,
                chunk_len: Some(CHUNK),
                ..WriteOptions::default()
            };
            group.bench_function(name, |b| {
                b.iter(|| {
                    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
                    black_box(write_array(store, "s", &array, options.clone()).unwrap())
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
