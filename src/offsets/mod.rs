//! The only place where untrusted offsets (and dictionary keys, `keys.rs`)
//! become Arrow arrays.
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
//!
//! The builders for layouts whose values must be copied (the interleaved `vlen-*`
//! chunks) are in `copy.rs`; the view builders in `views.rs`.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::types::{ByteArrayType, GenericBinaryType, GenericStringType};
use arrow_array::{ArrayRef, GenericByteArray, OffsetSizeTrait};
use arrow_buffer::{ArrowNativeType, Buffer, MutableBuffer, OffsetBuffer, ScalarBuffer};

use crate::error::ChunkError;
use crate::metadata::StringType;

mod copy;
pub(crate) mod keys;
mod views;

pub(crate) use copy::{CopyBuilder, ValuesBuilder};
pub(crate) use views::{ChunkViewsBuilder, InlineViewsBuilder, ViewsBuilder};

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

    /// Offset `i` as u64 (a negative signed one as `u64::MAX`).
    fn get(&self, i: usize) -> u64 {
        let size = self.width.size();
        let bytes = &self.buffer.as_slice()[i * size..(i + 1) * size];
        match self.width {
            OffsetKind::I32 => i32::from_le_bytes(bytes.try_into().unwrap_or_default()).to_u64(),
            OffsetKind::U32 => u32::from_le_bytes(bytes.try_into().unwrap_or_default()).to_u64(),
            OffsetKind::I64 => i64::from_le_bytes(bytes.try_into().unwrap_or_default()).to_u64(),
            OffsetKind::U64 => u64::from_le_bytes(bytes.try_into().unwrap_or_default()),
        }
    }

    /// Elements `elements` alone: their offsets moved to start at 0 (one copy
    /// of them, as `u64`), and the range of the values they span, for a read of
    /// those values only.
    ///
    /// # Errors
    /// Elements past the offsets, or offsets that decrease among them.
    pub(crate) fn window(
        &self,
        elements: Range<usize>,
    ) -> Result<(RawOffsets, Range<u64>), ChunkError> {
        let n = self.len().saturating_sub(1);
        if elements.start > elements.end || elements.end > n {
            return Err(ChunkError::Truncated {
                what: "offsets",
                needed: elements.end as u64 + 1,
                available: self.len() as u64,
            });
        }
        let first = self.get(elements.start);
        let mut out = MutableBuffer::new((elements.len() + 1) * 8);
        let mut prev = first;
        for i in elements.start..=elements.end {
            let off = self.get(i);
            if off < prev {
                return Err(ChunkError::OffsetsDecrease {
                    element: i - 1,
                    start: prev,
                    end: off,
                });
            }
            out.push(off - first);
            prev = off;
        }
        let raw = RawOffsets {
            buffer: out.into(),
            width: OffsetKind::U64,
        };
        Ok((raw, first..prev))
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
    // `values`) and, for string types, `check_utf8` on these exact offsets over
    // the whole of `values` (the first offset is 0 and the last is `values.len()`:
    // see `string_array` and `CopyBuilder::finish`), or holds its caller's
    // promise that every byte of `values` is ASCII (`CopyBuilder::finish_checked`),
    // which is what `GenericByteArray::try_new` verifies.
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
    Ok(match target {
        StringType::Utf8 | StringType::LargeUtf8 if utf8 => {
            return string_array(&offsets, values, first, last, target);
        }
        StringType::Utf8 => {
            byte_array::<GenericBinaryType<i32>>(convert_offsets(&offsets, last)?, values)
        }
        StringType::LargeUtf8 => {
            byte_array::<GenericBinaryType<i64>>(convert_offsets(&offsets, last)?, values)
        }
        StringType::Utf8View => {
            let mut views = ViewsBuilder::new(values, offsets.len().saturating_sub(1), None)?;
            for pair in offsets.windows(2) {
                let (start, end) = (pair[0].to_u64(), pair[1].to_u64());
                // Bounds and UTF-8 were checked above for all elements at once.
                views.push_checked(start as u32, (end - start) as u32);
            }
            views.finish(utf8)
        }
    })
}

/// A `Utf8` / `LargeUtf8` array over exactly the values its offsets span.
///
/// [`check_utf8`] checked `values[first..last]` and every offset's boundary in
/// it; arrow-rs asks more of a string array: its *whole* values buffer must be
/// UTF-8 and every offset a boundary of it (`GenericByteArray::try_new`), so an
/// empty element at an offset inside a character of bytes no element uses
/// breaks it. Handing over `values[first..last]` (a zero-copy slice; offsets
/// rebased by one copy when `first > 0`, which no writer produces) makes the
/// two checks the same.
fn string_array<T: Offset>(
    offsets: &ScalarBuffer<T>,
    values: Buffer,
    first: u64,
    last: u64,
    target: StringType,
) -> Result<ArrayRef, ChunkError> {
    let values = values.slice_with_length(first as usize, (last - first) as usize);
    if first == 0 {
        return string_array_from_zero(offsets, values, last, target);
    }
    let rebased: ScalarBuffer<u64> = offsets.iter().map(|o| o.to_u64() - first).collect();
    string_array_from_zero(&rebased, values, last - first, target)
}

/// [`string_array`] once the first offset is 0 and `last == values.len()`.
fn string_array_from_zero<T: Offset>(
    offsets: &ScalarBuffer<T>,
    values: Buffer,
    last: u64,
    target: StringType,
) -> Result<ArrayRef, ChunkError> {
    Ok(match target {
        StringType::LargeUtf8 => {
            byte_array::<GenericStringType<i64>>(convert_offsets(offsets, last)?, values)
        }
        _ => byte_array::<GenericStringType<i32>>(convert_offsets(offsets, last)?, values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    #[test]
    fn values_past_i32_need_large_offsets() {
        // 3 GB of values cannot be addressed by Utf8's i32 offsets; the error says
        // which type to use. (Only the offsets exist here: the check needs no data.)
        let offsets = ScalarBuffer::<u64>::from(vec![0u64, 3_000_000_000]);
        let err = convert_offsets::<u64, i32>(&offsets, 3_000_000_000).unwrap_err();
        assert!(matches!(err, ChunkError::OffsetOverflow { .. }));
        assert!(err.to_string().contains("StringType::LargeUtf8"));
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

    /// What arrow-rs itself accepts as a string array: the independent check.
    fn arrow_accepts(array: &ArrayRef) {
        array.to_data().validate_full().expect("validate_full");
        let data = array.to_data();
        let rebuilt = match array.data_type() {
            arrow_schema::DataType::Utf8 => arrow_array::StringArray::try_new(
                OffsetBuffer::new(data.buffers()[0].clone().into()),
                data.buffers()[1].clone(),
                None,
            )
            .map(|_| ()),
            _ => arrow_array::LargeStringArray::try_new(
                OffsetBuffer::new(data.buffers()[0].clone().into()),
                data.buffers()[1].clone(),
                None,
            )
            .map(|_| ()),
        };
        rebuilt.expect("GenericByteArray::try_new");
    }

    #[test]
    fn strings_hand_arrow_only_the_bytes_their_offsets_span() {
        // Two empty elements at offset 1, inside 'é' ([0xc3, 0xa9]): each element
        // is valid, but arrow-rs wants every offset on a character boundary of the
        // whole values buffer (found by cargo fuzz through the ZEP0007 decoder).
        let values = Buffer::from("é".as_bytes());
        for (offsets, expect) in [
            (vec![1i32, 1, 1], vec!["", ""]),
            (vec![2i32, 2], vec![""]),
            (vec![0i32, 2, 2], vec!["é", ""]),
        ] {
            for target in [StringType::Utf8, StringType::LargeUtf8] {
                let n = offsets.len() - 1;
                let raw =
                    RawOffsets::new(Buffer::from_vec(offsets.clone()), OffsetKind::I32, n).unwrap();
                let array = from_offsets(raw, values.clone(), true, target).unwrap();
                arrow_accepts(&array);
                let got: Vec<&str> = match target {
                    StringType::Utf8 => array.as_string::<i32>().iter().flatten().collect(),
                    _ => array.as_string::<i64>().iter().flatten().collect(),
                };
                assert_eq!(got, expect, "{offsets:?}");
            }
        }
        // Bytes outside every element that are not UTF-8 are not handed over.
        let values = Buffer::from(&b"\xffab\xfe"[..]);
        let raw = RawOffsets::new(Buffer::from_vec(vec![1i32, 2, 3]), OffsetKind::I32, 2).unwrap();
        let array = from_offsets(raw, values, true, StringType::Utf8).unwrap();
        arrow_accepts(&array);
        assert_eq!(array.as_string::<i32>().value(1), "b");
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
