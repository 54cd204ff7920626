//! Codec chains: from an encoded chunk's bytes to an Arrow array, sans IO.
//!
//! A chunk is decoded by running the bytes->bytes codecs backwards (see
//! [`compress`], [`checksum`], [`blosc`]), which yields one Arrow-aligned
//! [`Buffer`], then the array->bytes layout decoder for the chunk's encoding:
//!
//! | layout | module | copies into Arrow |
//! |---|---|---|
//! | `bytes` (numbers, bools, fixed-width strings) | [`fixed`] | numbers: none (aligned, little-endian); bools and fixed strings: one |
//! | `vlen-utf8`, `vlen-bytes`, `zarrs.vlen_v2` | [`vlen_interleaved`] | `Utf8`/`Binary`: values once; views: none of the values |
//! | `zarrs.vlen` | [`zarrs_vlen`] | none with plain index and data codecs (offsets convert when the width differs) |
//! | ZEP0007 data types | [`zep0007`] | none (offsets convert when the width differs) |
//!
//! Decoders take the whole decoded chunk and its element count and never see a
//! store, so sync, async and parallel callers share them.

pub mod blosc;
pub mod checksum;
pub mod compress;
pub mod fixed;
pub(crate) mod parse;
pub mod sharding;
pub mod transpose;
pub mod vlen_interleaved;
pub mod zarrs_vlen;
pub mod zep0007;

use std::fmt;

use arrow_array::ArrayRef;
use arrow_buffer::Buffer;

use crate::error::ChunkError;
use crate::metadata::{DataType, Endian, FillValue, StringType};

/// The codecs of an array in encoding order: array->array codecs, one
/// array->bytes layout, then bytes->bytes codecs.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecChain {
    /// Element reorderings applied before the layout (`transpose`).
    pub array_to_array: Vec<ArrayToArray>,
    /// How elements are laid out as bytes.
    pub array_to_bytes: ArrayToBytes,
    /// Compression and checksums, in encoding order.
    pub bytes_to_bytes: Vec<BytesToBytes>,
}

/// An array->array codec.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ArrayToArray {
    /// `transpose`: the chunk is stored with its dimensions permuted by `order`.
    Transpose {
        /// A permutation of `0..ndim`.
        order: Vec<usize>,
    },
}

/// An array->bytes codec: the byte layout of a chunk's elements.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ArrayToBytes {
    /// `bytes`: fixed-width elements in C order.
    Bytes {
        /// Byte order of multi-byte elements.
        endian: Endian,
    },
    /// `vlen-utf8`, `vlen-bytes`, `zarrs.vlen_v2`: a count, then length-prefixed values.
    VlenInterleaved,
    /// `zarrs.vlen`: an offsets index and a data section, each with its own codecs.
    ZarrsVlen(Box<ZarrsVlen>),
    /// The ZEP0007 draft layout: offsets, padding to 64 bytes, data.
    Zep0007 {
        /// int64 offsets (`large_string` / `large_binary`) rather than int32.
        large: bool,
    },
    /// `sharding_indexed`: the chunk is a shard of inner chunks plus an index.
    Sharding(Box<Sharding>),
}

impl ArrayToBytes {
    /// Whether the layout holds variable-length elements (a shard asks its inner
    /// layout).
    pub fn is_variable_length(&self) -> bool {
        match self {
            Self::Bytes { .. } => false,
            Self::VlenInterleaved | Self::ZarrsVlen(_) | Self::Zep0007 { .. } => true,
            Self::Sharding(s) => s.codecs.array_to_bytes.is_variable_length(),
        }
    }
}

/// The `sharding_indexed` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Sharding {
    /// Shape of the inner chunks (divides the shard shape).
    pub chunk_shape: Vec<u64>,
    /// Codecs of each inner chunk.
    pub codecs: CodecChain,
    /// Codecs of the index: `bytes`, then optionally `crc32c`.
    pub index_codecs: CodecChain,
    /// Where the index sits in the shard.
    pub index_location: IndexLocation,
}

/// The integer type of `zarrs.vlen` offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetWidth {
    /// `uint32`.
    U32,
    /// `uint64`.
    U64,
}

/// Where `zarrs.vlen` and `sharding_indexed` put their index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexLocation {
    /// `u64 L`, L bytes of index, then the data.
    Start,
    /// The data, L bytes of index, then `u64 L`.
    End,
}

/// The `zarrs.vlen` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ZarrsVlen {
    /// Offset integer type.
    pub index_data_type: OffsetWidth,
    /// Index position.
    pub index_location: IndexLocation,
    /// Codecs of the index (a `bytes` codec, then bytes->bytes codecs).
    pub index_codecs: CodecChain,
    /// Codecs of the data (a `bytes` codec, then bytes->bytes codecs).
    pub data_codecs: CodecChain,
}

/// A bytes->bytes codec.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BytesToBytes {
    /// `gzip` (RFC 1952).
    Gzip {
        /// Compression level 0..=9.
        level: u32,
    },
    /// `zlib` (RFC 1950), v2 only in practice.
    Zlib {
        /// Compression level 0..=9.
        level: u32,
    },
    /// `zstd`.
    Zstd {
        /// Compression level.
        level: i32,
        /// Whether frames carry a content checksum.
        checksum: bool,
    },
    /// `blosc` (c-blosc 1.x frames).
    Blosc(BloscConfig),
    /// `crc32c`: a 4-byte little-endian CRC32C appended.
    Crc32c,
}

/// `blosc` settings (needed to encode; decoding reads the frame header).
#[derive(Debug, Clone, PartialEq)]
pub struct BloscConfig {
    /// Inner compressor: `lz4`, `lz4hc`, `blosclz`, `zstd`, `zlib`, `snappy`.
    pub cname: String,
    /// Level 0..=9.
    pub clevel: u8,
    /// Shuffle filter.
    pub shuffle: BloscShuffle,
    /// Element size for shuffling.
    pub typesize: usize,
    /// Block size, 0 for automatic.
    pub blocksize: usize,
}

/// The blosc shuffle filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BloscShuffle {
    /// No shuffle.
    NoShuffle,
    /// Byte shuffle.
    Shuffle,
    /// Bit shuffle.
    BitShuffle,
}

/// The most Arrow memory an element may need besides its value bytes: a 16-byte
/// view, or a 16-byte (array, index) pick when chunks are gathered. A chunk shape
/// is refused when `elements * ARROW_BYTES_PER_ELEMENT` exceeds the byte limit.
pub const ARROW_BYTES_PER_ELEMENT: usize = 16;

/// What a layout decoder needs to know about the chunk it decodes.
#[derive(Debug, Clone, Copy)]
pub struct DecodeContext<'a> {
    /// The chunk's shape (as encoded by the codec at hand).
    pub shape: &'a [u64],
    /// Elements in the chunk (the product of `shape`).
    pub elements: usize,
    /// The array's data type.
    pub data_type: DataType,
    /// The fill value (for absent inner chunks of a shard).
    pub fill_value: &'a FillValue,
    /// The Arrow layout wanted for strings and bytes.
    pub string_type: StringType,
    /// The most bytes any decompression step may produce.
    pub max_bytes: usize,
}

/// The most Arrow memory one element of `data_type` needs while its chunk is
/// decoded, besides variable-length value bytes (bounded by the decompressors):
/// numbers and bools take exactly their width (a transposed chunk also an 8-byte
/// gather index); strings and bytes up to [`ARROW_BYTES_PER_ELEMENT`].
pub(crate) fn arrow_bytes_per_element(data_type: &DataType, transposed: bool) -> usize {
    match data_type {
        DataType::FixedUtf32 { .. }
        | DataType::NullTerminatedBytes { .. }
        | DataType::String
        | DataType::Bytes => ARROW_BYTES_PER_ELEMENT,
        fixed => {
            fixed.fixed_size().unwrap_or(ARROW_BYTES_PER_ELEMENT) + 8 * usize::from(transposed)
        }
    }
}

impl<'a> DecodeContext<'a> {
    /// A context for a chunk of `shape`.
    pub fn new(
        shape: &'a [u64],
        data_type: DataType,
        fill_value: &'a FillValue,
        string_type: StringType,
        max_bytes: usize,
    ) -> Self {
        // An overflowing shape saturates, and the element budget in `decode` refuses it.
        let elements = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .and_then(|e| usize::try_from(e).ok())
            .unwrap_or(usize::MAX);
        Self {
            shape,
            elements,
            data_type,
            fill_value,
            string_type,
            max_bytes,
        }
    }

    /// The same context for a chunk of another shape.
    pub fn with_shape(&self, shape: &'a [u64]) -> Self {
        Self::new(
            shape,
            self.data_type,
            self.fill_value,
            self.string_type,
            self.max_bytes,
        )
    }
}

impl CodecChain {
    /// Decode one encoded chunk into an Arrow array of `ctx.elements` elements.
    ///
    /// # Errors
    /// A [`ChunkError`] for any corrupt, truncated or oversized input.
    pub fn decode(&self, encoded: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        // Arrow structures cost up to ARROW_BYTES_PER_ELEMENT per element (views,
        // gather and transpose indices), whatever the data; fixed-width elements
        // exactly their width: bound them up front.
        let per_element = arrow_bytes_per_element(&ctx.data_type, !self.array_to_array.is_empty());
        if ctx.elements.saturating_mul(per_element) > ctx.max_bytes {
            return Err(ChunkError::TooLarge {
                codec: "chunk shape",
                limit: ctx.max_bytes as u64,
            });
        }
        // vlen + zstd alone: decompress and decode fused (see `decode_zstd`).
        if self.array_to_array.is_empty()
            && self.array_to_bytes == ArrayToBytes::VlenInterleaved
            && matches!(self.bytes_to_bytes.as_slice(), [BytesToBytes::Zstd { .. }])
            && vlen_interleaved::fuse_zstd(&encoded, ctx)
        {
            let array = vlen_interleaved::decode_zstd(&encoded, ctx)?;
            if array.len() != ctx.elements {
                return Err(ChunkError::CountMismatch {
                    expected: ctx.elements as u64,
                    found: array.len() as u64,
                });
            }
            return Ok(array);
        }
        // Fixed-width chunks have an exact decoded size: use it as the bound.
        let limit = match ctx.data_type.fixed_size() {
            Some(size) => size.saturating_mul(ctx.elements).min(ctx.max_bytes),
            None => ctx.max_bytes,
        };
        let bytes = decode_bytes(&self.bytes_to_bytes, encoded, limit)?;
        // The shape each array->array codec hands on, from the chunk's own shape.
        let mut shapes = vec![ctx.shape.to_vec()];
        for codec in &self.array_to_array {
            let ArrayToArray::Transpose { order } = codec;
            let last = shapes.last().map(Vec::as_slice).unwrap_or_default();
            shapes.push(transpose::permute(last, order));
        }
        let encoded_shape = shapes.last().map(Vec::as_slice).unwrap_or_default();
        let layout_ctx = ctx.with_shape(encoded_shape);
        let mut array = match &self.array_to_bytes {
            ArrayToBytes::Bytes { endian } => fixed::decode(bytes, *endian, &layout_ctx)?,
            ArrayToBytes::VlenInterleaved => vlen_interleaved::decode(bytes, &layout_ctx)?,
            ArrayToBytes::ZarrsVlen(config) => zarrs_vlen::decode(config, bytes, &layout_ctx)?,
            ArrayToBytes::Zep0007 { large } => zep0007::decode(bytes, *large, &layout_ctx)?,
            ArrayToBytes::Sharding(config) => sharding::decode(config, bytes, &layout_ctx)?,
        };
        for (codec, shape) in self.array_to_array.iter().zip(&shapes).rev() {
            let ArrayToArray::Transpose { order } = codec;
            array = transpose::undo(&array, shape, order)?;
        }
        // Whatever a layout decoder did, a chunk has exactly its shape's elements.
        if array.len() != ctx.elements {
            return Err(ChunkError::CountMismatch {
                expected: ctx.elements as u64,
                found: array.len() as u64,
            });
        }
        Ok(array)
    }
}

/// Undo `codecs` (given in encoding order) on `buffer`.
pub(crate) fn decode_bytes(
    codecs: &[BytesToBytes],
    buffer: Buffer,
    limit: usize,
) -> Result<Buffer, ChunkError> {
    codecs
        .iter()
        .rev()
        .try_fold(buffer, |buf, codec| codec.decode(buf, limit))
}

impl BytesToBytes {
    /// Undo this codec, producing at most `limit` bytes.
    pub fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        match self {
            Self::Gzip { .. } => compress::gzip_decode(&input, limit),
            Self::Zlib { .. } => compress::zlib_decode(&input, limit),
            Self::Zstd { .. } => compress::zstd_decode(&input, limit),
            Self::Blosc(_) => blosc::decode(&input, limit),
            Self::Crc32c => checksum::crc32c_decode(input),
        }
    }

    /// Apply this codec.
    ///
    /// # Errors
    /// A message from the compressor (an unknown blosc `cname`, an over-large input).
    pub fn encode(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Self::Gzip { level } => compress::gzip_encode(input, *level),
            Self::Zlib { level } => compress::zlib_encode(input, *level),
            Self::Zstd { level, checksum } => {
                compress::zstd_encode(input, *level, *checksum).map_err(|e| e.to_string())
            }
            Self::Blosc(config) => blosc::encode(input, config),
            Self::Crc32c => Ok(checksum::crc32c_encode(input)),
        }
    }
}

/// Apply `codecs` (in encoding order) to `bytes`.
pub(crate) fn encode_bytes(codecs: &[BytesToBytes], bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    codecs
        .iter()
        .try_fold(bytes, |buf, codec| codec.encode(&buf))
}

impl fmt::Display for CodecChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for codec in &self.array_to_array {
            let ArrayToArray::Transpose { order } = codec;
            write!(f, "transpose({order:?}) -> ")?;
        }
        write!(f, "{}", self.array_to_bytes)?;
        for codec in &self.bytes_to_bytes {
            write!(f, " -> {codec}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ArrayToBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bytes { endian } => write!(f, "bytes({endian:?})"),
            Self::VlenInterleaved => write!(f, "vlen (interleaved lengths)"),
            Self::ZarrsVlen(c) => write!(
                f,
                "zarrs.vlen(index {:?} at {:?}, index codecs [{}], data codecs [{}])",
                c.index_data_type, c.index_location, c.index_codecs, c.data_codecs
            ),
            Self::Zep0007 { large: false } => write!(f, "ZEP0007 layout (int32 offsets)"),
            Self::Zep0007 { large: true } => write!(f, "ZEP0007 layout (int64 offsets)"),
            Self::Sharding(s) => write!(
                f,
                "sharding_indexed(inner chunks {:?}, index at {:?}, codecs [{}])",
                s.chunk_shape, s.index_location, s.codecs
            ),
        }
    }
}

impl fmt::Display for BytesToBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gzip { level } => write!(f, "gzip(level={level})"),
            Self::Zlib { level } => write!(f, "zlib(level={level})"),
            Self::Zstd { level, checksum } => write!(f, "zstd(level={level}, checksum={checksum})"),
            Self::Blosc(c) => write!(
                f,
                "blosc(cname={}, clevel={}, shuffle={:?})",
                c.cname, c.clevel, c.shuffle
            ),
            Self::Crc32c => write!(f, "crc32c"),
        }
    }
}
