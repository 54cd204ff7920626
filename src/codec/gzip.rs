//! `gzip` (RFC 1952) and `zlib` (RFC 1950), through flate2.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/index.html>.
//! v3 name `gzip` (alias `numcodecs.gzip`), v2 id `gzip`; numcodecs' `zlib` (v3
//! `numcodecs.zlib`, v2 id `zlib`):
//!
//! ```json
//! {"name": "gzip", "configuration": {"level": 5}}
//! ```
//!
//! Decoding is bounded by the caller's limit. One copy into the aligned output.

use std::any::Any;
use std::sync::Arc;

use arrow_buffer::Buffer;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bounded::read_limited;
use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The names of `gzip` and `zlib`.
pub(crate) const NAMES: &[&str] = &["gzip", "numcodecs.gzip", "zlib", "numcodecs.zlib"];

/// The `gzip` codec, or `zlib` when `zlib` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gzip {
    /// Compression level 0..=9.
    pub(crate) level: u32,
    /// A zlib stream rather than a gzip member.
    pub(crate) zlib: bool,
}

#[derive(Deserialize)]
struct Settings {
    level: Option<u32>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    let zlib = name.ends_with("zlib");
    let level = settings::<Settings>(name, config)?.level;
    Ok(Arc::new(Gzip {
        level: level.unwrap_or(if zlib { 1 } else { 5 }),
        zlib,
    }))
}

impl BytesToBytesCodec for Gzip {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        if self.zlib {
            zlib_decode(&input, limit)
        } else {
            gzip_decode(&input, limit)
        }
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        if self.zlib {
            zlib_encode(&input, self.level)
        } else {
            gzip_encode(&input, self.level)
        }
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match (zarr_format, self.zlib) {
            (2, false) => json!({"id": "gzip", "level": self.level}),
            (2, true) => json!({"id": "zlib", "level": self.level}),
            (_, false) => json!({"name": "gzip", "configuration": {"level": self.level}}),
            (_, true) => json!({"name": "numcodecs.zlib", "configuration": {"level": self.level}}),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Decompress gzip member(s).
pub(crate) fn gzip_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
    read_limited(
        flate2::read::MultiGzDecoder::new(input),
        "gzip",
        limit,
        input.len().saturating_mul(4),
    )
}

/// Compress into one gzip member (no file name, zero timestamp: reproducible).
pub(crate) fn gzip_encode(input: &[u8], level: u32) -> Result<Vec<u8>, EncodeError> {
    use std::io::Write;
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(level.min(9)));
    enc.write_all(input).map_err(EncodeError::compress)?;
    enc.finish().map_err(EncodeError::compress)
}

/// Compress into a zlib stream.
pub(crate) fn zlib_encode(input: &[u8], level: u32) -> Result<Vec<u8>, EncodeError> {
    use std::io::Write;
    let mut enc =
        flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level.min(9)));
    enc.write_all(input).map_err(EncodeError::compress)?;
    enc.finish().map_err(EncodeError::compress)
}

/// Decompress a zlib stream.
pub(crate) fn zlib_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
    read_limited(
        flate2::read::ZlibDecoder::new(input),
        "zlib",
        limit,
        input.len().saturating_mul(4),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_round_trip_and_limit() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(5));
        enc.write_all(&data).unwrap();
        let enc = enc.finish().unwrap();
        assert_eq!(gzip_decode(&enc, data.len()).unwrap().as_slice(), &data[..]);
        assert!(matches!(
            gzip_decode(&enc, 1000),
            Err(ChunkError::TooLarge { .. })
        ));
        assert!(gzip_decode(&enc[..enc.len() - 10], data.len()).is_err());
    }
}
