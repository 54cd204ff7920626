//! datafusion-proto codecs for [`ZarrTable`] and its scan (a `DataSourceExec`
//! over zarrow's file source), so that a distributed engine (Ballista, or
//! another built on datafusion-proto) can send a Zarr scan to other machines.
//!
//! What travels is the table's location, its options and URL options, the
//! metadata documents opening it read, the columns, the row ranges of each
//! partition (a scheduler's slice of them, once it has cut the scan for a
//! task), the limit and the filters the scan evaluates, as JSON behind a
//! tag. A decoded scan reads with the decoding machine's task context: its
//! memory pool and object stores. The receiving side opens the store again (by path or URL,
//! credentials from its own environment) with that metadata, so decoding a plan
//! makes no request and starts no runtime; its scan then reads the same rows.
//! Anything else goes to the codec these wrap (an engine's own, such as
//! Ballista's, or datafusion-proto's default).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, TableReference, not_impl_err};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::{
    AggregateUDF, Extension, HigherOrderUDF, LogicalPlan, ScalarUDF, WindowUDF,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::proto_decode::PhysicalExprDecodeCtx;
use datafusion::physical_expr_common::physical_expr::proto_encode::PhysicalExprEncodeCtx;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::{DefaultLogicalExtensionCodec, LogicalExtensionCodec};
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, PhysicalExtensionCodec, PhysicalProtoConverterExtension,
};
use std::collections::BTreeMap;

use arrow_buffer::Buffer;
use serde::{Deserialize, Serialize};

use super::df_err;
use super::filter::{self as filters, ScanFilter};
use super::prune::Pruning;
use super::sink::{SinkSpec, ZarrFormatFactory, ZarrSink};
use super::snapshot::Snapshot;
use super::source::{Scan, scan_groups, scan_plan, zarr_source};
use super::{ZarrTable, ZarrTableOptions};
use crate::location::Location;
use crate::options::Carried;
use crate::store::MetadataSnapshot;

/// Tags the bytes of a table (and of a scan) so that the codec tells its own
/// from the wrapped codec's. Version 2: options are carried as their declared
/// keys and values (`Carried`), not as serialized structs.
const TABLE_TAG: &[u8] = b"zarrow.table.v2:";
/// A scan: its partitions' row ranges (a task's slice of them, once a
/// scheduler cut it), decoded as the same scan, which reads with the
/// decoding machine's memory pool, object stores and metrics.
const SCAN_TAG: &[u8] = b"zarrow.scan.v3:";
/// Tags a `COPY ... STORED AS ZARR`'s format (with its options) and a Zarr
/// sink (`COPY`, `INSERT INTO`).
const FORMAT_TAG: &[u8] = b"zarrow.format.v1:";
const SINK_TAG: &[u8] = b"zarrow.sink.v2:";

#[derive(Serialize, Deserialize)]
struct TableSpec {
    /// The location as the table names it (an Icechunk branch: where an
    /// INSERT commits).
    location: String,
    /// Where its rows are read: the snapshot of an Icechunk branch or tag the
    /// client read (absent: `location`).
    #[serde(default)]
    read_at: Option<String>,
    /// The [`ZarrTableOptions`].
    options: Carried,
    /// The [`UrlOptions`].
    url: Carried,
    metadata: MetadataSpec,
}

/// A [`MetadataSnapshot`] as JSON: each document as text (a metadata document
/// is JSON, so UTF-8, or the table would not have opened).
#[derive(Serialize, Deserialize)]
struct MetadataSpec {
    documents: BTreeMap<String, Option<String>>,
    listings: BTreeMap<String, Vec<String>>,
}

impl MetadataSpec {
    fn of(snapshot: MetadataSnapshot) -> DfResult<Self> {
        let mut documents = BTreeMap::new();
        for (key, doc) in snapshot.documents {
            let text = match doc {
                Some(bytes) => Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
                    DataFusionError::Internal(format!("metadata document {key} is not UTF-8"))
                })?),
                None => None,
            };
            documents.insert(key, text);
        }
        Ok(Self {
            documents,
            listings: snapshot.listings,
        })
    }

    fn snapshot(self) -> MetadataSnapshot {
        MetadataSnapshot {
            documents: self
                .documents
                .into_iter()
                .map(|(key, doc)| (key, doc.map(|d| Buffer::from(d.into_bytes()))))
                .collect(),
            listings: self.listings,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct ScanSpec {
    table: TableSpec,
    columns: Vec<usize>,
    /// Each partition's row ranges.
    groups: Vec<Vec<(u64, u64)>>,
    /// The most rows each partition yields (a file scan's limit).
    #[serde(default)]
    limit: Option<usize>,
    /// The filters the scan evaluates itself, as datafusion-proto encodes
    /// them.
    #[serde(default)]
    filter: Vec<Vec<u8>>,
    /// The filters chunk statistics prune by, likewise.
    #[serde(default)]
    prune: Vec<Vec<u8>>,
}

impl TableSpec {
    fn of(table: &Snapshot) -> DfResult<Self> {
        let (Some(location), Some(read_at)) =
            (table.location().portable(), table.portable_location())
        else {
            return not_impl_err!(
                "{}: a store opened in this process (an obstore store) cannot be read on another machine",
                table.location()
            );
        };
        Ok(Self {
            read_at: (read_at != location).then_some(read_at),
            location,
            options: Carried::of(table.options()),
            url: Carried::of(table.url_options()),
            metadata: MetadataSpec::of(table.metadata_snapshot())?,
        })
    }

    /// The table, opened from the metadata carried (no request), through the
    /// stores `ctx`'s session has registered.
    fn open(self, ctx: &TaskContext) -> DfResult<Snapshot> {
        let location = Location::parse(&self.location).map_err(df_err)?;
        let read_at = match &self.read_at {
            Some(text) => Location::parse(text).map_err(df_err)?,
            None => location.clone(),
        };
        let options: ZarrTableOptions = self.options.options().map_err(df_err)?;
        let url = self.url.options().map_err(df_err)?;
        let stores = super::session_registry(ctx.runtime_env(), url);
        Ok(
            Snapshot::from_snapshot(&read_at, options, &stores, self.metadata.snapshot())
                .map_err(df_err)?
                .named(location),
        )
    }
}

fn encode(tag: &[u8], value: &impl Serialize, buf: &mut Vec<u8>) -> DfResult<()> {
    buf.extend_from_slice(tag);
    serde_json::to_writer(buf, value).map_err(|e| DataFusionError::External(Box::new(e)))
}

fn decode<T: for<'de> Deserialize<'de>>(json: &[u8]) -> DfResult<T> {
    serde_json::from_slice(json).map_err(|e| {
        DataFusionError::Internal(format!("a zarrow plan node that does not parse: {e}"))
    })
}

/// The user-defined function methods both codecs hand to the codec they wrap.
macro_rules! delegate_functions {
    () => {
        fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
            self.inner.try_decode_udf(name, buf)
        }

        fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udf(node, buf)
        }

        fn try_decode_higher_order_function(
            &self,
            name: &str,
            buf: &[u8],
        ) -> DfResult<Arc<HigherOrderUDF>> {
            self.inner.try_decode_higher_order_function(name, buf)
        }

        fn try_encode_higher_order_function(
            &self,
            node: &HigherOrderUDF,
            buf: &mut Vec<u8>,
        ) -> DfResult<()> {
            self.inner.try_encode_higher_order_function(node, buf)
        }

        fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
            self.inner.try_decode_udaf(name, buf)
        }

        fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udaf(node, buf)
        }

        fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
            self.inner.try_decode_udwf(name, buf)
        }

        fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udwf(node, buf)
        }
    };
}

/// Encodes [`ZarrTable`]s in logical plans; everything else goes to `inner`.
#[derive(Debug)]
pub struct ZarrLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl ZarrLogicalCodec {
    /// Wrap `inner` (an engine's codec), which encodes all but Zarr tables.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl Default for ZarrLogicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(DefaultLogicalExtensionCodec {}))
    }
}

impl LogicalExtensionCodec for ZarrLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: arrow_schema::SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        match buf.strip_prefix(TABLE_TAG) {
            Some(json) => Ok(Arc::new(ZarrTable::of(
                decode::<TableSpec>(json)?.open(ctx)?,
            ))),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        match node.downcast_ref::<ZarrTable>() {
            // As the last INSERT through it left it.
            Some(table) => encode(TABLE_TAG, &TableSpec::of(&table.snapshot())?, buf),
            None => self.inner.try_encode_table_provider(table_ref, node, buf),
        }
    }

    // The rest is the wrapped codec's.

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        match buf.strip_prefix(FORMAT_TAG) {
            Some(json) => Ok(Arc::new(ZarrFormatFactory::with_options(decode(json)?))),
            None => self.inner.try_decode_file_format(buf, ctx),
        }
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        match node.downcast_ref::<ZarrFormatFactory>() {
            Some(format) => encode(FORMAT_TAG, &format.options(), buf),
            None => self.inner.try_encode_file_format(buf, node),
        }
    }

    delegate_functions!();
}

/// Encodes Zarr scans (and sinks) in physical plans; everything else goes to
/// `inner`.
#[derive(Debug)]
pub struct ZarrPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl ZarrPhysicalCodec {
    /// Wrap `inner` (an engine's codec), which encodes all but Zarr scans.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl Default for ZarrPhysicalCodec {
    fn default() -> Self {
        Self::new(Arc::new(DefaultPhysicalExtensionCodec {}))
    }
}

impl PhysicalExtensionCodec for ZarrPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if let Some(json) = buf.strip_prefix(SINK_TAG) {
            let [input] = inputs else {
                return Err(DataFusionError::Internal(format!(
                    "a Zarr sink with {} inputs",
                    inputs.len()
                )));
            };
            let sink = decode::<SinkSpec>(json)?.sink(input.schema())?;
            return Ok(Arc::new(DataSinkExec::new(
                input.clone(),
                Arc::new(sink),
                None,
            )));
        }
        let Some(json) = buf.strip_prefix(SCAN_TAG) else {
            return self.inner.try_decode(buf, inputs, ctx, proto_converter);
        };
        let spec: ScanSpec = decode(json)?;
        let snapshot = Arc::new(spec.table.open(ctx)?);
        let codes = snapshot.codes_schema();
        let filter = ScanFilter::from_bytes(snapshot.arrow_schema(), &spec.filter, ctx)?
            .map(|f| f.with_codes(codes.as_ref(), &ExecutionProps::new()));
        let groups = spec
            .groups
            .iter()
            .map(|group| group.iter().map(|&(a, b)| a..b).collect())
            .collect();
        scan_plan(Scan {
            snapshot,
            columns: spec.columns,
            groups,
            filter: filter.map(Arc::new),
            pruning: Pruning::new(&filters::from_bytes(&spec.prune, ctx)?).map(Arc::new),
            fetch: spec.limit,
            runtime: ctx.runtime_env(),
            decode: super::session_decode(ctx.session_config()),
        })
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        if let Some(exec) = node.downcast_ref::<DataSinkExec>()
            && let Some(sink) = (exec.sink() as &dyn std::any::Any).downcast_ref::<ZarrSink>()
        {
            // Its required order is not sent: the plan below it, planned to
            // meet it, is.
            return encode(SINK_TAG, &sink.spec()?, buf);
        }
        let Some((source, config)) = zarr_source(node.as_ref()) else {
            return self.inner.try_encode(node, buf, proto_converter);
        };
        let spec = ScanSpec {
            table: TableSpec::of(source.snapshot())?,
            columns: source.columns().to_vec(),
            groups: scan_groups(config)?
                .into_iter()
                .map(|group| group.into_iter().map(|r| (r.start, r.end)).collect())
                .collect(),
            limit: config.limit,
            filter: match source.filter() {
                Some(filter) => filter.to_bytes()?,
                None => Vec::new(),
            },
            prune: match source.pruning() {
                Some(pruning) => filters::to_bytes(pruning.filters())?,
                None => Vec::new(),
            },
        };
        encode(SCAN_TAG, &spec, buf)
    }

    // The rest is the wrapped codec's.

    delegate_functions!();

    fn try_decode_expr(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn PhysicalExpr>],
        ctx: &PhysicalExprDecodeCtx<'_>,
    ) -> DfResult<Arc<dyn PhysicalExpr>> {
        self.inner.try_decode_expr(buf, inputs, ctx)
    }

    fn try_encode_expr(
        &self,
        node: &Arc<dyn PhysicalExpr>,
        buf: &mut Vec<u8>,
        ctx: &PhysicalExprEncodeCtx<'_>,
    ) -> DfResult<()> {
        self.inner.try_encode_expr(node, buf, ctx)
    }
}
