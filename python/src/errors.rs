//! zarrow's errors as Python exceptions.
//!
//! `zarrow.ZarrowError` (a `ValueError`) for everything zarrow refuses: a corrupt
//! or unsupported store, a bad argument, a value that does not fit.
//! `zarrow.ZarrowIOError` (both a `ZarrowError` and an `OSError`) for I/O: a file
//! or object store request that failed, an output that could not be written.
//! Both classes are defined in `zarrow/__init__.py`; the message is zarrow's,
//! followed by its causes.

use arrow_schema::ArrowError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use zarrow::Error;

static ZARROW_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ZARROW_IO_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// An exception of the class `name` in the `zarrow` package.
fn raise(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    message: String,
) -> PyErr {
    match cell.import(py, "zarrow", name) {
        Ok(class) => PyErr::from_type(class.clone(), message),
        // Only if the package itself is broken: the message still gets through.
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// A `zarrow.ZarrowError` with `message`.
pub(crate) fn zarrow_error(message: &str) -> PyErr {
    Python::attach(|py| raise(py, &ZARROW_ERROR, "ZarrowError", message.to_string()))
}

/// zarrow's error as a Python exception.
pub(crate) fn to_py(e: Error) -> PyErr {
    let io = matches!(
        e,
        Error::Io { .. } | Error::Remote { .. } | Error::Output { .. }
    );
    let text = e.with_sources();
    Python::attach(|py| {
        if io {
            raise(py, &ZARROW_IO_ERROR, "ZarrowIOError", text)
        } else {
            raise(py, &ZARROW_ERROR, "ZarrowError", text)
        }
    })
}

/// An error from a record batch stream: zarrow's own come back as themselves.
pub(crate) fn arrow_error(e: ArrowError) -> PyErr {
    to_py(Error::from(e))
}
