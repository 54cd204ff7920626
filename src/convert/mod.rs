//! `zarrow convert` as a library function: the command line and the Python
//! package's `zarrow.convert` run this one implementation.
//!
//! - a Zarr store (directory or URL) to a table file: `.parquet`; `.arrow`, `.ipc`,
//!   `.feather` (IPC file); `.arrows` (IPC stream) (`from_zarr.rs`);
//! - a table file to a Zarr group, one 1-D array per column (`to_zarr.rs`);
//! - the stdlib linear exchange format: a Zarr array to `.json`, a group (or an
//!   array) to `.csv`, and back (`linear.rs`).
//!
//! Outputs appear whole or not at all (`output.rs`); conversions from Zarr are
//! bounded before anything is read (`limits.rs`).
//!
//! Needs the `convert` feature (its atomic directory replacement uses `rustix`).

mod from_zarr;
pub mod limits;
mod linear;
pub mod output;
mod to_zarr;

use std::borrow::Cow;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatchReader;

pub use self::limits::Limits;
use crate::ReadOptions;
use crate::error::{Error, Result};
pub use crate::export::ExportOptions;
use crate::export::parse_parquet_compression;
use crate::store::{
    Consolidated, LocalStore, Store, UrlOptions, file_url_path, is_url, open_location,
};
use crate::write::WriteOptions;

/// The options of one conversion (the `zarrow convert` flags), composed of the
/// options each side takes: how Zarr is read ([`ReadOptions`]) and which part
/// ([`Selection`]), within which bounds ([`Limits`]), how a table file is written
/// ([`ExportOptions`]), how Zarr is written ([`WriteOptions`]) and how a store
/// named by URL is opened ([`UrlOptions`]). Options of the other direction are
/// refused where they would be ignored.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ConvertOptions {
    /// How a store named by URL is opened.
    pub url: UrlOptions,
    /// Replace the output if it exists (a Zarr output only if it is a Zarr store).
    pub overwrite: bool,
    /// Memory-map local chunk files (see [`with_mmap`](Self::with_mmap)).
    mmap: bool,
    /// [from Zarr] How the input is read: its `string_type` (default: as
    /// zarrow's writer recorded it, else utf8), `max_chunk_bytes`, `decode_cf`,
    /// `categorical_values`.
    pub read: ReadOptions,
    /// [from Zarr to a table] Which columns and rows.
    pub select: Selection,
    /// [from Zarr] The bounds on the input.
    pub limits: Limits,
    /// [to a table] How a table file is written.
    pub export: ExportOptions,
    /// [to Zarr] How Zarr is written, `append` and `lock_timeout` included.
    pub write: WriteOptions,
}

/// [from Zarr to a table] Which part of the input a conversion reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// Of a group, these columns.
    pub columns: Option<Vec<String>>,
    /// Only these rows (of 1-D arrays).
    pub rows: Option<Range<u64>>,
    /// At most this many rows (after `rows`).
    pub limit: Option<u64>,
    /// Read a gridded dataset as a long table.
    pub long: bool,
}

impl Selection {
    /// Whether anything is selected (a table input takes no selection).
    fn is_given(&self) -> bool {
        *self != Self::default()
    }
}

impl ConvertOptions {
    /// The keys [`ConvertOptions::set`] takes besides [`WriteOptions::KEYS`].
    pub const KEYS: &[&str] = &[
        "overwrite",
        "string_type",
        "max_chunk_bytes",
        "decode_cf",
        "categorical_values",
        "limit",
        "long",
        "max_rows",
        "max_bytes",
        "compression",
        "anonymous",
    ];

    /// The options that are lists, set through their fields: [`Selection`]'s
    /// `columns` and `rows`, [`WriteOptions`]' `chunk_shape` and `shard_shape`.
    pub const LIST_KEYS: &[&str] = &["columns", "rows", "chunk_shape", "shard_shape"];

    /// Set one option by its name (a `zarrow convert` flag without the dashes, or
    /// a write option: [`WriteOptions::set`]) from its text: the keys Python's
    /// keywords and DataFusion's `OPTIONS` pass. `columns`, `rows`, `chunk_shape`
    /// and `shard_shape` are lists: set their fields.
    ///
    /// # Errors
    /// [`Error::Option`] / [`Error::InvalidArgument`] naming the key and what it
    /// takes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = |takes: &str| {
            Error::InvalidArgument(format!("convert option {key} = {value:?}: {takes}"))
        };
        let flag = || crate::write::parse_flag(value).ok_or_else(|| bad("true or false"));
        let number = || value.trim().parse::<u64>().map_err(|_| bad("a number"));
        match key {
            "overwrite" => self.overwrite = flag()?,
            "string_type" => self.read.string_type = Some(value.parse()?),
            "max_chunk_bytes" => {
                let bytes = limits::parse_size(value)?;
                self.read.max_chunk_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            }
            "decode_cf" => self.read.decode_cf = flag()?,
            "categorical_values" => self.read.categorical_values = flag()?,
            "limit" => self.select.limit = Some(number()?),
            "long" => self.select.long = flag()?,
            "max_rows" => self.limits.max_rows = number()?,
            "max_bytes" => self.limits.max_bytes = limits::parse_size(value)?,
            "compression" => self.export.compression = parse_parquet_compression(value)?,
            "anonymous" => self.url.anonymous = flag()?,
            _ if WriteOptions::KEYS.contains(&key) => self.write.set(key, value)?,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown convert option {key:?} ({}, {})",
                    Self::KEYS.join(", "),
                    WriteOptions::KEYS.join(", ")
                )));
            }
        }
        Ok(())
    }

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

/// One end of a conversion: a path or URL, or a store the caller opened (an
/// obstore store from Python, say), its Zarr node at the store's root.
#[derive(Debug, Clone)]
pub enum End<'a> {
    /// A file, a directory or a URL (see [`convert`]).
    Path(&'a Path),
    /// A Zarr node at the root of `store`; `name` names it in messages and
    /// gives a root array's column its name (as a path's last segment does).
    Store {
        /// The store, not read through consolidated metadata (the conversion
        /// does that where the store has it).
        store: Arc<dyn Store>,
        /// What the store is called.
        name: &'a Path,
    },
}

impl<'a> End<'a> {
    fn name(&self) -> &'a Path {
        match self {
            Self::Path(path) | Self::Store { name: path, .. } => path,
        }
    }

    fn store(&self) -> Option<Arc<dyn Store>> {
        match self {
            Self::Path(_) => None,
            Self::Store { store, .. } => Some(store.clone()),
        }
    }
}

/// One conversion's input, output, options and observer.
struct Job<'a> {
    src: &'a Path,
    dst: &'a Path,
    /// The Zarr input's store, when the caller opened it.
    src_store: Option<Arc<dyn Store>>,
    /// The Zarr output's store, when the caller opened it.
    dst_store: Option<Arc<dyn Store>>,
    options: &'a ConvertOptions,
    observer: &'a dyn Observer,
}

impl Job<'_> {
    /// The Zarr input, through its consolidated metadata when it has some.
    fn open_src(&self) -> Result<Arc<dyn Store>> {
        match &self.src_store {
            Some(_) if self.mmap => Err(Error::InvalidArgument(
                "--mmap applies to local stores only".into(),
            )),
            Some(store) => Consolidated::open(store.clone()),
            None => open_store(self.src, self.mmap, &self.url),
        }
    }

    /// Write the Zarr output through `write` (see [`write_zarr`]).
    fn write_dst(&self, write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>) -> Result<u64> {
        let dst = match &self.dst_store {
            Some(store) => End::Store {
                store: store.clone(),
                name: self.dst,
            },
            None => End::Path(self.dst),
        };
        write_zarr(dst, self.overwrite, self.write.append, &self.url, write)
    }
}

impl Deref for Job<'_> {
    type Target = ConvertOptions;

    fn deref(&self) -> &ConvertOptions {
        self.options
    }
}

/// Convert `src` to `dst` (the format of each told by what it is and its
/// extension; see the module docs), writing `dst` whole or not at all.
///
/// # Errors
/// An input or output zarrow cannot tell the format of, options that do not apply,
/// an existing `dst` without `overwrite`, the limits, and every read and write
/// error.
pub fn convert(
    src: &Path,
    dst: &Path,
    options: &ConvertOptions,
    observer: &dyn Observer,
) -> Result<Written> {
    convert_ends(End::Path(src), End::Path(dst), options, observer)
}

/// [`convert`], either end of which may be a store the caller opened: a Zarr
/// input read from it, or a Zarr output written into it (its keys replaced
/// only with `overwrite`, and only if it holds a Zarr store).
///
/// # Errors
/// As [`convert`]; both ends stores (Zarr to Zarr is no conversion); a store
/// output of an input that is not a table or linear-format file.
pub fn convert_ends(
    src: End<'_>,
    dst: End<'_>,
    options: &ConvertOptions,
    observer: &dyn Observer,
) -> Result<Written> {
    let (src_store, dst_store) = (src.store(), dst.store());
    let (src, dst) = (local(src.name())?, local(dst.name())?);
    let (src, dst) = (src.as_ref(), dst.as_ref());
    let args = Job {
        src,
        dst,
        src_store,
        dst_store,
        options,
        observer,
    };
    match (&args.src_store, &args.dst_store) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidArgument(format!(
                "{} and {} are both Zarr stores: zarrow converts Zarr to a table file or a table file to Zarr",
                src.display(),
                dst.display()
            )));
        }
        (Some(_), None) => {
            return match linear::kind(dst) {
                Some(kind) => linear::export(&args, kind),
                None => from_zarr::convert(&args),
            };
        }
        (None, Some(_)) => {
            return if let Some(kind) = linear::kind(src) {
                linear::import(&args, kind)
            } else if to_zarr::is_table_file(src) {
                to_zarr::convert(&args)
            } else {
                Err(Error::InvalidArgument(format!(
                    "{} is not a .parquet / .arrow / .ipc / .feather / .arrows / .json / .csv file: a store output is written from a table file",
                    src.display()
                )))
            };
        }
        (None, None) => {}
    }
    if is_url_path(src) {
        return match linear::kind(dst) {
            Some(kind) => linear::export(&args, kind),
            None => from_zarr::convert(&args),
        };
    }
    if !src.exists() {
        return Err(Error::InvalidArgument(format!(
            "{} does not exist",
            src.display()
        )));
    }
    if src.is_dir() {
        match linear::kind(dst) {
            Some(kind) => linear::export(&args, kind),
            None => from_zarr::convert(&args),
        }
    } else if let Some(kind) = linear::kind(src) {
        linear::import(&args, kind)
    } else if to_zarr::is_table_file(src) {
        to_zarr::convert(&args)
    } else {
        Err(Error::InvalidArgument(format!(
            "{} is neither a Zarr directory nor a .parquet / .arrow / .ipc / .feather / .arrows / .json / .csv file",
            src.display()
        )))
    }
}

/// Write a Zarr node at `dst` (a directory or URL) through `write`, as `convert`
/// writes its Zarr outputs: a directory whole or not at all; a URL with every
/// node's metadata after its chunks, and every key removed again if `write`
/// fails. An existing `dst` needs `overwrite` and must be a Zarr store.
///
/// # Errors
/// An existing `dst` without `overwrite`, or not a Zarr store; `write`'s errors.
pub fn write_store(
    dst: &Path,
    overwrite: bool,
    url: &UrlOptions,
    write: impl FnOnce(Arc<dyn Store>) -> Result<u64>,
) -> Result<u64> {
    to_zarr::write_store(&local(dst)?, overwrite, url, write)
}

/// Write a Zarr node at `dst` through `write`, which is given the store and
/// the node's path in it: whole or not at all (see [`write_store`] and
/// [`write_into_store`]: an existing output is replaced only with
/// `overwrite`); with `append`, in place (the writer keeps a reader's view
/// whole), at the node [`open_for_append`] finds for a path, at a store's root.
/// What `zarrow convert`, `zarrow.write` and DataFusion's COPY and INSERT write
/// a Zarr output through.
///
/// # Errors
/// As [`write_store`], [`write_into_store`] and [`open_for_append`]; `write`'s
/// errors.
pub fn write_zarr(
    dst: End<'_>,
    overwrite: bool,
    append: bool,
    url: &UrlOptions,
    write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>,
) -> Result<u64> {
    if append {
        let (store, node) = match dst {
            End::Store { store, .. } => (store, String::new()),
            End::Path(path) => open_for_append(path, url)?,
        };
        return write(store, &node);
    }
    let write = |store| write(store, "");
    match dst {
        End::Store { store, name } => to_zarr::replace_store(store, name, overwrite, write),
        End::Path(path) => to_zarr::write_store(&local(path)?, overwrite, url, write),
    }
}

/// Write a Zarr node into `store` (the caller's, named `name` in messages)
/// through `write`, as [`write_store`] writes to a URL: every node's metadata
/// after its chunks, and every key removed again if `write` fails. A store
/// that holds keys needs `overwrite` and must hold a Zarr store (its keys are
/// deleted first).
///
/// # Errors
/// A store with keys without `overwrite`, or with keys but no Zarr store;
/// `write`'s errors.
pub fn write_into_store(
    store: Arc<dyn Store>,
    name: &Path,
    overwrite: bool,
    write: impl FnOnce(Arc<dyn Store>) -> Result<u64>,
) -> Result<u64> {
    to_zarr::replace_store(store, name, overwrite, write)
}

/// The store to append to the group at `dst` (a directory, made when absent,
/// or a URL) in place, and the group's node path in it: `dst` inside a Zarr
/// hierarchy (a group under groups) is written as a node of the hierarchy's
/// root, so that the root's consolidated metadata grows too. What `convert`
/// with `append` writes into (see
/// [`WriteOptions::append`](crate::write::WriteOptions::append)).
///
/// # Errors
/// A URL that cannot be opened; store errors.
pub fn open_for_append(dst: &Path, url: &UrlOptions) -> Result<(Arc<dyn Store>, String)> {
    let dst = local(dst)?;
    let url_path = is_url_path(&dst);
    let open = |path: &Path| -> Result<Arc<dyn Store>> {
        if url_path {
            open_plain_store(path, false, url)
        } else {
            Ok(Arc::new(LocalStore::new(path)))
        }
    };
    let text = dst.to_string_lossy();
    let mut root = text.trim_end_matches('/').to_string();
    let mut node: Vec<String> = Vec::new();
    // Climb while the parent is a Zarr group.
    while let Some((parent, name)) = root.rsplit_once('/') {
        if parent.is_empty() || parent.ends_with(":/") || parent.ends_with("//") {
            break;
        }
        let store = open(Path::new(parent))?;
        let group = match crate::read::read_node(store.as_ref(), "") {
            Ok(crate::NodeMetadata::Group(_)) => true,
            Ok(_) | Err(Error::NodeNotFound { .. }) => false,
            // A parent that cannot be read (a bucket's root, a directory
            // without access) is no group of ours.
            Err(_) => false,
        };
        if !group {
            break;
        }
        node.insert(0, name.to_string());
        root = parent.to_string();
    }
    Ok((open(Path::new(&root))?, node.join("/")))
}

/// `path`, or the local path a `file://` URL names (see [`file_url_path`]).
fn local(path: &Path) -> Result<Cow<'_, Path>> {
    Ok(
        match path.to_str().map(file_url_path).transpose()?.flatten() {
            Some(local) => Cow::Owned(local),
            None => Cow::Borrowed(path),
        },
    )
}

/// Whether `path` is a URL opened through `object_store`.
fn is_url_path(path: &Path) -> bool {
    path.to_str().is_some_and(is_url)
}

/// The Zarr store at `path`, read through its consolidated metadata when it has
/// some, as zarr-python does.
fn open_store(path: &Path, mmap: bool, url: &UrlOptions) -> Result<Arc<dyn Store>> {
    Consolidated::open(open_plain_store(path, mmap, url)?)
}

/// The Zarr store at `path`: a URL through `object_store`, else a directory,
/// memory-mapped if `mmap`.
fn open_plain_store(path: &Path, mmap: bool, url: &UrlOptions) -> Result<Arc<dyn Store>> {
    if !mmap {
        return open_location(path, url);
    }
    if is_url_path(path) {
        return Err(Error::InvalidArgument(
            "--mmap applies to local stores only".into(),
        ));
    }
    if !path.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a Zarr array or group directory",
            path.display()
        )));
    }
    // SAFETY: `new_memory_mapped` requires that no file under `path` be truncated
    // or modified in place while a buffer read from it is alive. `mmap` is set
    // only through the unsafe `ConvertOptions::with_mmap`, whose caller promised
    // exactly that; zarrow itself writes its output by rename, which leaves
    // existing mappings intact, even were the output inside the store.
    Ok(Arc::new(unsafe { LocalStore::new_memory_mapped(path) }))
}

#[cfg(test)]
mod tests {
    use parquet::basic::{Compression, GzipLevel};

    use super::*;
    use crate::StringType;
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
            ("anonymous", "true"),
            ("zarr_format", "2"),
            ("encoding", "zep0007"),
            ("nulls", "fill"),
            ("layout", "anndata"),
            ("append", "true"),
            ("lock_timeout", "1.5"),
        ] {
            o.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        assert!(o.overwrite && o.url.anonymous);
        assert_eq!(o.read.string_type, Some(StringType::LargeUtf8));
        assert_eq!(o.read.max_chunk_bytes, 1 << 20);
        assert!(!o.read.decode_cf && o.read.categorical_values);
        assert_eq!((o.select.limit, o.select.long), (Some(10), true));
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
}
