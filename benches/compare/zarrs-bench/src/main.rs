//! The zarrs side of zarrow's `benches/compare` harness.
//!
//! ```text
//! zarrs-bench read STORE bytes     # retrieve the whole array into ArrayBytes (raw vlen)
//! zarrs-bench read STORE strings   # ... into Vec<String>
//! zarrs-bench write-vlen SRC DST none|zstd
//!     read SRC (strings) and write it with zarrs as zarrs.vlen, uint32 index at the
//!     start, optionally zstd on the data: the W2 workload, written by zarrs itself
//! ```
//!
//! `read` prints the seconds the retrieval took (store opening excluded) and the
//! element count.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use zarrs::array::{Array, ArrayBuilder, ArrayBytes, ArrayBytesOffsets, CodecChain, FillValueMetadata};
use zarrs::filesystem::FilesystemStore;
use zarrs::metadata::v3::MetadataV3;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("read") if args.len() == 4 => read(&args[2], &args[3]),
        Some("write-vlen") if args.len() == 5 => write_vlen(&args[2], &args[3], &args[4]),
        _ => {
            eprintln!("usage: zarrs-bench read STORE bytes|strings | write-vlen SRC DST none|zstd");
            std::process::exit(2);
        }
    }
}

fn read(path: &str, into: &str) -> Res<()> {
    let store = Arc::new(FilesystemStore::new(path)?);
    let array = Array::open(store, "/")?;
    let subset = array.subset_all();
    let start = Instant::now();
    let n = match into {
        "bytes" => {
            let bytes: ArrayBytes = array.retrieve_array_subset(&subset)?;
            bytes.into_variable()?.into_parts().1.len() - 1
        }
        _ => {
            let strings: Vec<String> = array.retrieve_array_subset(&subset)?;
            strings.len()
        }
    };
    println!("{} {n}", start.elapsed().as_secs_f64());
    Ok(())
}

fn write_vlen(src: &str, dst: &str, compression: &str) -> Res<()> {
    let source = Array::open(Arc::new(FilesystemStore::new(src)?), "/")?;
    let bytes: ArrayBytes = source.retrieve_array_subset(&source.subset_all())?;
    let (data, offsets) = bytes.into_variable()?.into_parts();
    let mut data_codecs = vec![json!({"name": "bytes"})];
    if compression == "zstd" {
        data_codecs.push(json!({"name": "zstd", "configuration": {"level": 0, "checksum": false}}));
    }
    let codecs = json!([{"name": "zarrs.vlen", "configuration": {
        "data_codecs": data_codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_data_type": "uint32",
        "index_location": "start",
    }}]);
    let metas: Vec<MetadataV3> = serde_json::from_value(codecs)?;
    let chain = CodecChain::from_metadata(&metas)?;
    let fill: FillValueMetadata = serde_json::from_value(json!(""))?;
    let store = Arc::new(FilesystemStore::new(dst)?);
    let chunk_shape: Vec<u64> = source.chunk_shape_usize(&[0])?.into_iter().map(|c| c as u64).collect();
    let array = ArrayBuilder::new(source.shape().to_vec(), chunk_shape, "string", fill)
        .array_to_bytes_codec(chain.array_to_bytes_codec().clone())
        .build(store, "/")?;
    array.store_metadata()?;
    let offsets: Vec<usize> = offsets.iter().copied().collect();
    array.store_array_subset(&array.subset_all(), ArrayBytes::new_vlen(data, ArrayBytesOffsets::new(offsets)?)?)?;
    Ok(())
}
