//! The only place where untrusted offsets become Arrow arrays.
//!
//! Every variable-length layout ends here. Offsets read from a chunk are checked
//! (right count, non-decreasing, in bounds, fit the target offset width), strings
//! are checked to be UTF-8 at every element boundary, and only then are the
//! `unsafe` unchecked arrow-rs constructors called. Nothing here panics on bad
//! input: every problem is a [`ChunkError`].
//!
//! Offsets-based layouts (ZEP0007, `zarrs.vlen`) arrive as [`RawOffsets`] plus one
//! values buffer:
//!
//! ```text
//!  offsets: [0, 3, 3, 8]          values: "thequick"
//!            │  │  │  └ end of element 2
//!            │  └──┴ element 1 is empty
//!            └ element 0 = values[0..3] = "the"
//! ```
//!
//! Copies by target: same offset width and aligned buffer: none (offsets and values
//! are slices of the decoded chunk); other width: the offsets are converted (one
//! copy of the offsets, none of the values); views: one 16-byte view per element,
//! no copy of the values.

use std::sync::Arc;

use arrow_array::builder::make_view;
use arrow_array::types::{
    BinaryViewType, ByteArrayType, ByteViewType, GenericBinaryType, GenericStringType,
    StringViewType,
};
use arrow_array::{ArrayRef, GenericByteArray, GenericByteViewArray, OffsetSizeTrait};
use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer, OffsetBuffer, ScalarBuffer};

use crate::error::ChunkError;
use crate::metadata::StringType;

/// `n + 1` little-endian offsets of one of the widths found on disk. The buffer
/// holds exactly `(n + 1) * width` bytes (checked by [`RawOffsets::new`]).
#[derive(Debug, Clone)]
pub(crate) struct RawOffsets {
    buffer: Buffer,
    width: OffsetKind,
}

/// The integer type of stored offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OffsetKind {
    I32,
    I64,
    U32,
    U64,
}

impl OffsetKind {
    fn size(self) -> usize {
        match self {
            Self::I32 | Self::U32 => 4,
            Self::I64 | Self::U64 => 8,
        }
    }
}

impl RawOffsets {
    /// Take `buffer` as `n + 1` offsets of `width`.
    pub(crate) fn new(buffer: Buffer, width: OffsetKind, n: usize) -> Result<Self, ChunkError> {
        let needed = (n as u64 + 1) * width.size() as u64;
        if buffer.len() as u64 != needed {
            return Err(if (buffer.len() as u64) < needed {
                ChunkError::Truncated {
                    what: "offsets",
                    needed,
                    available: buffer.len() as u64,
                }
            } else {
                ChunkError::TrailingBytes {
                    extra: buffer.len() as u64 - needed,
                }
            });
        }
        Ok(Self { buffer, width })
    }

    fn len(&self) -> usize {
        self.buffer.len() / self.width.size()
    }
}

/// An offset integer as stored on disk.
trait Offset: ArrowNativeType {
    /// The offset as u64; a negative signed offset becomes u64::MAX, which every
    /// bounds check rejects.
    fn to_u64(self) -> u64;
}

impl Offset for i32 {
    fn to_u64(self) -> u64 {
        u64::try_from(self).unwrap_or(u64::MAX)
    }
}

impl Offset for i64 {
    fn to_u64(self) -> u64 {
        u64::try_from(self).unwrap_or(u64::MAX)
    }
}

impl Offset for u32 {
    fn to_u64(self) -> u64 {
        self.into()
    }
}

impl Offset for u64 {
    fn to_u64(self) -> u64 {
        self
    }
}

/// Check that `offsets` do not decrease and stay within `data_len`. Returns the
/// first and last offset.
fn check_offsets<T: Offset>(offsets: &[T], data_len: usize) -> Result<(u64, u64), ChunkError> {
    let data_len = data_len as u64;
    let mut iter = offsets.iter().map(|o| o.to_u64()).enumerate();
    let Some((_, first)) = iter.next() else {
        return Ok((0, 0));
    };
    if first > data_len {
        return Err(ChunkError::OffsetOutOfBounds {
            index: 0,
            offset: first,
            data_len,
        });
    }
    let mut prev = first;
    for (index, off) in iter {
        if off < prev {
            return Err(ChunkError::OffsetsDecrease {
                element: index - 1,
                start: prev,
                end: off,
            });
        }
        if off > data_len {
            return Err(ChunkError::OffsetOutOfBounds {
                index,
                offset: off,
                data_len,
            });
        }
        prev = off;
    }
    Ok((first, prev))
}

/// Check that the values are UTF-8 and that every offset falls on a character
/// boundary, which together make every element valid UTF-8.
fn check_utf8(
    offsets: impl Iterator<Item = u64>,
    values: &[u8],
    first: u64,
    last: u64,
) -> Result<(), ChunkError> {
    let range = &values[first as usize..last as usize];
    // All ASCII (one vectorised pass): valid, and every byte is a boundary.
    if range.is_ascii() {
        return Ok(());
    }
    if let Err(e) = std::str::from_utf8(range) {
        // Find the element that holds the bad byte.
        let bad = first + e.valid_up_to() as u64;
        let element = offsets.skip(1).position(|end| end > bad).unwrap_or(0);
        return Err(ChunkError::InvalidUtf8 { element });
    }
    for (i, off) in offsets.enumerate() {
        let off = off as usize;
        // A boundary is the end of the data or a byte that does not continue a char.
        if off < last as usize && (values[off] as i8) < -0x40 {
            return Err(ChunkError::InvalidUtf8 {
                element: i.saturating_sub(1),
            });
        }
    }
    Ok(())
}

/// View `buffer` as `len` values of `T`, copying only when it is misaligned.
pub(crate) fn aligned_scalars<T: ArrowNativeType>(buffer: Buffer, len: usize) -> ScalarBuffer<T> {
    let size = std::mem::size_of::<T>();
    let buffer = buffer.slice_with_length(0, len * size);
    if buffer.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 {
        ScalarBuffer::from(buffer)
    } else {
        let mut copy = MutableBuffer::with_capacity(len * size);
        copy.extend_from_slice(buffer.as_slice());
        ScalarBuffer::from(Buffer::from(copy))
    }
}

/// Offsets of one width converted to `O`, after [`check_offsets`]: the same buffer
/// when the widths match (every value is <= `last`, which fits `O`, so the bits of
/// an unsigned offset equal those of the signed one), else a converted copy.
fn convert_offsets<T: Offset, O: OffsetSizeTrait>(
    offsets: &ScalarBuffer<T>,
    last: u64,
) -> Result<ScalarBuffer<O>, ChunkError> {
    if O::from_usize(last as usize).is_none() || last > i64::MAX as u64 {
        return Err(ChunkError::OffsetOverflow { bytes: last });
    }
    if std::mem::size_of::<T>() == std::mem::size_of::<O>() {
        return Ok(aligned_scalars::<O>(offsets.inner().clone(), offsets.len()));
    }
    Ok(offsets
        .iter()
        .map(|o| O::usize_as(o.to_u64() as usize))
        .collect::<Vec<O>>()
        .into())
}

fn byte_array<T: ByteArrayType>(offsets: ScalarBuffer<T::Offset>, values: Buffer) -> ArrayRef {
    // SAFETY: every caller has run `check_offsets` (non-decreasing, within
    // `values`) and, for string types, `check_utf8` on these exact offsets and
    // values, which is what `GenericByteArray::try_new` would verify.
    Arc::new(unsafe {
        GenericByteArray::<T>::new_unchecked(OffsetBuffer::new_unchecked(offsets), values, None)
    })
}

/// Build the requested Arrow array from checked-on-the-way offsets and values.
///
/// `utf8` selects string types (values are UTF-8 checked); otherwise binary.
pub(crate) fn from_offsets(
    raw: RawOffsets,
    values: Buffer,
    utf8: bool,
    target: StringType,
) -> Result<ArrayRef, ChunkError> {
    let n = raw.len();
    match raw.width {
        OffsetKind::I32 => typed(aligned_scalars::<i32>(raw.buffer, n), values, utf8, target),
        OffsetKind::I64 => typed(aligned_scalars::<i64>(raw.buffer, n), values, utf8, target),
        OffsetKind::U32 => typed(aligned_scalars::<u32>(raw.buffer, n), values, utf8, target),
        OffsetKind::U64 => typed(aligned_scalars::<u64>(raw.buffer, n), values, utf8, target),
    }
}

/// [`from_offsets`] for one stored offset type: every loop is monomorphized.
fn typed<T: Offset>(
    offsets: ScalarBuffer<T>,
    values: Buffer,
    utf8: bool,
    target: StringType,
) -> Result<ArrayRef, ChunkError> {
    let (first, last) = check_offsets(&offsets, values.len())?;
    if utf8 {
        check_utf8(
            offsets.iter().map(|o| o.to_u64()),
            values.as_slice(),
            first,
            last,
        )?;
    }
    Ok(match (target, utf8) {
        (StringType::Utf8, true) => {
            byte_array::<GenericStringType<i32>>(convert_offsets(&offsets, last)?, values)
        }
        (StringType::Utf8, false) => {
            byte_array::<GenericBinaryType<i32>>(convert_offsets(&offsets, last)?, values)
        }
        (StringType::LargeUtf8, true) => {
            byte_array::<GenericStringType<i64>>(convert_offsets(&offsets, last)?, values)
        }
        (StringType::LargeUtf8, false) => {
            byte_array::<GenericBinaryType<i64>>(convert_offsets(&offsets, last)?, values)
        }
        (StringType::Utf8View, _) => {
            let mut views = ViewsBuilder::new(values, offsets.len().saturating_sub(1))?;
            for pair in offsets.windows(2) {
                let (start, end) = (pair[0].to_u64(), pair[1].to_u64());
                // Bounds and UTF-8 were checked above for all elements at once.
                views.push_checked(start as u32, (end - start) as u32);
            }
            views.finish(utf8)
        }
    })
}

/// Builds a view array over one data buffer (the decoded chunk), from element
/// ranges that the caller reads from untrusted bytes.
pub(crate) struct ViewsBuilder {
    data: Buffer,
    views: Vec<u128>,
}

impl ViewsBuilder {
    /// A builder over `data` for about `n` elements.
    ///
    /// # Errors
    /// [`ChunkError::OffsetOverflow`] when `data` is over `i32::MAX` bytes: the
    /// Arrow format gives view offsets 32 bits (signed, for other implementations).
    pub(crate) fn new(data: Buffer, n: usize) -> Result<Self, ChunkError> {
        if data.len() > i32::MAX as usize {
            return Err(ChunkError::OffsetOverflow {
                bytes: data.len() as u64,
            });
        }
        Ok(Self {
            data,
            views: Vec::with_capacity(n),
        })
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
        let element = self.views.len();
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.data.len())
            .ok_or(ChunkError::Truncated {
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
        let views = ScalarBuffer::from(self.views);
        if utf8 {
            view_array::<StringViewType>(views, self.data)
        } else {
            view_array::<BinaryViewType>(views, self.data)
        }
    }
}

fn view_array<T: ByteViewType + ?Sized>(views: ScalarBuffer<u128>, data: Buffer) -> ArrayRef {
    // SAFETY: `ViewsBuilder` made each view with `make_view` from a slice of `data`
    // that was bounds-checked before it was pushed, and for string types either
    // checked to be UTF-8 on its own or part of a buffer checked as a whole (all
    // ASCII, or valid UTF-8 with every offset on a character boundary); every view names buffer 0 = `data`, at an offset below
    // `data.len()` <= i32::MAX. That is everything `try_new` validates.
    Arc::new(unsafe { GenericByteViewArray::<T>::new_unchecked(views, vec![data], None) })
}

/// The size of the fixed block [`CopyBuilder::extend_short`] copies.
pub(crate) const SHORT: usize = 32;

/// Builds an offsets-and-values array by copying element values into one new
/// values buffer (the interleaved vlen-utf8 path: one copy of the values).
pub(crate) struct CopyBuilder<O: OffsetSizeTrait> {
    offsets: Vec<O>,
    /// Zero-initialised storage of which the first `used` bytes hold values. The
    /// rest (at least [`SHORT`] bytes once reserved) lets a short value be copied
    /// as one fixed-size block instead of a variable-length `memcpy` call.
    values: MutableBuffer,
    used: usize,
}

impl<O: OffsetSizeTrait> CopyBuilder<O> {
    /// A builder for `n` elements with at most `max_values` bytes of values (the
    /// caller's bound from the chunk size, so this never over-allocates).
    pub(crate) fn with_capacity(n: usize, max_values: usize) -> Self {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(O::usize_as(0));
        Self {
            offsets,
            values: MutableBuffer::from_len_zeroed(max_values.saturating_add(SHORT)),
            used: 0,
        }
    }

    /// Make room for `extra` more bytes after the values.
    #[inline]
    fn reserve(&mut self, extra: usize) {
        let need = self.used + extra;
        if need > self.values.len() {
            self.values.resize(need.max(self.values.len() * 2), 0);
        }
    }

    /// Append one element's bytes.
    #[inline]
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), ChunkError> {
        self.extend(bytes);
        self.end_element()
    }

    /// Append bytes to the element being built (it may arrive in pieces).
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.values.as_slice_mut()[self.used..self.used + bytes.len()].copy_from_slice(bytes);
        self.used += bytes.len();
    }

    /// Append the first `len` (at most [`SHORT`]) bytes of `block`. The whole block
    /// is copied, which compiles to a few vector moves; the bytes past `len` are
    /// overwritten by the next value or cut off by `finish`.
    #[inline]
    pub(crate) fn extend_short(&mut self, block: &[u8; SHORT], len: usize) {
        debug_assert!(len <= SHORT);
        self.reserve(SHORT);
        self.values.as_slice_mut()[self.used..self.used + SHORT].copy_from_slice(block);
        self.used += len.min(SHORT);
    }

    /// Close the element being built.
    #[inline]
    pub(crate) fn end_element(&mut self) -> Result<(), ChunkError> {
        let end = O::from_usize(self.used).ok_or(ChunkError::OffsetOverflow {
            bytes: self.used as u64,
        })?;
        self.offsets.push(end);
        Ok(())
    }

    /// The values buffer, cut to the values.
    fn take_values(mut self) -> (Vec<O>, Buffer) {
        self.values.truncate(self.used);
        (self.offsets, self.values.into())
    }

    /// The finished array as views over the copied values buffer.
    pub(crate) fn finish_views(self, utf8: bool) -> Result<ArrayRef, ChunkError> {
        let n = self.offsets.len() - 1;
        let kind = if O::IS_LARGE {
            OffsetKind::I64
        } else {
            OffsetKind::I32
        };
        let (offsets, values) = self.take_values();
        let raw = RawOffsets::new(Buffer::from_vec(offsets), kind, n)?;
        from_offsets(raw, values, utf8, StringType::Utf8View)
    }

    /// The finished array; strings are UTF-8 checked here, once for all values.
    pub(crate) fn finish(self, utf8: bool) -> Result<ArrayRef, ChunkError> {
        let (offsets, values) = self.take_values();
        let offsets = ScalarBuffer::from(offsets);
        if utf8 {
            let last = values.len() as u64;
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
    pub(crate) fn new(target: StringType, n: usize, max_values: usize) -> Self {
        match target {
            StringType::Utf8 => Self::Small(CopyBuilder::with_capacity(n, max_values)),
            StringType::LargeUtf8 => Self::Large(CopyBuilder::with_capacity(n, max_values)),
            StringType::Utf8View => Self::View(CopyBuilder::with_capacity(n, max_values)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_i32_need_large_offsets() {
        // 3 GB of values cannot be addressed by Utf8's i32 offsets; the error says
        // which type to use. (Only the offsets exist here: the check needs no data.)
        let offsets = ScalarBuffer::<u64>::from(vec![0u64, 3_000_000_000]);
        let err = convert_offsets::<u64, i32>(&offsets, 3_000_000_000).unwrap_err();
        assert!(matches!(err, ChunkError::OffsetOverflow { .. }));
        assert!(err.to_string().contains("large-utf8"));
        assert!(convert_offsets::<u64, i64>(&offsets, 3_000_000_000).is_ok());
    }

    #[test]
    fn offset_checks() {
        assert_eq!(check_offsets(&[0i32, 2, 2, 5], 5).unwrap(), (0, 5));
        assert!(matches!(
            check_offsets(&[0i32, 3, 2], 5),
            Err(ChunkError::OffsetsDecrease { element: 1, .. })
        ));
        assert!(matches!(
            check_offsets(&[0u32, 6], 5),
            Err(ChunkError::OffsetOutOfBounds { index: 1, .. })
        ));
        assert!(matches!(
            check_offsets(&[-1i64, 2], 5),
            Err(ChunkError::OffsetOutOfBounds { index: 0, .. })
        ));
        assert!(RawOffsets::new(Buffer::from_vec(vec![0i32; 3]), OffsetKind::I32, 3).is_err());
    }

    #[test]
    fn utf8_is_checked_per_element() {
        let values = "aé".as_bytes(); // 'é' is two bytes: [0xc3, 0xa9]
        let ok = [0u64, 1, 3];
        assert!(check_utf8(ok.into_iter(), values, 0, 3).is_ok());
        let split = [0u64, 2, 3]; // element 0 ends inside 'é'
        assert!(matches!(
            check_utf8(split.into_iter(), values, 0, 3),
            Err(ChunkError::InvalidUtf8 { element: 0 })
        ));
        let bad = b"ab\xff";
        assert!(matches!(
            check_utf8([0u64, 2, 3].into_iter(), bad, 0, 3),
            Err(ChunkError::InvalidUtf8 { element: 1 })
        ));
    }
}
