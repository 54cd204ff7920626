//! `zstd`: Zstandard frames.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/zstd/index.html>.
//! v3 name `zstd` (alias `numcodecs.zstd`), v2 id `zstd`:
//!
//! ```json
//! {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
//! ```
//!
//! Decoding is bounded by the caller's limit (a frame that states or produces more
//! is [`ChunkError::TooLarge`]). One copy: zstd writes straight into the aligned
//! output buffer, which is not zero-filled first.
//!
//! Each thread keeps one decompression context between chunks ([`with_dctx`]):
//! zstd then allocates its tables, and for streaming its window, once per thread
//! instead of once per chunk (a fresh multi-megabyte window per chunk was page
//! faults and kernel page clearing on every chunk).

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use arrow_buffer::{Buffer, MutableBuffer};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use zstd::zstd_safe::{DCtx, WriteBuf, zstd_sys};

use super::bounded::read_limited;
use super::{BytesToBytesCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};
use crate::recycle::Recycler;

/// The names of `zstd`.
pub(crate) const NAMES: &[&str] = &["zstd", "numcodecs.zstd"];

/// The `zstd` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct Zstd {
    /// Compression level.
    #[serde(default)]
    pub(crate) level: i32,
    /// Whether frames carry a content checksum.
    #[serde(default)]
    pub(crate) checksum: bool,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn BytesToBytesCodec>, ConfigError> {
    Ok(Arc::new(settings::<Zstd>(name, config)?))
}

impl BytesToBytesCodec for Zstd {
    fn decode(&self, input: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        zstd_decode(&input, limit, None)
    }

    fn decode_reusing(
        &self,
        input: Buffer,
        limit: usize,
        recycler: Option<&Arc<Recycler>>,
    ) -> Result<Buffer, ChunkError> {
        zstd_decode(&input, limit, recycler)
    }

    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        zstd_encode(&input, self.level, self.checksum).map_err(EncodeError::compress)
    }

    fn metadata(&self, zarr_format: u8) -> Value {
        match zarr_format {
            2 if self.checksum => json!({"id": "zstd", "level": self.level, "checksum": true}),
            2 => json!({"id": "zstd", "level": self.level}),
            _ => {
                json!({"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}})
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Decompress a zstd frame (or frames); a frame that states its size into a
/// buffer from `recycler`, if there is one.
pub(crate) fn zstd_decode(
    input: &[u8],
    limit: usize,
    recycler: Option<&Arc<Recycler>>,
) -> Result<Buffer, ChunkError> {
    const CODEC: &str = "zstd";
    // Fast path: the frame states its size (numcodecs and zarrs always write it).
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(input) {
        if size > limit as u64 {
            return Err(ChunkError::TooLarge {
                codec: CODEC,
                limit: limit as u64,
            });
        }
        let size = size as usize;
        let mut out = crate::recycle::take(recycler, size);
        let written = with_dctx(|dctx| dctx.decompress(&mut Spare(&mut out), input));
        if written == Ok(size) {
            return Ok(crate::recycle::freeze(recycler, out));
        }
        // Several frames, or a lying header: fall through to the streaming decoder,
        // which reports the real problem.
    }
    with_dctx(|dctx| {
        let decoder = zstd::stream::read::Decoder::with_context(input, dctx);
        read_limited(decoder, CODEC, limit, input.len().saturating_mul(4))
    })
}

thread_local! {
    /// This thread's decompression context, kept between chunks (see the module docs).
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's zstd decompression context. A streaming decoder
/// made with it resets the context's session first, so nothing left over from a
/// frame that failed half-way reaches the next one; one-shot decompression starts
/// a new frame anyway. A nested call (none today) gets a context of its own.
pub(crate) fn with_dctx<R>(f: impl FnOnce(&mut DCtx<'static>) -> R) -> R {
    DCTX.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => f(slot.get_or_insert_with(DCtx::create)),
        Err(_) => f(&mut DCtx::create()),
    })
}

/// A [`MutableBuffer`]'s spare capacity as zstd's output: zstd writes into
/// uninitialised memory and the buffer's length becomes what it wrote.
struct Spare<'a>(&'a mut MutableBuffer);

// SAFETY: `as_slice` covers the buffer's initialised length only; `capacity` and
// `as_mut_ptr` describe its one allocation; `filled_until(n)` is called (by
// zstd-safe's `write_from`, which asserts `n <= capacity`) only after zstd wrote
// the first `n` bytes, so setting the length to `n` exposes initialised bytes only.
unsafe impl WriteBuf for Spare<'_> {
    fn as_slice(&self) -> &[u8] {
        self.0.as_slice()
    }

    fn capacity(&self) -> usize {
        self.0.capacity()
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }

    unsafe fn filled_until(&mut self, n: usize) {
        // SAFETY: the caller promises bytes 0..n are written, and n <= capacity.
        unsafe { self.0.set_len(n) }
    }
}

/// A decompression context of zstd's own (its buffer-less block API is not in
/// zstd-safe): one per thread ([`decompress_blocks`]), freed with the thread.
struct BlockContext(std::ptr::NonNull<zstd_sys::ZSTD_DCtx>);

impl Drop for BlockContext {
    fn drop(&mut self) {
        // SAFETY: the pointer came from ZSTD_createDCtx and is freed once, here.
        unsafe {
            zstd_sys::ZSTD_freeDCtx(self.0.as_ptr());
        }
    }
}

impl BlockContext {
    fn create() -> Option<Self> {
        // SAFETY: ZSTD_createDCtx takes nothing and returns an owned context or null.
        std::ptr::NonNull::new(unsafe { zstd_sys::ZSTD_createDCtx() }).map(Self)
    }
}

thread_local! {
    /// This thread's context for [`decompress_blocks`].
    static BLOCK_DCTX: RefCell<Option<BlockContext>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's block context (a nested call, none today, gets
/// one of its own).
fn with_block_context<R>(
    f: impl FnOnce(*mut zstd_sys::ZSTD_DCtx) -> Result<R, ChunkError>,
) -> Result<R, ChunkError> {
    let no_memory = || ChunkError::Decompress {
        codec: "zstd",
        message: "no memory for a decompression context".into(),
    };
    BLOCK_DCTX.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            if slot.is_none() {
                *slot = BlockContext::create();
            }
            let context = slot.as_ref().ok_or_else(no_memory)?;
            f(context.0.as_ptr())
        }
        Err(_) => {
            let context = BlockContext::create().ok_or_else(no_memory)?;
            f(context.0.as_ptr())
        }
    })
}

/// zstd's error for `code`, if it is one.
fn block_error(code: usize) -> Option<ChunkError> {
    // SAFETY: ZSTD_isError and ZSTD_getErrorName take a plain integer;
    // ZSTD_getErrorName returns a static NUL-terminated string.
    unsafe {
        (zstd_sys::ZSTD_isError(code) != 0).then(|| ChunkError::Decompress {
            codec: "zstd",
            message: std::ffi::CStr::from_ptr(zstd_sys::ZSTD_getErrorName(code))
                .to_string_lossy()
                .into_owned(),
        })
    }
}

/// Decompress the first zstd frame of `input` into `out` (empty, with room for
/// the frame's stated content size, which the caller checked against its limit)
/// block by block, straight into `out` (no window of zstd's own, no copy out of
/// it): after each block that produced bytes, `each` sees all of `out` so far,
/// the new block still in cache, and says whether to go on. Returns the input
/// bytes the frame took (more follow when `input` holds several frames), or
/// `None` when `each` stopped it.
///
/// # Errors
/// zstd's (a corrupt frame, one that does not fit `out`), a frame cut short, and
/// `each`'s.
pub(crate) fn decompress_blocks(
    input: &[u8],
    out: &mut MutableBuffer,
    mut each: impl FnMut(&[u8]) -> Result<bool, ChunkError>,
) -> Result<Option<usize>, ChunkError> {
    with_block_context(|dctx| {
        // SAFETY: `dctx` is a live context used by this thread only.
        if let Some(e) = block_error(unsafe { zstd_sys::ZSTD_decompressBegin(dctx) }) {
            return Err(e);
        }
        let mut read = 0usize;
        loop {
            // SAFETY: as above.
            let need = unsafe { zstd_sys::ZSTD_nextSrcSizeToDecompress(dctx) };
            if need == 0 {
                return Ok(Some(read));
            }
            let Some(src) = input.get(read..read.saturating_add(need)) else {
                return Err(ChunkError::Decompress {
                    codec: "zstd",
                    message: format!(
                        "the frame ends early: its next part needs {need} bytes, {} remain",
                        input.len() - read
                    ),
                });
            };
            let filled = out.len();
            let room = out.capacity() - filled;
            // SAFETY: `dst` is the spare capacity of `out`, `room` bytes from its
            // initialised length (zstd writes at most `room` bytes there, and
            // reads back-references only from `out`'s bytes before it, which it
            // wrote); `src` is `need` readable bytes of `input`. Nothing else
            // touches `out` or `dctx` during the call.
            let written = unsafe {
                zstd_sys::ZSTD_decompressContinue(
                    dctx,
                    out.as_mut_ptr().add(filled).cast(),
                    room,
                    src.as_ptr().cast(),
                    need,
                )
            };
            if let Some(e) = block_error(written) {
                return Err(e);
            }
            read += need;
            if written > 0 {
                // SAFETY: zstd wrote `written` <= `room` bytes after `filled`.
                unsafe { out.set_len(filled + written) };
                if !each(out.as_slice())? {
                    return Ok(None);
                }
            }
        }
    })
}

/// Compress with zstd at `level`, optionally with a content checksum.
pub(crate) fn zstd_encode(input: &[u8], level: i32, checksum: bool) -> std::io::Result<Vec<u8>> {
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    compressor.include_checksum(checksum)?;
    compressor.compress(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_round_trip_and_limit() {
        let data = vec![7u8; 100_000];
        let enc = zstd_encode(&data, 3, true).unwrap();
        assert_eq!(
            zstd_decode(&enc, 100_000, None).unwrap().as_slice(),
            &data[..]
        );
        assert!(matches!(
            zstd_decode(&enc, 99_999, None),
            Err(ChunkError::TooLarge { .. })
        ));
        assert!(zstd_decode(&enc[..enc.len() / 2], 100_000, None).is_err());
        assert!(zstd_decode(b"not zstd at all", 100, None).is_err());
    }

    /// The thread's context is reused: a frame that fails half-way (streamed: no
    /// stated size) leaves nothing behind for the next frame on the same thread.
    #[test]
    fn a_failed_frame_does_not_reach_the_next_one() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut streamed = Vec::new();
        let mut encoder = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
        encoder.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut encoder, &data).unwrap();
        encoder.finish().unwrap();
        let stated = zstd_encode(&data, 3, false).unwrap();
        for frame in [&streamed, &stated] {
            let cut = &frame[..frame.len() * 2 / 3];
            assert!(zstd_decode(cut, data.len(), None).is_err());
            assert_eq!(
                zstd_decode(frame, data.len(), None).unwrap().as_slice(),
                &data[..]
            );
        }
        // Two frames back to back: the stated size covers only the first, so the
        // streaming decoder reads both.
        let two = [stated.clone(), stated].concat();
        let both = zstd_decode(&two, 2 * data.len(), None).unwrap();
        assert_eq!(both.as_slice(), &[&data[..], &data[..]].concat()[..]);
    }
}
