//! `zarrs.vlen`: an Arrow-style offsets index and a data section, each through its
//! own codec chain (experimental in zarrs).
//!
//! Spec: zarrs `array_to_bytes::vlen` (`shared/seeds/zarrs-vlen-codec.txt`). v3
//! names `zarrs.vlen`, `https://codec.zarrs.dev/array_to_bytes/vlen`, `vlen` (old);
//! no v2 id.
//!
//! ```json
//! {"name": "zarrs.vlen", "configuration": {
//!    "data_codecs": [{"name": "bytes"}],
//!    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
//!    "index_data_type": "uint64", "index_location": "start"}}
//! ```
//!
//! ```text
//! start: | u64 L | L bytes: encoded index | encoded data |
//! end:   | encoded data | L bytes: encoded index | u64 L |
//! ```
//!
//! The draft 0.0 configuration has no `index_location` (it means `start`).
//! Copies: with plain `bytes` index and data codecs, none: the offsets and values
//! are slices of the decoded chunk (aligned when the chunk buffer is, since the
//! index starts at byte 8); compressed sections are decompressed once.

use arrow_array::ArrayRef;
use arrow_buffer::{Buffer, MutableBuffer};

use super::{ArrayToBytes, DecodeContext, IndexLocation, OffsetWidth, ZarrsVlen, decode_bytes};
use crate::error::ChunkError;
use crate::metadata::Endian;
use crate::offsets::{OffsetKind, RawOffsets, from_offsets};

fn read_u64(bytes: &[u8], pos: usize) -> Result<u64, ChunkError> {
    bytes
        .get(pos..pos + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or(ChunkError::Truncated {
            what: "zarrs.vlen index length",
            needed: 8,
            available: bytes.len() as u64,
        })
}

/// Decode one chunk.
pub fn decode(
    config: &ZarrsVlen,
    bytes: Buffer,
    ctx: &DecodeContext,
) -> Result<ArrayRef, ChunkError> {
    let n = ctx.elements;
    let len = bytes.len() as u64;
    let truncated = |needed| ChunkError::Truncated {
        what: "zarrs.vlen index",
        needed,
        available: len.saturating_sub(8),
    };
    let (index_enc, data_enc) = match config.index_location {
        IndexLocation::Start => {
            let l = read_u64(bytes.as_slice(), 0)?;
            if l > len - 8 {
                return Err(truncated(l));
            }
            (
                bytes.slice_with_length(8, l as usize),
                bytes.slice(8 + l as usize),
            )
        }
        IndexLocation::End => {
            let l = read_u64(bytes.as_slice(), bytes.len().saturating_sub(8))?;
            if l > len - 8 {
                return Err(truncated(l));
            }
            let data_len = (len - 8 - l) as usize;
            (
                bytes.slice_with_length(data_len, l as usize),
                bytes.slice_with_length(0, data_len),
            )
        }
    };
    let (kind, width) = match config.index_data_type {
        OffsetWidth::U32 => (OffsetKind::U32, 4u64),
        OffsetWidth::U64 => (OffsetKind::U64, 8u64),
    };
    let index_len = (n as u64 + 1) * width;
    let limit = usize::try_from(index_len)
        .unwrap_or(usize::MAX)
        .min(ctx.max_bytes);
    let mut index = decode_bytes(&config.index_codecs.bytes_to_bytes, index_enc, limit)?;
    if config.index_codecs.array_to_bytes
        == (ArrayToBytes::Bytes {
            endian: Endian::Big,
        })
    {
        index = super::fixed::swap_endian(&index, width as usize);
    }
    let offsets = RawOffsets::new(index, kind, n)?;
    let values = if data_enc.is_empty() {
        Buffer::from(MutableBuffer::new(0))
    } else {
        decode_bytes(&config.data_codecs.bytes_to_bytes, data_enc, ctx.max_bytes)?
    };
    from_offsets(offsets, values, ctx.data_type.is_text(), ctx.string_type)
}
