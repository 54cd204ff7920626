//! Decode throughput for each chunk layout, on ~100 MB of generated strings
//! (lengths 0 to 32, 1M-element chunks), read through `ZarrArray::batches` from an
//! in-memory store. Throughput counts the bytes of string values decoded.
//!
//! `cargo bench --bench decode`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use serde_json::json;
use zarrow::{MemoryStore, ReadOptions, Store, StringType, ZarrArray};

mod common;

use common::{CHUNK, ELEMENTS, strings};

fn metadata(data_type: serde_json::Value, codecs: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [ELEMENTS], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [CHUNK]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "", "codecs": codecs, "attributes": {}
    }))
    .unwrap()
}

fn offsets(chunk: &[Vec<u8>]) -> (Vec<i64>, Vec<u8>) {
    let mut offsets = vec![0i64];
    let mut data = Vec::new();
    for v in chunk {
        data.extend_from_slice(v);
        offsets.push(data.len() as i64);
    }
    (offsets, data)
}

/// `vlen-utf8`: a count, then length-prefixed values.
fn vlen_chunk(chunk: &[Vec<u8>]) -> Vec<u8> {
    let mut out = (chunk.len() as u32).to_le_bytes().to_vec();
    for v in chunk {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// ZEP0007 with int32 offsets: offsets, zero padding to 64 bytes, data.
fn zep0007_chunk(chunk: &[Vec<u8>]) -> Vec<u8> {
    let (offsets, data) = offsets(chunk);
    let mut out: Vec<u8> = offsets
        .iter()
        .flat_map(|&o| (o as i32).to_le_bytes())
        .collect();
    out.resize(out.len().div_ceil(64) * 64, 0);
    out.extend_from_slice(&data);
    out
}

/// `zarrs.vlen`, uint64 index at the start, plain bytes codecs.
fn zarrs_vlen_chunk(chunk: &[Vec<u8>]) -> Vec<u8> {
    let (offsets, data) = offsets(chunk);
    let index: Vec<u8> = offsets
        .iter()
        .flat_map(|&o| (o as u64).to_le_bytes())
        .collect();
    let mut out = (index.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&index);
    out.extend_from_slice(&data);
    out
}

fn store_for(layout: &str, zstd: bool, values: &[Vec<u8>]) -> Arc<dyn Store> {
    let store = MemoryStore::new();
    let zstd_codec = json!({"name": "zstd", "configuration": {"level": 0, "checksum": false}});
    let (data_type, mut codecs) = match layout {
        "vlen-utf8" => (json!("string"), vec![json!({"name": "vlen-utf8"})]),
        "zep0007" => (json!({"name": "string"}), vec![]),
        "zarrs.vlen" => (
            json!("string"),
            vec![json!({"name": "zarrs.vlen", "configuration": {
                "data_codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_data_type": "uint64", "index_location": "start"}})],
        ),
        _ => unreachable!(),
    };
    if zstd {
        codecs.push(zstd_codec);
    }
    store
        .set("zarr.json", &metadata(data_type, json!(codecs)))
        .unwrap();
    for (i, chunk) in values.chunks(CHUNK).enumerate() {
        let raw = match layout {
            "vlen-utf8" => vlen_chunk(chunk),
            "zep0007" => zep0007_chunk(chunk),
            _ => zarrs_vlen_chunk(chunk),
        };
        let bytes = if zstd {
            zstd::bulk::compress(&raw, 0).unwrap()
        } else {
            raw
        };
        store.set(&format!("c/{i}"), &bytes).unwrap();
    }
    Arc::new(store)
}

fn bench(c: &mut Criterion) {
    let values = strings();
    let value_bytes: u64 = values.iter().map(|v| v.len() as u64).sum();
    let paths = [
        ("vlen-utf8", StringType::Utf8),
        ("vlen-utf8", StringType::Utf8View),
        ("zep0007", StringType::Utf8),
        ("zarrs.vlen", StringType::LargeUtf8),
    ];
    for zstd in [false, true] {
        let mut group = c.benchmark_group(if zstd { "decode_zstd" } else { "decode" });
        group
            .throughput(Throughput::Bytes(value_bytes))
            .sample_size(10);
        if zstd {
            // The bound every Zarr reader pays: fetch and decompress each chunk,
            // nothing else (same chunks as vlen-utf8 + zstd, same parallelism).
            let store = store_for("vlen-utf8", true, &values);
            let keys: Vec<String> = (0..ELEMENTS.div_ceil(CHUNK))
                .map(|i| format!("c/{i}"))
                .collect();
            group.bench_function("bound: zstd decompress only (vlen-utf8 chunks)", |b| {
                b.iter(|| {
                    let total: usize = keys
                        .par_iter()
                        .map(|k| {
                            let chunk = store.get(k).unwrap().unwrap();
                            zstd::bulk::decompress(&chunk, 64 << 20).unwrap().len()
                        })
                        .sum();
                    black_box(total)
                })
            });
        }
        for (layout, string_type) in paths {
            let store = store_for(layout, zstd, &values);
            let array = ZarrArray::open_with(
                store,
                "",
                ReadOptions {
                    string_type: Some(string_type),
                    ..ReadOptions::default()
                },
            )
            .unwrap();
            group.bench_function(format!("{layout} -> {string_type:?}"), |b| {
                b.iter(|| {
                    let rows: usize = array
                        .batches(&zarrow::ExecutionContext::default())
                        .map(|batch| batch.unwrap().num_rows())
                        .sum();
                    black_box(rows)
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
