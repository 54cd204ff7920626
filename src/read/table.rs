//! A node read as one table, whatever it is: the reader behind `zarrow convert
//! STORE OUT.parquet` and the Python package's `zarrow.read`.
//!
//! - a group: one column per 1-D array ([`ZarrGroup::reader`](super::ZarrGroup::reader)), or with
//!   [`TableOptions::long`] a gridded dataset's long table
//!   ([`ZarrGroup::long_table`](super::ZarrGroup::long_table));
//! - a 1-D array: one column named after it ([`ZarrArray::reader`](super::ZarrArray::reader));
//! - an N-d array: flattened in C order, one batch per chunk row
//!   ([`ZarrArray::batches`](super::ZarrArray::batches)).
//!
//! Copies: none beyond the readers'; batches are passed through as they are.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use super::{ArrayBatchReader, LongTable, ReadOptions, Skipped, TableSource, ZarrArray};
use crate::context::ExecutionContext;
use crate::error::{Error, Result};
use crate::store::Store;

crate::options::options! {
    /// What of a node to read as a table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TableOptions("table") {
        /// [to a table] Of a group: these columns, in this order, comma-separated
        /// (default: every 1-D array); with long, these data variables.
        pub columns: Option<Vec<String>> as crate::options::List = None,
        /// [to a table] Only rows START..END (of 1-D arrays and groups): only the
        /// chunks (and of a sharded array, the inner chunks) those rows lie in are
        /// read.
        pub rows: Option<Range<u64>> as crate::options::Rows = None,
        /// [to a table] At most this many rows (after rows).
        pub limit: Option<u64> as crate::options::Unset = None,
        /// [to a table] Rows per batch, at least 1 (of 1-D arrays and groups;
        /// default: the chunk length, at most 65536).
        pub batch_size: Option<usize> as crate::options::AtLeastOne = None,
        /// [to a table] Read a gridded dataset (xarray's N-d variables with named
        /// dimensions) as a long table, one row per grid point, like
        /// Dataset.to_dataframe(): the dimensions' coordinates first, then the
        /// variables (columns picks them).
        pub long: bool = false,
    }
}

/// A node's table: a [`RecordBatchReader`] with its row count and the children
/// of a group that it does not read.
pub struct TableReader {
    reader: Box<dyn RecordBatchReader + Send>,
    total_rows: u64,
    skipped: Vec<Skipped>,
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("schema", &self.reader.schema())
            .field("total_rows", &self.total_rows)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl TableReader {
    /// The rows this reader yields.
    pub fn total_rows(&self) -> u64 {
        self.total_rows
    }

    /// The children of a group that are not columns of this table, each with the
    /// reason (a projection names what it reads, so it skips nothing).
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Every slab of `array`, one batch each; its rows are the array's length.
    pub(super) fn array(array: ZarrArray, context: &ExecutionContext) -> Self {
        Self {
            total_rows: array.len(),
            reader: Box::new(ArrayBatchReader::new(array, context)),
            skipped: Vec::new(),
        }
    }

    /// A gridded dataset's long table, with its rows and the children it
    /// leaves out.
    pub(super) fn long(long: LongTable) -> Self {
        let (total_rows, skipped) = (long.total_rows(), long.skipped().to_vec());
        Self {
            reader: Box::new(long),
            total_rows,
            skipped,
        }
    }
}

impl Iterator for TableReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.reader.next()
    }
}

impl RecordBatchReader for TableReader {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

/// The node at the root of `store` as a table; `name` names a root array's
/// column and prefixes a group's nested columns (as [`ZarrGroup::with_column_name`](super::ZarrGroup::with_column_name)).
/// Its chunks are decoded, and read ahead, as `context` says (a long table's
/// coordinates and variables are read whole, on rayon).
///
/// # Errors
/// [`Error::OptionNotApplicable`] for a selection that does not apply to the node (a
/// column selection of an array; rows of an N-d array or a long table; a batch
/// size of an N-d array or a long table); the readers' errors.
pub fn open_table(
    store: Arc<dyn Store>,
    name: &str,
    options: ReadOptions,
    table: &TableOptions,
    context: &ExecutionContext,
) -> Result<TableReader> {
    let some_rows = table.rows.is_some() || table.limit.is_some();
    let refuse = |options: &'static str, applies_to: &'static str| {
        Err(Error::OptionNotApplicable {
            options: vec![options],
            applies_to,
        })
    };
    let source = TableSource::open(store, name, options, table.columns.as_deref(), table.long)?;
    let mut builder = match source {
        TableSource::Rows(builder) => builder.with_context(context),
        TableSource::Flat(array) => {
            if some_rows {
                return Err(Error::NotOneDimensional {
                    path: array.label(),
                    shape: array.metadata().shape.clone(),
                    operation: "a row selection (rows, limit)",
                });
            }
            if table.batch_size.is_some() {
                return refuse(
                    "a batch size",
                    "1-D arrays and groups (an N-d array reads one batch per chunk row)",
                );
            }
            // The whole N-d array, flattened: one batch per chunk row.
            return Ok(array.batches(context));
        }
        TableSource::Long(group, variables) => {
            if some_rows {
                return refuse(
                    "a row selection (rows, limit)",
                    "arrays and wide tables, not a long table",
                );
            }
            if table.batch_size.is_some() {
                return refuse("a batch size", "arrays and wide tables, not a long table");
            }
            return group.long_table(variables.as_deref());
        }
    };
    // A child whose conventions cannot be decoded is not skipped: reading it is
    // an error (see `Skipped::is_convention`).
    let skipped = builder
        .skipped()
        .into_iter()
        .filter(|s| !s.is_convention())
        .collect();
    if let Some(rows) = &table.rows {
        builder = builder.with_row_range(rows.clone());
    }
    if let Some(limit) = table.limit {
        builder = builder.with_limit(limit);
    }
    if let Some(rows) = table.batch_size {
        builder = builder.with_batch_size(rows);
    }
    let reader = builder.build()?;
    let total_rows = reader.total_rows();
    Ok(TableReader {
        reader: Box::new(reader),
        total_rows,
        skipped,
    })
}
