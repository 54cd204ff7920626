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

use std::any::Any;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::arrow_values::offsets_and_values;
use super::bytes::{Bytes, is_big_endian, swap_endian, swap_endian_in_place};
use super::{
    ArrayToBytesCodec, CodecChain, ConfigError, DecodeContext, IndexLocation, padding, settings,
};
use crate::error::ChunkError;
use crate::metadata::{CodecMetadata, Endian};
use crate::offsets::{OffsetKind, RawOffsets, from_offsets};

/// The names of `zarrs.vlen`.
pub(crate) const NAMES: &[&str] = &[
    "zarrs.vlen",
    "https://codec.zarrs.dev/array_to_bytes/vlen",
    "vlen",
];

/// The integer type of `zarrs.vlen` offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetWidth {
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
}

/// The `zarrs.vlen` codec.
#[derive(Debug, Clone)]
pub(crate) struct ZarrsVlen {
    /// Offset integer type.
    pub(crate) index_data_type: OffsetWidth,
    /// Index position.
    pub(crate) index_location: IndexLocation,
    /// Codecs of the index (a `bytes` codec, then bytes->bytes codecs).
    pub(crate) index_codecs: CodecChain,
    /// Codecs of the data (a `bytes` codec, then bytes->bytes codecs).
    pub(crate) data_codecs: CodecChain,
}

impl ZarrsVlen {
    /// The layout zarrow writes: the index at the start, plain `bytes` index and
    /// data codecs, uint64 offsets when `large`, else uint32.
    pub(crate) fn plain(large: bool) -> Self {
        let bytes = |endian| CodecChain::new(vec![], Arc::new(Bytes { endian }), vec![]);
        Self {
            index_data_type: if large {
                OffsetWidth::U64
            } else {
                OffsetWidth::U32
            },
            index_location: IndexLocation::Start,
            index_codecs: bytes(Some(Endian::Little)),
            data_codecs: bytes(None),
        }
    }
}

#[derive(Deserialize)]
struct Settings {
    index_data_type: Option<String>,
    index_location: Option<String>,
    index_codecs: Option<Vec<CodecMetadata>>,
    data_codecs: Option<Vec<CodecMetadata>>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToBytesCodec>, ConfigError> {
    let s = settings::<Settings>(name, config)?;
    let index_data_type = match s.index_data_type.as_deref() {
        None | Some("uint64") => OffsetWidth::U64,
        Some("uint32") => OffsetWidth::U32,
        Some(other) => {
            return Err(format!("zarrs.vlen: unsupported index_data_type {other:?}").into());
        }
    };
    let index_location = match s.index_location.as_deref() {
        None | Some("start") => IndexLocation::Start,
        Some("end") => IndexLocation::End,
        Some(other) => return Err(format!("zarrs.vlen: unknown index_location {other:?}").into()),
    };
    let chain =
        |field: &str, list: Option<Vec<CodecMetadata>>| -> Result<CodecChain, ConfigError> {
            let list = list.unwrap_or_else(|| vec![CodecMetadata::named("bytes")]);
            let inner = CodecChain::parse(&list, None)?;
            if !inner.array_to_bytes().as_any().is::<Bytes>() || inner.has_array_to_array() {
                return Err(format!("zarrs.vlen: {field} must use the bytes codec").into());
            }
            Ok(inner)
        };
    Ok(Arc::new(ZarrsVlen {
        index_data_type,
        index_location,
        index_codecs: chain("index_codecs", s.index_codecs)?,
        data_codecs: chain("data_codecs", s.data_codecs)?,
    }))
}

impl ArrayToBytesCodec for ZarrsVlen {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        decode(self, bytes, ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, String> {
        let (elements, pad) = padding(array, shape)?;
        let width = match self.index_data_type {
            OffsetWidth::U32 => 4,
            OffsetWidth::U64 => 8,
        };
        let mut index = Vec::with_capacity((elements + 1) * width);
        let mut data = Vec::new();
        offsets_and_values(array, width, pad, &mut index, &mut data)?;
        if is_big_endian(&self.index_codecs) {
            index = swap_endian_in_place(index, width);
        }
        let index = self.index_codecs.encode_bytes(index)?;
        let data = self.data_codecs.encode_bytes(data)?;
        let len = (index.len() as u64).to_le_bytes();
        let mut out = Vec::with_capacity(8 + index.len() + data.len());
        match self.index_location {
            IndexLocation::Start => {
                out.extend_from_slice(&len);
                out.extend_from_slice(&index);
                out.extend_from_slice(&data);
            }
            IndexLocation::End => {
                out.extend_from_slice(&data);
                out.extend_from_slice(&index);
                out.extend_from_slice(&len);
            }
        }
        Ok(out)
    }

    fn metadata(&self) -> Option<Value> {
        Some(json!({"name": "zarrs.vlen", "configuration": {
            "data_codecs": self.data_codecs.metadata(),
            "index_codecs": self.index_codecs.metadata(),
            "index_data_type": match self.index_data_type {
                OffsetWidth::U32 => "uint32",
                OffsetWidth::U64 => "uint64",
            },
            "index_location": match self.index_location {
                IndexLocation::Start => "start",
                IndexLocation::End => "end",
            },
        }}))
    }

    fn is_variable_length(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn read_u64(bytes: &[u8], pos: usize) -> Result<u64, ChunkError> {
    bytes
        .get(pos..pos + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| ChunkError::Truncated {
            what: "zarrs.vlen index length",
            needed: 8,
            available: bytes.len() as u64,
        })
}

/// Decode one chunk.
fn decode(config: &ZarrsVlen, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
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
    let mut index = config.index_codecs.decode_bytes(index_enc, limit)?;
    if is_big_endian(&config.index_codecs) {
        index = swap_endian(&index, width as usize);
    }
    let offsets = RawOffsets::new(index, kind, n)?;
    let values = if data_enc.is_empty() {
        Buffer::from(MutableBuffer::new(0))
    } else {
        config.data_codecs.decode_bytes(data_enc, ctx.max_bytes)?
    };
    from_offsets(offsets, values, ctx.data_type.is_text(), ctx.string_type)
}
