//! The Parquet writer behind [`write_parquet`](super::write_parquet): each row
//! group's leaf columns encoded on rayon's pool, one parquet [`ArrowColumnWriter`]
//! a leaf, while the caller's thread reads the next batch.
//!
//! ```text
//!  caller's thread            rayon's pool
//!  reader.next() ─▶ batch n ─▶ compute_leaves, one task a field
//!  reader.next() ─▶ batch n+1   ArrowColumnWriter::write, one task a leaf
//!  (while batch n encodes)      row group full: ArrowColumnWriter::close, one task
//!                               a leaf, then the chunks appended in column order ─▶ W
//! ```
//!
//! The file is, byte for byte, the one parquet's [`ArrowWriter`] writes for the same
//! batches and properties when it is flushed once its
//! [`in_progress_size`](ArrowWriter::in_progress_size) reaches the byte bound after
//! a batch (what `write_parquet` did before it wrote columns in parallel):
//!
//! - the file writer and the column writers' factory come from
//!   [`ArrowWriter::into_serialized_writer`], so the Parquet schema, the
//!   `ARROW:schema` key-value metadata (view and large types read back as
//!   written) and the properties are `ArrowWriter`'s own;
//! - every row group is encoded as `ArrowWriter` encodes it, through
//!   [`compute_leaves`] and [`ArrowColumnWriter`]s, and closed by its rules: a batch is
//!   cut where a row group reaches `max_row_group_row_count` rows, and the row group
//!   is closed when, after a batch, its estimated encoded size reaches the byte bound.
//!
//! No Arrow type needs a fallback to `ArrowWriter`: it encodes every column through
//! these same writers. What it adds, content-defined chunking and
//! `max_row_group_bytes`, `write_parquet` does not enable; [`ParallelParquetWriter::try_new`]
//! refuses properties that do.
//!
//! Threads: a single-column input has nothing to encode in parallel; it gains only
//! from reading while it encodes. So even with one thread in rayon's pool
//! (`RAYON_NUM_THREADS=1`) two cores can be busy: the caller's thread reading (a
//! reader that decodes inline) and the pool's thread encoding.
//!
//! Memory: the row group being built (its pages, compressed as they fill, and the
//! values a column writer buffers before a page), the batch being encoded and the
//! batch being read. Copies, as with `ArrowWriter`: values into pages (then
//! compressed), and pages into `W` when the row group closes.

use std::io::Write;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
    compute_leaves,
};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Writes Arrow batches as Parquet, encoding the columns of a row group in
/// parallel; see the [module documentation](self).
pub(super) struct ParallelParquetWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// `max_row_group_row_count` of the properties.
    max_rows: Option<usize>,
    /// The estimated encoded size at which a row group is closed after a batch.
    max_bytes: usize,
    /// The row group being built, if any rows are buffered.
    row_group: Option<RowGroup>,
}

/// A row group being built: one column writer a Parquet leaf column, in the
/// schema's order.
struct RowGroup {
    writers: Vec<ArrowColumnWriter>,
    rows: usize,
}

impl<W: Write + Send> ParallelParquetWriter<W> {
    /// A writer of `schema`'s batches to `writer` with `props`, closing a row group
    /// once its estimated encoded size reaches `max_bytes` after a batch.
    ///
    /// # Errors
    ///
    /// A schema Parquet cannot store (as [`ArrowWriter::try_new`]); an I/O error
    /// writing the file's magic; [`Error::OptionNotApplicable`] for properties that
    /// enable `max_row_group_bytes` or content-defined chunking, which
    /// `ArrowWriter` applies inside its own `write` and this writer does not.
    pub(super) fn try_new(
        writer: W,
        schema: SchemaRef,
        props: WriterProperties,
        max_bytes: usize,
    ) -> Result<Self> {
        if props.max_row_group_bytes().is_some() || props.content_defined_chunking().is_some() {
            return Err(Error::OptionNotApplicable {
                options: vec!["max_row_group_bytes", "content-defined chunking"],
                applies_to: "the serial Parquet writer only (the parallel one does not apply them)",
            });
        }
        let max_rows = props.max_row_group_row_count();
        let (file, factory) =
            ArrowWriter::try_new(writer, schema.clone(), Some(props))?.into_serialized_writer()?;
        Ok(Self {
            file,
            factory,
            schema,
            max_rows,
            max_bytes,
            row_group: None,
        })
    }

    /// Write every batch of `reader`, reading each on this thread while the one
    /// before it is encoded on rayon's pool. Returns the rows written.
    ///
    /// # Errors
    ///
    /// The first error in input order: a batch the reader fails to produce, or one
    /// that cannot be encoded or written. After an encoding error the reader has
    /// been asked for one batch more.
    pub(super) fn write_all<R: RecordBatchReader>(&mut self, mut reader: R) -> Result<u64> {
        let mut rows = 0;
        let mut next = reader.next();
        while let Some(batch) = next.take() {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            let mut written = Ok(());
            // `in_place_scope` runs this closure on the caller's thread, so the
            // reader need not be `Send`; the spawned encoding runs on the pool,
            // and the scope returns once both are done.
            rayon::in_place_scope(|scope| {
                scope.spawn(|_| written = self.write(&batch));
                next = reader.next();
            });
            written?;
        }
        Ok(rows)
    }

    /// Encode `batch`, cutting it where the row group reaches `max_rows` and closing
    /// the row group there, and after it if it has reached `max_bytes`
    /// (`ArrowWriter::write` followed by `write_parquet`'s byte rule).
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut start = 0;
        while start < batch.num_rows() {
            let group = match &mut self.row_group {
                Some(group) => group,
                empty => empty.insert(RowGroup {
                    writers: self
                        .factory
                        .create_column_writers(self.file.flushed_row_groups().len())?,
                    rows: 0,
                }),
            };
            let room = self.max_rows.map_or(usize::MAX, |max| max - group.rows);
            let len = room.min(batch.num_rows() - start);
            group.write(&self.schema, &batch.slice(start, len))?;
            start += len;
            if self.max_rows.is_some_and(|max| group.rows >= max) {
                self.flush()?;
            }
        }
        if self.in_progress_size() >= self.max_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// The estimated encoded size of the row group being built
    /// ([`ArrowWriter::in_progress_size`]).
    fn in_progress_size(&self) -> usize {
        self.row_group.as_ref().map_or(0, |group| {
            group
                .writers
                .iter()
                .map(ArrowColumnWriter::get_estimated_total_bytes)
                .sum()
        })
    }

    /// Close the row group being built, its columns in parallel, and append its
    /// chunks to the file in column order.
    fn flush(&mut self) -> Result<()> {
        let Some(group) = self.row_group.take() else {
            return Ok(());
        };
        let chunks = group
            .writers
            .into_par_iter()
            .map(ArrowColumnWriter::close)
            .collect::<Result<Vec<ArrowColumnChunk>, ParquetError>>()?;
        let mut row_group = self.file.next_row_group()?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        Ok(())
    }

    /// Close the last row group and write the footer.
    pub(super) fn close(mut self) -> Result<()> {
        self.flush()?;
        self.file.close()?;
        Ok(())
    }
}

impl RowGroup {
    /// Encode `batch`: its columns' leaves computed one task a field, then each
    /// leaf written by its column writer, one task a leaf.
    fn write(&mut self, schema: &SchemaRef, batch: &RecordBatch) -> Result<()> {
        let fields = schema.fields();
        if batch.num_columns() != fields.len() {
            return Err(mismatch(format!(
                "a batch of {} columns for a schema of {}",
                batch.num_columns(),
                fields.len()
            )));
        }
        let leaves = fields
            .par_iter()
            .zip(batch.columns())
            .map(|(field, column)| compute_leaves(field, column))
            .collect::<Result<Vec<Vec<ArrowLeafColumn>>, ParquetError>>()?;
        let leaves: Vec<ArrowLeafColumn> = leaves.into_iter().flatten().collect();
        if leaves.len() != self.writers.len() {
            return Err(mismatch(format!(
                "a batch of {} leaf columns for a Parquet schema of {}",
                leaves.len(),
                self.writers.len()
            )));
        }
        self.writers
            .par_iter_mut()
            .zip(&leaves)
            .try_for_each(|(writer, leaf)| writer.write(leaf))?;
        self.rows += batch.num_rows();
        Ok(())
    }
}

/// A batch that does not match its reader's schema.
fn mismatch(message: String) -> Error {
    Error::Arrow(ArrowError::SchemaError(message))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::types::{Int32Type, UInt8Type};
    use arrow_array::{
        ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray, Float64Array,
        Int32Array, Int64Array, LargeBinaryArray, LargeStringArray, RecordBatchIterator,
        StringArray, StringViewArray, StructArray, UInt8Array,
    };
    use arrow_schema::{DataType, Field, Fields, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::basic::{Compression, ZstdLevel};

    use super::*;

    /// Batches of `rows` rows each covering the types zarrow reads and writes,
    /// nulls included, plus dictionaries, a list and a struct.
    fn batches(counts: &[usize]) -> (SchemaRef, Vec<RecordBatch>) {
        let text = |i: usize| format!("{}-{}", i * 7919 % 1009, "x".repeat(i % 17));
        let mut first = 0;
        let mut out = Vec::new();
        let mut schema = None;
        for &rows in counts {
            let ids = first..first + rows;
            first += rows;
            let strings: Vec<Option<String>> = ids
                .clone()
                .map(|i| (i % 11 != 0).then(|| text(i)))
                .collect();
            let bytes: Vec<Option<Vec<u8>>> = strings
                .iter()
                .map(|s| s.as_ref().map(|s| s.clone().into_bytes()))
                .collect();
            let byte_refs = || bytes.iter().map(|b| b.as_deref());
            let mut list = ListBuilder::new(StringBuilder::new());
            for i in ids.clone() {
                if i % 13 == 0 {
                    list.append_null();
                } else {
                    for j in 0..i % 4 {
                        list.values().append_value(text(i + j));
                    }
                    list.append(true);
                }
            }
            let columns: Vec<(&str, ArrayRef)> = vec![
                ("utf8", Arc::new(StringArray::from(strings.clone()))),
                (
                    "large_utf8",
                    Arc::new(LargeStringArray::from(strings.clone())),
                ),
                (
                    "utf8_view",
                    Arc::new(StringViewArray::from(strings.clone())),
                ),
                ("binary", Arc::new(BinaryArray::from_iter(byte_refs()))),
                (
                    "large_binary",
                    Arc::new(LargeBinaryArray::from_iter(byte_refs())),
                ),
                (
                    "binary_view",
                    Arc::new(BinaryViewArray::from_iter(byte_refs())),
                ),
                (
                    "int64",
                    Arc::new(Int64Array::from_iter(
                        ids.clone().map(|i| (i % 7 != 0).then_some(i as i64 * 31)),
                    )),
                ),
                (
                    "float64",
                    Arc::new(Float64Array::from_iter_values(
                        ids.clone().map(|i| i as f64 / 3.0),
                    )),
                ),
                (
                    "bool",
                    Arc::new(BooleanArray::from_iter(
                        ids.clone().map(|i| (i % 5 != 0).then_some(i % 3 == 0)),
                    )),
                ),
                (
                    "dict_utf8",
                    Arc::new(DictionaryArray::<Int32Type>::new(
                        Int32Array::from_iter(
                            ids.clone().map(|i| (i % 9 != 0).then_some(i as i32 % 3)),
                        ),
                        Arc::new(StringArray::from(vec!["a", "bb", "ccc"])),
                    )),
                ),
                (
                    "dict_u8_binary",
                    Arc::new(DictionaryArray::<UInt8Type>::new(
                        UInt8Array::from_iter_values(ids.clone().map(|i| (i % 2) as u8)),
                        Arc::new(BinaryArray::from_iter_values([b"0".as_slice(), b"1"])),
                    )),
                ),
                ("list_utf8", Arc::new(list.finish())),
                (
                    "struct",
                    Arc::new(StructArray::from(vec![
                        (
                            Arc::new(Field::new("n", DataType::Int32, false)),
                            Arc::new(Int32Array::from_iter_values(ids.clone().map(|i| i as i32)))
                                as ArrayRef,
                        ),
                        (
                            Arc::new(Field::new("s", DataType::Utf8View, true)),
                            Arc::new(StringViewArray::from(strings.clone())) as ArrayRef,
                        ),
                    ])),
                ),
            ];
            let batch = RecordBatch::try_from_iter_with_nullable(
                columns
                    .into_iter()
                    .map(|(name, column)| (name, column, true)),
            )
            .unwrap();
            schema.get_or_insert_with(|| batch.schema());
            out.push(batch);
        }
        (schema.unwrap(), out)
    }

    fn props(max_rows: usize) -> WriterProperties {
        WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(max_rows))
            .build()
    }

    /// The new path: `ParallelParquetWriter`.
    fn parallel(
        batches: &[RecordBatch],
        schema: &SchemaRef,
        max_rows: usize,
        max_bytes: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer =
            ParallelParquetWriter::try_new(&mut out, schema.clone(), props(max_rows), max_bytes)
                .unwrap();
        let reader = RecordBatchIterator::new(batches.iter().cloned().map(Ok), schema.clone());
        let rows = writer.write_all(reader).unwrap();
        writer.close().unwrap();
        assert_eq!(
            rows,
            batches.iter().map(|b| b.num_rows() as u64).sum::<u64>()
        );
        out
    }

    /// The old path: parquet's `ArrowWriter`, flushed at `max_bytes` after a batch.
    fn arrow_writer(
        batches: &[RecordBatch],
        schema: &SchemaRef,
        max_rows: usize,
        max_bytes: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer =
            ArrowWriter::try_new(&mut out, schema.clone(), Some(props(max_rows))).unwrap();
        for batch in batches {
            writer.write(batch).unwrap();
            if writer.in_progress_size() >= max_bytes {
                writer.flush().unwrap();
            }
        }
        writer.close().unwrap();
        out
    }

    /// A reader of the Parquet file `bytes`.
    fn reader(bytes: &[u8]) -> ParquetRecordBatchReaderBuilder<std::fs::File> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        ParquetRecordBatchReaderBuilder::try_new(file).unwrap()
    }

    /// Row-group sizes of a Parquet file, and its batches read back.
    fn read(file: &[u8]) -> (Vec<i64>, Vec<RecordBatch>) {
        let builder = reader(file);
        let groups = builder
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        let batches = builder.build().unwrap().collect::<Result<_, _>>().unwrap();
        (groups, batches)
    }

    /// Same bytes as `ArrowWriter`, and the same values back, for row groups
    /// closed by the row count (mid-batch) and by the byte bound (after a batch).
    #[test]
    fn same_file_as_arrow_writer_and_values_read_back() {
        let counts = [700, 1, 0, 2_500, 333, 1_200, 64];
        let (schema, input) = batches(&counts);
        let total: usize = counts.iter().sum();
        for (max_rows, max_bytes, groups) in [
            // Row count only: 1,000-row groups, batches cut across them.
            (1_000, usize::MAX, vec![1_000, 1_000, 1_000, 1_000, 798]),
            // Byte bound only: every non-empty batch closes its row group.
            (1 << 20, 1, vec![700, 1, 2_500, 333, 1_200, 64]),
            // Both: cut at 1,000 rows, and closed after each batch besides.
            (
                1_000,
                1,
                vec![700, 1, 1_000, 1_000, 500, 333, 1_000, 200, 64],
            ),
            // Neither reached: one row group.
            (1 << 20, usize::MAX, vec![total as i64]),
        ] {
            let new = parallel(&input, &schema, max_rows, max_bytes);
            let old = arrow_writer(&input, &schema, max_rows, max_bytes);
            assert!(
                new == old,
                "{max_rows} rows, {max_bytes} bytes: files differ"
            );
            let (sizes, output) = read(&new);
            assert_eq!(sizes, groups, "{max_rows} rows, {max_bytes} bytes");
            let expected = arrow_select::concat::concat_batches(&schema, &input).unwrap();
            let actual =
                arrow_select::concat::concat_batches(&output[0].schema(), &output).unwrap();
            // The embedded Arrow schema restores the view, large and dictionary types.
            assert_eq!(actual.schema(), schema);
            assert_eq!(actual, expected);
        }
    }

    /// A file with no batches, or only empty ones: the schema and no row group,
    /// as `ArrowWriter` writes it.
    #[test]
    fn no_rows() {
        let (schema, input) = batches(&[0, 0]);
        for input in [&input[..], &[]] {
            let new = parallel(input, &schema, 10, usize::MAX);
            assert!(new == arrow_writer(input, &schema, 10, usize::MAX));
            let builder = reader(&new);
            assert_eq!(builder.metadata().num_row_groups(), 0);
            assert_eq!(builder.schema(), &schema);
        }
    }

    /// The first error in input order comes back: a reader error after good
    /// batches, or a batch that does not match the schema (an error, where
    /// `ArrowWriter` would panic on one with more leaves).
    #[test]
    fn errors() {
        let (schema, input) = batches(&[10, 10]);
        let failing = vec![
            Ok(input[0].clone()),
            Err(ArrowError::ComputeError("disk on fire".into())),
            Ok(input[1].clone()),
        ];
        let mut out = Vec::new();
        let mut writer =
            ParallelParquetWriter::try_new(&mut out, schema.clone(), props(100), usize::MAX)
                .unwrap();
        let e = writer
            .write_all(RecordBatchIterator::new(failing, schema.clone()))
            .unwrap_err();
        assert!(e.to_string().contains("disk on fire"), "{e}");

        // Fewer columns than the schema: an error, where `ArrowWriter` would
        // encode the columns the batch has and fail when the row group closes.
        let narrow = input[0].project(&[0, 1]).unwrap();
        // A struct where the schema has an Int32: parquet's `compute_leaves` refuses it.
        let int32 = Schema::new(vec![Field::new("n", DataType::Int32, false)]);
        let struct_batch = RecordBatch::try_from_iter([(
            "n",
            Arc::new(StructArray::new(
                Fields::from(vec![Field::new("a", DataType::Int32, false)]),
                vec![Arc::new(Int32Array::from(vec![1])) as ArrayRef],
                None,
            )) as ArrayRef,
        )])
        .unwrap();
        for (schema, batch, expected) in [
            (
                schema.clone(),
                narrow,
                "a batch of 2 columns for a schema of 13",
            ),
            (
                Arc::new(int32),
                struct_batch,
                "Incompatible type. Field 'n'",
            ),
        ] {
            let mut out = Vec::new();
            let mut writer =
                ParallelParquetWriter::try_new(&mut out, schema.clone(), props(100), usize::MAX)
                    .unwrap();
            let reader = RecordBatchIterator::new([Ok(batch)], schema);
            let e = writer.write_all(reader).unwrap_err();
            assert!(e.to_string().contains(expected), "{e}");
        }
    }

    /// Properties whose rules `ArrowWriter::write` applies itself are refused.
    #[test]
    fn refuses_byte_limited_properties() {
        let (schema, _) = batches(&[1]);
        let props = WriterProperties::builder()
            .set_max_row_group_bytes(Some(1 << 20))
            .build();
        let e = ParallelParquetWriter::try_new(Vec::new(), schema, props, usize::MAX)
            .err()
            .unwrap();
        assert!(
            matches!(&e, Error::OptionNotApplicable { options, .. } if options.contains(&"max_row_group_bytes")),
            "{e}"
        );
    }
}
