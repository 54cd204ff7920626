//! Zarr data types and the Arrow type each one maps to.
//!
//! | Zarr v3 `data_type` | v2 `dtype` | Arrow |
//! |---|---|---|
//! | `string` | `\|O` + `vlen-utf8` | `Utf8` / `LargeUtf8` / `Utf8View` |
//! | `variable_length_bytes`, `bytes`, `binary` | `\|O` + `vlen-bytes` | `Binary` / `LargeBinary` / `BinaryView` |
//! | `{"name": "string" \| "large_string"}` (ZEP0007) | - | as `string` |
//! | `{"name": "binary" \| "large_binary"}` (ZEP0007) | - | as `bytes` |
//! | `fixed_length_utf32` | `<U`n | as `string` |
//! | `null_terminated_bytes` | `\|S`n | as `bytes` |
//! | `bool` | `\|b1` | `Boolean` |
//! | `int8`..`int64`, `uint8`..`uint64` | `<i1`..`<u8` | `Int8`..`UInt64` |
//! | `float16`, `float32`, `float64` | `<f2`, `<f4`, `<f8` | `Float16`, `Float32`, `Float64` |
//! | `{"name": "numpy.datetime64", "configuration": {"unit": "ns", "scale_factor": 1}}` | `<M8[ns]` | `Timestamp(ns)` (`s`, `ms`, `us` alike); unit `D`: `Date32` |
//! | `{"name": "numpy.timedelta64", ...}` (units `s`, `ms`, `us`, `ns`) | `<m8[ns]` | `Duration(ns)` |
//!
//! numpy's datetime64 and timedelta64 are int64 counts of their unit; the count
//! `i64::MIN` is NaT ("not a time"), which reads as an Arrow null (and an Arrow
//! null writes as NaT). Other units (`h`, `m`, `W`, `Y`, ...) and a `scale_factor`
//! other than 1 (`datetime64[10s]`) are refused, naming the unit.

use arrow_schema::{DataType as ArrowType, TimeUnit};

/// Which Arrow layout string (and, in step, binary) columns are read into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StringType {
    /// `Utf8` / `Binary`: 32-bit offsets (a chunk holds at most 2 GiB of values).
    #[default]
    Utf8,
    /// `LargeUtf8` / `LargeBinary`: 64-bit offsets.
    LargeUtf8,
    /// `Utf8View` / `BinaryView`: 16-byte views into the chunk buffers.
    Utf8View,
}

impl std::str::FromStr for StringType {
    type Err = crate::ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim()).ok_or_else(|| {
            crate::ParseOptionError::new("string_type", s, "utf8, large-utf8 or utf8-view")
        })
    }
}

impl std::fmt::Display for StringType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Utf8 => "utf8",
            Self::LargeUtf8 => "large-utf8",
            Self::Utf8View => "utf8-view",
        })
    }
}

impl StringType {
    /// Parse the CLI spelling: `utf8`, `large-utf8` or `utf8-view`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "utf8" => Some(Self::Utf8),
            "large-utf8" | "large_utf8" => Some(Self::LargeUtf8),
            "utf8-view" | "utf8_view" => Some(Self::Utf8View),
            _ => None,
        }
    }

    /// The Arrow type for strings.
    pub(crate) fn string_type(self) -> ArrowType {
        match self {
            Self::Utf8 => ArrowType::Utf8,
            Self::LargeUtf8 => ArrowType::LargeUtf8,
            Self::Utf8View => ArrowType::Utf8View,
        }
    }

    /// The Arrow type for bytes.
    pub(crate) fn binary_type(self) -> ArrowType {
        match self {
            Self::Utf8 => ArrowType::Binary,
            Self::LargeUtf8 => ArrowType::LargeBinary,
            Self::Utf8View => ArrowType::BinaryView,
        }
    }
}

/// A Zarr data type, as far as zarrow reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DataType {
    /// `bool`: one byte per element, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16` (IEEE half precision).
    Float16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// numpy `datetime64[unit]`: an int64 count of `unit` since the Unix epoch;
    /// `i64::MIN` is NaT.
    DateTime64(DateTimeUnit),
    /// numpy `timedelta64[unit]` (never [`DateTimeUnit::Day`]): an int64 count of
    /// `unit`; `i64::MIN` is NaT.
    TimeDelta64(DateTimeUnit),
    /// Variable-length UTF-8 strings.
    String,
    /// Variable-length bytes.
    Bytes,
    /// Fixed-width UTF-32 strings of `chars` code units, zero padded.
    FixedUtf32 {
        /// Code units per element (`length_bytes / 4`).
        chars: usize,
    },
    /// Fixed-width byte strings of `length` bytes, NUL padded.
    NullTerminatedBytes {
        /// Bytes per element.
        length: usize,
    },
}

impl DataType {
    /// Bytes per element for fixed-width types; `None` for variable-length ones.
    pub(crate) fn fixed_size(&self) -> Option<usize> {
        Some(match self {
            Self::Bool | Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 | Self::Float16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64 | Self::UInt64 | Self::Float64 => 8,
            Self::DateTime64(_) | Self::TimeDelta64(_) => 8,
            Self::FixedUtf32 { chars } => chars * 4,
            Self::NullTerminatedBytes { length } => *length,
            Self::String | Self::Bytes => return None,
        })
    }

    /// Whether values are text (read as an Arrow string type).
    pub(crate) fn is_text(&self) -> bool {
        matches!(self, Self::String | Self::FixedUtf32 { .. })
    }

    /// Whether values are byte strings (read as an Arrow binary type).
    pub(crate) fn is_binary(&self) -> bool {
        matches!(self, Self::Bytes | Self::NullTerminatedBytes { .. })
    }

    /// Whether the data type has NaT (`datetime64`, `timedelta64`): its elements
    /// read as Arrow nulls, so its columns are nullable and nulls write as NaT.
    pub(crate) fn has_nat(&self) -> bool {
        matches!(self, Self::DateTime64(_) | Self::TimeDelta64(_))
    }

    /// The Arrow type this data type is read into.
    pub(crate) fn arrow_type(&self, string_type: StringType) -> ArrowType {
        match self {
            Self::Bool => ArrowType::Boolean,
            Self::Int8 => ArrowType::Int8,
            Self::Int16 => ArrowType::Int16,
            Self::Int32 => ArrowType::Int32,
            Self::Int64 => ArrowType::Int64,
            Self::UInt8 => ArrowType::UInt8,
            Self::UInt16 => ArrowType::UInt16,
            Self::UInt32 => ArrowType::UInt32,
            Self::UInt64 => ArrowType::UInt64,
            Self::Float16 => ArrowType::Float16,
            Self::Float32 => ArrowType::Float32,
            Self::Float64 => ArrowType::Float64,
            Self::DateTime64(DateTimeUnit::Day) => ArrowType::Date32,
            Self::DateTime64(unit) => ArrowType::Timestamp(unit.time_unit(), None),
            Self::TimeDelta64(unit) => ArrowType::Duration(unit.time_unit()),
            Self::String | Self::FixedUtf32 { .. } => string_type.string_type(),
            Self::Bytes | Self::NullTerminatedBytes { .. } => string_type.binary_type(),
        }
    }

    /// The Zarr v3 spelling, as `zarrow info` prints it (the `Display`).
    fn zarr_name(&self) -> String {
        match self {
            Self::Bool => "bool".into(),
            Self::Int8 => "int8".into(),
            Self::Int16 => "int16".into(),
            Self::Int32 => "int32".into(),
            Self::Int64 => "int64".into(),
            Self::UInt8 => "uint8".into(),
            Self::UInt16 => "uint16".into(),
            Self::UInt32 => "uint32".into(),
            Self::UInt64 => "uint64".into(),
            Self::Float16 => "float16".into(),
            Self::Float32 => "float32".into(),
            Self::Float64 => "float64".into(),
            Self::DateTime64(unit) => format!("numpy.datetime64 ({})", unit.as_str()),
            Self::TimeDelta64(unit) => format!("numpy.timedelta64 ({})", unit.as_str()),
            Self::String => "string".into(),
            Self::Bytes => "bytes".into(),
            Self::FixedUtf32 { chars } => format!("fixed_length_utf32 ({} bytes)", chars * 4),
            Self::NullTerminatedBytes { length } => {
                format!("null_terminated_bytes ({length} bytes)")
            }
        }
    }

    /// Parse a plain v3 data type name (`"int32"`, `"string"`, ...).
    pub(crate) fn from_v3_name(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => Self::Bool,
            "int8" => Self::Int8,
            "int16" => Self::Int16,
            "int32" => Self::Int32,
            "int64" => Self::Int64,
            "uint8" => Self::UInt8,
            "uint16" => Self::UInt16,
            "uint32" => Self::UInt32,
            "uint64" => Self::UInt64,
            "float16" => Self::Float16,
            "float32" => Self::Float32,
            "float64" => Self::Float64,
            "string" => Self::String,
            "variable_length_bytes" | "bytes" | "binary" => Self::Bytes,
            _ => return None,
        })
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.zarr_name())
    }
}

/// The unit of a numpy `datetime64` / `timedelta64` that zarrow reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DateTimeUnit {
    /// `D`: days (`datetime64[D]` reads as Arrow `Date32`).
    Day,
    /// `s`.
    Second,
    /// `ms`.
    Millisecond,
    /// `us`.
    Microsecond,
    /// `ns`.
    Nanosecond,
}

impl DateTimeUnit {
    /// numpy's spelling: `D`, `s`, `ms`, `us`, `ns`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Day => "D",
            Self::Second => "s",
            Self::Millisecond => "ms",
            Self::Microsecond => "us",
            Self::Nanosecond => "ns",
        }
    }

    /// Parse numpy's spelling (`D`, `s`, `ms`, `us`, `ns`); `None` for any other.
    pub(crate) fn parse(unit: &str) -> Option<Self> {
        Some(match unit {
            "D" => Self::Day,
            "s" => Self::Second,
            "ms" => Self::Millisecond,
            "us" => Self::Microsecond,
            "ns" => Self::Nanosecond,
            _ => return None,
        })
    }

    /// The Arrow unit (days, which Arrow times lack, as seconds: callers map
    /// `datetime64[D]` to `Date32` first).
    pub(crate) fn time_unit(self) -> TimeUnit {
        match self {
            Self::Day | Self::Second => TimeUnit::Second,
            Self::Millisecond => TimeUnit::Millisecond,
            Self::Microsecond => TimeUnit::Microsecond,
            Self::Nanosecond => TimeUnit::Nanosecond,
        }
    }

    /// The unit of an Arrow time unit.
    pub(crate) fn from_time_unit(unit: TimeUnit) -> Self {
        match unit {
            TimeUnit::Second => Self::Second,
            TimeUnit::Millisecond => Self::Millisecond,
            TimeUnit::Microsecond => Self::Microsecond,
            TimeUnit::Nanosecond => Self::Nanosecond,
        }
    }
}

/// The message that refuses a numpy time unit zarrow does not read: `kind` is
/// `numpy.datetime64` or `numpy.timedelta64`, `unit` as written (with its scale
/// factor when not 1).
pub(crate) fn unsupported_time_unit(kind: &str, unit: &str) -> String {
    let units = if kind.ends_with("datetime64") {
        "s, ms, us, ns and D"
    } else {
        "s, ms, us and ns"
    };
    format!("{kind} unit '{unit}' (zarrow reads {units}, with scale factor 1)")
}

/// The most Arrow memory an element may need besides its value bytes: a 16-byte
/// view, or a 16-byte (array, index) pick when chunks are gathered. A chunk shape
/// is refused when `elements * ARROW_BYTES_PER_ELEMENT` exceeds the byte limit.
pub(crate) const ARROW_BYTES_PER_ELEMENT: usize = 16;

impl DataType {
    /// About how many bytes of Arrow data one element takes, for sizing read-ahead
    /// windows: the width of a number, a string's offset or view plus 16 bytes
    /// of value (a guess: the real sizes are known only once decoded).
    pub(crate) fn estimated_arrow_bytes(&self) -> u64 {
        match self.fixed_size() {
            Some(_) if !self.is_text() && !self.is_binary() => {
                self.arrow_bytes_per_element() as u64
            }
            _ => ARROW_BYTES_PER_ELEMENT as u64 + 16,
        }
    }

    /// The most Arrow memory one element needs while its chunk is decoded, besides
    /// variable-length value bytes (bounded by the decompressors): numbers and
    /// bools take exactly their width; strings and bytes up to
    /// [`ARROW_BYTES_PER_ELEMENT`].
    pub(crate) fn arrow_bytes_per_element(&self) -> usize {
        match self {
            DataType::FixedUtf32 { .. }
            | DataType::NullTerminatedBytes { .. }
            | DataType::String
            | DataType::Bytes => ARROW_BYTES_PER_ELEMENT,
            fixed => fixed.fixed_size().unwrap_or(ARROW_BYTES_PER_ELEMENT),
        }
    }
}

/// Byte order of fixed-width values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Endian {
    /// Little-endian (the default, and the machine order zarrow runs on).
    #[default]
    Little,
    /// Big-endian.
    Big,
}
