//! [`ZarrArray`]: open an array, read it whole, by element range, or batch by
//! batch (a chunk row each), all through the push decoder's drivers.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType as ArrowType, Field};

use super::Node;
use super::ReadOptions;
use super::plan::{ChunkRead, Decoded};
use crate::assemble::{Part, gather};
use crate::codec::CodecChain;
use crate::conventions::Conventions;
use crate::conventions::cf::CfDecode;
use crate::error::Convention;
use crate::error::{ChunkError, Error, LimitKind, NodeKind, Result};
use crate::fill::fill_array;
use crate::grid::{Grid, unravel};
use crate::metadata::{ARROW_BYTES_PER_ELEMENT, ArrayMetadata, NodeMetadata, StringType};
use crate::recycle::Recycler;
use crate::store::{Store, join_key};

/// A Zarr array opened for reading.
///
/// Cheap to clone (the store and metadata are shared).
#[derive(Debug, Clone)]
pub struct ZarrArray {
    store: Arc<dyn Store>,
    path: String,
    name: String,
    meta: Arc<ArrayMetadata>,
    codecs: CodecChain,
    grid: Grid,
    conventions: Arc<Conventions>,
    options: ReadOptions,
    /// Where its decoded buffers come from and go back to (a reader's, from its
    /// context), if anywhere.
    recycler: Option<Arc<Recycler>>,
    /// The listing [`ZarrArray::chunk_statistics`] last checked the statistics
    /// against, and the bounds it found (shared by clones, whose metadata is
    /// the same).
    #[cfg(feature = "datafusion")]
    statistics_seen: Arc<std::sync::Mutex<Option<StatisticsSeen>>>,
}

/// What [`ZarrArray::chunk_statistics`] found, and from what: the same
/// listing (every file's version the same, the statistics file's among
/// them) over the same metadata finds the same again.
#[cfg(feature = "datafusion")]
#[derive(Debug)]
struct StatisticsSeen {
    decode_cf: bool,
    listed: Vec<(String, String)>,
    bounds: Option<crate::stats::Bounds>,
}

impl ZarrArray {
    /// Open the array at node `path` (`""` for a store whose root is the array) with
    /// default [`ReadOptions`].
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], metadata errors, or [`Error::WrongNodeKind`] when
    /// the node is a group.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        Self::open_with(store, path, ReadOptions::default())
    }

    /// Open with explicit options.
    pub fn open_with(store: Arc<dyn Store>, path: &str, options: ReadOptions) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        match Node::read(store.as_ref(), &path)?.into_parts() {
            (NodeMetadata::Array(meta), conventions) => {
                Self::from_metadata(store, path, *meta, conventions, options)
            }
            (NodeMetadata::Group(_), _) => Err(Error::WrongNodeKind {
                path: crate::store::node_label(store.as_ref(), &path),
                expected: NodeKind::Array,
                found: NodeKind::Group,
            }),
        }
    }

    pub(crate) fn from_metadata(
        store: Arc<dyn Store>,
        path: String,
        meta: ArrayMetadata,
        conventions: Arc<Conventions>,
        options: ReadOptions,
    ) -> Result<Self> {
        let document = if meta.zarr_format == 2 {
            ".zarray"
        } else {
            "zarr.json"
        };
        let codecs = CodecChain::from_metadata(&meta, &join_key(&path, document))?;
        let name = path.rsplit('/').next().unwrap_or("").to_string();
        let name = if name.is_empty() {
            "values".to_string()
        } else {
            name
        };
        let grid = Grid::new(&meta.shape, &meta.chunk_shape);
        Ok(Self {
            store,
            path,
            name,
            meta: Arc::new(meta),
            codecs,
            grid,
            conventions,
            options,
            recycler: None,
            #[cfg(feature = "datafusion")]
            statistics_seen: Arc::default(),
        })
    }

    /// Use `name` as the column name in record batches (default: the node name, or
    /// `values` for a root array).
    pub fn with_column_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The column name used in record batches.
    pub(crate) fn column_name(&self) -> &str {
        &self.name
    }

    /// The node path inside the store.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The array as a user names it: the store's location and the node path.
    pub(crate) fn label(&self) -> String {
        crate::store::node_label(self.store.as_ref(), &self.path)
    }

    /// The store the array reads from.
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The parsed metadata.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.meta
    }

    /// Decode into buffers from `recycler` (a reader's).
    pub(crate) fn with_recycler(mut self, recycler: Option<Arc<Recycler>>) -> Self {
        self.recycler = recycler;
        self
    }

    /// Where decoded buffers come from, if anywhere.
    pub(crate) fn recycler(&self) -> Option<&Arc<Recycler>> {
        self.recycler.as_ref()
    }

    /// The read options in force.
    pub(crate) fn options(&self) -> &ReadOptions {
        &self.options
    }

    /// The conventions the array follows, decided when it was opened.
    pub(crate) fn conventions(&self) -> &Conventions {
        &self.conventions
    }

    /// The codecs, built from the metadata.
    pub fn codecs(&self) -> &CodecChain {
        &self.codecs
    }

    /// The chunk grid.
    pub(crate) fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Read strings as `string_type` unless the caller chose a type (this one
    /// wins over a type zarrow's writer recorded).
    pub(crate) fn or_string_type(mut self, string_type: StringType) -> Self {
        self.options.string_type.get_or_insert(string_type);
        self
    }

    /// The Arrow layout for string and bytes values: the caller's choice, else the
    /// one zarrow's writer recorded, else `Utf8` / `Binary`.
    pub(crate) fn string_type(&self) -> StringType {
        self.options
            .string_type
            .or(self.conventions.recorded().string_type)
            .unwrap_or_default()
    }

    /// The Arrow type values are read into.
    pub fn arrow_type(&self) -> ArrowType {
        let t = self.meta.data_type.arrow_type(self.string_type());
        // numpy's datetime64 is zoneless: the timezone zarrow's writer recorded.
        match (t, &self.conventions.recorded().timezone) {
            (ArrowType::Timestamp(unit, None), Some(tz)) => {
                ArrowType::Timestamp(unit, Some(tz.as_str().into()))
            }
            (t, _) => t,
        }
    }

    /// `array` (as decoded) with the timezone of [`ZarrArray::arrow_type`], if
    /// one was recorded: the same buffers, retyped.
    fn with_timezone(&self, array: ArrayRef) -> Result<ArrayRef> {
        let t = self.arrow_type();
        if array.data_type() == &t {
            return Ok(array);
        }
        let data = array.to_data().into_builder().data_type(t).build()?;
        Ok(arrow_array::make_array(data))
    }

    /// How the array's CF attributes change its values (see
    /// [`conventions::cf`](crate::conventions::cf)), when the options decode them.
    ///
    /// # Errors
    /// [`Error::Convention`] for attributes zarrow cannot decode (a calendar other
    /// than the Gregorian one, say).
    pub(crate) fn cf_decode(&self) -> Result<Option<CfDecode>> {
        if !self.options.decode_cf {
            return Ok(None);
        }
        match self.conventions.cf() {
            Ok(cf) => Ok(cf.cloned()),
            Err(source) => Err(Error::Convention {
                path: self.label(),
                convention: Convention::Cf,
                source,
            }),
        }
    }

    /// Whether the array's CF attributes change its values when decoded (as
    /// a reader with the default options does), whatever the options say.
    pub(crate) fn has_cf_decoding(&self) -> Result<bool> {
        match self.conventions.cf() {
            Ok(cf) => Ok(cf.is_some()),
            Err(source) => Err(Error::Convention {
                path: self.label(),
                convention: Convention::Cf,
                source,
            }),
        }
    }

    /// An [`Error::Convention`] about this array.
    pub(crate) fn convention_err(
        &self,
        convention: Convention,
        source: crate::conventions::ConventionError,
    ) -> Error {
        Error::Convention {
            path: self.label(),
            convention,
            source: std::sync::Arc::new(source),
        }
    }

    /// The Arrow field for this array's column: nullable only for numpy's
    /// datetime64 / timedelta64, whose NaT reads as a null (Zarr has no other nulls).
    pub fn field(&self) -> Field {
        Field::new(&self.name, self.arrow_type(), self.meta.data_type.has_nat())
    }

    /// Total elements.
    pub fn len(&self) -> u64 {
        self.meta.len()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The store key of the chunk at grid `indices`.
    pub fn chunk_key(&self, indices: &[u64]) -> String {
        join_key(&self.path, &self.meta.chunk_key_encoding.key(indices))
    }

    /// The store keys of the grid's chunks, in C order (the keys, present in
    /// the store or not: a missing chunk reads as the fill value).
    pub fn chunk_keys(&self) -> impl ExactSizeIterator<Item = String> + '_ {
        let grid_shape = self.grid.grid_shape();
        let n = usize::try_from(self.grid.num_chunks()).unwrap_or(usize::MAX);
        (0..n).map(move |i| self.chunk_key(&unravel(i as u64, &grid_shape)))
    }

    #[cfg(feature = "datafusion")]
    /// The chunk statistics of a 1-D array (zarrow's `zarrow.stats`) that
    /// still describe its stored chunks, when the options use them and they
    /// describe values as these options read them. One GET and one listing.
    ///
    /// # Errors
    /// A statistics file that is not one; store errors.
    pub(crate) fn chunk_statistics(&self) -> Result<Option<crate::stats::Bounds>> {
        use std::sync::PoisonError;
        if !self.options.use_stats || self.meta.shape.len() != 1 {
            return Ok(None);
        }
        let listed = crate::stats::listed(self.store.as_ref(), &self.path)?;
        let decode_cf = self.options.decode_cf;
        // The listing the bounds were last found from: the same bounds (the
        // statistics file and the chunks are the versions they were).
        if let Some(listed) = &listed {
            let seen = self
                .statistics_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(seen) = seen.as_ref()
                && seen.decode_cf == decode_cf
                && seen.listed == *listed
            {
                return Ok(seen.bounds.clone());
            }
        }
        let versions = listed.as_ref().map(|v| v.iter().cloned().collect());
        let bounds = match self.report_against(versions)? {
            Some(crate::stats::Report {
                stats: Some(stats),
                fresh,
                unusable: None,
                ..
            }) => crate::stats::Bounds::of(&stats, &fresh).map(Some)?,
            _ => None,
        };
        if let Some(listed) = listed {
            *self
                .statistics_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(StatisticsSeen {
                decode_cf,
                listed,
                bounds: bounds.clone(),
            });
        }
        Ok(bounds)
    }

    /// The array's chunk statistics file, read and checked against the
    /// stored chunks (`None`: there is none, or the array is not 1-D).
    ///
    /// # Errors
    /// As [`ZarrArray::chunk_statistics`].
    pub(crate) fn statistics_report(&self) -> Result<Option<crate::stats::Report>> {
        if self.meta.shape.len() != 1 {
            return Ok(None);
        }
        // The listing first: where it gives the file's version, a store
        // that keeps values by version reads the file once per version.
        let versions = crate::stats::versions(self.store.as_ref(), &self.path)?;
        self.report_against(versions)
    }

    /// [`statistics_report`](Self::statistics_report) against `versions`,
    /// the store's listing of the array (`None`: the store cannot tell).
    fn report_against(
        &self,
        versions: Option<std::collections::HashMap<String, String>>,
    ) -> Result<Option<crate::stats::Report>> {
        use crate::stats::{MAX_STATS_BYTES, Report, STATS_KEY, decode, fresh};
        let key = join_key(&self.path, STATS_KEY);
        let bytes = match versions.as_ref().and_then(|listed| listed.get(&key)) {
            Some(version) => self.store.get_version(&key, version, MAX_STATS_BYTES)?,
            None => self.store.get_bounded(&key, MAX_STATS_BYTES)?,
        };
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let stats = match decode(&key, &bytes)? {
            Ok(stats) => stats,
            Err(version) => {
                return Ok(Some(Report {
                    stats: None,
                    fresh: Vec::new(),
                    verified: false,
                    unusable: Some(format!(
                        "version {version:?} of the convention (this reader reads {:?}; \
                         zarrow stats records it again)",
                        crate::stats::VERSION
                    )),
                }));
            }
        };
        let grid_len = self.meta.chunk_shape.first().copied().unwrap_or(0);
        // The metadata changed since (the values may read differently), or
        // the values are read otherwise (raw, where the statistics are of
        // CF-decoded values), or a statistic's rows would straddle two
        // stored objects: not used.
        let unusable = if stats.array != crate::stats::fingerprint(&self.meta) {
            Some("recorded for other metadata (data type, fill value or attributes)".to_string())
        } else if stats.decode_cf != self.options.decode_cf && self.has_cf_decoding()? {
            Some("recorded for another CF decoding".to_string())
        } else if grid_len == 0 || grid_len % stats.chunk_len != 0 {
            Some(format!(
                "recorded for chunks of {} rows, which the chunks of {grid_len} rows now \
                 do not hold whole",
                stats.chunk_len
            ))
        } else {
            None
        };
        let per_grid = (grid_len / stats.chunk_len).max(1);
        let fresh = fresh(&stats, versions.as_ref(), self.meta.shape[0], |i| {
            self.chunk_key(&[i / per_grid])
        });
        Ok(Some(Report {
            verified: versions.is_some(),
            unusable,
            fresh,
            stats: Some(stats),
        }))
    }

    /// [`statistics_report`](Self::statistics_report), checked where the
    /// store cannot list versions (plain HTTP): each described chunk's object
    /// asked for its size (a HEAD each, at most [`Store::concurrency`] at
    /// once), which must be the size its recorded version begins with.
    ///
    /// # Errors
    /// As [`ZarrArray::statistics_report`]; a store's error for a HEAD.
    pub(crate) fn verified_statistics(&self) -> Result<Option<crate::stats::Report>> {
        let Some(mut report) = self.statistics_report()? else {
            return Ok(None);
        };
        let Some(stats) = report.stats.as_ref().filter(|_| !report.verified) else {
            return Ok(Some(report));
        };
        let grid_len = self.meta.chunk_shape.first().copied().unwrap_or(1);
        let per_grid = (grid_len / stats.chunk_len).max(1);
        let recorded = crate::stats::recorded_versions(stats);
        // The objects to ask about, once each.
        let mut objects: Vec<String> = recorded
            .iter()
            .map(|(chunk, _)| self.chunk_key(&[chunk / per_grid]))
            .collect();
        objects.sort();
        objects.dedup();
        let sizes = head_all(self.store.as_ref(), &objects)?;
        for (i, (chunk, version)) in recorded.iter().enumerate() {
            let key = self.chunk_key(&[chunk / per_grid]);
            let size = objects.binary_search(&key).ok().and_then(|at| sizes[at]);
            let recorded_size = version
                .as_deref()
                .and_then(|v| v.split(':').next())
                .and_then(|v| v.parse::<u64>().ok());
            report.fresh[i] &= size.is_some() && size == recorded_size;
        }
        report.verified = true;
        Ok(Some(report))
    }

    /// How many chunks of the grid are present in the store.
    pub fn chunks_present(&self) -> Result<u64> {
        let prefix = join_key(&self.path, "");
        let keys = self.store.list_prefix(&prefix)?;
        let encoding = &self.meta.chunk_key_encoding;
        if self.meta.shape.is_empty() {
            let key = self.chunk_key(&[]);
            return Ok(u64::from(keys.contains(&key)));
        }
        // Parse the listed keys back into chunk indices (never loop over the grid,
        // which may be astronomically large).
        let grid = self.grid.grid_shape();
        Ok(keys
            .iter()
            .filter_map(|k| encoding.parse(&k[prefix.len()..]))
            .filter(|idx| idx.len() == grid.len() && idx.iter().zip(&grid).all(|(i, g)| i < g))
            .count() as u64)
    }

    /// `decoded` with the timezone of [`ZarrArray::arrow_type`] on every run.
    fn retyped(&self, Decoded { offset, runs }: Decoded) -> Result<Decoded> {
        let runs = runs
            .into_iter()
            .map(|run| self.with_timezone(run))
            .collect::<Result<_>>()?;
        Ok(Decoded { offset, runs })
    }

    pub(crate) fn fill(&self, n: usize) -> Result<ArrayRef> {
        let m = &self.meta;
        fill_array(
            &m.data_type,
            &m.fill_value,
            n,
            self.string_type(),
            self.options.max_chunk_bytes,
        )
        .map_err(|source| Error::Chunk {
            key: join_key(&self.path, "<fill value>"),
            source,
        })
        .and_then(|a| self.with_timezone(a))
    }

    /// The plan for the rows of 1-D chunk `i` that lie in `within` (and in the
    /// array): only what they need is fetched (a shard's index and inner
    /// chunks, when sharded). [`ZarrArray::finish_rows`] makes the rows of what
    /// it decodes.
    pub(crate) fn plan_rows(&self, i: u64, within: Range<u64>, runs: bool) -> RowsRead {
        let c = self.meta.chunk_shape[0];
        let valid = self.grid.valid_extent(&[i])[0];
        let lo = within.start.saturating_sub(i * c).min(valid);
        let hi = within.end.saturating_sub(i * c).min(valid).max(lo);
        // All of the chunk that lies inside the array: read it whole (one request).
        let want = (lo > 0 || hi < valid).then_some(lo..hi);
        // The last chunk's elements past the array's end (a vlen chunk holds
        // them too, as fill values) need not be decoded.
        let mut read = ChunkRead::new(self, &[i], want).wanting_first(hi);
        if runs && self.run_len().is_some() {
            read = read.with_runs();
        }
        RowsRead { read, lo, hi }
    }

    /// Elements `rows` of chunk `i` from what its [`ZarrArray::plan_rows`] read
    /// decoded, as slices of the runs; the fill value for a missing chunk.
    pub(crate) fn finish_rows(
        &self,
        i: u64,
        rows: Range<u64>,
        decoded: Option<Decoded>,
    ) -> Result<Vec<ArrayRef>> {
        let n = rows.end.saturating_sub(rows.start);
        match decoded {
            Some(decoded) => {
                let Decoded { offset, runs } = self.retyped(decoded)?;
                let decoded_end = offset + runs.iter().map(|r| r.len() as u64).sum::<u64>();
                if rows.start < offset || decoded_end < rows.end {
                    return Err(Error::Chunk {
                        key: self.chunk_key(&[i]),
                        source: ChunkError::Truncated {
                            what: "decoded rows",
                            needed: rows.end,
                            available: decoded_end,
                        },
                    });
                }
                Ok(slice_runs(runs, (rows.start - offset) as usize, n as usize))
            }
            None => Ok(vec![self.fill(n as usize)?]),
        }
    }

    /// The inner chunk length of a 1-D array whose shards can be decoded as runs
    /// (see [`ZarrArray::plan_rows`]), when each run would be at least
    /// [`MIN_RUN_LEN`] elements; else `None` (the shard is gathered into one array).
    pub(crate) fn run_len(&self) -> Option<u64> {
        if self.meta.shape.len() != 1 {
            return None;
        }
        let inner = crate::codec::PartialDecoder::part_rows(&self.codecs.partial(1)?);
        (inner >= MIN_RUN_LEN && inner < self.meta.chunk_shape[0]).then_some(inner)
    }

    /// The fewest rows a read of this 1-D array can fetch and decode apart
    /// from the rest of its chunk: a shard's inner chunk, else the chunk.
    #[cfg(feature = "datafusion")]
    pub(crate) fn read_granule(&self) -> u64 {
        let inner = (self.meta.shape.len() == 1)
            .then(|| self.codecs.partial(1))
            .flatten()
            .map(|p| crate::codec::PartialDecoder::part_rows(&p));
        inner.unwrap_or_else(|| self.row_chunk_len()).max(1)
    }

    /// The elements of one full chunk row (a slab, flattened in C order): a
    /// chunk's length for a 1-D array, the chunk's first extent times the
    /// array's other extents for an N-d one; 1 for a 0-d array.
    pub(crate) fn row_chunk_len(&self) -> u64 {
        let shape = &self.meta.shape;
        match self.meta.chunk_shape.first() {
            None => 1,
            Some(&c) => shape[1..]
                .iter()
                .fold(c, |acc, &d| acc.saturating_mul(d))
                .max(1),
        }
    }

    /// The chunk reads of elements `within` (C order) of slab `s` of an N-d
    /// array: every chunk of its chunk row, in C order, whole, or, when its
    /// codecs decode part of a chunk (a shard), only the rows of inner chunks
    /// that hold the rows `within` touches. Refused when the slab's Arrow
    /// structures alone would exceed the byte limit, as a slab spans the whole
    /// extent of the other dimensions.
    pub(crate) fn plan_slab(&self, s: u64, within: Range<u64>) -> Result<Vec<ChunkRead>> {
        let shape = &self.meta.shape;
        if shape.is_empty() {
            // A 0-d array: its one chunk.
            return Ok(vec![ChunkRead::new(self, &[], None)]);
        }
        let grid_rest: Vec<u64> = self.grid.grid_shape()[1..].to_vec();
        let n_chunks: u64 = grid_rest.iter().product();
        let window = self.slab_window(s, within);
        let elements = shape[1..]
            .iter()
            .fold(window.rows.end - window.rows.start, |acc, &d| {
                acc.saturating_mul(d)
            });
        if elements.saturating_mul(ARROW_BYTES_PER_ELEMENT as u64)
            > self.options.max_chunk_bytes as u64
        {
            return Err(Error::Chunk {
                key: self.chunk_key(&[s]),
                source: ChunkError::TooLarge {
                    codec: "chunk row (N-d slab)",
                    limit: self.options.max_chunk_bytes as u64,
                },
            });
        }
        Ok((0..n_chunks)
            .map(|j| {
                let mut indices = vec![s];
                indices.extend(unravel(j, &grid_rest));
                ChunkRead::new(self, &indices, window.want.clone())
            })
            .collect())
    }

    /// What reading elements `within` (C order) of slab `s` takes: see
    /// [`SlabWindow`].
    fn slab_window(&self, s: u64, within: Range<u64>) -> SlabWindow {
        let shape = &self.meta.shape;
        let chunk_rows = self.meta.chunk_shape[0];
        let valid = chunk_rows.min(shape[0].saturating_sub(s.saturating_mul(chunk_rows)));
        let whole = SlabWindow {
            want: None,
            rows: 0..valid,
            decoded_rows: chunk_rows,
        };
        let row_len: u64 = shape[1..].iter().product();
        let Some(partial) = self.codecs.partial(shape.len()) else {
            return whole;
        };
        if row_len == 0 {
            return whole;
        }
        let lo = (within.start / row_len).min(valid);
        let hi = within.end.div_ceil(row_len).min(valid).max(lo);
        if (lo == 0 && hi == valid) || lo == hi {
            return whole;
        }
        // The rows of inner chunks that hold rows lo..hi.
        let part_rows = crate::codec::PartialDecoder::part_rows(&partial);
        let first = lo / part_rows * part_rows;
        let end = hi
            .div_ceil(part_rows)
            .saturating_mul(part_rows)
            .min(chunk_rows);
        SlabWindow {
            want: Some(lo..hi),
            rows: first..end.min(valid),
            decoded_rows: end - first,
        }
    }

    /// One chunk of a slab from what its read decoded (the fill value when
    /// missing).
    pub(crate) fn finish_part(&self, decoded: Option<Decoded>) -> Result<Part> {
        Ok(match decoded {
            Some(decoded) => Part::Present(self.concat(self.retyped(decoded)?.runs)?),
            None => Part::Missing(self.fill(1)?),
        })
    }

    /// Elements `within` (C order) of slab `s`, from its chunks as
    /// [`ZarrArray::plan_slab`] planned them for `within`.
    pub(crate) fn finish_slab(
        &self,
        s: u64,
        within: Range<u64>,
        mut parts: Vec<Part>,
    ) -> Result<ArrayRef> {
        let shape = &self.meta.shape;
        if parts.is_empty() {
            return self.fill(0);
        }
        if shape.is_empty() {
            // A 0-d array: the first element of its one chunk.
            return Ok(match parts.swap_remove(0) {
                Part::Present(a) | Part::Missing(a) => {
                    let n = a.len().min(1);
                    let lo = (within.start as usize).min(n);
                    a.slice(lo, (within.end as usize).clamp(lo, n) - lo)
                }
            });
        }
        let window = self.slab_window(s, within.clone());
        // Each chunk decoded these rows, with its whole extent of the others.
        let mut part_shape = vec![window.decoded_rows];
        part_shape.extend_from_slice(&self.meta.chunk_shape[1..]);
        let part_len: u64 = part_shape.iter().product();
        if let Some(Part::Present(bad)) = parts
            .iter()
            .find(|p| matches!(p, Part::Present(a) if a.len() as u64 != part_len))
        {
            return Err(Error::Chunk {
                key: self.chunk_key(&[s]),
                source: ChunkError::CountMismatch {
                    expected: part_len,
                    found: bad.len() as u64,
                },
            });
        }
        // The rows decoded, and the whole extent of the other dimensions.
        let mut region = vec![window.rows.end - window.rows.start];
        region.extend_from_slice(&shape[1..]);
        let mut grid = vec![1];
        grid.extend_from_slice(&self.grid.grid_shape()[1..]);
        let slab = gather(&parts, &grid, &part_shape, &region)?;
        // `slab` starts at the first row decoded.
        let row_len: u64 = shape[1..].iter().product();
        let base = window.rows.start.saturating_mul(row_len);
        let (lo, hi) = (
            within.start.saturating_sub(base),
            within.end.saturating_sub(base),
        );
        if within.start < base || hi > slab.len() as u64 || lo > hi {
            return Err(Error::Chunk {
                key: self.chunk_key(&[s]),
                source: ChunkError::Truncated {
                    what: "slab elements",
                    needed: within.end,
                    available: base + slab.len() as u64,
                },
            });
        }
        Ok(slab.slice(lo as usize, (hi - lo) as usize))
    }

    /// The whole array as one Arrow array (N-d arrays flattened in C order).
    ///
    /// Copies: a single-chunk array is returned as decoded; several chunks are
    /// concatenated (one more copy of everything).
    ///
    /// # Errors
    /// Any chunk's error, or [`Error::LimitExceeded`] when the array does not
    /// fit in memory.
    pub fn read_all(&self) -> Result<ArrayRef> {
        if usize::try_from(self.len()).is_err() {
            return Err(Error::LimitExceeded {
                what: self.label(),
                limit: LimitKind::Elements,
                value: self.len(),
                max: usize::MAX as u64,
            });
        }
        self.check_read_size(self.len())?;
        self.read_rows(0..self.len())
    }

    /// Elements `range` of a 1-D array, touching only the chunks that hold them.
    ///
    /// # Errors
    /// [`Error::NotOneDimensional`] for an N-d array, [`Error::RowsOutOfRange`]
    /// for a range past the end.
    pub fn read_range(&self, range: Range<u64>) -> Result<ArrayRef> {
        if self.meta.shape.len() != 1 {
            return Err(Error::NotOneDimensional {
                path: self.label(),
                shape: self.meta.shape.clone(),
                operation: "read_range",
            });
        }
        if range.start > range.end || range.end > self.len() {
            return Err(Error::RowsOutOfRange {
                path: self.label(),
                start: range.start,
                end: range.end,
                len: self.len(),
            });
        }
        if range.is_empty() {
            return self.fill(0);
        }
        self.check_read_size(range.end - range.start)?;
        self.read_rows(range)
    }

    /// Elements `rows` (a 1-D array's rows, an N-d array's elements in C order)
    /// read by the push decoder's blocking driver: many requests in flight on a
    /// remote store, chunks decoded on rayon, raw values (no CF decoding)
    /// concatenated once.
    fn read_rows(&self, rows: Range<u64>) -> Result<ArrayRef> {
        let mut raw = self.clone();
        raw.options.decode_cf = false;
        let mut reader = raw.reader().with_row_range(rows).build()?;
        let mut parts = Vec::new();
        while let Some(batch) = reader.next_batch()? {
            parts.push(batch.column(0).clone());
        }
        if parts.is_empty() {
            return self.fill(0);
        }
        self.concat(parts)
    }

    /// Refuse to materialise `elements` elements past [`ReadOptions::max_read_bytes`].
    pub(crate) fn check_read_size(&self, elements: u64) -> Result<()> {
        let per_element = self.meta.data_type.arrow_bytes_per_element() as u64;
        let bytes = elements.saturating_mul(per_element);
        if bytes > self.options.max_read_bytes {
            return Err(Error::ReadTooLarge {
                path: self.path.clone(),
                elements,
                bytes,
                limit: self.options.max_read_bytes,
            });
        }
        Ok(())
    }

    pub(crate) fn concat(&self, mut parts: Vec<ArrayRef>) -> Result<ArrayRef> {
        match parts.len() {
            0 => self.fill(0),
            1 => Ok(parts.swap_remove(0)),
            _ => {
                let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                Ok(arrow_select::concat::concat(&refs)?)
            }
        }
    }

    /// A builder for a table reader over this (1-D) array: one column, any rows.
    pub fn reader(&self) -> super::ReaderBuilder {
        super::ReaderBuilder::for_array(self.clone())
    }

    /// A streaming reader: one record batch per slab (per chunk for 1-D arrays),
    /// decoding, reading ahead and reusing buffers as `context` says; its rows
    /// are the array's length.
    pub fn batches(&self, context: &crate::ExecutionContext) -> super::TableReader {
        super::TableReader::array(self.clone(), context)
    }
}

/// A planned read of some rows of a 1-D chunk: see [`ZarrArray::plan_rows`].
#[derive(Debug)]
pub(crate) struct RowsRead {
    /// The chunk's read.
    pub read: ChunkRead,
    /// The rows wanted, within the chunk.
    pub lo: u64,
    /// The end of the rows wanted, within the chunk.
    pub hi: u64,
}

/// The shortest inner chunk that [`ZarrArray::run_len`] passes on as a run of its
/// own (DataFusion's default batch size): shorter inner chunks would make batches
/// too small to be worth their overhead, so their shard is gathered instead.
pub(crate) const MIN_RUN_LEN: u64 = 8192;

/// What a read of some elements of an N-d slab takes (see
/// [`ZarrArray::plan_slab`]).
#[derive(Debug)]
struct SlabWindow {
    /// The rows each chunk of the chunk row is read for (`None`: whole).
    want: Option<Range<u64>>,
    /// The rows of the slab decoded (whole rows of inner chunks, within the
    /// array).
    rows: Range<u64>,
    /// The rows each chunk decodes (to its own extent, past the array's).
    decoded_rows: u64,
}

/// `take` elements of `runs` from element `skip` on, as slices of the runs.
fn slice_runs(runs: Vec<ArrayRef>, mut skip: usize, mut take: usize) -> Vec<ArrayRef> {
    let mut out = Vec::with_capacity(runs.len());
    for run in runs {
        if take == 0 {
            break;
        }
        let len = run.len();
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = (len - skip).min(take);
        out.push(if skip == 0 && n == len {
            run
        } else {
            run.slice(skip, n)
        });
        take -= n;
        skip = 0;
    }
    out
}

/// The sizes of `keys`' values (`None`: absent), at most the store's
/// concurrency asked at once.
///
/// The store is sync, so one thread would wait out each request in turn; a
/// few scoped threads (no more than the store's concurrency, at most 16)
/// keep its requests in flight and end with the call: no pool outlives it.
///
/// # Errors
/// The first of the store's errors.
fn head_all(store: &dyn Store, keys: &[String]) -> Result<Vec<Option<u64>>> {
    let workers = store.concurrency().clamp(1, 16).min(keys.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let sizes: Vec<std::sync::Mutex<Option<Result<Option<u64>>>>> =
        keys.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(key) = keys.get(i) else { break };
                    let size = store.value_len(key);
                    *sizes[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(size);
                }
            });
        }
    });
    sizes
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or(Ok(None))
        })
        .collect()
}
