//! The `zarrow` command line: `info` and `convert` (Zarr to Parquet / Arrow IPC,
//! and Parquet / Arrow IPC to Zarr).

#[cfg(feature = "cluster")]
mod cluster;
mod flags;
mod info;
mod output;
mod progress;
mod sql;

use std::io::Write as _;
use std::process::ExitCode;

use arrow_array::RecordBatchReader;
use clap::{Args, Parser, Subcommand};
use zarrow::convert::{ConvertOptions, Observer};
use zarrow::location::UrlOptions;
use zarrow::{
    ChunkError, Convention, Error, ExecutionContext, Location, Overwrite, ReadOptions, Result,
    Stores,
};

use crate::flags::Flags;

/// Move variable-length data between Zarr and Apache Arrow.
#[derive(Parser, Debug)]
#[command(name = "zarrow", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Describe a Zarr array or group, in Zarr and in Arrow terms.
    Info {
        /// A Zarr array or group: a directory or a URL (s3://, gs://, az://,
        /// http(s)://, file://).
        #[arg(value_parser = location())]
        path: Location,
        /// How the arrays are read: their Arrow types follow.
        #[command(flatten)]
        read: Flags<ReadOptions>,
        /// How a URL is opened.
        #[command(flatten)]
        url: Flags<UrlOptions>,
    },
    /// Convert between Zarr and Parquet / Arrow IPC.
    ///
    /// Zarr to a table: SRC is a Zarr array or group directory; DST's extension picks
    /// the format: .parquet; .arrow, .ipc, .feather (IPC file); .arrows (IPC stream).
    /// A group becomes a table with one column per 1-D array; an N-d array is
    /// flattened in C order.
    ///
    /// A table to Zarr: SRC is a .parquet, .arrow/.ipc/.feather or .arrows file; DST
    /// is a directory (conventionally NAME.zarr) that becomes a group with one 1-D
    /// array per column.
    ///
    /// The stdlib linear exchange format: a Zarr array to OUT.json, a group (or an
    /// array) to OUT.csv with one column per array; IN.json to a Zarr array (N-d) or
    /// a table file, IN.csv to a Zarr group.
    Convert(Box<ConvertArgs>),
    /// Record chunk statistics for a Zarr array or group that something else
    /// wrote (anndata, xarray, zarr-python), so that filters skip the chunks
    /// that cannot match: one pass, chunk by chunk, under the writer lock.
    /// zarrow's own writes record them already.
    Stats {
        /// A Zarr array or group: a directory or a URL (s3://, gs://, az://,
        /// file://; plain HTTP is read-only).
        #[arg(value_parser = location())]
        path: Location,
        /// Print each array's coverage (chunks with statistics that still
        /// describe them, and the stale ones) instead of recording.
        #[arg(long, conflicts_with = "verify")]
        show: bool,
        /// Check every recorded chunk against the store (its listing; on
        /// plain HTTP, a HEAD per chunk's object, its size against the
        /// recorded one) and print each array's coverage; exit code 1 when a
        /// statistic is stale or a file is not used.
        #[arg(long)]
        verify: bool,
        /// How a URL is opened.
        #[command(flatten)]
        url: Flags<UrlOptions>,
    },
    /// Run a SQL query over Zarr stores (and Parquet / Arrow IPC / CSV files)
    /// with DataFusion; print the result or write it to a file.
    ///
    /// Example: zarrow sql "SELECT cell_type, count(*) FROM obs GROUP BY 1"
    /// --table obs=atlas.zarr/obs
    Sql(Box<sql::SqlArgs>),
    /// Run a process of a Ballista cluster that reads and writes Zarr: a
    /// scheduler, or an executor; `zarrow sql --cluster df://HOST:PORT` is the
    /// client.
    #[cfg(feature = "cluster")]
    Cluster {
        #[command(subcommand)]
        command: cluster::ClusterCommand,
    },
}

/// Options of `convert`.
#[derive(Args, Debug)]
struct ConvertArgs {
    /// The input: a Zarr directory or URL (s3://, gs://, az://, http(s)://,
    /// file://), or a Parquet / Arrow IPC file.
    #[arg(value_parser = location())]
    src: Location,
    /// The output: a Parquet / Arrow IPC file, or a Zarr directory or URL.
    #[arg(value_parser = location())]
    dst: Location,
    /// [from Zarr] Memory-map the chunk files instead of reading them: uncompressed
    /// zarrs.vlen and ZEP0007 chunks then become Arrow arrays with no copy. The
    /// store's files must not change during the run: no other process may truncate
    /// or rewrite them (a truncated file ends zarrow with SIGBUS; a rewritten one
    /// changes values already checked). Leave it off for a store being written to.
    #[arg(long)]
    mmap: bool,
    /// The conversion's options, one flag per option of `ConvertOptions`.
    #[command(flatten)]
    options: Flags<ConvertOptions>,
    /// How a URL is opened.
    #[command(flatten)]
    url: Flags<UrlOptions>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    output::remove_partials_on_signals();
    let result = match cli.command {
        Command::Info { path, read, url } => info::info(&path, &read, &url),
        Command::Convert(args) => convert(&args),
        Command::Stats {
            path,
            verify: true,
            url,
            ..
        } => match info::verify_stats(&path, &url) {
            Ok(true) => Ok(()),
            Ok(false) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "zarrow: stale or unused statistics at {path} (zarrow stats records them again)"
                );
                return ExitCode::FAILURE;
            }
            Err(e) => Err(e),
        },
        Command::Stats {
            path, show, url, ..
        } => stats(&path, show, &url),
        Command::Sql(args) => sql::sql(&args),
        #[cfg(feature = "cluster")]
        Command::Cluster { command } => cluster::run(&command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = e.with_sources();
            if let Some(hint) = hint(&e) {
                message.push_str(&format!(" ({hint})"));
            }
            let _ = writeln!(std::io::stderr(), "zarrow: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The flag that gets past an error, for the errors that have one (the library's
/// messages name its own API, not the CLI's flags).
fn hint(e: &Error) -> Option<&'static str> {
    match e {
        Error::Nulls { .. } => Some("pass --nulls fill to write nulls as the fill value"),
        Error::AlreadyExists {
            overwrite: Overwrite::WriteOptions,
            ..
        } => Some("pass --overwrite to replace it, or --append to add the rows to it"),
        Error::Busy { .. } => Some("pass --lock-timeout SECS to wait longer"),
        Error::ReadTooLarge { .. } => Some("or select fewer rows with --rows / --limit"),
        Error::LengthsDiffer { .. } => {
            Some("pick equal-length columns with --columns, or read a gridded dataset with --long")
        }
        // Not for a group that is itself an anndata element (a sparse matrix).
        Error::NoColumns { skipped, .. } if !skipped.iter().any(|s| s.name.is_empty()) => {
            Some("convert a child on its own, or read a gridded dataset with --long")
        }
        Error::Convention {
            convention: Convention::Cf,
            ..
        } => Some("pass --no-cf to read the raw values"),
        Error::Chunk { source, .. } => match source {
            ChunkError::OffsetOverflow { .. } => Some("read with --string-type large-utf8"),
            ChunkError::TooLarge { .. } => Some("raise --max-chunk-bytes if the chunk is sound"),
            _ => None,
        },
        _ => None,
    }
}

fn convert(args: &ConvertArgs) -> Result<()> {
    let mut options = args.options.options().clone();
    if args.mmap {
        // SAFETY: the user opted in with `--mmap`, whose help states exactly the
        // condition `with_mmap` requires (no file of the store changes during the
        // run).
        options = unsafe { options.with_mmap(true) };
    }
    // Its URLs' I/O waits on the library's runtime, started only when a URL
    // is read (the command line starts none for a conversion).
    let context = ExecutionContext::default().with_stores(Stores::new(args.url.options().clone()));
    let written = zarrow::convert::convert(&args.src, &args.dst, &options, &context, &Terminal)?;
    let _ = writeln!(std::io::stderr(), "zarrow: wrote {written} to {}", args.dst);
    Ok(())
}

fn stats(path: &Location, show: bool, url: &Flags<UrlOptions>) -> Result<()> {
    if show {
        return info::show_stats(path, url);
    }
    let context = ExecutionContext::default().with_stores(Stores::new(url.options().clone()));
    let written = zarrow::convert::record_stats(path, &context, &Terminal)?;
    let _ = writeln!(
        std::io::stderr(),
        "zarrow: recorded the statistics of {written} at {path}"
    );
    Ok(())
}

/// What the command line shows of a conversion: a progress bar, notes on stderr.
struct Terminal;

impl Observer for Terminal {
    fn reader(
        &self,
        reader: Box<dyn RecordBatchReader + Send>,
        total: Option<u64>,
    ) -> Box<dyn RecordBatchReader + Send> {
        Box::new(progress::Progress::new(reader, total))
    }

    fn note(&self, message: &str) {
        let _ = writeln!(std::io::stderr(), "zarrow: {message}");
    }
}

/// A location argument, parsed once ([`Location::parse`]): a `file://` URL
/// becomes the local path it names, an unknown scheme is refused here.
fn location() -> impl clap::builder::TypedValueParser<Value = Location> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().try_map(|s| Location::parse_os(&s))
}

/// The command line's one runtime, for the commands that run async work
/// (`sql`, `cluster`), which lend it down: a worker per core, with the deep
/// stacks Ballista's own binaries give theirs. `convert` and `info` start
/// none (an object store's I/O waits on the library's, started only when a URL
/// is read). Its own because a command line is the top of its process: no
/// caller above it has a runtime to lend.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(32 * 1024 * 1024)
        .build()
        .map_err(|source| Error::Runtime { source })
}
