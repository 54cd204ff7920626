//! Chunk layouts, encode side: one chunk's Arrow slice into the bytes of its layout.
//!
//! Every encoder pads the chunk to its full length with the fill value (empty
//! values, zeros), as Zarr stores edge chunks at the full chunk shape.
//!
//! Copies: `zarrs.vlen` and ZEP0007 take the Arrow offsets and values buffers as
//! they are (one memcpy each into the chunk; offsets are rebased only when the
//! slice does not start at offset 0); views are walked element by element.
//! `vlen-utf8` / `vlen-bytes` interleave lengths and values (one pass). Numbers are
//! one memcpy of the values buffer; bools are widened to one byte each.

use arrow_array::cast::AsArray;
use arrow_array::types::ByteArrayType;
use arrow_array::{Array, GenericByteArray, OffsetSizeTrait};
use arrow_buffer::ArrowNativeType;
use arrow_schema::DataType as ArrowType;

use crate::codec::zep0007;

/// The layout a chunk is encoded into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `vlen-utf8` / `vlen-bytes`.
    Vlen,
    /// `zarrs.vlen`, index at the start, u64 (`large`) or u32 offsets.
    ZarrsVlen { large: bool },
    /// The ZEP0007 draft layout, int64 (`large`) or int32 offsets.
    Zep0007 { large: bool },
    /// Fixed-width elements of `size` bytes (the `bytes` codec, little-endian).
    Fixed { size: usize },
}

/// Encode `array` (at most `chunk_len` elements, no nulls) as one chunk of
/// `chunk_len` elements.
pub(crate) fn encode(
    array: &dyn Array,
    chunk_len: usize,
    layout: Layout,
) -> Result<Vec<u8>, String> {
    let pad = chunk_len.checked_sub(array.len()).ok_or("chunk overflow")?;
    match layout {
        Layout::Vlen => vlen(array, pad),
        Layout::ZarrsVlen { large } => {
            let width = if large { 8 } else { 4 };
            let mut index = Vec::with_capacity((chunk_len + 1) * width);
            let mut data = Vec::new();
            offsets_and_values(array, width, pad, &mut index, &mut data)?;
            let mut out = Vec::with_capacity(8 + index.len() + data.len());
            out.extend_from_slice(&(index.len() as u64).to_le_bytes());
            out.extend_from_slice(&index);
            out.extend_from_slice(&data);
            Ok(out)
        }
        Layout::Zep0007 { large } => {
            let width = if large { 8 } else { 4 };
            let start = zep0007::data_start(chunk_len, large) as usize;
            let mut out = Vec::with_capacity(start);
            let mut data = Vec::new();
            offsets_and_values(array, width, pad, &mut out, &mut data)?;
            out.resize(start, 0);
            out.extend_from_slice(&data);
            Ok(out)
        }
        Layout::Fixed { size } => fixed(array, size, pad),
    }
}

fn vlen(array: &dyn Array, pad: usize) -> Result<Vec<u8>, String> {
    let n = array.len() + pad;
    let count = u32::try_from(n).map_err(|_| "more than u32::MAX elements in a chunk")?;
    let mut out = Vec::with_capacity(4 + 4 * n + value_bytes(array));
    out.extend_from_slice(&count.to_le_bytes());
    let mut result = Ok(());
    for_each_value(array, |v| match u32::try_from(v.len()) {
        Ok(len) => {
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(v);
        }
        Err(_) => result = Err("a value longer than u32::MAX bytes".to_string()),
    })?;
    result?;
    for _ in 0..pad {
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    Ok(out)
}

/// Append `len + pad + 1` offsets of `width` bytes (rebased to 0) to `index` and the
/// values they index to `data`.
fn offsets_and_values(
    array: &dyn Array,
    width: usize,
    pad: usize,
    index: &mut Vec<u8>,
    data: &mut Vec<u8>,
) -> Result<(), String> {
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
) -> Result<(), String>
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

fn push_offsets(
    index: &mut Vec<u8>,
    offsets: impl Iterator<Item = u64>,
    width: usize,
) -> Result<(), String> {
    for o in offsets {
        if width == 4 {
            let o = i32::try_from(o).map_err(
                |_| "chunk values exceed 2 GiB: use a large type or a smaller chunk length",
            )?;
            index.extend_from_slice(&o.to_le_bytes());
        } else {
            index.extend_from_slice(&o.to_le_bytes());
        }
    }
    Ok(())
}

fn fixed(array: &dyn Array, size: usize, pad: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity((array.len() + pad) * size);
    if let Some(bools) = array.as_boolean_opt() {
        out.extend(bools.values().iter().map(u8::from));
    } else {
        let data = array.to_data();
        let buffer = data
            .buffers()
            .first()
            .ok_or("a fixed-width array without a values buffer")?;
        let start = data.offset() * size;
        let bytes = buffer
            .as_slice()
            .get(start..start + data.len() * size)
            .ok_or("values buffer too short")?;
        out.extend_from_slice(bytes);
    }
    out.resize((array.len() + pad) * size, 0);
    Ok(out)
}

/// Call `f` with each element's bytes (strings as UTF-8), in order.
fn for_each_value(array: &dyn Array, mut f: impl FnMut(&[u8])) -> Result<(), String> {
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
        other => return Err(format!("{other} has no variable-length values")),
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
