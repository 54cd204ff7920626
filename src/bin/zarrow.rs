//! The `zarrow` command line: `info` and `convert`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use zarrow::export::{
    DEFAULT_PARQUET_COMPRESSION, ExportFormat, export_to_path, parse_parquet_compression,
};
use zarrow::{
    Error, LocalStore, NodeMetadata, ReadOptions, Result, Store, StringType, ZarrArray, ZarrGroup,
    read_node,
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
        /// A Zarr array or group directory.
        path: PathBuf,
        /// The Arrow string layout to report: utf8, large-utf8 or utf8-view.
        #[arg(long, default_value = "utf8", value_parser = parse_string_type)]
        string_type: StringType,
    },
    /// Convert a Zarr array or group to Parquet or Arrow IPC.
    ///
    /// DST's extension picks the format: .parquet; .arrow, .ipc, .feather (IPC
    /// file); .arrows (IPC stream). A group becomes a table with one column per
    /// 1-D array; an N-d array is flattened in C order.
    Convert {
        /// A Zarr array or group directory.
        src: PathBuf,
        /// The output file.
        dst: PathBuf,
        /// Arrow layout of string and bytes columns: utf8, large-utf8 or utf8-view.
        #[arg(long, default_value = "utf8", value_parser = parse_string_type)]
        string_type: StringType,
        /// Parquet compression: zstd[:LEVEL], snappy, gzip, lz4 or none.
        #[arg(long, default_value = DEFAULT_PARQUET_COMPRESSION)]
        compression: String,
        /// For a group: the columns to convert, comma-separated (default: every 1-D array).
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Replace DST if it exists.
        #[arg(long)]
        overwrite: bool,
    },
}

fn parse_string_type(s: &str) -> std::result::Result<StringType, String> {
    StringType::parse(s)
        .ok_or_else(|| format!("unknown string type {s:?} (utf8, large-utf8, utf8-view)"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { path, string_type } => info(&path, string_type),
        Command::Convert {
            src,
            dst,
            string_type,
            compression,
            columns,
            overwrite,
        } => convert(&src, &dst, string_type, &compression, columns, overwrite),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                let text = s.to_string();
                if !message.contains(&text) {
                    message.push_str(": ");
                    message.push_str(&text);
                }
                source = s.source();
            }
            let _ = writeln!(std::io::stderr(), "zarrow: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The column name of a root array: its directory name without `.zarr`.
fn store_name(path: &Path) -> String {
    let name = path
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "values".into());
    name.strip_suffix(".zarr").unwrap_or(&name).to_string()
}

fn open_store(path: &Path) -> Result<Arc<dyn Store>> {
    if !path.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a Zarr array or group directory",
            path.display()
        )));
    }
    Ok(Arc::new(LocalStore::new(path)))
}

fn info(path: &Path, string_type: StringType) -> Result<()> {
    let text = describe(path, string_type)?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A closed pipe (`zarrow info ... | head`) is the reader's choice, not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::InvalidArgument(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// The `info` report for the node at `path`.
fn describe(path: &Path, string_type: StringType) -> Result<String> {
    let store = open_store(path)?;
    let options = ReadOptions::default().with_string_type(string_type);
    let mut out = String::new();
    match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            let array =
                ZarrArray::open_with(store, "", options)?.with_column_name(store_name(path));
            describe_array(&mut out, &array, "")?;
        }
        NodeMetadata::Group(meta) => {
            let group = ZarrGroup::open_with(store.clone(), "", options)?;
            let children = group.children()?;
            let _ = writeln!(out, "node:          group (Zarr v{})", meta.zarr_format);
            let _ = writeln!(out, "attributes:    {}", meta.attributes.len());
            let _ = writeln!(out, "children:      {}", children.len());
            for (name, node) in children {
                let _ = writeln!(out, "\n{name}/");
                match node {
                    NodeMetadata::Array(_) => {
                        let array = ZarrArray::open_with(store.clone(), &name, options)?;
                        describe_array(&mut out, &array, "  ")?;
                    }
                    NodeMetadata::Group(g) => {
                        let _ = writeln!(out, "  node:          group (Zarr v{})", g.zarr_format);
                    }
                }
            }
            let columns = group.columns()?;
            let lens: std::collections::BTreeSet<u64> =
                columns.iter().map(ZarrArray::len).collect();
            let table = match (columns.len(), lens.len()) {
                (0, _) => "none (no 1-D arrays)".to_string(),
                (n, 1) => format!("{n} columns x {} rows", lens.first().copied().unwrap_or(0)),
                (n, _) => format!("{n} 1-D arrays of different lengths (convert with --columns)"),
            };
            let _ = writeln!(out, "\ntable:         {table}");
        }
    }
    Ok(out)
}

fn describe_array(out: &mut String, array: &ZarrArray, indent: &str) -> Result<()> {
    let m = array.metadata();
    let present = array.chunks_present()?;
    let _ = writeln!(
        out,
        "{indent}node:          array (Zarr v{})",
        m.zarr_format
    );
    let _ = writeln!(out, "{indent}shape:         {:?}", m.shape);
    let _ = writeln!(out, "{indent}chunk shape:   {:?}", m.chunk_shape);
    let _ = writeln!(out, "{indent}data type:     {}", m.data_type.zarr_name());
    let _ = writeln!(
        out,
        "{indent}fill value:    {}",
        m.fill_value.describe(&m.data_type)
    );
    let _ = writeln!(out, "{indent}chunk keys:    {}", m.chunk_key_encoding);
    let _ = writeln!(out, "{indent}codecs:        {}", m.codecs);
    let _ = writeln!(out, "{indent}arrow type:    {}", array.arrow_type());
    let _ = writeln!(
        out,
        "{indent}chunks:        {present} of {} present",
        array.grid().num_chunks()
    );
    Ok(())
}

fn convert(
    src: &Path,
    dst: &Path,
    string_type: StringType,
    compression: &str,
    columns: Option<Vec<String>>,
    overwrite: bool,
) -> Result<()> {
    let format = ExportFormat::from_path(dst).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "cannot tell the output format of {}: use .parquet, .arrow/.ipc/.feather (IPC file) or .arrows (IPC stream)",
            dst.display()
        ))
    })?;
    if dst.exists() && !overwrite {
        return Err(Error::InvalidArgument(format!(
            "{} exists (pass --overwrite to replace it)",
            dst.display()
        )));
    }
    let compression = parse_parquet_compression(compression)?;
    let store = open_store(src)?;
    let options = ReadOptions::default().with_string_type(string_type);
    let reader: Box<dyn RecordBatchReader + Send> = match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            if columns.is_some() {
                return Err(Error::InvalidArgument(
                    "--columns applies to groups only".into(),
                ));
            }
            let array = ZarrArray::open_with(store, "", options)?.with_column_name(store_name(src));
            let total = array.len();
            Box::new(Progress::new(array.batches(), total))
        }
        NodeMetadata::Group(_) => {
            let mut builder = ZarrGroup::open_with(store, "", options)?.reader();
            if let Some(columns) = columns {
                builder = builder.with_projection(columns);
            }
            let reader = builder.build()?;
            let total = reader.total_rows();
            Box::new(Progress::new(reader, total))
        }
    };
    let rows = export_to_path(reader, dst, format, compression)?;
    let _ = writeln!(
        std::io::stderr(),
        "zarrow: wrote {rows} rows to {}",
        dst.display()
    );
    Ok(())
}

/// Counts rows through a progress bar on stderr (hidden when stderr is not a terminal).
struct Progress<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: RecordBatchReader> Progress<R> {
    fn new(inner: R, total_rows: u64) -> Self {
        let bar = ProgressBar::new(total_rows);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self { inner, bar }
    }
}

impl<R: RecordBatchReader> Iterator for Progress<R> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        match &item {
            Some(Ok(batch)) => self.bar.inc(batch.num_rows() as u64),
            _ => self.bar.finish_and_clear(),
        }
        item
    }
}

impl<R: RecordBatchReader> RecordBatchReader for Progress<R> {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
