//! Export any [`RecordBatchReader`] to Arrow IPC (file or stream) or Parquet,
//! streaming: one batch in memory at a time (plus the Parquet row group being
//! built).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportFormat {
    /// Apache Parquet.
    Parquet,
    /// Arrow IPC file format (Feather v2).
    IpcFile,
    /// Arrow IPC stream format.
    IpcStream,
}

impl ExportFormat {
    /// The format a file extension names: `.parquet`; `.arrow`, `.ipc`, `.feather`
    /// (IPC file); `.arrows` (IPC stream).
    pub fn from_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "parquet" | "pq" => Some(Self::Parquet),
            "arrow" | "ipc" | "feather" => Some(Self::IpcFile),
            "arrows" => Some(Self::IpcStream),
            _ => None,
        }
    }
}

/// The encoded size at which [`write_parquet`] closes a row group (16 MiB): it
/// bounds the writer's memory whatever the input's length.
pub const ROW_GROUP_BYTES: usize = 16 << 20;

/// The default Parquet compression: zstd at level 3.
pub const DEFAULT_PARQUET_COMPRESSION: &str = "zstd";

/// Parse a Parquet compression name: `zstd`, `zstd:LEVEL`, `snappy`, `gzip`, `lz4`,
/// `none`.
pub fn parse_parquet_compression(name: &str) -> Result<Compression> {
    let (codec, level) = match name.split_once(':') {
        Some((c, l)) => (c, Some(l)),
        None => (name, None),
    };
    let bad = || {
        Error::InvalidArgument(format!(
            "unknown Parquet compression {name:?} (zstd[:LEVEL], snappy, gzip, lz4, none)"
        ))
    };
    Ok(match (codec, level) {
        ("zstd", None) => Compression::ZSTD(ZstdLevel::default()),
        ("zstd", Some(l)) => {
            let level = l.parse().map_err(|_| bad())?;
            Compression::ZSTD(ZstdLevel::try_new(level).map_err(|_| bad())?)
        }
        ("snappy", None) => Compression::SNAPPY,
        ("gzip", None) => Compression::GZIP(Default::default()),
        ("lz4", None) => Compression::LZ4_RAW,
        ("none" | "uncompressed", None) => Compression::UNCOMPRESSED,
        _ => return Err(bad()),
    })
}

/// Hand every batch of `reader` to `write`; the rows written.
fn each_batch<R: RecordBatchReader>(
    reader: R,
    mut write: impl FnMut(&RecordBatch) -> Result<()>,
) -> Result<u64> {
    let mut rows = 0;
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        write(&batch)?;
    }
    Ok(rows)
}

/// Write every batch of `reader` as an Arrow IPC file. Returns the rows written.
pub fn write_ipc_file<R: RecordBatchReader, W: Write>(reader: R, writer: W) -> Result<u64> {
    let schema = reader.schema();
    let mut w = FileWriter::try_new_with_options(writer, &schema, IpcWriteOptions::default())?;
    let rows = each_batch(reader, |batch| Ok(w.write(batch)?))?;
    w.finish()?;
    Ok(rows)
}

/// Write every batch of `reader` as an Arrow IPC stream. Returns the rows written.
pub fn write_ipc_stream<R: RecordBatchReader, W: Write>(reader: R, writer: W) -> Result<u64> {
    let schema = reader.schema();
    let mut w = StreamWriter::try_new_with_options(writer, &schema, IpcWriteOptions::default())?;
    let rows = each_batch(reader, |batch| Ok(w.write(batch)?))?;
    w.finish()?;
    Ok(rows)
}

/// Write every batch of `reader` as Parquet with `compression`. The Arrow schema is
/// stored in the file, so view and large types come back as they were.
pub fn write_parquet<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
    compression: Compression,
) -> Result<u64> {
    let schema = reader.schema();
    let props = WriterProperties::builder()
        .set_compression(compression)
        .build();
    let mut w = ArrowWriter::try_new(writer, schema, Some(props))?;
    // A row group is flushed once its encoded pages reach ROW_GROUP_BYTES, so the
    // writer holds at most that much, however long the input.
    let rows = each_batch(reader, |batch| {
        w.write(batch)?;
        if w.in_progress_size() >= ROW_GROUP_BYTES {
            w.flush()?;
        }
        Ok(())
    })?;
    w.close()?;
    Ok(rows)
}

/// Write `reader` to `path` in `format`. The file appears only when complete: it
/// is written beside `path` under a temporary name and renamed at the end, so a
/// failed export leaves nothing behind.
pub fn export_to_path<R: RecordBatchReader>(
    reader: R,
    path: &Path,
    format: ExportFormat,
    parquet_compression: Compression,
) -> Result<u64> {
    let temp = temp_path(path);
    let result = (|| {
        let file = File::create(&temp).map_err(|e| Error::io(&temp, e))?;
        let rows = write_file(reader, file, &temp, format, parquet_compression)?;
        std::fs::rename(&temp, path).map_err(|e| Error::io(path, e))?;
        Ok(rows)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Write `reader` in `format` to `file` (at `path`, for error messages), buffered,
/// and flush it to disk: the rows written.
pub fn write_file<R: RecordBatchReader>(
    reader: R,
    file: File,
    path: &Path,
    format: ExportFormat,
    parquet_compression: Compression,
) -> Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let rows = match format {
        ExportFormat::Parquet => write_parquet(reader, &mut out, parquet_compression)?,
        ExportFormat::IpcFile => write_ipc_file(reader, &mut out)?,
        ExportFormat::IpcStream => write_ipc_stream(reader, &mut out)?,
    };
    let file = out
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    file.sync_all().map_err(|e| Error::io(path, e))?;
    Ok(rows)
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}
