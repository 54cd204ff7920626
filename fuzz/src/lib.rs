//! zarrow's fuzz targets as plain functions, one per target: `pub fn NAME(data: &[u8])`.
//!
//! Each `fuzz_targets/NAME.rs` only calls its function, and the main crate's test
//! `tests/integration/fuzz_replay.rs` includes this file to replay `corpus/NAME/` and
//! `regressions/NAME/` on stable. So this file is one module with no `crate::` paths
//! and depends only on crates zarrow's tests also have (`zarrow`, `arrow-*`,
//! `serde_json`, `arbitrary`).
//!
//! A function panics only when zarrow misbehaves: a panic inside zarrow, an `Ok`
//! array that fails arrow-rs's `validate_full`, an array of another type or length
//! than zarrow announced, two string layouts that read different values from the
//! same bytes, or a round trip (write then read) that does not give back the values.
//! Every `Err` from zarrow is fine.
//!
//! Everything goes through the public API: metadata documents and chunks in a
//! [`MemoryStore`], opened with [`ZarrArray::open_with`] under each
//! [`StringType`], then a chunk row through the reader, `read_all`, `read_range`
//! and `batches` (the group reader for groups). The first bytes of an input choose parameters;
//! each target documents its input layout, and `examples/seeds.rs` builds the seed
//! corpus in that layout from `testdata/stores/`.

use std::cell::Cell;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray, Float32Array,
    Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray, UInt8Array, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_buffer::Buffer;
use arrow_schema::DataType as ArrowType;
use serde_json::{Value, json};
use zarrow::CodecChain as BytesToBytes;
use zarrow::write::{Compressor, Encoding, NullPolicy, WriteOptions};
use zarrow::{
    Decode, ExecutionContext, MemoryStore, NodeMetadata, ReadOptions, Store, StringType, ZarrArray,
    ZarrGroup,
};

/// The decoded-chunk bound every target reads with.
pub const MAX_CHUNK_BYTES: usize = 16 << 20;

/// Arrays longer than this (or of more chunks than [`MAX_READ_CHUNKS`]) are opened
/// and their chunk 0 decoded, but not read whole.
pub const MAX_READ_ELEMENTS: u64 = 1 << 14;

/// See [`MAX_READ_ELEMENTS`].
pub const MAX_READ_CHUNKS: u64 = 256;

/// The string layouts every decoder target reads each input with.
pub const STRING_TYPES: [StringType; 3] = [
    StringType::Utf8,
    StringType::LargeUtf8,
    StringType::Utf8View,
];

/// The byte that separates the parts of a `metadata_v3` / `metadata_v2` input (never
/// part of valid JSON).
pub const SEPARATOR: u8 = 0xFF;

thread_local! {
    static DECODED: Cell<u64> = const { Cell::new(0) };
}

/// How many arrays zarrow returned `Ok` (and that passed the checks) on this thread
/// so far: lets the seed builder and the replay test see that inputs reach the
/// decoders rather than failing early.
pub fn decoded_count() -> u64 {
    DECODED.with(Cell::get)
}

// ---------------------------------------------------------------------------
// Checks shared by the targets
// ---------------------------------------------------------------------------

/// Decoded on the fuzzing thread, as a fuzzer wants it.
fn inline() -> ExecutionContext {
    ExecutionContext::default().with_decode(Decode::Inline)
}

fn read_options(string_type: StringType) -> ReadOptions {
    ReadOptions {
        string_type: Some(string_type),
        max_chunk_bytes: MAX_CHUNK_BYTES,
        ..ReadOptions::default()
    }
}

/// Panic unless `array` passes arrow-rs's full validation, has the type zarrow
/// announced and (when given) `len` elements.
fn check(what: &str, array: &dyn Array, expected: &ArrowType, len: Option<u64>) {
    if let Err(e) = array.to_data().validate_full() {
        panic!(
            "{what}: zarrow returned an invalid {} array of {} elements: {e}",
            array.data_type(),
            array.len()
        );
    }
    strict_strings(what, array);
    assert_eq!(
        array.data_type(),
        expected,
        "{what}: the array's type is not ZarrArray::arrow_type()"
    );
    if let Some(n) = len {
        assert_eq!(array.len() as u64, n, "{what}: wrong element count");
    }
    DECODED.with(|c| c.set(c.get() + 1));
}

/// Panic unless a `Utf8` / `LargeUtf8` array also passes arrow-rs's constructor
/// check, which is stricter than `validate_full`: the *whole* values buffer must be
/// UTF-8 and every offset a character boundary of it (issue 10's soundness hole was
/// an array that broke this).
fn strict_strings(what: &str, array: &dyn Array) {
    let rebuilt = match array.data_type() {
        ArrowType::Utf8 => {
            let a = array.as_string::<i32>();
            StringArray::try_new(a.offsets().clone(), a.values().clone(), a.nulls().cloned())
                .map(drop)
        }
        ArrowType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            LargeStringArray::try_new(a.offsets().clone(), a.values().clone(), a.nulls().cloned())
                .map(drop)
        }
        _ => Ok(()),
    };
    if let Err(e) = rebuilt {
        panic!("{what}: zarrow returned a string array that arrow-rs's try_new refuses: {e}");
    }
}

/// One element, compared by value across Arrow layouts (floats by bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scalar {
    /// A null slot.
    Null,
    /// A boolean.
    Bool(bool),
    /// Any integer.
    Int(i128),
    /// A float32, by bits.
    F32(u32),
    /// A float64, by bits.
    F64(u64),
    /// A string's UTF-8 bytes.
    Text(Vec<u8>),
    /// A byte string.
    Bytes(Vec<u8>),
}

impl Scalar {
    /// The same value with every NaN made the canonical NaN (for formats that spell
    /// NaN as a word and so cannot keep its payload).
    fn canonical_nan(self) -> Self {
        match self {
            Self::F32(b) if f32::from_bits(b).is_nan() => Self::F32(f32::NAN.to_bits()),
            Self::F64(b) if f64::from_bits(b).is_nan() => Self::F64(f64::NAN.to_bits()),
            other => other,
        }
    }
}

macro_rules! collect {
    ($iter:expr, $f:expr) => {
        $iter.map(|v| v.map($f).unwrap_or(Scalar::Null)).collect()
    };
}

/// Every element of `array` as a [`Scalar`]; `None` for a type zarrow never makes.
pub fn scalars(array: &dyn Array) -> Option<Vec<Scalar>> {
    let text = |s: &str| Scalar::Text(s.as_bytes().to_vec());
    let bytes = |b: &[u8]| Scalar::Bytes(b.to_vec());
    let int = |v: i128| Scalar::Int(v);
    Some(match array.data_type() {
        ArrowType::Utf8 => collect!(array.as_string::<i32>().iter(), text),
        ArrowType::LargeUtf8 => collect!(array.as_string::<i64>().iter(), text),
        ArrowType::Utf8View => collect!(array.as_string_view().iter(), text),
        ArrowType::Binary => collect!(array.as_binary::<i32>().iter(), bytes),
        ArrowType::LargeBinary => collect!(array.as_binary::<i64>().iter(), bytes),
        ArrowType::BinaryView => collect!(array.as_binary_view().iter(), bytes),
        ArrowType::Boolean => collect!(array.as_boolean().iter(), Scalar::Bool),
        ArrowType::Int8 => collect!(array.as_primitive::<Int8Type>().iter(), |v| int(v.into())),
        ArrowType::Int16 => collect!(array.as_primitive::<Int16Type>().iter(), |v| int(v.into())),
        ArrowType::Int32 => collect!(array.as_primitive::<Int32Type>().iter(), |v| int(v.into())),
        ArrowType::Int64 => collect!(array.as_primitive::<Int64Type>().iter(), |v| int(v.into())),
        ArrowType::UInt8 => collect!(array.as_primitive::<UInt8Type>().iter(), |v| int(v.into())),
        ArrowType::UInt16 => {
            collect!(array.as_primitive::<UInt16Type>().iter(), |v| int(v.into()))
        }
        ArrowType::UInt32 => {
            collect!(array.as_primitive::<UInt32Type>().iter(), |v| int(v.into()))
        }
        ArrowType::UInt64 => {
            collect!(array.as_primitive::<UInt64Type>().iter(), |v| int(v.into()))
        }
        ArrowType::Float16 => collect!(array.as_primitive::<Float16Type>().iter(), |v| {
            Scalar::F32(v.to_f32().to_bits())
        }),
        ArrowType::Float32 => collect!(array.as_primitive::<Float32Type>().iter(), |v| {
            Scalar::F32(v.to_bits())
        }),
        // numpy's times: their counts (the unit is in the type), NaT a null.
        ArrowType::Date32 => collect!(array.as_primitive::<Date32Type>().iter(), |v| int(v.into())),
        ArrowType::Timestamp(..) | ArrowType::Duration(_) => {
            let data = array.to_data();
            let counts = data.buffers().first()?.typed_data::<i64>();
            (0..array.len())
                .map(|i| match array.is_null(i) {
                    true => Scalar::Null,
                    false => int(counts[data.offset() + i].into()),
                })
                .collect()
        }
        ArrowType::Float64 => collect!(array.as_primitive::<Float64Type>().iter(), |v| {
            Scalar::F64(v.to_bits())
        }),
        ArrowType::Dictionary(key, _) if **key == ArrowType::Int32 => {
            let dict = array.as_dictionary::<Int32Type>();
            let values = scalars(dict.values().as_ref())?;
            dict.keys()
                .iter()
                .map(|k| match k {
                    Some(k) => values.get(k as usize).cloned().unwrap_or(Scalar::Null),
                    None => Scalar::Null,
                })
                .collect()
        }
        _ => return None,
    })
}

/// Read the array at `path` every way, under each string layout: the chunk row
/// of each of `chunks` (see [`chunk_row`]), then (when small) `read_all`; the
/// values `read_all` gives must not depend on the layout. `read_range` and
/// `batches` (which decode the same chunks again) run under one layout,
/// `STRING_TYPES[rotate % 3]`.
fn exercise(store: &Arc<dyn Store>, path: &str, chunks: &[Vec<u64>], rotate: usize) {
    let mut first: Option<(StringType, Vec<Scalar>)> = None;
    for (i, string_type) in STRING_TYPES.into_iter().enumerate() {
        let Ok(array) = ZarrArray::open_with(store.clone(), path, read_options(string_type)) else {
            return;
        };
        let meta = array.metadata();
        let expected = array.arrow_type();
        let text_or_bytes = matches!(
            meta.data_type,
            zarrow::DataType::String
                | zarrow::DataType::Bytes
                | zarrow::DataType::FixedUtf32 { .. }
                | zarrow::DataType::NullTerminatedBytes { .. }
        );
        let all_reads = i == rotate % STRING_TYPES.len() || !text_or_bytes;
        for indices in chunks {
            chunk_row(&array, indices, &expected);
        }
        // Metadata targets give arrays of any size: read only small ones.
        if array.len() <= MAX_READ_ELEMENTS && array.chunk_keys().len() as u64 <= MAX_READ_CHUNKS {
            if let Ok(all) = array.read_all() {
                check("read_all", all.as_ref(), &expected, Some(array.len()));
                if let Some(values) = scalars(all.as_ref()) {
                    match &first {
                        None => first = Some((string_type, values)),
                        Some((t, v)) => assert!(
                            *v == values,
                            "read_all gives other values as {string_type:?} than as {t:?}"
                        ),
                    }
                }
            }
            if all_reads && meta.shape.len() == 1 && array.len() >= 2 {
                let range = 1..array.len();
                if let Ok(part) = array.read_range(range.clone()) {
                    check("read_range", part.as_ref(), &expected, Some(range.end - 1));
                }
            }
            if all_reads {
                for batch in array.batches(&zarrow::ExecutionContext::default()) {
                    let Ok(batch) = batch else { break };
                    check("batches", batch.column(0).as_ref(), &expected, None);
                }
            }
        }
        if !text_or_bytes {
            // The string layout cannot change a numeric or bool read.
            break;
        }
    }
}

/// The chunk row that holds the chunk at grid `indices` (a 1-D array's chunk, an
/// N-d array's chunks that share its first index, in C order; a 0-d array's
/// element), read by the push decoder for its elements' range, when not too
/// many; each batch checked, and the elements counted.
fn chunk_row(array: &ZarrArray, indices: &[u64], expected: &ArrowType) {
    let meta = array.metadata();
    let per_row = match (meta.shape.split_first(), meta.chunk_shape.first()) {
        (Some((_, rest)), Some(&c)) => rest.iter().fold(c, |a, &d| a.saturating_mul(d)),
        _ => 1,
    };
    let start = indices
        .first()
        .copied()
        .unwrap_or(0)
        .saturating_mul(per_row.max(1));
    let end = start.saturating_add(per_row.max(1)).min(array.len());
    if start >= end || end - start > MAX_READ_ELEMENTS {
        return;
    }
    let Ok(reader) = array
        .reader()
        .with_context(&inline())
        .with_row_range(start..end)
        .build()
    else {
        return;
    };
    let mut rows = 0;
    for batch in reader {
        let Ok(batch) = batch else { return };
        check("chunk row", batch.column(0).as_ref(), expected, None);
        rows += batch.num_rows() as u64;
    }
    assert_eq!(rows, end - start, "the chunk row's batches miss elements");
}

/// Open the group at `path` under each string layout and read it as a table.
fn exercise_group(store: &Arc<dyn Store>, path: &str) {
    for string_type in STRING_TYPES {
        let Ok(group) = ZarrGroup::open_with(store.clone(), path, read_options(string_type)) else {
            return;
        };
        let _ = group.children();
        for column in group.columns() {
            let _ = column.field();
        }
        let _ = group.skipped();
        let Ok(reader) = group
            .reader()
            .with_context(&inline())
            .with_batch_size(7)
            .build()
        else {
            continue;
        };
        for batch in reader {
            let Ok(batch) = batch else { break };
            let schema = batch.schema();
            for (field, column) in schema.fields().iter().zip(batch.columns()) {
                check("group reader", column.as_ref(), field.data_type(), None);
            }
        }
    }
}

/// A store holding `docs` (key, JSON document).
fn store_with(docs: &[(String, Value)]) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    for (key, doc) in docs {
        let bytes = serde_json::to_vec(doc).unwrap_or_default();
        let _ = store.set(key, &bytes);
    }
    store
}

/// Build a store from an array's metadata documents and its chunks (by grid index),
/// then [`exercise`] it, decoding `decode` chunks one by one.
fn run_array(docs: &[(String, Value)], chunks: &[(Vec<u64>, Vec<u8>)], decode: &[Vec<u64>]) {
    let store = store_with(docs);
    let Ok(array) = ZarrArray::open_with(store.clone(), "", read_options(StringType::Utf8)) else {
        return;
    };
    let mut rotate = 0;
    for (indices, bytes) in chunks {
        let _ = store.set(&array.chunk_key(indices), bytes);
        rotate += bytes.len();
    }
    exercise(&store, "", decode, rotate);
}

// ---------------------------------------------------------------------------
// Metadata documents
// ---------------------------------------------------------------------------

fn v3_doc(shape: &[u64], chunks: &[u64], data_type: Value, fill: Value, codecs: Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs, "attributes": {}, "storage_transformers": []
    })
}

/// Zarr v2 `.zarray`.
struct V2<'a> {
    dtype: &'a str,
    fill: Value,
    filters: Value,
    compressor: Value,
    fortran: bool,
}

fn v2_doc(shape: &[u64], chunks: &[u64], v2: V2) -> Value {
    json!({
        "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": v2.dtype,
        "fill_value": v2.fill, "filters": v2.filters, "compressor": v2.compressor,
        "order": if v2.fortran { "F" } else { "C" }, "dimension_separator": "."
    })
}

fn v3_docs(doc: Value) -> Vec<(String, Value)> {
    vec![("zarr.json".to_string(), doc)]
}

fn v2_docs(doc: Value) -> Vec<(String, Value)> {
    vec![
        (".zarray".to_string(), doc),
        (".zattrs".to_string(), json!({})),
    ]
}

/// A bytes->bytes codec the harness applies itself, so that the fuzzer mutates the
/// layout behind a real compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// No codec.
    None,
    /// zstd (vlen + zstd alone takes zarrow's fused decoder).
    Zstd,
    /// gzip.
    Gzip,
    /// crc32c.
    Crc32c,
}

impl Wrap {
    /// From the two low bits of `b`.
    pub fn from_bits(b: u8) -> Self {
        match b % 4 {
            0 => Self::None,
            1 => Self::Zstd,
            2 => Self::Gzip,
            _ => Self::Crc32c,
        }
    }

    fn codec(self) -> Option<BytesToBytes> {
        match self {
            Self::None => None,
            Self::Zstd => Some(b2b(
                json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}),
            )),
            Self::Gzip => Some(b2b(json!({"name": "gzip", "configuration": {"level": 1}}))),
            Self::Crc32c => Some(b2b(json!({"name": "crc32c"}))),
        }
    }

    fn v3(self) -> Vec<Value> {
        match self {
            Self::None => vec![],
            Self::Zstd => {
                vec![json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}})]
            }
            Self::Gzip => vec![json!({"name": "gzip", "configuration": {"level": 1}})],
            Self::Crc32c => vec![json!({"name": "crc32c"})],
        }
    }

    fn v2(self) -> Value {
        match self {
            Self::None => Value::Null,
            Self::Zstd => json!({"id": "zstd", "level": 1}),
            Self::Gzip => json!({"id": "gzip", "level": 1}),
            Self::Crc32c => json!({"id": "crc32c"}),
        }
    }

    fn apply(self, bytes: &[u8]) -> Option<Vec<u8>> {
        match self.codec() {
            None => Some(bytes.to_vec()),
            Some(codec) => codec.encode_bytes(bytes.to_vec()).ok(),
        }
    }
}

/// A chain of `bytes` then `codec`, to apply `codec` to the harness's data.
fn b2b(codec: Value) -> BytesToBytes {
    let list: Vec<zarrow::metadata::CodecMetadata> =
        serde_json::from_value(json!([{"name": "bytes"}, codec])).expect("codec list");
    BytesToBytes::from_codecs(&list).expect("a known codec")
}

fn codecs(mut list: Vec<Value>, wrap: Wrap) -> Value {
    list.extend(wrap.v3());
    Value::Array(list)
}

/// `N` header bytes and the rest.
fn header<const N: usize>(data: &[u8]) -> Option<([u8; N], &[u8])> {
    let head: [u8; N] = data.get(..N)?.try_into().ok()?;
    Some((head, &data[N..]))
}

/// A chunk's element count from two header bytes: 1..=4096.
pub fn elements(lo: u8, hi: u8) -> u64 {
    1 + u64::from(u16::from_le_bytes([lo, hi])) % 4096
}

/// The two header bytes for `n` elements (1..=4096), as [`elements`] reads them.
pub fn elements_bytes(n: u64) -> [u8; 2] {
    (n.clamp(1, 4096) as u16 - 1).to_le_bytes()
}

// ---------------------------------------------------------------------------
// Decoder targets
// ---------------------------------------------------------------------------

/// `vlen-utf8`, `vlen-bytes`, `zarrs.vlen_v2` (v3 and v2 metadata).
///
/// Input: `[variant, wrap, n_lo, n_hi, chunk...]`. `variant % 7`: 0 v3 `string` +
/// `vlen-utf8`; 1 v3 `variable_length_bytes` + `vlen-bytes`; 2 v3 `string` +
/// `zarrs.vlen_v2`; 3 v3 `bytes` + `zarrs.vlen_v2`; 4 v2 `|O` + `vlen-utf8`; 5 v2
/// `|O` + `vlen-bytes`; 6 v3 `{"name": "string"}` + `vlen-utf8`. `wrap`: bits 0-1 a
/// [`Wrap`] the harness applies to the chunk, bits 2-3 extra (missing) elements past
/// the chunk. The chunk holds [`elements`] elements.
pub fn vlen_interleaved(data: &[u8]) {
    let Some(([variant, wrap, lo, hi], chunk)) = header::<4>(data) else {
        return;
    };
    let n = elements(lo, hi);
    let shape = [n + u64::from(wrap >> 2) % 4];
    let wrap_codec = Wrap::from_bits(wrap);
    let vlen = |name: &str| vec![json!({"name": name, "configuration": {}})];
    let v2 = |filter: &str| V2 {
        dtype: "|O",
        fill: json!(""),
        filters: json!([{ "id": filter }]),
        compressor: wrap_codec.v2(),
        fortran: false,
    };
    let docs = match variant % 7 {
        0 => v3_docs(v3_doc(
            &shape,
            &[n],
            json!("string"),
            json!(""),
            codecs(vlen("vlen-utf8"), wrap_codec),
        )),
        1 => v3_docs(v3_doc(
            &shape,
            &[n],
            json!("variable_length_bytes"),
            json!(""),
            codecs(vlen("vlen-bytes"), wrap_codec),
        )),
        2 => v3_docs(v3_doc(
            &shape,
            &[n],
            json!("string"),
            json!(""),
            codecs(vlen("zarrs.vlen_v2"), wrap_codec),
        )),
        3 => v3_docs(v3_doc(
            &shape,
            &[n],
            json!("bytes"),
            json!([]),
            codecs(vlen("zarrs.vlen_v2"), wrap_codec),
        )),
        4 => v2_docs(v2_doc(&shape, &[n], v2("vlen-utf8"))),
        5 => v2_docs(v2_doc(&shape, &[n], v2("vlen-bytes"))),
        _ => v3_docs(v3_doc(
            &shape,
            &[n],
            json!({"name": "string"}),
            json!(""),
            codecs(vlen("vlen-utf8"), wrap_codec),
        )),
    };
    let Some(bytes) = wrap_codec.apply(chunk) else {
        return;
    };
    run_array(&docs, &[(vec![0], bytes)], &[vec![0], vec![1]]);
}

/// The codecs of a `zarrs.vlen` index (`sel % 4`: bytes; + crc32c; + zstd; + gzip).
fn zarrs_index_chain(sel: u8) -> (Vec<Value>, Option<BytesToBytes>) {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    match sel % 4 {
        0 => (vec![bytes], None),
        1 => (
            vec![bytes, json!({"name": "crc32c"})],
            Some(b2b(json!({"name": "crc32c"}))),
        ),
        2 => (
            vec![
                bytes,
                json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}),
            ],
            Wrap::Zstd.codec(),
        ),
        _ => (
            vec![
                bytes,
                json!({"name": "gzip", "configuration": {"level": 1}}),
            ],
            Wrap::Gzip.codec(),
        ),
    }
}

/// The codecs of a `zarrs.vlen` data section (`sel % 4`: bytes; + zstd; + crc32c;
/// + gzip).
fn zarrs_data_chain(sel: u8) -> (Vec<Value>, Option<BytesToBytes>) {
    let bytes = json!({"name": "bytes"});
    match sel % 4 {
        0 => (vec![bytes], None),
        1 => (
            vec![
                bytes,
                json!({"name": "zstd", "configuration": {"level": 1, "checksum": true}}),
            ],
            Some(b2b(
                json!({"name": "zstd", "configuration": {"level": 1, "checksum": true}}),
            )),
        ),
        2 => (
            vec![bytes, json!({"name": "crc32c"})],
            Some(b2b(json!({"name": "crc32c"}))),
        ),
        _ => (
            vec![
                bytes,
                json!({"name": "gzip", "configuration": {"level": 1}}),
            ],
            Wrap::Gzip.codec(),
        ),
    }
}

/// Split a `zarrs.vlen` chunk laid out with the index at the start (`u64 L`, L bytes
/// of index, data).
pub fn split_index_start(chunk: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u64::from_le_bytes(chunk.get(..8)?.try_into().ok()?);
    let end = 8usize.checked_add(usize::try_from(len).ok()?)?;
    Some((chunk.get(8..end)?, chunk.get(end..)?))
}

/// `zarrs.vlen`: uint32/uint64 index, at the start or the end, with and without
/// nested index and data codecs.
///
/// Input: `[cfg, nested, n_lo, n_hi, chunk...]`. `cfg` bit 0: uint32 index (else
/// uint64); bit 1: index at the end; bit 2: `bytes` data type (else `string`); bit
/// 3: the harness wraps the chunk in zstd (an outer codec); bits 4-5 `% 3`: the name
/// `zarrs.vlen`, `vlen`, or the URL (the last two leave default fields out); bits
/// 6-7: extra (missing) elements. `nested` bits 0-1: index codecs (bytes; +crc32c;
/// +zstd; +gzip), bits 2-3: data codecs (bytes; +zstd; +crc32c; +gzip).
///
/// With plain nested codecs the chunk is used as it is. Otherwise it is read as the
/// plain start layout (`u64 L`, index, data) and the harness encodes the index and
/// the data with the nested codecs and lays them out at `cfg`'s location (falling
/// back to the raw chunk when it does not parse).
pub fn zarrs_vlen(data: &[u8]) {
    let Some(([cfg, nested, lo, hi], chunk)) = header::<4>(data) else {
        return;
    };
    let n = elements(lo, hi);
    let shape = [n + u64::from(cfg >> 6)];
    let u32_index = cfg & 1 != 0;
    let at_end = cfg & 2 != 0;
    let bytes_type = cfg & 4 != 0;
    let outer = if cfg & 8 != 0 { Wrap::Zstd } else { Wrap::None };
    let alias = (cfg >> 4) % 3;
    let (index_json, index_codec) = zarrs_index_chain(nested);
    let (data_json, data_codec) = zarrs_data_chain(nested >> 2);

    let mut config = serde_json::Map::new();
    config.insert("index_codecs".into(), Value::Array(index_json));
    config.insert("data_codecs".into(), Value::Array(data_json));
    if alias == 0 || u32_index {
        config.insert(
            "index_data_type".into(),
            json!(if u32_index { "uint32" } else { "uint64" }),
        );
    }
    if alias == 0 || at_end {
        config.insert(
            "index_location".into(),
            json!(if at_end { "end" } else { "start" }),
        );
    }
    let name = [
        "zarrs.vlen",
        "vlen",
        "https://codec.zarrs.dev/array_to_bytes/vlen",
    ][alias as usize];
    let layout = vec![json!({"name": name, "configuration": config})];
    let (data_type, fill) = if bytes_type {
        (json!("bytes"), json!([]))
    } else {
        (json!("string"), json!(""))
    };
    let doc = v3_doc(&shape, &[n], data_type, fill, codecs(layout, outer));

    let raw = match (index_codec, data_codec, split_index_start(chunk)) {
        (None, None, _) | (_, _, None) => chunk.to_vec(),
        (index_codec, data_codec, Some((index, values))) => {
            let encode = |codec: &Option<BytesToBytes>, b: &[u8]| match codec {
                Some(c) => c.encode_bytes(b.to_vec()).ok(),
                None => Some(b.to_vec()),
            };
            let Some(index) = encode(&index_codec, index) else {
                return;
            };
            // zarrs runs no data codecs on empty data.
            let values = if values.is_empty() {
                Vec::new()
            } else {
                let Some(v) = encode(&data_codec, values) else {
                    return;
                };
                v
            };
            let len = (index.len() as u64).to_le_bytes();
            if at_end {
                [values.as_slice(), &index, &len].concat()
            } else {
                [&len[..], &index, &values].concat()
            }
        }
    };
    let Some(bytes) = outer.apply(&raw) else {
        return;
    };
    run_array(&v3_docs(doc), &[(vec![0], bytes)], &[vec![0], vec![1]]);
}

/// The ZEP0007 draft data types `string`, `binary`, `large_string`, `large_binary`.
///
/// Input: `[cfg, wrap, n_lo, n_hi, chunk...]`. `cfg` bit 0: large (int64 offsets);
/// bit 1: binary; bits 2-3: extra (missing) elements; bit 4: a 2-D array of `[n, 2]`
/// chunks (the chunk then holds `2n` elements). `wrap`: a [`Wrap`] the harness
/// applies.
pub fn zep0007(data: &[u8]) {
    let Some(([cfg, wrap, lo, hi], chunk)) = header::<4>(data) else {
        return;
    };
    let n = elements(lo, hi);
    let extra = u64::from(cfg >> 2) % 4;
    let name = match cfg % 4 {
        0 => "string",
        1 => "large_string",
        2 => "binary",
        _ => "large_binary",
    };
    let fill = if cfg & 2 == 0 { json!("") } else { json!([]) };
    let (shape, chunks) = if cfg & 16 != 0 {
        (vec![n + extra, 2], vec![n, 2])
    } else {
        (vec![n + extra], vec![n])
    };
    let wrap = Wrap::from_bits(wrap);
    let doc = v3_doc(
        &shape,
        &chunks,
        json!({ "name": name }),
        fill,
        codecs(vec![], wrap),
    );
    let Some(bytes) = wrap.apply(chunk) else {
        return;
    };
    let first = vec![0; shape.len()];
    let mut second = first.clone();
    second[0] = 1;
    run_array(&v3_docs(doc), &[(first.clone(), bytes)], &[first, second]);
}

/// The fixed-width data types, in v3 and v2 spelling.
#[derive(Debug, Clone, Copy)]
struct Fixed {
    v3: &'static str,
    kind: char,
    size: usize,
}

const FIXED: [Fixed; 11] = [
    Fixed {
        v3: "bool",
        kind: 'b',
        size: 1,
    },
    Fixed {
        v3: "int8",
        kind: 'i',
        size: 1,
    },
    Fixed {
        v3: "int16",
        kind: 'i',
        size: 2,
    },
    Fixed {
        v3: "int32",
        kind: 'i',
        size: 4,
    },
    Fixed {
        v3: "int64",
        kind: 'i',
        size: 8,
    },
    Fixed {
        v3: "uint8",
        kind: 'u',
        size: 1,
    },
    Fixed {
        v3: "uint16",
        kind: 'u',
        size: 2,
    },
    Fixed {
        v3: "uint32",
        kind: 'u',
        size: 4,
    },
    Fixed {
        v3: "uint64",
        kind: 'u',
        size: 8,
    },
    Fixed {
        v3: "float32",
        kind: 'f',
        size: 4,
    },
    Fixed {
        v3: "float64",
        kind: 'f',
        size: 8,
    },
];

/// numpy's time units, for `numpy.datetime64` (all five) and `numpy.timedelta64`
/// (the first four).
const TIME_UNITS: [&str; 5] = ["s", "ms", "us", "ns", "D"];

/// The v3 data type, v2 dtype and fill value (v3, v2) of fixed-width type `sel % 16`
/// (the 11 of [`FIXED`], then `fixed_length_utf32` of `width % 16 + 1` characters,
/// `null_terminated_bytes` of `width % 32 + 1` bytes, `float16`, and
/// `numpy.datetime64` / `numpy.timedelta64` in unit `width % 5` / `width % 4` of
/// [`TIME_UNITS`], fill NaT).
fn fixed_type(sel: u8, width: u8, big: bool) -> (Value, String, Value) {
    let order = if big { '>' } else { '<' };
    match sel % 16 {
        13 => (json!("float16"), format!("{order}f2"), json!("NaN")),
        14 | 15 => {
            let (name, kind, unit) = if sel % 16 == 14 {
                ("numpy.datetime64", 'M', TIME_UNITS[usize::from(width % 5)])
            } else {
                ("numpy.timedelta64", 'm', TIME_UNITS[usize::from(width % 4)])
            };
            (
                json!({"name": name, "configuration": {"unit": unit, "scale_factor": 1}}),
                format!("{order}{kind}8[{unit}]"),
                json!(i64::MIN),
            )
        }
        11 => {
            let chars = usize::from(width % 16) + 1;
            (
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": chars * 4}}),
                format!("{order}U{chars}"),
                json!(""),
            )
        }
        12 => {
            let len = usize::from(width % 32) + 1;
            (
                json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": len}}),
                format!("|S{len}"),
                json!(""),
            )
        }
        i => {
            let t = FIXED[usize::from(i)];
            let order = if t.size == 1 { '|' } else { order };
            let fill = match t.kind {
                'b' => json!(false),
                'f' => json!(0.0),
                _ => json!(0),
            };
            (json!(t.v3), format!("{order}{}{}", t.kind, t.size), fill)
        }
    }
}

/// The `bytes` codec with every fixed-width type and both byte orders.
///
/// Input: `[type, cfg, width, n_lo, n_hi, chunk...]`. `type % 16`: bool, int8..int64,
/// uint8..uint64, float32, float64, fixed_length_utf32, null_terminated_bytes
/// (`width` sets their size), float16, numpy.datetime64, numpy.timedelta64 (`width`
/// sets their unit). `cfg` bit 0: big-endian; bit 1: v2 metadata;
/// bits 2-3: a [`Wrap`] the harness applies; bits 4-5: extra (missing) elements.
pub fn fixed(data: &[u8]) {
    let Some(([sel, cfg, width, lo, hi], chunk)) = header::<5>(data) else {
        return;
    };
    let n = elements(lo, hi);
    let shape = [n + u64::from(cfg >> 4) % 4];
    let big = cfg & 1 != 0;
    let wrap = Wrap::from_bits(cfg >> 2);
    let (v3_type, dtype, fill) = fixed_type(sel, width, big);
    let docs = if cfg & 2 != 0 {
        v2_docs(v2_doc(
            &shape,
            &[n],
            V2 {
                dtype: &dtype,
                fill,
                filters: Value::Null,
                compressor: wrap.v2(),
                fortran: false,
            },
        ))
    } else {
        let endian = if big { "big" } else { "little" };
        let bytes = vec![json!({"name": "bytes", "configuration": {"endian": endian}})];
        v3_docs(v3_doc(&shape, &[n], v3_type, fill, codecs(bytes, wrap)))
    };
    let Some(bytes) = wrap.apply(chunk) else {
        return;
    };
    run_array(&docs, &[(vec![0], bytes)], &[vec![0], vec![1]]);
}

/// The permutations of 2 and 3 dimensions.
const PERMUTATIONS_2: [[usize; 2]; 2] = [[0, 1], [1, 0]];
const PERMUTATIONS_3: [[usize; 3]; 6] = [
    [0, 1, 2],
    [0, 2, 1],
    [1, 0, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
];

/// The grid indices of a `2 x 2 (x 2)` grid, in C order.
fn grid_indices(ndim: usize) -> Vec<Vec<u64>> {
    (0..1u64 << ndim)
        .map(|i| (0..ndim).rev().map(|d| (i >> d) & 1).collect())
        .collect()
}

/// `transpose` on 2-D and 3-D arrays (and v2 `"order": "F"`), numeric and string.
///
/// Input: `[cfg, d0, d1, d2, perm, chunk...]`. `cfg` bit 0: 3-D (else 2-D); bits
/// 1-3: the type (int32; float64 big-endian; bool; string + vlen-utf8;
/// variable_length_bytes + vlen-bytes; string + zarrs.vlen (uint32);
/// fixed_length_utf32 of 2; ZEP0007 `{"name": "string"}`); bit 4: v2 with
/// `"order": "F"` instead of a v3 `transpose` (for the types v2 has); bit 5: the
/// harness wraps chunks in zstd.
/// Chunk extents are `d % 6 + 1`; `perm` picks the permutation. The array is 1.5
/// chunks along each dimension, so the grid is 2 per dimension: the chunk is stored
/// at every grid position but the last (which reads as the fill value).
pub fn transpose(data: &[u8]) {
    let Some(([cfg, d0, d1, d2, perm], chunk)) = header::<5>(data) else {
        return;
    };
    let ndim = if cfg & 1 != 0 { 3 } else { 2 };
    let chunk_shape: Vec<u64> = [d0, d1, d2][..ndim]
        .iter()
        .map(|&d| u64::from(d % 6) + 1)
        .collect();
    let shape: Vec<u64> = chunk_shape.iter().map(|&c| c + c.div_ceil(2)).collect();
    let order: Vec<usize> = if ndim == 3 {
        PERMUTATIONS_3[usize::from(perm) % 6].to_vec()
    } else {
        PERMUTATIONS_2[usize::from(perm) % 2].to_vec()
    };
    let wrap = if cfg & 32 != 0 {
        Wrap::Zstd
    } else {
        Wrap::None
    };
    let kind = (cfg >> 1) % 8;
    let v2 = cfg & 16 != 0 && !matches!(kind, 5 | 7);
    let docs = if v2 {
        let (dtype, filters, fill) = match kind {
            0 => ("<i4", Value::Null, json!(0)),
            1 => (">f8", Value::Null, json!(0.0)),
            2 => ("|b1", Value::Null, json!(false)),
            3 => ("|O", json!([{"id": "vlen-utf8"}]), json!("")),
            4 => ("|O", json!([{"id": "vlen-bytes"}]), json!("")),
            _ => ("<U2", Value::Null, json!("")),
        };
        v2_docs(v2_doc(
            &shape,
            &chunk_shape,
            V2 {
                dtype,
                fill,
                filters,
                compressor: wrap.v2(),
                fortran: true,
            },
        ))
    } else {
        let little = json!({"name": "bytes", "configuration": {"endian": "little"}});
        let (data_type, fill, layout) = match kind {
            0 => (json!("int32"), json!(0), vec![little]),
            1 => (
                json!("float64"),
                json!("NaN"),
                vec![json!({"name": "bytes", "configuration": {"endian": "big"}})],
            ),
            2 => (json!("bool"), json!(true), vec![json!({"name": "bytes"})]),
            3 => (
                json!("string"),
                json!("fill"),
                vec![json!({"name": "vlen-utf8"})],
            ),
            4 => (
                json!("variable_length_bytes"),
                json!("AAE="),
                vec![json!({"name": "vlen-bytes"})],
            ),
            5 => (
                json!("string"),
                json!(""),
                vec![json!({"name": "zarrs.vlen", "configuration": {"index_data_type": "uint32"}})],
            ),
            6 => (
                json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}),
                json!("ab"),
                vec![little],
            ),
            _ => (json!({"name": "string"}), json!(""), vec![]),
        };
        let mut list = vec![json!({"name": "transpose", "configuration": {"order": order}})];
        list.extend(layout);
        v3_docs(v3_doc(
            &shape,
            &chunk_shape,
            data_type,
            fill,
            codecs(list, wrap),
        ))
    };
    let Some(bytes) = wrap.apply(chunk) else {
        return;
    };
    let mut indices = grid_indices(ndim);
    indices.pop();
    let chunks: Vec<(Vec<u64>, Vec<u8>)> =
        indices.iter().map(|i| (i.clone(), bytes.clone())).collect();
    run_array(&docs, &chunks, &[vec![0; ndim]]);
}

/// The divisors of `n`, ascending.
fn divisors(n: u64) -> Vec<u64> {
    (1..=n).filter(|&d| n.is_multiple_of(d)).collect()
}

/// `sharding_indexed` with each inner layout, index at the start or the end, with and
/// without crc32c on the index. The input after the header is the whole shard.
///
/// Input: `[cfg, s0, s1, i0, i1, shard...]`. `cfg` bits 0-1: the inner layout
/// (string + vlen-utf8; string + zarrs.vlen (uint32, start); int32 + bytes;
/// variable_length_bytes + vlen-bytes); bit 2: index at the start; bit 3: crc32c on
/// the index; bit 4: inner chunks zstd-compressed; bit 5: 2-D. Shard extents are
/// `s % 8 + 1`; inner extents are the `i`-th divisor of them. The array is two shards
/// long (the second, an edge shard, is missing).
pub fn sharding(data: &[u8]) {
    let Some(([cfg, s0, s1, i0, i1], shard)) = header::<5>(data) else {
        return;
    };
    let ndim = if cfg & 32 != 0 { 2 } else { 1 };
    let shard_shape: Vec<u64> = [s0, s1][..ndim]
        .iter()
        .map(|&s| u64::from(s % 8) + 1)
        .collect();
    let inner_shape: Vec<u64> = shard_shape
        .iter()
        .zip([i0, i1])
        .map(|(&s, i)| {
            let d = divisors(s);
            d[usize::from(i) % d.len()]
        })
        .collect();
    let mut shape = shard_shape.clone();
    shape[0] = 2 * shard_shape[0] - 1;
    let (data_type, fill, layout) = match cfg % 4 {
        0 => (json!("string"), json!(""), json!({"name": "vlen-utf8"})),
        1 => (
            json!("string"),
            json!("-"),
            json!({"name": "zarrs.vlen", "configuration": {"index_data_type": "uint32", "index_location": "start"}}),
        ),
        2 => (
            json!("int32"),
            json!(-1),
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
        ),
        _ => (
            json!("variable_length_bytes"),
            json!(""),
            json!({"name": "vlen-bytes"}),
        ),
    };
    let inner_wrap = if cfg & 16 != 0 {
        Wrap::Zstd
    } else {
        Wrap::None
    };
    let mut index_codecs = vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    if cfg & 8 != 0 {
        index_codecs.push(json!({"name": "crc32c"}));
    }
    let sharding = json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner_shape,
        "codecs": codecs(vec![layout], inner_wrap),
        "index_codecs": index_codecs,
        "index_location": if cfg & 4 != 0 { "start" } else { "end" },
    }});
    let doc = v3_doc(&shape, &shard_shape, data_type, fill, json!([sharding]));
    let first = vec![0; ndim];
    run_array(&v3_docs(doc), &[(first.clone(), shard.to_vec())], &[first]);
}

/// A bytes->bytes codec of the `compressors` target (`sel % 9`; 0 is none) in v3 and
/// v2 form.
fn compressor(sel: u8, typesize: usize) -> Option<(Value, Value)> {
    Some(match sel % 9 {
        6 => (
            json!({"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}),
            json!({"id": "lz4", "acceleration": 1}),
        ),
        7 => (
            json!({"name": "numcodecs.bz2", "configuration": {"level": 1}}),
            json!({"id": "bz2", "level": 1}),
        ),
        8 => (
            json!({"name": "numcodecs.lzma", "configuration": {"format": 1, "check": -1, "preset": null, "filters": null}}),
            json!({"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null}),
        ),
        0 => return None,
        1 => (
            json!({"name": "zstd", "configuration": {"level": 0, "checksum": false}}),
            json!({"id": "zstd", "level": 0}),
        ),
        2 => (
            json!({"name": "gzip", "configuration": {"level": 5}}),
            json!({"id": "gzip", "level": 5}),
        ),
        3 => (
            json!({"name": "numcodecs.zlib", "configuration": {"level": 1}}),
            json!({"id": "zlib", "level": 1}),
        ),
        4 => (
            json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": typesize, "blocksize": 0}}),
            json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
        ),
        _ => (json!({"name": "crc32c"}), json!({"id": "crc32c"})),
    })
}

/// A chain of bytes->bytes codecs (zstd, gzip, zlib, blosc, crc32c, numcodecs lz4,
/// bz2, lzma) before a vlen-utf8, vlen-bytes or bytes layout, and for the numeric
/// layouts optionally numcodecs' delta before it; the input after the header is the
/// encoded chunk as stored.
///
/// Input: `[cfg, c0, c1, c2, n_lo, n_hi, chunk...]`. `cfg` bit 0: v2 metadata (the
/// first codec is the compressor); bits 1-2: the layout (string + vlen-utf8;
/// variable_length_bytes + vlen-bytes; int32 + bytes; uint8 + bytes); bit 3: a delta
/// filter (numeric layouts). `c0..c2 % 9`: none, zstd, gzip, zlib, blosc, crc32c,
/// lz4, bz2, lzma, in encoding order.
pub fn compressors(data: &[u8]) {
    let Some(([cfg, c0, c1, c2, lo, hi], chunk)) = header::<6>(data) else {
        return;
    };
    let n = elements(lo, hi);
    let shape = [n];
    let layout = (cfg >> 1) % 4;
    let delta = cfg & 8 != 0;
    let typesize = [1, 1, 4, 1][usize::from(layout)];
    let chain: Vec<(Value, Value)> = [c0, c1, c2]
        .iter()
        .filter_map(|&c| compressor(c, typesize))
        .collect();
    let docs = if cfg & 1 != 0 {
        let (dtype, filters, fill) = match layout {
            0 => ("|O", json!([{"id": "vlen-utf8"}]), json!("")),
            1 => ("|O", json!([{"id": "vlen-bytes"}]), json!("")),
            2 => ("<i4", Value::Null, json!(0)),
            _ => ("|u1", Value::Null, json!(0)),
        };
        let filters = match (delta, layout) {
            (true, 2 | 3) => json!([{"id": "delta", "dtype": dtype, "astype": dtype}]),
            _ => filters,
        };
        let compressor = chain
            .first()
            .map(|(_, v2)| v2.clone())
            .unwrap_or(Value::Null);
        v2_docs(v2_doc(
            &shape,
            &shape,
            V2 {
                dtype,
                fill,
                filters,
                compressor,
                fortran: false,
            },
        ))
    } else {
        let (data_type, fill, codec) = match layout {
            0 => (json!("string"), json!(""), json!({"name": "vlen-utf8"})),
            1 => (
                json!("variable_length_bytes"),
                json!(""),
                json!({"name": "vlen-bytes"}),
            ),
            2 => (
                json!("int32"),
                json!(0),
                json!({"name": "bytes", "configuration": {"endian": "little"}}),
            ),
            _ => (json!("uint8"), json!(0), json!({"name": "bytes"})),
        };
        let mut list = match (delta, layout) {
            (true, 2) => {
                vec![json!({"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}})]
            }
            (true, 3) => {
                vec![json!({"name": "numcodecs.delta", "configuration": {"dtype": "|u1"}})]
            }
            _ => vec![],
        };
        list.push(codec);
        list.extend(chain.into_iter().map(|(v3, _)| v3));
        v3_docs(v3_doc(&shape, &shape, data_type, fill, Value::Array(list)))
    };
    run_array(&docs, &[(vec![0], chunk.to_vec())], &[vec![0]]);
}

// ---------------------------------------------------------------------------
// Metadata targets
// ---------------------------------------------------------------------------

/// Split at [`SEPARATOR`] into at most `n` parts.
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |&b| b == SEPARATOR).collect()
}

/// Read whatever node `read_node` finds at the root: an array with `chunk` (if any)
/// stored as its first chunk, or a group (whose child `x` the caller stored).
fn exercise_root(store: &Arc<dyn Store>, chunk: Option<&[u8]>) {
    let Ok(node) = zarrow::read_node(store.as_ref(), "") else {
        return;
    };
    match node {
        NodeMetadata::Array(meta) => {
            let Ok(array) = ZarrArray::open_with(store.clone(), "", read_options(StringType::Utf8))
            else {
                return;
            };
            // What `zarrow info` prints.
            let _ = zarrow::read::describe_array(&array);
            let _ = array.codecs().to_string();
            let first = vec![0; meta.shape.len()];
            if let Some(chunk) = chunk {
                let _ = store.set(&array.chunk_key(&first), chunk);
            }
            let _ = array.chunks_present();
            let _ = array.field();
            exercise(store, "", &[first], chunk.map_or(0, <[u8]>::len));
        }
        NodeMetadata::Group(_) => exercise_group(store, ""),
    }
}

/// Fuzz bytes as a v3 `zarr.json` (array or group).
///
/// Input: `zarr.json [0xFF chunk]`: the bytes up to the first 0xFF are the document;
/// the rest, if any, is stored as the array's chunk 0. The store also holds a valid
/// child array `x` (3 strings), which a root group reads as its column.
pub fn metadata_v3(data: &[u8]) {
    let parts = parts(data, 2);
    let store = store_with(&[(
        "x/zarr.json".to_string(),
        v3_doc(
            &[3],
            &[2],
            json!("string"),
            json!("f"),
            json!([{"name": "vlen-utf8"}]),
        ),
    )]);
    let _ = store.set("x/c/0", b"\x02\0\0\0\x01\0\0\0a\x02\0\0\0bc");
    let _ = store.set("zarr.json", parts[0]);
    exercise_root(&store, parts.get(1).copied());
}

/// Fuzz bytes as v2 `.zarray`, `.zattrs` and `.zgroup`.
///
/// Input: `.zarray 0xFF .zattrs 0xFF .zgroup 0xFF chunk`: each part, when present
/// and not empty, is stored under its key (the chunk as the array's chunk 0). The
/// store also holds a valid child array `x` (v2, 3 strings).
pub fn metadata_v2(data: &[u8]) {
    let parts = parts(data, 4);
    let child = v2_doc(
        &[3],
        &[2],
        V2 {
            dtype: "|O",
            fill: Value::Null,
            filters: json!([{"id": "vlen-utf8"}]),
            compressor: Value::Null,
            fortran: false,
        },
    );
    let store = store_with(&[("x/.zarray".to_string(), child)]);
    let _ = store.set("x/0", b"\x02\0\0\0\x01\0\0\0a\x02\0\0\0bc");
    for (key, part) in [".zarray", ".zattrs", ".zgroup"].iter().zip(&parts) {
        if !part.is_empty() {
            let _ = store.set(key, part);
        }
    }
    exercise_root(&store, parts.get(3).copied().filter(|c| !c.is_empty()));
}

/// The data types of the `fill_value` target: (v3 data type, v3 layout codecs, v2
/// dtype and filters when v2 has the type).
fn fill_type(sel: u8) -> (Value, Vec<Value>, Option<(&'static str, Value)>) {
    let bytes = || vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
    let sel = sel % 20;
    if let Some(t) = FIXED.get(usize::from(sel)) {
        let dtype = match t.v3 {
            "bool" => "|b1",
            "int8" => "|i1",
            "int16" => "<i2",
            "int32" => "<i4",
            "int64" => "<i8",
            "uint8" => "|u1",
            "uint16" => "<u2",
            "uint32" => "<u4",
            "uint64" => "<u8",
            "float32" => "<f4",
            _ => "<f8",
        };
        return (json!(t.v3), bytes(), Some((dtype, Value::Null)));
    }
    match sel {
        11 => (
            json!("string"),
            vec![json!({"name": "vlen-utf8"})],
            Some(("|O", json!([{"id": "vlen-utf8"}]))),
        ),
        12 => (
            json!("variable_length_bytes"),
            vec![json!({"name": "vlen-bytes"})],
            Some(("|O", json!([{"id": "vlen-bytes"}]))),
        ),
        13 => (json!("bytes"), vec![json!({"name": "zarrs.vlen"})], None),
        14 => (
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}),
            bytes(),
            Some(("<U3", Value::Null)),
        ),
        15 => (
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}),
            bytes(),
            Some(("|S4", Value::Null)),
        ),
        16 => (json!({"name": "string"}), vec![], None),
        17 => (json!({"name": "large_string"}), vec![], None),
        18 => (json!({"name": "binary"}), vec![], None),
        _ => (json!({"name": "large_binary"}), vec![], None),
    }
}

/// Fuzz input as the `fill_value` of a small array with no chunks (so every element
/// is the fill value), per data type.
///
/// Input: `[type, cfg, fill...]`. `type % 20`: bool, int8..int64, uint8..uint64,
/// float32, float64, string, variable_length_bytes, bytes (zarrs.vlen),
/// fixed_length_utf32 (3), null_terminated_bytes (4), ZEP0007 string, large_string,
/// binary, large_binary. `cfg` bit 0: v2 metadata (for the types v2 has); bit 1: v3
/// sharded, with one shard present whose inner chunks are all absent. `fill` is used
/// as JSON when it parses, else as a JSON string (lossy UTF-8). The read must give
/// 5 equal values.
pub fn fill_value(data: &[u8]) {
    let Some(([sel, cfg], fill)) = header::<2>(data) else {
        return;
    };
    let fill: Value = serde_json::from_slice(fill)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(fill).into_owned()));
    let (data_type, layout, v2) = fill_type(sel);
    let shape = [5];
    let (docs, chunks) = match v2 {
        Some((dtype, filters)) if cfg & 1 != 0 => {
            let doc = v2_doc(
                &shape,
                &[2],
                V2 {
                    dtype,
                    fill,
                    filters,
                    compressor: Value::Null,
                    fortran: false,
                },
            );
            (v2_docs(doc), vec![])
        }
        _ if cfg & 2 != 0 => {
            let sharding = json!({"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2], "codecs": layout,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            }});
            let doc = v3_doc(&shape, &[4], data_type, fill, json!([sharding]));
            // A shard of two absent inner chunks: the index alone.
            let index = b2b(json!({"name": "crc32c"}))
                .encode_bytes(vec![0xFF; 32])
                .unwrap_or_default();
            (v3_docs(doc), vec![(vec![0], index)])
        }
        _ => (
            v3_docs(v3_doc(&shape, &[2], data_type, fill, Value::Array(layout))),
            vec![],
        ),
    };
    let store = store_with(&docs);
    let Ok(array) = ZarrArray::open_with(store.clone(), "", read_options(StringType::Utf8)) else {
        return;
    };
    let _ = zarrow::read::describe_array(&array);
    for (indices, bytes) in &chunks {
        let _ = store.set(&array.chunk_key(indices), bytes);
    }
    exercise(&store, "", &[vec![0]], usize::from(sel));
    for string_type in STRING_TYPES {
        let Ok(array) = ZarrArray::open_with(store.clone(), "", read_options(string_type)) else {
            return;
        };
        let Ok(all) = array.read_all() else { continue };
        if let Some(values) = scalars(all.as_ref()) {
            assert!(
                values.windows(2).all(|w| w[0] == w[1]),
                "an array of fill values only holds different values: {values:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// The linear exchange format
// ---------------------------------------------------------------------------

fn linear_values(array: &dyn Array) -> Vec<Scalar> {
    scalars(array)
        .unwrap_or_default()
        .into_iter()
        .map(Scalar::canonical_nan)
        .collect()
}

/// Check one parsed linear array: both conversions to Arrow are valid and agree.
/// Returns the array, if it converts.
fn check_linear(what: &str, linear: &zarrow::linear::Linear) -> Option<ArrayRef> {
    let array = linear.to_arrow().ok()?;
    check(what, array.as_ref(), array.data_type(), Some(linear.len()));
    if let Ok(moved) = linear.clone().into_arrow() {
        check(what, moved.as_ref(), moved.data_type(), Some(linear.len()));
        assert_eq!(
            linear_values(array.as_ref()),
            linear_values(moved.as_ref()),
            "{what}: Linear::to_arrow and Linear::into_arrow disagree"
        );
    }
    Some(array)
}

/// `stats`: a chunk statistics file (`zarrow.stats`) from the input, beside
/// an array of ints, floats or strings (the first byte chooses), read as
/// `zarrow info` reads it: parsed and checked against the stored chunks. A
/// file that is not one is a typed error (a note in the description), never
/// a panic or an unbounded allocation.
pub fn stats(data: &[u8]) {
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let name = ["i", "f", "s"][usize::from(which) % 3];
    let values: ArrayRef = match name {
        "i" => Arc::new(arrow_array::Int64Array::from_iter_values(-20..20)),
        "f" => Arc::new(arrow_array::Float64Array::from_iter_values((0..40).map(
            |i| {
                if i % 7 == 0 {
                    f64::NAN
                } else {
                    f64::from(i) / 4.0
                }
            },
        ))),
        _ => Arc::new(arrow_array::StringArray::from_iter_values(
            (0..40).map(|i| format!("value {i:03}")),
        )),
    };
    let options = WriteOptions {
        chunk_len: Some(8),
        ..WriteOptions::default()
    };
    if zarrow::write::write_array(store.clone(), name, &values, options).is_err() {
        return;
    }
    let _ = store.set(&format!("{name}/zarrow.stats"), file);
    let Ok(array) = ZarrArray::open(store, name) else {
        return;
    };
    if let Ok(info) = zarrow::read::describe_array(&array) {
        // Never more chunks described than the file has rows for.
        assert!(info.stats_fresh.unwrap_or(0) as usize + info.stats_stale.len() <= file.len());
    }
    // The values read as they were written, whatever the file says.
    let all = array.read_all().expect("the array reads");
    assert_eq!(all.len(), values.len());
}

/// `prune` (feature `datafusion`; the function `prune_invariant`): the pruning invariant on a case drawn from
/// the input (a column of any type statistics are recorded for, cut into
/// chunks, and a filter over it; `zarrow::datafusion::invariant`): a chunk
/// that statistics prune must hold no row DataFusion's own filter keeps, and
/// nothing panics.
#[cfg(feature = "datafusion")]
pub fn prune_invariant(data: &[u8]) {
    if let Err(e) = zarrow::datafusion::invariant::check_bytes(data) {
        panic!("{e}");
    }
}

/// `zarrow::linear::parse_json`, then `write_json` of what it read, which must parse
/// back to the same values (int64/uint64 compare as integers, NaN as NaN).
pub fn linear_json(data: &[u8]) {
    let Ok(linear) = zarrow::linear::parse_json(data) else {
        return;
    };
    let Some(array) = check_linear("linear_json", &linear) else {
        return;
    };
    let mut out = Vec::new();
    if let Err(e) = zarrow::linear::write_json(&mut out, array.as_ref(), &linear.shape) {
        panic!(
            "write_json refused a {} array parse_json made: {e}",
            array.data_type()
        );
    }
    let back = match zarrow::linear::parse_json(out.as_slice()) {
        Ok(back) => back,
        Err(e) => panic!(
            "parse_json refused what write_json wrote ({e}): {}",
            String::from_utf8_lossy(&out)
        ),
    };
    assert_eq!(
        back.shape, linear.shape,
        "linear JSON round trip changed the shape"
    );
    let Some(again) = check_linear("linear_json round trip", &back) else {
        panic!(
            "to_arrow refused what write_json wrote: {}",
            String::from_utf8_lossy(&out)
        );
    };
    assert_eq!(
        linear_values(array.as_ref()),
        linear_values(again.as_ref()),
        "linear JSON round trip changed the values: {}",
        String::from_utf8_lossy(&out)
    );
}

/// `zarrow::linear::read_csv`, then `write_csv` of what it read, which must read back
/// to the same values.
///
/// A table of no columns (what `read_csv` makes of an empty input) is not written
/// back: `write_csv` of no columns writes `""` (an empty record), which `read_csv`
/// then reads as one unnamed column with no tokens and refuses. That degenerate
/// case is known (see `regressions/linear_csv/README.md`); checking it here would
/// stop every run at libFuzzer's first input, the empty one.
pub fn linear_csv(data: &[u8]) {
    let Ok(columns) = zarrow::linear::read_csv(data) else {
        return;
    };
    let mut arrays = Vec::new();
    for (name, linear) in &columns {
        let Some(array) = check_linear("linear_csv", linear) else {
            return;
        };
        arrays.push((name.clone(), array, linear.shape.clone()));
    }
    let table: Vec<(String, &dyn Array, Vec<u64>)> = arrays
        .iter()
        .map(|(name, array, shape)| (name.clone(), array.as_ref() as &dyn Array, shape.clone()))
        .collect();
    let mut out = Vec::new();
    if let Err(e) = zarrow::linear::write_csv(&mut out, &table) {
        panic!("write_csv refused columns read_csv made: {e}");
    }
    let back = match zarrow::linear::read_csv(out.as_slice()) {
        Ok(back) => back,
        Err(e) => panic!(
            "read_csv refused what write_csv wrote ({e}): {:?}",
            String::from_utf8_lossy(&out)
        ),
    };
    assert_eq!(
        back.len(),
        arrays.len(),
        "CSV round trip changed the column count"
    );
    for ((_, linear), (name, array, shape)) in back.iter().zip(&arrays) {
        assert_eq!(
            &linear.shape, shape,
            "CSV round trip changed column {name:?}'s shape"
        );
        let Some(again) = check_linear("linear_csv round trip", linear) else {
            panic!("to_arrow refused column {name:?} of what write_csv wrote");
        };
        assert_eq!(
            linear_values(array.as_ref()),
            linear_values(again.as_ref()),
            "CSV round trip changed column {name:?}: {:?}",
            String::from_utf8_lossy(&out)
        );
    }
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

/// The most values a `write_roundtrip` array holds.
const MAX_WRITE_VALUES: usize = 600;

/// Arbitrary values of one Arrow type, with nulls.
#[derive(Debug, Arbitrary)]
enum Values {
    Utf8(Vec<Option<String>>),
    LargeUtf8(Vec<Option<String>>),
    Utf8View(Vec<Option<String>>),
    Binary(Vec<Option<Vec<u8>>>),
    LargeBinary(Vec<Option<Vec<u8>>>),
    BinaryView(Vec<Option<Vec<u8>>>),
    Int8(Vec<Option<i8>>),
    Int16(Vec<Option<i16>>),
    Int32(Vec<Option<i32>>),
    Int64(Vec<Option<i64>>),
    UInt8(Vec<Option<u8>>),
    UInt16(Vec<Option<u16>>),
    UInt32(Vec<Option<u32>>),
    UInt64(Vec<Option<u64>>),
    Float32(Vec<Option<u32>>),
    Float64(Vec<Option<u64>>),
    Bool(Vec<Option<bool>>),
    Dictionary(Vec<Option<String>>),
}

/// `v` with at most [`MAX_WRITE_VALUES`] values, and no nulls unless `nulls`.
fn prune<T>(mut v: Vec<Option<T>>, nulls: bool) -> Vec<Option<T>> {
    v.truncate(MAX_WRITE_VALUES);
    if !nulls {
        v.retain(Option::is_some);
    }
    v
}

impl Values {
    fn into_array(self, nulls: bool) -> ArrayRef {
        macro_rules! arr {
            ($v:expr, $t:ty) => {
                Arc::new(<$t>::from(prune($v, nulls))) as ArrayRef
            };
        }
        let strs = |v: Vec<Option<String>>| prune(v, nulls);
        let bins = |v: Vec<Option<Vec<u8>>>| prune(v, nulls);
        match self {
            Self::Utf8(v) => Arc::new(StringArray::from_iter(strs(v))),
            Self::LargeUtf8(v) => Arc::new(LargeStringArray::from_iter(strs(v))),
            Self::Utf8View(v) => Arc::new(StringViewArray::from_iter(strs(v))),
            Self::Binary(v) => Arc::new(BinaryArray::from_iter(bins(v))),
            Self::LargeBinary(v) => Arc::new(LargeBinaryArray::from_iter(bins(v))),
            Self::BinaryView(v) => Arc::new(BinaryViewArray::from_iter(bins(v))),
            Self::Int8(v) => arr!(v, Int8Array),
            Self::Int16(v) => arr!(v, Int16Array),
            Self::Int32(v) => arr!(v, Int32Array),
            Self::Int64(v) => arr!(v, Int64Array),
            Self::UInt8(v) => arr!(v, UInt8Array),
            Self::UInt16(v) => arr!(v, UInt16Array),
            Self::UInt32(v) => arr!(v, UInt32Array),
            Self::UInt64(v) => arr!(v, UInt64Array),
            Self::Float32(v) => {
                let v: Vec<Option<f32>> = prune(v, nulls)
                    .into_iter()
                    .map(|b| b.map(f32::from_bits))
                    .collect();
                Arc::new(Float32Array::from(v))
            }
            Self::Float64(v) => {
                let v: Vec<Option<f64>> = prune(v, nulls)
                    .into_iter()
                    .map(|b| b.map(f64::from_bits))
                    .collect();
                Arc::new(Float64Array::from(v))
            }
            Self::Bool(v) => Arc::new(BooleanArray::from(prune(v, nulls))),
            Self::Dictionary(v) => Arc::new(
                strs(v)
                    .iter()
                    .map(Option::as_deref)
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        }
    }
}

/// What a null reads back as under [`NullPolicy::Fill`].
fn fill_scalar(t: &ArrowType) -> Scalar {
    match t {
        ArrowType::Utf8
        | ArrowType::LargeUtf8
        | ArrowType::Utf8View
        | ArrowType::Dictionary(..) => Scalar::Text(vec![]),
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => Scalar::Bytes(vec![]),
        ArrowType::Boolean => Scalar::Bool(false),
        // A null float is written as NaN, as pandas marks a missing float.
        ArrowType::Float32 => Scalar::F32(f32::NAN.to_bits()),
        ArrowType::Float64 => Scalar::F64(f64::NAN.to_bits()),
        _ => Scalar::Int(0),
    }
}

/// An arbitrary Arrow array written with `zarrow::write` under each encoding, Zarr
/// format and compressor, then read back with `ZarrArray::read_all`: the values must
/// be equal (floats by bits), and the type must be the one written.
///
/// Input: `[opts, chunk, nd, values...]`, the values built with `arbitrary` (at most
/// 600). `opts` bits 0-1: encoding (default, zarrs-vlen, zep0007, default); bit 2:
/// Zarr v2 (default encoding only); bits 3-4: compressor (zstd, gzip, blosc, none);
/// bits 5-6: nulls (none; nulls and `NullPolicy::Error`, which must refuse them;
/// nulls and `NullPolicy::Fill`; none); bit 7: compressor level 1. `chunk`: chunk
/// length - 1. `nd % 4`: `write_array`; `write_nd_array` 1-D; 2-D of `nd / 4 % 4 + 1`
/// columns (values truncated to fill it); 0-d (the first value).
pub fn write_roundtrip(data: &[u8]) {
    let Some(([opts, chunk, nd], rest)) = header::<3>(data) else {
        return;
    };
    let Ok(values) = Values::arbitrary(&mut Unstructured::new(rest)) else {
        return;
    };
    let encoding = match opts % 4 {
        1 => Encoding::ZarrsVlen,
        2 => Encoding::Zep0007,
        _ => Encoding::Default,
    };
    let v2 = opts & 4 != 0 && encoding == Encoding::Default;
    let compressor = match (opts >> 3) % 4 {
        0 => Compressor::Zstd,
        1 => Compressor::Gzip,
        2 => Compressor::Blosc,
        _ => Compressor::None,
    };
    let nulls_mode = (opts >> 5) % 4;
    let policy = if nulls_mode == 2 {
        NullPolicy::Fill
    } else {
        NullPolicy::Error
    };
    let mut options = WriteOptions {
        encoding,
        zarr_format: if v2 { 2 } else { 3 },
        compressor,
        chunk_len: Some(usize::from(chunk) + 1),
        nulls: policy,
        ..WriteOptions::default()
    };
    if opts & 128 != 0 {
        options.level = Some(1);
    }
    let mut input = values.into_array(nulls_mode == 1 || nulls_mode == 2);
    let shape: Option<Vec<u64>> = match nd % 4 {
        0 => None,
        1 => Some(vec![input.len() as u64]),
        2 => {
            let cols = usize::from(nd / 4 % 4) + 1;
            let rows = input.len() / cols;
            input = input.slice(0, rows * cols);
            Some(vec![rows as u64, cols as u64])
        }
        _ if input.is_empty() => None,
        _ => {
            input = input.slice(0, 1);
            Some(vec![])
        }
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let written = match &shape {
        None => zarrow::write::write_array(store.clone(), "a", &input, options.clone()),
        Some(shape) => {
            zarrow::write::write_nd_array(store.clone(), "a", &input, shape, options.clone())
        }
    };
    let null_count = input.logical_nulls().map_or(0, |n| n.null_count());
    if null_count > 0 && policy == NullPolicy::Error {
        assert!(
            matches!(written, Err(zarrow::Error::Nulls { .. })),
            "a column with {null_count} nulls was written under NullPolicy::Error: {written:?}"
        );
        return;
    }
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => panic!(
            "writing {} values of {} refused valid input ({options:?}, shape {shape:?}): {e}",
            input.len(),
            input.data_type()
        ),
    };
    assert_eq!(
        rows,
        input.len() as u64,
        "the writer counted {rows} rows of {}",
        input.len()
    );

    let written_type = match input.data_type() {
        ArrowType::Dictionary(_, values) => values.as_ref().clone(),
        other => other.clone(),
    };
    let string_type = match written_type {
        ArrowType::LargeUtf8 | ArrowType::LargeBinary => StringType::LargeUtf8,
        ArrowType::Utf8View | ArrowType::BinaryView => StringType::Utf8View,
        _ => StringType::Utf8,
    };
    let array = match ZarrArray::open_with(store.clone(), "a", read_options(string_type)) {
        Ok(array) => array,
        Err(e) => panic!("cannot open what write wrote ({options:?}): {e}"),
    };
    let back = match array.read_all() {
        Ok(back) => back,
        Err(e) => panic!("cannot read what write wrote ({options:?}): {e}"),
    };
    check(
        "write_roundtrip",
        back.as_ref(),
        &written_type,
        Some(input.len() as u64),
    );
    let fill = fill_scalar(input.data_type());
    let expected: Vec<Scalar> = scalars(input.as_ref())
        .unwrap_or_default()
        .into_iter()
        .map(|s| if s == Scalar::Null { fill.clone() } else { s })
        .collect();
    let got = scalars(back.as_ref()).unwrap_or_default();
    if expected != got {
        let first = expected.iter().zip(&got).position(|(a, b)| a != b);
        panic!(
            "write then read changed the values ({options:?}, shape {shape:?}, {} values of {}): first difference at {first:?}",
            input.len(),
            input.data_type()
        );
    }
    // Without a string type, zarrow reads the type it recorded.
    if let Ok(plain) = ZarrArray::open(store, "a") {
        assert_eq!(
            plain.arrow_type(),
            written_type,
            "the recorded Arrow type does not read back ({options:?})"
        );
    }
}

/// `append_roundtrip`: a column of arbitrary values split in up to four parts;
/// the first written as a one-column group (v2 or v3, any compressor, chunked
/// or sharded), each other part appended to it (`WriteOptions::append`, the
/// group's own codecs and chunks). Read back through the consolidated
/// metadata, the column must hold every part's values in order (a null as the
/// fill value), and the array must hold exactly one object per chunk (shard) of
/// its grid.
///
/// Input: `[opts, chunk, shard, cut1, cut2, cut3]` then the values
/// (`arbitrary`). `opts & 1`: nulls; `& 2`: Zarr v2; `& 4`: sharded (v3);
/// `>> 3 & 3`: the compressor.
pub fn append_roundtrip(data: &[u8]) {
    use arrow_array::{RecordBatch, RecordBatchIterator};
    use arrow_schema::{Field, Schema};
    use zarrow::read::{TableOptions, open_table};
    use zarrow::store::Consolidated;
    use zarrow::write::write_batches;

    let Some(([opts, chunk, shard, c1, c2, c3], rest)) = header::<6>(data) else {
        return;
    };
    let Ok(values) = Values::arbitrary(&mut Unstructured::new(rest)) else {
        return;
    };
    let input = values.into_array(opts & 1 != 0);
    let n = input.len();
    let mut cuts = [c1, c2, c3].map(|c| usize::from(c) * n / 255);
    cuts.sort_unstable();
    let bounds = [0, cuts[0], cuts[1], cuts[2], n];
    let v2 = opts & 2 != 0;
    let sharded = !v2 && opts & 4 != 0;
    let compressor = match (opts >> 3) % 4 {
        0 => Compressor::Zstd,
        1 => Compressor::Gzip,
        2 => Compressor::Blosc,
        _ => Compressor::None,
    };
    let chunk_len = usize::from(chunk % 32) + 1;
    let mut create = WriteOptions {
        zarr_format: if v2 { 2 } else { 3 },
        compressor,
        chunk_len: Some(chunk_len),
        nulls: NullPolicy::Fill,
        ..WriteOptions::default()
    };
    let mut grid = chunk_len;
    if sharded {
        grid = chunk_len * (usize::from(shard % 4) + 1);
        create.shard_len = Some(grid);
    }
    let schema = Arc::new(Schema::new(vec![Field::new(
        "v",
        input.data_type().clone(),
        true,
    )]));
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    for (i, part) in bounds.windows(2).enumerate() {
        let values = input.slice(part[0], part[1] - part[0]);
        let batch = RecordBatch::try_new(schema.clone(), vec![values]).expect("a batch");
        let reader = RecordBatchIterator::new([Ok(batch)], schema.clone());
        let options = if i == 0 {
            create.clone()
        } else {
            WriteOptions {
                append: true,
                nulls: NullPolicy::Fill,
                ..WriteOptions::default()
            }
        };
        match write_batches(reader, store.clone(), "", options) {
            Ok(rows) => assert_eq!(rows, (part[1] - part[0]) as u64, "part {i}: rows counted"),
            Err(e) => panic!(
                "part {i} ({} values of {}, {create:?}) refused: {e}",
                part[1] - part[0],
                input.data_type()
            ),
        }
    }
    let written_type = match input.data_type() {
        ArrowType::Dictionary(_, values) => values.as_ref().clone(),
        other => other.clone(),
    };
    let string_type = match written_type {
        ArrowType::LargeUtf8 | ArrowType::LargeBinary => StringType::LargeUtf8,
        ArrowType::Utf8View | ArrowType::BinaryView => StringType::Utf8View,
        _ => StringType::Utf8,
    };
    // A table reads a dictionary column back as the dictionary it was written as.
    let table_type = match input.data_type() {
        ArrowType::Dictionary(keys, _) => {
            ArrowType::Dictionary(keys.clone(), Box::new(written_type.clone()))
        }
        _ => written_type.clone(),
    };
    let committed = Consolidated::open(store.clone()).expect("consolidated metadata");
    let reader = open_table(
        committed,
        "v",
        ReadOptions {
            decode_cf: false,
            ..read_options(string_type)
        },
        &TableOptions::default(),
        &inline(),
    )
    .unwrap_or_else(|e| panic!("cannot open the grown table ({create:?}): {e}"));
    let mut parts = Vec::new();
    for batch in reader {
        let batch = batch.unwrap_or_else(|e| panic!("cannot read the grown table: {e}"));
        parts.push(batch.column(0).clone());
    }
    let refs: Vec<&dyn Array> = parts.iter().map(AsRef::as_ref).collect();
    let back = if refs.is_empty() {
        arrow_array::new_empty_array(&table_type)
    } else {
        arrow_select::concat::concat(&refs).expect("batches of one type")
    };
    check(
        "append_roundtrip",
        back.as_ref(),
        &table_type,
        Some(n as u64),
    );
    // Nulls are filled, but for a dictionary's: a categorical keeps them
    // (code -1).
    let dictionary = matches!(input.data_type(), ArrowType::Dictionary(..));
    let fill = fill_scalar(input.data_type());
    let expected: Vec<Scalar> = scalars(input.as_ref())
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            if s == Scalar::Null && !dictionary {
                fill.clone()
            } else {
                s
            }
        })
        .collect();
    let got = scalars(back.as_ref()).unwrap_or_default();
    if expected != got {
        let first = expected.iter().zip(&got).position(|(a, b)| a != b);
        panic!(
            "appending changed the values ({create:?}, parts at {bounds:?}, {n} values of {}): first difference at {first:?}",
            input.data_type()
        );
    }
    // A dictionary's rows are its codes'.
    let chunks = store
        .list_prefix(if dictionary { "v/codes/" } else { "v/" })
        .expect("a listing")
        .into_iter()
        .filter(|k| {
            let file = k.rsplit('/').next().unwrap_or("");
            !k.ends_with("zarr.json") && !file.starts_with(".z") && file != "zarrow.stats"
        })
        .count();
    assert_eq!(
        chunks,
        n.div_ceil(grid),
        "chunk objects of {n} values in a grid of {grid}"
    );
}

/// Undo the bytes->bytes codecs of `chain` on `encoded`: the seed builder's way
/// from a stored chunk to the layout bytes.
pub fn undo_bytes_codecs(chain: &BytesToBytes, encoded: &[u8]) -> Option<Vec<u8>> {
    let buffer = chain
        .decode_bytes(Buffer::from_slice_ref(encoded), MAX_CHUNK_BYTES)
        .ok()?;
    Some(buffer.to_vec())
}

/// `push_decoder`: the push decoder ([`zarrow::read::RowDecoder`]) driven by an
/// adversarial driver. A table (an int column, a string column and a categorical,
/// anndata layout, v2 or v3, chunked or sharded) is written to memory; then each
/// request the decoder hands out is answered by the next input byte:
///
/// - `0`-`3`: the store's answer (the honest driver);
/// - `4`: cut short (half a value; a range one byte short);
/// - `5`: too long (bytes appended);
/// - `6`: a wrong number of ranges, or the whole value where ranges were asked;
/// - `7`: the key absent;
/// - `8`: bytes from the input instead;
/// - `9`: an id no request has (must be refused);
/// - `10`: the store's answer pushed twice (the second must be refused);
/// - `11`-`15`: the store's answer, held back and pushed after the later ones.
///
/// With `cfg & 2`, the table is a 2-D array instead (its elements in C order,
/// read slab by slab; the expected rows: `read_all`). With `cfg & 16`, answers
/// are decoded as [`DecodeJob`](zarrow::read::DecodeJob)s, run when the decoder
/// waits (last handed out first) and given back, rather than by `try_decode`.
///
/// Input: `[rows_lo, rows_hi, chunk, shard, cfg, batch, actions...]`; once the
/// actions are used up, every answer is honest. zarrow misbehaves when it panics,
/// hands out a batch that fails `validate_full`, accepts a push it must refuse,
/// waits with nothing in flight (a hang), gives anything after an error but
/// `Finished`, or, answered honestly throughout, gives other rows than the
/// blocking reader.
pub fn push_decoder(data: &[u8]) {
    use arrow_array::RecordBatch;
    use zarrow::read::{DecodeResult, Fetched, Request};
    use zarrow::store::RangeRead;
    use zarrow::write::{Layout, write_batches};

    let Some(([r0, r1, chunk, shard, cfg, batch], actions)) = header::<6>(data) else {
        return;
    };
    let rows = 1 + usize::from(u16::from_le_bytes([r0, r1])) % 600;
    let chunk_len = 1 + usize::from(chunk) % 64;
    let ids: Vec<i64> = (0..rows as i64).map(|i| i * 7 - 100).collect();
    let names: Vec<String> = (0..rows)
        .map(|i| "n".repeat(i % 13) + &i.to_string())
        .collect();
    let kinds = DictionaryArray::<arrow_array::types::Int8Type>::try_new(
        (0..rows).map(|i| (i % 3) as i8).collect(),
        Arc::new(StringArray::from(vec!["alpha", "beta", "gamma"])),
    )
    .expect("a valid dictionary");
    let table = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("name", Arc::new(StringArray::from(names)) as ArrayRef),
        ("kind", Arc::new(kinds) as ArrayRef),
    ])
    .expect("a valid batch");
    let mut options = WriteOptions {
        layout: Layout::AnnData,
        zarr_format: if cfg & 1 == 0 { 3 } else { 2 },
        chunk_len: Some(chunk_len),
        ..WriteOptions::default()
    };
    if cfg & 1 == 0 && shard % 2 == 1 {
        options.shard_len = Some(chunk_len * (1 + usize::from(shard / 2) % 8));
    }
    if cfg & 1 == 0 && cfg & 4 != 0 {
        // Offsets and values apart: `zarrs.vlen` reads some rows in part.
        options.encoding = zarrow::write::Encoding::ZarrsVlen;
    }
    // Some rows only (cfg & 8): partial reads of the chunks at either end.
    let row_range = |total: usize| {
        let lo = usize::from(r0) % total;
        lo..lo + 1 + usize::from(r1) % (total - lo)
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let batch_size = 1 + usize::from(batch) % 97;
    let (builder, expected): (zarrow::ReaderBuilder, Vec<RecordBatch>) = if cfg & 2 == 0 {
        let schema = table.schema();
        let input = arrow_array::RecordBatchIterator::new([Ok(table)], schema);
        write_batches(input, store.clone(), "", options).expect("zarrow writes the table");
        let Ok(group) = ZarrGroup::open(store.clone(), "") else {
            panic!("the written table does not open");
        };
        let mut builder = group.reader().with_batch_size(batch_size);
        if cfg & 8 != 0 {
            let range = row_range(rows);
            builder = builder.with_row_range(range.start as u64..range.end as u64);
        }
        let expected = builder
            .clone()
            .build()
            .expect("a blocking reader")
            .collect::<Result<_, _>>()
            .expect("the blocking reader reads the table");
        (builder, expected)
    } else {
        // An N-d array: its ids on a grid of `rows / cols` rows, chunked in both
        // dimensions; its rows are its elements in C order, read slab by slab.
        let cols = 1 + usize::from(shard) % 5;
        let rows = rows / cols;
        if rows == 0 {
            return;
        }
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..(rows * cols) as i64));
        let inner = vec![1 + chunk_len as u64 % 7, 1 + u64::from(chunk) % 3];
        let mut nd = WriteOptions {
            zarr_format: if cfg & 1 == 0 { 3 } else { 2 },
            chunk_shape: Some(inner.clone()),
            ..WriteOptions::default()
        };
        if cfg & 1 == 0 && cfg & 4 != 0 {
            // N-d shards, read in part for a row range.
            let rows_of = 1 + u64::from(batch) % 3;
            nd.shard_shape = Some(vec![inner[0] * rows_of, inner[1] * (1 + u64::from(r1) % 2)]);
        }
        let shape = [rows as u64, cols as u64];
        zarrow::write::write_nd_array(store.clone(), "a", &values, &shape, nd)
            .expect("zarrow writes the grid");
        let array = ZarrArray::open(store.clone(), "a").expect("the grid opens");
        let mut whole = array.read_all().expect("the grid reads whole");
        let mut builder = array.reader().with_batch_size(batch_size);
        if cfg & 8 != 0 {
            let range = row_range(rows * cols);
            whole = whole.slice(range.start, range.len());
            builder = builder.with_row_range(range.start as u64..range.end as u64);
        }
        let expected = vec![
            RecordBatch::try_new(
                arrow_array::RecordBatchReader::schema(
                    &array.batches(&zarrow::ExecutionContext::default()),
                ),
                vec![whole],
            )
            .expect("a batch"),
        ];
        (builder, expected)
    };
    let mut decoder = builder.build_decoder().expect("a decoder");

    let honest = |request: &Request| -> Fetched {
        match &request.ranges {
            None => match store.get_bounded(&request.key, request.max_len) {
                Ok(Some(bytes)) => Fetched::Whole(bytes),
                _ => Fetched::Missing,
            },
            Some(ranges) => match store.get_ranges(&request.key, ranges) {
                Ok(Some(read)) => Fetched::Ranges(read),
                _ => Fetched::Missing,
            },
        }
    };
    let mut actions = actions.iter().copied();
    let mut adversarial = false;
    let mut failed = false;
    let mut held: Vec<(u64, Fetched)> = Vec::new();
    let mut jobs: Vec<zarrow::read::DecodeJob> = Vec::new();
    let by_jobs = cfg & 16 != 0;
    let mut outstanding = 0usize;
    let mut got: Vec<RecordBatch> = Vec::new();
    let mut next_wrong_id = u64::MAX;
    for _ in 0..100_000 {
        if by_jobs {
            jobs.extend(decoder.decode_jobs());
        }
        let step = decoder.try_decode();
        if failed {
            assert!(
                matches!(step, Ok(DecodeResult::Finished)),
                "after an error, the decoder gave {step:?} rather than Finished"
            );
            return;
        }
        let requests = match step {
            Err(_) => {
                failed = true;
                continue;
            }
            Ok(DecodeResult::Finished) => break,
            Ok(DecodeResult::Batch(batch)) => {
                if let Err(e) = batch
                    .columns()
                    .iter()
                    .try_for_each(|c| c.to_data().validate_full())
                {
                    panic!("a batch that arrow-rs refuses: {e}");
                }
                got.push(batch);
                continue;
            }
            Ok(DecodeResult::NeedsData(requests)) => requests,
        };
        if requests.is_empty() {
            if !jobs.is_empty() {
                for job in jobs.drain(..).rev() {
                    let done = job.run();
                    if decoder.push_decoded(done).is_err() {
                        failed = true;
                        break;
                    }
                }
                continue;
            }
            if held.is_empty() {
                assert!(
                    outstanding > 0 || adversarial,
                    "the decoder waits for nothing: every request answered, none decoding"
                );
                // The driver dropped an answer (answered another id): nothing
                // more can come.
                return;
            }
            for (id, fetched) in held.drain(..).rev() {
                outstanding -= 1;
                if decoder.push(id, fetched).is_err() {
                    failed = true;
                    break;
                }
            }
            continue;
        }
        for request in requests {
            outstanding += 1;
            let action = actions.next().unwrap_or(0);
            adversarial |= (4..=10).contains(&action);
            let mut answer = honest(&request);
            let id = request.id;
            let pushed = match action {
                4 => {
                    answer = match answer {
                        Fetched::Whole(b) => Fetched::Whole(b.slice_with_length(0, b.len() / 2)),
                        Fetched::Ranges(mut r) => {
                            if let Some(b) = r.buffers.first_mut() {
                                *b = b.slice_with_length(0, b.len().saturating_sub(1));
                            }
                            Fetched::Ranges(r)
                        }
                        Fetched::Missing => Fetched::Missing,
                    };
                    decoder.push(id, answer)
                }
                5 => {
                    answer = match answer {
                        Fetched::Whole(b) => {
                            let mut v = b.to_vec();
                            v.extend_from_slice(&[0xff; 9]);
                            Fetched::Whole(Buffer::from_vec(v))
                        }
                        Fetched::Ranges(mut r) => {
                            if let Some(b) = r.buffers.last_mut() {
                                let mut v = b.to_vec();
                                v.extend_from_slice(&[0xff; 9]);
                                *b = Buffer::from_vec(v);
                            }
                            Fetched::Ranges(r)
                        }
                        Fetched::Missing => Fetched::Whole(Buffer::from_vec(vec![0u8; 9])),
                    };
                    decoder.push(id, answer)
                }
                6 => {
                    answer = match answer {
                        Fetched::Ranges(mut r) if r.buffers.len() > 1 => {
                            r.buffers.pop();
                            Fetched::Ranges(r)
                        }
                        Fetched::Ranges(r) => {
                            let value_len = r.value_len;
                            Fetched::Whole(Buffer::from_vec(vec![1u8; value_len.min(64) as usize]))
                        }
                        Fetched::Whole(b) => Fetched::Ranges(RangeRead::new(vec![b], 0)),
                        Fetched::Missing => Fetched::Missing,
                    };
                    decoder.push(id, answer)
                }
                7 => decoder.push(id, Fetched::Missing),
                8 => {
                    let len = usize::from(actions.next().unwrap_or(0));
                    let bytes: Vec<u8> = actions.by_ref().take(len).collect();
                    let answer = match &request.ranges {
                        Some(ranges) => Fetched::Ranges(RangeRead::new(
                            ranges
                                .iter()
                                .map(|_| Buffer::from_slice_ref(&bytes))
                                .collect(),
                            bytes.len() as u64,
                        )),
                        None => Fetched::Whole(Buffer::from_vec(bytes)),
                    };
                    decoder.push(id, answer)
                }
                9 => {
                    next_wrong_id = next_wrong_id.wrapping_sub(1);
                    let wrong = decoder.push(next_wrong_id, Fetched::Missing);
                    assert!(
                        wrong.is_err(),
                        "a push to request {next_wrong_id}, never asked, was taken"
                    );
                    failed = true;
                    break;
                }
                10 => {
                    if decoder.push(id, answer).is_err() {
                        failed = true;
                        break;
                    }
                    let again = decoder.push(id, Fetched::Missing);
                    assert!(again.is_err(), "a second answer to request {id} was taken");
                    failed = true;
                    break;
                }
                11..=15 => {
                    held.push((id, answer));
                    continue;
                }
                _ => decoder.push(id, answer),
            };
            outstanding -= 1;
            if pushed.is_err() {
                failed = true;
                break;
            }
        }
    }
    if failed {
        return;
    }
    assert!(
        held.is_empty() || adversarial,
        "the decoder finished with answers still held back"
    );
    if adversarial {
        return;
    }
    let rows = |batches: &[RecordBatch]| -> Vec<String> {
        let mut out = Vec::new();
        for b in batches {
            for i in 0..b.num_rows() {
                out.push(format!("{:?}", b.slice(i, 1).columns()));
            }
        }
        out
    };
    assert_eq!(
        rows(&got),
        rows(&expected),
        "answered honestly, the push decoder gave other rows than the blocking reader"
    );
}

/// A fuzz target's function.
pub type Target = fn(&[u8]);

/// Every target: its name and function.
pub const TARGETS: [(&str, Target); 16] = [
    ("vlen_interleaved", vlen_interleaved),
    ("zarrs_vlen", zarrs_vlen),
    ("zep0007", zep0007),
    ("fixed", fixed),
    ("transpose", transpose),
    ("sharding", sharding),
    ("compressors", compressors),
    ("metadata_v3", metadata_v3),
    ("metadata_v2", metadata_v2),
    ("fill_value", fill_value),
    ("linear_json", linear_json),
    ("linear_csv", linear_csv),
    ("write_roundtrip", write_roundtrip),
    ("push_decoder", push_decoder),
    ("append_roundtrip", append_roundtrip),
    ("stats", stats),
];
