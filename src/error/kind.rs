//! [`ErrorKind`]: what kind of failure an [`Error`] is, for a caller that acts on
//! the kind rather than the variant (an exit code, an exception class).

use super::{ChunkError, EncodeError, Error, StoreAction, TableProblem};

/// What kind of failure an [`Error`] is ([`Error::kind`]). The Python package
/// raises one exception class per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A store, node, file or key that is not there.
    NotFound,
    /// Stored data that is corrupt or invalid: a chunk, a store value, a
    /// linear-format document, a Parquet file.
    InvalidData,
    /// Metadata (`zarr.json`, `.zarray`, `.zattrs`...) that is not valid JSON
    /// or not valid Zarr metadata.
    InvalidMetadata,
    /// Something sound that zarrow does not do: a codec, a data type, an Arrow
    /// type, a conversion, a convention's feature, a table of unequal columns.
    Unsupported,
    /// An option: an unknown key, a value it does not take, options that
    /// conflict or do not apply.
    Option,
    /// An argument that does not fit: rows outside the table, a node of the
    /// other kind, a name or shape Zarr cannot hold, nulls, a location.
    InvalidArgument,
    /// The output is in the way: it exists, holds something else, or has
    /// other columns than the rows appended.
    Conflict,
    /// Another writer holds the store.
    Busy,
    /// A file or object store operation failed.
    Io,
    /// A SQL query failed.
    Query,
    /// A limit in force (rows, bytes, memory, chunk size) was exceeded.
    Limit,
    /// A zarrow bug, or an error from a library zarrow does not classify.
    Other,
}

impl Error {
    /// What kind of failure this is. Each variant is placed explicitly, so a
    /// new variant must be placed too.
    pub fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Error::Io { .. }
            | Error::Output { .. }
            | Error::Remote { .. }
            | Error::Runtime { .. } => K::Io,
            Error::NodeNotFound { .. } => K::NotFound,
            #[cfg(feature = "object-store")]
            Error::Location { reason, .. } => {
                use super::LocationError as L;
                match reason {
                    L::Missing => K::NotFound,
                    L::NotBuilt { .. } => K::Unsupported,
                    _ => K::InvalidArgument,
                }
            }
            Error::InvalidKey { .. } => K::InvalidArgument,
            Error::ValueTooLarge { .. }
            | Error::ReadTooLarge { .. }
            | Error::LimitExceeded { .. }
            | Error::MemoryExhausted { .. } => K::Limit,
            Error::Json { .. } | Error::Metadata { .. } => K::InvalidMetadata,
            Error::UnsupportedCodec { .. }
            | Error::CodecNotBuilt { .. }
            | Error::UnsupportedDataType { .. }
            | Error::UnsupportedArrowType { .. }
            | Error::UnsupportedConversion { .. }
            | Error::ConditionalWriteUnsupported { .. }
            | Error::LengthsDiffer { .. }
            | Error::NoColumns { .. } => K::Unsupported,
            Error::Chunk { source, .. } => match source {
                ChunkError::TooLarge { .. } | ChunkError::OffsetOverflow { .. } => K::Limit,
                _ => K::InvalidData,
            },
            Error::Encode { source, .. } => encode_kind(source),
            Error::Linear { .. } | Error::RangeOutOfBounds { .. } => K::InvalidData,
            Error::Table { problem, .. } => match problem {
                TableProblem::ColumnEnded { .. } => K::InvalidData,
                _ => K::Unsupported,
            },
            Error::Nulls { .. }
            | Error::WrongNodeKind { .. }
            | Error::NotOneDimensional { .. }
            | Error::RowsOutOfRange { .. }
            | Error::InvalidName { .. }
            | Error::InvalidShape { .. }
            | Error::SchemaChanged { .. }
            | Error::UnknownFormat { .. }
            | Error::UnknownRequest { .. } => K::InvalidArgument,
            Error::UnknownOption { .. }
            | Error::OptionConflict { .. }
            | Error::OptionNotApplicable { .. }
            | Error::ParquetCompression { .. }
            | Error::Option(_) => K::Option,
            Error::Busy { .. } => K::Busy,
            Error::AlreadyExists { .. } | Error::AppendMismatch { .. } | Error::Conflict { .. } => {
                K::Conflict
            }
            Error::ReadOnlyVersion { .. } => K::InvalidArgument,
            Error::NotAZarrStore { action, .. } => match action {
                StoreAction::Open => K::InvalidData,
                StoreAction::Replace | StoreAction::Append => K::Conflict,
            },
            Error::Query { .. } => K::Query,
            Error::Convention { source, .. } => {
                if source.is_unsupported() {
                    K::Unsupported
                } else {
                    K::InvalidData
                }
            }
            Error::Parquet(e) => match e {
                parquet::errors::ParquetError::NYI(_) => K::Unsupported,
                _ => K::InvalidData,
            },
            Error::Panicked { .. } | Error::Internal { .. } | Error::Arrow(_) => K::Other,
        }
    }
}

fn encode_kind(e: &EncodeError) -> ErrorKind {
    match e {
        EncodeError::TooManyValues { .. }
        | EncodeError::PartialChunk { .. }
        | EncodeError::TypeMismatch { .. }
        | EncodeError::RankMismatch { .. } => ErrorKind::InvalidArgument,
        EncodeError::ShapeOverflow { .. }
        | EncodeError::TooLarge { .. }
        | EncodeError::OffsetOverflow { .. } => ErrorKind::Limit,
        EncodeError::ArrowType { .. } | EncodeError::UnsupportedOption { .. } => {
            ErrorKind::Unsupported
        }
        EncodeError::Arrow { .. } => ErrorKind::Other,
        EncodeError::NotBuilt { .. } => ErrorKind::Unsupported,
        EncodeError::Inner { source, .. } => encode_kind(source),
        EncodeError::Compress { .. } | EncodeError::Blosc { .. } => ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{NodeKind, Overwrite};

    #[test]
    fn kinds_of_some_variants() {
        let missing = Error::NodeNotFound { path: "s/a".into() };
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let busy = Error::Busy {
            store: "s".into(),
            lock: "l".into(),
            waited_ms: 1,
        };
        assert_eq!(busy.kind(), ErrorKind::Busy);
        let exists = Error::AlreadyExists {
            path: "t".into(),
            overwrite: Overwrite::WriteOptions,
        };
        assert_eq!(exists.kind(), ErrorKind::Conflict);
        let wrong = Error::WrongNodeKind {
            path: "s".into(),
            expected: NodeKind::Array,
            found: NodeKind::Group,
        };
        assert_eq!(wrong.kind(), ErrorKind::InvalidArgument);
        assert_eq!(wrong.to_string(), "\"s\" is a group, not an array");
        let corrupt = Error::Chunk {
            key: "c/0".into(),
            source: ChunkError::TrailingBytes { extra: 3 },
        };
        assert_eq!(corrupt.kind(), ErrorKind::InvalidData);
        let too_big = Error::Chunk {
            key: "c/0".into(),
            source: ChunkError::TooLarge {
                codec: "zstd",
                limit: 1,
            },
        };
        assert_eq!(too_big.kind(), ErrorKind::Limit);
        let encode = |source| Error::Encode {
            key: "c/0".into(),
            codec: "vlen-utf8".into(),
            source,
        };
        let past = encode(EncodeError::TooLarge {
            what: "elements in a vlen chunk (a u32 count)",
            size: 1 << 32,
            limit: u32::MAX.into(),
        });
        assert_eq!(past.kind(), ErrorKind::Limit);
        // An inner chunk's error is placed by its own kind.
        let inner = encode(EncodeError::Inner {
            what: "inner chunk 0".into(),
            codec: "bytes".into(),
            source: Box::new(EncodeError::ArrowType {
                codec: "bytes",
                data_type: arrow_schema::DataType::Utf8,
            }),
        });
        assert_eq!(inner.kind(), ErrorKind::Unsupported);
        let more = encode(EncodeError::TooManyValues {
            values: 5,
            capacity: 4,
        });
        assert_eq!(more.kind(), ErrorKind::InvalidArgument);
        // A kind survives a trip through an Arrow stream.
        let crossed = Error::from(arrow_schema::ArrowError::from(corrupt));
        assert_eq!(crossed.kind(), ErrorKind::InvalidData);
    }
}
