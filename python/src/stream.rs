//! Record batches across the boundary: `zarrow.Reader`, whose `__arrow_c_stream__`
//! hands zarrow's `RecordBatchReader` to the consumer through the Arrow C stream
//! interface (arrow-rs' `FFI_ArrowArrayStream` in a PyCapsule, as the Arrow
//! PyCapsule protocol specifies).
//!
//! Copies: none. Each batch's buffers are exported as they are (the consumer holds
//! a reference to zarrow's `Buffer`s and releases it through the C interface), so a
//! chunk that zarrow decodes zero-copy stays zero-copy in pyarrow, Polars or DuckDB.
//!
//! While a consumer pulls batches, [`Interruptible`] checks for signals between
//! batches (Ctrl-C stops a long read) and releases the GIL while zarrow reads and
//! decodes.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_pyarrow::ToPyArrow;
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyList};

use crate::errors::zarrow_error;

/// The identity (`threading.get_ident()`, `pthread_self`) of the interpreter's
/// main thread: the only thread on which Python runs signal handlers.
static MAIN_THREAD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Record the main thread's identity (at import).
pub(crate) fn init_main_thread(py: Python<'_>) -> PyResult<()> {
    let ident: u64 = py
        .import("threading")?
        .call_method0("main_thread")?
        .getattr("ident")?
        .extract()?;
    let _ = MAIN_THREAD.set(ident);
    Ok(())
}

fn on_main_thread() -> bool {
    // SAFETY: pthread_self has no preconditions; it returns the calling thread's
    // handle, which CPython's `threading.get_ident()` reports as an integer.
    let me = unsafe { libc::pthread_self() } as u64;
    MAIN_THREAD.get() == Some(&me)
}

/// Why a stream stopped: the signal handler raised (Ctrl-C's KeyboardInterrupt).
#[derive(Debug)]
struct Interrupted(String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "zarrow: read interrupted ({})", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// A `RecordBatchReader` that, on the main thread, runs Python's signal handlers
/// before each batch and releases the GIL while the next batch is read.
///
/// When a handler raises (Ctrl-C: KeyboardInterrupt), the stream ends with an
/// error, and the exception is either kept in `raised` for the zarrow function
/// driving the read to raise, or, for a stream a consumer pulls (pyarrow, Polars,
/// DuckDB), which can only pass on a message, the interrupt is signalled again
/// (`PyErr_SetInterrupt`) so that the KeyboardInterrupt reaches Python code as
/// soon as the consumer returns.
///
/// Off the main thread (a consumer's worker thread) the GIL is not touched: the
/// thread does not hold it, and taking it there could deadlock a consumer that
/// holds it while it waits for its workers.
pub(crate) struct Interruptible {
    inner: Box<dyn RecordBatchReader + Send>,
    raised: Option<Arc<Mutex<Option<PyErr>>>>,
}

impl Interruptible {
    /// For a stream handed to a consumer: interrupts are signalled again.
    pub(crate) fn exported(inner: Box<dyn RecordBatchReader + Send>) -> Self {
        Self {
            inner,
            raised: None,
        }
    }

    /// For a read zarrow drives: an interrupt's exception lands in `raised`.
    pub(crate) fn driven(
        inner: Box<dyn RecordBatchReader + Send>,
        raised: Arc<Mutex<Option<PyErr>>>,
    ) -> Self {
        Self {
            inner,
            raised: Some(raised),
        }
    }

    fn interrupted(&self, py: Python<'_>, err: PyErr) -> ArrowError {
        let what = err.to_string();
        match &self.raised {
            Some(slot) => {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
            }
            None if err.is_instance_of::<PyKeyboardInterrupt>(py) => {
                // SAFETY: PyErr_SetInterrupt only sets the interpreter's "SIGINT
                // arrived" flag (it is async-signal-safe); the GIL is held here.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
            }
            // Another handler's exception: the consumer gets its message in the
            // error below; it is reported as unraisable too (restoring it while
            // control returns to the consumer would leave an exception set
            // under a C caller).
            None => err.write_unraisable(py, None),
        }
        ArrowError::ExternalError(Box::new(Interrupted(what)))
    }
}

impl Iterator for Interruptible {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if !on_main_thread() {
            return self.inner.next();
        }
        Python::attach(|py| {
            if let Err(err) = py.check_signals() {
                return Some(Err(self.interrupted(py, err)));
            }
            let inner = &mut self.inner;
            py.detach(move || inner.next())
        })
    }
}

impl RecordBatchReader for Interruptible {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}

/// A stream of record batches read from a Zarr array or group.
///
/// Pass it to anything that takes an Arrow stream (`pa.table(r)`,
/// `pa.RecordBatchReader.from_stream(r)`, `pl.from_arrow(r)`,
/// `duckdb.from_arrow(r)`), or iterate over it for `pyarrow.RecordBatch`es. It is
/// read once: a second consumer gets an error.
#[pyclass(module = "zarrow", name = "Reader", frozen)]
pub(crate) struct Reader {
    reader: Mutex<Option<Box<dyn RecordBatchReader + Send>>>,
    schema: SchemaRef,
    total_rows: Option<u64>,
    skipped: Vec<String>,
    /// Whether the exported stream runs signal handlers (see `to_polars`).
    interruptible: bool,
    /// The ordered categoricals, with their categories (see `enums.rs`), or
    /// why they could not be read: an error for Polars alone, which needs
    /// them (a pyarrow consumer takes the dictionaries as they are).
    enums: Result<Vec<(String, Vec<String>)>, String>,
}

impl Reader {
    pub(crate) fn new(
        reader: Box<dyn RecordBatchReader + Send>,
        total_rows: Option<u64>,
        skipped: Vec<String>,
    ) -> Self {
        Self {
            schema: reader.schema(),
            reader: Mutex::new(Some(reader)),
            total_rows,
            skipped,
            interruptible: true,
            enums: Ok(Vec::new()),
        }
    }

    /// The ordered categoricals' categories, for Polars' `Enum`s.
    pub(crate) fn with_enums(mut self, enums: Result<Vec<(String, Vec<String>)>, String>) -> Self {
        self.enums = enums;
        self
    }

    /// The reader's lock, without waiting: a thread that holds it may be reading
    /// with the GIL released, and waiting here with the GIL held would deadlock.
    fn lock(&self) -> PyResult<MutexGuard<'_, Option<Box<dyn RecordBatchReader + Send>>>> {
        match self.reader.try_lock() {
            Ok(guard) => Ok(guard),
            Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => Err(zarrow_error(
                "this zarrow.Reader is being read by another thread",
            )),
        }
    }

    /// The next batch, read with the GIL released; `None` at the end (the
    /// reader is then dropped).
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        py.check_signals()?;
        let mut guard = self.lock()?;
        let Some(reader) = guard.as_mut() else {
            return Ok(None);
        };
        match py.detach(|| reader.next()) {
            None => {
                *guard = None;
                Ok(None)
            }
            Some(Ok(batch)) => Ok(Some(batch)),
            Some(Err(e)) => Err(crate::errors::arrow_error(e)),
        }
    }

    fn take(&self) -> PyResult<Box<dyn RecordBatchReader + Send>> {
        self.lock()?.take().ok_or_else(|| {
            zarrow_error(
                "this zarrow.Reader has been consumed: call zarrow.read again to read again",
            )
        })
    }
}

#[pymethods]
impl Reader {
    /// The Arrow C stream of the batches (the Arrow PyCapsule protocol).
    /// `requested_schema` is not applied: the stream has the schema of
    /// `__arrow_c_schema__`.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self.take()?;
        let stream = if self.interruptible {
            FFI_ArrowArrayStream::new(Box::new(Interruptible::exported(reader)))
        } else {
            FFI_ArrowArrayStream::new(reader)
        };
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The Arrow C schema of the batches (the Arrow PyCapsule protocol).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| zarrow_error(&e.to_string()))?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    /// The schema, as a `pyarrow.Schema` (needs pyarrow).
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.schema.as_ref().to_pyarrow(py)
    }

    /// The rows the stream yields (`None` for a query's answer: not known before
    /// it is read).
    #[getter]
    fn total_rows(&self) -> Option<u64> {
        self.total_rows
    }

    /// The children of the group (of a query's Zarr tables) that are not columns,
    /// each with the reason.
    #[getter]
    fn skipped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.skipped)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch, as a `pyarrow.RecordBatch` (needs pyarrow).
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.next_batch(py)? {
            Some(batch) => batch.to_pyarrow(py).map(Some),
            None => Ok(None),
        }
    }

    /// The whole stream as a `polars.DataFrame` (needs polars), as
    /// `pl.DataFrame(reader)`: the batches cross zero-copy.
    ///
    /// Its stream runs no signal handlers: Polars pulls it with the GIL
    /// released by its own PyO3, under this method, where ours still counts
    /// the GIL as held and would run them without it.
    ///
    /// An ordered categorical is a `polars.Enum` of its categories (Polars
    /// would import it as a `Categorical`, ordered by its strings).
    fn to_polars<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let enums = self._ordered_categories()?;
        // A reader of its own: Polars pulls it while this one stays free.
        let mut rest = Reader::new(self.take()?, self.total_rows, Vec::new());
        rest.interruptible = false;
        let polars = py.import("polars")?;
        let frame = polars.getattr("DataFrame")?.call1((rest,))?;
        if enums.is_empty() {
            return Ok(frame);
        }
        // Each column by name (`pl.col` would read a name such as `^a.*$` as
        // a pattern), cast to the Enum of its categories.
        let casts = enums
            .into_iter()
            .map(|(name, categories)| {
                let dtype = polars.getattr("Enum")?.call1((categories,))?;
                frame
                    .call_method1("get_column", (name,))?
                    .call_method1("cast", (dtype,))
            })
            .collect::<PyResult<Vec<_>>>()?;
        frame.call_method1("with_columns", (casts,))
    }

    /// The ordered categoricals with their categories (read when the reader
    /// was opened), for `zarrow.scan`.
    fn _ordered_categories(&self) -> PyResult<Vec<(String, Vec<String>)>> {
        self.enums.clone().map_err(|e| zarrow_error(&e))
    }

    /// A stream of no batch with this reader's schema (for a consumer's schema:
    /// nothing is read).
    fn _schema_only(&self) -> Reader {
        let none = RecordBatchIterator::new(std::iter::empty(), self.schema.clone());
        Reader::new(Box::new(none), Some(0), Vec::new())
    }

    /// The next batch as a stream of its own (`__arrow_c_stream__`), for a
    /// consumer without pyarrow (`pl.DataFrame(r._next_stream())`, zero-copy);
    /// `None` at the end.
    fn _next_stream(&self, py: Python<'_>) -> PyResult<Option<Reader>> {
        Ok(self.next_batch(py)?.map(|batch| {
            let rows = batch.num_rows() as u64;
            let one = RecordBatchIterator::new([Ok(batch)], self.schema.clone());
            Reader::new(Box::new(one), Some(rows), Vec::new())
        }))
    }

    fn __repr__(&self) -> String {
        let columns: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        let rows = self
            .total_rows
            .map_or_else(|| "query".to_string(), |n| format!("{n} rows"));
        format!("zarrow.Reader({rows}; {})", columns.join(", "))
    }
}
