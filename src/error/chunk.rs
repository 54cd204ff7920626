//! What goes wrong inside one chunk: decoding its bytes ([`ChunkError`]) or
//! encoding them ([`EncodeError`]).

use arrow_schema::{ArrowError, DataType as ArrowType};

use super::Cut;

/// Why a codec could not encode a chunk ([`Error::Encode`](super::Error::Encode) names the chunk and
/// the codec).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// More values than the chunk has elements.
    #[error("{values} values do not fit a chunk of {capacity} elements")]
    TooManyValues {
        /// The values given.
        values: u64,
        /// The chunk's elements (the product of its shape).
        capacity: u64,
    },
    /// A chunk shape whose element count overflows this machine's `usize`.
    #[error("chunk shape {shape:?} has more elements than this machine can address")]
    ShapeOverflow {
        /// The chunk shape.
        shape: Vec<u64>,
    },
    /// Fewer values than the chunk's elements, for a codec that needs them all
    /// (`transpose`, or `sharding_indexed` over more than one dimension).
    #[error(
        "{codec} needs the whole chunk of shape {shape:?}: {values} of {} elements given",
        shape.iter().product::<u64>()
    )]
    PartialChunk {
        /// The codec.
        codec: &'static str,
        /// The values given.
        values: u64,
        /// The chunk shape.
        shape: Vec<u64>,
    },
    /// An Arrow type the codec does not write.
    #[error("the {codec} layout does not encode {data_type}")]
    ArrowType {
        /// The codec (`bytes`), or the layout when several codecs share its
        /// encoder (`variable-length`: `vlen-utf8`, ZEP0007, `zarrs.vlen`).
        codec: &'static str,
        /// The Arrow type of the values.
        data_type: ArrowType,
    },
    /// Values of another Arrow type than the one of the data type the codec is
    /// configured for.
    #[error("{codec} over {configured} values cannot apply to {found} values")]
    TypeMismatch {
        /// The codec.
        codec: &'static str,
        /// The Arrow type of the data type it is configured for
        /// (`numcodecs.delta`'s `dtype`).
        configured: ArrowType,
        /// The Arrow type of the values given.
        found: ArrowType,
    },
    /// A `transpose` order of another length than the chunk shape has dimensions.
    #[error(
        "transpose order {order:?} does not match the {} dimensions of chunk shape {shape:?}",
        shape.len()
    )]
    RankMismatch {
        /// The `order`.
        order: Vec<usize>,
        /// The chunk shape.
        shape: Vec<u64>,
    },
    /// A value or a chunk past a limit of the format it is written in (a `u32`
    /// length or count).
    #[error("{size} {what}: past the format's limit of {limit}")]
    TooLarge {
        /// What is counted (`bytes in one vlen value`).
        what: &'static str,
        /// How many there are.
        size: u64,
        /// The most the format holds.
        limit: u64,
    },
    /// A chunk's values past what 32-bit offsets address.
    #[error(
        "chunk values reach {bytes} bytes, past what 32-bit offsets hold: use a large type or a smaller chunk length"
    )]
    OffsetOverflow {
        /// The offset that does not fit.
        bytes: u64,
    },
    /// A codec configuration zarrow reads but does not write.
    #[error("zarrow does not write {codec} with {option} {value:?}")]
    UnsupportedOption {
        /// The codec.
        codec: &'static str,
        /// The configuration key.
        option: &'static str,
        /// Its value.
        value: &'static str,
    },
    /// arrow-rs refused to rearrange the values (a selection whose strings
    /// overflow 32-bit offsets).
    #[error("rearranging the values: {source}")]
    Arrow {
        /// Its error.
        #[source]
        source: ArrowError,
    },
    /// The compressor failed.
    #[error("{source}")]
    Compress {
        /// Its error.
        #[source]
        source: std::io::Error,
    },
    /// c-blosc refused to compress.
    #[error(
        "blosc compression failed ({code}); is cname {:?} supported?",
        Cut(cname)
    )]
    Blosc {
        /// c-blosc's return code (0 for a cname it was not given: one with a NUL).
        code: i32,
        /// The compressor's name.
        cname: String,
    },
    /// An inner chunk of a shard, or a section of a layout, failed.
    #[error("{what}: {}: {source}", Cut(codec))]
    Inner {
        /// Which part (`inner chunk 3`, `index`).
        what: String,
        /// Its codec.
        codec: String,
        /// Why.
        source: Box<EncodeError>,
    },
    /// A codec this build of zarrow leaves out (a default feature turned off).
    #[error("this zarrow was built without its `{feature}` feature")]
    NotBuilt {
        /// The cargo feature.
        feature: &'static str,
    },
}

impl EncodeError {
    /// A compressor's failure, from its error.
    pub(crate) fn compress(source: std::io::Error) -> Self {
        Self::Compress { source }
    }
}

/// What is wrong with one chunk's bytes. Carries the element index or byte
/// position where that helps find the damage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// The chunk ends before a structure it announces.
    #[error("truncated: {what} needs {needed} bytes but only {available} remain")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// The element count stored in the chunk differs from the chunk shape.
    #[error("element count {found} does not match the chunk size {expected}")]
    CountMismatch {
        /// Elements per chunk according to the metadata.
        expected: u64,
        /// Elements the chunk says it holds.
        found: u64,
    },
    /// Bytes are left over after the last element.
    #[error("{extra} trailing bytes after the last element")]
    TrailingBytes {
        /// How many.
        extra: u64,
    },
    /// An offset is smaller than the one before it.
    #[error("offsets decrease at element {element} ({start} > {end})")]
    OffsetsDecrease {
        /// Element index.
        element: usize,
        /// Its start offset.
        start: u64,
        /// Its end offset.
        end: u64,
    },
    /// An offset points past the end of the data.
    #[error("offset {offset} at index {index} is past the end of the data ({data_len} bytes)")]
    OffsetOutOfBounds {
        /// Offset index (0..=n).
        index: usize,
        /// The offset value.
        offset: u64,
        /// Data length in bytes.
        data_len: u64,
    },
    /// The chunk's values do not fit 32-bit Arrow offsets.
    #[error(
        "{bytes} bytes of values do not fit 32-bit Arrow offsets; read with the large type (StringType::LargeUtf8)"
    )]
    OffsetOverflow {
        /// Total value bytes.
        bytes: u64,
    },
    /// A string element is not valid UTF-8.
    #[error("element {element} is not valid UTF-8")]
    InvalidUtf8 {
        /// Element index within the chunk.
        element: usize,
    },
    /// A `fixed_length_utf32` element holds a value that is not a Unicode scalar.
    #[error("element {element} holds {code:#x}, which is not a Unicode scalar value")]
    InvalidCodePoint {
        /// Element index within the chunk.
        element: usize,
        /// The offending code unit.
        code: u32,
    },
    /// The decoded chunk has the wrong size for a fixed-width data type.
    #[error("decoded size {found} bytes, expected {expected} bytes")]
    SizeMismatch {
        /// Bytes expected from the chunk shape and data type.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// A decompressor rejected its input.
    #[error("{codec} decompression failed: {message}")]
    Decompress {
        /// The codec.
        codec: &'static str,
        /// The decompressor's explanation.
        message: String,
    },
    /// A chunk decompresses to more bytes than allowed.
    #[error("{codec} output exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The codec.
        codec: &'static str,
        /// The limit in force (see `ReadOptions::max_chunk_bytes`).
        limit: u64,
    },
    /// Arrow could not assemble the chunk's parts (for example, a shard whose
    /// inner chunks together overflow 32-bit offsets).
    #[error("assembling the chunk: {0}")]
    Arrow(#[source] ArrowError),
    /// A crc32c checksum does not match.
    #[error("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The checksum in the chunk.
        stored: u32,
        /// The checksum of the data.
        computed: u32,
    },
}

impl From<ArrowError> for ChunkError {
    fn from(e: ArrowError) -> Self {
        ChunkError::Arrow(e)
    }
}
