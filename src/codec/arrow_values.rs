//! Encode side: an Arrow array's values as the bytes a chunk layout stores.
//!
//! Copies: `Utf8` / `Binary` (and large) offsets and values are taken as they are
//! (one memcpy each into the chunk; offsets are rebased only when the slice does
//! not start at offset 0); views are walked element by element.

use crate::error::EncodeError;
use arrow_array::cast::AsArray;
use arrow_array::types::ByteArrayType;
use arrow_array::{Array, GenericByteArray, OffsetSizeTrait};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType as ArrowType;

/// Append `len + pad + 1` offsets of `width` bytes (rebased to 0) to `index` and the
/// values they index to `data`.
pub(super) fn offsets_and_values(
    array: &dyn Array,
    width: usize,
    pad: usize,
    index: &mut Vec<u8>,
    data: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match array.data_type() {
        ArrowType::Utf8 => from_contiguous(array.as_string::<i32>(), width, pad, index, data),
        ArrowType::LargeUtf8 => from_contiguous(array.as_string::<i64>(), width, pad, index, data),
        ArrowType::Binary => from_contiguous(array.as_binary::<i32>(), width, pad, index, data),
        ArrowType::LargeBinary => {
            from_contiguous(array.as_binary::<i64>(), width, pad, index, data)
        }
        _ => {
            // Views (and anything else with byte values): walk the elements.
            let mut offsets = vec![0u64];
            for_each_value(array, |v| {
                data.extend_from_slice(v);
                offsets.push(data.len() as u64);
            })?;
            let last = *offsets.last().unwrap_or(&0);
            offsets.extend(std::iter::repeat_n(last, pad));
            push_offsets(index, offsets.into_iter(), width)
        }
    }
}

fn from_contiguous<T: ByteArrayType>(
    array: &GenericByteArray<T>,
    width: usize,
    pad: usize,
    index: &mut Vec<u8>,
    data: &mut Vec<u8>,
) -> Result<(), EncodeError>
where
    T::Offset: OffsetSizeTrait,
{
    let offsets = array.offsets();
    let first = offsets.first().map_or(0, |o| o.as_usize());
    let last = offsets.last().map_or(0, |o| o.as_usize());
    data.extend_from_slice(&array.value_data()[first..last]);
    let raw = offsets.inner().inner().as_slice();
    if first == 0 && std::mem::size_of::<T::Offset>() == width {
        // Same width, already based at 0: the Arrow offsets are the index.
        index.extend_from_slice(raw);
    } else {
        push_offsets(
            index,
            offsets.iter().map(|o| (o.as_usize() - first) as u64),
            width,
        )?;
    }
    push_offsets(
        index,
        std::iter::repeat_n((last - first) as u64, pad),
        width,
    )
}

pub(super) fn push_offsets(
    index: &mut Vec<u8>,
    offsets: impl Iterator<Item = u64>,
    width: usize,
) -> Result<(), EncodeError> {
    for o in offsets {
        if width == 4 {
            let o = i32::try_from(o).map_err(|_| EncodeError::OffsetOverflow { bytes: o })?;
            index.extend_from_slice(&o.to_le_bytes());
        } else {
            index.extend_from_slice(&o.to_le_bytes());
        }
    }
    Ok(())
}

/// Call `f` with each element's bytes (strings as UTF-8), in order.
pub(super) fn for_each_value(
    array: &dyn Array,
    mut f: impl FnMut(&[u8]),
) -> Result<(), EncodeError> {
    match array.data_type() {
        ArrowType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .for_each(|v| f(v.unwrap_or_default().as_bytes())),
        ArrowType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .for_each(|v| f(v.unwrap_or_default().as_bytes())),
        ArrowType::Utf8View => array
            .as_string_view()
            .iter()
            .for_each(|v| f(v.unwrap_or_default().as_bytes())),
        ArrowType::Binary => array
            .as_binary::<i32>()
            .iter()
            .for_each(|v| f(v.unwrap_or_default())),
        ArrowType::LargeBinary => array
            .as_binary::<i64>()
            .iter()
            .for_each(|v| f(v.unwrap_or_default())),
        ArrowType::BinaryView => array
            .as_binary_view()
            .iter()
            .for_each(|v| f(v.unwrap_or_default())),
        other => {
            return Err(EncodeError::ArrowType {
                codec: "variable-length",
                data_type: other.clone(),
            });
        }
    }
    Ok(())
}

/// Bytes of values in a byte array (0 for other types): sizes buffers up front.
pub(crate) fn value_bytes(array: &dyn Array) -> usize {
    match array.data_type() {
        ArrowType::Utf8 => sliced_len(array.as_string::<i32>()),
        ArrowType::LargeUtf8 => sliced_len(array.as_string::<i64>()),
        ArrowType::Binary => sliced_len(array.as_binary::<i32>()),
        ArrowType::LargeBinary => sliced_len(array.as_binary::<i64>()),
        ArrowType::Utf8View => array.as_string_view().lengths().map(|l| l as usize).sum(),
        ArrowType::BinaryView => array.as_binary_view().lengths().map(|l| l as usize).sum(),
        _ => 0,
    }
}

fn sliced_len<T: ByteArrayType>(array: &GenericByteArray<T>) -> usize {
    let o = array.offsets();
    o.last().map_or(0, |l| l.as_usize()) - o.first().map_or(0, |f| f.as_usize())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 32-bit offsets hold up to `i32::MAX`; the next offset is refused, 64-bit
    /// offsets take it.
    #[test]
    fn an_offset_past_32_bits() {
        let mut index = Vec::new();
        push_offsets(&mut index, [0, i32::MAX as u64].into_iter(), 4).unwrap();
        assert_eq!(index.len(), 8);
        let past = 1u64 << 31;
        let error = push_offsets(&mut index, [past].into_iter(), 4).unwrap_err();
        assert!(
            matches!(error, EncodeError::OffsetOverflow { bytes } if bytes == past),
            "{error}"
        );
        push_offsets(&mut index, [past].into_iter(), 8).unwrap();
        assert_eq!(index.len(), 16);
    }
}
