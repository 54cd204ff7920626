//! [`GroupWriter`]: a stream of record batches into a Zarr group, one 1-D array per
//! column.

use std::collections::HashSet;
use std::sync::Arc;

use super::WriteOptions;
use super::array::{ArrayWriter, prepare_node};
use super::metadata::{group_documents, write_documents};
use super::pipeline::Pipeline;
use crate::error::{Error, Result};
use crate::store::{Store, join_key};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::Schema;

/// Writes record batches into a group at a node path: column `x` becomes the array
/// `path/x`. The group's metadata (with the column order, which zarrow's reader
/// restores) is written last.
#[derive(Debug)]
pub struct GroupWriter {
    store: Arc<dyn Store>,
    path: String,
    options: WriteOptions,
    names: Vec<String>,
    columns: Vec<ArrayWriter>,
    /// Chunks of every column are encoded and stored here.
    pipeline: Pipeline,
}

impl GroupWriter {
    /// A writer for batches of `schema` into the group at `path`.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] without `overwrite`; [`Error::InvalidArgument`] for
    /// duplicate or invalid column names and unsupported Arrow types.
    pub fn try_new(
        store: Arc<dyn Store>,
        path: &str,
        schema: &Schema,
        options: WriteOptions,
    ) -> Result<Self> {
        options.validate()?;
        options.refuse_nd_shapes()?;
        let path = path.trim_matches('/').to_string();
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let mut seen = HashSet::new();
        if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
            return Err(Error::InvalidArgument(format!(
                "column name {dup:?} appears twice"
            )));
        }
        if let Some(bad) = names.iter().find(|n| n.contains('/')) {
            return Err(Error::InvalidArgument(format!(
                "column name {bad:?} contains '/', which Zarr node names cannot"
            )));
        }
        prepare_node(store.as_ref(), &path, options.overwrite)?;
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                ArrayWriter::create(
                    store.clone(),
                    join_key(&path, f.name()),
                    f.data_type(),
                    options.clone(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        // Column names must also be valid node names.
        for name in &names {
            if name.is_empty() {
                return Err(Error::InvalidArgument(
                    "an empty column name cannot be a Zarr node name".into(),
                ));
            }
            prepare_node(store.as_ref(), &join_key(&path, name), false)?;
        }
        Ok(Self {
            store,
            path,
            options,
            names,
            columns,
            pipeline: Pipeline::default(),
        })
    }

    /// Append one batch. Chunks that fill up are encoded and stored on rayon's pool
    /// (across columns and chunks) while the caller reads its next batch.
    ///
    /// # Errors
    /// As [`ArrayWriter::write`], for this batch's chunks or earlier ones.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.columns.len() {
            return Err(Error::InvalidArgument(format!(
                "batch has {} columns, the group {}",
                batch.num_columns(),
                self.columns.len()
            )));
        }
        for (writer, column) in self.columns.iter_mut().zip(batch.columns()) {
            for chunk in writer.push(column)? {
                self.pipeline.submit(writer.task(chunk))?;
            }
        }
        Ok(())
    }

    /// Store every column's last chunk, wait for every chunk, then write each
    /// column's metadata and the group's. Returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        for writer in &mut self.columns {
            if let Some(chunk) = writer.take_last()? {
                self.pipeline.submit(writer.task(chunk))?;
            }
        }
        self.pipeline.finish()?;
        let mut rows = 0;
        for writer in &mut self.columns {
            rows = writer.finish_metadata()?;
        }
        write_group_metadata(
            self.store.as_ref(),
            &self.path,
            &self.names,
            self.options.zarr_format,
        )?;
        Ok(rows)
    }
}

/// Write the metadata of the group at `path`, whose child arrays `columns` (in this
/// order, which zarrow's reader restores) are already written: the last step, so a
/// reader never sees a group with arrays still missing.
pub fn write_group_metadata(
    store: &dyn Store,
    path: &str,
    columns: &[String],
    zarr_format: u8,
) -> Result<()> {
    write_documents(store, path, group_documents(zarr_format, columns))
}

/// Write every batch of `reader` into a group at `path`. Returns the rows written.
pub fn write_batches<R: RecordBatchReader>(
    reader: R,
    store: Arc<dyn Store>,
    path: &str,
    options: WriteOptions,
) -> Result<u64> {
    let mut writer = GroupWriter::try_new(store, path, &reader.schema(), options)?;
    for batch in reader {
        writer.write(&batch?)?;
    }
    writer.finish()
}
