//! Bounded decompression into Arrow-aligned buffers, shared by `zstd` and `gzip`.
//!
//! Output is never larger than the caller's limit: a stream that produces more is a
//! [`ChunkError::TooLarge`], so hostile input cannot make zarrow allocate without
//! bound. One copy: the decompressor writes straight into the output buffer.

use std::io::Read;

use arrow_buffer::{Buffer, MutableBuffer};

use crate::error::ChunkError;

/// Read all of `reader` into an aligned buffer, failing past `limit` bytes.
pub(super) fn read_limited(
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
