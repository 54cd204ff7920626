//! Python's keywords, laid over the library's option groups: each keyword is an
//! option's key (`zarrow::options`), its value given as Python holds it (a
//! bool, a number, a str, a list or tuple of them). No option is listed here.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use zarrow::options::{OptionEntry, Options};

use crate::errors::to_py;

/// The option groups a call's keywords set, in the order a key is looked
/// up: a tuple of [`Options`] groups.
pub(crate) trait Groups {
    /// Set `key` on the first group that has it (`None`: none has).
    fn try_set_items(&mut self, key: &str, items: &[String]) -> Option<zarrow::Result<()>>;
}

macro_rules! groups {
    ($($g:ident . $i:tt),+) => {
        impl<$($g: Options),+> Groups for ($($g,)+) {
            fn try_set_items(&mut self, key: &str, items: &[String]) -> Option<zarrow::Result<()>> {
                None$(.or_else(|| self.$i.try_set_items(key, items)))+
            }
        }
    };
}
groups!(A.0);
groups!(A.0, B.1);
groups!(A.0, B.1, C.2);

/// The groups `G` (each from its defaults) with the keywords of `options`
/// set: see [`apply`].
pub(crate) fn keywords<G: Groups + Default>(
    function: &str,
    options: &Bound<'_, PyDict>,
) -> PyResult<G> {
    let mut groups = G::default();
    apply(function, options, &mut groups)?;
    Ok(groups)
}

/// Set each keyword of `options` on the first of `groups` that has its key
/// (`None` keeps the value); `function` names the call in the error for a
/// key none has.
pub(crate) fn apply(
    function: &str,
    options: &Bound<'_, PyDict>,
    groups: &mut impl Groups,
) -> PyResult<()> {
    for (key, value) in options.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let items = items(&value).map_err(|e| {
            let err = PyTypeError::new_err(format!("{function}() option {key}: {e}"));
            err.set_cause(value.py(), Some(e));
            err
        })?;
        match groups.try_set_items(&key, &items) {
            Some(done) => done.map_err(to_py)?,
            None => {
                return Err(PyTypeError::new_err(format!(
                    "{function}() got an unexpected option {key:?}"
                )));
            }
        }
    }
    Ok(())
}

/// A value as the items `set_items` takes: a list's or tuple's each, else one.
fn items(value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|item| text(&item?)).collect();
    }
    Ok(vec![text(value)?])
}

/// A scalar as the text an option parses: a bool as `true` / `false`, a
/// number or a str as written.
fn text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(flag.is_true().to_string());
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(text);
    }
    if let Ok(n) = value.extract::<i64>() {
        return Ok(n.to_string());
    }
    if let Ok(x) = value.extract::<f64>() {
        return Ok(x.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "a str, int, float or bool, not {}",
        value.get_type().name()?
    )))
}

/// The options of a group as `(key, kind, doc)`, for the package's own
/// check that its keywords are the library's.
#[pyfunction]
pub(crate) fn options(group: &str) -> PyResult<Vec<(&'static str, String, &'static str)>> {
    fn of<T: Options>() -> Vec<OptionEntry> {
        T::entries()
    }
    let entries = match group {
        "read" => of::<zarrow::ReadOptions>(),
        "table" => of::<zarrow::read::TableOptions>(),
        "url" => of::<zarrow::location::UrlOptions>(),
        "write" => of::<zarrow::write::WriteOptions>(),
        "convert" => of::<zarrow::convert::ConvertOptions>(),
        "ZARR table" => of::<zarrow::datafusion::ZarrTableOptions>(),
        other => return Err(PyTypeError::new_err(format!("no option group {other:?}"))),
    };
    Ok(entries
        .into_iter()
        .map(|e| (e.key, format!("{:?}", e.kind), e.doc))
        .collect())
}
