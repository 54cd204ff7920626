//! `zarrow sql QUERY --table NAME=STORE [--table ...] [--output FILE]`: SQL over
//! Zarr stores (and Parquet / Arrow IPC / CSV files) through DataFusion.

use std::io::Write as _;
use std::path::Path;

use arrow_array::RecordBatch;
use clap::Args;
use zarrow::datafusion::{SqlOptions, SqlReader};
use zarrow::export::{ExportFormat, ExportOptions, write_file};
use zarrow::location::FileFormat;
use zarrow::location::LocationError;
use zarrow::location::UrlOptions;
use zarrow::{Error, Location, ReadOptions, Result};

use crate::flags::Flags;
use zarrow::__private::write_atomic;

/// Options of `sql`.
#[derive(Args, Debug)]
pub(crate) struct SqlArgs {
    /// The query (DataFusion's SQL). Tables are those named with --table; a
    /// `CREATE EXTERNAL TABLE ... STORED AS ZARR LOCATION '...'` works too.
    query: String,
    /// A table: NAME=LOCATION, a Zarr group or array (a directory or a URL), or a
    /// .parquet/.pq, .arrow/.ipc/.feather, .arrows or .csv file. Repeat for more
    /// tables.
    #[arg(long = "table", value_name = "NAME=LOCATION")]
    tables: Vec<String>,
    /// Write the result to FILE (.parquet, .arrow/.ipc/.feather, .arrows or
    /// .csv; atomically, as convert does) instead of printing it.
    #[arg(long, short, value_parser = crate::location())]
    output: Option<Location>,
    /// Replace --output if it exists.
    #[arg(long)]
    overwrite: bool,
    /// How the Zarr tables' arrays are read (over a table's defaults).
    #[command(flatten)]
    read: Flags<ReadOptions>,
    /// Partitions a scan is split into (DataFusion's target_partitions; default:
    /// one per core).
    #[arg(long)]
    partitions: Option<usize>,
    /// The most memory the query may hold (K, M, G suffixes), as datafusion-cli's
    /// -m: scans reserve their read-ahead in it, sorts and joins spill or fail
    /// with "Resources exhausted" past it (default: no limit).
    #[arg(long, short = 'm', value_name = "SIZE", value_parser = zarrow::options::parse_size)]
    memory_limit: Option<u64>,
    /// How an --output table file is written.
    #[command(flatten)]
    export: Flags<ExportOptions>,
    /// Run the query on a Ballista cluster: its scheduler's address
    /// (`zarrow cluster scheduler --bind HOST:PORT`). The tables' locations must
    /// be reachable from every executor.
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
    /// How a URL is opened.
    #[command(flatten)]
    url: Flags<UrlOptions>,
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
        Some(output) if output.as_path().is_none() => {
            return Err(Error::Location {
                location: output.to_string(),
                reason: LocationError::RemoteFile,
            });
        }
        Some(path) => Some(match path.file_format() {
            FileFormat::Table(format) => Output::Export(format),
            FileFormat::Csv => Output::Csv,
            _ => {
                return Err(Error::UnknownFormat {
                    path: path.to_string(),
                    expected: ".parquet / .pq, .arrow / .ipc / .feather, .arrows or .csv",
                });
            }
        }),
    };
    let tables = args
        .tables
        .iter()
        .map(|table| {
            let (name, location) = table.split_once('=').ok_or_else(|| {
                Error::Option(zarrow::ParseOptionError {
                    option: "--table",
                    value: table.clone(),
                    allowed: "NAME=LOCATION",
                })
            })?;
            Ok((name.to_string(), location.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut options = SqlOptions::default();
    args.read.apply(&mut options.table.read)?;
    options.partitions = args.partitions;
    options.memory_limit = args.memory_limit;
    options.url = args.url.options().clone();
    // A sync program: the command's one runtime, which DataFusion's tasks and
    // the object stores' requests run on (declared before the reader, so it
    // outlives it).
    let runtime = crate::runtime()?;
    options.session = session(args, &runtime)?;
    let reader = zarrow::datafusion::sql(&args.query, &tables, &options, runtime.handle().clone())?;
    // Nothing is dropped in silence: name every child that is not a column.
    for (name, skipped) in reader.skipped() {
        eprintln!("zarrow: {name}: not a column: {skipped}");
    }
    match (&args.output, format) {
        (Some(output), Some(format)) => write(
            reader,
            output.as_path().unwrap_or(Path::new("")),
            format,
            args,
        ),
        _ => print(reader),
    }
}

/// The session a --cluster query runs in (none: a local one).
#[cfg(feature = "cluster")]
fn session(
    args: &SqlArgs,
    runtime: &tokio::runtime::Runtime,
) -> Result<Option<datafusion::prelude::SessionContext>> {
    let Some(url) = &args.cluster else {
        return Ok(None);
    };
    if args.memory_limit.is_some() {
        return Err(Error::OptionConflict {
            option: "--memory-limit".into(),
            other: "--cluster".into(),
            why: "the executors hold the memory; give each its own (zarrow cluster executor --memory-limit)",
        });
    }
    Ok(Some(
        runtime.block_on(crate::cluster::client(url, args.partitions))?,
    ))
}

#[cfg(not(feature = "cluster"))]
fn session(
    _args: &SqlArgs,
    _runtime: &tokio::runtime::Runtime,
) -> Result<Option<datafusion::prelude::SessionContext>> {
    Ok(None)
}

/// Print the result as a table on stdout.
fn print(reader: SqlReader) -> Result<()> {
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
fn write(reader: SqlReader, path: &Path, format: Output, args: &SqlArgs) -> Result<()> {
    let compression = args.export.options().compression;
    let rows = write_atomic(path, args.overwrite, |out| match format {
        Output::Export(format) => write_file(reader, out, format, compression),
        Output::Csv => write_csv(reader, out),
    })?;
    eprintln!("zarrow: wrote {rows} rows to {}", path.display());
    Ok(())
}

fn write_csv(reader: SqlReader, out: impl std::io::Write) -> zarrow::Result<u64> {
    let mut writer = datafusion::arrow::csv::WriterBuilder::new()
        .with_header(true)
        .build(out);
    let mut rows = 0;
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        writer.write(&batch)?;
    }
    Ok(rows)
}
