//! Python's keywords, laid over the library's option groups: each keyword is an
//! option's key (`zarrow::options`), its value given as Python holds it (a
//! bool, a number, a str, a list or tuple of them). No option is listed here.

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyTuple};
use zarrow::ReadOptions;
use zarrow::convert::ConvertOptions;
use zarrow::datafusion::{SqlOptions, ZarrTableOptions};
use zarrow::location::UrlOptions;
use zarrow::options::{OptionEntry, OptionKind, Options};
use zarrow::read::TableOptions;
use zarrow::write::WriteOptions;

use crate::errors::to_py;

/// The groups of each native function's keywords, in the order a key is
/// looked up: what the function sets and what [`declarations`] reports.
pub(crate) type ReadGroups = (UrlOptions, ReadOptions, TableOptions);
/// `info`'s groups.
pub(crate) type InfoGroups = (UrlOptions, ReadOptions);
/// `write`'s groups.
pub(crate) type WriteGroups = (UrlOptions, WriteOptions);
/// `convert`'s groups.
pub(crate) type ConvertGroups = (UrlOptions, ConvertOptions);
/// `build_stats`'s group.
pub(crate) type StatsGroups = (UrlOptions,);
/// `table`'s (and the engines' pushed filters') groups.
pub(crate) type TableGroups = (UrlOptions, ZarrTableOptions);

/// `sql`'s groups: the URL's options and the read options over a SQL
/// table's defaults (`categorical_values` on).
pub(crate) fn sql_groups() -> (UrlOptions, ReadOptions) {
    (UrlOptions::default(), SqlOptions::default().table.read)
}

/// One option as a function's keywords take it: its entry, the group that
/// declares it, and its default as the items `set_items` takes.
pub(crate) struct Declared {
    entry: OptionEntry,
    group: &'static str,
    default: Vec<String>,
}

/// The option groups a call's keywords set, in the order a key is looked
/// up: a tuple of [`Options`] groups.
pub(crate) trait Groups {
    /// Set `key` on the first group that has it (`None`: none has).
    fn try_set_items(&mut self, key: &str, items: &[String]) -> Option<zarrow::Result<()>>;

    /// Every key the groups take, once (the first group's that has it), with
    /// its value in these groups as its default.
    fn declared(&self) -> Vec<Declared>;
}

/// Add the options of `group` that `out` has not, with their values in it.
fn declare<T: Options>(group: &T, out: &mut Vec<Declared>) {
    let mut values = Vec::new();
    group.visit(&mut |key, items| values.push((key, items)));
    for entry in T::entries() {
        if out.iter().any(|d| d.entry.key == entry.key) {
            continue;
        }
        let default = values
            .iter()
            .find(|(key, _)| *key == entry.key)
            .map(|(_, items)| items.clone())
            .unwrap_or_default();
        out.push(Declared {
            entry,
            group: T::GROUP,
            default,
        });
    }
}

macro_rules! groups {
    ($($g:ident . $i:tt),+) => {
        impl<$($g: Options),+> Groups for ($($g,)+) {
            fn try_set_items(&mut self, key: &str, items: &[String]) -> Option<zarrow::Result<()>> {
                None$(.or_else(|| self.$i.try_set_items(key, items)))+
            }

            fn declared(&self) -> Vec<Declared> {
                let mut out = Vec::new();
                $(declare(&self.$i, &mut out);)+
                out
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

/// The options each native function's keywords take, from their
/// declarations: a list of dicts `{key, group, default, kind, takes, doc}`,
/// `default` as Python gives it (`None`: not set; a bool, an int, a float, a
/// str, or a list of them). The Python signatures' defaults, the `.pyi` stub
/// and the docs' tables are checked against or generated from it
/// (`python/gen_stubs.py`).
#[pyfunction]
pub(crate) fn declarations<'py>(
    py: Python<'py>,
    function: &str,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let declared = match function {
        "read" => ReadGroups::default().declared(),
        "info" => InfoGroups::default().declared(),
        "write" => WriteGroups::default().declared(),
        "convert" => ConvertGroups::default().declared(),
        "build_stats" => StatsGroups::default().declared(),
        "sql" => sql_groups().declared(),
        "table" => TableGroups::default().declared(),
        other => return Err(PyTypeError::new_err(format!("no function {other:?}"))),
    };
    declared
        .into_iter()
        .map(|d| {
            let dict = PyDict::new(py);
            dict.set_item("key", d.entry.key)?;
            dict.set_item("group", d.group)?;
            dict.set_item("default", default(py, d.entry.kind, &d.default)?)?;
            dict.set_item("kind", format!("{:?}", d.entry.kind))?;
            dict.set_item("takes", d.entry.takes)?;
            dict.set_item("doc", d.entry.doc)?;
            Ok(dict)
        })
        .collect()
}

/// A default's items as Python holds the value: none is `None`, a flag a
/// bool, a list a list, a number an int or a float, anything else a str.
fn default<'py>(
    py: Python<'py>,
    kind: OptionKind,
    items: &[String],
) -> PyResult<Bound<'py, PyAny>> {
    fn scalar<'py>(py: Python<'py>, item: &str) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(n) = item.parse::<i64>() {
            return n.into_bound_py_any(py);
        }
        if let Ok(x) = item.parse::<f64>() {
            return x.into_bound_py_any(py);
        }
        item.into_bound_py_any(py)
    }
    match (kind, items) {
        (_, []) => Ok(py.None().into_bound(py)),
        (OptionKind::Flag, [one]) => (one == "true").into_bound_py_any(py),
        (OptionKind::List, _) => {
            let values = items
                .iter()
                .map(|item| scalar(py, item))
                .collect::<PyResult<Vec<_>>>()?;
            values.into_bound_py_any(py)
        }
        (_, [one]) => scalar(py, one),
        // A value held as several items (a row range).
        (_, _) => {
            let values = items
                .iter()
                .map(|item| scalar(py, item))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, values)?.into_bound_py_any(py)
        }
    }
}
