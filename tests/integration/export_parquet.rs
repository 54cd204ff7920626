//! `zarrow::export::write_parquet`, which encodes each row group's columns in
//! parallel: the file reads back as written (types included, through the embedded
//! Arrow schema) and is, byte for byte, the one parquet's `ArrowWriter` writes under
//! the same row-group rule. The unit tests in `src/export/parallel_parquet.rs` cover
//! small row groups and errors.

use std::fs::File;
use std::io::{Read, Seek};
use std::sync::Arc;

use arrow_array::types::Int16Type;
use arrow_array::{
    ArrayRef, BinaryViewArray, BooleanArray, DictionaryArray, Float32Array, Int16Array, Int64Array,
    LargeBinaryArray, LargeStringArray, RecordBatch, RecordBatchIterator, StringArray,
    StringViewArray, UInt64Array,
};
use arrow_schema::SchemaRef;
use parquet::arrow::ARROW_SCHEMA_META_KEY;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use zarrow::export::{ROW_GROUP_BYTES, write_parquet};

/// Batches of the given row counts: strings, bytes, views, large types, ints,
/// floats, bools and a dictionary, with nulls, values depending on the row.
fn batches(counts: &[usize]) -> (SchemaRef, Vec<RecordBatch>) {
    let mut first = 0;
    let out: Vec<RecordBatch> = counts
        .iter()
        .map(|&rows| {
            let ids = first..first + rows;
            first += rows;
            let text = |i: usize| (i % 10 != 3).then(|| format!("s{}", i * 2_654_435_761 % 99_991));
            let strings: Vec<Option<String>> = ids.clone().map(text).collect();
            let columns: Vec<(&str, ArrayRef)> = vec![
                ("utf8", Arc::new(StringArray::from(strings.clone()))),
                (
                    "utf8_view",
                    Arc::new(StringViewArray::from(strings.clone())),
                ),
                (
                    "large_utf8",
                    Arc::new(LargeStringArray::from(strings.clone())),
                ),
                (
                    "binary_view",
                    Arc::new(BinaryViewArray::from_iter(
                        strings.iter().map(|s| s.as_ref().map(String::as_bytes)),
                    )),
                ),
                (
                    "large_binary",
                    Arc::new(LargeBinaryArray::from_iter(
                        strings.iter().map(|s| s.as_ref().map(String::as_bytes)),
                    )),
                ),
                (
                    "int64",
                    Arc::new(Int64Array::from_iter_values(
                        ids.clone().map(|i| -(i as i64)),
                    )),
                ),
                (
                    "uint64",
                    Arc::new(UInt64Array::from_iter(
                        ids.clone()
                            .map(|i| (i % 4 != 0).then_some(u64::MAX - i as u64)),
                    )),
                ),
                (
                    "float32",
                    Arc::new(Float32Array::from_iter_values(
                        ids.clone().map(|i| i as f32 * 0.5),
                    )),
                ),
                (
                    "bool",
                    Arc::new(BooleanArray::from_iter(
                        ids.clone().map(|i| Some(i % 3 == 0)),
                    )),
                ),
                (
                    "dictionary",
                    Arc::new(DictionaryArray::<Int16Type>::new(
                        Int16Array::from_iter(
                            ids.clone().map(|i| (i % 6 != 0).then_some((i % 4) as i16)),
                        ),
                        Arc::new(StringArray::from(vec!["north", "east", "south", "west"])),
                    )),
                ),
            ];
            RecordBatch::try_from_iter_with_nullable(
                columns
                    .into_iter()
                    .map(|(name, column)| (name, column, true)),
            )
            .unwrap()
        })
        .collect();
    (out[0].schema(), out)
}

/// `write_parquet` to a temporary file: the file, rewound.
fn write(schema: &SchemaRef, batches: &[RecordBatch]) -> (File, u64) {
    let mut file = tempfile::tempfile().unwrap();
    let reader = RecordBatchIterator::new(batches.iter().cloned().map(Ok), schema.clone());
    let rows = write_parquet(reader, &mut file, zstd()).unwrap();
    file.rewind().unwrap();
    (file, rows)
}

fn zstd() -> Compression {
    Compression::ZSTD(ZstdLevel::default())
}

/// What `write_parquet` wrote before it encoded columns in parallel: parquet's
/// `ArrowWriter`, flushed once a batch takes the row group to `ROW_GROUP_BYTES`.
fn arrow_writer(schema: &SchemaRef, batches: &[RecordBatch]) -> Vec<u8> {
    let props = WriterProperties::builder().set_compression(zstd()).build();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
    for batch in batches {
        w.write(batch).unwrap();
        if w.in_progress_size() >= ROW_GROUP_BYTES {
            w.flush().unwrap();
        }
    }
    w.close().unwrap();
    out
}

/// Every type reads back as written, the Arrow schema is in the file's key-value
/// metadata, and the file is `ArrowWriter`'s.
#[test]
fn round_trip_with_arrow_schema() {
    let (schema, input) = batches(&[1_000, 0, 1, 2_345]);
    let (mut file, rows) = write(&schema, &input);
    assert_eq!(rows, 3_346);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file.try_clone().unwrap()).unwrap();
    let key_values = builder.metadata().file_metadata().key_value_metadata();
    assert!(
        key_values
            .into_iter()
            .flatten()
            .any(|kv| kv.key == ARROW_SCHEMA_META_KEY && kv.value.is_some()),
        "no {ARROW_SCHEMA_META_KEY} in {key_values:?}"
    );
    // Utf8View, LargeUtf8, BinaryView, LargeBinary, UInt64 and the dictionary
    // come back as themselves, not as parquet's default Utf8 / Binary / Int64.
    assert_eq!(builder.schema(), &schema);
    let output: Vec<RecordBatch> = builder
        .with_batch_size(1_024)
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        arrow_select::concat::concat_batches(&schema, &output).unwrap(),
        arrow_select::concat::concat_batches(&schema, &input).unwrap()
    );

    // The reader's clone of the file shares its offset.
    file.rewind().unwrap();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    assert!(
        bytes == arrow_writer(&schema, &input),
        "not ArrowWriter's file"
    );
}

/// Past parquet's 1,048,576 rows a row group, batches are cut into several row
/// groups, as `ArrowWriter` cuts them, and read back whole.
#[test]
fn several_row_groups() {
    // An Int64 and a dictionary column keep the debug build's test short; the unit
    // tests in src/export/parallel_parquet.rs cut every type into row groups.
    let mut first = 0;
    let input: Vec<RecordBatch> = [600_000, 600_000, 7]
        .into_iter()
        .map(|rows: i64| {
            let ids = first..first + rows;
            first += rows;
            let keys =
                Int16Array::from_iter(ids.clone().map(|i| (i % 6 != 0).then_some((i % 4) as i16)));
            let values = StringArray::from(vec!["north", "east", "south", "west"]);
            RecordBatch::try_from_iter_with_nullable([
                (
                    "int64",
                    Arc::new(Int64Array::from_iter_values(ids)) as ArrayRef,
                    false,
                ),
                (
                    "dictionary",
                    Arc::new(DictionaryArray::new(keys, Arc::new(values))),
                    true,
                ),
            ])
            .unwrap()
        })
        .collect();
    let schema = input[0].schema();
    let (mut file, rows) = write(&schema, &input);
    assert_eq!(rows, 1_200_007);
    let builder = ParquetRecordBatchReaderBuilder::try_new(file.try_clone().unwrap()).unwrap();
    let groups: Vec<i64> = builder
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    assert_eq!(groups, [1_048_576, 151_431]);
    let expected = arrow_select::concat::concat_batches(&schema, &input).unwrap();
    let mut read = 0;
    for batch in builder.with_batch_size(1 << 16).build().unwrap() {
        let batch = batch.unwrap();
        assert_eq!(
            batch,
            expected.slice(read, batch.num_rows()),
            "rows from {read}"
        );
        read += batch.num_rows();
    }
    assert_eq!(read, 1_200_007);

    // The reader's clone of the file shares its offset.
    file.rewind().unwrap();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    assert!(
        bytes == arrow_writer(&schema, &input),
        "not ArrowWriter's file"
    );
}
