//! `zarrow.Dataset`'s native half: a Zarr table opened once and kept across
//! scans. Each use asks the store whether the metadata it was opened on has
//! changed (a version per metadata document, none read) and opens it again
//! only then; chunk statistics are read again only where their file's
//! version has changed (`ZarrTable::open_tracked`, `ZarrTable::refreshed`).

use std::sync::{PoisonError, RwLock};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use zarrow::datafusion::ZarrTable;

use crate::datafusion::Table;
use crate::errors::to_py;
use crate::location::PyLocation;
use crate::stream::Reader;

/// A table kept open: `zarrow.Dataset` holds one per set of table options.
#[pyclass(module = "zarrow", name = "KeptTable", frozen)]
pub(crate) struct KeptTable {
    table: RwLock<ZarrTable>,
}

/// Open the table at `location` (a directory, a URL or an obstore store; its
/// metadata only, recording each document's version) with `zarrow.table`'s
/// options, and a URL's.
#[pyfunction]
pub(crate) fn kept_table(
    py: Python<'_>,
    location: PyLocation,
    options: &Bound<'_, PyDict>,
) -> PyResult<KeptTable> {
    let (url, options): crate::options::TableGroups = crate::options::keywords("Dataset", options)?;
    let stores = location
        .stores(url)
        .map_err(to_py)?
        .with_runtime(crate::runtime().map_err(to_py)?);
    let table = py
        .detach(|| ZarrTable::open_tracked(&location.0, options, &stores))
        .map_err(to_py)?;
    Ok(KeptTable {
        table: RwLock::new(table),
    })
}

impl KeptTable {
    /// The table, brought up to date.
    pub(crate) fn current(&self, py: Python<'_>) -> PyResult<ZarrTable> {
        self.refresh(py)?;
        Ok(self.get())
    }

    fn get(&self) -> ZarrTable {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[pymethods]
impl KeptTable {
    /// Bring the table up to date with its store: `True` when it was opened
    /// again (its metadata changed since), `False` when it is as it was.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        let now = self.get();
        match py.detach(|| now.refreshed()).map_err(to_py)? {
            Some(table) => {
                *self.table.write().unwrap_or_else(PoisonError::into_inner) = table;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// `_zarrow.filtered` over the table, brought up to date first.
    #[pyo3(signature = (filter, columns, batch_size=None))]
    fn filtered(
        &self,
        py: Python<'_>,
        filter: &[u8],
        columns: Vec<String>,
        batch_size: Option<usize>,
    ) -> PyResult<(Option<Reader>, Option<String>)> {
        let table = self.current(py)?;
        crate::pushdown::filtered_table(py, table, filter, columns, batch_size)
    }

    /// The table, brought up to date, as a datafusion-python table.
    fn table(&self, py: Python<'_>) -> PyResult<Table> {
        Ok(Table::of(self.current(py)?))
    }

    fn __repr__(&self) -> String {
        format!("zarrow.KeptTable({:?})", self.get().location().to_string())
    }
}
