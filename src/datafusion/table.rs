//! [`ZarrTable`]: a Zarr group (one column per 1-D array) or array as a
//! DataFusion `TableProvider`.

use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock};

use arrow_array::RecordBatchReader;
use arrow_schema::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Statistics, not_impl_err, plan_err};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::filter::{self, ScanFilter};
use super::scan::ZarrScanExec;
use super::sink::{Mode, Target, ZarrSink};
use super::{df_err, prune};
use crate::conventions::anndata;
use crate::conventions::cf::DIMENSION_NAMES_KEY;
use crate::error::{Error, ParseOptionError, Result};
use crate::location::UrlOptions;
use crate::location::{Location, Stores};
use crate::options::Options as _;
use crate::read::Node;
use crate::read::{ReaderBuilder, Skipped, aligned_splits};
use crate::store::{Consolidated, MetadataSnapshot};
use crate::write::open_for_append;
use crate::write::{Layout, WriteOptions};
use crate::{NodeMetadata, ReadOptions, Store, ZarrArray, ZarrGroup, read_node};

crate::options::options! {
    /// How a Zarr store is read as a table: what `CREATE EXTERNAL TABLE ... OPTIONS`
    /// sets, and what the codecs carry to another machine.
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct ZarrTableOptions("ZARR table") {
        /// The group's columns to expose, in this order, comma-separated
        /// (default: every 1-D array).
        pub columns: Option<Vec<String>> as crate::options::List = None,
        /// Columns whose values never decrease with the row, comma-separated: a
        /// filter on one of them narrows the rows read (`Inexact`: DataFusion
        /// still applies it). An xarray dimension coordinate (a 1-D array named
        /// after its own dimension) counts without being named.
        pub sorted: Vec<String> as crate::options::List = Vec::new(),
    }
    groups {
        /// How the arrays are read: as [`ReadOptions`], but for
        /// `categorical_values`, on by default here (each row a view of its
        /// category, as DataFusion reads a dictionary-encoded Parquet column,
        /// and what its `GROUP BY` is fastest on).
        pub read: ReadOptions = ReadOptions { categorical_values: true, ..ReadOptions::default() },
    }
}

impl ZarrTableOptions {
    /// Options from `CREATE EXTERNAL TABLE ... OPTIONS (...)`: the keys of
    /// [`ZarrTableOptions`]'s declaration ([`Options::entries`](crate::Options::entries)), each
    /// optionally prefixed `format.`, in any case; `raw` (`true`: no CF
    /// decoding) is the older spelling of `decode_cf` `false`.
    ///
    /// # Errors
    /// [`Error::UnknownOption`] for an unknown key, [`Error::Option`] for a bad
    /// value: nothing is ignored in silence.
    pub(crate) fn from_map<'a>(
        options: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let key = key.to_ascii_lowercase();
            match key.strip_prefix("format.").unwrap_or(&key) {
                "raw" => {
                    let raw = crate::options::parse_flag(value).ok_or_else(|| {
                        Error::Option(ParseOptionError::new("raw", value, "true or false"))
                    })?;
                    out.read.decode_cf = !raw;
                }
                key => out.set(key, value)?,
            }
        }
        Ok(out)
    }
}

/// What a table reads from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A group's 1-D arrays, or one 1-D array: rows read by a [`ReaderBuilder`].
    Rows(ReaderBuilder),
    /// An N-d array, flattened in C order, read slab by slab (a slab: the
    /// elements whose first index falls in one chunk row).
    Flat(ZarrArray),
}

/// A Zarr group or array as a DataFusion table.
///
/// The schema and the exact row count come from metadata alone. A scan reads
/// only the projected arrays, and of them only the chunks its rows need; see
/// [the module](super).
#[derive(Debug, Clone)]
pub struct ZarrTable {
    location: Location,
    options: ZarrTableOptions,
    /// How the location was opened (kept for another machine to open it alike).
    url: UrlOptions,
    /// The store's metadata as read when the table opened (sent with a plan, so
    /// that another machine opens the table without reading it again).
    metadata: Arc<Consolidated>,
    pub(crate) source: Source,
    schema: SchemaRef,
    rows: u64,
    /// Indices of the columns whose values never decrease (declared or
    /// dimension coordinates).
    sorted: Vec<usize>,
    skipped: Vec<Skipped>,
    /// The store `INSERT INTO` writes through (its keys, before any
    /// consolidated metadata is read), when the table knows it.
    writable: Option<Arc<dyn Store>>,
    /// The table as the last `INSERT INTO` left it (`None`: as opened);
    /// shared by clones, so the session's table sees it.
    newer: Arc<RwLock<Option<Arc<ZarrTable>>>>,
    /// Plan scans in the form a distributed engine hands out in slices (a file
    /// group per row range): the table was decoded from a plan, so a
    /// scheduler plans it ([`distributed`](super::distributed)).
    sliceable: bool,
}

impl ZarrTable {
    /// Open the Zarr group or array at `location` through `stores` (a URL
    /// through the store an engine registered for it, else one opened from
    /// the environment as `stores` says).
    ///
    /// # Errors
    /// As [`Stores::open`] and [`ZarrTable::from_store`].
    pub fn open(location: &Location, options: ZarrTableOptions, stores: &Stores) -> Result<Self> {
        let plain = stores.open(location)?;
        let store = Consolidated::open(plain.clone())?;
        Ok(Self::from_store(store, location, options)?
            .with_url_options(stores.url_options().clone())
            .with_store_for_writes(plain))
    }

    /// The table at `location` (opened through `stores`) as it was when
    /// `metadata` was read: no metadata request is made (how a distributed
    /// plan opens it on another machine).
    ///
    /// # Errors
    /// As [`ZarrTable::from_store`].
    pub(crate) fn from_snapshot(
        location: &Location,
        options: ZarrTableOptions,
        stores: &Stores,
        metadata: MetadataSnapshot,
    ) -> Result<Self> {
        let plain = stores.open(location)?;
        let store = Arc::new(Consolidated::from_snapshot(plain.clone(), metadata));
        Ok(Self::from_store(store, location, options)?
            .with_url_options(stores.url_options().clone())
            .with_store_for_writes(plain))
    }

    /// Plan scans as file groups, one per row range, which a distributed
    /// engine slices for its tasks (see [`distributed`](super::distributed)).
    pub(crate) fn sliceable(mut self) -> Self {
        self.sliceable = true;
        self
    }

    /// Write `INSERT INTO` through `store`: the table's store as it is, before
    /// any consolidated metadata is read (the table opened by location knows
    /// it; one opened over a store by [`ZarrTable::from_store`] needs it).
    pub(crate) fn with_store_for_writes(mut self, store: Arc<dyn Store>) -> Self {
        self.writable = Some(store);
        self
    }

    /// Record how the location's URL is opened, for another machine that opens
    /// the table again (the default: [`UrlOptions::default`]).
    pub(crate) fn with_url_options(mut self, url: UrlOptions) -> Self {
        self.url = url;
        self
    }

    /// The table over the root of `store`, which `location` names (in messages,
    /// in a root array's column name, and for another machine to open it again).
    /// For a store the caller opened, `location` is [`Location::supplied`].
    ///
    /// # Errors
    /// A store that holds neither a group with 1-D arrays nor an array; a column
    /// in the options that is not one.
    pub fn from_store(
        store: Arc<dyn Store>,
        location: &Location,
        options: ZarrTableOptions,
    ) -> Result<Self> {
        let read_options = options.read;
        let name = location.name();
        let metadata = Arc::new(Consolidated::remembering(store));
        let store: Arc<dyn Store> = metadata.clone();
        let source = match read_node(store.as_ref(), "")? {
            NodeMetadata::Array(meta) if meta.shape.len() == 1 => {
                let array = ZarrArray::open_with(store, "", read_options)?.with_column_name(name);
                Source::Rows(array.reader())
            }
            NodeMetadata::Array(_) => {
                if options.columns.is_some() {
                    return Err(Error::OptionNotApplicable {
                        options: vec!["the columns option"],
                        applies_to: "groups only",
                    });
                }
                Source::Flat(ZarrArray::open_with(store, "", read_options)?.with_column_name(name))
            }
            NodeMetadata::Group(_) => {
                let builder = ZarrGroup::open_with(store, "", read_options)?
                    .with_column_name(&name)?
                    .reader();
                Source::Rows(match &options.columns {
                    Some(columns) => builder.with_projection(columns.clone()),
                    None => builder,
                })
            }
        };
        let (fields, rows, skipped) = match &source {
            Source::Rows(builder) => {
                let columns = builder.columns()?;
                let fields: Vec<_> = columns.iter().map(|c| c.field().clone()).collect();
                (fields, columns[0].len(), builder.skipped())
            }
            Source::Flat(array) => {
                let fields = array.batches().schema().fields().iter().cloned().collect();
                (fields, array.len(), Vec::new())
            }
        };
        let schema = Arc::new(Schema::new(fields));
        let mut sorted = Vec::new();
        for name in &options.sorted {
            let Ok(i) = schema.index_of(name) else {
                return Err(Error::Option(ParseOptionError::new(
                    "sorted",
                    name,
                    "columns of the table",
                )));
            };
            sorted.push(i);
        }
        for (i, field) in schema.fields().iter().enumerate() {
            let coordinate = field
                .metadata()
                .get(DIMENSION_NAMES_KEY)
                .and_then(|d| serde_json::from_str::<Vec<Option<String>>>(d).ok())
                .is_some_and(|d| d == [Some(field.name().clone())]);
            if coordinate && !sorted.contains(&i) {
                sorted.push(i);
            }
        }
        Ok(Self {
            location: location.clone(),
            options,
            url: UrlOptions::default(),
            metadata,
            source,
            schema,
            rows,
            sorted,
            skipped,
            writable: None,
            newer: Arc::default(),
            sliceable: false,
        })
    }

    /// The table as the last `INSERT INTO` through it left it, if one did.
    pub(crate) fn newest(&self) -> Option<Arc<ZarrTable>> {
        let newer = self
            .newer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        Some(newer.newest().unwrap_or(newer))
    }

    /// Read the table's metadata again, so that the scans that follow (and the
    /// plans that carry it) see the rows written since it opened. An `INSERT`
    /// through this table in this process does it; call it after one that ran
    /// elsewhere (a distributed engine's executor). A table opened over a store
    /// it cannot write through keeps what it read.
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn reopen(&self) -> Result<()> {
        let Some(plain) = &self.writable else {
            return Ok(());
        };
        let store = Consolidated::open(plain.clone())?;
        let mut fresh = Self::from_store(store, &self.location, self.options.clone())?
            .with_url_options(self.url.clone())
            .with_store_for_writes(plain.clone());
        fresh.sliceable = self.sliceable;
        *self.newer.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(fresh));
        Ok(())
    }

    /// Where the table reads from.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The options it was opened with.
    pub(crate) fn options(&self) -> &ZarrTableOptions {
        &self.options
    }

    /// How its URL is opened.
    pub fn url_options(&self) -> &UrlOptions {
        &self.url
    }

    /// The metadata documents and listings opening the table read.
    pub(crate) fn metadata_snapshot(&self) -> MetadataSnapshot {
        self.metadata.snapshot()
    }

    /// Rows in the table (after the last `INSERT INTO` through it).
    pub fn num_rows(&self) -> u64 {
        self.newest().map_or(self.rows, |t| t.rows)
    }

    /// The group's children that are not columns of the table, each with the
    /// reason (nothing is dropped in silence).
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The columns a filter may narrow the rows by.
    pub fn sorted_columns(&self) -> Vec<&str> {
        self.sorted
            .iter()
            .map(|&i| self.schema.field(i).name().as_str())
            .collect()
    }

    pub(crate) fn arrow_schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// `rows` split into at most `n` ranges that start on chunk (slab) boundaries.
    pub(crate) fn splits(&self, rows: Range<u64>, n: usize) -> Result<Vec<Range<u64>>> {
        match &self.source {
            Source::Rows(builder) => builder.clone().with_row_range(rows).splits(n),
            Source::Flat(array) => Ok(aligned_splits(rows, array.row_chunk_len(), n)),
        }
    }
}

#[async_trait]
impl datafusion::catalog::TableProvider for ZarrTable {
    fn schema(&self) -> SchemaRef {
        match self.newest() {
            Some(newest) => newest.schema.clone(),
            None => self.schema.clone(),
        }
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if let Some(newest) = self.newest() {
            return newest.scan(state, projection, filters, limit).await;
        }
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let rows = 0..self.rows;
        // The filters the scan evaluates itself (on their columns first, the
        // others read only where rows match): DataFusion applies them no more.
        let exact: Vec<Expr> = filters
            .iter()
            .filter(|f| filter::exact(self, f))
            .cloned()
            .collect();
        let filter = ScanFilter::new(&self.schema, exact, state.execution_props())?.map(Arc::new);
        // The chunks whose statistics say a filter may match (one GET and one
        // listing per filtered column with statistics).
        let named = prune::named_columns(filters);
        let statistics = {
            let table = self.clone();
            tokio::task::spawn_blocking(move || prune::statistics(&table, &named))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))??
        };
        let pruned = prune::by_statistics(self, state, filters, rows.clone(), statistics)?;
        let kept_rows = pruned.as_ref().map_or(self.rows, |kept| {
            kept.iter().map(|r| r.end - r.start).sum::<u64>()
        });
        let groups: Vec<Vec<Range<u64>>> = match (limit, pruned) {
            // DataFusion passes a limit only when every filter is exact: with
            // none, the first `n` rows are the answer.
            (Some(n), _) if filter.is_none() => {
                let end = rows.end.min(rows.start.saturating_add(n as u64));
                vec![vec![rows.start..end]]
            }
            // With one, the first `n` matches: the ranges in order, read
            // until they are found.
            (Some(_), kept) => vec![kept.unwrap_or_else(|| vec![rows.clone()])],
            // From the metadata alone: no I/O.
            (None, None) => self
                .splits(rows.clone(), state.config().target_partitions())
                .map_err(df_err)?
                .into_iter()
                .map(|r| vec![r])
                .collect(),
            // The ranges whose chunks may match, each cut at chunk boundaries
            // as an unfiltered scan is, spread over the partitions.
            (None, Some(kept)) => {
                let target = state.config().target_partitions();
                let mut cut = Vec::with_capacity(kept.len());
                for range in kept {
                    cut.extend(self.splits(range, target).map_err(df_err)?);
                }
                prune::partitions(cut, target)
            }
        };
        if columns.iter().any(|&i| i >= self.schema.fields().len()) {
            return plan_err!("projection {columns:?} is outside the table's columns");
        }
        let groups = if groups.is_empty() {
            vec![vec![0..0]]
        } else {
            groups
        };
        let fetch = limit.filter(|_| filter.is_some());
        let scan = ZarrScanExec::grouped(Arc::new(self.clone()), columns, groups)?
            .with_filter(filter, fetch)
            .with_pruned(self.rows - kept_rows);
        if self.sliceable {
            return super::distributed::as_file_scan(&scan);
        }
        Ok(Arc::new(scan))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        if let Some(newest) = self.newest() {
            return newest.supports_filters_pushdown(filters);
        }
        Ok(filters
            .iter()
            .map(|f| {
                if filter::exact(self, f) {
                    // Evaluated by the scan, on its columns first.
                    TableProviderFilterPushDown::Exact
                } else if !f.is_volatile() {
                    // Applied by DataFusion again; chunk statistics may still
                    // skip rows by it.
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        if let Some(newest) = self.newest() {
            return newest.statistics();
        }
        Some(
            Statistics::new_unknown(&self.schema)
                .with_num_rows(Precision::Exact(usize::try_from(self.rows).ok()?)),
        )
    }

    /// `INSERT INTO t ...` appends the rows (as `zarrow convert --append`
    /// does); `INSERT OVERWRITE` replaces a local table whole, in one step.
    /// Either commits once, when every row is written: a statement that fails
    /// leaves the table as it was.
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if let Some(newest) = self.newest() {
            return newest.insert_into(state, input, insert_op).await;
        }
        let mode = match insert_op {
            InsertOp::Append => Mode::Append,
            InsertOp::Overwrite => Mode::Overwrite,
            InsertOp::Replace => {
                return not_impl_err!(
                    "a Zarr table has no key to replace rows by: INSERT INTO appends, INSERT OVERWRITE replaces the table"
                );
            }
        };
        let local = self.location.is_local();
        let target = match (&self.writable, local, mode) {
            (_, true, Mode::Overwrite) => {
                let stores = Stores::new(self.url.clone());
                let (_, node) = open_for_append(&self.location, &stores).map_err(df_err)?;
                if !node.is_empty() {
                    return not_impl_err!(
                        "{} is a group inside a Zarr hierarchy: INSERT OVERWRITE replaces a whole store only",
                        self.location
                    );
                }
                self.location.clone()
            }
            (_, true, _) => self.location.clone(),
            (None, false, _) => {
                return not_impl_err!(
                    "{} was opened over a store zarrow cannot write through (ZarrTable::with_store_for_writes)",
                    self.location
                );
            }
            (Some(_), false, Mode::Overwrite) => {
                return not_impl_err!(
                    "INSERT OVERWRITE replaces a local table in one step; an object store has no rename to do that with: COPY to a new location instead"
                );
            }
            // A URL (through the session's store for it), or the store the
            // caller supplied, its keys as they are.
            (Some(_), false, _) => self.location.clone(),
        };
        let target = Target {
            location: target,
            url: self.url.clone(),
        };
        let mut options = WriteOptions::default();
        if mode == Mode::Overwrite {
            // The table keeps its format and layout.
            let plain = self.writable.clone().ok_or_else(|| {
                DataFusionError::Plan(format!("{}: no store to write through", self.location))
            })?;
            let root = Node::read(plain.as_ref(), "").map_err(df_err)?;
            let format = match root.metadata() {
                NodeMetadata::Group(g) => g.zarr_format,
                NodeMetadata::Array(a) => a.zarr_format,
            };
            options.zarr_format = format;
            if let (NodeMetadata::Group(_), Some(anndata::Encoding::DataFrame { .. })) =
                (root.metadata(), root.conventions().anndata())
            {
                options.layout = Layout::AnnData;
            }
        }
        let sink = ZarrSink {
            schema: self.schema.clone(),
            target,
            mode,
            options,
            written: Some(Arc::new(self.clone())),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
