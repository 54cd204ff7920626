//! Helpers shared by the integration tests: the library's (tests/integration) and
//! the command line's (cli/tests/integration, which adds `zarrow`, the binary).

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::DataType;
use zarrow::Store;
use zarrow::store::{ByteRange, RangeRead};

/// The repository's testdata directory.
pub fn testdata() -> PathBuf {
    Path::new(crate::REPOSITORY).join("testdata")
}

/// Read every batch of an Arrow IPC file (written by pyarrow).
pub fn read_ipc(path: &Path) -> Vec<RecordBatch> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    arrow_ipc::reader::FileReader::try_new(file, None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// One element, in a form that compares equal across Arrow layouts
/// (Utf8 = LargeUtf8 = Utf8View, and NaN = NaN).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bytes(Vec<u8>),
    Int(i128),
    Float(u64),
    Bool(bool),
    /// A null: only numpy's NaT (datetime64 / timedelta64) reads as one.
    Null,
}

fn float(v: f64) -> Value {
    Value::Float(if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    })
}

/// The elements of `array`, layout-independent. Nulls are expected only where
/// numpy has them: NaT in times.
pub fn values(array: &dyn Array) -> Vec<Value> {
    let n = array.len();
    if array.data_type().is_temporal() {
        // Timestamps, durations and dates: their integer counts (units and
        // timezones are compared with the type), NaT as a null.
        let counts = arrow_cast_counts(array);
        return counts
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                if array.is_null(i) {
                    Value::Null
                } else {
                    Value::Int(c)
                }
            })
            .collect();
    }
    assert_eq!(array.null_count(), 0, "zarrow produces nulls only for NaT");
    match array.data_type() {
        DataType::Utf8 => array
            .as_string::<i32>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::LargeUtf8 => array
            .as_string::<i64>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::Utf8View => array
            .as_string_view()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::Binary => array
            .as_binary::<i32>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::LargeBinary => array
            .as_binary::<i64>()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::BinaryView => array
            .as_binary_view()
            .iter()
            .map(|v| Value::Bytes(v.unwrap().into()))
            .collect(),
        DataType::Boolean => (0..n)
            .map(|i| Value::Bool(array.as_boolean().value(i)))
            .collect(),
        DataType::Int8 => array
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::Int16 => array
            .as_primitive::<Int16Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::Int32 => array
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::Int64 => array
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::UInt8 => array
            .as_primitive::<UInt8Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::UInt16 => array
            .as_primitive::<UInt16Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::UInt32 => array
            .as_primitive::<UInt32Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::UInt64 => array
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|&v| Value::Int(v.into()))
            .collect(),
        DataType::Float16 => array
            .as_primitive::<Float16Type>()
            .values()
            .iter()
            .map(|&v| float(v.to_f64()))
            .collect(),
        DataType::Float32 => array
            .as_primitive::<Float32Type>()
            .values()
            .iter()
            .map(|&v| float(v.into()))
            .collect(),
        DataType::Float64 => array
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .map(|&v| float(v))
            .collect(),
        other => panic!("unexpected type {other}"),
    }
}

/// The integer counts of a temporal array (32- or 64-bit values buffer).
fn arrow_cast_counts(array: &dyn Array) -> Vec<i128> {
    let data = array.to_data();
    let buffer = &data.buffers()[0];
    let range = data.offset()..data.offset() + data.len();
    match array.data_type().primitive_width() {
        Some(4) => buffer.typed_data::<i32>()[range]
            .iter()
            .map(|&v| v.into())
            .collect(),
        _ => buffer.typed_data::<i64>()[range]
            .iter()
            .map(|&v| v.into())
            .collect(),
    }
}

/// Concatenate one column of several batches.
pub fn column(batches: &[RecordBatch], name: &str) -> ArrayRef {
    let parts: Vec<ArrayRef> = batches
        .iter()
        .map(|b| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"))
                .clone()
        })
        .collect();
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    arrow_select::concat::concat(&refs).unwrap()
}

/// A store that forwards to `inner` and records each read request (`get`,
/// `get_bounded`, `get_range`, `get_ranges`: its key and the bytes it returned)
/// and the key of each write, in order.
#[derive(Debug)]
pub struct Observed {
    inner: Arc<dyn Store>,
    reads: Mutex<Vec<(String, u64)>>,
    writes: Mutex<Vec<String>>,
    lists: Mutex<u64>,
    /// The names of the threads that read chunks (a key with `/c/`).
    chunk_threads: Mutex<std::collections::BTreeSet<String>>,
}

impl Observed {
    pub fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            reads: Mutex::new(Vec::new()),
            writes: Mutex::new(Vec::new()),
            lists: Mutex::new(0),
            chunk_threads: Mutex::new(Default::default()),
        })
    }

    /// The names of the threads that read chunks since the last call
    /// ("unnamed" for a thread without one).
    pub fn take_chunk_threads(&self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut *self.chunk_threads.lock().unwrap())
    }

    fn record(&self, key: &str, buffers: &[&Buffer]) {
        let bytes = buffers.iter().map(|b| b.len() as u64).sum();
        self.reads.lock().unwrap().push((key.to_string(), bytes));
        if key.contains("/c/") {
            let name = std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_string();
            self.chunk_threads.lock().unwrap().insert(name);
        }
    }

    /// The reads since the last call.
    pub fn take(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *self.reads.lock().unwrap())
    }

    /// The keys written since the last call, in order.
    pub fn take_writes(&self) -> Vec<String> {
        std::mem::take(&mut *self.writes.lock().unwrap())
    }

    /// The listing requests since the last call.
    pub fn take_lists(&self) -> u64 {
        std::mem::take(&mut *self.lists.lock().unwrap())
    }

    /// (requests, bytes) since the last call.
    pub fn take_counts(&self) -> (u64, u64) {
        let reads = self.take();
        (reads.len() as u64, reads.iter().map(|(_, b)| b).sum())
    }
}

impl Store for Observed {
    fn get(&self, key: &str) -> zarrow::Result<Option<Buffer>> {
        let got = self.inner.get(key)?;
        self.record(key, &got.iter().collect::<Vec<_>>());
        Ok(got)
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> zarrow::Result<Option<Buffer>> {
        let got = self.inner.get_bounded(key, max_len)?;
        self.record(key, &got.iter().collect::<Vec<_>>());
        Ok(got)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> zarrow::Result<Option<Buffer>> {
        let got = self.inner.get_range(key, range)?;
        self.record(key, &got.iter().collect::<Vec<_>>());
        Ok(got)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> zarrow::Result<Option<RangeRead>> {
        let got = self.inner.get_ranges(key, ranges)?;
        self.record(
            key,
            &got.iter()
                .flat_map(|r| r.buffers.iter())
                .collect::<Vec<_>>(),
        );
        Ok(got)
    }

    fn value_len(&self, key: &str) -> zarrow::Result<Option<u64>> {
        self.inner.value_len(key)
    }

    fn set(&self, key: &str, value: &[u8]) -> zarrow::Result<()> {
        self.writes.lock().unwrap().push(key.to_string());
        self.inner.set(key, value)
    }

    fn delete(&self, key: &str) -> zarrow::Result<()> {
        self.inner.delete(key)
    }

    fn list_versions(&self, prefix: &str) -> zarrow::Result<Option<Vec<(String, String)>>> {
        *self.lists.lock().unwrap() += 1;
        self.inner.list_versions(prefix)
    }

    fn list_prefix(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        *self.lists.lock().unwrap() += 1;
        self.inner.list_prefix(prefix)
    }

    fn list_children(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        *self.lists.lock().unwrap() += 1;
        self.inner.list_children(prefix)
    }
}

/// Copy directory `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The values of a string column (any string type, dictionaries included).
pub fn strings(array: &ArrayRef) -> Vec<String> {
    let array = arrow_cast::cast(array, &DataType::Utf8).unwrap();
    let array = array.as_string::<i32>();
    (0..array.len())
        .map(|i| array.value(i).to_string())
        .collect()
}

/// (count, sum of `s`) by `cell_type` / `kind` in a query's result with columns
/// (key, n, s).
pub fn grouped(batches: &[RecordBatch]) -> BTreeMap<String, (i64, i64)> {
    let mut out = BTreeMap::new();
    for batch in batches {
        let keys = strings(batch.column(0));
        let n = batch.column(1).as_primitive::<Int64Type>();
        let s = batch.column(2).as_primitive::<Int64Type>();
        for (i, k) in keys.into_iter().enumerate() {
            out.insert(k, (n.value(i), s.value(i)));
        }
    }
    out
}

/// zarr-python's obs (testdata/expected/obs.arrow) grouped by cell type in Rust:
/// (rows, sum of n_genes) of the rows whose total_counts exceed `min_total`.
pub fn obs_expected(min_total: f64) -> BTreeMap<String, (i64, i64)> {
    let expected = read_ipc(&testdata().join("expected/obs.arrow"));
    let cell_type = strings(&column(&expected, "cell_type"));
    let n_genes = column(&expected, "n_genes");
    let n_genes = n_genes.as_primitive::<Int32Type>();
    let total = column(&expected, "total_counts");
    let total = total.as_primitive::<Float64Type>();
    let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (i, c) in cell_type.iter().enumerate() {
        if total.value(i) > min_total {
            let e = want.entry(c.clone()).or_default();
            e.0 += 1;
            e.1 += i64::from(n_genes.value(i));
        }
    }
    want
}

/// Rows `start..start + n` as (`n`: Int64, nullable, null at `null_at`; `s`: Utf8
/// `"v{i}"`): the appends' batches.
pub fn numbered_batch(start: i64, n: i64, null_at: Option<i64>) -> RecordBatch {
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("n", DataType::Int64, true),
        arrow_schema::Field::new("s", DataType::Utf8, false),
    ]));
    let n_values: arrow_array::Int64Array = (start..start + n)
        .map(|i| (Some(i) != null_at).then_some(i))
        .collect();
    let s: arrow_array::StringArray = (start..start + n).map(|i| Some(format!("v{i}"))).collect();
    RecordBatch::try_new(schema, vec![Arc::new(n_values), Arc::new(s)]).unwrap()
}
