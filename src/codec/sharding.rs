//! `sharding_indexed`: a chunk (shard) made of inner chunks plus an index.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/index.html>.
//! v3 name `sharding_indexed`:
//!
//! ```json
//! {"name": "sharding_indexed", "configuration": {
//!    "chunk_shape": [32, 32],
//!    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
//!    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
//!    "index_location": "end"}}
//! ```
//!
//! ```text
//! | inner chunk | inner chunk | ... | index: (offset u64, nbytes u64) per inner chunk, C order [+ crc32c] |
//! ```
//!
//! An absent inner chunk has offset = nbytes = `u64::MAX` and reads as the fill
//! value. Decoding reads the whole shard; every inner chunk is decoded with the inner
//! codecs (any layout, including nested shards) and the inner chunks are gathered in
//! C order (one copy). Reading single inner chunks with ranged gets is future work.

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

use super::{ArrayToBytes, BytesToBytes, DecodeContext, IndexLocation, Sharding, decode_bytes};
use crate::assemble::{Part, gather};
use crate::error::ChunkError;
use crate::fill::fill_array;
use crate::metadata::Endian;

/// The encoded size of an index of `n` entries through `index_codecs`, when fixed
/// (`bytes` then any number of `crc32c`); `None` for codecs of variable size.
pub fn index_size(config: &Sharding, n: u64) -> Option<u64> {
    let mut size = n.checked_mul(16)?;
    for codec in &config.index_codecs.bytes_to_bytes {
        match codec {
            BytesToBytes::Crc32c => size += 4,
            _ => return None,
        }
    }
    Some(size)
}

/// Decode one shard of shape `ctx.shape`.
pub fn decode(
    config: &Sharding,
    bytes: Buffer,
    ctx: &DecodeContext,
) -> Result<ArrayRef, ChunkError> {
    let shard = ctx.shape;
    let grid: Vec<u64> = shard
        .iter()
        .zip(&config.chunk_shape)
        .map(|(s, c)| s.div_ceil((*c).max(1)))
        .collect();
    let n: u64 = grid.iter().product();
    let Some(index_len) = index_size(config, n) else {
        return Err(ChunkError::Decompress {
            codec: "sharding_indexed",
            message: "index codecs of variable size".into(),
        });
    };
    if config.chunk_shape.len() != shard.len() || config.chunk_shape.contains(&0) {
        return Err(ChunkError::Decompress {
            codec: "sharding_indexed",
            message: format!(
                "inner chunk shape {:?} does not fit shard shape {shard:?}",
                config.chunk_shape
            ),
        });
    }
    let len = bytes.len() as u64;
    if index_len > len {
        return Err(ChunkError::Truncated {
            what: "shard index",
            needed: index_len,
            available: len,
        });
    }
    let index_start = match config.index_location {
        IndexLocation::Start => 0,
        IndexLocation::End => len - index_len,
    };
    let index_enc = bytes.slice_with_length(index_start as usize, index_len as usize);
    let index = decode_bytes(
        &config.index_codecs.bytes_to_bytes,
        index_enc,
        (n * 16) as usize,
    )?;
    let big = config.index_codecs.array_to_bytes
        == (ArrayToBytes::Bytes {
            endian: Endian::Big,
        });
    let read = |i: usize| -> u64 {
        let b: [u8; 8] = index.as_slice()[i * 8..i * 8 + 8]
            .try_into()
            .unwrap_or([0xff; 8]);
        if big {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    };
    if index.len() as u64 != n * 16 {
        return Err(ChunkError::SizeMismatch {
            expected: n * 16,
            found: index.len() as u64,
        });
    }
    // All inner chunks together share the shard's byte budget: each may use what
    // the ones before it left (inner ranges may even overlap, so sizes on disk
    // bound nothing).
    let mut budget = ctx.max_bytes;
    let mut parts = Vec::with_capacity(n as usize);
    for j in 0..n as usize {
        let (offset, nbytes) = (read(2 * j), read(2 * j + 1));
        if offset == u64::MAX && nbytes == u64::MAX {
            let fill = fill_array(
                &ctx.data_type,
                ctx.fill_value,
                1,
                ctx.string_type,
                ctx.max_bytes,
            )?;
            parts.push(Part::Missing(fill));
            continue;
        }
        let end = offset.checked_add(nbytes).filter(|&e| e <= len).ok_or(
            ChunkError::OffsetOutOfBounds {
                index: j,
                offset: offset.saturating_add(nbytes),
                data_len: len,
            },
        )?;
        let inner = bytes.slice_with_length(offset as usize, (end - offset) as usize);
        let mut inner_ctx = ctx.with_shape(&config.chunk_shape);
        inner_ctx.max_bytes = budget;
        let array = config.codecs.decode(inner, &inner_ctx)?;
        budget = budget
            .checked_sub(array.get_array_memory_size())
            .ok_or(ChunkError::TooLarge {
                codec: "sharding_indexed",
                limit: ctx.max_bytes as u64,
            })?;
        parts.push(Part::Present(array));
    }
    Ok(gather(&parts, &grid, &config.chunk_shape, shard)?)
}
