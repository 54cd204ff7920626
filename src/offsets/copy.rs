//! Arrays built by copying element values into a new buffer: [`CopyBuilder`] (the
//! interleaved `vlen-*` layouts) and [`ValuesBuilder`] (its choice by Arrow type).

use std::marker::PhantomData;
use std::sync::Arc;

use arrow_array::types::{GenericBinaryType, GenericStringType};
use arrow_array::{ArrayRef, OffsetSizeTrait};
use arrow_buffer::{Buffer, MutableBuffer, ScalarBuffer};

use super::{OffsetKind, RawOffsets, byte_array, check_utf8, from_offsets};
use crate::error::ChunkError;
use crate::metadata::StringType;
use crate::recycle::{Recycler, freeze, take};

/// The size of the fixed block [`CopyBuffer::extend_prefix`] copies.
pub(crate) const SHORT: usize = 32;

/// A growing buffer of copied values. Its spare capacity is not zeroed first (no
/// `memset` of memory about to be overwritten). A short value is copied as one
/// fixed-size block, a few vector moves, instead of a variable-length `memcpy`.
pub(crate) struct CopyBuffer {
    bytes: MutableBuffer,
    recycler: Option<Arc<Recycler>>,
}

impl CopyBuffer {
    /// A buffer sized for `max_values` bytes (the caller's bound from the chunk
    /// size, so this never over-allocates), from `recycler` if there is one; it
    /// grows if more arrive.
    pub(crate) fn with_capacity(max_values: usize, recycler: Option<&Arc<Recycler>>) -> Self {
        Self {
            bytes: take(recycler, max_values.saturating_add(SHORT)),
            recycler: recycler.cloned(),
        }
    }

    /// Bytes of values so far.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The values so far.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// Append `bytes`.
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Append `source[..len]` (`source` holds at least `len` bytes). When the value
    /// is at most [`SHORT`] bytes and `source` has [`SHORT`] bytes, the whole block
    /// is copied and the bytes past `len` cut off again; the next value overwrites
    /// them.
    #[inline]
    pub(crate) fn extend_prefix(&mut self, source: &[u8], len: usize) {
        match source.first_chunk::<SHORT>() {
            Some(block) if len <= SHORT => {
                let end = self.bytes.len() + len;
                self.bytes.extend_from_slice(block);
                self.bytes.truncate(end);
            }
            _ => self.extend(&source[..len]),
        }
    }

    /// Drop the values from byte `len` on.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.bytes.truncate(len);
    }

    /// The values as one buffer.
    pub(crate) fn into_buffer(self) -> Buffer {
        freeze(self.recycler.as_ref(), self.bytes)
    }
}

/// Builds an offsets-and-values array by copying element values into one new
/// values buffer (the interleaved vlen-utf8 path: one copy of the values).
pub(crate) struct CopyBuilder<O: OffsetSizeTrait> {
    /// `O`s, the first 0.
    offsets: MutableBuffer,
    values: CopyBuffer,
    offset: PhantomData<O>,
}

impl<O: OffsetSizeTrait> CopyBuilder<O> {
    /// A builder for `n` elements with at most `max_values` bytes of values (the
    /// caller's bound from the chunk size, so this never over-allocates), its
    /// buffers from `recycler` if there is one.
    pub(crate) fn with_capacity(
        n: usize,
        max_values: usize,
        recycler: Option<&Arc<Recycler>>,
    ) -> Self {
        let width = std::mem::size_of::<O>();
        let mut offsets = take(recycler, n.saturating_add(1).saturating_mul(width));
        offsets.push(O::usize_as(0));
        Self {
            offsets,
            values: CopyBuffer::with_capacity(max_values, recycler),
            offset: PhantomData,
        }
    }

    /// Append one element's bytes.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), ChunkError> {
        self.values.extend(bytes);
        self.end_element()
    }

    /// Append one element: `source[..len]` (see [`CopyBuffer::extend_prefix`]).
    #[inline]
    pub(crate) fn push_prefix(&mut self, source: &[u8], len: usize) -> Result<(), ChunkError> {
        self.values.extend_prefix(source, len);
        self.end_element()
    }

    /// Append bytes to the element being built (it may arrive in pieces).
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.values.extend(bytes);
    }

    /// Close the element being built.
    #[inline]
    pub(crate) fn end_element(&mut self) -> Result<(), ChunkError> {
        let used = self.values.len();
        let end =
            O::from_usize(used).ok_or_else(|| ChunkError::OffsetOverflow { bytes: used as u64 })?;
        self.offsets.push(end);
        Ok(())
    }

    /// The elements so far.
    fn len(&self) -> usize {
        self.offsets.len() / std::mem::size_of::<O>() - 1
    }

    /// The offsets and the values buffer.
    fn take_values(self) -> (Buffer, Buffer) {
        let offsets = freeze(self.values.recycler.as_ref(), self.offsets);
        (offsets, self.values.into_buffer())
    }

    /// The finished array as views over the copied values buffer.
    pub(crate) fn finish_views(self, utf8: bool) -> Result<ArrayRef, ChunkError> {
        let n = self.len();
        let kind = if O::IS_LARGE {
            OffsetKind::I64
        } else {
            OffsetKind::I32
        };
        let (offsets, values) = self.take_values();
        let raw = RawOffsets::new(offsets, kind, n)?;
        from_offsets(raw, values, utf8, StringType::Utf8View)
    }

    /// The finished array; strings are UTF-8 checked here, once for all values.
    pub(crate) fn finish(self, utf8: bool) -> Result<ArrayRef, ChunkError> {
        // SAFETY: `check` is true.
        unsafe { self.finish_checked(utf8, true) }
    }

    /// The finished array; strings (`utf8`) are UTF-8 checked here when
    /// `check`.
    ///
    /// # Safety
    /// With `check` false, every byte of every value pushed must be ASCII (the
    /// caller saw all of them, in cache, on their way in).
    pub(crate) unsafe fn finish_checked(
        self,
        utf8: bool,
        check: bool,
    ) -> Result<ArrayRef, ChunkError> {
        let n = self.len();
        let (offsets, values) = self.take_values();
        // A MutableBuffer's memory is aligned for any offset type.
        let offsets = ScalarBuffer::<O>::new(offsets, 0, n + 1);
        if utf8 {
            let last = values.len() as u64;
            if !check {
                // The caller vouches that every value byte is ASCII (this
                // function's `# Safety`): valid UTF-8, each offset a boundary.
                return Ok(byte_array::<GenericStringType<O>>(offsets, values));
            }
            check_utf8(
                offsets.iter().map(|o| o.as_usize() as u64),
                values.as_slice(),
                0,
                last,
            )?;
            Ok(byte_array::<GenericStringType<O>>(offsets, values))
        } else {
            Ok(byte_array::<GenericBinaryType<O>>(offsets, values))
        }
    }
}

/// A [`CopyBuilder`] for whichever Arrow layout the caller asked for. Views are
/// built over the newly copied values buffer.
pub(crate) enum ValuesBuilder {
    Small(CopyBuilder<i32>),
    Large(CopyBuilder<i64>),
    View(CopyBuilder<i64>),
}

impl ValuesBuilder {
    /// A builder for `n` elements and at most `max_values` bytes of values.
    pub(crate) fn new(
        target: StringType,
        n: usize,
        max_values: usize,
        recycler: Option<&Arc<Recycler>>,
    ) -> Self {
        match target {
            StringType::Utf8 => Self::Small(CopyBuilder::with_capacity(n, max_values, recycler)),
            StringType::LargeUtf8 => {
                Self::Large(CopyBuilder::with_capacity(n, max_values, recycler))
            }
            StringType::Utf8View => Self::View(CopyBuilder::with_capacity(n, max_values, recycler)),
        }
    }

    /// Append one element.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), ChunkError> {
        match self {
            Self::Small(b) => b.push(bytes),
            Self::Large(b) | Self::View(b) => b.push(bytes),
        }
    }

    /// The finished array (strings UTF-8 checked).
    pub(crate) fn finish(self, utf8: bool) -> Result<ArrayRef, ChunkError> {
        match self {
            Self::Small(b) => b.finish(utf8),
            Self::Large(b) => b.finish(utf8),
            Self::View(b) => b.finish_views(utf8),
        }
    }
}
