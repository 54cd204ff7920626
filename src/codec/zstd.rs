//! `zstd`: Zstandard frames.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/zstd/index.html>.
//! v3 name `zstd` (alias `numcodecs.zstd`), v2 id `zstd`:
//!
//! ```json
//! {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
//! ```
//!
//! Decoding is bounded by the caller's limit (a frame that states or produces more
//! is [`ChunkError::TooLarge`]). One copy: zstd writes straight into the aligned
//! output buffer.

use std::any::Any;
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bounded::read_limited;
use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::ChunkError;

/// The names of `zstd`.
pub(crate) const NAMES: &[&str] = &["zstd", "numcodecs.zstd"];

/// The `zstd` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct Zstd {
    /// Compression level.
    #[serde(default)]
    pub(crate) level: i32,
    /// Whether frames carry a content checksum.
    #[serde(default)]
    pub(crate) checksum: bool,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    Ok(Arc::new(settings::<Zstd>(name, config)?))
}

impl BytesToBytesCodec for Zstd {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        zstd_decode(&input, limit)
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, String> {
        zstd_encode(&input, self.level, self.checksum).map_err(|e| e.to_string())
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 if self.checksum => json!({"id": "zstd", "level": self.level, "checksum": true}),
            2 => json!({"id": "zstd", "level": self.level}),
            _ => {
                json!({"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}})
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Decompress a zstd frame (or frames).
pub(crate) fn zstd_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
    const CODEC: &str = "zstd";
    // Fast path: the frame states its size (numcodecs and zarrs always write it).
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(input) {
        if size > limit as u64 {
            return Err(ChunkError::TooLarge {
                codec: CODEC,
                limit: limit as u64,
            });
        }
        let mut out = MutableBuffer::from_len_zeroed(size as usize);
        if let Ok(written) = zstd::bulk::decompress_to_buffer(input, out.as_slice_mut())
            && written == size as usize
        {
            return Ok(out.into());
        }
        // Several frames, or a lying header: fall through to the streaming decoder,
        // which reports the real problem.
    }
    let decoder =
        zstd::stream::read::Decoder::with_buffer(input).map_err(|e| ChunkError::Decompress {
            codec: CODEC,
            message: e.to_string(),
        })?;
    read_limited(decoder, CODEC, limit, input.len().saturating_mul(4))
}

/// Compress with zstd at `level`, optionally with a content checksum.
pub(crate) fn zstd_encode(input: &[u8], level: i32, checksum: bool) -> std::io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    compressor.include_checksum(checksum)?;
    compressor.compress(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_round_trip_and_limit() {
        let data = vec![7u8; 100_000];
        let enc = zstd_encode(&data, 3, true).unwrap();
        assert_eq!(zstd_decode(&enc, 100_000).unwrap().as_slice(), &data[..]);
        assert!(matches!(
            zstd_decode(&enc, 99_999),
            Err(ChunkError::TooLarge { .. })
        ));
        assert!(zstd_decode(&enc[..enc.len() / 2], 100_000).is_err());
        assert!(zstd_decode(b"not zstd at all", 100).is_err());
    }
}
