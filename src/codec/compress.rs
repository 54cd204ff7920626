//! `zstd`, `gzip` and `zlib`: decompression into Arrow-aligned buffers, bounded.
//!
//! Specs: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/zstd/index.html>,
//! <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/index.html>.
//! v3 names `zstd` (`{"level": 0, "checksum": false}`), `gzip` (`{"level": 5}`);
//! v2 ids `zstd`, `gzip`, `zlib` (`{"id": "zlib", "level": 1}`).
//!
//! Output is never larger than the caller's limit: a frame that claims or produces
//! more is a [`ChunkError::TooLarge`], so hostile input cannot make zarrow allocate
//! without bound. One copy: the decompressor writes straight into the output buffer.

use std::io::Read;

use arrow_buffer::{Buffer, MutableBuffer};

use crate::error::ChunkError;

/// Read all of `reader` into an aligned buffer, failing past `limit` bytes.
pub(crate) fn read_limited(
    mut reader: impl Read,
    codec: &'static str,
    limit: usize,
    hint: usize,
) -> Result<Buffer, ChunkError> {
    let mut out = MutableBuffer::with_capacity(hint.clamp(4096, limit.max(4096)));
    let mut filled = 0usize;
    loop {
        if filled == out.len() {
            if filled > limit {
                return Err(ChunkError::TooLarge {
                    codec,
                    limit: limit as u64,
                });
            }
            // Grow geometrically, at most to one byte past the limit (to detect excess).
            let grow = out
                .len()
                .max(64 * 1024)
                .min(limit.saturating_add(1) - filled);
            out.resize(filled + grow, 0);
        }
        match reader.read(&mut out.as_slice_mut()[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(ChunkError::Decompress {
                    codec,
                    message: e.to_string(),
                });
            }
        }
    }
    if filled > limit {
        return Err(ChunkError::TooLarge {
            codec,
            limit: limit as u64,
        });
    }
    out.truncate(filled);
    Ok(out.into())
}

/// Decompress a zstd frame (or frames).
pub fn zstd_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
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
pub fn zstd_encode(input: &[u8], level: i32, checksum: bool) -> std::io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    compressor.include_checksum(checksum)?;
    compressor.compress(input)
}

/// Decompress gzip member(s).
pub fn gzip_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
    read_limited(
        flate2::read::MultiGzDecoder::new(input),
        "gzip",
        limit,
        input.len().saturating_mul(4),
    )
}

/// Compress into one gzip member (no file name, zero timestamp: reproducible).
pub fn gzip_encode(input: &[u8], level: u32) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut enc = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(level.min(9)));
    enc.write_all(input).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())
}

/// Compress into a zlib stream.
pub fn zlib_encode(input: &[u8], level: u32) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut enc =
        flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level.min(9)));
    enc.write_all(input).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())
}

/// Decompress a zlib stream.
pub fn zlib_decode(input: &[u8], limit: usize) -> Result<Buffer, ChunkError> {
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
