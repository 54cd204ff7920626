//! numcodecs' `BZ2`: a bzip2 stream.
//!
//! numcodecs `BZ2` (v2 id `bz2`; v3 name `numcodecs.bz2`):
//!
//! ```json
//! {"name": "numcodecs.bz2", "configuration": {"level": 1}}
//! ```
//!
//! Decoding is bounded by the caller's limit. One copy into the aligned output.

use std::any::Any;
use std::io::Write;
use std::sync::Arc;

use arrow_buffer::Buffer;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bounded::read_limited;
use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The names of numcodecs' `BZ2`.
pub(crate) const NAMES: &[&str] = &["numcodecs.bz2", "bz2"];

/// numcodecs' `BZ2` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bz2 {
    /// Block size in 100 KB units, 1..=9.
    level: u32,
}

#[derive(Deserialize)]
struct Settings {
    level: Option<u32>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    let level = settings::<Settings>(name, config)?.level.unwrap_or(1);
    if !(1..=9).contains(&level) {
        return Err(ConfigError::invalid_found(
            name,
            "configuration.level",
            "an integer from 1 to 9",
            level,
        ));
    }
    Ok(Arc::new(Bz2 { level }))
}

impl BytesToBytesCodec for Bz2 {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        let decoder = bzip2::read::MultiBzDecoder::new(input.as_slice());
        read_limited(decoder, "bz2", limit, input.len().saturating_mul(4))
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(self.level));
        enc.write_all(&input).map_err(EncodeError::compress)?;
        enc.finish().map_err(EncodeError::compress)
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 => json!({"id": "bz2", "level": self.level}),
            _ => json!({"name": "numcodecs.bz2", "configuration": {"level": self.level}}),
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
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let enc = check_compressor(&Bz2 { level: 9 }, &data);
        assert_eq!(&enc[..3], b"BZh", "a bzip2 stream");
    }
}
