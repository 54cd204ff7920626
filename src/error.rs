//! The one error type of zarrow.
//!
//! [`Error`] is what every public entry point returns. Problems found inside a
//! single chunk are [`ChunkError`]s: the sans-IO decoders know no store key, so the
//! reader wraps them in [`Error::Chunk`] together with the key they came from.

use std::path::PathBuf;

use arrow_schema::ArrowError;

/// A `Result` with zarrow's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A value an option does not take: which option, the value, and the values it
/// takes. What every option type's `FromStr` returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} {value:?}: use {allowed}")]
pub struct ParseOptionError {
    /// The option (`encoding`, `string_type`...).
    pub option: &'static str,
    /// The value given.
    pub value: String,
    /// The values it takes, as a phrase (`zstd, gzip, blosc or none`).
    pub allowed: &'static str,
}

impl ParseOptionError {
    pub(crate) fn new(option: &'static str, value: &str, allowed: &'static str) -> Self {
        Self {
            option,
            value: value.to_string(),
            allowed,
        }
    }
}

/// Everything that can go wrong in zarrow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem operation failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A store key is not acceptable (it would leave the store root, or is malformed).
    #[error("invalid store key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A location (a path or URL a user typed) that names nothing zarrow can
    /// open (feature `object-store`).
    #[cfg(feature = "object-store")]
    #[error("{}: {reason}", Cut(location))]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        #[source]
        reason: crate::location::LocationError,
    },
    /// Two locations zarrow converts nothing between (feature `convert`).
    #[cfg(feature = "convert")]
    #[error("{} to {}: {reason}", Cut(src), Cut(dst))]
    Unconvertible {
        /// The input.
        src: String,
        /// The output (empty when the input alone decides).
        dst: String,
        /// Why.
        reason: crate::convert::Unconvertible,
    },
    /// No Zarr array or group metadata was found at a node path.
    #[error("no Zarr array or group at {path:?} (looked for zarr.json, .zarray and .zgroup)")]
    NodeNotFound {
        /// The node: the store's location joined with the node path.
        path: String,
    },
    /// A stored value is larger than the caller allows.
    #[error("{key} is {size} bytes, over the limit of {limit} bytes")]
    ValueTooLarge {
        /// The key.
        key: String,
        /// Its size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// Reading a whole array (or a range of it) into memory would exceed the bound
    /// in force.
    #[error(
        "reading {elements} elements of {path:?} would take at least {bytes} bytes, over the limit of {limit} (ReadOptions::max_read_bytes); stream it in batches instead"
    )]
    ReadTooLarge {
        /// The array's node path.
        path: String,
        /// Elements asked for.
        elements: u64,
        /// The least Arrow memory they take.
        bytes: u64,
        /// The limit in force.
        limit: u64,
    },
    /// A metadata document is not valid JSON.
    #[error("{key} is not valid JSON: {source}")]
    Json {
        /// The metadata key.
        key: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A metadata document is valid JSON but not valid Zarr metadata.
    #[error("invalid metadata in {key}: {}", Cut(message))]
    Metadata {
        /// The metadata key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A codec that zarrow does not implement.
    #[error("unsupported codec {:?} in {key}", Cut(name))]
    UnsupportedCodec {
        /// The codec's name or id as written in the metadata.
        name: String,
        /// The metadata key.
        key: String,
    },
    /// A codec zarrow implements behind a cargo feature this build leaves out
    /// (`blosc` and `lzma`, on by default, build C libraries).
    #[error(
        "codec {:?} in {key} needs zarrow's `{feature}` feature, which this build leaves out",
        Cut(name)
    )]
    CodecNotBuilt {
        /// The codec's name or id as written in the metadata.
        name: String,
        /// The cargo feature that builds it.
        feature: &'static str,
        /// The metadata key.
        key: String,
    },
    /// A data type that zarrow does not implement.
    #[error("unsupported data type {} in {key}", Cut(name))]
    UnsupportedDataType {
        /// The data type as written in the metadata.
        name: String,
        /// The metadata key.
        key: String,
    },
    /// A chunk could not be decoded.
    #[error("chunk {key}: {source}")]
    Chunk {
        /// The chunk's store key.
        key: String,
        /// What is wrong with it.
        #[source]
        source: ChunkError,
    },
    /// An Arrow column holds a null, which Zarr cannot store.
    #[error(
        "column {column:?} has a null at row {row}: Zarr has no nulls (NullPolicy::Fill writes nulls as the fill value)"
    )]
    Nulls {
        /// The column.
        column: String,
        /// The first null row.
        row: u64,
    },
    /// Another writer holds the store: it was still held when the wait ran out.
    #[error(
        "another writer is writing to {store} (its lock {lock} was still held after {waited_ms} ms): try again later, or wait longer (lock_timeout)"
    )]
    Busy {
        /// The store.
        store: String,
        /// What is held: a lock file, a lease object.
        lock: String,
        /// How long this writer waited.
        waited_ms: u64,
    },
    /// The node to write exists already.
    #[error("{path:?} exists already (WriteOptions::with_overwrite replaces it)")]
    AlreadyExists {
        /// The node path ("" is the store root).
        path: String,
    },
    /// A chunk could not be encoded.
    #[error("encoding chunk {key} with {}: {source}", Cut(codec))]
    Encode {
        /// The chunk's store key.
        key: String,
        /// The codec that failed (its v3 name, or its whole entry for a layout).
        codec: String,
        /// Why.
        source: EncodeError,
    },
    /// A linear-exchange-format document breaks the RFC.
    #[error("linear format: {}: {}", Cut(field), Cut(message))]
    Linear {
        /// The header field (or `data`, `json`) at fault.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A byte range asked of a store value lies outside it.
    #[error("byte range {}..{} is outside {key} ({len} bytes)", range.start, range.end)]
    RangeOutOfBounds {
        /// The value's key.
        key: String,
        /// The range asked for.
        range: std::ops::Range<u64>,
        /// The value's length.
        len: u64,
    },
    /// Writing an output (a metadata document, CSV, the linear format) failed.
    #[error("writing {what}: {source}")]
    Output {
        /// What was being written.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A task on the thread pool panicked: a zarrow bug.
    #[error("a {task} panicked (a zarrow bug: please report it)")]
    Panicked {
        /// What the task was doing.
        task: &'static str,
    },
    /// A caller-supplied argument is out of range or inconsistent.
    #[error("invalid argument: {}", Cut(.0))]
    InvalidArgument(String),
    /// The memory a read may hold (its read-ahead) is more than its budget (an
    /// engine's memory pool) allows.
    #[error(
        "{what} needs {bytes} bytes more than the memory budget allows: {}",
        Cut(message)
    )]
    MemoryExhausted {
        /// What asked for the memory.
        what: String,
        /// How much it asked for in all.
        bytes: u64,
        /// The budget's answer.
        message: String,
    },

    /// An option's value that is not one it takes.
    #[error(transparent)]
    Option(#[from] ParseOptionError),
    /// A SQL query failed: planning or running it (feature `datafusion`).
    #[error("query: {}", Cut(message))]
    Query {
        /// What failed, on one line (with the cause's own message).
        message: String,
        /// DataFusion's error, when the failure is one (its whole chain).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The arrays of a group cannot form one table.
    #[error("{path:?} cannot be read as a table: {}", Cut(message))]
    Table {
        /// The group (or array): the store's location and the node path.
        path: String,
        /// Why not.
        message: String,
    },
    /// The 1-D arrays of a group differ in length: they are no table's columns.
    #[error(
        "{path:?} cannot be read as a table: columns differ in length: {} has {first_rows} rows, {} has {other_rows} (select equal-length columns)",
        Cut(first),
        Cut(other)
    )]
    LengthsDiffer {
        /// The group: the store's location and the node path.
        path: String,
        /// The first column.
        first: String,
        /// Its rows.
        first_rows: u64,
        /// A column of another length.
        other: String,
        /// Its rows.
        other_rows: u64,
    },
    /// A group with no 1-D array to read as a column.
    #[error(
        "{path:?} cannot be read as a table: it has no 1-D arrays{}",
        Cut(&skipped_list(skipped))
    )]
    NoColumns {
        /// The group: the store's location and the node path.
        path: String,
        /// Its children that are not columns, and why; one without a name is
        /// the group itself (an anndata element that is not a table).
        skipped: Vec<crate::read::Skipped>,
    },
    /// A node's anndata or CF attributes ask for something zarrow cannot do (a
    /// calendar other than the Gregorian one, a categorical code past its
    /// categories).
    #[error("{path:?}: {}", Cut(message))]
    Convention {
        /// The array or group: the store's location and the node path.
        path: String,
        /// Whose convention.
        convention: Convention,
        /// What and why.
        message: String,
    },
    /// A remote store failed: a permanent error (403, a bad URL or configuration)
    /// or a transient one that outlived the retries.
    #[error("{location}: {source}")]
    Remote {
        /// The URL of the store or key.
        location: String,
        /// What `object_store` (or the runtime) said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An error from arrow-rs.
    #[error(transparent)]
    Arrow(ArrowError),
    /// An error from the parquet crate.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// The most characters of an input-derived string (a data type or codec name, a
/// message quoting metadata) that an error message shows.
const MAX_ECHO_CHARS: usize = 200;

/// The conventions zarrow applies on top of Zarr ([`Error::Convention`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Convention {
    /// anndata's element encodings (categoricals, nullable arrays, dataframes).
    AnnData,
    /// CF attributes (xarray's scale, offset, missing values and times).
    Cf,
    /// zarrow's own attributes (a recorded dictionary column).
    Zarrow,
}

/// ` (skipped: a; b)` for a non-empty list.
fn skipped_list(skipped: &[crate::read::Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let names: Vec<String> = skipped.iter().map(ToString::to_string).collect();
    format!(" (skipped: {})", names.join("; "))
}

/// Displays a string cut to [`MAX_ECHO_CHARS`] characters, saying how much was left
/// out: a hostile document's million-character name must not flood a terminal. The
/// error keeps the whole string for programs that want it.
struct Cut<'a>(&'a str);

impl std::fmt::Display for Cut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.char_indices().nth(MAX_ECHO_CHARS) {
            None => f.write_str(self.0),
            Some((end, _)) => write!(
                f,
                "{}... ({} more bytes)",
                &self.0[..end],
                self.0.len() - end
            ),
        }
    }
}

impl std::fmt::Debug for Cut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.char_indices().nth(MAX_ECHO_CHARS) {
            None => write!(f, "{:?}", self.0),
            Some((end, _)) => write!(
                f,
                "{:?}... ({} more bytes)",
                &self.0[..end],
                self.0.len() - end
            ),
        }
    }
}

impl Error {
    /// The message, then each of its sources' that it does not already contain,
    /// joined by `": "`: the one line the command line and the Python package show.
    pub fn with_sources(&self) -> String {
        let mut message = self.to_string();
        // A query's message already holds its cause, on one line.
        if matches!(self, Error::Query { .. }) {
            return message;
        }
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        message
    }

    /// A query error of zarrow's own (no DataFusion error under it).
    #[cfg(feature = "datafusion")]
    pub(crate) fn query(message: impl Into<String>) -> Self {
        Error::Query {
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn metadata(key: &str, message: impl Into<String>) -> Self {
        Error::Metadata {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

impl From<ArrowError> for Error {
    /// zarrow errors that crossed a `RecordBatchReader` (as
    /// `ArrowError::ExternalError`) come back as themselves.
    fn from(e: ArrowError) -> Self {
        match e {
            ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::Arrow(ArrowError::ExternalError(other)),
            },
            other => Error::Arrow(other),
        }
    }
}

impl From<Error> for ArrowError {
    fn from(e: Error) -> Self {
        match e {
            Error::Arrow(a) => a,
            other => ArrowError::ExternalError(Box::new(other)),
        }
    }
}

/// Why a codec could not encode a chunk ([`Error::Encode`] names the chunk and
/// the codec).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// Values the codec cannot hold as given: more than the chunk's elements, an
    /// Arrow type it does not write, a value or chunk past its format's limits.
    #[error("{}", Cut(.0))]
    Values(String),
    /// The compressor (or its C library) failed.
    #[error("{}", Cut(.0))]
    Compress(String),
    /// An inner chunk of a shard, or a section of a layout, failed.
    #[error("{what}: {}: {source}", Cut(codec))]
    Inner {
        /// Which part (`inner chunk 3`, `index`).
        what: String,
        /// Its codec.
        codec: String,
        /// Why.
        source: Box<EncodeError>,
    },
    /// A codec this build of zarrow leaves out (a default feature turned off).
    #[error("this zarrow was built without its `{feature}` feature")]
    NotBuilt {
        /// The cargo feature.
        feature: &'static str,
    },
}

impl EncodeError {
    /// A compressor's failure, from its error.
    pub(crate) fn compress(e: impl std::fmt::Display) -> Self {
        Self::Compress(e.to_string())
    }
}

/// What is wrong with one chunk's bytes. Carries the element index or byte
/// position where that helps find the damage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    /// The chunk ends before a structure it announces.
    #[error("truncated: {what} needs {needed} bytes but only {available} remain")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// The element count stored in the chunk differs from the chunk shape.
    #[error("element count {found} does not match the chunk size {expected}")]
    CountMismatch {
        /// Elements per chunk according to the metadata.
        expected: u64,
        /// Elements the chunk says it holds.
        found: u64,
    },
    /// Bytes are left over after the last element.
    #[error("{extra} trailing bytes after the last element")]
    TrailingBytes {
        /// How many.
        extra: u64,
    },
    /// An offset is smaller than the one before it.
    #[error("offsets decrease at element {element} ({start} > {end})")]
    OffsetsDecrease {
        /// Element index.
        element: usize,
        /// Its start offset.
        start: u64,
        /// Its end offset.
        end: u64,
    },
    /// An offset points past the end of the data.
    #[error("offset {offset} at index {index} is past the end of the data ({data_len} bytes)")]
    OffsetOutOfBounds {
        /// Offset index (0..=n).
        index: usize,
        /// The offset value.
        offset: u64,
        /// Data length in bytes.
        data_len: u64,
    },
    /// The chunk's values do not fit 32-bit Arrow offsets.
    #[error(
        "{bytes} bytes of values do not fit 32-bit Arrow offsets; read with the large type (StringType::LargeUtf8)"
    )]
    OffsetOverflow {
        /// Total value bytes.
        bytes: u64,
    },
    /// A string element is not valid UTF-8.
    #[error("element {element} is not valid UTF-8")]
    InvalidUtf8 {
        /// Element index within the chunk.
        element: usize,
    },
    /// A `fixed_length_utf32` element holds a value that is not a Unicode scalar.
    #[error("element {element} holds {code:#x}, which is not a Unicode scalar value")]
    InvalidCodePoint {
        /// Element index within the chunk.
        element: usize,
        /// The offending code unit.
        code: u32,
    },
    /// The decoded chunk has the wrong size for a fixed-width data type.
    #[error("decoded size {found} bytes, expected {expected} bytes")]
    SizeMismatch {
        /// Bytes expected from the chunk shape and data type.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// A decompressor rejected its input.
    #[error("{codec} decompression failed: {message}")]
    Decompress {
        /// The codec.
        codec: &'static str,
        /// The decompressor's explanation.
        message: String,
    },
    /// A chunk decompresses to more bytes than allowed.
    #[error("{codec} output exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The codec.
        codec: &'static str,
        /// The limit in force (see `ReadOptions::max_chunk_bytes`).
        limit: u64,
    },
    /// Arrow could not assemble the chunk's parts (for example, a shard whose
    /// inner chunks together overflow 32-bit offsets).
    #[error("assembling the chunk: {0}")]
    Arrow(#[source] ArrowError),
    /// A crc32c checksum does not match.
    #[error("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The checksum in the chunk.
        stored: u32,
        /// The checksum of the data.
        computed: u32,
    },
}

impl From<ArrowError> for ChunkError {
    fn from(e: ArrowError) -> Self {
        ChunkError::Arrow(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_input_is_cut() {
        let name = "x".repeat(1_000_000);
        let e = Error::UnsupportedDataType {
            name: name.clone(),
            key: "zarr.json".into(),
        };
        let text = e.to_string();
        assert!(text.len() < 300, "{} characters", text.len());
        assert!(text.contains("999800 more bytes"), "{text}");
        // The error itself keeps the whole name.
        assert!(matches!(e, Error::UnsupportedDataType { name: n, .. } if n == name));
        // Cut on a character boundary, never inside a multi-byte character.
        let wide = Error::metadata("k", "é".repeat(300));
        assert!(wide.to_string().ends_with("(200 more bytes)"));
        // Short input is shown whole.
        let short = Error::UnsupportedCodec {
            name: "lz5".into(),
            key: "k".into(),
        };
        assert_eq!(short.to_string(), "unsupported codec \"lz5\" in k");
        // Column names from a store, in the table errors.
        let lengths = Error::LengthsDiffer {
            path: "g".into(),
            first: name.clone(),
            first_rows: 1,
            other: name.clone(),
            other_rows: 2,
        };
        assert!(
            lengths.to_string().len() < 700,
            "{}",
            lengths.to_string().len()
        );
        let none = Error::NoColumns {
            path: "g".into(),
            skipped: vec![crate::read::Skipped {
                name: name.clone(),
                reason: "a group".into(),
                convention: false,
            }],
        };
        assert!(none.to_string().len() < 400, "{}", none.to_string().len());
    }
}
