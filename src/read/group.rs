//! [`ZarrGroup`]: a group's 1-D arrays read as the columns of one table.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use rayon::prelude::*;

use super::read_node;
use super::{ReadOptions, ZarrArray};
use crate::error::{Error, Result};
use crate::metadata::{GroupMetadata, NodeMetadata, recorded_columns};
use crate::rows::RowQueue;
use crate::store::{Store, join_key};

/// A Zarr group opened for reading.
#[derive(Debug, Clone)]
pub struct ZarrGroup {
    store: Arc<dyn Store>,
    path: String,
    meta: GroupMetadata,
    options: ReadOptions,
}

impl ZarrGroup {
    /// Open the group at node `path` (`""` for the root) with default options.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], metadata errors, or [`Error::InvalidArgument`] when
    /// the node is an array.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        Self::open_with(store, path, ReadOptions::default())
    }

    /// Open with explicit options.
    pub fn open_with(store: Arc<dyn Store>, path: &str, options: ReadOptions) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        match read_node(store.as_ref(), &path)? {
            NodeMetadata::Group(meta) => Ok(Self {
                store,
                path,
                meta,
                options,
            }),
            NodeMetadata::Array(_) => Err(Error::InvalidArgument(format!(
                "{path:?} is an array, not a group"
            ))),
        }
    }

    /// The group's metadata.
    pub fn metadata(&self) -> &GroupMetadata {
        &self.meta
    }

    /// The direct children that are Zarr nodes, by name, sorted.
    ///
    /// # Errors
    /// A child whose metadata is present but invalid is an error (it is not
    /// skipped silently); directories without metadata are skipped.
    pub fn children(&self) -> Result<Vec<(String, NodeMetadata)>> {
        let mut out = Vec::new();
        for name in self.store.list_children(&self.path)? {
            match read_node(self.store.as_ref(), &join_key(&self.path, &name)) {
                Ok(node) => out.push((name, node)),
                Err(Error::NodeNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The 1-D child arrays, sorted by name: the candidate table columns.
    pub fn columns(&self) -> Result<Vec<ZarrArray>> {
        self.children()?
            .into_iter()
            .filter_map(|(name, node)| match node {
                NodeMetadata::Array(meta) if meta.shape.len() == 1 => {
                    Some(ZarrArray::from_metadata(
                        self.store.clone(),
                        join_key(&self.path, &name),
                        *meta,
                        self.options,
                    ))
                }
                _ => None,
            })
            .collect()
    }

    /// A builder for a table reader over this group's 1-D arrays.
    pub fn reader(&self) -> GroupReaderBuilder {
        GroupReaderBuilder {
            group: self.clone(),
            projection: None,
            batch_size: None,
        }
    }
}

/// The largest default batch: the largest chunk length among the columns, capped
/// here so that a column with tiny chunks does not mean millions of decode jobs
/// for one batch.
pub const DEFAULT_MAX_BATCH_ROWS: usize = 1 << 16;

/// Configures a [`GroupBatchReader`].
#[derive(Debug, Clone)]
pub struct GroupReaderBuilder {
    group: ZarrGroup,
    projection: Option<Vec<String>>,
    batch_size: Option<usize>,
}

impl GroupReaderBuilder {
    /// Read only these columns, in this order.
    pub fn with_projection<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.projection = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Rows per batch (default: the largest chunk length among the columns, at most
    /// [`DEFAULT_MAX_BATCH_ROWS`]).
    pub fn with_batch_size(mut self, rows: usize) -> Self {
        self.batch_size = Some(rows.max(1));
        self
    }

    /// Build the reader.
    ///
    /// # Errors
    /// [`Error::Table`] when there is no 1-D array, a projected name is not one, or
    /// the columns differ in length.
    pub fn build(self) -> Result<GroupBatchReader> {
        let path = self.group.path.clone();
        let table_err = |message: String| Error::Table {
            path: path.clone(),
            message,
        };
        let mut available = self.group.columns()?;
        let columns = match self.projection {
            // zarrow's writer records the column order; other groups read sorted.
            None => match recorded_columns(&self.group.meta.attributes) {
                Some(order) => {
                    let mut ordered = Vec::with_capacity(available.len());
                    for name in order {
                        if let Some(pos) = available.iter().position(|a| a.column_name() == name) {
                            ordered.push(available.remove(pos));
                        }
                    }
                    ordered.extend(available);
                    ordered
                }
                None => available,
            },
            Some(names) => names
                .iter()
                .map(|name| {
                    let pos = available
                        .iter()
                        .position(|a| a.column_name() == name)
                        .ok_or_else(|| {
                            table_err(format!(
                                "no 1-D array named {name:?} (have: {})",
                                available
                                    .iter()
                                    .map(|a| a.column_name())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ))
                        })?;
                    Ok(available.remove(pos))
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let Some(first) = columns.first() else {
            return Err(table_err("it has no 1-D arrays".into()));
        };
        let rows = first.len();
        if let Some(other) = columns.iter().find(|a| a.len() != rows) {
            return Err(table_err(format!(
                "columns differ in length: {} has {rows} rows, {} has {} (select equal-length columns)",
                first.column_name(),
                other.column_name(),
                other.len()
            )));
        }
        let batch_size = self.batch_size.unwrap_or_else(|| {
            columns
                .iter()
                .map(|a| a.metadata().chunk_shape[0] as usize)
                .max()
                .unwrap_or(1)
                .min(DEFAULT_MAX_BATCH_ROWS)
        });
        let schema = Arc::new(Schema::new(
            columns.iter().map(ZarrArray::field).collect::<Vec<_>>(),
        ));
        let parallel = self.group.options.parallel;
        Ok(GroupBatchReader {
            schema,
            columns: columns.into_iter().map(Column::new).collect(),
            rows,
            done: 0,
            batch_size,
            parallel,
            failed: false,
        })
    }
}

/// One column's cursor: decoded chunks not yet handed out.
#[derive(Debug)]
struct Column {
    array: ZarrArray,
    next_chunk: u64,
    queued: RowQueue,
}

impl Column {
    fn new(array: ZarrArray) -> Self {
        Self {
            array,
            next_chunk: 0,
            queued: RowQueue::default(),
        }
    }
}

/// A [`RecordBatchReader`] over a group's 1-D arrays. Columns with different chunk
/// lengths still line up row for row: each batch takes the same rows from every
/// column, slicing (and, across chunk boundaries, concatenating) as needed.
#[derive(Debug)]
pub struct GroupBatchReader {
    schema: SchemaRef,
    columns: Vec<Column>,
    rows: u64,
    done: u64,
    batch_size: usize,
    parallel: bool,
    failed: bool,
}

impl GroupBatchReader {
    /// Total rows this reader yields.
    pub fn total_rows(&self) -> u64 {
        self.rows
    }

    fn next_inner(&mut self) -> Result<Option<RecordBatch>> {
        let n = (self.rows - self.done).min(self.batch_size as u64) as usize;
        if n == 0 {
            return Ok(None);
        }
        // Every chunk any column needs for this batch, decoded together.
        let mut jobs = Vec::new();
        for (c, col) in self.columns.iter_mut().enumerate() {
            let chunk_len = col.array.metadata().chunk_shape[0] as usize;
            let mut have = col.queued.len();
            while have < n {
                jobs.push((c, col.next_chunk));
                col.next_chunk += 1;
                have += chunk_len;
            }
        }
        let decode = |&(c, chunk): &(usize, u64)| self.columns[c].array.read_slab(chunk);
        let decoded: Vec<ArrayRef> = if self.parallel && jobs.len() > 1 {
            jobs.par_iter().map(decode).collect::<Result<_>>()?
        } else {
            jobs.iter().map(decode).collect::<Result<_>>()?
        };
        for (&(c, _), array) in jobs.iter().zip(decoded) {
            self.columns[c].queued.push(array);
        }
        let mut arrays = Vec::with_capacity(self.columns.len());
        for col in &mut self.columns {
            match col.queued.take(n)? {
                Some(array) if array.len() == n => arrays.push(array),
                _ => {
                    return Err(Error::Table {
                        path: col.array.path().to_string(),
                        message: format!(
                            "column {} ended before row {}",
                            col.array.column_name(),
                            self.done + n as u64
                        ),
                    });
                }
            }
        }
        self.done += n as u64;
        Ok(Some(RecordBatch::try_new(self.schema.clone(), arrays)?))
    }
}

impl Iterator for GroupBatchReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = self.next_inner();
        self.failed = result.is_err();
        result.map_err(ArrowError::from).transpose()
    }
}

impl RecordBatchReader for GroupBatchReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
