//! `vlen-utf8`, `vlen-bytes` and `zarrs.vlen_v2`: length-prefixed values.
//!
//! Specs: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/vlen-utf8/index.html>,
//! numcodecs `VLenUTF8` / `VLenBytes`. v3 names `vlen-utf8`, `vlen-bytes`,
//! `zarrs.vlen_v2` (alias `https://codec.zarrs.dev/array_to_bytes/vlen_v2`), no
//! configuration (`{"name": "vlen-utf8", "configuration": {}}`); v2 filter ids
//! `vlen-utf8`, `vlen-bytes` with dtype `|O`.
//!
//! ```text
//! | u32 count | u32 len0 | len0 bytes | u32 len1 | len1 bytes | ...
//! ```
//!
//! `count` is the full chunk size (edge chunks are padded). Copies: to `Utf8` /
//! `Binary` (and the large types) the values are copied once into a contiguous
//! buffer; to `Utf8View` / `BinaryView` nothing is copied: each 16-byte view points
//! into the decoded chunk.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_buffer::{Buffer, MutableBuffer};
use serde_json::{Map, Value, json};

use super::arrow_values::{for_each_value, value_bytes};
use super::{ArrayToBytesCodec, ConfigError, DecodeContext, padding};
use crate::error::{ChunkError, EncodeError};
use crate::metadata::StringType;
use crate::offsets::{ChunkViewsBuilder, CopyBuilder, InlineViewsBuilder, ViewsBuilder};

/// The names of the interleaved layout (v3 names, zarrs aliases; `vlen-utf8` and
/// `vlen-bytes` are also the v2 filter ids).
pub(crate) const NAMES: &[&str] = &[
    "vlen-utf8",
    "vlen-bytes",
    "zarrs.vlen_v2",
    "vlen_v2",
    "https://codec.zarrs.dev/array_to_bytes/vlen_v2",
];

/// `vlen-utf8`, `vlen-bytes` or `zarrs.vlen_v2` (one layout, three names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Vlen {
    /// The name written back: `vlen-utf8`, `vlen-bytes` or `zarrs.vlen_v2`.
    pub(crate) name: &'static str,
}

pub(super) fn build(
    name: &str,
    _config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToBytesCodec>, ConfigError> {
    let name = match name {
        "vlen-utf8" => "vlen-utf8",
        "vlen-bytes" => "vlen-bytes",
        _ => "zarrs.vlen_v2",
    };
    Ok(Arc::new(Vlen { name }))
}

impl ArrayToBytesCodec for Vlen {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        decode(bytes, ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        let (_, pad) = padding(array, shape)?;
        encode(array, pad)
    }

    fn metadata(&self) -> Option<Value> {
        Some(json!({"name": self.name, "configuration": {}}))
    }

    fn is_variable_length(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn read_u32(bytes: &[u8], pos: usize, what: &'static str) -> Result<u32, ChunkError> {
    bytes
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| ChunkError::Truncated {
            what,
            needed: 4,
            available: bytes.len().saturating_sub(pos) as u64,
        })
}

/// Decode one chunk of interleaved values.
pub(crate) fn decode(bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
    let n = ctx.elements;
    let utf8 = ctx.data_type.is_text();
    let data = bytes.as_slice();
    let count = read_u32(data, 0, "element count")?;
    if count as u64 != n as u64 {
        return Err(ChunkError::CountMismatch {
            expected: n as u64,
            found: count.into(),
        });
    }
    // Each element needs at least its 4-byte length: reject impossible counts before
    // allocating anything sized by them.
    let min_len = 4 + 4 * n as u64;
    if (data.len() as u64) < min_len {
        return Err(ChunkError::Truncated {
            what: "element lengths",
            needed: min_len,
            available: data.len() as u64,
        });
    }
    let mut pos = 4usize;
    let next = |pos: &mut usize| -> Result<(usize, usize), ChunkError> {
        let len = read_u32(data, *pos, "element length")? as usize;
        let start = *pos + 4;
        let remaining = data.len() - start;
        if len > remaining {
            return Err(ChunkError::Truncated {
                what: "element value",
                needed: len as u64,
                available: remaining as u64,
            });
        }
        *pos = start + len;
        Ok((start, len))
    };
    let array = if ctx.string_type == StringType::Utf8View {
        let mut views = ViewsBuilder::new(bytes.clone(), n, ctx.recycler)?;
        // One vectorised pass: a chunk that is all ASCII (lengths under 128 and
        // ASCII values, the common case) needs no per-element UTF-8 check.
        let check_each = utf8 && !data.is_ascii();
        for _ in 0..n {
            let (start, len) = next(&mut pos)?;
            views.push(start, len, check_each)?;
        }
        check_end(pos, data.len())?;
        views.finish(utf8)
    } else {
        // One monomorphized copy loop per offset width (the builder choice is made
        // once per chunk, not per element).
        let max_values = data.len() - min_len as usize;
        let array = if ctx.string_type == StringType::LargeUtf8 {
            copy_values(
                CopyBuilder::<i64>::with_capacity(n, max_values, ctx.recycler),
                data,
                n,
                &mut pos,
                &next,
            )?
            .finish(utf8)?
        } else {
            copy_values(
                CopyBuilder::<i32>::with_capacity(n, max_values, ctx.recycler),
                data,
                n,
                &mut pos,
                &next,
            )?
            .finish(utf8)?
        };
        check_end(pos, data.len())?;
        array
    };
    Ok(array)
}

/// Copy `n` interleaved values into `out`, reading each with `next`.
fn copy_values<O: OffsetSizeTrait>(
    mut out: CopyBuilder<O>,
    data: &[u8],
    n: usize,
    pos: &mut usize,
    next: &impl Fn(&mut usize) -> Result<(usize, usize), ChunkError>,
) -> Result<CopyBuilder<O>, ChunkError> {
    for _ in 0..n {
        let (start, len) = next(pos)?;
        out.push_prefix(&data[start..], len)?;
    }
    Ok(out)
}

fn check_end(pos: usize, len: usize) -> Result<(), ChunkError> {
    if pos != len {
        return Err(ChunkError::TrailingBytes {
            extra: (len - pos) as u64,
        });
    }
    Ok(())
}

/// The fused path for `vlen-*` + `zstd`: decompress in cache-sized windows and
/// copy each value straight into the output values buffer, so the decompressed
/// chunk (lengths and values interleaved) is never written out and read back.
/// One copy of the values; for views, of the values over 12 bytes only (shorter
/// ones are inlined in their views). [`fuse_zstd`] says when zarrow uses it.
pub(crate) fn decode_zstd(encoded: &[u8], ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
    let n = ctx.elements;
    let utf8 = ctx.data_type.is_text();
    // The frame states its size: an upper bound for the values (never over the limit).
    let stated = zstd::zstd_safe::get_frame_content_size(encoded)
        .ok()
        .flatten();
    if let Some(size) = stated.filter(|&s| s <= ctx.max_bytes as u64)
        && let Some(array) = decode_blocks(encoded, size as usize, ctx)?
    {
        return Ok(array);
    }
    let content = stated.unwrap_or(0);
    let max_values = (content.saturating_sub(4 + 4 * n as u64) as usize).min(ctx.max_bytes);
    let limit = ctx.max_bytes;
    match ctx.string_type {
        StringType::Utf8 => stream(
            encoded,
            n,
            limit,
            CopyBuilder::<i32>::with_capacity(n, max_values, ctx.recycler),
        )?
        .finish(utf8),
        StringType::LargeUtf8 => stream(
            encoded,
            n,
            limit,
            CopyBuilder::<i64>::with_capacity(n, max_values, ctx.recycler),
        )?
        .finish(utf8),
        StringType::Utf8View => {
            let views = InlineViewsBuilder::with_capacity(n, max_values, utf8, ctx.recycler);
            stream(encoded, n, limit, views)?.finish()
        }
    }
}

/// [`decode_zstd`] for a frame that states its `size` (within the limit): zstd
/// decompresses it block by block into this thread's scratch buffer (no window of
/// its own, no copy out of it), and each block's elements are parsed while it is
/// in cache, their values copied out (views: those over 12 bytes). `None`:
/// `encoded` holds more than one frame (the streaming path reads them all).
fn decode_blocks(
    encoded: &[u8],
    size: usize,
    ctx: &DecodeContext,
) -> Result<Option<ArrayRef>, ChunkError> {
    let n = ctx.elements;
    let min_len = 4u64 + 4 * n as u64;
    if (size as u64) < min_len {
        return Err(ChunkError::Truncated {
            what: "element lengths",
            needed: min_len,
            available: size as u64,
        });
    }
    let max_values = size - min_len as usize;
    let utf8 = ctx.data_type.is_text();
    if ctx.string_type == StringType::Utf8View
        && let Some(recycler) = ctx.recycler
        && size <= i32::MAX as usize
    {
        // Views point into the decoded chunk: no value is copied. (Its buffer
        // must come from the recycler: a new one per chunk measured slower than
        // copying the values, for its page faults.)
        let mut chunk = recycler.take(size);
        let mut views = ChunkViewsBuilder::with_capacity(n, utf8, ctx.recycler);
        let push = |filled: &[u8], start, len, ascii| views.push(filled, start, len, ascii);
        if parse_blocks(encoded, &mut chunk, n, ctx.wanted, push)?.is_none() {
            recycler.give(chunk);
            return Ok(None);
        }
        return views.finish(chunk).map(Some);
    }
    with_scratch(size, |chunk| match ctx.string_type {
        StringType::Utf8View => {
            let mut views = InlineViewsBuilder::with_capacity(n, max_values, utf8, ctx.recycler);
            let push = |filled: &[u8], start: usize, len, ascii| {
                views.push_framed(&filled[start - 4..], len, ascii)
            };
            if parse_blocks(encoded, chunk, n, ctx.wanted, push)?.is_none() {
                return Ok(None);
            }
            views.finish().map(Some)
        }
        StringType::Utf8 => copy_blocks::<i32>(encoded, chunk, max_values, ctx),
        StringType::LargeUtf8 => copy_blocks::<i64>(encoded, chunk, max_values, ctx),
    })
}

/// [`decode_blocks`] to offsets and values copied out of the decoded chunk.
fn copy_blocks<O: OffsetSizeTrait>(
    encoded: &[u8],
    chunk: &mut MutableBuffer,
    max_values: usize,
    ctx: &DecodeContext,
) -> Result<Option<ArrayRef>, ChunkError> {
    let utf8 = ctx.data_type.is_text();
    let mut out = CopyBuilder::<O>::with_capacity(ctx.elements, max_values, ctx.recycler);
    let push = |filled: &[u8], start: usize, len, _| out.push_prefix(&filled[start..], len);
    let Some(ascii) = parse_blocks(encoded, chunk, ctx.elements, ctx.wanted, push)? else {
        return Ok(None);
    };
    // SAFETY: with `ascii`, every byte zstd wrote was ASCII (each block checked
    // as it came), and the values were copied from them.
    unsafe { out.finish_checked(utf8, utf8 && !ascii) }.map(Some)
}

/// Decompress the one frame `encoded` into `chunk` block by block and call
/// `push(chunk so far, start, len, ascii)` for each of its first `wanted` (of
/// `n`) elements as soon as it is whole: its value is `chunk[start..start +
/// len]`; `ascii`: every byte of it is ASCII (its blocks were). With `wanted`
/// short of `n`, decompression stops once they are whole (the rest of the frame
/// is neither decompressed nor checked). Returns whether the bytes decompressed
/// were all ASCII, or `None` when `encoded` holds more frames (nothing is
/// checked then).
fn parse_blocks(
    encoded: &[u8],
    chunk: &mut MutableBuffer,
    n: usize,
    wanted: usize,
    mut push: impl FnMut(&[u8], usize, usize, bool) -> Result<(), ChunkError>,
) -> Result<Option<bool>, ChunkError> {
    let mut elements = Framed::new(n, wanted);
    // Values that start before this may hold a byte of a block that was not
    // all ASCII.
    let mut dirty_until = 0;
    let mut seen = 0;
    let read = super::zstd::decompress_blocks(encoded, chunk, |filled| {
        if !filled[seen..].is_ascii() {
            dirty_until = filled.len();
        }
        seen = filled.len();
        elements.parse(filled, |start, len| {
            push(filled, start, len, start >= dirty_until)
        })?;
        Ok(!elements.stops())
    })?;
    match read {
        // Stopped with the elements wanted.
        None => {}
        Some(read) if read != encoded.len() => return Ok(None),
        Some(_) => elements.finish(chunk.len())?,
    }
    Ok(Some(dirty_until == 0))
}

thread_local! {
    /// This thread's buffer for [`decode_blocks`], kept between chunks (a new
    /// one per chunk was page faults on every chunk), unless over [`KEEP_SCRATCH`].
    static SCRATCH: RefCell<MutableBuffer> = RefCell::new(MutableBuffer::new(0));
}

/// The largest scratch buffer a thread keeps.
const KEEP_SCRATCH: usize = 64 << 20;

/// Run `f` with this thread's scratch buffer, empty, with room for `size` bytes
/// (a nested call, none today, gets one of its own).
fn with_scratch<R>(size: usize, f: impl FnOnce(&mut MutableBuffer) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.clear();
            if scratch.capacity() < size {
                // Chunks of one array differ a little in size: room for the
                // next one's too, so that it is not a new allocation either.
                *scratch = MutableBuffer::with_capacity(size.saturating_add(size / 8));
            }
            let result = f(&mut scratch);
            if scratch.capacity() > KEEP_SCRATCH {
                *scratch = MutableBuffer::new(0);
            }
            result
        }
        Err(_) => f(&mut MutableBuffer::with_capacity(size)),
    })
}

/// Parses `| u32 count | (u32 len | value)* |` out of a buffer that grows:
/// each call takes the elements that are whole so far, up to the first `wanted`.
struct Framed {
    n: usize,
    wanted: usize,
    counted: bool,
    /// Where the next element's length starts.
    pos: usize,
    done: usize,
}

impl Framed {
    fn new(n: usize, wanted: usize) -> Self {
        Self {
            n,
            wanted: wanted.min(n),
            counted: false,
            pos: 0,
            done: 0,
        }
    }

    /// Call `push(start, len)` for each element of `data` (the buffer so far)
    /// not yet taken and now whole: its value is `data[start..start + len]`.
    #[inline]
    fn parse(
        &mut self,
        data: &[u8],
        mut push: impl FnMut(usize, usize) -> Result<(), ChunkError>,
    ) -> Result<(), ChunkError> {
        if !self.counted {
            let Some(count) = data.first_chunk::<4>() else {
                return Ok(());
            };
            let count = u32::from_le_bytes(*count) as usize;
            if count != self.n {
                return Err(ChunkError::CountMismatch {
                    expected: self.n as u64,
                    found: count as u64,
                });
            }
            self.counted = true;
            self.pos = 4;
        }
        let (mut pos, mut done) = (self.pos, self.done);
        while done < self.wanted {
            let Some(len) = data.get(pos..).and_then(|d| d.first_chunk::<4>()) else {
                break;
            };
            let len = u32::from_le_bytes(*len) as usize;
            let start = pos + 4;
            if data.len() - start < len {
                break;
            }
            push(start, len)?;
            pos = start + len;
            done += 1;
        }
        self.pos = pos;
        self.done = done;
        Ok(())
    }

    /// Whether the elements wanted, fewer than all, are all taken: the rest of
    /// the chunk is not needed.
    fn stops(&self) -> bool {
        self.wanted < self.n && self.done == self.wanted
    }

    /// Every element was there, and nothing after them (`total`: the bytes).
    fn finish(&self, total: usize) -> Result<(), ChunkError> {
        if !self.counted {
            return Err(ChunkError::Truncated {
                what: "element count",
                needed: 4,
                available: total as u64,
            });
        }
        if self.done < self.n {
            return Err(ChunkError::Truncated {
                what: "element value",
                needed: (self.pos + 4) as u64,
                available: total as u64,
            });
        }
        check_end(self.pos, total)
    }
}

/// Where [`stream`] puts the elements it parses.
trait Elements {
    /// Whether [`Elements::push_framed`] wants to know that a window is ASCII.
    const WANTS_ASCII: bool;
    /// Append the element `| u32 len | value |` at the start of `framed` (which
    /// holds all of it); `ascii`: the window holding it is all ASCII.
    fn push_framed(&mut self, framed: &[u8], len: usize, ascii: bool) -> Result<(), ChunkError>;
    /// Append a piece of an element that straddles windows.
    fn extend(&mut self, piece: &[u8]);
    /// Close the element built from pieces.
    fn end_element(&mut self) -> Result<(), ChunkError>;
}

impl<O: OffsetSizeTrait> Elements for CopyBuilder<O> {
    // The values are UTF-8 checked all at once by `finish`.
    const WANTS_ASCII: bool = false;

    #[inline]
    fn push_framed(&mut self, framed: &[u8], len: usize, _: bool) -> Result<(), ChunkError> {
        self.push_prefix(&framed[4..], len)
    }

    #[inline]
    fn extend(&mut self, piece: &[u8]) {
        CopyBuilder::extend(self, piece)
    }

    fn end_element(&mut self) -> Result<(), ChunkError> {
        CopyBuilder::end_element(self)
    }
}

impl Elements for InlineViewsBuilder {
    const WANTS_ASCII: bool = true;

    #[inline]
    fn push_framed(&mut self, framed: &[u8], len: usize, ascii: bool) -> Result<(), ChunkError> {
        InlineViewsBuilder::push_framed(self, framed, len, ascii)
    }

    #[inline]
    fn extend(&mut self, piece: &[u8]) {
        InlineViewsBuilder::extend(self, piece)
    }

    fn end_element(&mut self) -> Result<(), ChunkError> {
        InlineViewsBuilder::end_element(self)
    }
}

/// Whether [`decode_zstd`] is the faster way to decode this chunk: always for
/// offsets-based types; for views, unless the values are long. Long values (over
/// 256 bytes per element on average, by the zstd frame's stated size) stay in the
/// decompressed chunk for views to point into rather than copied: on W4 of
/// `benches/compare` (1-10 KB strings) both paths measured about 1.2x the
/// decompression bound, and this one holds no second copy of the values.
pub(crate) fn fuse_zstd(encoded: &[u8], ctx: &DecodeContext) -> bool {
    if ctx.string_type != StringType::Utf8View {
        return true;
    }
    match zstd::zstd_safe::get_frame_content_size(encoded) {
        Ok(Some(size)) => size / (ctx.elements.max(1) as u64) <= LONG_VALUE,
        _ => true, // unknown size: the fused path also bounds memory best
    }
}

/// See [`fuse_zstd`].
const LONG_VALUE: u64 = 256;

/// Window of decompressed bytes parsed at a time (fits in L2).
const WINDOW: usize = 128 << 10;

/// Decompress `encoded` with this thread's zstd context (kept between chunks:
/// see `codec/zstd.rs`) and parse the elements into `out`.
fn stream<E: Elements>(
    encoded: &[u8],
    n: usize,
    max_bytes: usize,
    out: E,
) -> Result<E, ChunkError> {
    super::zstd::with_dctx(|dctx| {
        with_window(|window| {
            let decoder = zstd::stream::read::Decoder::with_context(encoded, dctx);
            parse_stream(decoder, window, n, max_bytes, out)
        })
    })
}

thread_local! {
    /// This thread's window for [`stream`], kept between chunks as its zstd context
    /// is (a fresh one per chunk was a new, page-faulted allocation every time).
    static WINDOW_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's window of [`WINDOW`] bytes (a nested call, none
/// today, gets one of its own).
fn with_window<R>(f: impl FnOnce(&mut [u8]) -> R) -> R {
    WINDOW_BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut window) => {
            window.resize(WINDOW, 0);
            f(&mut window)
        }
        Err(_) => f(&mut vec![0u8; WINDOW]),
    })
}

/// [`stream`]'s parser, reading the decompressed chunk from `decoder` through
/// `window`.
fn parse_stream<E: Elements>(
    mut decoder: impl std::io::Read,
    window: &mut [u8],
    n: usize,
    max_bytes: usize,
    mut out: E,
) -> Result<E, ChunkError> {
    const CODEC: &str = "zstd";
    let mut int = [0u8; 4]; // a u32 (count or length) that may straddle windows
    let mut have = 0usize;
    let mut count_read = false;
    let mut in_value: Option<usize> = None; // bytes of the current value still to come
    let mut done = 0usize;
    let mut total = 0usize;
    loop {
        let got = match decoder.read(window) {
            Ok(0) => break,
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(ChunkError::Decompress {
                    codec: CODEC,
                    message: e.to_string(),
                });
            }
        };
        total += got;
        if total > max_bytes {
            return Err(ChunkError::TooLarge {
                codec: CODEC,
                limit: max_bytes as u64,
            });
        }
        let mut buf = &window[..got];
        let ascii = E::WANTS_ASCII && buf.is_ascii();
        while !buf.is_empty() {
            if let Some(rest) = in_value {
                let take = rest.min(buf.len());
                out.extend(&buf[..take]);
                buf = &buf[take..];
                if take == rest {
                    out.end_element()?;
                    done += 1;
                    in_value = None;
                } else {
                    in_value = Some(rest - take);
                }
                continue;
            }
            if count_read && done == n {
                return Err(ChunkError::TrailingBytes {
                    extra: buf.len() as u64,
                });
            }
            // The hot path: whole length-prefixed values inside this window.
            if count_read && have == 0 {
                while buf.len() >= 4 && done < n {
                    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    if buf.len() - 4 < len {
                        break;
                    }
                    out.push_framed(buf, len, ascii)?;
                    done += 1;
                    buf = &buf[4 + len..];
                }
                if buf.is_empty() || done == n {
                    continue;
                }
            }
            // A u32 that may straddle windows.
            let take = (4 - have).min(buf.len());
            int[have..have + take].copy_from_slice(&buf[..take]);
            have += take;
            buf = &buf[take..];
            if have < 4 {
                continue;
            }
            have = 0;
            let v = u32::from_le_bytes(int) as usize;
            if !count_read {
                if v != n {
                    return Err(ChunkError::CountMismatch {
                        expected: n as u64,
                        found: v as u64,
                    });
                }
                count_read = true;
            } else if v == 0 {
                out.end_element()?;
                done += 1;
            } else {
                in_value = Some(v);
            }
        }
    }
    if !count_read {
        return Err(ChunkError::Truncated {
            what: "element count",
            needed: 4,
            available: total as u64,
        });
    }
    if done < n {
        let what = if in_value.is_some() {
            "element value"
        } else {
            "element length"
        };
        let needed = in_value.unwrap_or(4 - have) as u64;
        return Err(ChunkError::Truncated {
            what,
            needed,
            available: 0,
        });
    }
    Ok(out)
}

/// Encode `array`'s values and `pad` empty values as `| u32 count | (u32 len, bytes)* |`.
pub(crate) fn encode(array: &dyn Array, pad: usize) -> Result<Vec<u8>, EncodeError> {
    let n = array.len() + pad;
    let count = u32::try_from(n).map_err(|_| EncodeError::TooLarge {
        what: "elements in a vlen chunk (a u32 count)",
        size: n as u64,
        limit: u32::MAX.into(),
    })?;
    let mut out = Vec::with_capacity(4 + 4 * n + value_bytes(array));
    out.extend_from_slice(&count.to_le_bytes());
    let mut result = Ok(());
    for_each_value(array, |v| match u32::try_from(v.len()) {
        Ok(len) => {
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(v);
        }
        Err(_) => {
            result = Err(EncodeError::TooLarge {
                what: "bytes in one vlen value (a u32 length)",
                size: v.len() as u64,
                limit: u32::MAX.into(),
            })
        }
    })?;
    result?;
    for _ in 0..pad {
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
#[path = "vlen_fused_tests.rs"]
mod fused_tests;
