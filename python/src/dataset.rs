//! `zarrow.Dataset`'s native half: a Zarr table opened once and kept across
//! scans. Each use asks the store whether the metadata it was opened on has
//! changed (a version per metadata document, none read) and opens it again
//! only then; chunk statistics are read again only where their file's
//! version has changed (`ZarrTable::open_tracked`, `ZarrTable::refreshed`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use datafusion::physical_plan::ExecutionPlan;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use zarrow::datafusion::{ZarrTable, for_another_run};

use crate::datafusion::Table;
use crate::errors::to_py;
use crate::location::PyLocation;
use crate::pushdown::{self, Planned, Refused};
use crate::stream::Reader;

/// A table kept open: `zarrow.Dataset` holds one per set of table options.
#[pyclass(module = "zarrow", name = "KeptTable", frozen)]
pub(crate) struct KeptTable {
    kept: Mutex<Kept>,
}

/// The table as last opened, and the plans of the filtered scans made over
/// it (each run again through `for_another_run`: the chunk statistics are
/// read and checked at every run; dropped when the table is opened again).
struct Kept {
    table: ZarrTable,
    /// Counts the openings: a plan made over an older table is not kept.
    opened: u64,
    /// The plans last made, by filter, columns and batch rows; the oldest
    /// first.
    plans: VecDeque<(PlanKey, Arc<dyn ExecutionPlan>)>,
}

/// What a filtered scan's plan is made of besides the table.
type PlanKey = (Vec<u8>, Vec<String>, usize);

/// The most plans a table keeps (a dashboard's handful of queries).
const KEPT_PLANS: usize = 16;

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
        kept: Mutex::new(Kept {
            table,
            opened: 0,
            plans: VecDeque::new(),
        }),
    })
}

impl KeptTable {
    /// The table, brought up to date.
    pub(crate) fn current(&self, py: Python<'_>) -> PyResult<ZarrTable> {
        Ok(self.up_to_date(py)?.0)
    }

    /// The table brought up to date with its store, which opening of it it
    /// is, and whether it was opened again now (its metadata changed since).
    fn up_to_date(&self, py: Python<'_>) -> PyResult<(ZarrTable, u64, bool)> {
        let (now, opened) = {
            let kept = self.lock();
            (kept.table.clone(), kept.opened)
        };
        let Some(table) = py.detach(|| now.refreshed()).map_err(to_py)? else {
            return Ok((now, opened, false));
        };
        let mut kept = self.lock();
        // (Another thread's newer opening is kept.)
        if kept.opened == opened {
            kept.table = table;
            kept.opened += 1;
            kept.plans.clear();
        }
        Ok((kept.table.clone(), kept.opened, true))
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The kept plan for `key`, made ready to run again (`None`: none kept,
    /// or it cannot run again).
    fn kept_plan(&self, key: &PlanKey, opened: u64) -> PyResult<Option<Arc<dyn ExecutionPlan>>> {
        let plan = {
            let mut kept = self.lock();
            if kept.opened != opened {
                return Ok(None);
            }
            let Some(i) = kept.plans.iter().position(|(k, _)| k == key) else {
                return Ok(None);
            };
            // The most recently used last.
            let entry = kept.plans.remove(i).expect("a position found");
            let plan = entry.1.clone();
            kept.plans.push_back(entry);
            plan
        };
        for_another_run(&plan).map_err(|e| to_py(pushdown::query_error(e)))
    }

    /// Keep `plan` (made over opening `opened` of the table) for `key`.
    fn keep_plan(&self, key: PlanKey, opened: u64, plan: Arc<dyn ExecutionPlan>) {
        let mut kept = self.lock();
        if kept.opened != opened || kept.plans.iter().any(|(k, _)| *k == key) {
            return;
        }
        if kept.plans.len() == KEPT_PLANS {
            kept.plans.pop_front();
        }
        kept.plans.push_back((key, plan));
    }
}

#[pymethods]
impl KeptTable {
    /// Bring the table up to date with its store: `True` when it was opened
    /// again (its metadata changed since), `False` when it is as it was.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.up_to_date(py)?.2)
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
        let (table, opened, _) = self.up_to_date(py)?;
        let batch_rows = pushdown::batch_rows(batch_size);
        let key: PlanKey = (filter.to_vec(), columns, batch_rows);
        if let Some(plan) = self.kept_plan(&key, opened)? {
            return Ok((Some(pushdown::run(py, plan, batch_rows)?), None));
        }
        match pushdown::planned(py, table, filter, key.1.clone(), batch_rows)? {
            Planned::Plan(plan) => {
                // The plan kept is never run itself: each run is a copy.
                let run = for_another_run(&plan).map_err(|e| to_py(pushdown::query_error(e)))?;
                let run = match run {
                    Some(run) => {
                        self.keep_plan(key, opened, plan);
                        run
                    }
                    None => plan,
                };
                Ok((Some(pushdown::run(py, run, batch_rows)?), None))
            }
            Planned::Refused(Refused(why)) => Ok((None, Some(why))),
        }
    }

    /// The table, brought up to date, as a datafusion-python table.
    fn table(&self, py: Python<'_>) -> PyResult<Table> {
        Ok(Table::of(self.current(py)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "zarrow.KeptTable({:?})",
            self.lock().table.location().to_string()
        )
    }
}
