//! The statistics file: one Arrow IPC file, a row per chunk, parsed as
//! untrusted input (the IPC reader validates every buffer; the columns, their
//! types and the chunk numbers are checked here).

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, RecordBatch, StringArray, UInt64Array, new_empty_array,
};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType as ArrowType, Field, Schema};

use super::{ArrayStats, ChunkStats, MAX_SET_BYTES, VERSION, stats_type};
use crate::error::{Error, Result};

pub(super) const CHUNK: usize = 0;
pub(super) const ROWS: usize = 1;
pub(super) const NULLS: usize = 2;
pub(super) const NANS: usize = 3;
pub(super) const MIN: usize = 4;
pub(super) const MAX: usize = 5;
pub(super) const SET: usize = 6;
pub(super) const VERSION_COLUMN: usize = 7;

const NAMES: [&str; 8] = [
    "chunk", "rows", "nulls", "nans", "min", "max", "set", "version",
];

/// The schema metadata's one key: its value is a JSON object (one key, so
/// that the file's bytes do not depend on a map's order).
const CONVENTION: &str = "zarrow.stats";

/// What a file says about its array and how it was read.
pub(crate) struct Header<'a> {
    pub(crate) chunk_len: u64,
    pub(crate) array_len: u64,
    /// [`fingerprint`](super::fingerprint) of the array's metadata.
    pub(crate) array: &'a serde_json::Value,
}

fn schema(bound: &ArrowType, header: &Header<'_>, decode_cf: bool) -> Schema {
    let u64 = |name: &str| Field::new(name, ArrowType::UInt64, false);
    let fields = vec![
        u64(NAMES[CHUNK]),
        u64(NAMES[ROWS]),
        u64(NAMES[NULLS]),
        u64(NAMES[NANS]),
        Field::new(NAMES[MIN], bound.clone(), true),
        Field::new(NAMES[MAX], bound.clone(), true),
        Field::new(NAMES[SET], ArrowType::Binary, true),
        Field::new(NAMES[VERSION_COLUMN], ArrowType::Utf8, true),
    ];
    let about = serde_json::json!({
        "version": VERSION,
        "chunk_len": header.chunk_len,
        "array_len": header.array_len,
        "decode_cf": decode_cf,
        "array": header.array,
    });
    Schema::new(fields).with_metadata(HashMap::from([(CONVENTION.to_string(), about.to_string())]))
}

/// The statistics file of `chunks` (chunk number, statistics, the version of
/// the object holding it), in chunk order, their bounds of type `bound`.
///
/// # Errors
/// Bounds of another type; encoding.
pub(crate) fn encode(
    chunks: &[(u64, ChunkStats, Option<String>)],
    bound: &ArrowType,
    header: &Header<'_>,
) -> Result<Vec<u8>> {
    let schema = Arc::new(schema(bound, header, true));
    let column = |f: &dyn Fn(&ChunkStats) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(
            chunks.iter().map(|(_, s, _)| f(s)),
        ))
    };
    let bounds = |pick: &dyn Fn(&ChunkStats) -> &ArrayRef| -> Result<ArrayRef> {
        if chunks.is_empty() {
            return Ok(new_empty_array(bound));
        }
        let parts: Vec<&dyn Array> = chunks.iter().map(|(_, s, _)| pick(s).as_ref()).collect();
        Ok(arrow_select::concat::concat(&parts)?)
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            chunks.iter().map(|(i, _, _)| *i),
        )),
        column(&|s| s.rows),
        column(&|s| s.nulls),
        column(&|s| s.nans),
        bounds(&|s| &s.min)?,
        bounds(&|s| &s.max)?,
        Arc::new(BinaryArray::from_iter(
            chunks.iter().map(|(_, s, _)| s.set.as_deref()),
        )),
        Arc::new(StringArray::from_iter(
            chunks.iter().map(|(_, _, v)| v.as_deref()),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let mut out = Vec::new();
    let mut writer = FileWriter::try_new(&mut out, &schema)?;
    writer.write(&batch)?;
    writer.finish()?;
    drop(writer);
    Ok(out)
}

/// The rows of `stats`, as [`encode`] takes them.
pub(crate) fn rows(stats: &ArrayStats) -> Vec<(u64, ChunkStats, Option<String>)> {
    let b = &stats.batch;
    let u64s = |i: usize| b.column(i).as_primitive::<UInt64Type>().clone();
    let (chunks, rows, nulls, nans) = (u64s(CHUNK), u64s(ROWS), u64s(NULLS), u64s(NANS));
    let sets = b.column(SET).as_binary::<i32>();
    let versions = b.column(VERSION_COLUMN).as_string::<i32>();
    (0..b.num_rows())
        .map(|i| {
            let stats = ChunkStats {
                rows: rows.value(i),
                nulls: nulls.value(i),
                nans: nans.value(i),
                min: b.column(MIN).slice(i, 1),
                max: b.column(MAX).slice(i, 1),
                set: sets.is_valid(i).then(|| sets.value(i).to_vec()),
            };
            let version = versions.is_valid(i).then(|| versions.value(i).to_string());
            (chunks.value(i), stats, version)
        })
        .collect()
}

/// Refuse an IPC file whose record batches are compressed, or that has
/// dictionaries: a compressed buffer declares the length it decompresses to,
/// which the IPC reader would allocate whatever the file's size. Statistics
/// files are never compressed, so every buffer is bounded by the file. Also
/// refuse a batch whose body or buffers lie outside the file: arrow-ipc's
/// reader slices them as declared and panics (found by the fuzz target
/// `stats`).
fn structure(bytes: &[u8]) -> std::result::Result<(), &'static str> {
    const TAIL: usize = 10; // footer length (i32) and "ARROW1"
    let n = bytes.len();
    let tail = bytes
        .get(n.saturating_sub(TAIL)..)
        .filter(|t| t.len() == TAIL);
    let tail = tail.ok_or("not an Arrow IPC file (too short)")?;
    let footer_len = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let footer_len = usize::try_from(footer_len).map_err(|_| "a negative footer length")?;
    let start = (n - TAIL)
        .checked_sub(footer_len)
        .ok_or("a footer longer than the file")?;
    let footer = arrow_ipc::root_as_footer(&bytes[start..n - TAIL]).map_err(|_| "a bad footer")?;
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err("dictionaries (a statistics file has none)");
    }
    // Each column's buffers (a validity bitmap first): only the flat types
    // a statistics file holds, their parameters checked too (arrow-ipc
    // panics on a type it does not know, an integer of 58,688 bits: found by
    // fuzzing).
    let mut layout = Vec::new();
    let fields = footer
        .schema()
        .and_then(|s| s.fields())
        .ok_or("a schema without fields")?;
    for field in fields {
        use arrow_ipc::{DateUnit as D, Precision as P, TimeUnit as U, Type as T};
        if field.children().is_some_and(|c| !c.is_empty()) || field.dictionary().is_some() {
            return Err("a nested or dictionary column (a statistics file has none)");
        }
        let unit = |u: U| {
            matches!(
                u,
                U::SECOND | U::MILLISECOND | U::MICROSECOND | U::NANOSECOND
            )
        };
        let known = match field.type_type() {
            T::Bool | T::Utf8 | T::Binary => true,
            T::Int => field
                .type_as_int()
                .is_some_and(|i| matches!(i.bitWidth(), 8 | 16 | 32 | 64)),
            T::FloatingPoint => field
                .type_as_floating_point()
                .is_some_and(|f| matches!(f.precision(), P::HALF | P::SINGLE | P::DOUBLE)),
            T::Date => field
                .type_as_date()
                .is_some_and(|d| matches!(d.unit(), D::DAY | D::MILLISECOND)),
            T::Time => field.type_as_time().is_some_and(|t| {
                matches!(
                    (t.bitWidth(), t.unit()),
                    (32, U::SECOND | U::MILLISECOND) | (64, U::MICROSECOND | U::NANOSECOND)
                )
            }),
            T::Timestamp => field.type_as_timestamp().is_some_and(|t| unit(t.unit())),
            T::Duration => field.type_as_duration().is_some_and(|d| unit(d.unit())),
            _ => false,
        };
        if !known {
            return Err("a column of a type a statistics file does not hold");
        }
        layout.push(if matches!(field.type_type(), T::Utf8 | T::Binary) {
            3
        } else {
            2
        });
    }
    for block in footer.recordBatches().iter().flatten() {
        let offset = usize::try_from(block.offset()).map_err(|_| "a bad block offset")?;
        let len = usize::try_from(block.metaDataLength()).map_err(|_| "a bad block length")?;
        let meta = offset
            .checked_add(len)
            .and_then(|end| bytes.get(offset..end))
            .ok_or("a block past the end of the file")?;
        // A continuation marker, then the flatbuffer's length (or, in old
        // files, the length alone).
        let skip = if meta.starts_with(&[0xff; 4]) { 8 } else { 4 };
        let message = meta
            .get(skip..)
            .and_then(|m| arrow_ipc::root_as_message(m).ok())
            .ok_or("a bad message")?;
        let batch = message
            .header_as_record_batch()
            .ok_or("a block that is not a batch")?;
        if batch.compression().is_some() {
            return Err("compressed buffers (a statistics file has none)");
        }
        let body = usize::try_from(block.bodyLength()).map_err(|_| "a bad body length")?;
        offset
            .checked_add(len)
            .and_then(|start| start.checked_add(body))
            .filter(|&end| end <= n)
            .ok_or("a batch body past the end of the file")?;
        let mut buffers = Vec::new();
        for buffer in batch.buffers().iter().flatten() {
            let start = usize::try_from(buffer.offset()).map_err(|_| "a bad buffer offset")?;
            let length = usize::try_from(buffer.length()).map_err(|_| "a bad buffer length")?;
            start
                .checked_add(length)
                .filter(|&end| end <= body)
                .ok_or("a buffer past its batch's body")?;
            buffers.push(length);
        }
        // Every column as long as the batch, which its body bounds (the
        // chunk numbers alone take 8 bytes a row), and a validity bitmap
        // that covers it: arrow-ipc builds the bitmap before it validates.
        let rows = usize::try_from(batch.length()).map_err(|_| "a bad batch length")?;
        if rows > body / 8 {
            return Err("a batch longer than its body holds");
        }
        let nodes: Vec<_> = batch.nodes().iter().flatten().collect();
        if nodes.len() != layout.len() || buffers.len() != layout.iter().sum::<usize>() {
            return Err("a batch whose columns are not the schema's");
        }
        let mut first = 0;
        for (node, count) in nodes.iter().zip(&layout) {
            let nulls = usize::try_from(node.null_count()).map_err(|_| "a bad null count")?;
            if usize::try_from(node.length()) != Ok(rows) || nulls > rows {
                return Err("a column whose length is not its batch's");
            }
            if nulls > 0 && buffers[first].saturating_mul(8) < rows {
                return Err("a validity bitmap shorter than its column");
            }
            first += count;
        }
    }
    Ok(())
}

/// Parse the statistics file at `key`: every check of an untrusted file.
/// `Ok(Err(version))`: a file of another version of the convention, which
/// this reader does not use (nor refuse).
///
/// # Errors
/// [`Error::Metadata`] naming `key` for a file that is not one: not Arrow
/// IPC, missing or mistyped columns, chunk numbers out of order, a set longer
/// than [`MAX_SET_BYTES`](super::MAX_SET_BYTES).
pub(crate) fn decode(key: &str, bytes: &[u8]) -> Result<std::result::Result<ArrayStats, String>> {
    // A statistics file is Arrow IPC: its fields are the schema's metadata
    // entries and its columns.
    let bad = |field: &str, expected: &str, found: Option<String>| match found {
        Some(found) => Error::metadata_found(key, field, expected, found),
        None => Error::metadata(key, field, expected),
    };
    structure(bytes).map_err(|m| {
        bad(
            "(file)",
            "a chunk statistics file (Arrow IPC, flat columns)",
            Some(m.to_string()),
        )
    })?;
    let reader = FileReader::try_new(Cursor::new(bytes), None).map_err(|e| {
        bad(
            "(file)",
            "a chunk statistics file (Arrow IPC)",
            Some(format!("not an Arrow IPC file ({e})")),
        )
    })?;
    let schema = reader.schema();
    let about: serde_json::Value = schema
        .metadata()
        .get(CONVENTION)
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or_else(|| {
            bad(
                &format!("schema.metadata[{CONVENTION:?}]"),
                "a JSON object (the field is required)",
                None,
            )
        })?;
    match about.get("version").and_then(|v| v.as_str()) {
        Some(VERSION) => {}
        Some(other) => return Ok(Err(other.to_string())),
        None => {
            return Err(bad(
                "version",
                "a version string (the field is required)",
                None,
            ));
        }
    }
    let number = |name: &str| -> Result<u64> {
        about.get(name).and_then(|v| v.as_u64()).ok_or_else(|| {
            bad(
                name,
                "a non-negative integer (the field is required)",
                about.get(name).map(ToString::to_string),
            )
        })
    };
    // The array's length when recorded: checked, for a reader that reports
    // exact statistics.
    let (chunk_len, _array_len) = (number("chunk_len")?, number("array_len")?);
    if chunk_len == 0 {
        return Err(bad("chunk_len", "1 or more", Some("0".into())));
    }
    let decode_cf = about
        .get("decode_cf")
        .and_then(|v| v.as_bool())
        .ok_or_else(|| {
            bad(
                "decode_cf",
                "true or false (the field is required)",
                about.get("decode_cf").map(ToString::to_string),
            )
        })?;
    let array = about
        .get("array")
        .filter(|v| v.is_object())
        .cloned()
        .ok_or_else(|| {
            bad(
                "array",
                "a JSON object (the field is required)",
                about.get("array").map(ToString::to_string),
            )
        })?;
    let fields = schema.fields();
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    if names != NAMES {
        return Err(bad(
            "columns",
            &format!("{NAMES:?}"),
            Some(format!("{names:?}")),
        ));
    }
    let bound = fields[MIN].data_type();
    let expected = |i: usize, t: &ArrowType| fields[i].data_type() == t;
    let typed = [CHUNK, ROWS, NULLS, NANS]
        .iter()
        .all(|&i| expected(i, &ArrowType::UInt64))
        && expected(MAX, bound)
        && stats_type(bound).as_ref() == Some(bound)
        && expected(SET, &ArrowType::Binary)
        && expected(VERSION_COLUMN, &ArrowType::Utf8);
    if !typed {
        return Err(bad(
            "columns",
            "UInt64 chunk, rows, nulls and nans, min and max of the array's type, a Binary set and a Utf8 version",
            Some(format!(
                "column types {:?}",
                fields.iter().map(|f| f.data_type()).collect::<Vec<_>>()
            )),
        ));
    }
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(
                "(file)",
                "readable record batches",
                Some(format!("unreadable ({e})")),
            )
        })?;
    let batch = arrow_select::concat::concat_batches(&schema, &batches)?;
    let chunks = batch.column(CHUNK).as_primitive::<UInt64Type>();
    if chunks.null_count() > 0 || chunks.values().windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad(
            "chunk",
            "chunk numbers strictly increasing, without nulls",
            None,
        ));
    }
    let sets = batch.column(SET).as_binary::<i32>();
    if let Some(i) =
        (0..sets.len()).find(|&i| sets.is_valid(i) && sets.value(i).len() > MAX_SET_BYTES)
    {
        return Err(bad(
            &format!("set[{i}]"),
            &format!("at most {MAX_SET_BYTES} bytes"),
            Some(format!("{} bytes", sets.value(i).len())),
        ));
    }
    Ok(Ok(ArrayStats {
        chunk_len,
        decode_cf,
        array,
        batch,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_ipc::CompressionType;
    use arrow_ipc::writer::IpcWriteOptions;

    use super::*;

    fn file() -> Vec<u8> {
        let values: Vec<(u64, ChunkStats, Option<String>)> = (0..3)
            .map(|i| {
                let chunk = Int64Array::from_iter_values(i * 10..i * 10 + 10);
                (
                    i as u64,
                    ChunkStats::of(&chunk).unwrap(),
                    Some(format!("v{i}")),
                )
            })
            .collect();
        let header = Header {
            chunk_len: 10,
            array_len: 30,
            array: &serde_json::json!({}),
        };
        encode(&values, &ArrowType::Int64, &header).unwrap()
    }

    /// What is encoded decodes: the same rows, the header's lengths.
    #[test]
    fn a_file_reads_back() {
        let stats = decode("k", &file()).unwrap().unwrap();
        assert_eq!((stats.chunk_len, stats.decode_cf), (10, true));
        assert_eq!(stats.array, serde_json::json!({}));
        let rows = rows(&stats);
        assert_eq!(rows.len(), 3);
        let max = rows[2].1.max.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((rows[2].0, max.value(0)), (2, 29));
        assert_eq!(rows[1].2.as_deref(), Some("v1"));
        // Deterministic bytes: the same statistics, the same file.
        assert_eq!(file(), file());
    }

    /// A compressed file declares the sizes its buffers decompress to: it is
    /// refused before anything is decompressed.
    #[test]
    fn compressed_files_are_refused() {
        let stats = decode("k", &file()).unwrap().unwrap();
        let mut out = Vec::new();
        let options = IpcWriteOptions::default()
            .try_with_compression(Some(CompressionType::ZSTD))
            .unwrap();
        let mut writer =
            FileWriter::try_new_with_options(&mut out, stats.batch.schema_ref(), options).unwrap();
        writer.write(&stats.batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        let e = decode("k", &out).unwrap_err().to_string();
        assert!(e.contains("compressed"), "{e}");
    }

    /// Files that are not statistics files are errors naming the key.
    #[test]
    fn other_files_are_errors() {
        let good = file();
        for bad in [
            &b""[..],
            b"ARROW1",
            &good[..good.len() / 2],
            &good[..good.len() - 1],
        ] {
            let e = decode("x/zarrow.stats", bad).unwrap_err().to_string();
            assert!(e.contains("x/zarrow.stats"), "{e}");
        }
        // Another table in IPC: its columns are refused.
        let batch = RecordBatch::try_from_iter([(
            "a",
            Arc::new(StringArray::from(vec!["x"])) as Arc<dyn Array>,
        )])
        .unwrap();
        let mut out = Vec::new();
        let mut writer = FileWriter::try_new(&mut out, batch.schema_ref()).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        assert!(decode("k", &out).is_err());
    }
}
