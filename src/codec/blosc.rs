//! `blosc`: c-blosc 1.x frames (the library is built from source by `blosc-src`).
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/index.html>.
//! v3 name `blosc`:
//! `{"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}`;
//! v2 id `blosc` (`shuffle` as an integer; zarr v2's default is lz4/5/shuffle).
//!
//! A frame's header states its sizes. `blosc_cbuffer_validate` checks that header
//! against the input length before anything is decompressed, the stated size is
//! checked against the caller's limit, and c-blosc never writes past `destsize`.
//! One copy: c-blosc writes straight into the output buffer.

#[cfg(feature = "blosc")]
use std::ffi::{CString, c_char, c_int, c_void};

use arrow_buffer::Buffer;
#[cfg(feature = "blosc")]
use arrow_buffer::MutableBuffer;

// Links the c-blosc library that blosc-src builds.
#[cfg(feature = "blosc")]
use blosc_src as _;

use std::any::Any;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The names of `blosc`.
pub(crate) const NAMES: &[&str] = &["blosc", "numcodecs.blosc"];

/// `blosc` settings (needed to encode; decoding reads the frame header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blosc {
    /// Inner compressor: `lz4`, `lz4hc`, `blosclz`, `zstd`, `zlib`, `snappy`.
    pub(crate) cname: String,
    /// Level 0..=9.
    pub(crate) clevel: u8,
    /// Shuffle filter.
    pub(crate) shuffle: BloscShuffle,
    /// Element size for shuffling.
    pub(crate) typesize: usize,
    /// Block size, 0 for automatic.
    pub(crate) blocksize: usize,
}

/// The blosc shuffle filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BloscShuffle {
    /// No shuffle.
    NoShuffle,
    /// Byte shuffle.
    Shuffle,
    /// Bit shuffle.
    BitShuffle,
}

/// The configuration as written: v3 names the shuffle, v2 (numcodecs) numbers it.
#[derive(Deserialize)]
struct Settings {
    cname: Option<String>,
    clevel: Option<u64>,
    shuffle: Option<ShuffleSetting>,
    typesize: Option<u64>,
    blocksize: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ShuffleSetting {
    Name(String),
    Number(i64),
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    if cfg!(not(feature = "blosc")) {
        return Err(ConfigError::NotBuilt {
            name: name.to_string(),
            feature: "blosc",
        });
    }
    let s = settings::<Settings>(name, config)?;
    let shuffle = match s.shuffle {
        None => BloscShuffle::Shuffle,
        Some(ShuffleSetting::Name(n)) => match n.as_str() {
            "noshuffle" => BloscShuffle::NoShuffle,
            "shuffle" => BloscShuffle::Shuffle,
            "bitshuffle" => BloscShuffle::BitShuffle,
            other => {
                return Err(ConfigError::invalid_found(
                    name,
                    "configuration.shuffle",
                    "\"noshuffle\", \"shuffle\" or \"bitshuffle\"",
                    format!("{other:?}"),
                ));
            }
        },
        // v2 (numcodecs) integers: 0 none, 1 byte, 2 bit, -1 automatic (read as byte
        // shuffle here; decoding takes the real filter from the frame header).
        Some(ShuffleSetting::Number(n)) => match n {
            0 => BloscShuffle::NoShuffle,
            1 | -1 => BloscShuffle::Shuffle,
            2 => BloscShuffle::BitShuffle,
            _ => {
                return Err(ConfigError::invalid_found(
                    name,
                    "configuration.shuffle",
                    "0, 1, 2 or -1",
                    n,
                ));
            }
        },
    };
    Ok(Arc::new(Blosc {
        cname: s.cname.unwrap_or_else(|| "lz4".to_string()),
        clevel: s.clevel.unwrap_or(5).min(9) as u8,
        shuffle,
        typesize: s.typesize.unwrap_or(1) as usize,
        blocksize: s.blocksize.unwrap_or(0) as usize,
    }))
}

impl BloscShuffle {
    fn name(self) -> &'static str {
        match self {
            Self::NoShuffle => "noshuffle",
            Self::Shuffle => "shuffle",
            Self::BitShuffle => "bitshuffle",
        }
    }

    fn number(self) -> i32 {
        match self {
            Self::NoShuffle => 0,
            Self::Shuffle => 1,
            Self::BitShuffle => 2,
        }
    }
}

impl BytesToBytesCodec for Blosc {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        decode(&input, limit, None)
    }

    fn decode_reusing(
        &self,
        input: Buffer,
        limit: usize,
        recycler: Option<&Arc<crate::recycle::Recycler>>,
    ) -> Result<Buffer, ChunkError> {
        decode(&input, limit, recycler)
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        encode(&input, self)
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 => json!({"id": "blosc", "cname": self.cname, "clevel": self.clevel,
                        "shuffle": self.shuffle.number(), "blocksize": self.blocksize}),
            _ => json!({"name": "blosc", "configuration": {
                "cname": self.cname, "clevel": self.clevel, "shuffle": self.shuffle.name(),
                "typesize": self.typesize, "blocksize": self.blocksize}}),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(feature = "blosc")]
unsafe extern "C" {
    fn blosc_cbuffer_validate(cbuffer: *const c_void, cbytes: usize, nbytes: *mut usize) -> c_int;
    fn blosc_decompress_ctx(
        src: *const c_void,
        dest: *mut c_void,
        destsize: usize,
        numinternalthreads: c_int,
    ) -> c_int;
    fn blosc_compress_ctx(
        clevel: c_int,
        doshuffle: c_int,
        typesize: usize,
        nbytes: usize,
        src: *const c_void,
        dest: *mut c_void,
        destsize: usize,
        compressor: *const c_char,
        blocksize: usize,
        numinternalthreads: c_int,
    ) -> c_int;
}

/// c-blosc's frame header size: the most a frame adds to its input.
#[cfg(feature = "blosc")]
const MAX_OVERHEAD: usize = 16;

/// Decompress one blosc frame (into a buffer from `recycler`, if there is one:
/// the frame states its size).
#[cfg(feature = "blosc")]
pub(crate) fn decode(
    input: &[u8],
    limit: usize,
    recycler: Option<&Arc<crate::recycle::Recycler>>,
) -> Result<Buffer, ChunkError> {
    const CODEC: &str = "blosc";
    let mut nbytes = 0usize;
    // SAFETY: `input` is a live slice of `input.len()` bytes and `nbytes` is a valid
    // out-pointer; blosc_cbuffer_validate reads at most `cbytes` bytes.
    let valid = unsafe { blosc_cbuffer_validate(input.as_ptr().cast(), input.len(), &mut nbytes) };
    if valid < 0 {
        return Err(ChunkError::Decompress {
            codec: CODEC,
            message: "invalid blosc header".into(),
        });
    }
    if nbytes > limit {
        return Err(ChunkError::TooLarge {
            codec: CODEC,
            limit: limit as u64,
        });
    }
    if nbytes == 0 {
        return Ok(Buffer::from(MutableBuffer::new(0)));
    }
    // Not zero-filled: c-blosc writes every byte it reports.
    let mut out = crate::recycle::take(recycler, nbytes);
    // SAFETY: the header was validated against `input.len()` above (which is what
    // c-blosc requires before decompressing); `out` is a writable allocation of
    // at least `nbytes` bytes, passed as `destsize`, and c-blosc writes no more.
    let written =
        unsafe { blosc_decompress_ctx(input.as_ptr().cast(), out.as_mut_ptr().cast(), nbytes, 1) };
    if written < 0 || written as usize != nbytes {
        return Err(ChunkError::Decompress {
            codec: CODEC,
            message: format!("corrupt blosc frame (decompressor returned {written})"),
        });
    }
    // SAFETY: c-blosc returned `nbytes`: it wrote bytes 0..nbytes of `out`, within
    // its capacity, so they are initialised.
    unsafe { out.set_len(nbytes) };
    Ok(crate::recycle::freeze(recycler, out))
}

/// Compress `input` into one blosc frame.
///
/// # Errors
/// An unknown `cname`, or an input over c-blosc's 2 GiB frame limit.
#[cfg(feature = "blosc")]
pub(crate) fn encode(input: &[u8], config: &Blosc) -> Result<Vec<u8>, EncodeError> {
    let cname = CString::new(config.cname.as_str()).map_err(|_| EncodeError::Blosc {
        code: 0,
        cname: config.cname.clone(),
    })?;
    let shuffle = config.shuffle.number();
    let mut out = vec![0u8; input.len() + MAX_OVERHEAD];
    // SAFETY: `input` and `out` are live, non-overlapping slices whose lengths are
    // passed as `nbytes` and `destsize`; `cname` is a NUL-terminated string that
    // outlives the call.
    let n = unsafe {
        blosc_compress_ctx(
            c_int::from(config.clevel),
            shuffle,
            config.typesize.max(1),
            input.len(),
            input.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            out.len(),
            cname.as_ptr(),
            config.blocksize,
            1,
        )
    };
    if n <= 0 {
        return Err(EncodeError::Blosc {
            code: n,
            cname: config.cname.clone(),
        });
    }
    out.truncate(n as usize);
    Ok(out)
}

/// Without the `blosc` feature no chain holds a blosc codec (`build` refuses it), but
/// a writer asked for blosc still gets one: its chunks are refused here.
#[cfg(not(feature = "blosc"))]
fn decode(
    _: &[u8],
    _: usize,
    _: Option<&Arc<crate::recycle::Recycler>>,
) -> Result<Buffer, ChunkError> {
    Err(ChunkError::Decompress {
        codec: "blosc",
        message: NOT_BUILT.to_string(),
    })
}

#[cfg(not(feature = "blosc"))]
fn encode(_: &[u8], _: &Blosc) -> Result<Vec<u8>, EncodeError> {
    Err(EncodeError::NotBuilt { feature: "blosc" })
}

#[cfg(not(feature = "blosc"))]
const NOT_BUILT: &str = "this zarrow was built without its `blosc` feature (c-blosc)";

#[cfg(all(test, feature = "blosc"))]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_cname() {
        let data: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 1000).to_le_bytes())
            .collect();
        for cname in ["lz4", "lz4hc", "blosclz", "zstd", "zlib", "snappy"] {
            for shuffle in [
                BloscShuffle::NoShuffle,
                BloscShuffle::Shuffle,
                BloscShuffle::BitShuffle,
            ] {
                let config = Blosc {
                    cname: cname.into(),
                    clevel: 5,
                    shuffle,
                    typesize: 4,
                    blocksize: 0,
                };
                let enc = encode(&data, &config).unwrap();
                assert_eq!(
                    decode(&enc, data.len(), None).unwrap().as_slice(),
                    &data[..],
                    "{cname} {shuffle:?}"
                );
                assert!(matches!(
                    decode(&enc, data.len() - 1, None),
                    Err(ChunkError::TooLarge { .. })
                ));
            }
        }
    }

    #[test]
    fn corrupt_frames_error() {
        assert!(decode(b"", 100, None).is_err());
        assert!(decode(b"0123456789abcdefXYZ", 100, None).is_err());
        let config = Blosc {
            cname: "lz4".into(),
            clevel: 5,
            shuffle: BloscShuffle::Shuffle,
            typesize: 1,
            blocksize: 0,
        };
        let data = vec![3u8; 10_000];
        let enc = encode(&data, &config).unwrap();
        assert!(decode(&enc[..enc.len() - 1], 10_000, None).is_err());
    }
}
