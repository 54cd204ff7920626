//! The one error type of zarrow.
//!
//! [`Error`] is what every public entry point returns. Problems found inside a
//! single chunk are [`ChunkError`]s: the sans-IO decoders know no store key, so the
//! reader wraps them in [`Error::Chunk`] together with the key they came from.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{ArrowError, DataType as ArrowType};

mod chunk;
mod convention;
mod detail;
mod fields;
mod kind;
#[cfg(feature = "object-store")]
pub(crate) mod location;
mod skip;

pub use chunk::{ChunkError, EncodeError};
pub use convention::{Convention, ConventionError};
pub use detail::{
    AppendMismatch, ArrowTypeUse, ConditionalWrite, Conversion, LimitKind, NameError, NodeKind,
    Overwrite, SchemaChange, ShapeProblem, StoreAction, TableProblem,
};
pub use kind::ErrorKind;
#[cfg(feature = "object-store")]
pub(crate) use location::LocationError;
pub use skip::{SkipReason, Skipped};

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
        reason: LocationError,
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
    /// A metadata document is valid JSON but not valid Zarr metadata: which
    /// document, which field of it, what was expected there and what was found.
    /// A codec's configuration that it does not take is one too, naming the codec.
    #[error("{}", detail::invalid_metadata(key, field, codec.as_deref(), expected, found.as_deref()))]
    Metadata {
        /// The document's store key (`obs/zarr.json`, `x/.zarray`).
        key: String,
        /// The field at fault, as a path into the document (`shape`,
        /// `chunk_grid.configuration.chunk_shape`, `fill_value`, `codecs`); for a
        /// codec's configuration, the path inside its configuration (`level`).
        field: String,
        /// The codec whose configuration (or place in the chain) is at fault, as
        /// the document names it (boxed, as `found`: the error stays small).
        codec: Option<Box<str>>,
        /// What was expected there, as a phrase (`a non-negative integer`).
        expected: String,
        /// What was there instead, as JSON or a phrase, cut to 200 characters;
        /// `None` when the field is missing or the expectation says it all.
        found: Option<Box<str>>,
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
    /// A write to an Icechunk tag or snapshot: only a branch takes commits.
    #[error("{location}: the {version} is read-only (write to a branch: ?branch=NAME)")]
    ReadOnlyVersion {
        /// The location.
        location: String,
        /// The version it names (`tag v1`, `snapshot ...`).
        version: String,
    },
    /// Another writer kept committing to the branch: this write's commit found
    /// the branch moved each time it tried, and nothing of it was committed.
    #[error(
        "{location}: branch {branch:?} kept moving under this write ({attempts} commits tried, each after another writer's): nothing was committed; try again"
    )]
    Conflict {
        /// The location.
        location: String,
        /// The branch.
        branch: String,
        /// The commits tried.
        attempts: u32,
    },
    /// The node or file to write exists already.
    #[error("{}", already_exists(path, *overwrite))]
    AlreadyExists {
        /// The node path ("" is the store root), or the output's path or URL.
        path: String,
        /// How the front end that refused replaces it.
        overwrite: Overwrite,
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
    /// A linear-exchange-format document (or CSV) breaks the RFC: which field,
    /// what was expected there and what was found.
    #[error("{}", detail::invalid_linear(field, expected, found.as_deref()))]
    Linear {
        /// The header field (`shape`, `dtype`, ...), `data`, `json`, `csv` or a
        /// CSV column (`column "x": data`) at fault.
        field: String,
        /// What was expected there, as a phrase (`a non-negative integer`).
        expected: String,
        /// What was there instead, cut to 200 characters; `None` when the field is
        /// missing or the expectation says it all.
        found: Option<Box<str>>,
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
    /// The runtime for async I/O could not start (the operating system
    /// refused its threads).
    #[error("starting zarrow's runtime for I/O: {source}")]
    Runtime {
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A task on the thread pool panicked: a zarrow bug.
    #[error("a {task} panicked (a zarrow bug: please report it)")]
    Panicked {
        /// What the task was doing.
        task: &'static str,
    },
    /// An option key that is not one of its group's.
    #[error("unknown {group} option {:?} ({})", Cut(key), known.join(", "))]
    UnknownOption {
        /// The options' group (`write`, `convert`, `ZARR table`).
        group: &'static str,
        /// The key given.
        key: String,
        /// The keys the group has.
        known: Vec<&'static str>,
    },
    /// Two options (or option values) that cannot be given together.
    #[error("{}", option_conflict(option, other, why))]
    OptionConflict {
        /// One option (with its value when that is what conflicts).
        option: String,
        /// The other (or others).
        other: String,
        /// Why they conflict, when it is not plain; empty otherwise.
        why: &'static str,
    },
    /// Options given where they do not apply.
    #[error("{} appl{} to {applies_to}", and_list(options), if options.len() == 1 { "ies" } else { "y" })]
    OptionNotApplicable {
        /// The options (as the front end spells them: `--append`, `append`).
        options: Vec<&'static str>,
        /// Where they apply.
        applies_to: &'static str,
    },
    /// A node of another kind than the operation needs.
    #[error("{path:?} is {}, not {}", found.with_article(), expected.with_article())]
    WrongNodeKind {
        /// The node: the store's location and the node path.
        path: String,
        /// What the operation needs.
        expected: NodeKind,
        /// What it is.
        found: NodeKind,
    },
    /// An operation on rows given an array of more than one dimension.
    #[error("{operation} needs a 1-D array; {path:?} has shape {shape:?}")]
    NotOneDimensional {
        /// The array: the store's location and the node path.
        path: String,
        /// Its shape.
        shape: Vec<u64>,
        /// The operation (`read_range`, `a row selection (rows, limit)`, `an append (only 1-D arrays grow by rows)`).
        operation: &'static str,
    },
    /// A row range outside an array or table.
    #[error("rows {start}..{end} are outside {path:?} ({len} rows)")]
    RowsOutOfRange {
        /// The array or table: the store's location and the node path.
        path: String,
        /// The range's start.
        start: u64,
        /// Its end.
        end: u64,
        /// The rows there are.
        len: u64,
    },
    /// A name that cannot be a Zarr node's (a column's, when writing).
    #[error("{}", detail::invalid_name(name, *reason))]
    InvalidName {
        /// The name.
        name: String,
        /// Why not.
        reason: NameError,
    },
    /// A shape, chunk shape or shard shape a writer cannot use.
    #[error("{}", detail::invalid_shape(shape, problem))]
    InvalidShape {
        /// The array's shape (for [`ShapeProblem::ZeroExtent`], the chunk or shard shape).
        shape: Vec<u64>,
        /// What is wrong.
        problem: ShapeProblem,
    },
    /// An Arrow type that zarrow does not write (or fill, or put in the linear format).
    #[error("{}", detail::unsupported_arrow_type(column.as_deref(), data_type, *by))]
    UnsupportedArrowType {
        /// The column, when there is one.
        column: Option<String>,
        /// The type.
        data_type: ArrowType,
        /// What refuses it.
        by: ArrowTypeUse,
    },
    /// Rows appended to a table that do not fit it.
    #[error("{}", detail::append_mismatch(path, reason))]
    AppendMismatch {
        /// The table: the store's location and the node path.
        path: String,
        /// How they differ.
        reason: AppendMismatch,
    },
    /// A writer's input changed its columns or types between batches.
    #[error("{change}")]
    SchemaChanged {
        /// How.
        change: SchemaChange,
    },
    /// A location that holds something, but no Zarr store.
    #[error("{}", detail::not_a_zarr_store(path, *entries, *action))]
    NotAZarrStore {
        /// The location: a path or URL.
        path: String,
        /// The files or objects it holds, when counted.
        entries: Option<u64>,
        /// What zarrow was doing.
        action: StoreAction,
    },
    /// A limit in force exceeded.
    #[error("{}", detail::limit_exceeded(what, *limit, *value, *max))]
    LimitExceeded {
        /// What exceeds it: an array, a table, a column.
        what: String,
        /// Which limit.
        limit: LimitKind,
        /// The amount asked for.
        value: u64,
        /// The limit.
        max: u64,
    },
    /// A path whose format zarrow cannot tell from its name.
    #[error("cannot tell the output format of {}: use {expected}", Cut(path))]
    UnknownFormat {
        /// The path.
        path: String,
        /// The formats (extensions) that would do.
        expected: &'static str,
    },
    /// A conversion zarrow does not make.
    #[error("{}", detail::unsupported_conversion(path, reason))]
    UnsupportedConversion {
        /// The source (or the output, for a refused output).
        path: String,
        /// Why not.
        reason: Conversion,
    },
    /// An object store that cannot make a conditional write two writers need to
    /// be kept apart.
    #[error("{location}: {operation}")]
    ConditionalWriteUnsupported {
        /// The object's URL.
        location: String,
        /// The write.
        operation: ConditionalWrite,
        /// What the store said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An answer pushed to a decoder for a request it is not waiting for.
    #[error("no request {id} is waiting for an answer")]
    UnknownRequest {
        /// The request's id.
        id: u64,
    },
    /// A Parquet compression zarrow's writer does not take.
    #[error(
        "Parquet compression {} (accepted: {accepted}): {problem}",
        short_quote(value)
    )]
    ParquetCompression {
        /// The compression as given.
        value: String,
        /// The forms accepted.
        accepted: &'static str,
        /// What is wrong with it.
        problem: &'static str,
        /// The parquet crate's error, when it refused the name.
        #[source]
        source: Option<parquet::errors::ParquetError>,
    },
    /// A state zarrow should never reach: a zarrow bug.
    #[error("{what} (a zarrow bug: please report it)")]
    Internal {
        /// What went wrong.
        what: &'static str,
    },
    /// The memory a read may hold (its read-ahead) is more than its budget (an
    /// engine's memory pool) allows.
    #[error("{what} needs {bytes} bytes more than the memory budget allows: {source}")]
    MemoryExhausted {
        /// What asked for the memory.
        what: String,
        /// How much it asked for in all.
        bytes: u64,
        /// The budget's answer (an engine's memory pool's error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
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
    #[error("{path:?} cannot be read as a table: {problem}")]
    Table {
        /// The group (or array): the store's location and the node path.
        path: String,
        /// Why not.
        problem: TableProblem,
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
        skipped: Vec<Skipped>,
    },
    /// A node's anndata or CF attributes ask for something zarrow cannot do (a
    /// calendar other than the Gregorian one, a categorical code past its
    /// categories).
    #[error("{path:?}: {source}")]
    Convention {
        /// The array or group (the store's location and the node path), or the
        /// column written.
        path: String,
        /// Whose convention.
        convention: Convention,
        /// What and why (shared: a [`Skipped`] child keeps it too).
        #[source]
        source: Arc<ConventionError>,
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

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The first 24 characters of `value`, quoted (the accepted forms that follow
/// must not be cut off by a long input).
fn short_quote(value: &str) -> String {
    let mut shown = format!("{:?}", value.chars().take(24).collect::<String>());
    if value.chars().nth(24).is_some() {
        shown.push_str("...");
    }
    shown
}

fn option_conflict(option: &str, other: &str, why: &str) -> String {
    let (option, other) = (Cut(option), Cut(other));
    if why.is_empty() {
        format!("{option} and {other} exclude each other")
    } else {
        format!("{option} and {other} exclude each other: {why}")
    }
}

fn already_exists(path: &str, overwrite: Overwrite) -> String {
    let path = Cut(path);
    match overwrite {
        Overwrite::WriteOptions => {
            format!("{path:?} exists already (WriteOptions::with_overwrite replaces it)")
        }
        Overwrite::Convert => format!("{path} exists (pass --overwrite to replace it)"),
        Overwrite::Sql => format!(
            "{path} exists: OPTIONS (overwrite true) replaces it, OPTIONS (append true) adds the rows to it"
        ),
    }
}

/// ` (skipped: a; b)` for a non-empty list.
fn skipped_list(skipped: &[Skipped]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let names: Vec<String> = skipped.iter().map(ToString::to_string).collect();
    format!(" (skipped: {})", names.join("; "))
}

/// `text` cut to [`MAX_ECHO_CHARS`] characters (as [`Cut`] shows it), for a field
/// an error keeps cut.
pub(crate) fn cut_owned(text: &str) -> String {
    Cut(text).to_string()
}

/// Displays a string cut to [`MAX_ECHO_CHARS`] characters, saying how much was left
/// out: a hostile document's million-character name must not flood a terminal. The
/// error keeps the whole string for programs that want it.
pub(crate) struct Cut<'a>(pub(crate) &'a str);

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

    /// An [`Error::Metadata`]: in the document at `key`, `field` is not `expected`.
    pub(crate) fn metadata(
        key: &str,
        field: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        Error::Metadata {
            key: key.to_string(),
            field: field.into(),
            codec: None,
            expected: expected.into(),
            found: None,
        }
    }

    /// An [`Error::Linear`]: `field` was expected to be `expected`, and `found`
    /// (cut to [`MAX_ECHO_CHARS`] characters) when given.
    pub(crate) fn linear(
        field: impl Into<String>,
        expected: impl Into<String>,
        found: Option<&dyn std::fmt::Display>,
    ) -> Self {
        Error::Linear {
            field: field.into(),
            expected: expected.into(),
            found: found.map(|f| cut_owned(&f.to_string()).into()),
        }
    }

    /// An [`Error::Metadata`] that also says what was `found` (cut to
    /// [`MAX_ECHO_CHARS`] characters).
    pub(crate) fn metadata_found(
        key: &str,
        field: impl Into<String>,
        expected: impl Into<String>,
        found: impl std::fmt::Display,
    ) -> Self {
        Error::Metadata {
            key: key.to_string(),
            field: field.into(),
            codec: None,
            expected: expected.into(),
            found: Some(cut_owned(&found.to_string()).into()),
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
        let wide = Error::metadata("k", "f", "é".repeat(300));
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
            skipped: vec![Skipped::new(name.clone(), SkipReason::Group)],
        };
        assert!(none.to_string().len() < 400, "{}", none.to_string().len());
    }
}
