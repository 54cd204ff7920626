//! `IN.{parquet,arrow,arrows}` to a Zarr group.
//!
//! The store is written into a temporary directory beside DST and moved into place
//! when complete (see `write/output.rs`): a failed conversion leaves nothing, and an
//! existing DST is replaced (with `--overwrite`, and only if it is a Zarr store) in
//! one step.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use arrow_array::RecordBatchReader;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{Job, Written};
use crate::error::{Error, Result};
use crate::export::ExportFormat;
use crate::options::Options as _;
use crate::write::{WriteOptions, write_batches};

type Reader = Box<dyn RecordBatchReader + Send>;

/// A reader that reports `schema` (the same fields, more metadata).
struct WithSchema<R> {
    schema: arrow_schema::SchemaRef,
    reader: R,
}

impl<R: RecordBatchReader> Iterator for WithSchema<R> {
    type Item = std::result::Result<arrow_array::RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.reader.next()
    }
}

impl<R: RecordBatchReader> RecordBatchReader for WithSchema<R> {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }
}

/// Open a Parquet or Arrow IPC file; the row count when the format states it.
fn open_table(path: &Path, format: ExportFormat) -> Result<(Reader, Option<u64>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(match format {
        ExportFormat::Parquet => {
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
            let rows = u64::try_from(builder.metadata().file_metadata().num_rows()).ok();
            // The builder's schema has the file's key-value metadata (pyarrow's
            // `pandas`, which the anndata layout reads); the reader's does not.
            let schema = builder.schema().clone();
            let reader = builder.with_batch_size(64 * 1024).build()?;
            (Box::new(WithSchema { schema, reader }), rows)
        }
        ExportFormat::IpcStream => (
            Box::new(arrow_ipc::reader::StreamReader::try_new(
                BufReader::new(file),
                None,
            )?),
            None,
        ),
        _ => (
            Box::new(arrow_ipc::reader::FileReader::try_new(
                BufReader::new(file),
                None,
            )?),
            None,
        ),
    })
}

pub(super) fn options(args: &Job<'_>) -> Result<WriteOptions> {
    // An append refuses the format options itself (the group's own apply),
    // when there is a group.
    let write = &args.write;
    if write.appends()
        && (args.overwrites() || write.chunk_shape.is_some() || write.shard_shape.is_some())
    {
        return Err(Error::OptionConflict {
            option: "append".into(),
            other: "overwrite, chunk_shape or shard_shape".into(),
            why: "an append writes with the table's own chunks",
        });
    }
    Ok(write.clone())
}

pub(super) fn convert(args: &Job<'_>, format: ExportFormat) -> Result<Written> {
    // How Zarr is read, and which part: nothing of a table file input.
    let given: Vec<&'static str> = (args.select.values().into_iter())
        .chain(args.read.values())
        .map(|(key, _)| key)
        .collect();
    if !given.is_empty() {
        return Err(Error::OptionNotApplicable {
            options: given,
            applies_to: "a Zarr source (SRC a Zarr store)",
        });
    }
    let options = options(args)?;
    let (reader, total) = open_table(args.src_path(), format)?;
    let rows = args.write_dst(|store, node| {
        write_batches(args.observer.reader(reader, total), store, node, options)
    })?;
    Ok(Written::Rows(rows))
}
