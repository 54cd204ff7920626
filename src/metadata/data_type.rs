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
//! | `float32`, `float64` | `<f4`, `<f8` | `Float32`, `Float64` |

use arrow_schema::DataType as ArrowType;

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

impl StringType {
    /// Parse the CLI spelling: `utf8`, `large-utf8` or `utf8-view`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "utf8" => Some(Self::Utf8),
            "large-utf8" | "large_utf8" => Some(Self::LargeUtf8),
            "utf8-view" | "utf8_view" => Some(Self::Utf8View),
            _ => None,
        }
    }

    /// The Arrow type for strings.
    pub fn string_type(self) -> ArrowType {
        match self {
            Self::Utf8 => ArrowType::Utf8,
            Self::LargeUtf8 => ArrowType::LargeUtf8,
            Self::Utf8View => ArrowType::Utf8View,
        }
    }

    /// The Arrow type for bytes.
    pub fn binary_type(self) -> ArrowType {
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
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
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
    pub fn fixed_size(&self) -> Option<usize> {
        Some(match self {
            Self::Bool | Self::Int8 | Self::UInt8 => 1,
            Self::Int16 | Self::UInt16 => 2,
            Self::Int32 | Self::UInt32 | Self::Float32 => 4,
            Self::Int64 | Self::UInt64 | Self::Float64 => 8,
            Self::FixedUtf32 { chars } => chars * 4,
            Self::NullTerminatedBytes { length } => *length,
            Self::String | Self::Bytes => return None,
        })
    }

    /// Whether values are text (read as an Arrow string type).
    pub fn is_text(&self) -> bool {
        matches!(self, Self::String | Self::FixedUtf32 { .. })
    }

    /// Whether values are byte strings (read as an Arrow binary type).
    pub fn is_binary(&self) -> bool {
        matches!(self, Self::Bytes | Self::NullTerminatedBytes { .. })
    }

    /// The Arrow type this data type is read into.
    pub fn arrow_type(&self, string_type: StringType) -> ArrowType {
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
            Self::Float32 => ArrowType::Float32,
            Self::Float64 => ArrowType::Float64,
            Self::String | Self::FixedUtf32 { .. } => string_type.string_type(),
            Self::Bytes | Self::NullTerminatedBytes { .. } => string_type.binary_type(),
        }
    }

    /// The Zarr v3 spelling, as `zarrow info` prints it.
    pub fn zarr_name(&self) -> String {
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
            Self::Float32 => "float32".into(),
            Self::Float64 => "float64".into(),
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
            "float32" => Self::Float32,
            "float64" => Self::Float64,
            "string" => Self::String,
            "variable_length_bytes" | "bytes" | "binary" => Self::Bytes,
            _ => return None,
        })
    }
}

/// The most Arrow memory an element may need besides its value bytes: a 16-byte
/// view, or a 16-byte (array, index) pick when chunks are gathered. A chunk shape
/// is refused when `elements * ARROW_BYTES_PER_ELEMENT` exceeds the byte limit.
pub(crate) const ARROW_BYTES_PER_ELEMENT: usize = 16;

impl DataType {
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
pub enum Endian {
    /// Little-endian (the default, and the machine order zarrow runs on).
    #[default]
    Little,
    /// Big-endian.
    Big,
}
