//! Codecs, sans IO: one module per codec, each holding its configuration (names,
//! aliases, v2 id, serde-derived settings), its decoder, its encoder and the JSON it
//! writes. [`CodecChain`] (in `chain.rs`) builds a chain from an array's metadata,
//! and is the only way in from outside this module.
//!
//! A chunk is decoded by running the bytes->bytes codecs backwards, which yields one
//! Arrow-aligned [`Buffer`], then the array->bytes layout decoder, then the
//! array->array codecs backwards:
//!
//! | codec (v3 name; aliases, v2 id) | module | copies into Arrow |
//! |---|---|---|
//! | `bytes` (numbers, bools, fixed-width strings) | `bytes` | numbers: none (aligned, little-endian); bools and fixed strings: one |
//! | `vlen-utf8`, `vlen-bytes`, `zarrs.vlen_v2` | `vlen` | `Utf8`/`Binary`: values once; views: none of the values |
//! | `zarrs.vlen` | `zarrs_vlen` | none with plain index and data codecs (offsets convert when the width differs) |
//! | ZEP0007 data types (no codec name) | `zep0007` | none (offsets convert when the width differs) |
//! | `sharding_indexed` | `sharding` | the inner chunks' own, then one gather |
//! | `transpose` | `transpose` | one gather |
//! | numcodecs `delta` (v3 `numcodecs.delta`) | `delta` | one (the running sum) |
//! | `zstd`, `gzip` / `zlib`, `blosc` | `zstd`, `gzip`, `blosc` | one (decompressed into an aligned buffer) |
//! | numcodecs `lz4`, `bz2`, `lzma` (v3 `numcodecs.*`) | `lz4`, `bz2`, `lzma` | one |
//! | `crc32c` | `crc32c` | none (a slice) |
//!
//! Decoders take bytes and an element count and never see a store, so sync, async
//! and parallel callers share them.
//!
//! ## What is public, and why
//!
//! Only [`CodecChain`] (at the crate's root, `zarrow::CodecChain`) and
//! [`DecodeContext`]: a caller that fetches chunk bytes its own way (an async
//! store, a cache, a test) builds the chain from the metadata and decodes with
//! no store involved, or undoes only the compression
//! ([`CodecChain::decode_bytes`]). The codec types, their configurations and the
//! table stay inside the crate, so that codecs can change without breaking users.
//!
//! ## Adding a codec
//!
//! Write one module with a type implementing `ArrayToArrayCodec`,
//! `ArrayToBytesCodec` or `BytesToBytesCodec` and a `build` function from its
//! configuration, then add one line to `CODECS` (below).

mod arrow_values;
mod blosc;
mod bounded;
mod bytes;
mod bz2;
pub(crate) mod chain;
mod crc32c;
mod delta;
mod gzip;
mod lz4;
mod lzma;
pub(crate) mod sharding;
mod transpose;
mod vlen;
mod zarrs_vlen;
mod zep0007;
mod zstd;

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub(crate) use arrow_values::value_bytes;
pub(crate) use blosc::{Blosc, BloscShuffle};
pub(crate) use bytes::Bytes;
pub(crate) use chain::CodecChain;
pub(crate) use gzip::Gzip;
pub(crate) use sharding::Sharding;
pub(crate) use vlen::Vlen;
pub(crate) use zarrs_vlen::ZarrsVlen;
pub(crate) use zep0007::Zep0007;
pub(crate) use zstd::Zstd;

use crate::error::{ChunkError, EncodeError, Error};
use crate::metadata::{DataType, FillValue, StringType};

/// What a layout decoder needs to know about the chunk it decodes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
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
    /// Where the decoded values' buffers come from (a reader's recycler).
    pub(crate) recycler: Option<&'a Arc<crate::recycle::Recycler>>,
    /// The elements wanted: the first `wanted` (at most `elements`). A decoder
    /// that can stop early (vlen under zstd) may return only these; every
    /// other returns them all.
    pub(crate) wanted: usize,
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
            recycler: None,
            wanted: elements,
        }
    }

    /// The same context, its values' buffers from `recycler`.
    pub(crate) fn with_recycler(
        mut self,
        recycler: Option<&'a Arc<crate::recycle::Recycler>>,
    ) -> Self {
        self.recycler = recycler;
        self
    }

    /// The same context, wanting only the first `n` elements (of a 1-D chunk
    /// whose later rows no read needs): see [`DecodeContext::wanted`].
    pub(crate) fn wanting(mut self, n: usize) -> Self {
        self.wanted = n.min(self.elements);
        self
    }

    /// The same context for a chunk of another shape.
    pub(crate) fn with_shape(&self, shape: &'a [u64]) -> Self {
        Self::new(
            shape,
            self.data_type,
            self.fill_value,
            self.string_type,
            self.max_bytes,
        )
        .with_recycler(self.recycler)
    }
}

/// An array->array codec: reorders a chunk's elements.
pub(crate) trait ArrayToArrayCodec: Debug + Send + Sync {
    /// The shape of the chunk this codec hands on, for a chunk of `shape`.
    fn encoded_shape(&self, shape: &[u64]) -> Result<Vec<u64>, EncodeError>;
    /// Undo the codec: `array` is in C order over `encoded_shape(shape)`; the result
    /// is in C order over `shape`.
    fn decode(&self, array: &ArrayRef, shape: &[u64]) -> Result<ArrayRef, ChunkError>;
    /// Apply the codec to a chunk of `shape`.
    fn encode(&self, array: &ArrayRef, shape: &[u64]) -> Result<ArrayRef, EncodeError>;
    /// The v3 `codecs` entry.
    fn metadata(&self) -> Value;
}

/// An array->bytes codec: the byte layout of a chunk's elements.
pub(crate) trait ArrayToBytesCodec: Debug + Send + Sync + Any {
    /// Decode a chunk of `ctx.shape`.
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError>;
    /// Encode `array` (at most `shape`'s element count, no nulls) as a chunk of
    /// `shape`, padded with the fill value (zeros, empty values).
    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError>;
    /// The v3 `codecs` entry; `None` when the data type implies the layout.
    fn metadata(&self) -> Option<Value>;
    /// Whether the layout holds variable-length elements.
    fn is_variable_length(&self) -> bool;
    /// Check the layout against the shape of the chunks it encodes.
    fn check_shape(&self, _shape: &[u64]) -> Result<(), ConfigError> {
        Ok(())
    }
    /// The codec's partial decoder for chunks of `ndim` dimensions, when it can
    /// decode part of a chunk from ranges of its bytes (`sharding_indexed`).
    /// `None` (the default): a chunk is fetched whole.
    fn partial(&self, _ndim: usize) -> Option<&dyn PartialDecoder> {
        None
    }
    /// For downcasting (the fused decoders ask for the codec they fuse).
    fn as_any(&self) -> &dyn Any;
}

/// Decoding part of a chunk from ranges of its bytes: the capability a codec
/// offers the read planner ([`ArrayToBytesCodec::partial`]). For a read of some
/// rows of a chunk (a range along its first dimension) the codec gives a
/// sub-plan ([`PartialRead`]): the ranges to fetch, step by step, and the rows
/// decoded from them. The planner drives it without knowing the codec.
pub(crate) trait PartialDecoder: Debug + Send + Sync {
    /// The rows a partial read decodes come in whole multiples of this (a
    /// shard's inner chunks' first extent; 1 for a codec that reads any row).
    fn part_rows(&self) -> u64;
    /// The sub-plan reading rows `want` of a chunk of `shape`: rows from
    /// `want.start` rounded down to a multiple of [`PartialDecoder::part_rows`]
    /// to `want.end` rounded up (within the chunk), with the chunk's whole
    /// extent of the other dimensions. With `runs`, a 1-D chunk may be
    /// decoded as consecutive runs instead of one array.
    ///
    /// # Errors
    /// When this chunk cannot be read in part (the planner reads it whole).
    fn plan(
        &self,
        shape: &[u64],
        want: std::ops::Range<u64>,
        runs: bool,
    ) -> Result<Box<dyn PartialRead>, ChunkError>;
    /// A whole 1-D chunk's bytes decoded as runs (a shard: one per inner chunk,
    /// no gathering copy).
    fn decode_runs(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<Vec<ArrayRef>, ChunkError>;
}

/// A chunk read in part: a codec's sub-plan (see [`PartialDecoder::plan`]).
/// It owns what it needs, so that a reader can keep it between fetches and move
/// it to a decoding thread.
pub(crate) trait PartialRead: Debug + Send {
    /// The first ranges to fetch.
    fn start(&mut self) -> Vec<ChunkRange>;
    /// The ranges last asked for are in (`buffers`, one per range, in order; the
    /// chunk is `chunk_len` bytes long): the next ranges, or the decoded rows.
    ///
    /// # Errors
    /// Corrupt or truncated bytes.
    fn resume(
        &mut self,
        buffers: Vec<Buffer>,
        chunk_len: u64,
        ctx: &DecodeContext,
    ) -> Result<PartialStep, ChunkError>;
}

/// A range of a chunk's bytes that a [`PartialRead`] asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChunkRange {
    /// These bytes.
    Bounded(std::ops::Range<u64>),
    /// The last this many bytes.
    Suffix(u64),
}

/// The next step of a [`PartialRead`].
#[derive(Debug)]
pub(crate) enum PartialStep {
    /// Fetch these ranges and resume.
    Fetch(Vec<ChunkRange>),
    /// The rows read: C order elements from element `offset` of the chunk, as
    /// one array or consecutive runs.
    Done { offset: u64, runs: Vec<ArrayRef> },
}

/// A bytes->bytes codec: compression or a checksum.
pub(crate) trait BytesToBytesCodec: Debug + Send + Sync + Any {
    /// Undo the codec, producing at most `limit` bytes.
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError>;
    /// As [`decode`](Self::decode), its output in a buffer from `recycler` where
    /// the codec knows the size up front (zstd).
    fn decode_reusing(
        &self,
        input: Buffer,
        limit: usize,
        recycler: Option<&Arc<crate::recycle::Recycler>>,
    ) -> Result<Buffer, ChunkError> {
        let _ = recycler;
        self.decode(input, limit)
    }
    /// Apply the codec.
    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError>;
    /// The v3 `codecs` entry (`zarr_format` 3) or the v2 `compressor` object (2).
    fn metadata(&self, zarr_format: u8) -> Value;
    /// The bytes the codec adds whatever its input, when fixed (`crc32c`: 4).
    fn fixed_overhead(&self) -> Option<u64> {
        None
    }
    /// When the codec only appends bytes after its input (`crc32c`: its 4-byte
    /// checksum), their count: a range of the input is the same range of the
    /// output, so a partial read passes through it (unchecked: the checksum
    /// covers the whole value).
    fn trailing_bytes(&self) -> Option<u64> {
        None
    }
    /// For downcasting (the fused vlen + zstd decoder asks for `zstd`).
    fn as_any(&self) -> &dyn Any;
}

/// Why a codec's metadata entry cannot be built.
#[derive(Debug)]
pub(crate) enum ConfigError {
    /// No codec of this name (or not where it stands).
    Unsupported(String),
    /// A configuration (or a place in the chain) the codec does not take:
    /// [`Error::Metadata`] once the document's key is known.
    Invalid {
        /// The codec, as the document names it (none for a chain without an
        /// array->bytes codec).
        codec: Option<String>,
        /// The field: a path inside the codec's entry (`configuration.level`), or
        /// `codecs` for its place in the chain.
        field: String,
        /// What was expected there.
        expected: String,
        /// What was there, cut.
        found: Option<String>,
    },
    /// A codec zarrow implements behind a cargo feature this build leaves out.
    NotBuilt {
        /// The codec's name as written.
        name: String,
        /// The feature that builds it.
        feature: &'static str,
    },
}

impl ConfigError {
    /// The error of the metadata document at `key`.
    pub(crate) fn into_error(self, key: &str) -> Error {
        match self {
            Self::Unsupported(name) => Error::UnsupportedCodec {
                name,
                key: key.to_string(),
            },
            Self::Invalid {
                codec,
                field,
                expected,
                found,
            } => Error::Metadata {
                key: key.to_string(),
                field,
                codec: codec.map(Into::into),
                expected,
                found: found.map(Into::into),
            },
            Self::NotBuilt { name, feature } => Error::CodecNotBuilt {
                name,
                feature,
                key: key.to_string(),
            },
        }
    }
}

impl ConfigError {
    /// [`ConfigError::Invalid`]: `codec`'s `field` is not `expected`.
    pub(crate) fn invalid(
        codec: &str,
        field: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Self::Invalid {
            codec: Some(codec.to_string()),
            field: field.into(),
            expected: expected.into(),
            found: None,
        }
    }

    /// [`ConfigError::Invalid`], saying what was `found`.
    pub(crate) fn invalid_found(
        codec: &str,
        field: impl Into<String>,
        expected: impl Into<String>,
        found: impl std::fmt::Display,
    ) -> Self {
        Self::Invalid {
            codec: Some(codec.to_string()),
            field: field.into(),
            expected: expected.into(),
            found: Some(crate::error::cut_owned(&found.to_string())),
        }
    }
}

/// Builds a codec from the name it was given and its configuration object.
type Build<T> = fn(&str, &Map<String, Value>) -> Result<Arc<T>, ConfigError>;

/// How a codec is built, by kind.
pub(crate) enum Builder {
    ArrayToArray(Build<dyn ArrayToArrayCodec>),
    ArrayToBytes(Build<dyn ArrayToBytesCodec>),
    BytesToBytes(Build<dyn BytesToBytesCodec>),
}

/// Every codec zarrow reads: the names it goes by (v3 name first, then aliases and
/// v2 ids), and how it is built. One line per codec.
pub(crate) const CODECS: &[(&[&str], Builder)] = &[
    (transpose::NAMES, Builder::ArrayToArray(transpose::build)),
    (delta::NAMES, Builder::ArrayToArray(delta::build)),
    (bytes::NAMES, Builder::ArrayToBytes(bytes::build)),
    (vlen::NAMES, Builder::ArrayToBytes(vlen::build)),
    (zarrs_vlen::NAMES, Builder::ArrayToBytes(zarrs_vlen::build)),
    (sharding::NAMES, Builder::ArrayToBytes(sharding::build)),
    (zstd::NAMES, Builder::BytesToBytes(zstd::build)),
    (gzip::NAMES, Builder::BytesToBytes(gzip::build)),
    (blosc::NAMES, Builder::BytesToBytes(blosc::build)),
    (crc32c::NAMES, Builder::BytesToBytes(crc32c::build)),
    (lz4::NAMES, Builder::BytesToBytes(lz4::build)),
    (bz2::NAMES, Builder::BytesToBytes(bz2::build)),
    (lzma::NAMES, Builder::BytesToBytes(lzma::build)),
];

/// For an array->bytes encoder: the elements of a chunk of `shape`, and how many
/// fill elements pad `array` to them.
fn padding(array: &dyn Array, shape: &[u64]) -> Result<(usize, usize), EncodeError> {
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .and_then(|e| usize::try_from(e).ok())
        .ok_or_else(|| EncodeError::ShapeOverflow {
            shape: shape.to_vec(),
        })?;
    let pad = elements
        .checked_sub(array.len())
        .ok_or(EncodeError::TooManyValues {
            values: array.len() as u64,
            capacity: elements as u64,
        })?;
    Ok((elements, pad))
}

/// A codec's configuration object as its serde-derived settings type.
fn settings<T: DeserializeOwned>(
    codec: &str,
    config: &Map<String, Value>,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(Value::Object(config.clone())).map_err(|e| {
        let p = crate::metadata::json_problem("configuration", &e);
        ConfigError::Invalid {
            codec: Some(codec.to_string()),
            field: p.field,
            expected: p.expected,
            found: p.found,
        }
    })
}

/// Where `zarrs.vlen` and `sharding_indexed` put their index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexLocation {
    /// At the start (`zarrs.vlen`: after `u64 L`).
    Start,
    /// At the end (`zarrs.vlen`: before `u64 L`).
    End,
}

impl IndexLocation {
    /// The `index_location` of `codec`'s configuration: `given`, else `default`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] for anything but `"start"` or `"end"`.
    pub(crate) fn parse(
        given: Option<&str>,
        default: Self,
        codec: &str,
    ) -> std::result::Result<Self, ConfigError> {
        match given {
            None => Ok(default),
            Some("start") => Ok(Self::Start),
            Some("end") => Ok(Self::End),
            Some(other) => Err(ConfigError::invalid_found(
                codec,
                "configuration.index_location",
                "\"start\" or \"end\"",
                format!("{other:?}"),
            )),
        }
    }
}

/// For compressors' unit tests: `data` survives `codec`'s round trip, a limit one
/// byte short of it is [`ChunkError::TooLarge`], and a cut stream is an error.
#[cfg(test)]
pub(crate) fn check_compressor(codec: &dyn BytesToBytesCodec, data: &[u8]) -> Vec<u8> {
    let enc = codec.encode(data.to_vec()).unwrap();
    let buf = Buffer::from(enc.clone());
    assert_eq!(
        codec.decode(buf.clone(), data.len()).unwrap().as_slice(),
        data
    );
    assert!(matches!(
        codec.decode(buf, data.len() - 1),
        Err(ChunkError::TooLarge { .. })
    ));
    let cut = Buffer::from(enc[..enc.len() / 2].to_vec());
    assert!(codec.decode(cut, data.len()).is_err());
    enc
}
