//! numcodecs' `LZ4`: an LZ4 block after its decompressed size.
//!
//! numcodecs `LZ4` (v2 id `lz4`; v3 name `numcodecs.lz4`, as zarr-python 3 writes
//! it through `zarr.codecs.numcodecs.LZ4`):
//!
//! ```json
//! {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}
//! ```
//!
//! ```text
//! | u32 LE decompressed size | LZ4 block |
//! ```
//!
//! The stated size is checked against the caller's limit before anything is
//! allocated; lz4_flex never writes past the buffer it is given. One copy.

use std::any::Any;
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The names of numcodecs' `LZ4`.
pub(crate) const NAMES: &[&str] = &["numcodecs.lz4", "lz4"];

/// numcodecs' `LZ4` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lz4 {
    /// numcodecs' acceleration, kept to be written back (lz4_flex compresses at
    /// one speed).
    acceleration: i64,
}

#[derive(Deserialize)]
struct Settings {
    acceleration: Option<i64>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    let acceleration = settings::<Settings>(name, config)?
        .acceleration
        .unwrap_or(1);
    Ok(Arc::new(Lz4 { acceleration }))
}

impl BytesToBytesCodec for Lz4 {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        const CODEC: &str = "lz4";
        let Some((size, block)) = input.as_slice().split_first_chunk::<4>() else {
            return Err(ChunkError::Truncated {
                what: "lz4 size header",
                needed: 4,
                available: input.len() as u64,
            });
        };
        let size = u32::from_le_bytes(*size) as usize;
        if size > limit {
            return Err(ChunkError::TooLarge {
                codec: CODEC,
                limit: limit as u64,
            });
        }
        let mut out = MutableBuffer::from_len_zeroed(size);
        let written = lz4_flex::block::decompress_into(block, out.as_slice_mut()).map_err(|e| {
            ChunkError::Decompress {
                codec: CODEC,
                message: e.to_string(),
            }
        })?;
        if written != size {
            return Err(ChunkError::SizeMismatch {
                expected: size as u64,
                found: written as u64,
            });
        }
        Ok(out.into())
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        if u32::try_from(input.len()).is_err() {
            return Err(EncodeError::TooLarge {
                what: "bytes in an lz4 chunk (numcodecs' u32 size header)",
                size: input.len() as u64,
                limit: u32::MAX.into(),
            });
        }
        Ok(lz4_flex::block::compress_prepend_size(&input))
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 => json!({"id": "lz4", "acceleration": self.acceleration}),
            _ => {
                json!({"name": "numcodecs.lz4", "configuration": {"acceleration": self.acceleration}})
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::check_compressor;

    #[test]
    fn round_trip_limit_and_corruption() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 97) as u8).collect();
        let enc = check_compressor(&Lz4 { acceleration: 1 }, &data);
        // numcodecs' header: the decompressed size, little-endian.
        assert_eq!(&enc[..4], &100_000u32.to_le_bytes());
        let codec = Lz4 { acceleration: 1 };
        assert!(codec.decode(Buffer::from(vec![1, 0]), 1 << 20).is_err());
    }
}
