//! A SQL query over named tables, answered as a blocking `RecordBatchReader`:
//! what `zarrow sql` and the Python package's `zarrow.sql` run.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use datafusion::common::TableReference;
use datafusion::datasource::file_format::options::ArrowReadOptions;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use futures::StreamExt;

use super::snapshot::Snapshot;
use super::{ZarrTable, ZarrTableOptions};
use crate::error::{Error, Result};
use crate::export::ExportFormat;
use crate::location::{FileFormat, Location, UrlOptions};
use crate::read::Skipped;
use crate::store::Blocking;

/// How [`sql`] opens its tables and plans the query.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct SqlOptions {
    /// How every Zarr table is read (the string type, CF decoding, ...).
    pub table: ZarrTableOptions,
    /// Partitions a scan is split into (DataFusion's `target_partitions`;
    /// default: one per core).
    pub partitions: Option<usize>,
    /// The most bytes the query may hold (DataFusion's memory pool; default: no
    /// limit): scans reserve their read-ahead in it.
    pub memory_limit: Option<u64>,
    /// How a Zarr table at a URL is reached (credentials, concurrency, retries).
    pub url: UrlOptions,
    /// Zarr tables the caller opened (over a store it built, such as an
    /// obstore store from Python), registered by name beside the located ones.
    pub opened: Vec<(String, Arc<ZarrTable>)>,
    /// The caller's session to run in (a distributed engine's client session,
    /// such as Ballista's `SessionContext::remote_with_state`, with zarrow's
    /// codecs): zarrow's table factory and format are added to it
    /// ([`register`](super::register)) and the tables registered;
    /// `partitions` and `memory_limit` are then the session's own to set.
    /// Default: a new session.
    pub session: Option<SessionContext>,
}

impl std::fmt::Debug for SqlOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlOptions")
            .field("table", &self.table)
            .field("partitions", &self.partitions)
            .field("memory_limit", &self.memory_limit)
            .field("url", &self.url)
            .field("opened", &self.opened)
            .field(
                "session",
                &self.session.as_ref().map(SessionContext::session_id),
            )
            .finish()
    }
}

/// The answer of [`sql`], batch by batch. Iterating waits on the runtime
/// the query was given (the caller's runtime, where DataFusion's tasks run).
pub struct SqlReader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
    blocking: Blocking,
    skipped: Vec<(String, Skipped)>,
    /// The stream ended or failed: it is not polled again.
    ended: bool,
}

impl std::fmt::Debug for SqlReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlReader")
            .field("schema", &self.schema)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl SqlReader {
    /// The children of the Zarr tables that are not columns, by table name:
    /// nothing is dropped in silence.
    pub fn skipped(&self) -> &[(String, Skipped)] {
        &self.skipped
    }
}

impl Iterator for SqlReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        let next = match self.blocking.block_on(self.stream.next()) {
            Ok(None) => None,
            Ok(Some(next)) => Some(next.map_err(query_error)),
            Err(e) => Some(Err(e)),
        };
        self.ended = !matches!(next, Some(Ok(_)));
        next.map(|next| next.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for SqlReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The answer of [`sql_stream`]: DataFusion's stream, on the caller's runtime.
pub struct SqlStream {
    /// The batches.
    pub stream: SendableRecordBatchStream,
    /// The children of the Zarr tables that are not columns, by table name.
    pub skipped: Vec<(String, Skipped)>,
}

impl std::fmt::Debug for SqlStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStream")
            .field("schema", &self.stream.schema())
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

/// Run `query` (DataFusion's SQL) over `tables`, each a name and a location: a
/// `.parquet`, `.arrow` / `.ipc` / `.feather` or `.csv` file, else a Zarr group
/// or array (a directory or a URL). `CREATE EXTERNAL TABLE ... STORED AS ZARR`
/// works too ([`register`](super::register)). The query runs on the caller's
/// runtime, as does the reading of the tables' metadata; the stream reads
/// the Zarr tables async.
///
/// # Errors
/// [`Error::Option`] for a bad option; [`Error::Query`] (one line) for a
/// table that cannot be opened, bad SQL or a query that fails to plan; the
/// store's errors.
pub async fn sql_stream(
    query: &str,
    tables: &[(String, String)],
    options: &SqlOptions,
) -> Result<SqlStream> {
    let ctx = match &options.session {
        Some(ctx) => ctx.clone(),
        None => new_session(options)?,
    };
    run_in(&ctx, query, tables, options).await
}

/// A session of its own for a query: `options`' partitions and memory limit.
fn new_session(options: &SqlOptions) -> Result<SessionContext> {
    let mut config = SessionConfig::new();
    if let Some(n) = options.partitions {
        config = config.with_target_partitions(n.max(1));
    }
    let mut env = RuntimeEnvBuilder::new();
    if let Some(limit) = options.memory_limit {
        env = env.with_memory_limit(usize::try_from(limit).unwrap_or(usize::MAX), 1.0);
    }
    let env = env.build_arc().map_err(query_error)?;
    Ok(SessionContext::new_with_config_rt(config, env))
}

/// Register the tables in `ctx` and run `query` there.
async fn run_in(
    ctx: &SessionContext,
    query: &str,
    tables: &[(String, String)],
    options: &SqlOptions,
) -> Result<SqlStream> {
    super::register(ctx);
    let mut skipped = Vec::new();
    for (name, location) in tables {
        register_table(ctx, name, location, options, &mut skipped).await?;
    }
    for (name, table) in &options.opened {
        skipped.extend(table.skipped().iter().map(|s| (name.clone(), s.clone())));
        ctx.register_table(name.as_str(), table.clone())
            .map_err(|e| in_table(query_error(e), &format!("table {name}")))?;
    }
    let stream = run_statements(ctx, query)
        .await
        .map_err(|e| with_skipped(query_error(e), &skipped))?;
    Ok(SqlStream { stream, skipped })
}

/// The Zarr table `name` an `INSERT` writes to, if it is one.
async fn zarr_table(
    ctx: &SessionContext,
    name: TableReference,
) -> datafusion::error::Result<Option<ZarrTable>> {
    let provider = ctx.table_provider(name).await?;
    Ok(provider.downcast_ref::<ZarrTable>().cloned())
}

/// After an `INSERT` into `table` that left it as `before` (its newest state
/// when the statement began): its metadata read again, so that later
/// statements (and later queries in this session) see the rows. A sink that
/// wrote in this process has done so (the table's newest state changed); one
/// on another machine, a distributed engine's executor, could not.
async fn reopen(table: ZarrTable, before: Arc<Snapshot>) -> datafusion::error::Result<()> {
    if !Arc::ptr_eq(&table.snapshot(), &before) {
        return Ok(());
    }
    tokio::task::spawn_blocking(move || table.reopen())
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .map_err(super::df_err)
}

/// Run the `;`-separated statements of `query` in order, as datafusion-cli
/// does: each but the last to its end (a `CREATE`, a `COPY`, an `INSERT`), the
/// last as the answer's stream.
async fn run_statements(
    ctx: &SessionContext,
    query: &str,
) -> datafusion::error::Result<SendableRecordBatchStream> {
    let statements = DFParser::parse_sql(query)?;
    let Some(last) = statements.len().checked_sub(1) else {
        return Err(DataFusionError::Plan("no SQL statement".into()));
    };
    for (i, statement) in statements.into_iter().enumerate() {
        let plan = ctx.state().statement_to_plan(statement).await?;
        let written = match &plan {
            LogicalPlan::Dml(dml) => Some(zarr_table(ctx, dml.table_name.clone()).await?),
            _ => None,
        };
        // The written Zarr table's state before the statement.
        let before = written.iter().flatten().map(ZarrTable::snapshot).next();
        let frame = ctx.execute_logical_plan(plan).await?;
        let Some(table) = written else {
            if i == last {
                return frame.execute_stream().await;
            }
            frame.collect().await?;
            continue;
        };
        // An INSERT: its count, then the table read again.
        let schema = frame.schema().inner().clone();
        let counts = frame.collect().await?;
        if let (Some(table), Some(before)) = (table, before) {
            reopen(table, before).await?;
        }
        if i == last {
            let stream = futures::stream::iter(counts.into_iter().map(Ok));
            return Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)));
        }
    }
    Err(DataFusionError::Plan("no SQL statement".into()))
}

/// [`sql_stream`] for a sync caller: the query runs, and the reader waits, on
/// `runtime` (the caller's, lent down; it must outlive the reader).
///
/// # Errors
/// As [`sql_stream`].
pub fn sql(
    query: &str,
    tables: &[(String, String)],
    options: &SqlOptions,
    runtime: tokio::runtime::Handle,
) -> Result<SqlReader> {
    let blocking = Blocking::on(runtime);
    let answer = blocking.block_on(sql_stream(query, tables, options))??;
    Ok(SqlReader::new(answer, &blocking))
}

impl SqlReader {
    fn new(SqlStream { stream, skipped }: SqlStream, blocking: &Blocking) -> Self {
        Self {
            schema: stream.schema(),
            stream,
            blocking: blocking.clone(),
            skipped,
            ended: false,
        }
    }
}

/// Register the table `name` over `location`: a Zarr store unless its extension
/// says Parquet, Arrow IPC or CSV.
async fn register_table(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    options: &SqlOptions,
    skipped: &mut Vec<(String, Skipped)>,
) -> Result<()> {
    let parsed = Location::parse(location)
        .map_err(|e| in_table(e, &format!("table {name} ({location})")))?;
    // DataFusion lists a table's files by extension: the location's own.
    let extension = parsed
        .extension()
        .map(|e| format!(".{e}"))
        .unwrap_or_default();
    let registered = match parsed.file_format() {
        FileFormat::Table(ExportFormat::Parquet) => {
            let options = ParquetReadOptions {
                file_extension: &extension,
                ..Default::default()
            };
            ctx.register_parquet(name, location, options).await
        }
        FileFormat::Table(ExportFormat::IpcFile | ExportFormat::IpcStream) => {
            // DataFusion's Arrow format reads the IPC file and stream formats.
            let options = ArrowReadOptions {
                file_extension: &extension,
                ..Default::default()
            };
            ctx.register_arrow(name, location, options).await
        }
        FileFormat::Csv => {
            let options = CsvReadOptions::new().file_extension(&extension);
            ctx.register_csv(name, location, options).await
        }
        FileFormat::Zarr => {
            // Its metadata is read blocking, off the runtime's workers, waiting on
            // the runtime (no runtime of the store's own).
            let table_options = options.table.clone();
            let stores = super::session_registry(ctx.runtime_env(), options.url.clone());
            let table = tokio::task::spawn_blocking(move || {
                ZarrTable::open(&parsed, table_options, &stores)
            })
            .await
            .map_err(|e| Error::query(format!("table {name} ({location}): {e}")))??;
            skipped.extend(
                table
                    .skipped()
                    .iter()
                    .map(|s| (name.to_string(), s.clone())),
            );
            ctx.register_table(name, Arc::new(table)).map(|_| ())
        }
        _ => {
            return Err(Error::UnsupportedConversion {
                path: location.to_string(),
                reason: crate::error::Conversion::LinearAsTable {
                    table: name.to_string(),
                },
            });
        }
    };
    registered.map_err(|e| in_table(query_error(e), &format!("table {name} ({location})")))
}

/// A DataFusion error as zarrow's, one line; a zarrow error inside it by its own
/// message.
fn query_error(e: DataFusionError) -> Error {
    let message = match e.find_root() {
        DataFusionError::External(inner) if inner.downcast_ref::<Error>().is_some() => {
            inner.to_string().replace('\n', " ")
        }
        _ => one_line(&e),
    };
    Error::Query {
        message,
        source: Some(Box::new(e)),
    }
}

/// `err` (a query error) with what it concerns before its message.
fn in_table(err: Error, what: &str) -> Error {
    match err {
        Error::Query { message, source } => Error::Query {
            message: format!("{what}: {message}"),
            source,
        },
        err => err,
    }
}

/// A query's error with the children its tables left out named: a query that
/// fails on a column that was not read says why.
fn with_skipped(err: Error, skipped: &[(String, Skipped)]) -> Error {
    match err {
        Error::Query { message, source } if !skipped.is_empty() => {
            let names: Vec<String> = skipped
                .iter()
                .map(|(table, skipped)| format!("{table}: {skipped}"))
                .collect();
            Error::Query {
                message: format!("{message} (not columns: {})", names.join("; ")),
                source,
            }
        }
        err => err,
    }
}

fn one_line(e: &DataFusionError) -> String {
    e.to_string().replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_query_keeps_datafusions_error_under_its_one_line() {
        for (query, word) in [("SELEC 1", "SELEC"), ("SELECT * FROM nowhere", "nowhere")] {
            let err = sql_stream(query, &[], &SqlOptions::default())
                .await
                .unwrap_err();
            let Error::Query { message, source } = &err else {
                panic!("{err}");
            };
            assert!(!message.contains('\n'), "{message}");
            let source = source.as_ref().expect("DataFusion's error");
            let df = source
                .downcast_ref::<DataFusionError>()
                .expect("a DataFusionError");
            // DataFusion's own error, whole (the cause under its diagnostics).
            assert!(df.to_string().contains(word), "{df:?}");
            // The command line's text is the one line.
            assert_eq!(err.with_sources(), err.to_string());
        }
    }
}
