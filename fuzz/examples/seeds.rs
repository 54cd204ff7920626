//! Build the seed corpora `fuzz/corpus/NAME/seed-*` from the real stores in
//! `testdata/stores/` (written by zarr-python, zarrs and the ZEP0007 draft's
//! procedure), each chunk wrapped in the parameter header its target decodes (see
//! the target's doc in `src/lib.rs`), plus a few hand-made inputs per target.
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --example seeds
//! ```
//!
//! Re-running replaces every `seed-*` file and leaves the files the fuzzer added.
//! It prints, per target, how many seeds were written and how many arrays they
//! decoded (a seed that decodes nothing is reported: its header is wrong).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::Array;
use serde_json::{Value, json};
use zarrow::metadata::{CodecMetadata, Zep0007Offsets};
use zarrow::{CodecChain, DataType, LocalStore, NodeMetadata, Store, ZarrArray};
use zarrow_fuzz::{SEPARATOR, elements_bytes, split_index_start, undo_bytes_codecs};

/// The largest seed written (bigger ones are skipped).
const MAX_SEED: usize = 64 << 10;

#[derive(Default)]
struct Seeds {
    by_target: BTreeMap<&'static str, BTreeMap<String, Vec<u8>>>,
}

impl Seeds {
    fn add(&mut self, target: &'static str, label: &str, bytes: Vec<u8>) {
        if bytes.len() > MAX_SEED {
            return;
        }
        let label: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let files = self.by_target.entry(target).or_default();
        // Identical inputs once.
        if files.values().any(|b| *b == bytes) {
            return;
        }
        let mut name = format!("seed-{label}");
        let mut i = 1;
        while files.contains_key(&name) {
            i += 1;
            name = format!("seed-{label}-{i}");
        }
        files.insert(name, bytes);
    }
}

fn header(head: &[u8], chunk: &[u8]) -> Vec<u8> {
    [head, chunk].concat()
}

/// The type selector of the `fixed` target.
fn fixed_sel(t: DataType) -> Option<(u8, u8)> {
    Some(match t {
        DataType::Bool => (0, 0),
        DataType::Int8 => (1, 0),
        DataType::Int16 => (2, 0),
        DataType::Int32 => (3, 0),
        DataType::Int64 => (4, 0),
        DataType::UInt8 => (5, 0),
        DataType::UInt16 => (6, 0),
        DataType::UInt32 => (7, 0),
        DataType::UInt64 => (8, 0),
        DataType::Float32 => (9, 0),
        DataType::Float64 => (10, 0),
        DataType::FixedUtf32 { chars } if (1..=16).contains(&chars) => (11, (chars - 1) as u8),
        DataType::NullTerminatedBytes { length } if (1..=32).contains(&length) => {
            (12, (length - 1) as u8)
        }
        _ => return None,
    })
}

/// A bytes->bytes codec, told apart by its name (v3 name, alias or v2 id) as
/// zarrow's codec table does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BytesToBytes {
    Zstd,
    Gzip,
    Zlib,
    Blosc,
    Crc32c,
}

impl BytesToBytes {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "zstd" | "numcodecs.zstd" => Self::Zstd,
            "gzip" | "numcodecs.gzip" => Self::Gzip,
            "zlib" | "numcodecs.zlib" => Self::Zlib,
            "blosc" | "numcodecs.blosc" => Self::Blosc,
            "crc32c" | "numcodecs.crc32c" => Self::Crc32c,
            _ => return None,
        })
    }
}

/// The array->bytes layout of a codec list (the ZEP0007 one has no entry: the
/// data type names it).
enum ArrayToBytes {
    /// `bytes` (`endian` is its pre-release name).
    Bytes { big_endian: bool },
    /// `vlen-utf8`, `vlen-bytes`, `zarrs.vlen_v2` and its old names.
    VlenInterleaved,
    /// `zarrs.vlen` and its old names.
    ZarrsVlen(Box<ZarrsVlen>),
    /// A ZEP0007 data type without an explicit layout codec.
    Zep0007 { large: bool },
    /// `sharding_indexed`.
    Sharding(Box<Sharding>),
}

/// The parts of a `zarrs.vlen` configuration the seeds look at.
struct ZarrsVlen {
    /// `index_data_type` is `uint32` (else `uint64`, the default).
    index_u32: bool,
    /// `index_location` is `end` (else `start`, the default).
    index_at_end: bool,
    index_codecs: Chain,
    data_codecs: Chain,
}

/// The parts of a `sharding_indexed` configuration the seeds look at.
struct Sharding {
    chunk_shape: Vec<u64>,
    codecs: Chain,
    index_codecs: Chain,
    /// `index_location` is `start` (else `end`, the default).
    index_at_start: bool,
}

/// A codec list as written (`ArrayMetadata::codecs`, or a list nested in a layout
/// codec's configuration), sorted into what the seeds look at.
struct Chain {
    /// Whether an array->array codec (`transpose`) comes first.
    transposed: bool,
    array_to_bytes: ArrayToBytes,
    /// The bytes->bytes codecs, in encoding order.
    bytes_to_bytes: Vec<BytesToBytes>,
    /// `bytes` then the list's bytes->bytes entries: undoes the compression.
    undo: Option<CodecChain>,
}

impl Chain {
    /// Sort `list`; `zep0007` is the layout the array's data type names, if any (an
    /// explicit array->bytes codec replaces it). `None` for a name zarrow does not
    /// know or a list without a layout (an array that opened has neither).
    fn parse(list: &[CodecMetadata], zep0007: Option<Zep0007Offsets>) -> Option<Self> {
        let mut transposed = false;
        let mut layout = None;
        let mut bytes_to_bytes = Vec::new();
        let mut undo = vec![CodecMetadata::named("bytes")];
        for entry in list {
            let name = entry.name.as_str();
            let config = &entry.configuration;
            let text = |field: &str| config.get(field).and_then(Value::as_str);
            if name == "transpose" {
                transposed = true;
                continue;
            }
            if let Some(codec) = BytesToBytes::named(name) {
                bytes_to_bytes.push(codec);
                undo.push(entry.clone());
                continue;
            }
            layout = Some(match name {
                "bytes" | "endian" => ArrayToBytes::Bytes {
                    big_endian: text("endian") == Some("big"),
                },
                "vlen-utf8"
                | "vlen-bytes"
                | "zarrs.vlen_v2"
                | "vlen_v2"
                | "https://codec.zarrs.dev/array_to_bytes/vlen_v2" => ArrayToBytes::VlenInterleaved,
                "zarrs.vlen" | "vlen" | "https://codec.zarrs.dev/array_to_bytes/vlen" => {
                    ArrayToBytes::ZarrsVlen(Box::new(ZarrsVlen {
                        index_u32: text("index_data_type") == Some("uint32"),
                        index_at_end: text("index_location") == Some("end"),
                        index_codecs: nested(
                            config.get("index_codecs"),
                            json!([{"name": "bytes"}]),
                        )?,
                        data_codecs: nested(config.get("data_codecs"), json!([{"name": "bytes"}]))?,
                    }))
                }
                "sharding_indexed" => ArrayToBytes::Sharding(Box::new(Sharding {
                    chunk_shape: serde_json::from_value(config.get("chunk_shape")?.clone()).ok()?,
                    codecs: nested(config.get("codecs"), Value::Null)?,
                    index_codecs: nested(
                        config.get("index_codecs"),
                        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]),
                    )?,
                    index_at_start: text("index_location") == Some("start"),
                })),
                _ => return None,
            });
        }
        let array_to_bytes = layout.or_else(|| {
            zep0007.map(|offsets| ArrayToBytes::Zep0007 {
                large: offsets == Zep0007Offsets::Int64,
            })
        })?;
        Some(Self {
            transposed,
            array_to_bytes,
            bytes_to_bytes,
            undo: CodecChain::from_codecs(&undo).ok(),
        })
    }

    /// `encoded` with the bytes->bytes codecs undone.
    fn undo(&self, encoded: &[u8]) -> Option<Vec<u8>> {
        undo_bytes_codecs(self.undo.as_ref()?, encoded)
    }
}

/// A codec list nested in a configuration (`default` when the field is absent).
fn nested(list: Option<&Value>, default: Value) -> Option<Chain> {
    let list: Vec<CodecMetadata> = serde_json::from_value(list.cloned().unwrap_or(default)).ok()?;
    Chain::parse(&list, None)
}

/// A chain of `bytes` then `codec`, to apply `codec` alone.
fn encoder(codec: Value) -> CodecChain {
    let list: Vec<CodecMetadata> =
        serde_json::from_value(json!([{"name": "bytes"}, codec])).expect("codec list");
    CodecChain::from_codecs(&list).expect("a known codec")
}

/// The `vlen-utf8` / `vlen-bytes` layout: a u32 count, then each value behind its
/// u32 length.
fn vlen_interleaved(values: &[&[u8]]) -> Vec<u8> {
    let mut out = (values.len() as u32).to_le_bytes().to_vec();
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
    out
}

/// A bytes->bytes codec's selector in the `compressors` target.
fn compressor_sel(codec: &BytesToBytes) -> Option<u8> {
    Some(match codec {
        BytesToBytes::Zstd => 1,
        BytesToBytes::Gzip => 2,
        BytesToBytes::Zlib => 3,
        BytesToBytes::Blosc => 4,
        BytesToBytes::Crc32c => 5,
    })
}

/// One array's chunks, as stored and with the bytes->bytes codecs undone.
struct Chunk {
    label: String,
    stored: Vec<u8>,
    layout: Option<Vec<u8>>,
}

fn array_seeds(seeds: &mut Seeds, name: &str, store: &Arc<dyn Store>, path: &str, doc: &str) {
    let Ok(array) = ZarrArray::open(store.clone(), path) else {
        eprintln!("skipped {name}: does not open");
        return;
    };
    let meta = array.metadata().clone();
    let Some(chain) = Chain::parse(&meta.codecs, meta.zep0007) else {
        eprintln!("skipped {name}: codecs not known");
        return;
    };
    let chain = &chain;
    let n: u64 = meta.chunk_shape.iter().product();
    let v2 = meta.zarr_format == 2;
    let mut chunks = Vec::new();
    for key in array.chunk_keys().take(64) {
        let Ok(Some(stored)) = store.get(&key) else {
            continue;
        };
        let stored = stored.to_vec();
        let layout = chain.undo(&stored);
        chunks.push(Chunk {
            label: format!("{name}-{}", key.replace('/', "_")),
            stored,
            layout,
        });
    }
    let Some(n_bytes) = (n <= 4096).then(|| elements_bytes(n)) else {
        eprintln!("skipped {name}'s chunks: {n} elements per chunk");
        return;
    };
    let one_d = meta.shape.len() == 1;
    let is_bytes = meta.data_type == DataType::Bytes;

    // Transposed arrays (v3 transpose, v2 order F) and plain 2-D arrays: `transpose`.
    let transposed = chain.transposed;
    if meta.shape.len() >= 2
        && meta.chunk_shape.len() <= 3
        && meta.chunk_shape.iter().all(|&c| c <= 6)
    {
        let kind = match (&chain.array_to_bytes, meta.data_type) {
            (ArrayToBytes::Bytes { .. }, DataType::Int32) => Some(0),
            (ArrayToBytes::VlenInterleaved, DataType::String) => Some(3),
            (ArrayToBytes::VlenInterleaved, DataType::Bytes) => Some(4),
            (ArrayToBytes::ZarrsVlen(c), DataType::String) if c.index_u32 => Some(5),
            (ArrayToBytes::Zep0007 { large: false }, DataType::String) => Some(7),
            _ => None,
        };
        if let Some(kind) = kind {
            let ndim = meta.chunk_shape.len();
            let mut dims = [0u8; 3];
            for (d, &c) in dims.iter_mut().zip(&meta.chunk_shape) {
                *d = (c - 1) as u8;
            }
            // v2 order F, or a v3 transpose [1, 0] (permutation 1), or none (0).
            let f_order = v2 && transposed;
            let perm = u8::from(transposed && !v2);
            let cfg = u8::from(ndim == 3) | (kind << 1) | (u8::from(f_order) << 4);
            for c in &chunks {
                if let Some(layout) = &c.layout {
                    seeds.add(
                        "transpose",
                        &c.label,
                        header(&[cfg, dims[0], dims[1], dims[2], perm], layout),
                    );
                    seeds.add(
                        "transpose",
                        &format!("{}-zstd", c.label),
                        header(&[cfg | 32, dims[0], dims[1], dims[2], perm], layout),
                    );
                }
            }
        }
    }

    match &chain.array_to_bytes {
        ArrayToBytes::VlenInterleaved => {
            let variant = match (v2, is_bytes, doc.contains("vlen_v2")) {
                (true, false, _) => 4,
                (true, true, _) => 5,
                (false, false, false) => 0,
                (false, true, false) => 1,
                (false, false, true) => 2,
                (false, true, true) => 3,
            };
            for c in &chunks {
                if let Some(layout) = &c.layout {
                    seeds.add(
                        "vlen_interleaved",
                        &c.label,
                        header(&[variant, 0, n_bytes[0], n_bytes[1]], layout),
                    );
                    // Through the fused zstd decoder.
                    seeds.add(
                        "vlen_interleaved",
                        &format!("{}-zstd", c.label),
                        header(&[variant, 1, n_bytes[0], n_bytes[1]], layout),
                    );
                }
            }
        }
        ArrayToBytes::ZarrsVlen(config) => {
            let mut cfg = 0u8;
            if config.index_u32 {
                cfg |= 1;
            }
            let at_end = config.index_at_end;
            if at_end {
                cfg |= 2;
            }
            if is_bytes {
                cfg |= 4;
            }
            let index_sel = match config.index_codecs.bytes_to_bytes.as_slice() {
                [] => Some(0u8),
                [BytesToBytes::Crc32c] => Some(1),
                [BytesToBytes::Zstd] => Some(2),
                [BytesToBytes::Gzip] => Some(3),
                _ => None,
            };
            let data_sel = match config.data_codecs.bytes_to_bytes.as_slice() {
                [] => Some(0u8),
                [BytesToBytes::Zstd] => Some(1),
                [BytesToBytes::Crc32c] => Some(2),
                [BytesToBytes::Gzip] => Some(3),
                _ => None,
            };
            let outer = if chain.bytes_to_bytes.is_empty() {
                0
            } else {
                8
            };
            for c in &chunks {
                let Some(layout) = &c.layout else { continue };
                // The raw index and data, whatever the nested codecs.
                let split = if at_end {
                    layout.len().checked_sub(8).and_then(|l| {
                        let len = u64::from_le_bytes(layout[l..].try_into().ok()?) as usize;
                        let start = l.checked_sub(len)?;
                        Some((&layout[start..l], &layout[..start]))
                    })
                } else {
                    split_index_start(layout)
                };
                let Some((index, values)) = split else {
                    continue;
                };
                let index = config.index_codecs.undo(index);
                let values = if values.is_empty() {
                    Some(vec![])
                } else {
                    config.data_codecs.undo(values)
                };
                let (Some(index), Some(values)) = (index, values) else {
                    continue;
                };
                let len = (index.len() as u64).to_le_bytes();
                let start_form = [&len[..], &index, &values].concat();
                let plain = if at_end {
                    [&values[..], &index, &len].concat()
                } else {
                    start_form.clone()
                };
                seeds.add(
                    "zarrs_vlen",
                    &c.label,
                    header(&[cfg | outer, 0, n_bytes[0], n_bytes[1]], &plain),
                );
                if let (Some(i), Some(d)) = (index_sel, data_sel)
                    && (i, d) != (0, 0)
                {
                    let nested = i | (d << 2);
                    seeds.add(
                        "zarrs_vlen",
                        &format!("{}-nested", c.label),
                        header(&[cfg | outer, nested, n_bytes[0], n_bytes[1]], &start_form),
                    );
                }
                // Every nested combination once, from the first chunk.
                if c.label.ends_with("c_0") && !is_bytes {
                    for nested in 1..16u8 {
                        seeds.add(
                            "zarrs_vlen",
                            &format!("{}-n{nested}", c.label),
                            header(&[cfg, nested, n_bytes[0], n_bytes[1]], &start_form),
                        );
                    }
                }
            }
        }
        ArrayToBytes::Zep0007 { large } => {
            let mut cfg = u8::from(*large) | (u8::from(is_bytes) << 1);
            if meta.chunk_shape.len() == 2 && meta.chunk_shape[1] == 2 {
                cfg |= 16;
            }
            let rows = if cfg & 16 != 0 {
                meta.chunk_shape[0]
            } else {
                n
            };
            let rows_bytes = elements_bytes(rows);
            for c in &chunks {
                if let Some(layout) = &c.layout {
                    seeds.add(
                        "zep0007",
                        &c.label,
                        header(&[cfg, 0, rows_bytes[0], rows_bytes[1]], layout),
                    );
                    if cfg & 16 != 0 {
                        seeds.add(
                            "zep0007",
                            &format!("{}-flat", c.label),
                            header(&[cfg & !16, 0, n_bytes[0], n_bytes[1]], layout),
                        );
                    }
                }
            }
        }
        ArrayToBytes::Bytes { big_endian } => {
            if let Some((sel, width)) = fixed_sel(meta.data_type) {
                let cfg = u8::from(*big_endian) | (u8::from(v2) << 1);
                for c in &chunks {
                    if let Some(layout) = &c.layout {
                        // A transposed chunk's bytes are still n elements of the type.
                        seeds.add(
                            "fixed",
                            &c.label,
                            header(&[sel, cfg, width, n_bytes[0], n_bytes[1]], layout),
                        );
                    }
                }
            }
        }
        ArrayToBytes::Sharding(s) => {
            let inner_sel = match (&s.codecs.array_to_bytes, meta.data_type) {
                (ArrayToBytes::VlenInterleaved, DataType::String) => Some(0u8),
                (ArrayToBytes::ZarrsVlen(_), DataType::String) => Some(1),
                (ArrayToBytes::Bytes { .. }, DataType::Int32) => Some(2),
                (ArrayToBytes::VlenInterleaved, DataType::Bytes) => Some(3),
                _ => None,
            };
            let inner_zstd = match s.codecs.bytes_to_bytes.as_slice() {
                [] => Some(0u8),
                [BytesToBytes::Zstd] => Some(16),
                _ => None,
            };
            let crc = match s.index_codecs.bytes_to_bytes.as_slice() {
                [] => Some(0u8),
                [BytesToBytes::Crc32c] => Some(8),
                _ => None,
            };
            if let (Some(inner), Some(zstd), Some(crc)) = (inner_sel, inner_zstd, crc)
                && meta.chunk_shape.len() <= 2
                && meta.chunk_shape.iter().all(|&c| c <= 8)
            {
                let start = if s.index_at_start { 4 } else { 0 };
                let cfg =
                    inner | start | crc | zstd | if meta.chunk_shape.len() == 2 { 32 } else { 0 };
                let mut head = [cfg, 0, 0, 0, 0];
                for (d, (&shard, &inner)) in meta.chunk_shape.iter().zip(&s.chunk_shape).enumerate()
                {
                    head[1 + d] = (shard - 1) as u8;
                    let divisors: Vec<u64> = (1..=shard).filter(|&x| shard % x == 0).collect();
                    head[3 + d] = divisors.iter().position(|&x| x == inner).unwrap_or(0) as u8;
                }
                for c in &chunks {
                    seeds.add("sharding", &c.label, header(&head, &c.stored));
                }
            }
        }
    }

    // Stored chunks as they are, behind their compressors: `compressors`.
    let layout_sel = match (&chain.array_to_bytes, meta.data_type) {
        (ArrayToBytes::VlenInterleaved, DataType::String) => Some(0u8),
        (ArrayToBytes::VlenInterleaved, DataType::Bytes) => Some(1),
        (ArrayToBytes::Bytes { big_endian: false }, DataType::Int32) => Some(2),
        (ArrayToBytes::Bytes { .. }, DataType::UInt8) => Some(3),
        _ => None,
    };
    let sels: Option<Vec<u8>> = chain.bytes_to_bytes.iter().map(compressor_sel).collect();
    if let (Some(layout), Some(mut sels)) = (layout_sel, sels)
        && one_d
        && !chain.transposed
        && sels.len() <= 3
        && !sels.is_empty()
        && (!v2 || sels.len() == 1)
    {
        sels.resize(3, 0);
        let cfg = u8::from(v2) | (layout << 1);
        for c in &chunks {
            seeds.add(
                "compressors",
                &c.label,
                header(
                    &[cfg, sels[0], sels[1], sels[2], n_bytes[0], n_bytes[1]],
                    &c.stored,
                ),
            );
        }
    }
}

/// The `fill_value` target's type selector for an array.
fn fill_sel(meta: &zarrow::ArrayMetadata) -> Option<u8> {
    if let Some((sel, _)) = fixed_sel(meta.data_type)
        && sel <= 10
    {
        return Some(sel);
    }
    let chain = Chain::parse(&meta.codecs, meta.zep0007)?;
    Some(match (&chain.array_to_bytes, meta.data_type) {
        (ArrayToBytes::Zep0007 { large }, t) => {
            16 + u8::from(*large) + 2 * u8::from(t == DataType::Bytes)
        }
        (ArrayToBytes::ZarrsVlen(_), DataType::Bytes) => 13,
        (_, DataType::String) => 11,
        (_, DataType::Bytes) => 12,
        (_, DataType::FixedUtf32 { .. }) => 14,
        (_, DataType::NullTerminatedBytes { .. }) => 15,
        _ => return None,
    })
}

fn read(path: &Path) -> Option<Vec<u8>> {
    fs::read(path).ok()
}

/// Every node directory under `dir` (itself included), with its path from `root`.
fn nodes(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let rel = dir
        .strip_prefix(root)
        .unwrap_or(Path::new(""))
        .to_string_lossy()
        .replace('\\', "/");
    if ["zarr.json", ".zarray", ".zgroup"]
        .iter()
        .any(|m| dir.join(m).is_file())
    {
        out.push(rel);
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        nodes(root, &d, out);
    }
}

fn testdata_seeds(seeds: &mut Seeds, stores: &Path) {
    let mut roots: Vec<PathBuf> = fs::read_dir(stores)
        .expect("testdata/stores")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    roots.sort();
    for root in roots {
        let store_name = root
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .trim_end_matches(".zarr")
            .to_string();
        let store: Arc<dyn Store> = Arc::new(LocalStore::new(&root));
        let mut paths = Vec::new();
        nodes(&root, &root, &mut paths);
        let mut linear_columns = Vec::new();
        for path in paths {
            let name = if path.is_empty() {
                store_name.clone()
            } else {
                format!("{store_name}-{}", path.replace('/', "-"))
            };
            let dir = root.join(&path);
            let Ok(node) = zarrow::read_node(store.as_ref(), &path) else {
                eprintln!("skipped {name}: no metadata");
                continue;
            };
            let array = match &node {
                NodeMetadata::Array(_) => ZarrArray::open(store.clone(), &path).ok(),
                NodeMetadata::Group(_) => None,
            };
            let first_chunk = array.as_ref().and_then(|a| {
                let key = a.chunk_key(&vec![0; a.metadata().shape.len()]);
                store.get(&key).ok().flatten().map(|b| b.to_vec())
            });
            // Metadata documents.
            if let Some(doc) = read(&dir.join("zarr.json")) {
                let mut input = doc.clone();
                if let Some(chunk) = &first_chunk {
                    input.push(SEPARATOR);
                    input.extend_from_slice(chunk);
                }
                seeds.add("metadata_v3", &name, input);
                seeds.add("metadata_v3", &format!("{name}-doc"), doc);
            }
            if dir.join(".zarray").is_file() || dir.join(".zgroup").is_file() {
                let mut input = Vec::new();
                for (i, key) in [".zarray", ".zattrs", ".zgroup"].iter().enumerate() {
                    if i > 0 {
                        input.push(SEPARATOR);
                    }
                    input.extend(read(&dir.join(key)).unwrap_or_default());
                }
                if let Some(chunk) = &first_chunk {
                    input.push(SEPARATOR);
                    input.extend_from_slice(chunk);
                }
                seeds.add("metadata_v2", &name, input);
            }
            let (NodeMetadata::Array(meta), Some(array)) = (&node, &array) else {
                continue;
            };
            // The fill value, as written.
            let doc_key = if meta.zarr_format == 3 {
                "zarr.json"
            } else {
                ".zarray"
            };
            let doc_text = read(&dir.join(doc_key)).unwrap_or_default();
            if let (Some(sel), Ok(doc)) = (
                fill_sel(meta),
                serde_json::from_slice::<serde_json::Value>(&doc_text),
            ) && let Some(fill) = doc.get("fill_value")
            {
                let v2 = u8::from(meta.zarr_format == 2);
                let fill = serde_json::to_vec(fill).unwrap_or_default();
                seeds.add("fill_value", &name, header(&[sel, v2], &fill));
            }
            array_seeds(
                seeds,
                &name,
                &store,
                &path,
                &String::from_utf8_lossy(&doc_text),
            );
            // The linear format, as zarrow writes it.
            if let Ok(values) = array.read_all() {
                let mut json = Vec::new();
                if zarrow::linear::write_json(&mut json, values.as_ref(), &meta.shape).is_ok()
                    && json.len() <= 16 << 10
                {
                    seeds.add("linear_json", &name, json);
                }
                if meta.shape.len() == 1 && values.len() <= 200 {
                    let column = path.rsplit('/').next().unwrap_or("values").to_string();
                    linear_columns.push((
                        if column.is_empty() {
                            store_name.clone()
                        } else {
                            column
                        },
                        values,
                        meta.shape.clone(),
                    ));
                }
            }
        }
        // A store's 1-D arrays as one CSV (a group as a table).
        if !linear_columns.is_empty() {
            let columns: Vec<(String, &dyn Array, Vec<u64>)> = linear_columns
                .iter()
                .map(|(n, a, s)| (n.clone(), a.as_ref() as &dyn Array, s.clone()))
                .collect();
            let mut csv = Vec::new();
            if zarrow::linear::write_csv(&mut csv, &columns).is_ok() {
                seeds.add("linear_csv", &store_name, csv);
            }
        }
    }
}

/// Shards of 4 elements in inner chunks of 2, for each inner layout, index location
/// and index codec (and one with an absent inner chunk).
fn shard_seeds(seeds: &mut Seeds) {
    let values: [&[u8]; 4] = [b"ab", b"", b"xyz\xc3\xa9", b"q"];
    for layout in 0..4u8 {
        let inner: Vec<Vec<u8>> = values
            .chunks(2)
            .map(|pair| match layout {
                0 | 3 => vlen_interleaved(pair),
                1 => {
                    let mut offsets = vec![0u32];
                    for v in pair {
                        offsets.push(offsets.last().copied().unwrap_or(0) + v.len() as u32);
                    }
                    let index: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
                    [
                        &(index.len() as u64).to_le_bytes()[..],
                        &index,
                        &pair.concat(),
                    ]
                    .concat()
                }
                _ => pair
                    .iter()
                    .flat_map(|v| (v.len() as i32 * 7).to_le_bytes())
                    .collect(),
            })
            .collect();
        let zstd_codec =
            encoder(json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}));
        for zstd in [false, true] {
            let inner: Vec<Vec<u8>> = inner
                .iter()
                .map(|c| {
                    if zstd {
                        zstd_codec.encode_bytes(c.clone()).unwrap_or_default()
                    } else {
                        c.clone()
                    }
                })
                .collect();
            for start in [false, true] {
                for crc in [false, true] {
                    for absent in [false, true] {
                        let index_len = 32 + if crc { 4 } else { 0 };
                        let mut offset = if start { index_len as u64 } else { 0 };
                        let mut index = Vec::new();
                        let mut data = Vec::new();
                        for (i, c) in inner.iter().enumerate() {
                            if absent && i == 1 {
                                index.extend_from_slice(&[0xFF; 16]);
                                continue;
                            }
                            index.extend_from_slice(&offset.to_le_bytes());
                            index.extend_from_slice(&(c.len() as u64).to_le_bytes());
                            data.extend_from_slice(c);
                            offset += c.len() as u64;
                        }
                        if crc {
                            index = encoder(json!({"name": "crc32c"}))
                                .encode_bytes(index)
                                .unwrap_or_default();
                        }
                        let shard = if start {
                            [index, data].concat()
                        } else {
                            [data, index].concat()
                        };
                        let cfg = layout
                            | if start { 4 } else { 0 }
                            | if crc { 8 } else { 0 }
                            | if zstd { 16 } else { 0 };
                        // Shard of 4 (s0 = 3), inner chunks of 2 (divisor index 1 of [1, 2, 4]).
                        let label = format!(
                            "synthetic-l{layout}-z{}-s{}-c{}-a{}",
                            u8::from(zstd),
                            u8::from(start),
                            u8::from(crc),
                            u8::from(absent)
                        );
                        seeds.add("sharding", &label, header(&[cfg, 3, 0, 1, 0], &shard));
                    }
                }
            }
        }
    }
}

/// Hand-made inputs for the targets that are not chunk decoders.
fn handmade_seeds(seeds: &mut Seeds) {
    let fills: &[&str] = &[
        "0",
        "1",
        "-1",
        "-128",
        "127",
        "255",
        "65535",
        "-32768",
        "4294967295",
        "-2147483648",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "1.5",
        "1e308",
        "-0.0",
        "\"NaN\"",
        "\"Infinity\"",
        "\"-Infinity\"",
        "\"0x7fc00000\"",
        "\"0x3ff0000000000000\"",
        "\"0xfff8000000000001\"",
        "true",
        "false",
        "null",
        "\"\"",
        "\"abc\"",
        "\"\\u00e9\\u0000\"",
        "\"AAE=\"",
        "\"YQAA\"",
        "[0, 1, 255]",
        "[]",
        "[256]",
        "{}",
        "\"not base64!\"",
    ];
    for sel in 0..20u8 {
        for (i, fill) in fills.iter().enumerate() {
            // Every fill for every type would be 1400 files: a spread.
            if (usize::from(sel) + i) % 4 == 0 {
                seeds.add(
                    "fill_value",
                    &format!("type{sel}-{i}"),
                    header(&[sel, 0], fill.as_bytes()),
                );
                seeds.add(
                    "fill_value",
                    &format!("type{sel}-{i}-v2"),
                    header(&[sel, 1], fill.as_bytes()),
                );
                seeds.add(
                    "fill_value",
                    &format!("type{sel}-{i}-sharded"),
                    header(&[sel, 2], fill.as_bytes()),
                );
            }
        }
    }

    let linear: &[&str] = &[
        r#"["version", "1.0.0", "ndarray", "shape", 2, 2, "strides", 2, 1, "offset", 0, "order", "row-major", "dtype", "float64", "length", 4, "capacity", 4, "data", 1, 2, 3, 4]"#,
        r#"["version", "1.0.0", "ndarray", "shape", "strides", 0, "offset", 0, "order", "row-major", "dtype", "int8", "length", 1, "capacity", 1, "data", -5]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 3, "strides", -1, "offset", 2, "order", "row-major", "dtype", "generic", "length", 3, "capacity", 3, "data", "a", "", "\u00e9"]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, 3, "strides", 1, 2, "offset", 0, "order", "column-major", "dtype", "uint8c", "length", 6, "capacity", 6, "data", 1, 2, 3, 4, 5, 6]"#,
        r#"["version", "1.0.0", "ndarray", "dtype", "generic", "shape", 2, "strides", 2, "offset", 1, "order", "row-major", "length", 2, "capacity", 5, "data", [1, 2], [], [255], [0], [7]]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 3, "strides", 1, "offset", 0, "order", "row-major", "dtype", "generic", "length", 3, "capacity", 3, "data", 18446744073709551615, 0, 1]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, "strides", 1, "offset", 0, "order", "row-major", "dtype", "generic", "length", 2, "capacity", 2, "data", -9223372036854775808, 2.5]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 4, "strides", 1, "offset", 0, "order", "row-major", "dtype", "float32", "length", 4, "capacity", 4, "data", "NaN", "Infinity", "-Infinity", 0.1]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, "strides", 1, "offset", 0, "order", "row-major", "dtype", "bool", "length", 2, "capacity", 2, "data", true, false]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, "strides", 1, "offset", 0, "order", "row-major", "dtype", "generic", "length", 2, "capacity", 2, "data", true, false]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 0, 3, "strides", 3, 1, "offset", 0, "order", "row-major", "dtype", "generic", "length", 0, "capacity", 0, "data"]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, "strides", 1, "offset", 0, "order", "row-major", "dtype", "uint32", "length", 2, "capacity", 2, "data", 4294967295, 0]"#,
        r#"["version", "1.0.0", "ndarray", "shape", 2, "strides", 1, "offset", 0, "order", "row-major", "dtype", "int16", "length", 2, "capacity", 2, "data", -32768, 32767]"#,
    ];
    for (i, doc) in linear.iter().enumerate() {
        seeds.add(
            "linear_json",
            &format!("handmade-{i}"),
            doc.as_bytes().to_vec(),
        );
    }
    let csv: &[&str] = &[
        "a,b\nversion,version\n1.0.0,1.0.0\nndarray,ndarray\nshape,shape\n2,1\nstrides,strides\n1,1\noffset,offset\n0,0\norder,order\nrow-major,row-major\ndtype,dtype\ngeneric,bool\nlength,length\n2,1\ncapacity,capacity\n2,1\ndata,data\nx,true\n\"\"\"\"\"\",\n",
        "n\nversion\n1.0.0\nndarray\nshape\n3\nstrides\n1\noffset\n0\norder\nrow-major\ndtype\nfloat64\nlength\n3\ncapacity\n3\ndata\nNaN\n-Infinity\n1.25\n",
        "s\nversion\n1.0.0\nndarray\nshape\n2\nstrides\n1\noffset\n0\norder\nrow-major\ndtype\ngeneric\nlength\n2\ncapacity\n2\ndata\n\"\"\"12\"\"\"\n\"\"\"[1, 2]\"\"\"\n",
    ];
    for (i, doc) in csv.iter().enumerate() {
        seeds.add(
            "linear_csv",
            &format!("handmade-{i}"),
            doc.as_bytes().to_vec(),
        );
    }

    // write_roundtrip: every value type (the enum variant comes from the first four
    // bytes after the header) under a spread of options.
    let option_sets: [[u8; 3]; 6] = [
        [0b0000_0000, 3, 0],     // default encoding, zstd
        [0b0001_1001, 0, 1],     // zarrs-vlen, no compressor, nd 1-D
        [0b0100_1010, 7, 2 | 4], // zep0007, gzip, nulls fill, 2-D of 2 columns
        [0b0011_0100, 63, 0],    // v2, blosc, nulls + error policy
        [0b1101_0100, 1, 3],     // v2, blosc level 1, nulls fill, 0-d
        [0b0100_0000, 255, 0],   // default, zstd, nulls fill, chunk 256
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for variant in 0..18u64 {
        let selector = ((variant << 32).div_ceil(18) as u32).to_le_bytes();
        for (i, opts) in option_sets.iter().enumerate() {
            let mut body = selector.to_vec();
            for _ in 0..(40 + 40 * i) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                body.push((state >> 24) as u8);
            }
            seeds.add(
                "write_roundtrip",
                &format!("variant{variant}-opts{i}"),
                header(opts, &body),
            );
        }
    }
}

/// push_decoder: a few tables (v3 chunked, v3 sharded, v2, one row) under drivers
/// that answer honestly, and that take each adversarial action once.
fn push_decoder_seeds(seeds: &mut Seeds) {
    let tables: [[u8; 6]; 4] = [
        [200, 0, 15, 0, 0, 49], // 200 rows, chunks of 16, v3, batches of 50
        [200, 0, 15, 7, 0, 49], // the same in shards of 64
        [137, 0, 9, 0, 1, 30],  // 138 rows, chunks of 10, v2, batches of 31
        [0, 0, 0, 0, 0, 0],     // one row
    ];
    let drivers: [&[u8]; 10] = [
        &[],
        &[0, 0, 0, 4],
        &[0, 5],
        &[0, 0, 6],
        &[7],
        &[8, 5, 1, 2, 3, 4, 5],
        &[0, 9],
        &[0, 0, 10],
        &[11, 12, 0, 0, 13],
        &[0, 0, 0, 0, 0, 0, 0, 0, 6],
    ];
    for (t, table) in tables.iter().enumerate() {
        for (d, driver) in drivers.iter().enumerate() {
            seeds.add(
                "push_decoder",
                &format!("table{t}-driver{d}"),
                header(table, driver),
            );
        }
    }
    // 2-D grids (cfg & 2): 200 ids on 40 x 5 (v3), 138 on 34 x 4 (v2).
    let grids: [[u8; 6]; 2] = [[200, 0, 15, 0, 2, 49], [137, 0, 9, 3, 3, 30]];
    for (g, grid) in grids.iter().enumerate() {
        for (d, driver) in drivers
            .iter()
            .enumerate()
            .filter(|(d, _)| ![3, 9].contains(d))
        {
            seeds.add(
                "push_decoder",
                &format!("grid{g}-driver{d}"),
                header(grid, driver),
            );
        }
    }
    // Partial reads (cfg & 8: a row range): a sharded zarrs.vlen table (cfg &
    // 4), rows 150..152 of 407; a 2-D grid of 203 x 2 in shards of 9 x 2 made
    // of 3 x 1 chunks, elements 150..152 and 150..351.
    let partial: [[u8; 6]; 3] = [
        [150, 1, 15, 7, 12, 49],
        [150, 1, 15, 1, 14, 2],
        [150, 200, 15, 1, 14, 2],
    ];
    for (p, case) in partial.iter().enumerate() {
        for (d, driver) in drivers
            .iter()
            .enumerate()
            .filter(|(d, _)| ![3, 9].contains(d))
        {
            seeds.add(
                "push_decoder",
                &format!("partial{p}-driver{d}"),
                header(case, driver),
            );
        }
    }
    // Decode jobs (cfg & 16), run when the decoder waits, the last first, and
    // given back: the sharded table, the v2 table, a 2-D grid, and the partial
    // read of a sharded zarrs.vlen table.
    let jobs: [[u8; 6]; 4] = [
        [200, 0, 15, 7, 16, 49],
        [137, 0, 9, 0, 17, 30],
        [200, 0, 15, 0, 18, 49],
        [150, 1, 15, 7, 28, 49],
    ];
    for (j, case) in jobs.iter().enumerate() {
        for (d, driver) in drivers
            .iter()
            .enumerate()
            .filter(|(d, _)| j < 2 || ![3, 9].contains(d))
        {
            seeds.add(
                "push_decoder",
                &format!("jobs{j}-driver{d}"),
                header(case, driver),
            );
        }
    }
}

fn main() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stores = fuzz.join("../testdata/stores");
    let mut seeds = Seeds::default();
    testdata_seeds(&mut seeds, &stores);
    shard_seeds(&mut seeds);
    handmade_seeds(&mut seeds);
    push_decoder_seeds(&mut seeds);

    for (name, target) in zarrow_fuzz::TARGETS {
        let dir = fuzz.join("corpus").join(name);
        fs::create_dir_all(&dir).expect("create the corpus directory");
        for entry in fs::read_dir(&dir).expect("list the corpus").flatten() {
            if entry.file_name().to_string_lossy().starts_with("seed-") {
                fs::remove_file(entry.path()).expect("remove an old seed");
            }
        }
        let files = seeds.by_target.remove(name).unwrap_or_default();
        let (mut bytes, mut dead, mut crashes) = (0, Vec::new(), Vec::new());
        for (file, input) in &files {
            let before = zarrow_fuzz::decoded_count();
            if std::panic::catch_unwind(|| target(input)).is_err() {
                // A seed that crashes would stop the fuzzer at start-up: leave it
                // out (it belongs in regressions/, minimized, once zarrow is fixed).
                crashes.push(file.as_str());
                continue;
            }
            if zarrow_fuzz::decoded_count() == before {
                dead.push(file.as_str());
            }
            bytes += input.len();
            fs::write(dir.join(file), input).expect("write a seed");
        }
        println!(
            "{name}: {} seeds, {bytes} bytes, {} decode nothing, {} crash (left out)",
            files.len() - crashes.len(),
            dead.len(),
            crashes.len()
        );
        for file in dead.iter().take(4) {
            println!("    decodes nothing: {file}");
        }
        for file in &crashes {
            println!("    CRASHES: {file}");
        }
    }
}
