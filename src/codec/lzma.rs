//! numcodecs' `LZMA`: an xz (or legacy `.lzma`) stream.
//!
//! numcodecs `LZMA` (v2 id `lzma`; v3 name `numcodecs.lzma`), with Python's `lzma`
//! module defaults (format 1 = xz, check -1 = the format's default, preset 6):
//!
//! ```json
//! {"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1, "preset": null, "filters": null}}
//! ```
//!
//! Read: xz and `.lzma` streams (formats 1 and 2), with any preset and check;
//! custom filter chains and raw streams (format 3), which carry no header to read
//! them by, are refused when the metadata is read. Decoding is bounded by the
//! caller's limit. One copy into the aligned output.

use std::any::Any;
use std::sync::Arc;

use arrow_buffer::Buffer;
use serde::Deserialize;
use serde_json::{Map, Value, json};

#[cfg(feature = "lzma")]
use super::bounded::read_limited;
use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The most memory liblzma may use to decode one stream (its `memlimit`): four
/// times what xz's largest preset (9, 64 MiB dictionary) needs. A stream whose
/// header names a larger dictionary fails with liblzma's memory-limit error.
#[cfg(feature = "lzma")]
const MAX_DECODER_MEMORY: u64 = 256 << 20;

/// The names of numcodecs' `LZMA`.
pub(crate) const NAMES: &[&str] = &["numcodecs.lzma", "lzma"];

/// numcodecs' `LZMA` codec (xz or `.lzma` container).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lzma {
    /// 1: xz, 2: `.lzma` (alone).
    format: u32,
    /// The compression preset, 0..=9 (Python's default: 6).
    preset: u32,
}

#[derive(Deserialize)]
struct Settings {
    format: Option<i64>,
    preset: Option<u32>,
    filters: Option<Value>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    if cfg!(not(feature = "lzma")) {
        return Err(ConfigError::NotBuilt {
            name: name.to_string(),
            feature: "lzma",
        });
    }
    let s = settings::<Settings>(name, config)?;
    let format = match s.format.unwrap_or(1) {
        1 => 1,
        2 => 2,
        other => {
            return Err(ConfigError::invalid_found(
                name,
                "configuration.format",
                "1 (xz) or 2 (.lzma): a raw stream has no header to read it by",
                other,
            ));
        }
    };
    if s.filters.as_ref().is_some_and(|f| !f.is_null()) {
        return Err(ConfigError::invalid(
            name,
            "configuration.filters",
            "null (custom filter chains are not read)",
        ));
    }
    let preset = s.preset.unwrap_or(6);
    if preset > 9 {
        return Err(ConfigError::invalid_found(
            name,
            "configuration.preset",
            "an integer from 0 to 9",
            preset,
        ));
    }
    Ok(Arc::new(Lzma { format, preset }))
}

impl BytesToBytesCodec for Lzma {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        decode(&input, limit)
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        encode(&input, self)
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        let config =
            json!({"format": self.format, "check": -1, "preset": self.preset, "filters": null});
        match zarr_format {
            2 => {
                let mut v2 = config;
                v2["id"] = json!("lzma");
                v2
            }
            _ => json!({"name": "numcodecs.lzma", "configuration": config}),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Decode one xz or `.lzma` stream: either container, whatever the metadata says
/// (the stream names its own).
#[cfg(feature = "lzma")]
fn decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
    let stream = liblzma::stream::Stream::new_auto_decoder(MAX_DECODER_MEMORY, 0).map_err(|e| {
        ChunkError::Decompress {
            codec: "lzma",
            message: e.to_string(),
        }
    })?;
    let decoder = liblzma::read::XzDecoder::new_stream(input, stream);
    read_limited(decoder, "lzma", limit, input.len().saturating_mul(4))
}

#[cfg(feature = "lzma")]
fn encode(input: &[u8], config: &Lzma) -> Result<Vec<u8>, EncodeError> {
    use std::io::Write as _;
    let stream = match config.format {
        2 => liblzma::stream::LzmaOptions::new_preset(config.preset)
            .and_then(|o| liblzma::stream::Stream::new_lzma_encoder(&o)),
        _ => {
            liblzma::stream::Stream::new_easy_encoder(config.preset, liblzma::stream::Check::Crc64)
        }
    }
    .map_err(|e| EncodeError::compress(std::io::Error::other(e)))?;
    let mut enc = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    enc.write_all(input).map_err(EncodeError::compress)?;
    enc.finish().map_err(EncodeError::compress)
}

/// Without the `lzma` feature `build` refuses the codec, so no chain holds one.
#[cfg(not(feature = "lzma"))]
fn decode(_: &[u8], _: usize) -> Result<Buffer, ChunkError> {
    Err(ChunkError::Decompress {
        codec: "lzma",
        message: NOT_BUILT.to_string(),
    })
}

#[cfg(not(feature = "lzma"))]
fn encode(_: &[u8], _: &Lzma) -> Result<Vec<u8>, EncodeError> {
    Err(EncodeError::NotBuilt { feature: "lzma" })
}

#[cfg(not(feature = "lzma"))]
const NOT_BUILT: &str = "this zarrow was built without its `lzma` feature (liblzma)";

#[cfg(all(test, feature = "lzma"))]
mod tests {
    use super::*;
    use crate::codec::check_compressor;

    #[test]
    fn round_trip_both_containers_limit_and_corruption() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 13) as u8).collect();
        for format in [1, 2] {
            check_compressor(&Lzma { format, preset: 1 }, &data);
        }
        let xz = Lzma {
            format: 1,
            preset: 6,
        }
        .encode(vec![1, 2, 3])
        .unwrap();
        assert_eq!(&xz[..6], b"\xfd7zXZ\x00", "an xz stream");
    }

    #[test]
    fn a_header_asking_for_a_huge_dictionary_is_refused() {
        // A `.lzma` header: properties 0x5D, a 1 GiB dictionary, unknown size.
        let mut hostile = vec![0x5D, 0x00, 0x00, 0x00, 0x40];
        hostile.extend_from_slice(&[0xFF; 8]);
        hostile.extend_from_slice(&[0; 64]);
        let codec = Lzma {
            format: 2,
            preset: 6,
        };
        // liblzma refuses it (its memory limit, or the data after the header): a
        // typed error, never an allocation of the dictionary.
        match codec.decode(Buffer::from(hostile), 1 << 20) {
            Err(ChunkError::Decompress { codec, .. }) => assert_eq!(codec, "lzma"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
