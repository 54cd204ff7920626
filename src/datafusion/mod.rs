//! Zarr as a DataFusion table (feature `datafusion`, DataFusion 55, the release on
//! arrow-rs 59 like zarrow: batches pass untouched).
//!
//! ```text
//! CREATE EXTERNAL TABLE .. STORED AS ZARR ──▶ ZarrTableFactory ─┐
//! ZarrTable::open(location, options) ───────────────────────────┴▶ ZarrTable
//!     schema and exact row count from metadata alone
//!  scan(projection, filters, limit)
//!     └▶ DataSourceExec over a ZarrSource: a partition per chunk-aligned row range
//!         (target_partitions of them; LIMIT n: one range of n rows; chunk
//!         statistics keep only the ranges a filter may match), each an async
//!         stream on the session's runtime (its object stores, memory pool and
//!         metrics): only the projected arrays, only the chunks the rows need;
//!         with a filter, its columns first, the others only where rows match
//!         (filter)
//!  sql(query, tables, options): the tables registered by location, the answer
//!     as a blocking RecordBatchReader (`zarrow sql`, Python's `zarrow.sql`)
//!  ZarrLogicalCodec / ZarrPhysicalCodec: the table and the scan through
//!     datafusion-proto, so a distributed engine (Ballista) runs the scan
//! ```
//!
//! ```no_run
//! # async fn run() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//!
//! let ctx = SessionContext::new();
//! zarrow::datafusion::register(&ctx);
//! ctx.sql("CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION 'testdata/stores/obs.zarr'")
//!     .await?;
//! ctx.sql("SELECT cell_type, count(*) FROM obs GROUP BY cell_type")
//!     .await?
//!     .show()
//!     .await?;
//! # Ok(())
//! # }
//! ```

mod codec;
mod dynamic;
mod factory;
mod filter;
mod fresh;
#[doc(hidden)]
pub mod invariant;
mod prune;
mod query;
mod sink;
mod snapshot;
mod source;
mod table;

use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::SessionContext;

use crate::Stores;
use crate::context::RegisteredStores;
use crate::location::RemoteUrl;
use crate::location::UrlOptions;
use sink::ZarrFormatFactory;

pub use codec::{ZarrLogicalCodec, ZarrPhysicalCodec};
pub use factory::ZarrTableFactory;
pub use query::{SqlOptions, SqlReader, SqlStream, sql, sql_stream};
pub use snapshot::ZarrTableOptions;
pub use source::for_another_run;
pub use table::ZarrTable;

/// How a session's scans decode: as the [`ExecutionContext`](crate::ExecutionContext)
/// its config carries as an extension (`SessionConfig::with_extension`), else
/// on rayon. A host whose own threads are the parallelism (DuckDB's, each
/// polling partitions in turn) gives `Decode::Inline`: each partition then
/// reads and decodes on the thread that polls it.
pub(crate) fn session_decode(config: &datafusion::prelude::SessionConfig) -> crate::Decode {
    config
        .get_extension::<crate::ExecutionContext>()
        .map(|context| context.decode())
        .unwrap_or_default()
}

/// The file type `CREATE EXTERNAL TABLE ... STORED AS` names for Zarr.
pub(crate) const FILE_TYPE: &str = "ZARR";

/// Add the `ZARR` file type to `ctx`, so that `CREATE EXTERNAL TABLE name STORED
/// AS ZARR LOCATION '...'` opens a Zarr group or array (a directory or an object
/// store URL) as a table, and `COPY (query) TO 'x.zarr' [STORED AS ZARR]
/// [OPTIONS (...)]` writes one (through a file format registered under the
/// extension `zarr`; an analyzer rule moves a `COPY`'s options into its format
/// and makes a relative target absolute, so that a distributed engine's
/// scheduler plans the same statement).
pub fn register(ctx: &SessionContext) {
    let state = ctx.state_ref();
    let mut state = state.write();
    state
        .table_factories_mut()
        .insert(FILE_TYPE.to_string(), Arc::new(ZarrTableFactory::default()));
    // Replacing a `zarr` format registered before (zarrow's own) cannot fail.
    let _ = state.register_file_format(Arc::new(ZarrFormatFactory::new()), true);
    // A COPY as a distributed engine's scheduler must plan it (its OPTIONS in
    // its format, its target absolute).
    let name = sink::PortableCopy::NAME;
    if !state.analyzer().rules.iter().any(|r| r.name() == name) {
        state.add_analyzer_rule(Arc::new(sink::PortableCopy::default()));
    }
}

/// A session's object store registry, as the stores [`Stores`] reads a URL
/// through before it opens one of its own.
#[derive(Debug)]
struct SessionStores(Arc<RuntimeEnv>);

impl RegisteredStores for SessionStores {
    fn object_store(&self, url: &RemoteUrl) -> Option<Arc<dyn object_store::ObjectStore>> {
        let (root, _) = url.split_root();
        let root = datafusion::execution::object_store::ObjectStoreUrl::parse(root).ok()?;
        self.0.object_store(&root).ok()
    }
}

/// The stores `runtime` has registered, for [`Stores::with_registered`].
pub(crate) fn session_stores(runtime: Arc<RuntimeEnv>) -> Arc<dyn RegisteredStores> {
    Arc::new(SessionStores(runtime))
}

/// How a session opens locations: URLs through its registered stores (else
/// opened from the environment with `url`), blocking calls on its runtime.
pub(crate) fn session_registry(runtime: Arc<RuntimeEnv>, url: UrlOptions) -> Stores {
    Stores::new(url)
        .with_runtime(tokio::runtime::Handle::current())
        .with_registered(session_stores(runtime))
}

/// A zarrow error as DataFusion's (the message and the error itself kept).
pub(crate) fn df_err(e: crate::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
