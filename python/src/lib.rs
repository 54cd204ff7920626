//! `zarrow._zarrow`: the Python package's native module, a thin layer over the
//! zarrow crate. `zarrow/__init__.py` wraps it with the documented signatures.
//!
//! Every function releases the GIL while zarrow opens, reads, decodes or writes;
//! record batches cross as the Arrow C stream (see `stream.rs`), never copied.

mod datafusion;
mod dataset;
mod enums;
mod errors;
mod expression;
mod keep;
mod location;
mod options;
mod pushdown;
mod stream;

use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::{RecordBatchIterator, RecordBatchReader};
use arrow_pyarrow::FromPyArrow;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use zarrow::ExecutionContext;
use zarrow::convert::{Observer, Written};
use zarrow::datafusion::SqlOptions;
use zarrow::read::{describe_node, open_table};
use zarrow::write::write_batches;

use errors::{to_py, zarrow_error};
use location::PyLocation;
use stream::{Interruptible, Reader};

/// Open the node at `path` (a directory, a URL or an obstore store) as a
/// stream of record batches; with `keep`, only the rows whose categorical
/// columns hold one of the listed categories (the Polars scan's prefilter);
/// with `keep` or `gather`, the reader's batches gathered into growing ones
/// of up to `gather` rows (`batch_size`'s, or the default, without it).
#[pyfunction]
#[pyo3(signature = (path, options, keep=None, gather=None))]
fn read(
    py: Python<'_>,
    path: PyLocation,
    options: &Bound<'_, PyDict>,
    keep: Option<Vec<(String, Vec<String>)>>,
    gather: Option<usize>,
) -> PyResult<Reader> {
    let (url, options, table): options::ReadGroups = options::keywords("read", options)?;
    let batch_size = table.batch_size;
    let (reader, enums) = py
        .detach(|| {
            let context = ExecutionContext::default().with_stores(path.stores(url)?);
            let store = context.stores().open_consolidated(&path.0)?;
            let name = path.0.name();
            let reader = open_table(store.clone(), &name, options, &table, &context)?;
            // Ordered categoricals: their categories, for Polars' Enums.
            let ordered = enums::ordered_columns(&reader.schema());
            let enums = if ordered.is_empty() {
                Ok(Vec::new())
            } else {
                enums::read_categories(store, &name, options, &ordered)
            };
            Ok::<_, zarrow::Error>((reader, enums))
        })
        .map_err(to_py)?;
    let skipped = reader.skipped().iter().map(ToString::to_string).collect();
    let total_rows = reader.total_rows();
    if keep.is_none() && gather.is_none() {
        return Ok(Reader::new(Box::new(reader), Some(total_rows), skipped).with_enums(enums));
    }
    // Kept rows gathered into growing batches, up to the size asked for (or
    // the readers' largest default).
    let rows_known = keep.is_none();
    let kept = keep::KeepCategories::new(
        Box::new(reader),
        keep.unwrap_or_default(),
        gather
            .or(batch_size)
            .unwrap_or(zarrow::read::DEFAULT_MAX_BATCH_ROWS),
    )
    .map_err(|e| zarrow_error(&e))?;
    // With a prefilter, the rows are not known before it has run.
    Ok(Reader::new(Box::new(kept), rows_known.then_some(total_rows), skipped).with_enums(enums))
}

/// The node at `path` described, as JSON.
#[pyfunction]
fn info(py: Python<'_>, path: PyLocation, options: &Bound<'_, PyDict>) -> PyResult<String> {
    let (url, options): options::InfoGroups = options::keywords("info", options)?;
    let info = py
        .detach(|| {
            let store = path.stores(url)?.open_consolidated(&path.0)?;
            let name = path.0.name();
            describe_node(store, &name, options)
        })
        .map_err(to_py)?;
    serde_json::to_string(&info).map_err(|e| zarrow_error(&e.to_string()))
}

/// The record batches of `data`: an object with `__arrow_c_stream__` (a table, a
/// reader, a DataFrame) or `__arrow_c_array__` (a record batch).
fn batches(data: &Bound<'_, PyAny>) -> PyResult<Box<dyn RecordBatchReader + Send>> {
    if data.hasattr("__arrow_c_stream__")? {
        let reader = arrow_array::ffi_stream::ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        return Ok(Box::new(reader));
    }
    if data.hasattr("__arrow_c_array__")? {
        let batch = arrow_array::RecordBatch::from_pyarrow_bound(data)?;
        let schema = batch.schema();
        return Ok(Box::new(RecordBatchIterator::new([Ok(batch)], schema)));
    }
    Err(PyTypeError::new_err(format!(
        "zarrow.write takes an object with __arrow_c_stream__ or __arrow_c_array__ (a pyarrow Table or RecordBatch, a Polars DataFrame, a zarrow.Reader...), not {}",
        data.get_type().name()?
    )))
}

/// Write `data` as a Zarr group at `path` (a directory, a URL or an obstore
/// store); the rows written.
#[pyfunction]
fn write(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    path: PyLocation,
    options: &Bound<'_, PyDict>,
) -> PyResult<u64> {
    // The option names and values of `zarrow convert` and COPY's OPTIONS;
    // those not given keep the library's defaults.
    let (url, options): options::WriteGroups = options::keywords("write", options)?;
    let (overwrite, how) = (options.overwrite, options.clone());
    let raised = Arc::new(Mutex::new(None));
    let reader = Interruptible::driven(batches(data)?, raised.clone());
    // As `zarrow convert` writes: a directory whole or not at all (an existing
    // one replaced only with `overwrite`, and only if it is a Zarr store); a
    // URL or obstore store with every node's metadata after its chunks. An
    // append writes in place, the writer keeping a reader's view whole.
    let written = py.detach(|| {
        let write = |store, node: &str| write_batches(reader, store, node, options);
        let stores = path.stores(url)?;
        stores.write_zarr(&path.0, overwrite, &how, write)
    });
    // An interrupt (Ctrl-C) while the input was read: raised as itself.
    if let Some(err) = take(&raised) {
        return Err(err);
    }
    written.map_err(to_py)
}

fn take(raised: &Mutex<Option<PyErr>>) -> Option<PyErr> {
    raised.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// What `convert` observes: batches checked for interrupts, notes kept.
struct Observed {
    raised: Arc<Mutex<Option<PyErr>>>,
    notes: Mutex<Vec<String>>,
}

impl Observer for Observed {
    fn reader(
        &self,
        reader: Box<dyn RecordBatchReader + Send>,
        _total: Option<u64>,
    ) -> Box<dyn RecordBatchReader + Send> {
        Box::new(Interruptible::driven(reader, self.raised.clone()))
    }

    fn note(&self, message: &str) {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message.to_string());
    }
}

impl Observed {
    /// Run `work` (without the GIL) under a fresh observer: what it wrote and
    /// the notes it made, or the exception a batch raised (an interrupt).
    fn run(
        py: Python<'_>,
        work: impl FnOnce(&Observed) -> zarrow::Result<Written> + Send,
    ) -> PyResult<(Written, Vec<String>)> {
        let observed = Observed {
            raised: Arc::new(Mutex::new(None)),
            notes: Mutex::new(Vec::new()),
        };
        let written = py.detach(|| work(&observed));
        if let Some(err) = take(&observed.raised) {
            return Err(err);
        }
        let notes = observed
            .notes
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        Ok((written.map_err(to_py)?, notes))
    }
}

/// Convert `src` to `dst` as `zarrow convert` does; returns (what was written:
/// "rows" or "arrays", how many, the notes).
#[pyfunction]
fn convert(
    py: Python<'_>,
    src: PyLocation,
    dst: PyLocation,
    options: &Bound<'_, PyDict>,
) -> PyResult<(&'static str, u64, Vec<String>)> {
    let (url, options): options::ConvertGroups = options::keywords("convert", options)?;
    let (written, notes) = Observed::run(py, |observed| {
        // The package's runtime, lent to the ends' URLs.
        let context =
            ExecutionContext::default().with_stores(location::stores(url, &[&src, &dst])?);
        zarrow::convert::convert(&src.0, &dst.0, &options, &context, observed)
    })?;
    match written {
        Written::Rows(n) => Ok(("rows", n, notes)),
        Written::Arrays(n) => Ok(("arrays", n as u64, notes)),
        other => Err(zarrow_error(&format!("wrote {other}"))),
    }
}

/// Record chunk statistics for every 1-D array at `location` (as `zarrow
/// stats` does); returns (the arrays described, the notes).
#[pyfunction]
fn build_stats(
    py: Python<'_>,
    location: PyLocation,
    options: &Bound<'_, PyDict>,
) -> PyResult<(u64, Vec<String>)> {
    let (url,): options::StatsGroups = options::keywords("build_stats", options)?;
    let (written, notes) = Observed::run(py, |observed| {
        let context = ExecutionContext::default().with_stores(location::stores(url, &[&location])?);
        zarrow::convert::record_stats(&location.0, &context, observed)
    })?;
    match written {
        Written::Arrays(n) => Ok((n as u64, notes)),
        other => Err(zarrow_error(&format!("wrote {other}"))),
    }
}

/// Answer `query` (DataFusion's SQL) over `tables` (name, location: a path, a
/// URL or an obstore store) as a stream of record batches.
#[pyfunction]
#[pyo3(signature = (query, tables, partitions, options, kept=Vec::new()))]
fn sql(
    py: Python<'_>,
    query: &str,
    tables: Vec<(String, PyLocation)>,
    partitions: Option<usize>,
    options: &Bound<'_, PyDict>,
    kept: Vec<(String, Py<dataset::KeptTable>)>,
) -> PyResult<Reader> {
    let mut sql = SqlOptions::default();
    // The read options over a SQL table's defaults.
    let mut groups = options::sql_groups();
    options::apply("sql", options, &mut groups)?;
    let (url, read) = groups;
    sql.table.read = read;
    sql.partitions = partitions;
    sql.url = url;
    let mut options = sql;
    // A `zarrow.Dataset`'s tables, kept open, brought up to date.
    for (name, table) in kept {
        options
            .opened
            .push((name, Arc::new(table.get().current(py)?)));
    }
    let runtime = runtime().map_err(to_py)?;
    let reader = py
        .detach(|| {
            // An obstore store's table reads the store itself: the session's
            // registry has no `obstore://` store.
            let mut located = Vec::new();
            for (name, location) in tables {
                match location.0.portable() {
                    Some(text) => located.push((name, text)),
                    None => {
                        let stores = location.stores(options.url.clone())?;
                        let table = zarrow::datafusion::ZarrTable::open(
                            &location.0,
                            options.table.clone(),
                            &stores,
                        )?;
                        options.opened.push((name, Arc::new(table)));
                    }
                }
            }
            zarrow::datafusion::sql(query, &located, &options, runtime)
        })
        .map_err(to_py)?;
    let skipped = reader
        .skipped()
        .iter()
        .map(|(table, skipped)| format!("{table}: {skipped}"))
        .collect();
    Ok(Reader::new(Box::new(reader), None, skipped))
}

/// The process's one runtime (`zarrow::store::runtime`), for everything the
/// package runs async: `sql`, the engines' pushed filters (`pushdown.rs`), the
/// datafusion-python tables, and the I/O of every URL, repository and obstore
/// store it opens (Python lends none).
fn runtime() -> zarrow::Result<tokio::runtime::Handle> {
    zarrow::store::runtime()
}

#[pymodule]
#[pyo3(name = "_zarrow")]
fn zarrow_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    stream::init_main_thread(m.py())?;
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(build_stats, m)?)?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    m.add_function(wrap_pyfunction!(pushdown::filtered, m)?)?;
    m.add_function(wrap_pyfunction!(pushdown::refusal, m)?)?;
    m.add_class::<dataset::KeptTable>()?;
    m.add_function(wrap_pyfunction!(dataset::kept_table, m)?)?;
    m.add_class::<datafusion::Table>()?;
    m.add_class::<datafusion::Factory>()?;
    m.add_function(wrap_pyfunction!(datafusion::table, m)?)?;
    m.add_function(wrap_pyfunction!(options::options, m)?)?;
    m.add_function(wrap_pyfunction!(options::declarations, m)?)?;
    Ok(())
}
