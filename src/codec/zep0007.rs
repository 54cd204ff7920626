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

use std::any::Any;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use serde_json::Value;

use super::arrow_values::offsets_and_values;
use super::{ArrayToBytesCodec, DecodeContext, padding};
use crate::error::{ChunkError, EncodeError};
use crate::offsets::{OffsetKind, RawOffsets, from_offsets};

/// The ZEP0007 layout, named by the data type (no codec entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Zep0007 {
    /// int64 offsets (`large_string` / `large_binary`) rather than int32.
    pub(crate) large: bool,
}

impl ArrayToBytesCodec for Zep0007 {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        decode(bytes, self.large, ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        let (elements, pad) = padding(array, shape)?;
        let width = if self.large { 8 } else { 4 };
        let start = data_start(elements, self.large) as usize;
        let mut out = Vec::with_capacity(start);
        let mut data = Vec::new();
        offsets_and_values(array, width, pad, &mut out, &mut data)?;
        out.resize(start, 0);
        out.extend_from_slice(&data);
        Ok(out)
    }

    fn metadata(&self) -> Option<Value> {
        None
    }

    fn is_variable_length(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Where the data starts: the offsets' end rounded up to 64 bytes.
pub(crate) fn data_start(elements: usize, large: bool) -> u64 {
    let end = (elements as u64 + 1) * if large { 8 } else { 4 };
    end.div_ceil(64) * 64
}

/// Decode one chunk.
pub(crate) fn decode(
    bytes: Buffer,
    large: bool,
    ctx: &DecodeContext,
) -> Result<ArrayRef, ChunkError> {
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
