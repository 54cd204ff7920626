//! `zarrow convert` as a library function: the command line and the Python
//! package's `zarrow.convert` run this one implementation.
//!
//! - a Zarr store (directory or URL) to a table file: `.parquet`; `.arrow`, `.ipc`,
//!   `.feather` (IPC file); `.arrows` (IPC stream) (`from_zarr.rs`);
//! - a table file to a Zarr group, one 1-D array per column (`to_zarr.rs`);
//! - the stdlib linear exchange format: a Zarr array to `.json`, a group (or an
//!   array) to `.csv`, and back (`linear.rs`).
//!
//! Outputs appear whole or not at all (`write/output.rs`, `write/destination.rs`);
//! conversions from Zarr are bounded before anything is read (`limits.rs`).
//!
//! Needs the `convert` feature (its atomic directory replacement uses `rustix`).

mod from_zarr;
mod limits;
mod linear;
mod stats;
mod to_zarr;

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatchReader;

pub use self::limits::Limits;
use crate::ReadOptions;
use crate::context::ExecutionContext;
use crate::error::{Conversion, Error, Result};
use crate::export::{ExportFormat, ExportOptions};
use crate::location::{FileFormat, Location, LocationError};
use crate::read::TableOptions;
use crate::store::{Consolidated, LocalStore, Store};
use crate::write::WriteOptions;

crate::options::options! {
    /// The options of one conversion (the `zarrow convert` flags), composed of
    /// the options each side takes: how Zarr is read ([`ReadOptions`]) and
    /// which part ([`TableOptions`]), within which bounds ([`Limits`]), how a
    /// table file is written ([`ExportOptions`]) and how Zarr is written
    /// ([`WriteOptions`]). Options of the other direction are refused where
    /// they would be ignored. Where the ends are opened from (URLs' options, a
    /// runtime) is the [`ExecutionContext`] the conversion is given.
    #[derive(Debug, Clone)]
    #[non_exhaustive]
    pub struct ConvertOptions("convert") {
        /// Replace the output if it exists (a Zarr output only if it is a Zarr
        /// store).
        pub overwrite: bool = false,
    }
    groups {
        /// [from Zarr] How the input is read.
        pub read: ReadOptions = ReadOptions::default(),
        /// [from Zarr to a table] Which columns and rows.
        pub select: TableOptions = TableOptions::default(),
        /// [from Zarr] The bounds on the input.
        pub limits: Limits = Limits::default(),
        /// [to a table] How a table file is written.
        pub export: ExportOptions = ExportOptions::default(),
        /// [to Zarr] How Zarr is written, append and lock_timeout included (its
        /// overwrite is the conversion's).
        pub write: WriteOptions = WriteOptions::default(),
    }
    internal {
        /// Memory-map local chunk files (see [`with_mmap`](Self::with_mmap)).
        mmap: bool = false,
    }
}

impl ConvertOptions {
    /// Memory-map the chunk files of a local Zarr input instead of reading them:
    /// uncompressed zarrs.vlen and ZEP0007 chunks then become Arrow arrays with no
    /// copy.
    ///
    /// # Safety
    /// No file of the input store may be truncated or modified in place while the
    /// conversion runs or while a buffer read from it is alive (a truncated file
    /// ends the process with SIGBUS; a rewritten one changes values already
    /// checked).
    pub unsafe fn with_mmap(mut self, mmap: bool) -> Self {
        self.mmap = mmap;
        self
    }
}

/// What a conversion reports as it goes; the defaults do nothing.
pub trait Observer {
    /// Wrap the reader of the batches being converted (`total`: its rows, when
    /// known), e.g. with a progress bar or a check for interrupts.
    fn reader(
        &self,
        reader: Box<dyn RecordBatchReader + Send>,
        total: Option<u64>,
    ) -> Box<dyn RecordBatchReader + Send> {
        let _ = total;
        reader
    }

    /// Something the user should know: a child that is not converted, a change
    /// the output format makes.
    fn note(&self, message: &str) {
        let _ = message;
    }
}

/// An [`Observer`] that observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Observer for Quiet {}

/// What a conversion wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Written {
    /// Rows of a table (or of the 1-D arrays of a Zarr group).
    Rows(u64),
    /// Whole arrays (linear format output).
    Arrays(usize),
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rows(n) => write!(f, "{n} rows"),
            Self::Arrays(n) => write!(f, "{n} array(s)"),
        }
    }
}

/// What one end of a conversion holds, decided once, from the location and
/// its extension, before anything is read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Zarr,
    Table(ExportFormat),
    Linear(linear::Kind),
}

impl Format {
    fn of(location: &Location) -> Self {
        match location.file_format() {
            FileFormat::Table(format) => Self::Table(format),
            FileFormat::Json => Self::Linear(linear::Kind::Json),
            FileFormat::Csv => Self::Linear(linear::Kind::Csv),
            // `FileFormat` is non-exhaustive: anything else is a store.
            _ => Self::Zarr,
        }
    }

    /// An input's format: a URL or a supplied store is Zarr; a local path a
    /// Zarr directory or a file by its extension (`None`: neither).
    fn input(src: &Location) -> Result<Option<Self>> {
        let Some(path) = src.as_path() else {
            return Ok(Some(Self::Zarr));
        };
        if path.is_dir() {
            return Ok(Some(Self::Zarr));
        }
        if !path.exists() {
            return Err(Error::Location {
                location: src.to_string(),
                reason: LocationError::Missing,
            });
        }
        // A file: by its extension (a file that is no table is no store either).
        Ok(Some(Self::of(src)).filter(|format| *format != Self::Zarr))
    }

    /// An output's format: a file by its extension, else a Zarr store.
    fn output(dst: &Location) -> Self {
        Self::of(dst)
    }
}

/// One conversion's input, output, options and observer.
struct Job<'a> {
    src: &'a Location,
    dst: &'a Location,
    /// Where the work runs: how the ends' stores are opened, how chunks are
    /// decoded.
    context: &'a ExecutionContext,
    options: &'a ConvertOptions,
    observer: &'a dyn Observer,
}

impl Job<'_> {
    /// Whether an existing output is replaced: the conversion's `overwrite`,
    /// or the write options' `mode` overwrite.
    fn overwrites(&self) -> bool {
        self.overwrite || self.write.overwrites()
    }

    /// The Zarr input, through its consolidated metadata when it has some.
    fn open_src(&self) -> Result<Arc<dyn Store>> {
        if !self.mmap {
            return self.context.stores().open_consolidated(self.src);
        }
        let Some(path) = self.src.local_dir()? else {
            return Err(Error::OptionNotApplicable {
                options: vec!["--mmap"],
                applies_to: "local stores only",
            });
        };
        // SAFETY: `new_memory_mapped` requires that no file under `path` be
        // truncated or modified in place while a buffer read from it is alive.
        // `mmap` is set only through the unsafe `ConvertOptions::with_mmap`,
        // whose caller promised exactly that; zarrow itself writes its output
        // by rename, which leaves existing mappings intact, even were the
        // output inside the store.
        Consolidated::open(Arc::new(unsafe { LocalStore::new_memory_mapped(path) }))
    }

    /// The local path of a file input (the dispatch made sure it is one).
    fn src_path(&self) -> &Path {
        self.src.as_path().unwrap_or(Path::new(""))
    }

    /// The local path of a file output (the dispatch made sure it is one).
    fn dst_path(&self) -> &Path {
        self.dst.as_path().unwrap_or(Path::new(""))
    }

    /// Write the Zarr output through `write` (see [`Stores::write_zarr`](crate::Stores::write_zarr)).
    fn write_dst(&self, write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>) -> Result<u64> {
        self.context
            .stores()
            .write_zarr(self.dst, self.overwrite, &self.write, write)
    }

    /// Write `reader` to the table file output, whole or not at all (see
    /// [`write_atomic`](crate::write::output::write_atomic)).
    fn write_table(&self, reader: impl RecordBatchReader, format: ExportFormat) -> Result<Written> {
        let compression = self.export.compression;
        let rows = crate::write::output::write_atomic(self.dst_path(), self.overwrites(), |out| {
            crate::export::write_file(reader, out, format, compression)
        })?;
        Ok(Written::Rows(rows))
    }

    /// `reason` as the error of this conversion.
    fn refuse(&self, reason: Conversion) -> Error {
        Error::UnsupportedConversion {
            path: self.src.to_string(),
            reason,
        }
    }

    /// The error of an output whose extension names no format.
    fn unknown_output(&self) -> Error {
        Error::UnknownFormat {
            path: self.dst.to_string(),
            expected: ".parquet, .arrow/.ipc/.feather (IPC file), .arrows (IPC stream), .json or .csv",
        }
    }
}

impl Deref for Job<'_> {
    type Target = ConvertOptions;

    fn deref(&self) -> &ConvertOptions {
        self.options
    }
}

/// Convert `src` to `dst`, writing `dst` whole or not at all. The format of
/// each end is decided here, once, by what it is and its extension (see the
/// module docs); either end may be a store the caller opened
/// ([`Location::Store`]): a Zarr input read from it, or a Zarr output written
/// into it (its keys replaced only with `overwrite`, and only if it holds a
/// Zarr store). The work runs as `context` says: URLs opened through its
/// stores, with their options, on their runtime (a front end's own, lent:
/// [`Stores::with_runtime`](crate::Stores::with_runtime)); chunks decoded as it says.
///
/// # Errors
/// [`Error::UnsupportedConversion`] and [`Error::UnknownFormat`] for ends
/// zarrow converts nothing between;
/// [`Error::Location`] for a missing input; options that do not apply, an
/// existing `dst` without `overwrite`, the limits, and every read and write
/// error.
pub fn convert(
    src: &Location,
    dst: &Location,
    options: &ConvertOptions,
    context: &ExecutionContext,
    observer: &dyn Observer,
) -> Result<Written> {
    // `mode` agrees with the conversion's `overwrite` and with `append`.
    options.write.write_mode(options.overwrite)?;
    let job = Job {
        src,
        dst,
        context,
        options,
        observer,
    };
    let Some(from) = Format::input(src)? else {
        return Err(job.refuse(Conversion::UnknownInput));
    };
    let to = Format::output(dst);
    let file_output = matches!(to, Format::Table(_) | Format::Linear(_));
    if file_output && !dst.is_local() {
        return Err(Error::Location {
            location: dst.to_string(),
            reason: LocationError::RemoteFile,
        });
    }
    let table_output = || Error::UnsupportedConversion {
        path: dst.to_string(),
        reason: Conversion::TableFileAsZarr,
    };
    match (from, to) {
        (Format::Zarr, Format::Zarr) if !dst.is_local() || !src.is_local() => {
            Err(job.refuse(Conversion::BothZarr {
                dst: dst.to_string(),
            }))
        }
        (Format::Zarr, Format::Zarr) => Err(job.unknown_output()),
        (Format::Zarr, Format::Table(format)) => from_zarr::convert(&job, format),
        (Format::Zarr, Format::Linear(kind)) => linear::export(&job, kind),
        (Format::Table(format), Format::Zarr) => to_zarr::convert(&job, format),
        (Format::Table(_), _) | (Format::Linear(_), Format::Linear(_)) => Err(table_output()),
        (Format::Linear(linear::Kind::Csv), Format::Table(_)) => {
            Err(job.refuse(Conversion::CsvToTable))
        }
        (Format::Linear(kind), Format::Zarr) => linear::import(&job, kind, None),
        (Format::Linear(kind), Format::Table(format)) => linear::import(&job, kind, Some(format)),
    }
}

/// Record chunk statistics (`zarrow.stats`, see docs/formats.md) for every
/// 1-D array at `location`: an array, or a group and every group under it,
/// as something else (anndata, xarray, zarr-python) wrote them. One pass,
/// chunk by chunk, under the store's writer lock; `observer` wraps each
/// array's reader (a progress bar). Returns the arrays described.
///
/// # Errors
/// A read-only store (plain HTTP): [`Error::UnsupportedConversion`]; another
/// writer holding the store past the lock timeout: [`Error::Busy`]; reading
/// an array; storing its statistics.
pub fn record_stats(
    location: &Location,
    context: &ExecutionContext,
    observer: &dyn Observer,
) -> Result<Written> {
    if let Location::Url(url) = location
        && url.cloud() == crate::location::Cloud::Http
    {
        return Err(Error::UnsupportedConversion {
            path: location.to_string(),
            reason: Conversion::ReadOnlyStats,
        });
    }
    #[cfg(feature = "icechunk")]
    if let Location::Icechunk(icechunk) = location {
        // One commit on the branch, its properties the statistics.
        return context
            .stores()
            .commit_icechunk_stats(icechunk, |store| record_stats_in(store, observer));
    }
    let store = context.stores().open(location)?;
    let _lock = store.lock(crate::write::DEFAULT_LOCK_TIMEOUT)?;
    record_stats_in(store, observer)
}

/// [`record_stats`] in `store`, whose root is the node.
fn record_stats_in(store: Arc<dyn Store>, observer: &dyn Observer) -> Result<Written> {
    let (mut arrays, mut others) = (Vec::new(), Vec::new());
    one_d_arrays(store.as_ref(), "", &mut arrays, &mut others)?;
    for path in &others {
        observer.note(&format!(
            "{}: no statistics (an N-d array: zarrow records them for 1-D arrays)",
            crate::store::node_label(store.as_ref(), path)
        ));
    }
    let wrap = |reader, rows| observer.reader(reader, Some(rows));
    let mut described = 0;
    for path in &arrays {
        if stats::record(store.clone(), path, &wrap)? > 0 {
            described += 1;
        } else {
            observer.note(&format!(
                "{}: no statistics (an array of a type zarrow records none for)",
                crate::store::node_label(store.as_ref(), path)
            ));
        }
    }
    Ok(Written::Arrays(described))
}

/// The paths of the 1-D arrays at `path` and below (`out`), and of the
/// other arrays (`others`).
fn one_d_arrays(
    store: &dyn Store,
    path: &str,
    out: &mut Vec<String>,
    others: &mut Vec<String>,
) -> Result<()> {
    match crate::read_node(store, path)? {
        crate::NodeMetadata::Array(meta) if meta.shape.len() == 1 => out.push(path.to_string()),
        crate::NodeMetadata::Array(_) => others.push(path.to_string()),
        crate::NodeMetadata::Group(_) => {
            for child in store.list_children(path)? {
                let child = crate::store::join_key(path, &child);
                // A directory without Zarr metadata is no node of the hierarchy.
                if crate::read::Node::read(store, &child).is_ok() {
                    one_d_arrays(store, &child, out, others)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use parquet::basic::{Compression, GzipLevel};

    use super::*;
    use crate::StringType;
    use crate::options::Options as _;
    use crate::write::{Encoding, Layout, NullPolicy};

    /// Each key sets the field of the options type that owns it, parsed as the
    /// command line parses its flag.
    #[test]
    fn set_routes_each_key_to_its_options() {
        let mut o = ConvertOptions::default();
        for (key, value) in [
            ("overwrite", "true"),
            ("string_type", "large-utf8"),
            ("max_chunk_bytes", "1M"),
            ("decode_cf", "false"),
            ("categorical_values", "yes"),
            ("limit", "10"),
            ("long", "1"),
            ("max_rows", "5"),
            ("max_bytes", "2G"),
            ("compression", "gzip(6)"),
            ("zarr_format", "2"),
            ("encoding", "zep0007"),
            ("nulls", "fill"),
            ("layout", "anndata"),
            ("append", "true"),
            ("lock_timeout", "1.5"),
            ("rows", "3..9"),
            ("columns", "a,b"),
            ("chunk_shape", "4,5"),
        ] {
            o.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        assert!(o.overwrite);
        assert_eq!(o.read.string_type, Some(StringType::LargeUtf8));
        assert_eq!(o.read.max_chunk_bytes, 1 << 20);
        assert!(!o.read.decode_cf && o.read.categorical_values);
        assert_eq!((o.select.limit, o.select.long), (Some(10), true));
        assert_eq!(o.select.rows, Some(3..9));
        assert_eq!(o.select.columns, Some(vec!["a".into(), "b".into()]));
        assert_eq!(o.write.chunk_shape, Some(vec![4, 5]));
        assert_eq!((o.limits.max_rows, o.limits.max_bytes), (5, 2 << 30));
        assert_eq!(
            o.export.compression,
            Compression::GZIP(GzipLevel::try_new(6).unwrap())
        );
        let w = &o.write;
        assert_eq!((w.zarr_format, w.encoding), (2, Encoding::Zep0007));
        assert_eq!((w.nulls, w.layout), (NullPolicy::Fill, Layout::AnnData));
        assert!(w.append);
        assert_eq!(w.lock_timeout, std::time::Duration::from_millis(1500));
        // An unknown key and a bad value name themselves.
        let e = o.set("compresion", "zstd").unwrap_err().to_string();
        assert!(e.contains("compresion") && e.contains("compressor"), "{e}");
        let e = o.set("limit", "ten").unwrap_err().to_string();
        assert!(e.contains("limit") && e.contains("ten"), "{e}");
        let e = o.set("string_type", "utf16").unwrap_err().to_string();
        assert!(e.contains("utf16") && e.contains("utf8-view"), "{e}");
    }

    /// The format of each end is decided once, before anything is read or
    /// written, and pairs that make no conversion are refused by kind.
    #[test]
    fn ends_are_decided_before_anything_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let loc = |s: &str| Location::parse(s).unwrap();
        let obs = loc("testdata/stores/obs.zarr");
        let table = dir.path().join("t.parquet");
        std::fs::write(&table, b"not read").unwrap();
        let table = Location::Path(table);
        let run = |src: &Location, dst: &Location| {
            convert(
                src,
                dst,
                &ConvertOptions::default(),
                &ExecutionContext::default(),
                &Quiet,
            )
            .unwrap_err()
        };
        let reason = |src: &Location, dst: &Location| match run(src, dst) {
            Error::UnsupportedConversion { reason, .. } => reason,
            other => panic!("{src} -> {dst}: {other:?}"),
        };
        // A file output on an object store: refused before any request.
        assert!(matches!(
            run(&obs, &loc("s3://bucket/out.parquet")),
            Error::Location {
                reason: LocationError::RemoteFile,
                ..
            }
        ));
        assert!(matches!(
            reason(&obs, &loc("s3://bucket/out.zarr")),
            Conversion::BothZarr { .. }
        ));
        let out = Location::Path(dir.path().join("out.zarr"));
        assert!(matches!(run(&obs, &out), Error::UnknownFormat { .. }));
        assert_eq!(
            reason(&table, &Location::Path(dir.path().join("u.arrow"))),
            Conversion::TableFileAsZarr
        );
        let csv = dir.path().join("t.csv");
        std::fs::write(&csv, b"").unwrap();
        assert_eq!(
            reason(
                &Location::Path(csv),
                &Location::Path(dir.path().join("u.parquet"))
            ),
            Conversion::CsvToTable
        );
        let odd = dir.path().join("t.txt");
        std::fs::write(&odd, b"").unwrap();
        assert_eq!(reason(&Location::Path(odd), &out), Conversion::UnknownInput);
        // A missing input is the location's error.
        let missing = run(
            &Location::Path(dir.path().join("nope.zarr")),
            &Location::Path(dir.path().join("o.parquet")),
        );
        assert!(matches!(
            missing,
            Error::Location {
                reason: LocationError::Missing,
                ..
            }
        ));
        // Nothing was written.
        assert!(!dir.path().join("out.zarr").exists());
        assert!(!dir.path().join("o.parquet").exists());
    }
}
