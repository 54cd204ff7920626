//! `zarrow sql QUERY --table NAME=STORE [--table ...] [--output FILE]`: SQL over
//! Zarr stores (and Parquet / Arrow IPC / CSV files) through DataFusion.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use clap::Args;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionConfig, SessionContext};
use futures::StreamExt;
use parquet::basic::Compression;
use zarrow::datafusion::{ZarrTable, ZarrTableOptions};
use zarrow::export::{DEFAULT_PARQUET_COMPRESSION, ExportFormat, write_file};
use zarrow::{Error, Result};

use crate::{RemoteArgs, open_store, parse_compression};
use zarrow::convert::output::Partial;

/// Options of `sql`.
#[derive(Args, Debug)]
pub(crate) struct SqlArgs {
    /// The query (DataFusion's SQL). Tables are those named with --table; a
    /// `CREATE EXTERNAL TABLE ... STORED AS ZARR LOCATION '...'` works too.
    query: String,
    /// A table: NAME=LOCATION, a Zarr group or array (a directory or a URL), or a
    /// .parquet, .arrow/.ipc/.feather or .csv file. Repeat for more tables.
    #[arg(long = "table", value_name = "NAME=LOCATION")]
    tables: Vec<String>,
    /// Write the result to FILE (.parquet, .arrow/.ipc/.feather, .arrows or
    /// .csv; atomically, as convert does) instead of printing it.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Replace --output if it exists.
    #[arg(long)]
    overwrite: bool,
    /// [Zarr tables] Arrow layout of strings and bytes: utf8, large-utf8 or
    /// utf8-view (default: as recorded by zarrow's writer, else utf8).
    #[arg(long)]
    string_type: Option<String>,
    /// [Zarr tables] Keep the raw values of CF-encoded variables.
    #[arg(long)]
    no_cf: bool,
    /// Partitions a scan is split into (DataFusion's target_partitions; default:
    /// one per core).
    #[arg(long)]
    partitions: Option<usize>,
    /// [--output .parquet] Compression, as for convert.
    #[arg(long, default_value = DEFAULT_PARQUET_COMPRESSION, value_parser = parse_compression)]
    compression: Compression,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// The format of an --output file.
enum Output {
    Export(ExportFormat),
    Csv,
}

pub(crate) fn sql(args: &SqlArgs) -> Result<()> {
    // Check the output before any work.
    let format = match &args.output {
        None => None,
        Some(path) if has_extension(path, &["csv"]) => Some(Output::Csv),
        Some(path) => Some(Output::Export(ExportFormat::from_path(path).ok_or_else(
            || {
                Error::InvalidArgument(format!(
                    "cannot tell the output format of {}: use .parquet, .arrow/.ipc/.feather, .arrows or .csv",
                    path.display()
                ))
            },
        )?)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::InvalidArgument(format!("starting the query runtime: {e}")))?;
    let mut config = SessionConfig::new();
    if let Some(n) = args.partitions {
        config = config.with_target_partitions(n.max(1));
    }
    let ctx = SessionContext::new_with_config(config);
    zarrow::datafusion::register(&ctx);
    for table in &args.tables {
        let (name, location) = table.split_once('=').ok_or_else(|| {
            Error::InvalidArgument(format!("--table {table:?}: use NAME=LOCATION"))
        })?;
        runtime.block_on(register(&ctx, name, location, args))?;
    }
    let stream = runtime.block_on(async {
        let frame = ctx.sql(&args.query).await?;
        frame.execute_stream().await
    });
    let stream = stream.map_err(query_err)?;
    let reader = BlockingReader {
        schema: stream.schema(),
        stream,
        runtime,
    };
    match (&args.output, format) {
        (Some(path), Some(format)) => write(reader, path, format, args),
        _ => print(reader),
    }
}

/// Register the table `name` over `location`: a Zarr store unless its extension
/// says Parquet, Arrow IPC or CSV.
async fn register(ctx: &SessionContext, name: &str, location: &str, args: &SqlArgs) -> Result<()> {
    let path = Path::new(location);
    let registered = if has_extension(path, &["parquet"]) {
        ctx.register_parquet(name, location, ParquetReadOptions::default())
            .await
    } else if has_extension(path, &["arrow", "ipc", "feather"]) {
        ctx.register_arrow(name, location, Default::default()).await
    } else if has_extension(path, &["csv"]) {
        ctx.register_csv(name, location, CsvReadOptions::new())
            .await
    } else {
        let mut options = ZarrTableOptions::default();
        options.string_type = args.string_type.clone();
        options.raw = args.no_cf;
        let store = open_store(path, false, &args.remote)?;
        let table = ZarrTable::from_store(store, location, options)?;
        // Nothing is dropped in silence: name every child that is not a column.
        for skipped in table.skipped() {
            eprintln!("zarrow: {name}: not a column: {skipped}");
        }
        ctx.register_table(name, Arc::new(table)).map(|_| ())
    };
    registered.map_err(|e| Error::Query(format!("table {name} ({location}): {}", one_line(&e))))
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// A DataFusion error as zarrow's, one line; a zarrow error inside it by its own
/// message.
fn query_err(e: DataFusionError) -> Error {
    if let DataFusionError::External(inner) = e.find_root()
        && inner.downcast_ref::<Error>().is_some()
    {
        return Error::Query(inner.to_string().replace('\n', " "));
    }
    Error::Query(one_line(&e))
}

fn one_line(e: &DataFusionError) -> String {
    e.to_string().replace('\n', " ")
}

/// The result as a blocking `RecordBatchReader` (for the file writers).
struct BlockingReader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
    runtime: tokio::runtime::Runtime,
}

impl Iterator for BlockingReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.runtime.block_on(self.stream.next())?;
        Some(next.map_err(|e| ArrowError::ExternalError(Box::new(query_err(e)))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Print the result as a table on stdout.
fn print(reader: BlockingReader) -> Result<()> {
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let table = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{table}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::Output {
            what: "the result".into(),
            source: e,
        })?;
    eprintln!("zarrow: {rows} row{}", if rows == 1 { "" } else { "s" });
    Ok(())
}

/// Write the result to `path` atomically.
fn write(reader: BlockingReader, path: &Path, format: Output, args: &SqlArgs) -> Result<()> {
    let (partial, file) = Partial::file(path, args.overwrite)?;
    let rows = match format {
        Output::Export(format) => {
            write_file(reader, file, partial.path(), format, args.compression)?
        }
        Output::Csv => write_csv(reader, file, partial.path())?,
    };
    partial.commit()?;
    eprintln!("zarrow: wrote {rows} rows to {}", path.display());
    Ok(())
}

fn write_csv(reader: BlockingReader, file: File, path: &Path) -> Result<u64> {
    let mut writer = datafusion::arrow::csv::WriterBuilder::new()
        .with_header(true)
        .build(BufWriter::new(file));
    let mut rows = 0;
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        writer.write(&batch)?;
    }
    writer
        .into_inner()
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
    Ok(rows)
}
