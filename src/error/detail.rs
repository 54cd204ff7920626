//! The typed details some [`Error`](super::Error) variants carry: what kind of
//! node, which limit, why a name or a shape is refused. Each has the `Display`
//! its variant's message is made of.

use std::fmt;

use arrow_schema::DataType as ArrowType;

use super::{Cut, Skipped};

/// What a Zarr node is ([`Error::WrongNodeKind`](super::Error::WrongNodeKind)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeKind {
    /// An array (`zarr.json` with `node_type: array`, or `.zarray`).
    Array,
    /// A group (`zarr.json` with `node_type: group`, or `.zgroup`).
    Group,
}

impl NodeKind {
    /// `an array` / `a group`.
    pub(crate) fn with_article(self) -> &'static str {
        match self {
            NodeKind::Array => "an array",
            NodeKind::Group => "a group",
        }
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NodeKind::Array => "array",
            NodeKind::Group => "group",
        })
    }
}

/// Why a name cannot be a Zarr node's ([`Error::InvalidName`](super::Error::InvalidName)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// It is the name of a metadata document (`zarr.json`, `.zarray`...).
    MetadataDocument,
    /// `.`, `..`, a leading `__` or a backslash.
    Reserved,
    /// It is empty.
    Empty,
    /// It contains `/`, which separates node names.
    Slash,
    /// Two columns have it.
    Duplicate,
}

/// [`Error::Metadata`](super::Error::Metadata)'s message: `invalid metadata in
/// zarr.json: shape: expected an array of non-negative integers, found "x"`.
pub(super) fn invalid_metadata(
    key: &str,
    field: &str,
    codec: Option<&str>,
    expected: &str,
    found: Option<&str>,
) -> String {
    let mut text = format!("invalid metadata in {key}: ");
    if let Some(codec) = codec {
        text.push_str(&format!("codec {:?}, ", Cut(codec)));
    }
    text.push_str(&format!("{}: expected {}", Cut(field), Cut(expected)));
    if let Some(found) = found {
        text.push_str(&format!(", found {found}"));
    }
    text
}

pub(super) fn invalid_linear(field: &str, expected: &str, found: Option<&str>) -> String {
    let mut text = format!("linear format: {}: expected {}", Cut(field), Cut(expected));
    if let Some(found) = found {
        text.push_str(&format!(", found {found}"));
    }
    text
}

pub(super) fn invalid_name(name: &str, reason: NameError) -> String {
    let name = Cut(name);
    match reason {
        NameError::MetadataDocument => format!(
            "{name:?} cannot be a Zarr node name: it is the name of a Zarr metadata document"
        ),
        NameError::Reserved => format!(
            "{name:?} cannot be a Zarr node name (empty, '.', '..', a leading '__' or a backslash)"
        ),
        NameError::Empty => "an empty column name cannot be a Zarr node name".to_string(),
        NameError::Slash => {
            format!("column name {name:?} contains '/', which Zarr node names cannot")
        }
        NameError::Duplicate => format!("column name {name:?} appears twice"),
    }
}

/// What is wrong with a shape given to a writer ([`Error::InvalidShape`](super::Error::InvalidShape)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The values are not as many as the shape's elements.
    ValuesDoNotFill {
        /// How many values there are.
        values: u64,
    },
    /// The chunk shape has another number of dimensions than the shape.
    ChunkRank {
        /// The chunk shape.
        chunk: Vec<u64>,
    },
    /// A shard length (`shard_len`) was given for an array that is not 1-D.
    ShardLenOfNd,
    /// The shard shape is not a multiple of the chunk shape in every dimension.
    ShardNotMultiple {
        /// The shard shape.
        shard: Vec<u64>,
        /// The chunk shape.
        chunk: Vec<u64>,
    },
    /// A chunk or shard shape (or length, as a 1-element shape) with an extent of 0.
    ZeroExtent,
}

pub(super) fn invalid_shape(shape: &[u64], problem: &ShapeProblem) -> String {
    match problem {
        ShapeProblem::ValuesDoNotFill { values } => {
            format!("{values} values do not fill shape {shape:?}")
        }
        ShapeProblem::ChunkRank { chunk } => format!(
            "chunk shape {chunk:?} does not have the {} dimensions of shape {shape:?}",
            shape.len()
        ),
        ShapeProblem::ShardLenOfNd => {
            format!("shard_len shards 1-D arrays; give an array of shape {shape:?} a shard_shape")
        }
        ShapeProblem::ShardNotMultiple { shard, chunk } => format!(
            "shard shape {shard:?} is not a multiple of the chunk shape {chunk:?} in every dimension"
        ),
        ShapeProblem::ZeroExtent => {
            format!("chunk and shard shapes need extents of at least 1, not {shape:?}")
        }
    }
}

/// What refuses an Arrow type ([`Error::UnsupportedArrowType`](super::Error::UnsupportedArrowType)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArrowTypeUse {
    /// zarrow's Zarr writer: the type has no Zarr data type.
    Zarr,
    /// Writing nulls as the fill value: the type has none.
    FillNulls,
    /// The linear exchange format: the type has no form there.
    Linear,
}

pub(super) fn unsupported_arrow_type(
    column: Option<&str>,
    data_type: &ArrowType,
    by: ArrowTypeUse,
) -> String {
    let prefix = column
        .map(|c| format!("column {:?}: ", Cut(c)))
        .unwrap_or_default();
    match (by, column) {
        (ArrowTypeUse::Zarr, Some(c)) => format!(
            "column {:?} has Arrow type {data_type}, which zarrow does not write (strings, bytes, integers, floats, bools, timestamps, dates and durations)",
            Cut(c)
        ),
        (ArrowTypeUse::Zarr, None) => format!(
            "Arrow type {data_type} is not one zarrow writes (strings, bytes, integers, floats, bools, timestamps, dates and durations)"
        ),
        (ArrowTypeUse::FillNulls, _) => format!("{prefix}cannot fill nulls of {data_type}"),
        (ArrowTypeUse::Linear, _) => {
            format!("{prefix}the linear format has no form for {data_type}")
        }
    }
}

/// How the rows appended differ from the table they go to
/// ([`Error::AppendMismatch`](super::Error::AppendMismatch)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppendMismatch {
    /// The input's columns are not the table's.
    Columns {
        /// The table's columns the input lacks.
        missing: Vec<String>,
        /// The input's columns the table lacks.
        extra: Vec<String>,
    },
    /// A column holds values of another type than the input's.
    DataType {
        /// The column.
        column: String,
        /// The stored Zarr data type.
        stored: String,
        /// The Zarr data type the input's values would be stored as.
        input: String,
        /// The input's Arrow type.
        arrow_type: ArrowType,
    },
    /// A categorical column's stored codes are not signed integers.
    CodesType {
        /// The column.
        column: String,
        /// The stored codes' Arrow type.
        codes: ArrowType,
    },
    /// A column is stored as a group that is no element zarrow appends to.
    GroupColumn {
        /// The column.
        column: String,
        /// Its anndata `encoding-type`, when it has one.
        encoding: Option<String>,
    },
    /// The table's index holds labels, and the input gives none.
    IndexLabels {
        /// The index array.
        index: String,
        /// Its Zarr data type.
        data_type: String,
    },
    /// The table is not an anndata dataframe, but the input asks for that layout.
    NotADataFrame,
    /// The table's columns differ in length: it is no table.
    RowsDiffer {
        /// A column.
        column: String,
        /// Its rows.
        rows: u64,
        /// A column of another length.
        other: String,
        /// Its rows.
        other_rows: u64,
    },
}

pub(super) fn append_mismatch(path: &str, reason: &AppendMismatch) -> String {
    let path = Cut(path);
    match reason {
        AppendMismatch::Columns { missing, extra } => format!(
            "the input's columns are not {path}'s: missing {missing:?}, not in the table {extra:?}"
        ),
        AppendMismatch::DataType {
            column,
            stored,
            input,
            arrow_type,
        } => format!(
            "column {:?}: the table holds {stored} values, the input {input} ({arrow_type})",
            Cut(column)
        ),
        AppendMismatch::CodesType { column, codes } => format!(
            "column {:?}: its stored codes are {codes}, not signed integers",
            Cut(column)
        ),
        AppendMismatch::GroupColumn { column, encoding } => format!(
            "column {:?} is stored as a group ({}) that zarrow does not append rows to",
            Cut(column),
            Cut(encoding.as_deref().unwrap_or("no anndata element"))
        ),
        AppendMismatch::IndexLabels { index, data_type } => format!(
            "the table's index {:?} holds {data_type} labels: give the new rows' labels (the pandas index, or a column named as it)",
            Cut(index)
        ),
        AppendMismatch::NotADataFrame => {
            format!("{path} is not an anndata dataframe: the anndata layout does not apply to it")
        }
        AppendMismatch::RowsDiffer {
            column,
            rows,
            other,
            other_rows,
        } => format!(
            "{path} is no table: its column {:?} holds {other_rows} rows, {:?} {rows}",
            Cut(other),
            Cut(column)
        ),
    }
}

/// How a writer's input changed between batches ([`Error::SchemaChanged`](super::Error::SchemaChanged)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaChange {
    /// A batch has another number of columns than the first.
    ColumnCount {
        /// The writer's columns.
        expected: usize,
        /// The batch's.
        found: usize,
    },
    /// A column's values are of another type than its first batch's.
    DataType {
        /// The column.
        column: String,
        /// The column's type.
        expected: ArrowType,
        /// The batch's.
        found: ArrowType,
    },
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaChange::ColumnCount { expected, found } => {
                write!(f, "batch has {found} columns, the group {expected}")
            }
            SchemaChange::DataType {
                column,
                expected,
                found,
            } => write!(
                f,
                "column {:?}: got {found} values after {expected}",
                Cut(column)
            ),
        }
    }
}

/// What zarrow was doing when it found a location that holds something other
/// than a Zarr store ([`Error::NotAZarrStore`](super::Error::NotAZarrStore)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreAction {
    /// Opening it to read.
    Open,
    /// Replacing it (an overwrite): zarrow replaces only a Zarr store.
    Replace,
    /// Appending rows to it: an append makes a group only where there is none.
    Append,
}

pub(super) fn not_a_zarr_store(path: &str, entries: Option<u64>, action: StoreAction) -> String {
    let path = Cut(path);
    match (action, entries) {
        (StoreAction::Open, _) => format!("{path} is not a Zarr array or group directory"),
        (StoreAction::Replace, None) => format!(
            "{path} exists and is not a Zarr store: refusing to replace it even with --overwrite"
        ),
        (StoreAction::Replace, Some(n)) => format!(
            "{path} holds {n} objects but no Zarr store (zarr.json, .zgroup or .zarray at its root): zarrow replaces only a Zarr store"
        ),
        (StoreAction::Append, n) => format!(
            "{path} holds {} keys but no Zarr group (zarr.json or .zgroup): an append makes a group only where there is none",
            n.map_or_else(|| "some".to_string(), |n| n.to_string())
        ),
    }
}

/// Which limit was exceeded ([`Error::LimitExceeded`](super::Error::LimitExceeded)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitKind {
    /// The rows a conversion reads (`--max-rows`, `max_rows`).
    Rows,
    /// The Arrow bytes a conversion makes (`--max-bytes`, `max_bytes`).
    Bytes,
    /// The elements one read into memory takes (the address space).
    Elements,
    /// The bytes of one chunk a writer would write (`DEFAULT_MAX_CHUNK_BYTES`).
    ChunkBytes,
}

pub(super) fn limit_exceeded(what: &str, limit: LimitKind, value: u64, max: u64) -> String {
    let what = Cut(what);
    match limit {
        LimitKind::Rows => format!(
            "{what} has {value} rows, over the limit of {max} (its shape may promise more than it stores: missing chunks read as the fill value); pass --max-rows {value} to convert it anyway"
        ),
        LimitKind::Bytes => format!(
            "{what} would give at least {value} bytes of Arrow data, over the limit of {max}; pass --max-bytes {value} to convert it anyway"
        ),
        LimitKind::Elements => {
            format!("{what}: {value} elements are too many to read whole (at most {max} in memory)")
        }
        LimitKind::ChunkBytes => format!(
            "{what}: its chunks of {value} bytes are larger than zarrow writes ({max} bytes)"
        ),
    }
}

/// Why a conversion between two formats is refused
/// ([`Error::UnsupportedConversion`](super::Error::UnsupportedConversion)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Conversion {
    /// Both ends are Zarr stores.
    BothZarr {
        /// The output.
        dst: String,
    },
    /// A group of several arrays to a JSON (linear-format) file, which holds one.
    GroupToJson {
        /// The group's arrays.
        arrays: usize,
    },
    /// An append from a linear-format file (appends take a table file).
    AppendLinear,
    /// A CSV of linear-format columns to a table (their arrays may differ in shape).
    CsvToTable,
    /// A table file's name given as the Zarr output.
    TableFileAsZarr,
    /// An input that is neither a Zarr store nor a file of a format zarrow
    /// reads.
    UnknownInput,
    /// A linear-format `.json` file read as a SQL table.
    LinearAsTable {
        /// The table's name in the query.
        table: String,
    },
    /// Chunk statistics asked of a store zarrow cannot write (plain HTTP).
    ReadOnlyStats,
}

pub(super) fn unsupported_conversion(path: &str, reason: &Conversion) -> String {
    let path = Cut(path);
    match reason {
        Conversion::BothZarr { dst } => format!(
            "{path} and {} are both Zarr stores: zarrow converts Zarr to a table file or a table file to Zarr",
            Cut(dst)
        ),
        Conversion::GroupToJson { arrays } => format!(
            "{path} is a group of {arrays} arrays: a JSON file holds one array (convert to .csv, or convert one array)"
        ),
        Conversion::AppendLinear => format!(
            "{path}: an append takes a table file (.parquet, .arrow / .ipc / .feather, .arrows): a linear-format file holds whole arrays"
        ),
        Conversion::CsvToTable => format!(
            "{path}: a CSV of linear-format columns converts to a Zarr group (OUT.zarr): its arrays may differ in shape"
        ),
        Conversion::TableFileAsZarr => {
            format!("{path} names a table file; a Zarr output is a directory (NAME.zarr)")
        }
        Conversion::UnknownInput => format!(
            "{path} is neither a Zarr directory nor a .parquet / .arrow / .ipc / .feather / .arrows / .json / .csv file"
        ),
        Conversion::ReadOnlyStats => format!(
            "{path} is read-only (plain HTTP): its chunk statistics cannot be recorded; record them where the store is written"
        ),
        Conversion::LinearAsTable { table } => format!(
            "table {} ({path}): a .json file holds the linear format (an N-d array), not a table; tables are Zarr stores and .parquet / .pq, .arrow / .ipc / .feather / .arrows and .csv files",
            Cut(table)
        ),
    }
}

/// A conditional write an object store cannot do
/// ([`Error::ConditionalWriteUnsupported`](super::Error::ConditionalWriteUnsupported)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConditionalWrite {
    /// Create an object only if it is absent (`PutMode::Create`).
    CreateIfAbsent,
    /// Replace an object only if it is unchanged (`PutMode::Update`).
    ReplaceIfUnchanged,
}

impl fmt::Display for ConditionalWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConditionalWrite::CreateIfAbsent => {
                "this object store cannot create an object only if it is absent, so two writers cannot be kept apart"
            }
            ConditionalWrite::ReplaceIfUnchanged => {
                "the lease ran out, and this object store cannot replace it conditionally; delete it if its writer is gone"
            }
        })
    }
}

/// Why the arrays of a group cannot form one table ([`Error::Table`](super::Error::Table)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TableProblem {
    /// A projected column is a child that is not a column.
    Skipped(Skipped),
    /// A projected column is not a child.
    NoSuchColumn {
        /// The name asked for.
        name: String,
        /// The columns there are.
        have: Vec<String>,
    },
    /// The group has no columns.
    NoColumns,
    /// A variable of a long table has no dimension names.
    NoDimensionNames {
        /// The variable.
        variable: String,
    },
    /// A dimension has two lengths in two variables.
    DimensionLengths {
        /// The dimension.
        dimension: String,
        /// Its length in one variable.
        length: u64,
        /// Its length in `variable`.
        other_length: u64,
        /// The variable.
        variable: String,
    },
    /// A projected variable is not one.
    NoSuchVariable {
        /// The name asked for.
        name: String,
    },
    /// The grid has more points than a `u64` counts.
    GridTooLarge,
    /// A column's stored values ended before the rows its metadata promised.
    ColumnEnded {
        /// The column.
        column: String,
        /// The row it did not reach.
        row: u64,
    },
}

impl fmt::Display for TableProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableProblem::Skipped(s) => write!(f, "{:?} is {}", Cut(&s.name), s.reason),
            TableProblem::NoSuchColumn { name, have } => write!(
                f,
                "no column named {:?} (have: {})",
                Cut(name),
                Cut(&have.join(", "))
            ),
            TableProblem::NoColumns => f.write_str("it has no columns"),
            TableProblem::NoDimensionNames { variable } => write!(
                f,
                "{:?} has no dimension names (dimension_names / _ARRAY_DIMENSIONS), so its place in the grid is unknown",
                Cut(variable)
            ),
            TableProblem::DimensionLengths {
                dimension,
                length,
                other_length,
                variable,
            } => write!(
                f,
                "dimension {:?} has length {length} in one variable and {other_length} in {:?}",
                Cut(dimension),
                Cut(variable)
            ),
            TableProblem::NoSuchVariable { name } => {
                write!(f, "no variable named {:?}", Cut(name))
            }
            TableProblem::GridTooLarge => f.write_str("the grid has more than 2^64 points"),
            TableProblem::ColumnEnded { column, row } => {
                write!(f, "column {} ended before row {row}", Cut(column))
            }
        }
    }
}

/// Where a front end says how to replace an output that exists
/// ([`Error::AlreadyExists`](super::Error::AlreadyExists)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overwrite {
    /// The library: `WriteOptions::with_overwrite`.
    WriteOptions,
    /// A conversion (`zarrow convert`, `zarrow.convert`): `--overwrite` / `overwrite`.
    Convert,
    /// SQL: `OPTIONS (overwrite true)` or `OPTIONS (append true)`.
    Sql,
}
