//! zarrow's errors as Python exceptions: one class per [`ErrorKind`], all under
//! `zarrow.ZarrowError` (a `ValueError`), as delta-rs maps its errors. The classes
//! are defined in `zarrow/__init__.py` (which documents the hierarchy) and looked
//! up once each. The message is zarrow's, followed by its causes; the exception
//! also carries the error's typed context as attributes: `kind` (the
//! [`ErrorKind`] name, `"InvalidMetadata"`) and [`Error::fields`] (`location`,
//! `path`, `key`, `field`, `codec`, `expected`, `found` are always there, `None`
//! when the error has no such field; others, `name`, `column`, `row`..., only
//! when it has them), so a caller acts on them without parsing the message.
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
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use zarrow::{Error, ErrorKind};

/// The exception classes, in the order of [`CLASSES`]' cells.
const CLASS_NAMES: [&str; 12] = [
    "ZarrowError",
    "NotFoundError",
    "InvalidStoreError",
    "InvalidMetadataError",
    "UnsupportedError",
    "InvalidArgumentError",
    "OptionError",
    "ConflictError",
    "BusyError",
    "ZarrowIOError",
    "QueryError",
    "LimitError",
];

/// Each class of [`CLASS_NAMES`], looked up in the `zarrow` package the first
/// time an error of it is raised.
static CLASSES: [PyOnceLock<Py<PyType>>; CLASS_NAMES.len()] =
    [const { PyOnceLock::new() }; CLASS_NAMES.len()];

/// The attributes every exception has (`None` when the error has no such field).
const COMMON_FIELDS: [&str; 7] = [
    "location", "path", "key", "field", "codec", "expected", "found",
];

/// Fields whose values are counts: Python gets them as `int`.
const COUNT_FIELDS: [&str; 3] = ["row", "size", "limit"];

/// The class `CLASS_NAMES[index]`.
fn class(py: Python<'_>, index: usize) -> PyResult<&Bound<'_, PyType>> {
    CLASSES[index].import(py, "zarrow", CLASS_NAMES[index])
}

/// An exception of the class `CLASS_NAMES[index]` with `message`, its `kind`
/// and its typed `fields` as attributes.
fn raise(
    py: Python<'_>,
    index: usize,
    message: String,
    kind: &str,
    fields: &[(&'static str, String)],
) -> PyErr {
    let err = match class(py, index) {
        Ok(class) => PyErr::from_type(class.clone(), message),
        // Only if the package itself is broken: the message still gets through.
        Err(_) => return PyRuntimeError::new_err(message),
    };
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("kind", kind)?;
        for name in COMMON_FIELDS {
            value.setattr(name, py.None())?;
        }
        for (name, text) in fields {
            match text.parse::<u64>() {
                Ok(n) if COUNT_FIELDS.contains(name) => value.setattr(*name, n)?,
                _ => value.setattr(*name, text)?,
            }
        }
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// A `zarrow.ZarrowError` with `message` (kind `Other`, no fields).
pub(crate) fn zarrow_error(message: &str) -> PyErr {
    Python::attach(|py| raise(py, 0, message.to_string(), "Other", &[]))
}

/// The index in [`CLASS_NAMES`] of the class of an error of `kind`.
fn class_index(kind: ErrorKind) -> usize {
    let name = match kind {
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
    };
    CLASS_NAMES.iter().position(|n| *n == name).unwrap_or(0)
}

/// zarrow's error as a Python exception of its kind's class, its typed context
/// as attributes.
pub(crate) fn to_py(e: Error) -> PyErr {
    let kind = e.kind();
    let text = e.with_sources();
    let fields = e.fields();
    let kind_name = format!("{kind:?}");
    Python::attach(|py| raise(py, class_index(kind), text, &kind_name, &fields))
}

/// An error from a record batch stream: zarrow's own come back as themselves.
pub(crate) fn arrow_error(e: ArrowError) -> PyErr {
    to_py(Error::from(e))
}
