//! `crc32c`: a CRC32C (Castagnoli) checksum of the data, appended as 4 bytes LE.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/index.html>.
//! v3 name `crc32c`; configuration: none (`{"name": "crc32c"}`). Decoding is a
//! slice of the input: no copy.

use std::any::Any;
use std::sync::Arc;

use arrow_buffer::Buffer;
use serde_json::{Map, Value, json};

use super::{BytesToBytesCodec, ConfigError};
use crate::error::{ChunkError, EncodeError};

/// The names of `crc32c` (v3 and numcodecs).
pub(crate) const NAMES: &[&str] = &["crc32c", "numcodecs.crc32c"];

/// The `crc32c` codec (no configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Crc32c;

pub(super) fn build(
    _name: &str,
    _config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    Ok(Arc::new(Crc32c))
}

impl BytesToBytesCodec for Crc32c {
    fn decode(&self, input: Buffer, _limit: usize) -> Result<Buffer, ChunkError> {
        crc32c_decode(input)
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        Ok(crc32c_encode(&input))
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 => json!({"id": "crc32c"}),
            _ => json!({"name": "crc32c"}),
        }
    }

    fn fixed_overhead(&self) -> Option<u64> {
        Some(4)
    }

    fn trailing_bytes(&self) -> Option<u64> {
        Some(4)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Check and strip the trailing checksum.
pub(crate) fn crc32c_decode(input: Buffer) -> Result<Buffer, ChunkError> {
    let Some(data_len) = input.len().checked_sub(4) else {
        return Err(ChunkError::Truncated {
            what: "crc32c checksum",
            needed: 4,
            available: input.len() as u64,
        });
    };
    let bytes = input.as_slice();
    let stored = u32::from_le_bytes([
        bytes[data_len],
        bytes[data_len + 1],
        bytes[data_len + 2],
        bytes[data_len + 3],
    ]);
    let computed = crc32c::crc32c(&bytes[..data_len]);
    if stored != computed {
        return Err(ChunkError::Checksum { stored, computed });
    }
    Ok(input.slice_with_length(0, data_len))
}

/// Append the checksum of `data`.
pub(crate) fn crc32c_encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 4);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        // RFC 3720 (iSCSI), appendix B.4: CRC32C of 32 zero bytes is 0x8A9136AA.
        let encoded = crc32c_encode(&[0u8; 32]);
        assert_eq!(&encoded[32..], &0x8A91_36AAu32.to_le_bytes());
        assert_eq!(
            crc32c_decode(Buffer::from(encoded.clone())).unwrap().len(),
            32
        );
        let mut bad = encoded;
        bad[0] = 1;
        assert!(matches!(
            crc32c_decode(Buffer::from(bad)),
            Err(ChunkError::Checksum { .. })
        ));
    }
}
