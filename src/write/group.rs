//! [`GroupWriter`]: a stream of record batches into a Zarr group, one 1-D array per
//! column (or, under the anndata layout, one element per column).

use std::collections::HashSet;
use std::sync::Arc;

use super::append::{clear_temporary, reconsolidate};
use super::array::prepare_node;
use super::column::{ColumnWriter, Nullability};
use super::metadata::write_group_documents;
use super::pipeline::Pipeline;
use super::{Layout, WriteOptions};
use crate::conventions::anndata;
use crate::conventions::pandas::PandasSchema;
use crate::conventions::zarrow;
use crate::error::{AppendMismatch, Error, NameError, NodeKind, Result, SchemaChange, StoreAction};
use crate::metadata::NodeMetadata;
use crate::read::{ReadOptions, ZarrGroup, read_node};
use crate::store::{Consolidated, Store, WriteLock, is_temporary, join_key, node_label};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::Schema;

/// The dimension of a table's arrays when the table names no pandas index.
const DEFAULT_DIMENSION: &str = "index";

/// Writes record batches into a group at a node path: column `x` becomes the array
/// `path/x`. The group's metadata (with the column order, which zarrow's reader
/// restores) is written last.
#[derive(Debug)]
pub struct GroupWriter {
    store: Arc<dyn Store>,
    path: String,
    options: WriteOptions,
    names: Vec<String>,
    /// Each writer, with the batch column it takes (`None`: row numbers).
    columns: Vec<(Option<usize>, ColumnWriter)>,
    /// The anndata index column's name, under the anndata layout.
    index: Option<String>,
    rows: u64,
    /// Chunks of every column are encoded and stored here.
    pipeline: Pipeline,
    /// The rows the group held before (0 unless appending).
    appended_to: Option<u64>,
    /// The store's writer lock, held until the metadata is written.
    lock: Option<WriteLock>,
}

impl GroupWriter {
    /// A writer for batches of `schema` into the group at `path`.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] without `overwrite`; [`Error::InvalidName`] for
    /// duplicate or invalid column names; [`Error::UnsupportedArrowType`].
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
            return Err(Error::InvalidName {
                name: dup.clone(),
                reason: NameError::Duplicate,
            });
        }
        let mut lock = None;
        // `validate` refused an append with overwrite.
        let mut overwrite = options.overwrites();
        if options.appends() {
            lock = store.lock(options.lock_timeout)?;
            match read_node(store.as_ref(), &path) {
                Ok(NodeMetadata::Group(_)) => {
                    let given = options.set_for_a_new_group();
                    if !given.is_empty() {
                        return Err(Error::OptionConflict {
                            option: "append".into(),
                            other: given.join(", "),
                            why: "an append writes with the table's own format, codecs and chunks",
                        });
                    }
                    return Self::appending(store, path, schema, options, lock);
                }
                Ok(NodeMetadata::Array(_)) => {
                    return Err(Error::WrongNodeKind {
                        path: node_label(store.as_ref(), &path),
                        expected: NodeKind::Group,
                        found: NodeKind::Array,
                    });
                }
                // Nothing to append to: the group is made, and what a write
                // that did not finish left there (its columns' chunks, its
                // temporary files) is cleared; anything else is refused.
                Err(Error::NodeNotFound { .. }) => {
                    let prefix = join_key(&path, "");
                    let foreign: Vec<String> = store
                        .list_prefix(&prefix)?
                        .into_iter()
                        .filter(|key| {
                            let rest = &key[prefix.len()..];
                            let first = rest.split('/').next().unwrap_or(rest);
                            let temporary = rest.rsplit('/').next().is_some_and(is_temporary);
                            !temporary
                                && !names.iter().any(|n| n == first)
                                && first != anndata::INDEX
                        })
                        .collect();
                    if !foreign.is_empty() {
                        return Err(Error::NotAZarrStore {
                            path: node_label(store.as_ref(), &path),
                            entries: Some(foreign.len() as u64),
                            action: StoreAction::Append,
                        });
                    }
                    overwrite = true;
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(bad) = names.iter().find(|n| n.contains('/')) {
            return Err(Error::InvalidName {
                name: bad.clone(),
                reason: NameError::Slash,
            });
        }
        prepare_node(store.as_ref(), &path, overwrite)?;
        let pandas = PandasSchema::of(schema);
        let mut columns = Vec::new();
        let mut index = None;
        if options.layout == Layout::AnnData {
            let (name, row_numbers) = anndata::index_element(pandas.index(), &names);
            if row_numbers {
                let key = join_key(&path, name);
                prepare_node(store.as_ref(), &key, false)?;
                columns.push((None, ColumnWriter::row_numbers(&store, key, &options)?));
            }
            index = Some(name.to_string());
        }
        let dimension = pandas.index().unwrap_or(DEFAULT_DIMENSION);
        for (i, field) in schema.fields().iter().enumerate() {
            // Without pandas metadata: an Arrow field that may hold nulls.
            let nullable = if pandas.nullable(field.name()).unwrap_or(field.is_nullable()) {
                Nullability::Element
            } else {
                Nullability::None
            };
            let writer = ColumnWriter::new(
                &store,
                join_key(&path, field.name()),
                field,
                nullable,
                &options,
                dimension,
            )?;
            columns.push((Some(i), writer));
        }
        // Column names must also be valid node names.
        for name in &names {
            if name.is_empty() {
                return Err(Error::InvalidName {
                    name: String::new(),
                    reason: NameError::Empty,
                });
            }
            prepare_node(store.as_ref(), &join_key(&path, name), false)?;
        }
        Ok(Self {
            store,
            path,
            options,
            names,
            columns,
            index,
            rows: 0,
            pipeline: Pipeline::default(),
            appended_to: None,
            lock,
        })
    }

    /// A writer that appends batches of `schema` to the stored group at `path`
    /// (see [`WriteOptions::append`]): its columns, by names and Zarr data
    /// types, must be the schema's. An anndata dataframe's index is the
    /// input's pandas index (or its column named as the index); a RangeIndex
    /// stored as row numbers continues.
    fn appending(
        store: Arc<dyn Store>,
        path: String,
        schema: &Schema,
        mut options: WriteOptions,
        lock: Option<WriteLock>,
    ) -> Result<Self> {
        // What is committed: the consolidated metadata when the store has
        // some (an append killed after some arrays' documents were written
        // left those ahead of it), else each array's own.
        clear_temporary(store.as_ref(), &path)?;
        let committed = Consolidated::open(store.clone())?;
        let raw = ReadOptions {
            decode_cf: false,
            ..ReadOptions::default()
        };
        let group = ZarrGroup::open_with(committed.clone(), &path, raw)?;
        let label = group.label();
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let (stored, index): (Vec<String>, Option<String>) = match group.conventions().anndata() {
            Some(anndata::Encoding::DataFrame {
                index,
                column_order,
            }) => {
                options.layout = Layout::AnnData;
                (
                    column_order.clone(),
                    Some(index.clone().unwrap_or_else(|| anndata::INDEX.into())),
                )
            }
            _ if options.layout == Layout::AnnData => {
                return Err(Error::AppendMismatch {
                    path: label,
                    reason: AppendMismatch::NotADataFrame,
                });
            }
            _ => (
                group
                    .columns()
                    .iter()
                    .map(|c| c.name().to_string())
                    .collect(),
                None,
            ),
        };
        // The input's column that holds the index labels, if it has one.
        let input_index = index.as_ref().and_then(|index| {
            PandasSchema::of(schema)
                .index()
                .map(str::to_string)
                .or_else(|| names.iter().find(|n| *n == index).cloned())
        });
        let given: Vec<&String> = names
            .iter()
            .filter(|n| Some(*n) != input_index.as_ref())
            .collect();
        let missing: Vec<&String> = stored.iter().filter(|s| !given.contains(s)).collect();
        let extra: Vec<&String> = given
            .iter()
            .copied()
            .filter(|n| !stored.contains(n))
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            return Err(Error::AppendMismatch {
                path: label,
                reason: AppendMismatch::Columns {
                    missing: missing.into_iter().cloned().collect(),
                    extra: extra.into_iter().cloned().collect(),
                },
            });
        }
        let mut columns = Vec::new();
        if let (Some(index), None) = (&index, &input_index) {
            let key = join_key(&path, index);
            columns.push((
                None,
                ColumnWriter::row_numbers_appending(&store, &committed, key, &options)?,
            ));
        }
        for (i, field) in schema.fields().iter().enumerate() {
            let node = match (&index, &input_index) {
                (Some(index), Some(input)) if input == field.name() => index,
                _ => field.name(),
            };
            let key = join_key(&path, node);
            columns.push((
                Some(i),
                ColumnWriter::appending(&store, &committed, key, field, &options)?,
            ));
        }
        // Every column holds the same rows (a table).
        let mut rows: Option<(u64, &str)> = None;
        for (source, writer) in &mut columns {
            let name = match source {
                Some(i) => names[*i].as_str(),
                None => index.as_deref().unwrap_or(anndata::INDEX),
            };
            for n in writer.rows() {
                match rows {
                    Some((m, other)) if m != n => {
                        return Err(Error::AppendMismatch {
                            path: label,
                            reason: AppendMismatch::RowsDiffer {
                                column: name.to_string(),
                                rows: n,
                                other: other.to_string(),
                                other_rows: m,
                            },
                        });
                    }
                    _ => rows = Some((n, name)),
                }
            }
        }
        let rows = rows.map_or(0, |(n, _)| n);
        Ok(Self {
            store,
            path,
            options,
            names,
            columns,
            index,
            rows,
            pipeline: Pipeline::default(),
            appended_to: Some(rows),
            lock,
        })
    }

    /// Append one batch. Chunks that fill up are encoded and stored on rayon's pool
    /// (across columns and chunks) while the caller reads its next batch.
    ///
    /// # Errors
    /// As [`ArrayWriter::write`](super::ArrayWriter::write), for this batch's
    /// chunks or earlier ones.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.names.len() {
            return Err(Error::SchemaChanged {
                change: SchemaChange::ColumnCount {
                    expected: self.names.len(),
                    found: batch.num_columns(),
                },
            });
        }
        for (source, writer) in &mut self.columns {
            let array = source.map(|i| batch.column(i));
            writer.push(array, self.rows, batch.num_rows(), &mut self.pipeline)?;
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Store every column's last chunk, wait for every chunk, then write each
    /// column's metadata and the group's (when appending: the consolidated
    /// metadata, last). Returns the rows written (appended).
    pub fn finish(mut self) -> Result<u64> {
        for (_, writer) in &mut self.columns {
            writer.flush(&mut self.pipeline)?;
        }
        self.pipeline.finish()?;
        let mut rows = 0;
        for (_, writer) in &mut self.columns {
            rows = writer.finish_metadata()?;
        }
        if let Some(before) = self.appended_to {
            reconsolidate(self.store.as_ref(), &self.path)?;
            drop(self.lock.take());
            return Ok(self.rows - before);
        }
        let attributes = match &self.index {
            Some(index) => {
                let order: Vec<&String> = self.names.iter().filter(|n| *n != index).collect();
                anndata::dataframe_attributes(index, &order)
            }
            None => zarrow::group_attributes(&self.names),
        };
        write_group_documents(
            self.store.as_ref(),
            &self.path,
            self.options.zarr_format,
            attributes,
            self.store.wants_consolidated(),
        )?;
        drop(self.lock.take());
        Ok(rows)
    }
}

/// Write the metadata of the group at `path`, whose child arrays `columns` (in this
/// order, which zarrow's reader restores) are already written: the last step, so a
/// reader never sees a group with arrays still missing. The group carries its
/// children's metadata, consolidated.
pub fn write_group_metadata(
    store: &dyn Store,
    path: &str,
    columns: &[String],
    zarr_format: u8,
) -> Result<()> {
    write_group_documents(
        store,
        path,
        zarr_format,
        zarrow::group_attributes(columns),
        store.wants_consolidated(),
    )
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
