//! zarrow's errors as Python exceptions: one class per [`ErrorKind`], all under
//! `zarrow.ZarrowError` (a `ValueError`), as delta-rs maps its errors. The classes
//! are defined in `zarrow/__init__.py` (which documents the hierarchy); the message
//! is zarrow's, followed by its causes.
//!
//! | kind | class |
//! |---|---|
//! | `NotFound` | `NotFoundError` (also `FileNotFoundError`) |
//! | `InvalidData` | `InvalidStoreError` |
//! | `InvalidMetadata` | `InvalidMetadataError` (an `InvalidStoreError`) |
//! | `Unsupported` | `UnsupportedError` |
//! | `InvalidArgument` | `InvalidArgumentError` |
//! | `Option` | `OptionError` (an `InvalidArgumentError`) |
//! | `Conflict` | `ConflictError` |
//! | `Busy` | `BusyError` (a `ConflictError`) |
//! | `Io` | `ZarrowIOError` (also `OSError`) |
//! | `Query` | `QueryError` |
//! | `Limit` | `LimitError` |
//! | `Other`, and kinds added later | `ZarrowError` |

use arrow_schema::ArrowError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use zarrow::{Error, ErrorKind};

/// An exception of the class `name` in the `zarrow` package.
fn raise(py: Python<'_>, name: &str, message: String) -> PyErr {
    let class = py
        .import("zarrow")
        .and_then(|m| m.getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        // Only if the package itself is broken: the message still gets through.
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// A `zarrow.ZarrowError` with `message`.
pub(crate) fn zarrow_error(message: &str) -> PyErr {
    Python::attach(|py| raise(py, "ZarrowError", message.to_string()))
}

/// The Python class of an error of `kind`.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "NotFoundError",
        ErrorKind::InvalidData => "InvalidStoreError",
        ErrorKind::InvalidMetadata => "InvalidMetadataError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::Option => "OptionError",
        ErrorKind::Conflict => "ConflictError",
        ErrorKind::Busy => "BusyError",
        ErrorKind::Io => "ZarrowIOError",
        ErrorKind::Query => "QueryError",
        ErrorKind::Limit => "LimitError",
        ErrorKind::Other => "ZarrowError",
        // `ErrorKind` is non-exhaustive: a kind added later is still a ZarrowError.
        _ => "ZarrowError",
    }
}

/// zarrow's error as a Python exception of its kind's class.
pub(crate) fn to_py(e: Error) -> PyErr {
    let name = class_name(e.kind());
    let text = e.with_sources();
    Python::attach(|py| raise(py, name, text))
}

/// An error from a record batch stream: zarrow's own come back as themselves.
pub(crate) fn arrow_error(e: ArrowError) -> PyErr {
    to_py(Error::from(e))
}
