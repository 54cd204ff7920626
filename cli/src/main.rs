//! The `zarrow` command line: `info` and `convert` (Zarr to Parquet / Arrow IPC,
//! and Parquet / Arrow IPC to Zarr).

#[cfg(feature = "cluster")]
mod cluster;
mod info;
mod limits;
mod output;
mod progress;
mod sql;

use std::io::Write as _;
use std::ops::Range;
use std::process::ExitCode;
use std::str::FromStr as _;

use arrow_array::RecordBatchReader;
use clap::{Args, Parser, Subcommand};
use parquet::basic::Compression;
use zarrow::convert::{ConvertOptions, Observer};
use zarrow::export::{DEFAULT_PARQUET_COMPRESSION, parse_parquet_compression};
use zarrow::read::DEFAULT_MAX_CHUNK_BYTES;
use zarrow::write::{Compressor, DEFAULT_LOCK_TIMEOUT, Encoding, Layout, NullPolicy, WriteOptions};
use zarrow::{
    ChunkError, Convention, Error, Location, Overwrite, ParseOptionError, Result, StringType,
};

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
        /// The Arrow string layout to report: utf8, large-utf8 or utf8-view
        /// (default: as recorded by zarrow's writer, else utf8).
        #[arg(long, value_parser = StringType::from_str)]
        string_type: Option<StringType>,
        #[command(flatten)]
        remote: RemoteArgs,
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

/// How a store named by URL (s3://, gs://, az://, http(s)://) is opened.
#[derive(Args, Debug, Clone, Default)]
struct RemoteArgs {
    /// [URLs] Do not sign requests (a public bucket). Credentials, region and
    /// endpoint otherwise come from the environment (AWS_*, GOOGLE_*, AZURE_*).
    #[arg(long)]
    anonymous: bool,
    /// [URLs] Requests kept in flight while reading.
    #[arg(long, default_value_t = zarrow::store::DEFAULT_CONCURRENCY)]
    concurrency: usize,
    /// [URLs] Retries of a transient failure (HTTP 5xx, a connection reset, a
    /// timeout), with exponential backoff; 403, 404 and other permanent errors
    /// are not retried.
    #[arg(long, default_value_t = 10)]
    retries: usize,
    /// [URLs] Stop retrying a request after this many seconds.
    #[arg(long, default_value_t = 180.0)]
    retry_timeout: f64,
    /// [URLs] The most seconds one request may take before it counts as failed
    /// (and is retried).
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
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
    #[command(flatten)]
    remote: RemoteArgs,
    /// Replace DST if it exists (a Zarr DST is replaced only if it is a Zarr store).
    #[arg(long)]
    overwrite: bool,
    /// [to Zarr] Append the rows to the group at DST (made when absent): its
    /// columns must be the input's, by names and types, and its own format,
    /// codecs and chunks apply. Readers see the old rows or all of them; a
    /// second writer appending at once waits for the first (--lock-timeout).
    #[arg(long, conflicts_with_all = ["overwrite", "zarr_format", "encoding", "compressor", "level", "chunk_len", "shard_len", "chunk_shape", "shard_shape"])]
    append: bool,
    /// [to Zarr] With --append: seconds to wait while another writer appends
    /// to DST before giving up.
    #[arg(long, default_value_t = DEFAULT_LOCK_TIMEOUT.as_secs_f64(), requires = "append", value_parser = parse_seconds)]
    lock_timeout: f64,

    /// [from Zarr] Memory-map the chunk files instead of reading them: uncompressed
    /// zarrs.vlen and ZEP0007 chunks then become Arrow arrays with no copy. The
    /// store's files must not change during the run: no other process may truncate
    /// or rewrite them (a truncated file ends zarrow with SIGBUS; a rewritten one
    /// changes values already checked). Leave it off for a store being written to.
    #[arg(long)]
    mmap: bool,

    /// [to a table] Arrow layout of string and bytes columns: utf8, large-utf8 or
    /// utf8-view (default: as recorded by zarrow's writer, else utf8).
    #[arg(long, value_parser = StringType::from_str)]
    string_type: Option<StringType>,
    /// [from Zarr] Refuse an input of more rows than this (a store's shape may
    /// promise far more than it stores: missing chunks read as the fill value).
    #[arg(long, default_value_t = limits::DEFAULT_MAX_ROWS)]
    max_rows: u64,
    /// [from Zarr] Refuse an input whose Arrow data would exceed this many bytes
    /// (estimated from the shape and types; suffixes K, M, G, T; default 64 GiB).
    #[arg(long, value_parser = limits::parse_size, default_value_t = limits::DEFAULT_MAX_BYTES)]
    max_bytes: u64,
    /// [from Zarr] Refuse a chunk that decodes (or decompresses) to more than this
    /// many bytes, naming its key (suffixes K, M, G, T; default 2 GiB).
    #[arg(long, value_parser = limits::parse_size, default_value_t = DEFAULT_MAX_CHUNK_BYTES as u64)]
    max_chunk_bytes: u64,
    /// [to a table] Parquet compression: zstd, zstd:LEVEL or zstd(LEVEL) (1-22),
    /// gzip or gzip(LEVEL) (0-9), snappy, lz4 (LZ4_RAW) or none; parquet's own
    /// names (lz4_raw, uncompressed, upper case) also work.
    #[arg(long, default_value = DEFAULT_PARQUET_COMPRESSION, value_parser = parse_compression)]
    compression: Compression,
    /// [to a table] For a group: the columns, comma-separated (default: every 1-D array).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// [to a table] Only rows START..END (of 1-D arrays): only the chunks (and of a
    /// sharded array, the inner chunks) those rows lie in are read.
    #[arg(long, value_parser = parse_rows)]
    rows: Option<Range<u64>>,
    /// [to a table] At most N rows (after --rows).
    #[arg(long)]
    limit: Option<u64>,
    /// [to a table] Keep the raw values of CF-encoded variables (xarray's
    /// scale_factor, add_offset, _FillValue, time units): by default they are
    /// decoded to the values xarray gives.
    #[arg(long)]
    no_cf: bool,
    /// [to a table] Read a gridded dataset (xarray's N-d variables with named
    /// dimensions) as a long table, one row per grid point, like
    /// Dataset.to_dataframe(): the dimensions' coordinates first, then the
    /// variables (--columns picks them).
    #[arg(long)]
    long: bool,
    /// [to a table] Read anndata categoricals as their categories' values, one
    /// per row, instead of dictionaries (as utf8-view unless --string-type says
    /// otherwise: each a view of its category, no string copied).
    #[arg(long)]
    categorical_values: bool,

    /// [to Zarr] Zarr format: 3 or 2.
    #[arg(long, default_value_t = WriteOptions::default().zarr_format)]
    zarr_format: u8,
    /// [to Zarr] String and bytes layout: default (vlen-utf8 / vlen-bytes, as
    /// zarr-python writes), zarrs-vlen, or zep0007 (experimental draft).
    #[arg(long, default_value_t = WriteOptions::default().encoding)]
    encoding: Encoding,
    /// [to Zarr] Chunk compressor: zstd, gzip, blosc or none.
    #[arg(long, default_value_t = WriteOptions::default().compressor)]
    compressor: Compressor,
    /// [to Zarr] Compressor level (default: zstd 0, gzip 5, blosc 5).
    #[arg(long)]
    level: Option<i32>,
    /// [to Zarr] Elements per chunk (default: about 4 MiB of values per chunk); with
    /// --shard-len, per inner chunk.
    #[arg(long)]
    chunk_len: Option<usize>,
    /// [to Zarr] Store 1-D arrays in sharding_indexed shards of N elements (rounded
    /// up to a multiple of the chunk length), the index at the end with crc32c, as
    /// zarr-python writes. Zarr v3 only.
    #[arg(long)]
    shard_len: Option<usize>,
    /// [to Zarr] Chunk shape of N-d arrays (linear-format input), comma-separated,
    /// e.g. 100,100 (default: chunks spanning all but the first dimension).
    #[arg(long, value_delimiter = ',')]
    chunk_shape: Option<Vec<u64>>,
    /// [to Zarr] Shard shape of N-d arrays, a multiple of the chunk shape in every
    /// dimension, e.g. 1000,1000. Zarr v3 only.
    #[arg(long, value_delimiter = ',')]
    shard_shape: Option<Vec<u64>>,
    /// [to Zarr] Nulls: `error` refuses a column with nulls (naming it and the first
    /// null row); `fill` writes each null as "" for strings, empty bytes, 0 for
    /// integers, NaN for floats, false for bools, so the nulls are lost.
    #[arg(long, default_value_t = WriteOptions::default().nulls)]
    nulls: NullPolicy,
    /// [to Zarr] Group layout: `plain` (one array per column, with the dimension
    /// name xarray reads) or `anndata` (an anndata dataframe: dictionary columns
    /// become categoricals, integer, bool and string columns with nulls
    /// nullable-* elements, the pandas index `_index`; anndata.io.read_elem reads
    /// it as the same DataFrame).
    #[arg(long, default_value_t = WriteOptions::default().layout)]
    layout: Layout,
}

fn parse_compression(s: &str) -> std::result::Result<Compression, String> {
    parse_parquet_compression(s).map_err(|e| e.to_string())
}

/// `START..END`.
fn parse_rows(s: &str) -> std::result::Result<Range<u64>, String> {
    let bad = || format!("{s:?} is not START..END (for example 1000..2000)");
    let (start, end) = s.split_once("..").ok_or_else(bad)?;
    let start: u64 = start.trim().parse().map_err(|_| bad())?;
    let end: u64 = end.trim().parse().map_err(|_| bad())?;
    if start > end {
        return Err(format!("{s:?}: START is after END"));
    }
    Ok(start..end)
}

fn parse_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Ok(secs),
        _ => Err(format!("{s:?} is not a number of seconds (0 or more)")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    output::remove_partials_on_signals();
    let result = match cli.command {
        Command::Info {
            path,
            string_type,
            remote,
        } => info::info(&path, string_type, &remote),
        Command::Convert(args) => convert(&args),
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
    let mut options = ConvertOptions::default();
    options.url = url_options(&args.remote)?;
    options.overwrite = args.overwrite;
    let read = &mut options.read;
    read.string_type = args.string_type;
    read.max_chunk_bytes = usize::try_from(args.max_chunk_bytes).unwrap_or(usize::MAX);
    read.decode_cf = !args.no_cf;
    read.categorical_values = args.categorical_values;
    let select = &mut options.select;
    select.columns = args.columns.clone();
    select.rows = args.rows.clone();
    select.limit = args.limit;
    select.long = args.long;
    options.limits.max_rows = args.max_rows;
    options.limits.max_bytes = args.max_bytes;
    options.export.compression = args.compression;
    let write = &mut options.write;
    write.append = args.append;
    write.lock_timeout = std::time::Duration::from_secs_f64(args.lock_timeout);
    write.zarr_format = args.zarr_format;
    write.encoding = args.encoding;
    write.compressor = args.compressor;
    write.level = args.level;
    write.chunk_len = args.chunk_len;
    write.shard_len = args.shard_len;
    write.chunk_shape = args.chunk_shape.clone();
    write.shard_shape = args.shard_shape.clone();
    write.nulls = args.nulls;
    write.layout = args.layout;
    if args.mmap {
        // SAFETY: the user opted in with `--mmap`, whose help states exactly the
        // condition `with_mmap` requires (no file of the store changes during the
        // run).
        options = unsafe { options.with_mmap(true) };
    }
    let written = zarrow::convert::convert(&args.src, &args.dst, &options, &Terminal)?;
    let _ = writeln!(std::io::stderr(), "zarrow: wrote {written} to {}", args.dst);
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

/// A duration flag's value.
fn seconds(flag: &'static str, value: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::Option(ParseOptionError {
                option: flag,
                value: value.to_string(),
                allowed: "a positive number of seconds",
            })
        })
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
        .map_err(|source| Error::Io {
            path: "a runtime for the command".into(),
            source,
        })
}

/// How the `[URLs]` flags open a store.
fn url_options(remote: &RemoteArgs) -> Result<zarrow::store::UrlOptions> {
    let mut options = zarrow::store::UrlOptions::default();
    options.anonymous = remote.anonymous;
    options.concurrency = Some(remote.concurrency);
    options.retries = Some(remote.retries);
    options.retry_timeout = Some(seconds("--retry-timeout", remote.retry_timeout)?);
    options.timeout = Some(seconds("--timeout", remote.timeout)?);
    Ok(options)
}
