//! A table's state: what one opening of its store saw. A
//! [`ZarrTable`](super::ZarrTable) holds its current one and swaps it whole
//! when an `INSERT INTO` commits ([`Current`]); a scan keeps the one it was
//! planned on.

use std::ops::Range;
use std::sync::{Arc, PoisonError, RwLock};

use arrow_schema::{Schema, SchemaRef};

use super::fresh::Versions;
use crate::Stores;
use crate::conventions::cf::DIMENSION_NAMES_KEY;
use crate::error::{Error, ParseOptionError, Result};
use crate::location::Location;
use crate::location::UrlOptions;
use crate::options::Options as _;
use crate::read::{LongGrid, ReaderBuilder, Skipped, TableSource, aligned_splits};
use crate::store::{Consolidated, MetadataSnapshot};
use crate::{ReadOptions, Store};

crate::options::options! {
    /// How a Zarr store is read as a table: what `CREATE EXTERNAL TABLE ... OPTIONS`
    /// sets, and what the codecs carry to another machine.
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct ZarrTableOptions("ZARR table") {
        /// The group's columns to expose, in this order, comma-separated
        /// (default: every 1-D array).
        pub columns: Option<Vec<String>> as crate::options::List = None,
        /// Columns whose values never decrease with the row (nulls last),
        /// comma-separated: the scan declares each partition sorted by them,
        /// so `ORDER BY` one merges the partitions rather than sorting.
        /// Declare only what holds: a wrong declaration gives a wrong order.
        pub sorted: Vec<String> as crate::options::List = Vec::new(),
        /// Read a group of N-d variables sharing named dimensions (xarray's
        /// dataset) as a long table, one row per grid point, its
        /// coordinates first, as `Dataset.to_dataframe()` gives it (`columns`:
        /// the data variables). The variables are read whole when the table
        /// opens (each within `max_read_bytes`) and kept while it is open; a
        /// scan gathers its rows from them.
        pub long: bool = false,
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

/// What one opening of a Zarr group or array saw: its metadata, columns and
/// rows.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    location: Location,
    options: ZarrTableOptions,
    /// The stores the location was opened through: the table opens it again
    /// through them (an `INSERT` reopening an Icechunk branch), and another
    /// machine with their URL options.
    stores: Stores,
    /// The store's metadata as read when the table opened (sent with a plan, so
    /// that another machine opens the table without reading it again).
    metadata: Arc<Consolidated>,
    pub(crate) source: TableSource,
    /// The same rows with anndata categoricals as their codes and categories
    /// (dictionaries), where the table gives their values: what a filter on
    /// one is evaluated over (a comparison per category, not per row).
    pub(crate) codes: Option<ReaderBuilder>,
    /// A long table's variables, read whole when it opened.
    pub(crate) long: Option<Arc<LongGrid>>,
    schema: SchemaRef,
    rows: u64,
    /// Indices of the columns whose values never decrease (declared or
    /// dimension coordinates).
    sorted: Vec<usize>,
    skipped: Vec<Skipped>,
    /// The store `INSERT INTO` writes through (its keys, before any
    /// consolidated metadata is read), when the table knows it.
    writable: Option<Arc<dyn Store>>,
    /// The versions of the metadata this snapshot was read from, taken before
    /// it was read (a table opened tracked, over a store that tells them).
    tracked: Option<Arc<Versions>>,
    /// Whether its metadata came from the root's consolidated metadata (then
    /// only the root's documents tell whether it changed: a node's own
    /// document changed without them is not what opening it reads either).
    consolidated: bool,
}

/// A table's current snapshot, shared by its clones (the session's table
/// sees what an `INSERT` through another clone committed).
#[derive(Debug, Clone)]
pub(crate) struct Current(Arc<RwLock<Arc<Snapshot>>>);

impl Current {
    pub(crate) fn new(snapshot: Snapshot) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(snapshot))))
    }

    /// The snapshot now.
    pub(crate) fn get(&self) -> Arc<Snapshot> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Read the table's metadata again, so that the scans that follow (and
    /// the plans that carry it) see the rows written since. A table opened
    /// over a store it cannot write through keeps what it read.
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn reopen(&self) -> Result<()> {
        let now = self.get();
        let Some(plain) = &now.writable else {
            return Ok(());
        };
        if let Location::Icechunk(_) = &now.location {
            // A session reads one snapshot: the branch's tip is opened again.
            let fresh = Snapshot::open(&now.location, now.options.clone(), &now.stores)?;
            *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
            return Ok(());
        }
        let store = Consolidated::open(plain.clone())?;
        let fresh = Snapshot::from_store(store, &now.location, now.options.clone())?
            .with_stores(now.stores.clone())
            .with_store_for_writes(plain.clone());
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        Ok(())
    }
}

impl Snapshot {
    /// Open the Zarr group or array at `location` through `stores` (a URL
    /// through the store an engine registered for it, else one opened from
    /// the environment as `stores` says).
    ///
    /// # Errors
    /// As [`Stores::open`] and [`ZarrTable::from_store`].
    pub(crate) fn open(
        location: &Location,
        options: ZarrTableOptions,
        stores: &Stores,
    ) -> Result<Self> {
        let plain = stores.open(location)?;
        let store = Consolidated::opened(plain.clone())?;
        let consolidated = store.is_consolidated();
        let mut opened = Self::from_store(Arc::new(store), location, options)?
            .with_stores(stores.clone())
            .with_store_for_writes(plain);
        opened.consolidated = consolidated;
        Ok(opened)
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
            .with_stores(stores.clone())
            .with_store_for_writes(plain))
    }

    /// The table as its store holds it now, tracked: `None` where it is
    /// tracked and no version of what it was read from has changed; else
    /// opened again, the versions of the metadata `self` was read from taken
    /// first (those of documents only the new opening reads are unknown, and
    /// the next check finds them changed: it opens once more).
    ///
    /// # Errors
    /// The store's; as [`Snapshot::open`].
    pub(crate) fn refreshed(&self) -> Result<Option<Self>> {
        let now = self.versions_now()?;
        if now.is_some() && now.as_ref() == self.tracked.as_deref() {
            return Ok(None);
        }
        self.opened_after(now).map(Some)
    }

    /// The table opened again, tracked, where the store can tell versions; `None`
    /// where it cannot (then there is nothing to track, and `self` is as
    /// current as another opening would be).
    ///
    /// # Errors
    /// As [`Snapshot::open`].
    pub(crate) fn tracked_again(&self) -> Result<Option<Self>> {
        match self.versions_now()? {
            Some(versions) => self.opened_after(Some(versions)).map(Some),
            None => Ok(None),
        }
    }

    fn opened_after(&self, versions: Option<Versions>) -> Result<Self> {
        let mut next = Self::open(&self.location, self.options.clone(), &self.stores)?;
        next.tracked = versions.map(Arc::new);
        Ok(next)
    }

    /// The versions now of the metadata this snapshot was read from.
    fn versions_now(&self) -> Result<Option<Versions>> {
        match &self.writable {
            Some(plain) => {
                Versions::now(plain.as_ref(), &self.metadata_snapshot(), self.consolidated)
            }
            None => Ok(None),
        }
    }

    /// Write `INSERT INTO` through `store`: the table's store as it is, before
    /// any consolidated metadata is read (the table opened by location knows
    /// it; one opened over a store by [`ZarrTable::from_store`] needs it).
    pub(crate) fn with_store_for_writes(mut self, store: Arc<dyn Store>) -> Self {
        self.writable = Some(store);
        self
    }

    /// Open the location again through `stores` (the default: a registry
    /// with [`UrlOptions::default`]), and tell another machine their URL
    /// options.
    pub(crate) fn with_stores(mut self, stores: Stores) -> Self {
        self.stores = stores;
        self
    }

    /// The table over the root of `store`, which `location` names (in messages,
    /// in a root array's column name, and for another machine to open it again).
    /// For a store the caller opened, `location` is [`Location::supplied`].
    ///
    /// # Errors
    /// A store that holds neither a group with 1-D arrays nor an array; a column
    /// in the options that is not one.
    pub(crate) fn from_store(
        store: Arc<dyn Store>,
        location: &Location,
        options: ZarrTableOptions,
    ) -> Result<Self> {
        let read_options = options.read;
        let name = location.name();
        let metadata = Arc::new(Consolidated::remembering(store));
        let store: Arc<dyn Store> = metadata.clone();
        let columns = options.columns.as_deref();
        let source = TableSource::open(store.clone(), &name, read_options, columns, options.long)?;
        let mut codes = None;
        if let TableSource::Rows(builder) = &source
            && read_options.categorical_values
            && builder.columns()?.iter().any(|c| c.categories().is_some())
        {
            // The same rows with the categoricals as their codes.
            let as_codes = ReadOptions {
                categorical_values: false,
                ..read_options
            };
            if let TableSource::Rows(builder) =
                TableSource::open(store, &name, as_codes, columns, false)?
            {
                codes = Some(builder);
            }
        }
        // A long table's variables, read here once.
        let mut long = None;
        let (fields, rows, skipped) = match &source {
            TableSource::Rows(builder) => {
                let columns = builder.columns()?;
                let fields: Vec<_> = columns.iter().map(|c| c.field().clone()).collect();
                (fields, columns[0].len(), builder.skipped())
            }
            TableSource::Flat(array) => {
                let columns = array.reader().columns()?;
                let fields = columns.iter().map(|c| c.field().clone()).collect();
                (fields, array.len(), Vec::new())
            }
            TableSource::Long(group, variables) => {
                let grid = long.insert(Arc::new(LongGrid::new(group, variables.as_deref())?));
                let fields = grid.schema().fields().iter().cloned().collect();
                (fields, grid.total_rows(), grid.skipped().to_vec())
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
            codes,
            long,
            location: location.clone(),
            options,
            stores: Stores::default(),
            metadata,
            source,
            schema,
            rows,
            sorted,
            skipped,
            writable: None,
            tracked: None,
            consolidated: false,
        })
    }

    /// Where the table reads from.
    pub(crate) fn location(&self) -> &Location {
        &self.location
    }

    /// The same table, named `location` (what it was read at another machine
    /// pinned to a snapshot of it: an INSERT commits to the location's branch).
    pub(crate) fn named(mut self, location: Location) -> Self {
        self.location = location;
        self
    }

    /// The location as another machine opens it to read exactly what this
    /// table reads: an Icechunk branch or tag pinned to the snapshot the
    /// table's session reads; `None` for a store opened in this process.
    pub(crate) fn portable_location(&self) -> Option<String> {
        let pinned = self.writable.as_ref().and_then(|s| s.pinned_version());
        match (&self.location, pinned) {
            (Location::Icechunk(l), Some(id)) => {
                Some(l.at(crate::location::Version::Snapshot(id)).to_string())
            }
            (location, _) => location.portable(),
        }
    }

    /// The options it was opened with.
    pub(crate) fn options(&self) -> &ZarrTableOptions {
        &self.options
    }

    /// How its URL is opened.
    pub(crate) fn url_options(&self) -> &UrlOptions {
        self.stores.url_options()
    }

    /// The stores its location opens through.
    pub(crate) fn stores(&self) -> &Stores {
        &self.stores
    }

    /// The metadata documents and listings opening the table read.
    pub(crate) fn metadata_snapshot(&self) -> MetadataSnapshot {
        self.metadata.snapshot()
    }

    /// Rows in the table.
    pub(crate) fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The table's schema with anndata categoricals as dictionaries (their
    /// codes and categories), when it gives their values.
    pub(crate) fn codes_schema(&self) -> Option<Schema> {
        let columns = self.codes.as_ref()?.columns().ok()?;
        Some(Schema::new(
            columns
                .iter()
                .map(|c| c.field().clone())
                .collect::<Vec<_>>(),
        ))
    }

    /// The store `INSERT INTO` writes through, when known.
    pub(crate) fn writable(&self) -> Option<&Arc<dyn Store>> {
        self.writable.as_ref()
    }

    /// The group's children that are not columns of the table, each with the
    /// reason (nothing is dropped in silence).
    pub(crate) fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The columns a filter may narrow the rows by.
    pub(crate) fn sorted_columns(&self) -> Vec<&str> {
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
            TableSource::Rows(builder) => builder.clone().with_row_range(rows).splits(n),
            TableSource::Flat(array) => Ok(aligned_splits(rows, array.row_chunk_len(), n)),
            // Gathered from the variables in memory: any split.
            TableSource::Long(..) => Ok(aligned_splits(rows, 1, n)),
        }
    }
}
