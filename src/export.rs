//! Export any [`RecordBatchReader`] to Arrow IPC (file or stream) or Parquet,
//! streaming: one batch in memory at a time for IPC; for Parquet, the row group
//! being built, the batch being encoded (its columns in parallel on rayon's pool)
//! and the next batch, read meanwhile.

mod dictionaries;
mod parallel_parquet;

use std::borrow::Cow;
use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMillisecondType, TimestampSecondType};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_ipc::writer::{DictionaryHandling, FileWriter, IpcWriteOptions, StreamWriter};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use dictionaries::GrowingDictionaries;
use parallel_parquet::ParallelParquetWriter;

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

/// The encoded size at which [`write_parquet`] closes a row group (16 MiB): it
/// bounds the writer's memory whatever the input's length.
pub const ROW_GROUP_BYTES: usize = 16 << 20;

/// The default Parquet compression, as [`parse_parquet_compression`] spells it:
/// zstd at parquet's default level ([`ZstdLevel::default`], 1, as pyarrow's).
pub(crate) const DEFAULT_PARQUET_COMPRESSION: &str = "zstd";

/// The compression names [`parse_parquet_compression`] accepts, for messages
/// (`N`: a level, 1-22 for zstd, 0-9 for gzip).
pub(crate) const PARQUET_COMPRESSIONS: &str =
    "zstd[:N], zstd(N), gzip[(N)], snappy, lz4, lz4_raw, none, uncompressed";

crate::options::options! {
    /// How a table file is written (`zarrow convert` to `.parquet`, `.arrow`, ...).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct ExportOptions("export") {
        /// [to a table] Parquet compression: zstd, zstd:LEVEL or zstd(LEVEL)
        /// (1-22), gzip or gzip(LEVEL) (0-9), snappy, lz4 (LZ4_RAW) or none;
        /// parquet's own names (lz4_raw, uncompressed, upper case) also work
        /// (default zstd at level 1, as pyarrow writes).
        // The name is declared once; it parses (tested).
        pub compression: Compression as ParquetCompression = parse_parquet_compression(DEFAULT_PARQUET_COMPRESSION)
            .unwrap_or(Compression::UNCOMPRESSED),
    }
}

/// The codec of a Parquet compression option: [`parse_parquet_compression`],
/// and back to a name it reads.
#[derive(Debug)]
pub(crate) struct ParquetCompression;

impl crate::options::Codec<Compression> for ParquetCompression {
    const TAKES: &'static str = PARQUET_COMPRESSIONS;

    fn parse(_key: &'static str, text: &str) -> Result<Compression> {
        parse_parquet_compression(text)
    }

    fn items(value: &Compression) -> Vec<String> {
        vec![match value {
            Compression::ZSTD(level) => format!("zstd({})", level.compression_level()),
            Compression::GZIP(level) => format!("gzip({})", level.compression_level()),
            Compression::SNAPPY => "snappy".into(),
            Compression::LZ4_RAW => "lz4_raw".into(),
            Compression::UNCOMPRESSED => "uncompressed".into(),
            // Not made by the parser: parquet's own spelling.
            other => other.to_string(),
        }]
    }
}

/// Parse a Parquet compression name with parquet's own [`Compression`]
/// `FromStr` (`zstd(3)`, `gzip(6)`, `snappy`, `lz4_raw`, `uncompressed`, each also
/// in upper case), after rewriting the shorthands `zarrow convert --compression`
/// documents into parquet's spelling:
///
/// | shorthand | parquet's spelling | |
/// |---|---|---|
/// | `zstd`, `gzip` | `zstd(1)`, `gzip(6)` | parquet's default levels |
/// | `zstd:N` | `zstd(N)` | |
/// | `none` | `uncompressed` | |
/// | `lz4`, `LZ4` | `lz4_raw` | parquet reads `lz4` as the Hadoop-framed `LZ4`, which the Parquet format deprecates |
///
/// # Errors
///
/// [`Error::ParquetCompression`] naming the accepted forms
/// for an unknown name, a level out of range, and for `brotli` and `lzo`, which
/// parquet can parse but this build cannot write.
pub fn parse_parquet_compression(name: &str) -> Result<Compression> {
    let bad = |problem: &'static str, source: Option<ParquetError>| Error::ParquetCompression {
        value: name.to_string(),
        accepted: PARQUET_COMPRESSIONS,
        problem,
        source,
    };
    // parquet 59 cuts the last byte off the text after `(` without checking that
    // it is `)`, and panics on an empty or multi-byte remainder: pass it only text
    // whose level part ends in `)`.
    if name.contains('(') && !name.ends_with(')') {
        return Err(bad("a level is written NAME(N)", None));
    }
    let spelled: Cow<'_, str> = match name {
        "zstd" => format!("zstd({})", ZstdLevel::default().compression_level()).into(),
        "gzip" => format!("gzip({})", GzipLevel::default().compression_level()).into(),
        "lz4" | "LZ4" => "lz4_raw".into(),
        "none" => "uncompressed".into(),
        _ => match name.strip_prefix("zstd:") {
            Some(level) => format!("zstd({level})").into(),
            None => name.into(),
        },
    };
    match spelled.parse::<Compression>() {
        Ok(Compression::BROTLI(_) | Compression::LZO) => {
            Err(bad("not built into zarrow's Parquet writer", None))
        }
        Ok(compression) => Ok(compression),
        Err(e) => Err(bad("parquet does not take it", Some(e))),
    }
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

/// How zarrow writes IPC: a dictionary column's batches extend one dictionary
/// ([`GrowingDictionaries`]), sent as deltas.
fn ipc_options() -> IpcWriteOptions {
    IpcWriteOptions::default().with_dictionary_handling(DictionaryHandling::Delta)
}

/// Write every batch of `reader` as an Arrow IPC file. Returns the rows written.
///
/// A dictionary column whose batches carry dictionaries of their own is keyed
/// into one dictionary per column, which later batches extend (the file format
/// takes deltas, not replacements).
pub(crate) fn write_ipc_file<R: RecordBatchReader, W: Write>(reader: R, writer: W) -> Result<u64> {
    let schema = reader.schema();
    let mut dictionaries = GrowingDictionaries::new(&schema);
    let mut w = FileWriter::try_new_with_options(writer, &schema, ipc_options())?;
    let rows = each_batch(reader, |batch| {
        Ok(w.write(&dictionaries.batch(batch.clone())?)?)
    })?;
    w.finish()?;
    Ok(rows)
}

/// Write every batch of `reader` as an Arrow IPC stream, dictionaries as
/// [`write_ipc_file`] writes them. Returns the rows written.
pub(crate) fn write_ipc_stream<R: RecordBatchReader, W: Write>(
    reader: R,
    writer: W,
) -> Result<u64> {
    let schema = reader.schema();
    let mut dictionaries = GrowingDictionaries::new(&schema);
    let mut w = StreamWriter::try_new_with_options(writer, &schema, ipc_options())?;
    let rows = each_batch(reader, |batch| {
        Ok(w.write(&dictionaries.batch(batch.clone())?)?)
    })?;
    w.finish()?;
    Ok(rows)
}

/// Write every batch of `reader` as Parquet with `compression`. The Arrow schema is
/// stored in the file, so view and large types come back as they were.
///
/// A row group holds at most parquet's default of 1,048,576 rows
/// (`max_row_group_row_count`; a batch is cut there) and is closed after the batch
/// that takes its estimated encoded size to [`ROW_GROUP_BYTES`]. Each row group's
/// leaf columns are encoded in parallel on rayon's pool, while this thread reads the
/// next batch; the file is byte for byte the one parquet's `ArrowWriter` writes with
/// the same row groups.
pub fn write_parquet<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
    compression: Compression,
) -> Result<u64> {
    let reader = SecondsAsMillis::new(reader);
    let schema = reader.schema();
    let props = WriterProperties::builder()
        .set_compression(compression)
        .build();
    // A row group is closed once its encoded pages reach ROW_GROUP_BYTES, so the
    // writer holds at most that much, however long the input.
    let mut w = ParallelParquetWriter::try_new(writer, schema, props, ROW_GROUP_BYTES)?;
    let rows = w.write_all(reader)?;
    w.close()?;
    Ok(rows)
}

/// Parquet has no unit of seconds: a timestamp in seconds would be stored as a
/// bare INT64, which pyarrow reads as `int64`. Such columns are written in
/// milliseconds, as pyarrow writes them (the same instants; an instant past
/// what milliseconds hold in 64 bits is an error).
struct SecondsAsMillis<R> {
    reader: R,
    schema: SchemaRef,
    /// The columns converted.
    columns: Vec<usize>,
}

impl<R: RecordBatchReader> SecondsAsMillis<R> {
    fn new(reader: R) -> Self {
        let original = reader.schema();
        let mut columns = Vec::new();
        let fields: Vec<Field> = original
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| match f.data_type() {
                DataType::Timestamp(TimeUnit::Second, tz) => {
                    columns.push(i);
                    f.as_ref()
                        .clone()
                        .with_data_type(DataType::Timestamp(TimeUnit::Millisecond, tz.clone()))
                }
                _ => f.as_ref().clone(),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            original.metadata().clone(),
        ));
        Self {
            reader,
            schema,
            columns,
        }
    }

    fn convert(&self, batch: RecordBatch) -> std::result::Result<RecordBatch, ArrowError> {
        if self.columns.is_empty() {
            return Ok(batch);
        }
        let mut arrays = batch.columns().to_vec();
        for &i in &self.columns {
            let seconds = arrays[i].as_primitive::<TimestampSecondType>();
            let millis = seconds
                .try_unary::<_, TimestampMillisecondType, _>(|s| {
                    s.checked_mul(1000).ok_or_else(|| {
                        ArrowError::ComputeError(format!(
                            "timestamp {s} s is past what Parquet's milliseconds hold"
                        ))
                    })
                })?
                .with_timezone_opt(seconds.timezone());
            arrays[i] = Arc::new(millis);
        }
        RecordBatch::try_new(self.schema.clone(), arrays)
    }
}

impl<R: RecordBatchReader> Iterator for SecondsAsMillis<R> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.reader.next()?;
        Some(batch.and_then(|b| self.convert(b)))
    }
}

impl<R: RecordBatchReader> RecordBatchReader for SecondsAsMillis<R> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Write `reader` in `format` to `writer` (`write_parquet`, `write_ipc_file`
/// or `write_ipc_stream`): the rows written.
///
/// # Errors
/// Reading a batch; encoding; writing.
pub fn write_file<R: RecordBatchReader, W: Write + Send>(
    reader: R,
    writer: W,
    format: ExportFormat,
    parquet_compression: Compression,
) -> Result<u64> {
    match format {
        ExportFormat::Parquet => write_parquet(reader, writer, parquet_compression),
        ExportFormat::IpcFile => write_ipc_file(reader, writer),
        ExportFormat::IpcStream => write_ipc_stream(reader, writer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zstd(level: i32) -> Compression {
        Compression::ZSTD(ZstdLevel::try_new(level).unwrap())
    }

    fn gzip(level: u32) -> Compression {
        Compression::GZIP(GzipLevel::try_new(level).unwrap())
    }

    /// The spellings docs/cli.md and `zarrow convert --help` document, and
    /// parquet's own.
    #[test]
    fn documented_and_parquet_spellings() {
        for (name, expected) in [
            // docs/cli.md: zstd|zstd:N|snappy|gzip|lz4|none
            (DEFAULT_PARQUET_COMPRESSION, zstd(1)),
            ("zstd", zstd(1)),
            ("zstd:7", zstd(7)),
            ("zstd:22", zstd(22)),
            ("snappy", Compression::SNAPPY),
            ("gzip", gzip(6)),
            ("lz4", Compression::LZ4_RAW),
            ("LZ4", Compression::LZ4_RAW),
            ("none", Compression::UNCOMPRESSED),
            // parquet's FromStr
            ("zstd(3)", zstd(3)),
            ("ZSTD(9)", zstd(9)),
            ("gzip(9)", gzip(9)),
            ("gzip(0)", gzip(0)),
            ("SNAPPY", Compression::SNAPPY),
            ("lz4_raw", Compression::LZ4_RAW),
            ("uncompressed", Compression::UNCOMPRESSED),
        ] {
            assert_eq!(parse_parquet_compression(name).unwrap(), expected, "{name}");
        }
    }

    /// Bad names and levels are errors naming the accepted forms, never a panic
    /// (parquet's own parser panics on `zstd(` and on a multi-byte level).
    #[test]
    fn bad_names_are_errors() {
        for name in [
            "",
            "zst",
            "zstd:",
            "zstd:0",
            "zstd:23",
            "zstd:-1",
            "zstd:x",
            "zstd:3)",
            "zstd(",
            "zstd(3",
            "zstd(é",
            "zstd(é)",
            "zstd()",
            "zstd(23)",
            "zstd(4294967295)",
            "gzip(10)",
            "snappy(1)",
            "none(1)",
            "brotli(5)",
            "lzo",
            "Zstd",
            "(",
        ] {
            let message = match parse_parquet_compression(name) {
                Ok(c) => panic!("{name:?} parsed as {c:?}"),
                Err(e) => e.to_string(),
            };
            assert!(
                message.contains(&format!("{name:?}")) && message.contains(PARQUET_COMPRESSIONS),
                "{message}"
            );
            assert!(!message.contains("more bytes"), "cut: {message}");
        }
        // A long name is shown cut, and the accepted forms whole.
        let long = format!("zstd({})", "9".repeat(300));
        let message = parse_parquet_compression(&long).unwrap_err().to_string();
        assert!(message.contains(PARQUET_COMPRESSIONS), "{message}");
        assert!(
            message.contains(r#""zstd(9999999999999999999"..."#),
            "{message}"
        );
    }
}
