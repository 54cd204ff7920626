//! Writing Zarr from DataFusion: `COPY (query) TO 'x.zarr' STORED AS ZARR
//! [OPTIONS (...)]` ([`ZarrFormatFactory`]) and `INSERT INTO` a Zarr table
//! ([`ZarrTable`](super::ZarrTable)'s `insert_into`).
//!
//! ```text
//! input partitions ─▶ (DataFusion coalesces them) ─▶ ZarrSink::write_all
//!   batches ─▶ channel ─▶ blocking writer (GroupWriter: chunks encoded on rayon)
//!   ─▶ one commit at the end: a local directory moved into place, or each
//!      node's metadata after its chunks, or an append's metadata last
//! ```
//!
//! A statement that fails (a bad row, an error upstream, a dropped stream)
//! commits nothing: the table is as it was. Where it writes: a local path
//! directly (atomic, as `zarrow convert` writes), a URL through the session's
//! object store for it (`RuntimeEnv::object_store`), else through one opened
//! from the environment (as the command line opens a URL).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::config::ConfigOptions;
use datafusion::common::file_options::file_type::FileType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{GetExt, Statistics, not_impl_err, plan_err};
use datafusion::datasource::file_format::DefaultFileType;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::physical_plan::{
    FileOpener, FileScanConfig, FileSinkConfig, FileSource,
};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::dml::CopyTo;
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use futures::StreamExt;
use object_store::{ObjectMeta, ObjectStore};
use serde::{Deserialize, Serialize};

use super::df_err;
use crate::error::{Error, Result};
use crate::location::Location;
use crate::location::UrlOptions;
use crate::options::{Carried, Options as _};
use crate::write::{WriteOptions, write_batches};
use crate::{Store, Stores};

/// `STORED AS ZARR` for `COPY ... TO`: registered by
/// [`register`](super::register) under the extension `zarr` (so a target named
/// `x.zarr` needs no `STORED AS`). Its `OPTIONS` are `zarrow convert`'s write
/// options by the same names (see [`WriteOptions::set`]), with `overwrite` and
/// `append`.
///
/// A factory may carry options of its own, set before the statement's: a
/// `COPY`'s `OPTIONS` ride in the factory to a distributed engine's scheduler
/// (datafusion-proto sends the format, not the statement's options), which
/// [`register`](super::register)'s analyzer rule arranges. A distributed
/// client must therefore be set up with `register`, not by registering this
/// factory alone: without the rule the scheduler never sees the options.
#[derive(Debug, Default)]
pub(crate) struct ZarrFormatFactory {
    options: Vec<(String, String)>,
}

impl ZarrFormatFactory {
    /// The factory.
    pub(crate) fn new() -> Self {
        Self {
            options: Vec::new(),
        }
    }

    /// The factory with `options` (`COPY ... OPTIONS` keys and values), set
    /// before the statement's own.
    pub(crate) fn with_options(options: Vec<(String, String)>) -> Self {
        Self { options }
    }

    /// The options it carries.
    pub(crate) fn options(&self) -> &[(String, String)] {
        &self.options
    }
}

impl GetExt for ZarrFormatFactory {
    fn get_ext(&self) -> String {
        "zarr".into()
    }
}

impl FileFormatFactory for ZarrFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> DfResult<Arc<dyn FileFormat>> {
        let mut options = WriteOptions::default();
        let mut keys: Vec<&String> = format_options.keys().collect();
        keys.sort();
        let carried = self.options.iter().map(|(k, v)| (k, v));
        let given = keys.into_iter().map(|k| (k, &format_options[k]));
        for (key, value) in carried.chain(given) {
            let name = key.strip_prefix("format.").unwrap_or(key);
            options.set(name, value).map_err(df_err)?;
        }
        Ok(Arc::new(ZarrFormat { options }))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(ZarrFormat {
            options: WriteOptions::default(),
        })
    }
}

/// A `COPY` as another machine (a distributed engine's scheduler, in another
/// working directory) must plan it: the `OPTIONS` of a `COPY ... STORED AS ZARR`
/// moved into the format it names ([`ZarrFormatFactory::with_options`]), since
/// datafusion-proto sends a `COPY`'s format, not its options; and a relative
/// target path made absolute. Added by [`register`](super::register); locally
/// a statement means the same with it or without.
#[derive(Debug, Default)]
pub(crate) struct PortableCopy {}

impl PortableCopy {
    pub(crate) const NAME: &str = "zarrow_portable_copy";
}

impl AnalyzerRule for PortableCopy {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up(|node| {
            let LogicalPlan::Copy(copy) = &node else {
                return Ok(Transformed::no(node));
            };
            let zarr = copy
                .file_type
                .as_any()
                .downcast_ref::<DefaultFileType>()
                .and_then(|t| t.as_format_factory().downcast_ref::<ZarrFormatFactory>());
            let output_url = match Location::parse(&copy.output_url) {
                Ok(location) => location
                    .portable()
                    .unwrap_or_else(|| copy.output_url.clone()),
                // A Zarr output zarrow cannot parse is the statement's error;
                // another format's URL is DataFusion's to read.
                Err(e) if zarr.is_some() => return Err(df_err(e)),
                Err(_) => copy.output_url.clone(),
            };
            let (file_type, options) = match zarr {
                Some(format) if !copy.options.is_empty() => {
                    let mut given: Vec<(String, String)> = copy
                        .options
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    given.sort();
                    let mut options = format.options().to_vec();
                    options.extend(given);
                    let format: Arc<dyn FileType> = Arc::new(DefaultFileType::new(Arc::new(
                        ZarrFormatFactory::with_options(options),
                    )));
                    (format, HashMap::new())
                }
                _ if output_url == copy.output_url => return Ok(Transformed::no(node)),
                _ => (copy.file_type.clone(), copy.options.clone()),
            };
            Ok(Transformed::yes(LogicalPlan::Copy(CopyTo::new(
                copy.input.clone(),
                output_url,
                copy.partition_by.clone(),
                file_type,
                options,
            ))))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        Self::NAME
    }
}

/// The Zarr "file" format: it writes groups; zarrow reads Zarr through its
/// table ([`ZarrTable`](super::ZarrTable)), not as files.
#[derive(Debug)]
struct ZarrFormat {
    options: WriteOptions,
}

const READ_THROUGH_TABLE: &str = "Zarr is read through a Zarr table (CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '...'), not as files";

#[async_trait]
impl FileFormat for ZarrFormat {
    fn get_ext(&self) -> String {
        "zarr".into()
    }

    fn get_ext_with_compression(&self, _compression: &FileCompressionType) -> DfResult<String> {
        Ok(self.get_ext())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _objects: &[ObjectMeta],
    ) -> DfResult<SchemaRef> {
        not_impl_err!("{READ_THROUGH_TABLE}")
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        _store: &Arc<dyn ObjectStore>,
        _table_schema: SchemaRef,
        _object: &ObjectMeta,
    ) -> DfResult<Statistics> {
        not_impl_err!("{READ_THROUGH_TABLE}")
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        _conf: FileScanConfig,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        not_impl_err!("{READ_THROUGH_TABLE}")
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if !conf.table_partition_cols.is_empty() {
            return plan_err!(
                "a Zarr group is one table: COPY ... STORED AS ZARR takes no PARTITIONED BY"
            );
        }
        let Some(table) = conf.table_paths.first() else {
            return plan_err!("COPY ... STORED AS ZARR needs a target");
        };
        // The location as written (DataFusion's URL drops what it does not
        // know: an Icechunk location's query); a local path as DataFusion
        // resolved it (a `file://` URL, absolute).
        let location = match Location::parse(&conf.original_url).map_err(df_err)? {
            Location::Path(_) => Location::parse(table.as_str()).map_err(df_err)?,
            other => other,
        };
        let target = Target {
            location,
            url: UrlOptions::default(),
            supplied: None,
        };
        let mode = if self.options.appends() {
            Mode::Append
        } else if self.options.overwrites() {
            Mode::Overwrite
        } else {
            Mode::Create
        };
        let sink = ZarrSink {
            schema: conf.output_schema().clone(),
            target,
            mode,
            options: self.options.clone(),
            written: None,
        };
        Ok(Arc::new(DataSinkExec::new(
            input,
            Arc::new(sink),
            order_requirements,
        )))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(WriteOnly {
            table_schema,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

/// The file source of a format that is not read as files.
struct WriteOnly {
    table_schema: TableSchema,
    metrics: ExecutionPlanMetricsSet,
}

impl FileSource for WriteOnly {
    fn create_file_opener(
        &self,
        _store: Arc<dyn ObjectStore>,
        _config: &FileScanConfig,
        _partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        not_impl_err!("{READ_THROUGH_TABLE}")
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, _batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(Self {
            table_schema: self.table_schema.clone(),
            metrics: self.metrics.clone(),
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "zarr"
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> DfResult<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> DfResult<datafusion::common::tree_node::TreeNodeRecursion> {
        // No expression: nothing is read.
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }
}

/// Where a sink writes: a local directory, a URL (through the session's
/// object store for it, else one opened from the environment with `url`), or
/// the store a table was opened over (its keys, no consolidated metadata).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) location: Location,
    pub(crate) url: UrlOptions,
    /// The store a [`Location::Store`] names (the one the table was opened
    /// over), given to the stores the sink writes through.
    pub(crate) supplied: Option<Arc<dyn Store>>,
}

impl Target {
    /// The stores to write through: the session's (`runtime`: its registered
    /// object stores, its runtime), given the supplied store if there is one.
    fn stores(&self, runtime: Arc<datafusion::execution::runtime_env::RuntimeEnv>) -> Stores {
        let stores = super::session_registry(runtime, self.url.clone());
        match (&self.location, &self.supplied) {
            (Location::Store { id, .. }, Some(store)) => stores.with_store(*id, store.clone()),
            _ => stores,
        }
    }
}

/// What a sink does to an existing table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Mode {
    /// Refuse it.
    Create,
    /// Replace it whole.
    Overwrite,
    /// Add the rows to it.
    Append,
}

/// Writes a statement's batches as a Zarr group, committed once at the end.
#[derive(Debug)]
pub(crate) struct ZarrSink {
    pub(crate) schema: SchemaRef,
    pub(crate) target: Target,
    pub(crate) mode: Mode,
    pub(crate) options: WriteOptions,
    /// The table written to (`INSERT INTO`), opened again after the commit.
    pub(crate) written: Option<super::snapshot::Current>,
}

impl DisplayAs for ZarrSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ZarrSink: {:?} to {}", self.mode, self.target.location)
    }
}

#[async_trait]
impl DataSink for ZarrSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        // Its blocking calls wait on the session's runtime (no runtime of the
        // sink's own); a URL goes through the session's store for it.
        let stores = self.target.stores(context.runtime_env());
        let target = self.target.location.clone();
        let (sender, receiver) = tokio::sync::mpsc::channel(2);
        let reader = Received {
            schema: data.schema(),
            receiver,
        };
        let (mode, options, table) = (self.mode, self.options.clone(), self.written.clone());
        let writer = tokio::task::spawn_blocking(move || {
            let rows = write(&target, &stores, mode, options, reader)?;
            if let Some(table) = table {
                table.reopen()?;
            }
            Ok(rows)
        });
        while let Some(batch) = data.next().await {
            // A writer that stopped has failed: it says why below.
            if sender.send(batch).await.is_err() {
                break;
            }
        }
        drop(sender);
        writer
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .map_err(df_err)
    }
}

/// A [`ZarrSink`] as a plan carries it to another machine: where it writes
/// (a local path, or a URL opened there from the environment), how, and the
/// write options as [`WriteOptions::pairs`].
#[derive(Serialize, Deserialize)]
pub(crate) struct SinkSpec {
    target: TargetSpec,
    mode: Mode,
    /// The [`WriteOptions`].
    options: Carried,
}

#[derive(Serialize, Deserialize)]
struct TargetSpec {
    /// The location as any machine names it ([`Location::portable`]).
    location: String,
    url: Carried,
}

impl ZarrSink {
    /// What another machine needs to write as this sink does.
    pub(crate) fn spec(&self) -> DfResult<SinkSpec> {
        let Some(location) = self.target.location.portable() else {
            return not_impl_err!(
                "{}: a store opened in this process (an obstore store) cannot be written from another machine",
                self.target.location
            );
        };
        let target = TargetSpec {
            location,
            url: Carried::of(&self.target.url),
        };
        Ok(SinkSpec {
            target,
            mode: self.mode,
            options: Carried::of(&self.options),
        })
    }
}

impl SinkSpec {
    /// The sink, writing rows of `schema`; its store is opened when it
    /// writes, from this machine's environment (or session).
    pub(crate) fn sink(self, schema: SchemaRef) -> DfResult<ZarrSink> {
        let options = self.options.options().map_err(df_err)?;
        let target = Target {
            location: Location::parse(&self.target.location).map_err(df_err)?,
            url: self.target.url.options().map_err(df_err)?,
            supplied: None,
        };
        Ok(ZarrSink {
            schema,
            target,
            mode: self.mode,
            options,
            written: None,
        })
    }
}

/// The batches a statement sends, as a blocking reader for the writer.
struct Received {
    schema: SchemaRef,
    receiver: tokio::sync::mpsc::Receiver<DfResult<RecordBatch>>,
}

impl Iterator for Received {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.receiver.blocking_recv()?;
        Some(batch.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Received {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// A COPY's target that exists.
fn exists(target: &str) -> Error {
    Error::AlreadyExists {
        path: target.to_string(),
        overwrite: crate::error::Overwrite::Sql,
    }
}

/// Write `reader` to `target`: the rows written.
fn write(
    target: &Location,
    stores: &Stores,
    mode: Mode,
    options: WriteOptions,
    reader: Received,
) -> Result<u64> {
    if mode == Mode::Create && target.as_path().is_some_and(Path::exists) {
        return Err(exists(&target.to_string()));
    }
    let append = mode == Mode::Append;
    let options = WriteOptions {
        append,
        overwrite: false,
        ..options
    };
    let how = options.clone();
    let write = |store, node: &str| write_batches(reader, store, node, options);
    stores
        .write_zarr(target, mode == Mode::Overwrite, &how, write)
        .map_err(|e| match e {
            Error::AlreadyExists { .. } => exists(&target.to_string()),
            e => e,
        })
}
