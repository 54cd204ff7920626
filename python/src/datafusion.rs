//! zarrow's DataFusion table and `STORED AS ZARR` factory for datafusion-python,
//! across its FFI (`datafusion-ffi` at the DataFusion version both sides build).
//!
//! datafusion-python polls a foreign provider's futures on its own threads,
//! where no runtime of this library is entered (tokio's context is per
//! library). Every future and stream of zarrow's therefore runs entered in the
//! package's runtime (`crate::runtime`): the FFI enters it around `execute` and
//! each poll of a stream, and [`OnRuntime`] around `scan` and `create`.

use std::ffi::CStr;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{CreateExternalTable, Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::table_provider_factory::FFI_TableProviderFactory;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use tokio::runtime::Handle;
use zarrow::datafusion::{ZarrTable, ZarrTableFactory};

use crate::errors::{to_py, zarrow_error};
use crate::location::PyLocation;

mod functions;

use functions::SessionFunctions;

/// The DataFusion version zarrow was built against (its major must be
/// datafusion-python's: the FFI's structs differ between majors).
const DATAFUSION_VERSION: &str = datafusion::DATAFUSION_VERSION;

/// A Zarr group or array as a datafusion-python table:
/// `ctx.register_table("t", zarrow.table("t.zarr"))`.
#[pyclass(module = "zarrow", name = "Table", frozen)]
pub(crate) struct Table {
    table: Arc<ZarrTable>,
}

/// Open the table at `location` (a directory, a URL or an obstore store; its
/// metadata only) with `CREATE EXTERNAL TABLE`'s options, and a URL's.
#[pyfunction]
pub(crate) fn table(
    py: Python<'_>,
    location: PyLocation,
    options: &Bound<'_, PyDict>,
) -> PyResult<Table> {
    let (url, options): crate::options::TableGroups = crate::options::keywords("table", options)?;
    let stores = location
        .stores(url)
        .map_err(to_py)?
        .with_runtime(crate::runtime().map_err(to_py)?);
    // An obstore store's table reads the store itself (the session's registry
    // has no `obstore://` store), and `INSERT INTO` appends through it.
    let table = py
        .detach(|| ZarrTable::open(&location.0, options, &stores))
        .map_err(to_py)?;
    Ok(Table {
        table: Arc::new(table),
    })
}

impl Table {
    /// `table` as a datafusion-python table.
    pub(crate) fn of(table: ZarrTable) -> Self {
        Self {
            table: Arc::new(table),
        }
    }
}

#[pymethods]
impl Table {
    /// The provider, for `SessionContext.register_table` (datafusion-python 55):
    /// filters on sorted columns, projections and limits are pushed into it.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_version(py)?;
        let handle = crate::runtime().map_err(to_py)?;
        let codec = session_codec(&session, &handle)?;
        let provider = OnRuntime::<dyn TableProvider> {
            inner: self.table.clone(),
            handle: handle.clone(),
        };
        let ffi =
            FFI_TableProvider::new_with_ffi_codec(Arc::new(provider), true, Some(handle), codec);
        PyCapsule::new_with_value(py, ffi, c"datafusion_table_provider")
    }

    /// The table's schema, as a `pyarrow.Schema`.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        use arrow_pyarrow::ToPyArrow;
        self.table.schema().as_ref().to_pyarrow(py)
    }

    /// The columns a filter narrows the rows by: those declared `sorted`, and
    /// xarray dimension coordinates.
    #[getter]
    fn sorted_columns(&self) -> Vec<String> {
        self.table.sorted_columns()
    }

    fn __repr__(&self) -> String {
        format!("zarrow.Table({:?})", self.table.location().to_string())
    }
}

/// `CREATE EXTERNAL TABLE ... STORED AS ZARR` for datafusion-python:
/// `ctx.register_table_factory("ZARR", zarrow.TableFactory())` (what
/// `zarrow.register(ctx)` does).
#[pyclass(module = "zarrow", name = "TableFactory", frozen)]
pub(crate) struct Factory;

#[pymethods]
impl Factory {
    #[new]
    fn new() -> Self {
        Self
    }

    fn __datafusion_table_provider_factory__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        check_version(py)?;
        let handle = crate::runtime().map_err(to_py)?;
        let codec = session_codec(&session, &handle)?;
        let factory = OnRuntime {
            inner: Arc::new(ZarrTableFactory::default()),
            handle: handle.clone(),
        };
        let ffi =
            FFI_TableProviderFactory::new_with_ffi_codec(Arc::new(factory), Some(handle), codec);
        PyCapsule::new_with_value(py, ffi, c"datafusion_table_provider_factory")
    }
}

/// datafusion-python's major version must be the one zarrow was built against:
/// a mismatched FFI crashes the interpreter instead of raising.
fn check_version(py: Python<'_>) -> PyResult<()> {
    let theirs: String = py
        .import("importlib.metadata")?
        .call_method1("version", ("datafusion",))?
        .extract()?;
    let major = |v: &str| v.split('.').next().map(str::to_owned);
    if major(&theirs) != major(DATAFUSION_VERSION) {
        return Err(zarrow_error(&format!(
            "zarrow was built against DataFusion {DATAFUSION_VERSION}, but datafusion-python is \
             {theirs}: install datafusion=={}.* (the FFI differs between major versions)",
            major(DATAFUSION_VERSION).unwrap_or_default()
        )));
    }
    Ok(())
}

/// The codec for the FFI to decode the filters and commands the session sends
/// with: the session's own, its functions looked up at each use
/// ([`SessionFunctions`]) rather than all imported at every call.
fn session_codec(
    session: &Bound<'_, PyAny>,
    handle: &Handle,
) -> PyResult<FFI_LogicalExtensionCodec> {
    let codec = logical_codec(session)?;
    Ok(match SessionFunctions::of(session, &codec)? {
        Some(functions) => functions.into_ffi(handle.clone()),
        None => codec,
    })
}

/// The session's logical extension codec (datafusion-python passes the session,
/// which gives it, or the codec's capsule itself).
fn logical_codec(obj: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    const ATTR: &str = "__datafusion_logical_extension_codec__";
    let capsule = if obj.hasattr(ATTR)? {
        obj.getattr(ATTR)?.call0()?
    } else {
        obj.clone()
    };
    // SAFETY: datafusion-python stores an `FFI_LogicalExtensionCodec` under
    // this name (at the version `check_version` checked).
    unsafe { capsule_value(&capsule, c"datafusion_logical_extension_codec") }
}

/// A clone (the FFI struct's own clone function) of the value in `capsule`,
/// once its name is checked to be `name`.
///
/// # Safety
/// A capsule named `name` must hold a `T` (the exporter's convention).
unsafe fn capsule_value<T: Clone>(capsule: &Bound<'_, PyAny>, name: &CStr) -> PyResult<T> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let data: NonNull<T> = capsule.pointer_checked(Some(name))?.cast();
    // SAFETY: a capsule named `name` holds a `T` (the caller's promise), alive
    // as long as the capsule, which `capsule` holds during this call; it is
    // cloned before the borrow ends.
    Ok(unsafe { data.as_ref() }.clone())
}

/// `inner`, its futures polled entered in `handle`'s runtime (timers, sockets
/// and `spawn_blocking` need one, and the FFI's caller enters none of ours).
struct OnRuntime<T: ?Sized> {
    inner: Arc<T>,
    handle: Handle,
}

impl<T: ?Sized> std::fmt::Debug for OnRuntime<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnRuntime")
    }
}

/// A future polled with `handle` entered.
struct Entered<F> {
    handle: Handle,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Entered<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _entered = this.handle.enter();
        this.future.as_mut().poll(cx)
    }
}

impl<T: ?Sized> OnRuntime<T> {
    fn entered<F: Future>(&self, future: F) -> Entered<F> {
        Entered {
            handle: self.handle.clone(),
            future: Box::pin(future),
        }
    }
}

#[async_trait]
impl TableProvider for OnRuntime<dyn TableProvider> {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.entered(self.inner.scan(state, projection, filters, limit))
            .await
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<datafusion::common::Statistics> {
        self.inner.statistics()
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.entered(self.inner.insert_into(state, input, insert_op))
            .await
    }
}

#[async_trait]
impl TableProviderFactory for OnRuntime<ZarrTableFactory> {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let table = self.entered(self.inner.create(state, cmd)).await?;
        // Its scans, too, run where they are polled: entered in our runtime.
        Ok(Arc::new(OnRuntime {
            inner: table,
            handle: self.handle.clone(),
        }))
    }
}
