//! The session's functions, for decoding the filters datafusion-python pushes
//! into zarrow's table, without importing all of them at every call.
//!
//! datafusion-ffi decodes a pushed filter (in `supports_filters_pushdown` and
//! in `scan`) against the task context its provider's task-context provider
//! gives. The session's own is foreign to this library, and importing its
//! task context imports every function it has (hundreds of UDFs, each wrapped
//! and dropped again): most of a pruned query's time (issue 50, item 7).
//!
//! Instead the table's provider is given [`no_functions`], a task context
//! with none (made once), and a codec, [`SessionFunctions`]. A filter that
//! names no function (a comparison, `IN`, `BETWEEN`, `IS NULL`) decodes with
//! no import. One that names a function misses in the empty task context, so
//! DataFusion's decoder asks the codec, which looks the name up in the
//! session's functions as they are at that call (a UDF registered after the
//! table included), and otherwise asks the session's own codec: the function
//! the session planned, found as the task context would have found it.

use std::sync::{Arc, OnceLock};

use arrow_schema::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::Result as DfResult;
use datafusion::execution::{FunctionRegistry, TaskContext, TaskContextProvider};
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::{
    FFI_LogicalExtensionCodec, ForeignLogicalExtensionCodec,
};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use pyo3::prelude::*;
use tokio::runtime::Handle;

use super::capsule_value;

/// A task context with no functions, made once per process: kept in a static,
/// so the weak reference an `FFI_TaskContextProvider` holds always upgrades.
fn no_functions() -> FFI_TaskContextProvider {
    static NONE: OnceLock<Arc<NoFunctions>> = OnceLock::new();
    let provider = NONE.get_or_init(|| Arc::new(NoFunctions(Arc::new(TaskContext::default()))));
    FFI_TaskContextProvider::from(&(Arc::clone(provider) as Arc<dyn TaskContextProvider>))
}

struct NoFunctions(Arc<TaskContext>);

impl TaskContextProvider for NoFunctions {
    fn task_ctx(&self) -> Arc<TaskContext> {
        Arc::clone(&self.0)
    }
}

/// The session's codec, with functions by name looked up in the session's
/// task context at each lookup.
#[derive(Debug)]
pub(super) struct SessionFunctions {
    /// The session's task-context provider (datafusion-python's).
    session: FFI_TaskContextProvider,
    /// The session's codec (datafusion-python's).
    codec: Arc<dyn LogicalExtensionCodec>,
}

impl SessionFunctions {
    /// The session's functions and codec, where `session` (a datafusion-python
    /// `SessionContext`) gives its task-context provider; `None` where it does
    /// not (then the session's codec is used as it comes).
    pub(super) fn of(
        session: &Bound<'_, PyAny>,
        codec: &FFI_LogicalExtensionCodec,
    ) -> PyResult<Option<Self>> {
        const ATTR: &str = "__datafusion_task_context_provider__";
        if !session.hasattr(ATTR)? {
            return Ok(None);
        }
        let capsule = session.getattr(ATTR)?.call0()?;
        // SAFETY: datafusion-python stores an `FFI_TaskContextProvider` under
        // this name (at the DataFusion major `check_version` checked); its
        // clone is a weak reference to the session.
        let session = unsafe { capsule_value(&capsule, c"datafusion_task_context_provider")? };
        Ok(Some(Self {
            session,
            codec: Arc::new(ForeignLogicalExtensionCodec(codec.clone())),
        }))
    }

    /// The codec to give the FFI: this one, over the empty task context.
    pub(super) fn into_ffi(self, handle: Handle) -> FFI_LogicalExtensionCodec {
        FFI_LogicalExtensionCodec::new(Arc::new(self), Some(handle), no_functions())
    }

    /// The function DataFusion's decoder asks for by name alone (`buf` empty,
    /// after the empty task context missed), from the session's task context
    /// as it is now: `None` where `buf` defines it, where the session has no
    /// such function, or once the session is gone (then the session's codec
    /// answers, as it would have).
    ///
    /// Each call imports the session's task context once: a filter naming k
    /// functions imports it k times per decode, where the FFI imported it once
    /// per call for every filter.
    fn by_name<T>(
        &self,
        buf: &[u8],
        find: impl FnOnce(&TaskContext) -> DfResult<Arc<T>>,
    ) -> Option<Arc<T>> {
        if !buf.is_empty() {
            return None;
        }
        let now = <Arc<TaskContext>>::try_from(&self.session).ok()?;
        find(&now).ok()
    }
}

impl LogicalExtensionCodec for SessionFunctions {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.codec.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.codec.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        self.codec
            .try_decode_table_provider(buf, table_ref, schema, ctx)
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        self.codec.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        self.codec.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        self.codec.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
        match self.by_name(buf, |ctx| ctx.udf(name)) {
            Some(found) => Ok(found),
            None => self.codec.try_decode_udf(name, buf),
        }
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.codec.try_encode_udf(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
        match self.by_name(buf, |ctx| ctx.udaf(name)) {
            Some(found) => Ok(found),
            None => self.codec.try_decode_udaf(name, buf),
        }
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.codec.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
        match self.by_name(buf, |ctx| ctx.udwf(name)) {
            Some(found) => Ok(found),
            None => self.codec.try_decode_udwf(name, buf),
        }
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
        self.codec.try_encode_udwf(node, buf)
    }
}
