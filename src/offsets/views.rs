//! View arrays over untrusted element ranges: [`ViewsBuilder`] points views into
//! one existing buffer (the decoded chunk); [`InlineViewsBuilder`] inlines short
//! values and copies only the longer ones.

use arrow_array::ArrayRef;
use arrow_array::GenericByteViewArray;
use arrow_array::builder::make_view;
use arrow_array::types::{BinaryViewType, ByteViewType, StringViewType};
use arrow_buffer::{Buffer, MutableBuffer, ScalarBuffer};
use std::sync::Arc;

use super::copy::CopyBuffer;
use crate::error::ChunkError;
use crate::recycle::{Recycler, freeze, take};

/// The views of `n` elements so far as one buffer: from `recycler` if there is one.
fn views_buffer(recycler: Option<&Arc<Recycler>>, n: usize) -> MutableBuffer {
    take(recycler, n.saturating_mul(std::mem::size_of::<u128>()))
}

/// How many views `views` (u128s) holds.
fn view_count(views: &MutableBuffer) -> usize {
    views.len() / std::mem::size_of::<u128>()
}

/// The view of a value of at most [`INLINE`] bytes from the 16 bytes of its
/// frame, `| len (u32 LE) | value ... |` read little-endian: the length prefix is
/// the view's length field, the next 12 bytes its inline data, of which the
/// value's `len` are kept and the rest zeroed.
fn inline_from_frame(block: u128, len: usize) -> u128 {
    block & (u128::MAX >> (8 * (INLINE - len)))
}

/// `views` (u128s) as the views of an array.
fn finish_views(recycler: Option<&Arc<Recycler>>, views: MutableBuffer) -> ScalarBuffer<u128> {
    let n = view_count(&views);
    // A MutableBuffer's memory is aligned for u128.
    ScalarBuffer::new(freeze(recycler, views), 0, n)
}

/// Builds a view array over one data buffer (the decoded chunk), from element
/// ranges that the caller reads from untrusted bytes.
pub(crate) struct ViewsBuilder {
    data: Buffer,
    /// u128s.
    views: MutableBuffer,
    recycler: Option<Arc<Recycler>>,
}

impl ViewsBuilder {
    /// A builder over `data` for about `n` elements.
    ///
    /// # Errors
    /// [`ChunkError::OffsetOverflow`] when `data` is over `i32::MAX` bytes: the
    /// Arrow format gives view offsets 32 bits (signed, for other implementations).
    pub(crate) fn new(
        data: Buffer,
        n: usize,
        recycler: Option<&Arc<Recycler>>,
    ) -> Result<Self, ChunkError> {
        if data.len() > i32::MAX as usize {
            return Err(ChunkError::OffsetOverflow {
                bytes: data.len() as u64,
            });
        }
        Ok(Self {
            data,
            views: views_buffer(recycler, n),
            recycler: recycler.cloned(),
        })
    }

    /// Elements so far.
    fn len(&self) -> usize {
        view_count(&self.views)
    }

    /// Add element `data[start..start + len]`, which the caller has bounds-checked.
    #[inline]
    pub(crate) fn push_checked(&mut self, start: u32, len: u32) {
        let bytes = &self.data.as_slice()[start as usize..(start + len) as usize];
        self.views.push(make_view(bytes, 0, start));
    }

    /// Add element `data[start..start + len]`, checking bounds and, when `utf8`,
    /// that the element is UTF-8 (a caller that checked the whole buffer passes
    /// `false`).
    #[inline]
    pub(crate) fn push(&mut self, start: usize, len: usize, utf8: bool) -> Result<(), ChunkError> {
        let element = self.len();
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| ChunkError::Truncated {
                what: "element value",
                needed: (start as u64).saturating_add(len as u64),
                available: self.data.len() as u64,
            })?;
        let bytes = &self.data.as_slice()[start..end];
        if utf8 && std::str::from_utf8(bytes).is_err() {
            return Err(ChunkError::InvalidUtf8 { element });
        }
        self.views.push(make_view(bytes, 0, start as u32));
        Ok(())
    }

    /// The finished array; its one data buffer is the chunk buffer it points into.
    pub(crate) fn finish(self, utf8: bool) -> ArrayRef {
        let views = finish_views(self.recycler.as_ref(), self.views);
        view_array(views, self.data, utf8)
    }
}

/// A string (`utf8`) or binary view array over one data buffer, from views its
/// builder checked (see the SAFETY comment).
fn view_array(views: ScalarBuffer<u128>, data: Buffer, utf8: bool) -> ArrayRef {
    if utf8 {
        unchecked_view_array::<StringViewType>(views, data)
    } else {
        unchecked_view_array::<BinaryViewType>(views, data)
    }
}

fn unchecked_view_array<T: ByteViewType + ?Sized>(
    views: ScalarBuffer<u128>,
    data: Buffer,
) -> ArrayRef {
    // SAFETY: the builders make each view with `make_view`, or with the same
    // fields from the bytes at the value's length prefix (an inline value's
    // bytes masked to its length; a longer one's length, 4-byte prefix, buffer
    // 0 and offset), from bytes that were bounds-checked: `ViewsBuilder` and
    // `ChunkViewsBuilder` from a slice of `data` (for the latter, a value over
    // 12 bytes; `data` is empty when no view points into it);
    // `InlineViewsBuilder` from a value it then copied into `data` at the
    // view's offset when longer than 12 bytes. For string types each value was
    // checked to be UTF-8 on its own or is part of bytes checked as a whole
    // (all ASCII, or valid UTF-8 with every offset on a character boundary).
    // Every view names buffer 0 = `data`, at an offset below `data.len()` <=
    // i32::MAX. That is everything `try_new` validates.
    Arc::new(unsafe { GenericByteViewArray::<T>::new_unchecked(views, vec![data], None) })
}

/// Builds a view array over a decoded chunk while it is being filled (the fused
/// `vlen-*` + zstd path, the chunk in a recycled buffer): a value of at most 12
/// bytes is inlined in its view, a longer one is pointed at where it lies in the
/// chunk. No value is copied; the array keeps the chunk alive, and no more.
pub(crate) struct ChunkViewsBuilder {
    /// u128s.
    views: MutableBuffer,
    /// Whether a view points into the chunk (a value over 12 bytes).
    long: bool,
    utf8: bool,
    recycler: Option<Arc<Recycler>>,
}

impl ChunkViewsBuilder {
    /// A builder for `n` elements; `utf8` as for [`InlineViewsBuilder`].
    pub(crate) fn with_capacity(n: usize, utf8: bool, recycler: Option<&Arc<Recycler>>) -> Self {
        Self {
            views: views_buffer(recycler, n),
            long: false,
            utf8,
            recycler: recycler.cloned(),
        }
    }

    /// Append the element whose value is `chunk[start..start + len]`, after its
    /// 4-byte length at `start - 4` (the caller parsed both out of `chunk`, the
    /// chunk so far: `4 <= start`, `start + len <= chunk.len()`). `ascii`: every
    /// byte of the value is ASCII (no UTF-8 check needed).
    #[inline]
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        start: usize,
        len: usize,
        ascii: bool,
    ) -> Result<(), ChunkError> {
        // Every view must lie in the chunk (the array is made unchecked). (No
        // overflow: `start` is within a slice and `len` a u32.)
        if start + len > chunk.len() {
            return Err(ChunkError::Truncated {
                what: "element value",
                needed: (start + len) as u64,
                available: chunk.len() as u64,
            });
        }
        // The value itself is only looked at to check it, or when too near the
        // end for a 16-byte load.
        let value = || &chunk[start..start + len];
        if self.utf8 && !ascii && std::str::from_utf8(value()).is_err() {
            return Err(ChunkError::InvalidUtf8 {
                element: view_count(&self.views),
            });
        }
        // In range: the chunk is at most i32::MAX bytes (`finish` checks).
        let offset = start as u32;
        let view = match chunk[start - 4..].first_chunk::<16>() {
            // The 16 bytes from the length prefix, `| len | value[..12] |`: an
            // inline value's view; a longer one keeps the length and its 4-byte
            // prefix, then buffer 0 and its offset.
            Some(block) => {
                let block = u128::from_le_bytes(*block);
                if len <= INLINE {
                    inline_from_frame(block, len)
                } else {
                    self.long = true;
                    (block & u128::from(u64::MAX)) | (u128::from(offset) << 96)
                }
            }
            None if len <= INLINE => make_view(value(), 0, 0),
            None => {
                self.long = true;
                make_view(value(), 0, offset)
            }
        };
        self.views.push(view);
        Ok(())
    }

    /// The finished array over `chunk`, the buffer the elements were parsed from
    /// (given back to the recycler at once when every value was inlined).
    ///
    /// # Errors
    /// [`ChunkError::OffsetOverflow`] when `chunk` is over `i32::MAX` bytes.
    pub(crate) fn finish(self, chunk: MutableBuffer) -> Result<ArrayRef, ChunkError> {
        if chunk.len() > i32::MAX as usize {
            return Err(ChunkError::OffsetOverflow {
                bytes: chunk.len() as u64,
            });
        }
        let recycler = self.recycler.as_ref();
        let data = if self.long {
            freeze(recycler, chunk)
        } else {
            if let Some(recycler) = recycler {
                recycler.give(chunk);
            }
            Buffer::from(MutableBuffer::new(0))
        };
        let views = finish_views(recycler, self.views);
        Ok(view_array(views, data, self.utf8))
    }
}

/// Builds a view array while values stream past (the fused `vlen-*` + zstd path):
/// a value of at most 12 bytes is inlined in its view, a longer one is copied into
/// one new data buffer that its view points into.
pub(crate) struct InlineViewsBuilder {
    /// u128s.
    views: MutableBuffer,
    data: CopyBuffer,
    /// Where the value being assembled from pieces starts in `data`.
    element_start: usize,
    utf8: bool,
    recycler: Option<Arc<Recycler>>,
}

/// The longest value a view holds inline.
const INLINE: usize = 12;

impl InlineViewsBuilder {
    /// A builder for `n` elements with at most `max_values` bytes of values;
    /// `utf8` selects strings (each value is checked unless its caller vouches for
    /// it) or binary.
    pub(crate) fn with_capacity(
        n: usize,
        max_values: usize,
        utf8: bool,
        recycler: Option<&Arc<Recycler>>,
    ) -> Self {
        Self {
            views: views_buffer(recycler, n),
            data: CopyBuffer::with_capacity(max_values, recycler),
            element_start: 0,
            utf8,
            recycler: recycler.cloned(),
        }
    }

    /// Elements so far.
    fn len(&self) -> usize {
        view_count(&self.views)
    }

    /// Append the element framed as `| u32 len (LE) | value |` at the start of
    /// `framed`, which holds at least `4 + len` bytes. `ascii` says the caller
    /// found every byte of `framed` to be ASCII, so the value needs no UTF-8 check.
    #[inline]
    pub(crate) fn push_framed(
        &mut self,
        framed: &[u8],
        len: usize,
        ascii: bool,
    ) -> Result<(), ChunkError> {
        let value = &framed[4..4 + len];
        if self.utf8 && !ascii && std::str::from_utf8(value).is_err() {
            return Err(ChunkError::InvalidUtf8 {
                element: self.len(),
            });
        }
        let view = match framed.first_chunk::<16>() {
            Some(block) if len <= INLINE => inline_from_frame(u128::from_le_bytes(*block), len),
            _ if len <= INLINE => make_view(value, 0, 0),
            _ => {
                let start = self.data.len();
                self.data.extend_prefix(&framed[4..], len);
                make_view(value, 0, start as u32)
            }
        };
        self.views.push(view);
        self.element_start = self.data.len();
        Ok(())
    }

    /// Append a piece of the element being assembled (it may arrive in pieces).
    #[inline]
    pub(crate) fn extend(&mut self, piece: &[u8]) {
        self.data.extend(piece);
    }

    /// Close the element assembled by [`Self::extend`].
    pub(crate) fn end_element(&mut self) -> Result<(), ChunkError> {
        let start = self.element_start;
        let value = &self.data.as_slice()[start..];
        if self.utf8 && std::str::from_utf8(value).is_err() {
            return Err(ChunkError::InvalidUtf8 {
                element: self.len(),
            });
        }
        let view = make_view(value, 0, start as u32);
        if value.len() <= INLINE {
            self.data.truncate(start); // inlined: the copy is not needed
        }
        self.views.push(view);
        self.element_start = self.data.len();
        Ok(())
    }

    /// The finished array.
    ///
    /// # Errors
    /// [`ChunkError::OffsetOverflow`] when the copied values reach past `i32::MAX`
    /// bytes (view offsets are 32 bits; their views were made with truncated
    /// offsets and are dropped here).
    pub(crate) fn finish(self) -> Result<ArrayRef, ChunkError> {
        let data = self.data.into_buffer();
        if data.len() > i32::MAX as usize {
            return Err(ChunkError::OffsetOverflow {
                bytes: data.len() as u64,
            });
        }
        let views = finish_views(self.recycler.as_ref(), self.views);
        Ok(view_array(views, data, self.utf8))
    }
}
