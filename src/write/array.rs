//! [`ArrayWriter`]: stream Arrow arrays into one Zarr array, chunk by chunk.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Scalar, new_empty_array};
use arrow_schema::DataType as ArrowType;
use serde_json::{Map, Value};

use super::append::Existing;
use super::metadata::{ArraySpec, key_encoding, write_documents};
use super::pipeline::Pipeline;
use super::{DEFAULT_CHUNK_BYTES, NullPolicy, WriteOptions};
use crate::assemble::cut;
use crate::codec::{CodecChain, value_bytes};
use crate::error::{
    AppendMismatch, ArrowTypeUse, Error, LimitKind, NameError, Result, SchemaChange, ShapeProblem,
};
use crate::grid::{ChunkKeyEncoding, Grid};
use crate::metadata::ArrayMetadata;
use crate::rows::RowQueue;
use crate::stats::{ChunkStats, stats_type};
use crate::store::{Store, join_key, node_label};

/// A column's chunk length (the shard's when sharded), its inner chunks' shape
/// when sharded, and the chain that encodes its chunks.
type Chunking = (usize, Option<Vec<u64>>, Arc<CodecChain>);

/// Writes one 1-D Zarr array from Arrow arrays of one type, streaming: rows are
/// buffered until a chunk is full, then encoded and stored on rayon's pool while
/// the next rows arrive (a few chunks in flight at most); [`ArrayWriter::finish`]
/// stores the last (padded) chunk, waits for every chunk, then writes the metadata.
#[derive(Debug)]
pub struct ArrayWriter {
    store: Arc<dyn Store>,
    path: String,
    name: String,
    options: WriteOptions,
    spec: Arc<ArraySpec>,
    pipeline: Pipeline,
    /// Elements per chunk (per inner chunk when sharded), once known.
    chunk_len: Option<usize>,
    /// The chunk grid's chunk length (the shard's when sharded), the inner
    /// chunks' shape when sharded, and the codecs, once known.
    chunking: Option<Chunking>,
    queued: RowQueue,
    next_chunk: u64,
    rows: u64,
    /// Attributes written besides zarrow's own (anndata's encoding, say).
    attributes: Map<String, Value>,
    /// The dimension's name, for xarray (`dimension_names` / `_ARRAY_DIMENSIONS`).
    dimension: Option<String>,
    /// How chunk indices become keys.
    key_encoding: ChunkKeyEncoding,
    /// The stored array this writer appends to, whose metadata it updates.
    existing: Option<Existing>,
    /// The rows the stored metadata's shape holds while chunks are written, for
    /// a store that needs the metadata first ([`ArrayWriter::cover`]).
    covered: u64,
    /// Each chunk's statistics (by chunk number), when they are recorded:
    /// taken by the chunks' tasks, in any order.
    stats: Option<StatsSink>,
}

/// Where the chunk tasks put the statistics they take.
type StatsSink = Arc<std::sync::Mutex<Vec<(u64, ChunkStats)>>>;

/// A chunk ready to be encoded and stored.
#[derive(Debug)]
pub(crate) struct ReadyChunk {
    key: String,
    /// The chunk's shape in the grid (the last chunk's values may be fewer).
    shape: Vec<u64>,
    values: ArrayRef,
    codecs: Arc<CodecChain>,
    /// Take the statistics of each inner chunk of this many rows (the first
    /// numbered as given) into the sink.
    stats: Option<(StatsSink, u64, usize)>,
}

impl ArrayWriter {
    /// A writer for an array at node `path` holding values of `arrow_type`.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`] when the node exists and `options.overwrites()` is off;
    /// [`Error::UnsupportedArrowType`] for an Arrow type zarrow cannot write,
    /// [`Error::InvalidName`] for a bad node name, an option error
    /// ([`Error::Option`], [`Error::OptionConflict`]...) for inconsistent options.
    pub fn try_new(
        store: Arc<dyn Store>,
        path: &str,
        arrow_type: &ArrowType,
        options: WriteOptions,
    ) -> Result<Self> {
        options.refuse_nd_shapes()?;
        Self::prepared(store, path, arrow_type, options)
    }

    /// A writer at `path`, its options checked and its node prepared.
    fn prepared(
        store: Arc<dyn Store>,
        path: &str,
        arrow_type: &ArrowType,
        options: WriteOptions,
    ) -> Result<Self> {
        options.validate()?;
        let path = path.trim_matches('/').to_string();
        prepare_node(store.as_ref(), &path, options.overwrites())?;
        Self::create(store, path, arrow_type, options)
    }

    /// A writer whose node was prepared by its group.
    pub(crate) fn create(
        store: Arc<dyn Store>,
        path: String,
        arrow_type: &ArrowType,
        options: WriteOptions,
    ) -> Result<Self> {
        let name = path.rsplit('/').next().unwrap_or("").to_string();
        let spec = Arc::new(
            ArraySpec::new(&name, value_type(arrow_type), &options)?.recording(arrow_type),
        );
        let key_encoding = key_encoding(options.zarr_format);
        let records_stats = options.stats && stats_type(&spec.arrow_type).is_some();
        Ok(Self {
            store,
            path,
            name,
            chunk_len: options.chunk_len,
            chunking: None,
            options,
            spec,
            pipeline: Pipeline::default(),
            queued: RowQueue::default(),
            next_chunk: 0,
            stats: records_stats.then(StatsSink::default),
            rows: 0,
            attributes: Map::new(),
            dimension: None,
            key_encoding,
            existing: None,
            covered: 0,
        })
    }

    /// A writer that appends values of `arrow_type` to the stored array
    /// `existing` at `path` (prepared by its group), continuing its chunk grid
    /// with its codecs: the last chunk, when partly filled, is stored again
    /// with the new rows after its old ones.
    ///
    /// # Errors
    /// A type whose Zarr data type is not the array's; reading the last chunk.
    pub(crate) fn appending(
        store: Arc<dyn Store>,
        path: String,
        arrow_type: &ArrowType,
        options: WriteOptions,
        existing: Existing,
    ) -> Result<Self> {
        let mut writer = Self::create(store, path, arrow_type, options)?;
        let stored = existing.metadata().data_type;
        if writer.spec.data_type != stored {
            return Err(Error::AppendMismatch {
                path: node_label(writer.store.as_ref(), &writer.path),
                reason: AppendMismatch::DataType {
                    column: writer.name.clone(),
                    stored: stored.to_string().to_string(),
                    input: writer.spec.data_type.to_string().to_string(),
                    arrow_type: arrow_type.clone(),
                },
            });
        }
        let grid_len = existing.grid_len();
        // A chunk is stored whole (its tail filled): one of a stored grid's
        // size must be one zarrow would read back (the grid is the store's,
        // which may be hostile).
        let per_element = writer.spec.data_type.fixed_size().unwrap_or(4) as u64;
        let chunk_bytes = grid_len.saturating_mul(per_element);
        if chunk_bytes > crate::read::DEFAULT_MAX_CHUNK_BYTES as u64 {
            return Err(Error::LimitExceeded {
                what: format!("column {:?}", writer.name),
                limit: LimitKind::ChunkBytes,
                value: chunk_bytes,
                max: crate::read::DEFAULT_MAX_CHUNK_BYTES as u64,
            });
        }
        existing.clear_debris(writer.store.as_ref())?;
        let rows = existing.rows();
        let len = usize::try_from(grid_len).map_err(|_| Error::LimitExceeded {
            what: format!("column {:?}", writer.name),
            limit: LimitKind::ChunkBytes,
            value: chunk_bytes,
            max: crate::read::DEFAULT_MAX_CHUNK_BYTES as u64,
        })?;
        writer.chunk_len = Some(len);
        writer.chunking = Some((len, None, existing.codecs()));
        writer.key_encoding = existing.key_encoding();
        if existing.decodes_cf()? {
            // The old rows read back raw: statistics of the decoded values
            // cannot be taken here (the old ones stay, checked by version).
            writer.stats = None;
        }
        writer.covered = rows;
        writer.next_chunk = rows / grid_len;
        writer.rows = rows - rows % grid_len;
        if let Some(head) = existing.head(&writer.spec.arrow_type)? {
            writer.rows += head.len() as u64;
            writer.queued.push(head);
        }
        writer.existing = Some(existing);
        Ok(writer)
    }

    /// Write these attributes too.
    pub(crate) fn with_attributes(mut self, attributes: Map<String, Value>) -> Self {
        self.attributes = attributes;
        self
    }

    /// Name the array's dimension (v3 `dimension_names`, v2 `_ARRAY_DIMENSIONS`),
    /// as xarray reads it.
    pub(crate) fn with_dimension(mut self, name: impl Into<String>) -> Self {
        self.dimension = Some(name.into());
        self
    }

    /// Rows accepted so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Append `array`'s values.
    ///
    /// # Errors
    /// [`Error::Nulls`] for a null under [`NullPolicy::Error`]; a type mismatch;
    /// store and codec errors (of this call's chunks or of earlier ones).
    pub fn write(&mut self, array: &ArrayRef) -> Result<()> {
        for chunk in self.push(array)? {
            let task = self.task(chunk);
            self.pipeline.submit(task)?;
        }
        Ok(())
    }

    /// Queue `array`'s values and return the chunks that are now full.
    pub(crate) fn push(&mut self, array: &ArrayRef) -> Result<Vec<ReadyChunk>> {
        let array = self.prepare(array)?;
        let (grid_len, _, _) = self.chunking(&array)?;
        self.rows += array.len() as u64;
        self.queued.push(array);
        let mut ready = Vec::new();
        while self.queued.len() >= grid_len {
            if let Some(values) = self.queued.take(grid_len)? {
                ready.push(self.ready_chunk(values)?);
            }
        }
        Ok(ready)
    }

    /// The grid's chunk length and codecs, fixed by the first values seen (which
    /// size the default chunk length): built from the array's metadata, as a
    /// reader builds them.
    fn chunking(&mut self, sample: &ArrayRef) -> Result<Chunking> {
        if let Some(chunking) = &self.chunking {
            return Ok(chunking.clone());
        }
        let inner = *self
            .chunk_len
            .get_or_insert_with(|| default_chunk_len(&self.spec, sample));
        let (len, sharded) = match self.options.shard_len {
            Some(shard) => (shard_len(shard, inner), Some(vec![inner as u64])),
            None => (inner, None),
        };
        let meta = self.spec.metadata(
            &[0],
            &[len as u64],
            sharded.clone(),
            self.options.zarr_format,
            &Map::new(),
            None,
        )?;
        let codecs = ArraySpec::chain(&meta, &self.path)?;
        let chunking = (len, sharded, codecs);
        self.chunking = Some(chunking.clone());
        Ok(chunking)
    }

    /// The next chunk of the grid, holding `values`.
    fn ready_chunk(&mut self, values: ArrayRef) -> Result<ReadyChunk> {
        let (len, _, codecs) = self.chunking(&values)?;
        let index = self.next_chunk;
        if self.store.needs_metadata_first() {
            self.cover((index + 1).saturating_mul(len as u64))?;
        }
        self.next_chunk += 1;
        // One statistic per inner chunk of a shard, taken by the task.
        let stats = match (&self.stats, self.chunk_len) {
            (Some(sink), Some(inner)) => {
                let inner = inner.max(1);
                Some((sink.clone(), index * (len / inner) as u64, inner))
            }
            _ => None,
        };
        Ok(ReadyChunk {
            key: join_key(&self.path, &self.key_encoding.key(&[index])),
            shape: vec![len as u64],
            values,
            codecs,
            stats,
        })
    }

    /// Check nulls and types; resolve dictionaries to their values.
    fn prepare(&self, array: &ArrayRef) -> Result<ArrayRef> {
        let mut array = array.clone();
        // Logical nulls include a dictionary's null keys and null values.
        // Nulls of times write as NaT, which is how numpy marks them: kept.
        let nulls = array
            .logical_nulls()
            .filter(|n| n.null_count() > 0 && !self.spec.data_type.has_nat());
        if let (Some(nulls), NullPolicy::Error) = (&nulls, self.options.nulls) {
            let first = nulls.iter().position(|valid| !valid).unwrap_or(0);
            return Err(Error::Nulls {
                column: self.name.clone(),
                row: self.rows + first as u64,
            });
        }
        if let Some(dict) = array.as_any_dictionary_opt() {
            // Null keys take null values (filled below); a dictionary with no values
            // has only null keys.
            array = arrow_select::take::take(dict.values().as_ref(), dict.keys(), None)?;
        }
        if self.spec.data_type.has_nat() {
            array = nat_as_null(array)?;
        }
        if let Some(nulls) = nulls {
            let fill = Scalar::new(fill_value(array.data_type())?);
            let valid = BooleanArray::new(nulls.inner().clone(), None);
            array = arrow_select::zip::zip(&valid, &array, &fill)?;
        }
        if array.data_type() != &self.spec.arrow_type {
            return Err(Error::SchemaChanged {
                change: SchemaChange::DataType {
                    column: self.name.clone(),
                    expected: self.spec.arrow_type.clone(),
                    found: array.data_type().clone(),
                },
            });
        }
        Ok(array)
    }

    /// For a store that takes chunks only inside an array's metadata
    /// ([`Store::needs_metadata_first`]): metadata whose shape holds at least
    /// `rows` rows, stored before the chunk that needs it (its shape
    /// doubling, so that a long write stores few); the final document, last,
    /// gives the real shape.
    fn cover(&mut self, rows: u64) -> Result<()> {
        if rows <= self.covered {
            return Ok(());
        }
        let rows = rows.max(self.covered.saturating_mul(2));
        if let Some(existing) = &self.existing {
            existing.commit(self.store.as_ref(), rows)?;
        } else {
            let (len, sharded, _) = self.chunking.clone().ok_or_else(|| Error::Internal {
                what: "an array's provisional metadata before its chunking",
            })?;
            let meta = self.spec.metadata(
                &[rows],
                &[len as u64],
                sharded,
                self.options.zarr_format,
                &Map::new(),
                None,
            )?;
            write_documents(self.store.as_ref(), &self.path, meta.to_documents()?)?;
        }
        self.covered = rows;
        Ok(())
    }

    /// The task that encodes and stores `chunk`, to run on any thread.
    pub(crate) fn task(&self, chunk: ReadyChunk) -> impl FnOnce() -> Result<()> + Send + 'static {
        encode_task(self.store.clone(), chunk)
    }

    /// The last chunk, if rows are queued, to be stored before [`Self::finish_metadata`].
    pub(crate) fn take_last(&mut self) -> Result<Option<ReadyChunk>> {
        let n = self.queued.len();
        self.queued
            .take(n)?
            .map(|values| self.ready_chunk(values))
            .transpose()
    }

    /// Write the chunk statistics (after every chunk is stored, before the
    /// metadata): each chunk's, with the version of the object holding it, as
    /// the store lists them now. When appending, the statistics of the chunks
    /// kept are kept.
    fn finish_stats(&mut self, meta: &ArrayMetadata, appending: bool) -> Result<()> {
        let (Some(sink), Some(inner)) = (self.stats.take(), self.chunk_len) else {
            return Ok(());
        };
        // Every task has run (the pipeline finished): the statistics in
        // chunk order.
        let mut stats = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner()));
        stats.sort_unstable_by_key(|(i, _)| *i);
        let Some((grid_len, _, _)) = self.chunking.clone() else {
            return Ok(());
        };
        let Some(bound) = stats_type(&self.spec.arrow_type) else {
            return Ok(());
        };
        let key = join_key(&self.path, crate::stats::STATS_KEY);
        let inner = inner.max(1) as u64;
        let mut rows: Vec<(u64, ChunkStats, Option<String>)> = Vec::new();
        if appending {
            // The chunks before the first one stored again keep theirs.
            let first = stats.first().map_or(u64::MAX, |(i, _)| *i);
            if let Ok(Some(old)) = self.store.get_bounded(&key, crate::stats::MAX_STATS_BYTES)
                && let Ok(Ok(old)) = crate::stats::decode(&key, &old)
                && old.chunk_len == inner
                && old.bound_type() == &bound
                // Recorded under the metadata appended to (else they may
                // describe values read another way).
                && old.array == crate::stats::fingerprint(meta)
                && old.decode_cf
            {
                rows.extend(crate::stats::rows(&old).into_iter().filter(|r| r.0 < first));
            }
        }
        let versions = crate::stats::versions(self.store.as_ref(), &self.path)?.unwrap_or_default();
        let per_grid = (grid_len as u64 / inner).max(1);
        for (i, s) in stats {
            let object = join_key(&self.path, &self.key_encoding.key(&[i / per_grid]));
            rows.push((i, s, versions.get(&object).cloned()));
        }
        let header = crate::stats::Header {
            chunk_len: inner,
            array_len: self.rows,
            array: &crate::stats::fingerprint(meta),
        };
        let bytes = crate::stats::encode(&rows, &bound, &header)?;
        self.store.set(&key, &bytes)
    }

    /// Write the metadata documents (after every chunk is stored).
    pub(crate) fn finish_metadata(&mut self) -> Result<u64> {
        if let Some(existing) = self.existing.take() {
            self.finish_stats(existing.metadata(), true)?;
            existing.commit(self.store.as_ref(), self.rows)?;
            self.existing = Some(existing);
            return Ok(self.rows);
        }
        // With no rows written, the default chunk length comes from an empty sample.
        let (len, sharded, _) = self.chunking(&new_empty_array(&self.spec.arrow_type))?;
        let meta = self.spec.metadata(
            &[self.rows],
            &[len as u64],
            sharded,
            self.options.zarr_format,
            &self.attributes,
            self.dimension.as_deref(),
        )?;
        self.finish_stats(&meta, false)?;
        write_documents(self.store.as_ref(), &self.path, meta.to_documents()?)?;
        Ok(self.rows)
    }

    /// Store the last chunk, wait for every chunk, then write the metadata. Returns
    /// the rows written.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(last) = self.take_last()? {
            let task = self.task(last);
            self.pipeline.submit(task)?;
        }
        self.pipeline.finish()?;
        self.finish_metadata()
    }
}

/// A time column with its values equal to numpy's NaT (`i64::MIN`) made
/// null: stored as NaT, they read back as nulls, and the chunk statistics
/// taken from the array must count them so (a chunk of them holds rows that
/// `IS NULL` matches). The bytes written are the same.
fn nat_as_null(array: ArrayRef) -> Result<ArrayRef> {
    use arrow_buffer::{NullBuffer, ScalarBuffer};
    let data = array.to_data();
    if data.data_type().primitive_width() != Some(8) || data.buffers().len() != 1 {
        return Ok(array);
    }
    let values = ScalarBuffer::<i64>::new(data.buffers()[0].clone(), data.offset(), data.len());
    let nat = |i: usize| values[i] == i64::MIN && array.is_valid(i);
    if !(0..values.len()).any(nat) {
        return Ok(array);
    }
    let not_nat = NullBuffer::from_iter(values.iter().map(|&v| v != i64::MIN));
    let nulls = NullBuffer::union(array.nulls(), Some(&not_nat));
    let data = data.into_builder().nulls(nulls).build()?;
    Ok(arrow_array::make_array(data))
}

/// The task that encodes `chunk` with its codecs and stores it.
fn encode_task(store: Arc<dyn Store>, chunk: ReadyChunk) -> impl FnOnce() -> Result<()> + Send {
    move || {
        if let Some((sink, first, inner)) = &chunk.stats {
            let values = &chunk.values;
            let mut taken = Vec::new();
            for (j, start) in (0..values.len()).step_by(*inner).enumerate() {
                let n = (*inner).min(values.len() - start);
                if let Some(s) = ChunkStats::of(values.slice(start, n).as_ref()) {
                    taken.push((first + j as u64, s));
                }
            }
            sink.lock().unwrap_or_else(|e| e.into_inner()).extend(taken);
        }
        let bytes =
            chunk
                .codecs
                .encode(&chunk.values, &chunk.shape)
                .map_err(|(codec, source)| Error::Encode {
                    key: chunk.key.clone(),
                    codec,
                    source,
                })?;
        store.set(&chunk.key, &bytes)
    }
}

/// Write an N-d array of `shape` at node `path` from its values in C order.
///
/// Chunks have [`WriteOptions::chunk_shape`], by default `[rows, shape[1], ...]`
/// (spanning every dimension but the first, `rows` from the chunk length option or
/// about 4 MiB of values); with
/// [`WriteOptions::shard_shape`] they are the inner chunks of shards of that shape.
/// A 0-d array (`shape` empty) is one chunk of one element.
///
/// Copies: each chunk (each shard) is gathered from `values` once, then encoded.
///
/// # Errors
/// [`Error::InvalidShape`] when `values` does not hold `shape`'s element count,
/// or a chunk or shard shape does not fit `shape`'s rank (or a shard is not a
/// multiple of the chunk).
pub fn write_nd_array(
    store: Arc<dyn Store>,
    path: &str,
    values: &ArrayRef,
    shape: &[u64],
    options: WriteOptions,
) -> Result<u64> {
    let elements = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d));
    if elements != Some(values.len() as u64) {
        return Err(Error::InvalidShape {
            shape: shape.to_vec(),
            problem: ShapeProblem::ValuesDoNotFill {
                values: values.len() as u64,
            },
        });
    }
    let mut writer = ArrayWriter::prepared(store, path, values.data_type(), options)?;
    let values = writer.prepare(values)?;
    let chunk_shape = match &writer.options.chunk_shape {
        Some(c) if c.len() == shape.len() => c.clone(),
        Some(c) => {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                problem: ShapeProblem::ChunkRank { chunk: c.clone() },
            });
        }
        None if shape.is_empty() => vec![],
        None => {
            let rest: Vec<u64> = shape.iter().skip(1).map(|&d| d.max(1)).collect();
            let row_len: u64 = rest.iter().product();
            let target = writer
                .chunk_len
                .unwrap_or_else(|| default_chunk_len(&writer.spec, &values))
                as u64;
            let rows = (target / row_len).clamp(1, shape[0].max(1));
            std::iter::once(rows).chain(rest).collect()
        }
    };
    // A 1-D array may be sharded by length as a table's columns are.
    let shard_shape = match (&writer.options.shard_shape, writer.options.shard_len) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(len)) if shape.len() == 1 => {
            let chunk = usize::try_from(chunk_shape[0]).unwrap_or(usize::MAX);
            Some(vec![shard_len(len, chunk) as u64])
        }
        (None, Some(_)) => {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                problem: ShapeProblem::ShardLenOfNd,
            });
        }
        (None, None) => None,
    };
    let (grid_shape, inner) = match &shard_shape {
        None => (chunk_shape.clone(), None),
        Some(s)
            if s.len() == shape.len() && s.iter().zip(&chunk_shape).all(|(s, c)| s % c == 0) =>
        {
            (s.clone(), Some(chunk_shape.clone()))
        }
        Some(s) => {
            return Err(Error::InvalidShape {
                shape: shape.to_vec(),
                problem: ShapeProblem::ShardNotMultiple {
                    shard: s.clone(),
                    chunk: chunk_shape.clone(),
                },
            });
        }
    };
    let meta = writer.spec.metadata(
        shape,
        &grid_shape,
        inner,
        writer.options.zarr_format,
        &Map::new(),
        None,
    )?;
    let codecs = ArraySpec::chain(&meta, &writer.path)?;
    let grid = Grid::new(shape, &grid_shape);
    let encoding = key_encoding(writer.options.zarr_format);
    for linear in 0..grid.num_chunks() {
        let indices = grid.unravel(linear);
        let origin: Vec<u64> = indices
            .iter()
            .zip(&grid_shape)
            .map(|(i, c)| i * c)
            .collect();
        let chunk = ReadyChunk {
            key: join_key(&writer.path, &encoding.key(&indices)),
            shape: grid_shape.clone(),
            values: cut(&values, shape, &origin, &grid_shape)?,
            codecs: codecs.clone(),
            stats: None,
        };
        let task = encode_task(writer.store.clone(), chunk);
        writer.pipeline.submit(task)?;
    }
    writer.pipeline.finish()?;
    write_documents(writer.store.as_ref(), &writer.path, meta.to_documents()?)?;
    Ok(values.len() as u64)
}

/// Write one array at node `path` in one call.
pub fn write_array(
    store: Arc<dyn Store>,
    path: &str,
    array: &ArrayRef,
    options: WriteOptions,
) -> Result<u64> {
    let mut writer = ArrayWriter::try_new(store, path, array.data_type(), options)?;
    writer.write(array)?;
    writer.finish()
}

/// Refuse, or clear, an existing node at `path`.
pub(crate) fn prepare_node(store: &dyn Store, path: &str, overwrite: bool) -> Result<()> {
    check_node_name(path)?;
    let existing = store.list_prefix(&join_key(path, ""))?;
    if existing.is_empty() {
        return Ok(());
    }
    if !overwrite {
        return Err(Error::AlreadyExists {
            path: path.to_string(),
            overwrite: crate::error::Overwrite::WriteOptions,
        });
    }
    existing.iter().try_for_each(|key| store.delete(key))
}

/// The metadata documents of both Zarr formats (and consolidated metadata): a node
/// with one of these names would be taken for its parent's metadata, and readers
/// drop it from the group.
const RESERVED_NAMES: [&str; 5] = ["zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"];

/// Zarr node names: non-empty, no `/`, not `.`/`..`, not starting with `__`, and
/// not a metadata document's name (in either format).
fn check_node_name(path: &str) -> Result<()> {
    for name in path.split('/').filter(|_| !path.is_empty()) {
        if RESERVED_NAMES.contains(&name) {
            return Err(Error::InvalidName {
                name: name.to_string(),
                reason: NameError::MetadataDocument,
            });
        }
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.starts_with("__")
            || name.contains('\\')
        {
            return Err(Error::InvalidName {
                name: name.to_string(),
                reason: NameError::Reserved,
            });
        }
    }
    Ok(())
}

/// The elements of a 1-D shard asked to hold `len`: rounded up to whole chunks of
/// `chunk` elements.
fn shard_len(len: usize, chunk: usize) -> usize {
    len.div_ceil(chunk).saturating_mul(chunk)
}

fn default_chunk_len(spec: &ArraySpec, sample: &ArrayRef) -> usize {
    let per_element = match spec.data_type.fixed_size() {
        Some(size) => size,
        None if sample.is_empty() => 64,
        None => value_bytes(sample.as_ref()) / sample.len() + 4,
    };
    (DEFAULT_CHUNK_BYTES / per_element.max(1)).clamp(1, 1 << 24)
}

/// A one-element array of the fill value for `data_type`.
fn fill_value(data_type: &ArrowType) -> Result<ArrayRef> {
    use arrow_array::*;
    Ok(match data_type {
        ArrowType::Boolean => Arc::new(BooleanArray::from(vec![false])),
        ArrowType::Int8 => Arc::new(Int8Array::from(vec![0])),
        ArrowType::Int16 => Arc::new(Int16Array::from(vec![0])),
        ArrowType::Int32 => Arc::new(Int32Array::from(vec![0])),
        ArrowType::Int64 => Arc::new(Int64Array::from(vec![0])),
        ArrowType::UInt8 => Arc::new(UInt8Array::from(vec![0])),
        ArrowType::UInt16 => Arc::new(UInt16Array::from(vec![0])),
        ArrowType::UInt32 => Arc::new(UInt32Array::from(vec![0])),
        ArrowType::UInt64 => Arc::new(UInt64Array::from(vec![0])),
        // A missing float is NaN, as pandas, numpy and anndata write it.
        ArrowType::Float16 => Arc::new(Float16Array::from(vec![half::f16::NAN])),
        ArrowType::Float32 => Arc::new(Float32Array::from(vec![f32::NAN])),
        ArrowType::Float64 => Arc::new(Float64Array::from(vec![f64::NAN])),
        ArrowType::Utf8 => Arc::new(StringArray::from(vec![""])),
        ArrowType::LargeUtf8 => Arc::new(LargeStringArray::from(vec![""])),
        ArrowType::Utf8View => Arc::new(StringViewArray::from(vec![""])),
        ArrowType::Binary => Arc::new(BinaryArray::from(vec![&b""[..]])),
        ArrowType::LargeBinary => Arc::new(LargeBinaryArray::from(vec![&b""[..]])),
        ArrowType::BinaryView => Arc::new(BinaryViewArray::from(vec![&b""[..]])),
        other => {
            return Err(Error::UnsupportedArrowType {
                column: None,
                data_type: other.clone(),
                by: ArrowTypeUse::FillNulls,
            });
        }
    })
}

/// The type of the values an array of `arrow_type` stores: a dictionary's
/// values (their codes are not stored), any other type itself.
pub(super) fn value_type(arrow_type: &ArrowType) -> &ArrowType {
    match arrow_type {
        ArrowType::Dictionary(_, values) => values,
        other => other,
    }
}
