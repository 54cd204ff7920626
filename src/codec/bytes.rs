//! The `bytes` codec: fixed-width elements in C order.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/index.html>.
//! v3 name `bytes` (`{"endian": "little"}`; `endian` may be omitted for 1-byte
//! types); in v2 the byte order is part of the dtype (`<i8`, `>i4`).
//!
//! Copies: little-endian numbers are the decoded buffer itself (none, or one when
//! the buffer is misaligned); big-endian numbers are swapped into a new buffer
//! (one); numpy `datetime64` / `timedelta64` are numbers too, NaT (`i64::MIN`)
//! becoming a null in a validity bitmap built beside them (the values stay the
//! buffer), except `datetime64[D]`, narrowed to `Date32` (one); bools are
//! bit-packed (one); `fixed_length_utf32` is transcoded to UTF-8
//! and `null_terminated_bytes` has trailing NULs stripped (one copy of the values).

use std::sync::Arc;

use arrow_array::types::{
    Date32Type, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer, ScalarBuffer};

use std::any::Any;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ArrayToBytesCodec, CodecChain, ConfigError, DecodeContext, padding, settings};
use crate::error::{ChunkError, EncodeError};
use crate::metadata::{DataType, DateTimeUnit, Endian};

/// numpy's NaT ("not a time"): the int64 count that marks a missing datetime64 or
/// timedelta64. It reads as an Arrow null, and an Arrow null writes as it.
pub(crate) const NAT: i64 = i64::MIN;

/// The names of `bytes` (`endian` is its pre-release name).
pub(crate) const NAMES: &[&str] = &["bytes", "endian"];

/// The `bytes` codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes {
    /// Byte order of multi-byte elements; `None` when the metadata leaves it out
    /// (little, and what zarr-python writes for one-byte types).
    pub(crate) endian: Option<Endian>,
}

#[derive(Deserialize)]
struct Settings {
    endian: Option<String>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToBytesCodec>, ConfigError> {
    let endian = match settings::<Settings>(name, config)?.endian.as_deref() {
        None => None,
        Some("little") => Some(Endian::Little),
        Some("big") => Some(Endian::Big),
        Some(other) => {
            return Err(ConfigError::invalid_found(
                name,
                "configuration.endian",
                "\"little\" or \"big\"",
                format!("{other:?}"),
            ));
        }
    };
    Ok(Arc::new(Bytes { endian }))
}

impl ArrayToBytesCodec for Bytes {
    fn decode(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        decode(bytes, self.endian.unwrap_or_default(), ctx)
    }

    fn encode(&self, array: &dyn Array, shape: &[u64]) -> Result<Vec<u8>, EncodeError> {
        let (_, pad) = padding(array, shape)?;
        let (out, width) = encode(array, pad)?;
        Ok(match self.endian {
            Some(Endian::Big) if width > 1 => swap_endian_in_place(out, width),
            _ => out,
        })
    }

    fn metadata(&self) -> Option<Value> {
        Some(match self.endian {
            None => json!({"name": "bytes"}),
            Some(Endian::Little) => json!({"name": "bytes", "configuration": {"endian": "little"}}),
            Some(Endian::Big) => json!({"name": "bytes", "configuration": {"endian": "big"}}),
        })
    }

    fn is_variable_length(&self) -> bool {
        false
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
use crate::offsets::{ValuesBuilder, aligned_scalars};

/// Decode a chunk of fixed-width elements.
pub(crate) fn decode(
    bytes: Buffer,
    endian: Endian,
    ctx: &DecodeContext,
) -> Result<ArrayRef, ChunkError> {
    let n = ctx.elements;
    let size = ctx.data_type.fixed_size().unwrap_or(0);
    let expected = (size as u64).saturating_mul(n as u64);
    // A zero size cannot come from validated metadata; refuse it rather than
    // divide the chunk into nothing.
    if size == 0 || bytes.len() as u64 != expected {
        return Err(ChunkError::SizeMismatch {
            expected,
            found: bytes.len() as u64,
        });
    }
    Ok(match ctx.data_type {
        DataType::Bool => Arc::new(BooleanArray::new(
            crate::offsets::keys::bits(&bytes.as_slice()[..n], |b| b != 0),
            None,
        )),
        DataType::Int8 => primitive::<Int8Type>(bytes, n, endian),
        DataType::Int16 => primitive::<Int16Type>(bytes, n, endian),
        DataType::Int32 => primitive::<Int32Type>(bytes, n, endian),
        DataType::Int64 => primitive::<Int64Type>(bytes, n, endian),
        DataType::UInt8 => primitive::<UInt8Type>(bytes, n, endian),
        DataType::UInt16 => primitive::<UInt16Type>(bytes, n, endian),
        DataType::UInt32 => primitive::<UInt32Type>(bytes, n, endian),
        DataType::UInt64 => primitive::<UInt64Type>(bytes, n, endian),
        DataType::Float16 => primitive::<Float16Type>(bytes, n, endian),
        DataType::Float32 => primitive::<Float32Type>(bytes, n, endian),
        DataType::Float64 => primitive::<Float64Type>(bytes, n, endian),
        DataType::DateTime64(DateTimeUnit::Day) => days(&bytes, n, endian)?,
        DataType::DateTime64(unit) => match unit {
            DateTimeUnit::Second | DateTimeUnit::Day => {
                time::<TimestampSecondType>(bytes, n, endian)
            }
            DateTimeUnit::Millisecond => time::<TimestampMillisecondType>(bytes, n, endian),
            DateTimeUnit::Microsecond => time::<TimestampMicrosecondType>(bytes, n, endian),
            DateTimeUnit::Nanosecond => time::<TimestampNanosecondType>(bytes, n, endian),
        },
        DataType::TimeDelta64(unit) => match unit {
            DateTimeUnit::Second | DateTimeUnit::Day => {
                time::<DurationSecondType>(bytes, n, endian)
            }
            DateTimeUnit::Millisecond => time::<DurationMillisecondType>(bytes, n, endian),
            DateTimeUnit::Microsecond => time::<DurationMicrosecondType>(bytes, n, endian),
            DateTimeUnit::Nanosecond => time::<DurationNanosecondType>(bytes, n, endian),
        },
        DataType::FixedUtf32 { .. } => utf32(&bytes, size, n, endian, ctx)?,
        DataType::NullTerminatedBytes { .. } => {
            let mut out = ValuesBuilder::new(ctx.string_type, n, bytes.len(), ctx.recycler);
            for element in bytes.as_slice().chunks_exact(size).take(n) {
                let end = element.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                out.push(&element[..end])?;
            }
            out.finish(false)?
        }
        DataType::String | DataType::Bytes => {
            // Metadata parsing refuses this pairing; keep the decoder total anyway.
            return Err(ChunkError::Decompress {
                codec: "bytes",
                message: "variable-length data types need a vlen codec".into(),
            });
        }
    })
}

fn primitive<T: ArrowPrimitiveType>(bytes: Buffer, n: usize, endian: Endian) -> ArrayRef {
    let values: ScalarBuffer<T::Native> = match endian {
        Endian::Little => aligned_scalars(bytes, n),
        Endian::Big => aligned_scalars(swap_endian(&bytes, std::mem::size_of::<T::Native>()), n),
    };
    Arc::new(PrimitiveArray::<T>::new(values, None))
}

/// int64 counts of a time unit, NaT as nulls: the values buffer is the chunk's
/// (as for [`primitive`]), the validity bitmap is built only when a NaT occurs.
fn time<T: ArrowPrimitiveType<Native = i64>>(bytes: Buffer, n: usize, endian: Endian) -> ArrayRef {
    let values: ScalarBuffer<i64> = match endian {
        Endian::Little => aligned_scalars(bytes, n),
        Endian::Big => aligned_scalars(swap_endian(&bytes, 8), n),
    };
    Arc::new(PrimitiveArray::<T>::new(values.clone(), nat_nulls(&values)))
}

/// The validity of int64 time counts: `None` when no element is NaT.
pub(crate) fn nat_nulls(values: &[i64]) -> Option<NullBuffer> {
    values
        .contains(&NAT)
        .then(|| NullBuffer::new(crate::offsets::keys::bits(values, |v| v != NAT)))
}

/// `datetime64[D]`: int64 day counts narrowed to Arrow `Date32` (one copy); NaT is
/// a null, a count outside i32 an error naming the element.
fn days(bytes: &Buffer, n: usize, endian: Endian) -> Result<ArrayRef, ChunkError> {
    let counts = bytes.as_slice().chunks_exact(8).take(n).map(|raw| {
        let raw: [u8; 8] = raw.try_into().unwrap_or_default();
        match endian {
            Endian::Little => i64::from_le_bytes(raw),
            Endian::Big => i64::from_be_bytes(raw),
        }
    });
    let mut out = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for (element, count) in counts.enumerate() {
        valid.push(count != NAT);
        out.push(match count {
            NAT => 0,
            days => i32::try_from(days).map_err(|_| ChunkError::Decompress {
                codec: "bytes",
                message: format!(
                    "element {element}: datetime64[D] {days} is outside Arrow Date32's range"
                ),
            })?,
        });
    }
    let nulls = NullBuffer::from(valid);
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Ok(Arc::new(PrimitiveArray::<Date32Type>::new(
        out.into(),
        nulls,
    )))
}

/// Whether `chain`'s layout is a big-endian `bytes` codec (an index's codecs).
pub(crate) fn is_big_endian(chain: &CodecChain) -> bool {
    chain
        .array_to_bytes()
        .as_any()
        .downcast_ref::<Bytes>()
        .is_some_and(|b| b.endian == Some(Endian::Big))
}

/// Reverse the bytes of each `width`-byte element of `bytes`, in place (encoders).
pub(crate) fn swap_endian_in_place(mut bytes: Vec<u8>, width: usize) -> Vec<u8> {
    bytes
        .chunks_exact_mut(width.max(1))
        .for_each(<[u8]>::reverse);
    bytes
}

pub(crate) fn swap_endian(bytes: &[u8], width: usize) -> Buffer {
    let mut out = MutableBuffer::with_capacity(bytes.len());
    for element in bytes.chunks(width.max(1)) {
        out.extend(element.iter().rev().copied());
    }
    out.into()
}

fn utf32(
    bytes: &Buffer,
    size: usize,
    n: usize,
    endian: Endian,
    ctx: &DecodeContext,
) -> Result<ArrayRef, ChunkError> {
    // UTF-8 takes at most 4 bytes per code point, the same as UTF-32.
    let mut out = ValuesBuilder::new(ctx.string_type, n, bytes.len(), ctx.recycler);
    let mut text = String::new();
    for (element, raw) in bytes.as_slice().chunks_exact(size).take(n).enumerate() {
        text.clear();
        let units = raw.chunks_exact(4).map(|u| {
            let u = [u[0], u[1], u[2], u[3]];
            match endian {
                Endian::Little => u32::from_le_bytes(u),
                Endian::Big => u32::from_be_bytes(u),
            }
        });
        let len = units.clone().rposition(|u| u != 0).map_or(0, |p| p + 1);
        for code in units.take(len) {
            let c = char::from_u32(code)
                .ok_or_else(|| ChunkError::InvalidCodePoint { element, code })?;
            text.push(c);
        }
        out.push(text.as_bytes())?;
    }
    out.finish(true)
}
/// Encode numbers (their values buffer, little-endian) or bools (one byte each),
/// padded with `pad` zero elements; with the width of an encoded element.
///
/// Arrow's times (`Timestamp`, `Duration`, `Date64`) are int64 counts as numpy's
/// datetime64 / timedelta64 are, their nulls written as NaT; `Date32` widens to
/// datetime64[D]'s int64.
fn encode(array: &dyn Array, pad: usize) -> Result<(Vec<u8>, usize), EncodeError> {
    use arrow_schema::DataType as ArrowType;
    let is_time = matches!(
        array.data_type(),
        ArrowType::Timestamp(..) | ArrowType::Duration(_) | ArrowType::Date64
    );
    if *array.data_type() == ArrowType::Date32 || (is_time && array.null_count() > 0) {
        let counts: Vec<i64> = match array.as_primitive_opt::<Date32Type>() {
            Some(days) => days.values().iter().map(|&d| i64::from(d)).collect(),
            None => time_counts(array),
        };
        let nulls = array.logical_nulls();
        let mut out = Vec::with_capacity((array.len() + pad) * 8);
        for (i, count) in counts.into_iter().enumerate() {
            let count = match &nulls {
                Some(n) if n.is_null(i) => NAT,
                _ => count,
            };
            out.extend_from_slice(&count.to_le_bytes());
        }
        out.resize((array.len() + pad) * 8, 0);
        return Ok((out, 8));
    }
    if let Some(bools) = array.as_boolean_opt() {
        let mut out = Vec::with_capacity(array.len() + pad);
        out.extend(bools.values().iter().map(u8::from));
        out.resize(array.len() + pad, 0);
        return Ok((out, 1));
    }
    let (bytes, size) = arrow_array::downcast_primitive_array!(
        array => values_of(array),
        t => {
            return Err(EncodeError::ArrowType {
                codec: "bytes",
                data_type: t.clone(),
            });
        }
    );
    let mut out = Vec::with_capacity((array.len() + pad) * size);
    out.extend_from_slice(bytes);
    out.resize((array.len() + pad) * size, 0);
    Ok((out, size))
}

/// A primitive array's values (its slice of the values buffer) and their width.
fn values_of<T: ArrowPrimitiveType>(array: &PrimitiveArray<T>) -> (&[u8], usize) {
    (
        array.values().inner().as_slice(),
        std::mem::size_of::<T::Native>(),
    )
}

/// The int64 counts of a `Timestamp`, `Duration` or `Date64` array (its values
/// buffer, read through `ArrayData` since each unit is its own Arrow type).
fn time_counts(array: &dyn Array) -> Vec<i64> {
    let data = array.to_data();
    let Some(buffer) = data.buffers().first() else {
        return Vec::new();
    };
    buffer.typed_data::<i64>()[data.offset()..data.offset() + data.len()].to_vec()
}
