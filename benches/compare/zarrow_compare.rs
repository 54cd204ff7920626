//! The zarrow side of the `benches/compare` harness: one job through the library,
//! timed inside the process (start-up and store opening excluded), printed as
//! `SECONDS ROWS`.
//!
//! ```text
//! zarrow_compare read STORE utf8|utf8-view|large-utf8 [mmap|warm]
//!                                                        every batch of the array
//!                                                        (`mmap`: memory-mapped store;
//!                                                        `warm`: timed on the second of
//!                                                        two runs in one process)
//! zarrow_compare bound STORE                             read + undo the bytes->bytes
//!                                                        codecs of every chunk, nothing else
//! zarrow_compare to-parquet STORE OUT.parquet            W5: Zarr -> Parquet (zstd)
//! zarrow_compare from-parquet IN.parquet OUT.zarr default|zarrs-vlen
//!                                                        W6: Parquet -> Zarr
//! zarrow_compare compress-bound IN.parquet default|zarrs-vlen
//!                                                        W6's bound: zstd-compress the
//!                                                        chunks (laid out beforehand,
//!                                                        untimed), nothing else
//! zarrow_compare parquet-read IN.parquet                 read the Parquet file only
//! zarrow_compare table STORE COLUMNS [warm]           a group's columns (comma-separated)
//!                                                        as one table (`open_table`, what
//!                                                        the Python package reads)
//! zarrow_compare head STORE N                            W7: rows 0..N with `read_range`
//!                                                        through a store that counts
//!                                                        what it fetches; prints
//!                                                        `SECONDS ROWS BYTES REQUESTS`
//! ```
//!
//! Threads: rayon's pool (set `RAYON_NUM_THREADS=1` for one core).

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arrow_buffer::Buffer;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use rayon::prelude::*;
use zarrow::CodecChain;
use zarrow::export::write_parquet;
use zarrow::metadata::CodecMetadata;
use zarrow::read::{TableOptions, open_table};
use zarrow::write::{Encoding, WriteOptions, write_batches};
use zarrow::{LocalStore, ReadOptions, Store, StringType, ZarrArray};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let start = Instant::now();
    let rows = match arg(1) {
        "read" if arg(4) == "warm" => {
            // As the Python peers are timed: the allocator has served this job
            // once already in this process (untimed), then the job is timed.
            read(arg(2), arg(3), "")?;
            return timed(|| read(arg(2), arg(3), ""));
        }
        "read" => read(arg(2), arg(3), arg(4))?,
        "table" if arg(4) == "warm" => {
            table(arg(2), arg(3))?;
            return timed(|| table(arg(2), arg(3)));
        }
        "table" => table(arg(2), arg(3))?,
        "bound" => bound(arg(2))?,
        "to-parquet" => to_parquet(arg(2), arg(3))?,
        "from-parquet" => from_parquet(arg(2), arg(3), arg(4))?,
        "compress-bound" => return compress_bound(arg(2), arg(3)),
        "parquet-read" => parquet_read(arg(2))?,
        "head" => return head(arg(2), arg(3)),
        _ => {
            eprintln!("usage: see the module documentation of benches/compare/zarrow_compare.rs");
            std::process::exit(2);
        }
    };
    println!("{} {rows}", start.elapsed().as_secs_f64());
    Ok(())
}

/// Run `job` and print its seconds and rows.
fn timed(job: impl FnOnce() -> Res<u64>) -> Res<()> {
    let start = Instant::now();
    let rows = job()?;
    println!("{} {rows}", start.elapsed().as_secs_f64());
    Ok(())
}

fn open(path: &str, string_type: StringType, memory_map: bool) -> Res<ZarrArray> {
    let options = ReadOptions {
        string_type: Some(string_type),
        ..ReadOptions::default()
    };
    let store = if memory_map {
        // SAFETY: `new_memory_mapped` requires that no file under `path` be
        // truncated or modified while a buffer from it is alive. The harness
        // (run.py) writes each store before timing it and never during a job.
        unsafe { LocalStore::new_memory_mapped(path) }
    } else {
        LocalStore::new(path)
    };
    Ok(ZarrArray::open_with(Arc::new(store), "", options)?)
}

fn read(path: &str, string_type: &str, mode: &str) -> Res<u64> {
    let string_type = string_type.parse::<StringType>()?;
    let array = open(path, string_type, mode == "mmap")?;
    let mut rows = 0;
    for batch in array.batches(&zarrow::ExecutionContext::default()) {
        rows += batch?.num_rows() as u64;
    }
    Ok(rows)
}

fn table(path: &str, columns: &str) -> Res<u64> {
    let columns = columns.split(',').map(str::to_string).collect();
    let options = ReadOptions {
        string_type: Some(StringType::Utf8View),
        ..ReadOptions::default()
    };
    let reader = open_table(
        Arc::new(LocalStore::new(path)),
        "",
        options,
        &TableOptions {
            columns: Some(columns),
            ..TableOptions::default()
        },
        &zarrow::ExecutionContext::default(),
    )?;
    let mut rows = 0;
    for batch in reader {
        rows += batch?.num_rows() as u64;
    }
    Ok(rows)
}

/// What every Zarr reader must do: read each chunk file and undo its compression
/// (for `zarrs.vlen`, also the compression inside its index and data sections).
fn bound(path: &str) -> Res<u64> {
    let array = open(path, StringType::Utf8, false)?;
    let chain = array.codecs();
    let limit = usize::MAX;
    // `zarrs.vlen` (index at the start): its index and data sections' own codecs.
    let sections = |field: &str| -> Res<Option<CodecChain>> {
        let Some(codec) = array
            .metadata()
            .codecs
            .iter()
            .find(|c| c.name == "zarrs.vlen")
        else {
            return Ok(None);
        };
        if codec
            .configuration
            .get("index_location")
            .and_then(|l| l.as_str())
            == Some("end")
        {
            return Ok(None);
        }
        let list: Vec<CodecMetadata> = match codec.configuration.get(field) {
            Some(v) => serde_json::from_value(v.clone())?,
            None => vec![CodecMetadata::named("bytes")],
        };
        Ok(Some(CodecChain::from_codecs(&list)?))
    };
    let (index_codecs, data_codecs) = (sections("index_codecs")?, sections("data_codecs")?);
    let keys: Vec<String> = array.chunk_keys().collect();
    let bytes: usize = keys
        .par_iter()
        .map(|key| -> Res<usize> {
            let file = arrow_buffer::Buffer::from_vec(std::fs::read(Path::new(path).join(key))?);
            let buffer = chain.decode_bytes(file, limit)?;
            match (&index_codecs, &data_codecs) {
                (Some(index_codecs), Some(data_codecs)) => {
                    let index_len = u64::from_le_bytes(buffer.as_slice()[..8].try_into()?) as usize;
                    let index =
                        index_codecs.decode_bytes(buffer.slice_with_length(8, index_len), limit)?;
                    let data = data_codecs.decode_bytes(buffer.slice(8 + index_len), limit)?;
                    Ok(index.len() + data.len())
                }
                _ => Ok(buffer.len()),
            }
        })
        .sum::<Res<usize>>()?;
    Ok(bytes as u64)
}

fn to_parquet(src: &str, dst: &str) -> Res<u64> {
    let array = open(src, StringType::Utf8, false)?;
    Ok(write_parquet(
        array.batches(&zarrow::ExecutionContext::default()),
        File::create(dst)?,
        Compression::ZSTD(ZstdLevel::default()),
    )?)
}

fn from_parquet(src: &str, dst: &str, encoding: &str) -> Res<u64> {
    let encoding = encoding.parse::<Encoding>()?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(src)?)?
        .with_batch_size(1 << 20)
        .build()?;
    let options = WriteOptions {
        encoding,
        chunk_len: Some(1 << 20),
        overwrite: true,
        ..WriteOptions::default()
    };
    Ok(write_batches(
        reader,
        Arc::new(LocalStore::new(dst)),
        "",
        options,
    )?)
}

/// The strings of a one-column Parquet file, in chunks of `CHUNK` (W6's chunks).
fn parquet_chunks(path: &str) -> Res<Vec<arrow_array::ArrayRef>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?
        .with_batch_size(CHUNK)
        .build()?;
    let mut chunks = Vec::new();
    for batch in reader {
        chunks.push(batch?.column(0).clone());
    }
    Ok(chunks)
}

/// W6's chunk length (as `from_parquet` writes).
const CHUNK: usize = 1 << 20;

fn parquet_read(path: &str) -> Res<u64> {
    Ok(parquet_chunks(path)?.iter().map(|c| c.len() as u64).sum())
}

/// What every writer of W6's output must do: zstd-compress each chunk (level 0, as
/// zarr-python writes), on all cores. The chunk bytes are laid out by hand from the
/// format descriptions before the clock starts: `vlen-utf8` is `u32 count, (u32 len,
/// bytes)*`; `zarrs.vlen` is `u64 index size, u32 offsets, bytes`.
fn compress_bound(path: &str, encoding: &str) -> Res<()> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    let chunks: Vec<Vec<u8>> = parquet_chunks(path)?
        .iter()
        .map(|column| {
            let strings = column.as_string::<i32>();
            let mut out = Vec::new();
            if encoding == "zarrs-vlen" {
                let index: Vec<u8> = strings
                    .offsets()
                    .iter()
                    .flat_map(|&o| ((o - strings.offsets()[0]) as u32).to_le_bytes())
                    .collect();
                out.extend_from_slice(&(index.len() as u64).to_le_bytes());
                out.extend_from_slice(&index);
                for s in strings.iter().flatten() {
                    out.extend_from_slice(s.as_bytes());
                }
            } else {
                out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
                for s in strings.iter().flatten() {
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
            }
            out
        })
        .collect();
    let start = Instant::now();
    let bytes: usize = chunks
        .par_iter()
        .map(|chunk| zstd::bulk::compress(chunk, 0).map(|c| c.len()))
        .sum::<std::io::Result<usize>>()?;
    println!("{} {bytes}", start.elapsed().as_secs_f64());
    Ok(())
}

/// W7: the first `n` rows of `path` (a sharded store: the shard index and the inner
/// chunks those rows lie in), opened and read through [`Counting`]. Times the open
/// and the read, as the Python peer's `zarr.open_array(path)[:n]` is timed.
fn head(path: &str, n: &str) -> Res<()> {
    let n: u64 = n.parse().map_err(|_| "head STORE N: N is a row count")?;
    let store = Counting::new(LocalStore::new(path));
    let start = Instant::now();
    let array = ZarrArray::open(store.clone(), "")?;
    let got = array.read_range(0..n)?;
    let seconds = start.elapsed().as_secs_f64();
    if got.len() as u64 != n {
        return Err(format!("read_range(0..{n}) gave {} rows", got.len()).into());
    }
    let (bytes, requests) = (
        store.bytes.load(Ordering::SeqCst),
        store.requests.load(Ordering::SeqCst),
    );
    println!("{seconds} {n} {bytes} {requests}");
    Ok(())
}

/// A store that counts the read requests and the bytes that reach `inner`
/// (metadata included). It keeps the [`Store::get_ranges`] default, which fetches
/// ranges nearer than `COALESCE_GAP` with one [`Store::get_range`] each, so the
/// bytes are what was read, gaps included, and each `get_range` is one request
/// (one HTTP GET for a remote store). Length queries ([`Store::value_len`], a
/// stat or a HEAD) are not counted as requests.
#[derive(Debug)]
struct Counting<S> {
    inner: S,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl<S: Store> Counting<S> {
    fn new(inner: S) -> Arc<Self> {
        Arc::new(Self {
            inner,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    fn count(&self, got: zarrow::Result<Option<Buffer>>) -> zarrow::Result<Option<Buffer>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if let Ok(Some(buffer)) = &got {
            self.bytes.fetch_add(buffer.len() as u64, Ordering::SeqCst);
        }
        got
    }
}

impl<S: Store> Store for Counting<S> {
    fn get(&self, key: &str) -> zarrow::Result<Option<Buffer>> {
        self.count(self.inner.get(key))
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> zarrow::Result<Option<Buffer>> {
        self.count(self.inner.get_bounded(key, max_len))
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> zarrow::Result<Option<Buffer>> {
        self.count(self.inner.get_range(key, range))
    }

    fn value_len(&self, key: &str) -> zarrow::Result<Option<u64>> {
        self.inner.value_len(key)
    }

    fn set(&self, key: &str, value: &[u8]) -> zarrow::Result<()> {
        self.inner.set(key, value)
    }

    fn delete(&self, key: &str) -> zarrow::Result<()> {
        self.inner.delete(key)
    }

    fn list_prefix(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        self.inner.list_prefix(prefix)
    }

    fn list_children(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        self.inner.list_children(prefix)
    }
}
