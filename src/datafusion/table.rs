//! [`ZarrTable`]: a Zarr group (one column per 1-D array) or array as a
//! DataFusion `TableProvider`.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::SchemaRef;
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
use datafusion::physical_plan::filter::FilterExec;

use super::filter::{self, ScanFilter};
use super::prune::Pruning;
use super::sink::{Mode, Target, ZarrSink};
use super::snapshot::{Current, Snapshot};
use super::source::{Scan, scan_plan};
use super::{ZarrTableOptions, df_err};
use crate::Stores;
use crate::conventions::anndata;
use crate::error::Result;
use crate::location::Location;
use crate::read::{Node, Skipped, TableSource};
use crate::write::{Layout, WriteOptions};
use crate::{NodeMetadata, Store};

/// A Zarr group or array as a DataFusion table.
///
/// The schema and the exact row count come from metadata alone. A scan reads
/// only the projected arrays, and of them only the chunks its rows need; see
/// [the module](super). The table holds one snapshot of what its store held,
/// swapped whole when an `INSERT INTO` through it commits; clones share it.
#[derive(Debug, Clone)]
pub struct ZarrTable {
    current: Current,
}

impl ZarrTable {
    /// Open the Zarr group or array at `location` through `stores` (a URL
    /// through the store an engine registered for it, else one opened from
    /// the environment as `stores` says).
    ///
    /// # Errors
    /// As [`Stores::open`] and [`ZarrTable::from_store`].
    pub fn open(location: &Location, options: ZarrTableOptions, stores: &Stores) -> Result<Self> {
        Ok(Self::of(Snapshot::open(location, options, stores)?))
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
        Ok(Self::of(Snapshot::from_store(store, location, options)?))
    }

    /// [`open`](Self::open), so that [`refreshed`](Self::refreshed) can tell
    /// whether the store's metadata changed since without reading it: the
    /// version of each metadata document (and the children of each group
    /// listing) opening it reads is recorded before it is read. Opens twice:
    /// the first opening tells which documents there are (once, over a store
    /// that cannot tell versions: there every check opens it again).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_tracked(
        location: &Location,
        options: ZarrTableOptions,
        stores: &Stores,
    ) -> Result<Self> {
        let first = Snapshot::open(location, options, stores)?;
        Ok(Self::of(first.tracked_again()?.unwrap_or(first)))
    }

    /// The table as its store holds it now: `None` when no metadata document
    /// or group listing it was opened from has changed (a request each, for
    /// its version, and no document read: a file's status, an object
    /// listing), else the table opened again (tracked), with the rows and
    /// columns written since. A table not opened tracked, or over a store
    /// that cannot tell versions (plain HTTP, an Icechunk repository), is
    /// opened again every time. Chunks and chunk statistics are checked at
    /// each scan as always.
    ///
    /// # Errors
    /// The store's; as [`open`](Self::open) when the table opens again.
    pub fn refreshed(&self) -> Result<Option<Self>> {
        Ok(self.snapshot().refreshed()?.map(Self::of))
    }

    pub(crate) fn of(snapshot: Snapshot) -> Self {
        Self {
            current: Current::new(snapshot),
        }
    }

    /// The table's snapshot now.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.current.get()
    }

    /// Read the table's metadata again, so that the scans that follow (and the
    /// plans that carry it) see the rows written since it opened. An `INSERT`
    /// through this table in this process does it; call it after one that ran
    /// elsewhere (a distributed engine's executor).
    ///
    /// # Errors
    /// The store's.
    pub(crate) fn reopen(&self) -> Result<()> {
        self.current.reopen()
    }

    /// Where the table reads from.
    pub fn location(&self) -> Location {
        self.snapshot().location().clone()
    }

    /// The group's children that are not columns of the table, each with the
    /// reason (nothing is dropped in silence).
    pub fn skipped(&self) -> Vec<Skipped> {
        self.snapshot().skipped().to_vec()
    }

    /// The columns declared sorted (or xarray dimension coordinates).
    pub fn sorted_columns(&self) -> Vec<String> {
        self.snapshot()
            .sorted_columns()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// Each anndata categorical column's categories (by column name, in the
    /// table's order), read whole: what an engine that fixes a dictionary's
    /// values when a query binds needs (DuckDB's `ENUM`). Every read of the
    /// column reads them again, so a reader can check that they did not change.
    ///
    /// # Errors
    /// The store's, or categories larger than the read limit.
    pub fn categories(&self) -> Result<Vec<(String, ArrayRef)>> {
        let snapshot = self.snapshot();
        let TableSource::Rows(builder) = &snapshot.source else {
            return Ok(Vec::new());
        };
        let mut categories = Vec::new();
        for column in builder.columns()?.iter() {
            if let Some(array) = column.categories() {
                categories.push((column.field().name().clone(), array.read_all()?));
            }
        }
        Ok(categories)
    }
}

#[async_trait]
impl datafusion::catalog::TableProvider for ZarrTable {
    fn schema(&self) -> SchemaRef {
        self.snapshot().arrow_schema().clone()
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
        let snapshot = self.snapshot();
        let table = snapshot.as_ref();
        let schema = table.arrow_schema();
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        if columns.iter().any(|&i| i >= schema.fields().len()) {
            return plan_err!("projection {columns:?} is outside the table's columns");
        }
        // A filter that reads no column is a constant. DataFusion's simplifier
        // makes one of an exact filter after it was pushed here (`i != NULL`
        // becomes `NULL`), and then applies it nowhere: the scan honours it.
        let constants = Constants::of(filters);
        let rows = if constants.never {
            0..0
        } else {
            0..table.num_rows()
        };
        let limit = limit.filter(|_| constants.unknown.is_empty());
        // The filters the scan evaluates itself (on their columns first, the
        // others read only where rows match): DataFusion applies them no more.
        let exact: Vec<Expr> = filters
            .iter()
            .filter(|f| filter::exact(table, f))
            .cloned()
            .collect();
        let codes = table.codes_schema();
        let filter = ScanFilter::new(schema, exact, state.execution_props())?
            .map(|f| Arc::new(f.with_codes(codes.as_ref(), state.execution_props())));
        // Chunk statistics prune as each range opens (read once per scan,
        // where it runs): planning makes no request.
        let pruning = Pruning::new(filters).map(Arc::new);
        let groups: Vec<Vec<Range<u64>>> = match limit {
            // DataFusion passes a limit only when every filter is exact: with
            // none, the first `n` rows are the answer.
            Some(n) if filter.is_none() => {
                let end = rows.end.min(rows.start.saturating_add(n as u64));
                vec![vec![rows.start..end]]
            }
            // With one, the first `n` matches: the rows in order, read until
            // they are found.
            Some(_) => vec![vec![rows.clone()]],
            // From the metadata alone: no I/O.
            None => table
                .splits(rows.clone(), state.config().target_partitions())
                .map_err(df_err)?
                .into_iter()
                .map(|r| vec![r])
                .collect(),
        };
        let plan = scan_plan(Scan {
            snapshot,
            columns,
            groups,
            fetch: limit.filter(|_| filter.is_some()),
            filter,
            pruning,
            runtime: state.runtime_env().clone(),
            decode: super::session_decode(state.config()),
        })?;
        // One that does not fold to a value is applied over the scan.
        match datafusion::logical_expr::utils::conjunction(constants.unknown) {
            None => Ok(plan),
            Some(predicate) => {
                let input = datafusion::common::DFSchema::try_from(plan.schema().as_ref().clone())?;
                let predicate = state.create_physical_expr(predicate, &input)?;
                Ok(Arc::new(FilterExec::try_new(predicate, plan)?))
            }
        }
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        let snapshot = self.snapshot();
        Ok(filters
            .iter()
            .map(|f| {
                if filter::exact(&snapshot, f) {
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
        let snapshot = self.snapshot();
        Some(
            Statistics::new_unknown(snapshot.arrow_schema())
                .with_num_rows(Precision::Exact(usize::try_from(snapshot.num_rows()).ok()?)),
        )
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let snapshot = self.snapshot();
        if snapshot.long.is_some() {
            return not_impl_err!(
                "{} is read as a long table: it is written as its N-d variables, not by rows",
                snapshot.location()
            );
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
        let location = snapshot.location().clone();
        let url = snapshot.url_options().clone();
        let local = location.is_local();
        let target = match (snapshot.writable(), local, mode) {
            (_, true, Mode::Overwrite) => {
                let (_, node) = snapshot
                    .stores()
                    .open_for_append(&location)
                    .map_err(df_err)?;
                if !node.is_empty() {
                    return not_impl_err!(
                        "{} is a group inside a Zarr hierarchy: INSERT OVERWRITE replaces a whole store only",
                        location
                    );
                }
                location.clone()
            }
            (_, true, _) => location.clone(),
            (None, false, _) => {
                return not_impl_err!(
                    "{} was opened over a store zarrow cannot write through (ZarrTable::with_store_for_writes)",
                    location
                );
            }
            // An Icechunk branch: the table replaced in one commit.
            (Some(_), false, Mode::Overwrite) if matches!(location, Location::Icechunk(_)) => {
                location.clone()
            }
            (Some(_), false, Mode::Overwrite) => {
                return not_impl_err!(
                    "INSERT OVERWRITE replaces a local table in one step; an object store has no rename to do that with: COPY to a new location instead"
                );
            }
            // A URL (through the session's store for it), or the store the
            // caller supplied, its keys as they are.
            (Some(_), false, _) => location.clone(),
        };
        let supplied = match &target {
            Location::Store { .. } => snapshot.writable().cloned(),
            _ => None,
        };
        let target = Target {
            location: target,
            url: url.clone(),
            supplied,
        };
        let mut options = WriteOptions::default();
        if mode == Mode::Overwrite {
            // The table keeps its format and layout.
            let plain = snapshot.writable().cloned().ok_or_else(|| {
                DataFusionError::Plan(format!("{}: no store to write through", location))
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
            schema: snapshot.arrow_schema().clone(),
            target,
            mode,
            options,
            written: Some(self.current.clone()),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

/// The filters a scan is given that read no column: constants, folded.
#[derive(Default)]
struct Constants {
    /// One folds to `false` or `NULL`: no row matches.
    never: bool,
    /// Those that do not fold to a value (applied over the scan).
    unknown: Vec<Expr>,
}

impl Constants {
    fn of(filters: &[Expr]) -> Self {
        use datafusion::common::ScalarValue;
        use datafusion::logical_expr::simplify::SimplifyContext;
        use datafusion::optimizer::simplify_expressions::ExprSimplifier;

        let mut constants = Self::default();
        let mut folding = filters
            .iter()
            .filter(|f| f.column_refs().is_empty() && !f.is_volatile())
            .peekable();
        // Most scans have none: no simplifier is made for them.
        if folding.peek().is_none() {
            return constants;
        }
        let simplifier = ExprSimplifier::new(SimplifyContext::builder().build());
        for f in folding {
            match simplifier.simplify(f.clone()) {
                Ok(Expr::Literal(ScalarValue::Boolean(Some(true)), _)) => {}
                Ok(Expr::Literal(ScalarValue::Boolean(_) | ScalarValue::Null, _)) => {
                    constants.never = true;
                }
                _ => constants.unknown.push(f.clone()),
            }
        }
        constants
    }
}
