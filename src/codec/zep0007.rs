//! The ZEP0007 draft layout (experimental): Arrow offsets, padding, data.
//!
//! Spec: draft ZEP0007 "string and variable-length binary data types"
//! (`shared/seeds/zep0007-strings.md`). The layout is named by the data type, not by
//! a codec: `"data_type": {"name": "string"}` or `{"name": "binary"}` (int32
//! offsets), `{"name": "large_string"}` / `{"name": "large_binary"}` (int64), with
//! only bytes->bytes codecs in `codecs`.
//!
//! ```text
//! | (n+1) LE offsets (int32 or int64) | zero padding to a multiple of 64 | data |
//! ```
//!
//! Copies: none when the Arrow offset width matches (offsets and values are slices
//! of the decoded chunk); the offsets are converted otherwise; views copy nothing.

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

use super::DecodeContext;
use crate::error::ChunkError;
use crate::offsets::{OffsetKind, RawOffsets, from_offsets};

/// Where the data starts: the offsets' end rounded up to 64 bytes.
pub fn data_start(elements: usize, large: bool) -> u64 {
    let end = (elements as u64 + 1) * if large { 8 } else { 4 };
    end.div_ceil(64) * 64
}

/// Decode one chunk.
pub fn decode(bytes: Buffer, large: bool, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
    let n = ctx.elements;
    let width = if large {
        OffsetKind::I64
    } else {
        OffsetKind::I32
    };
    let offsets_len = (n as u64 + 1) * if large { 8 } else { 4 };
    let start = data_start(n, large);
    if (bytes.len() as u64) < start {
        return Err(ChunkError::Truncated {
            what: "ZEP0007 offsets and padding",
            needed: start,
            available: bytes.len() as u64,
        });
    }
    let offsets = RawOffsets::new(bytes.slice_with_length(0, offsets_len as usize), width, n)?;
    let values = bytes.slice(start as usize);
    from_offsets(offsets, values, ctx.data_type.is_text(), ctx.string_type)
}

/// Encode `n` values given as Arrow offsets and data into one chunk.
pub fn encode(offsets: &[i64], data: &[u8], large: bool) -> Vec<u8> {
    let n = offsets.len().saturating_sub(1);
    let start = data_start(n, large) as usize;
    let mut out = Vec::with_capacity(start + data.len());
    for &o in offsets {
        if large {
            out.extend_from_slice(&o.to_le_bytes());
        } else {
            out.extend_from_slice(&(o as i32).to_le_bytes());
        }
    }
    out.resize(start, 0);
    out.extend_from_slice(data);
    out
}
