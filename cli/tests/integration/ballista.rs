//! The Zarr scan on Ballista 55 in standalone mode (a scheduler and an executor
//! started in this process, plans sent between them through datafusion-proto
//! with zarrow's codecs): the rows are zarr-python's, grouped in Rust, and the
//! same as a local DataFusion context gives. The processes of a real cluster:
//! tests/interop/check_cluster.py.

use std::sync::Arc;

use arrow_array::RecordBatch;
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use zarrow::datafusion::{ZarrLogicalCodec, ZarrPhysicalCodec};

use crate::common::testdata;
use crate::common::{grouped, obs_expected};

const QUERY: &str = "SELECT cell_type, count(*) AS n, sum(n_genes) AS s FROM obs \
                     WHERE total_counts > 5000 GROUP BY cell_type ORDER BY cell_type";

async fn run(ctx: &SessionContext) -> Vec<RecordBatch> {
    zarrow::datafusion::register(ctx);
    let location = testdata().join("stores/obs.zarr").display().to_string();
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION '{location}'"
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    ctx.sql(QUERY).await.unwrap().collect().await.unwrap()
}

#[test]
fn a_zarr_query_on_ballista_returns_the_local_rows() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Four partitions: obs' arrays hold four chunks.
        let config = SessionConfig::new_with_ballista()
            .with_target_partitions(4)
            .with_ballista_standalone_parallelism(2)
            .with_ballista_logical_extension_codec(Arc::new(ZarrLogicalCodec::new(Arc::new(
                BallistaLogicalExtensionCodec::default(),
            ))))
            .with_ballista_physical_extension_codec(Arc::new(ZarrPhysicalCodec::new(Arc::new(
                BallistaPhysicalExtensionCodec::default(),
            ))));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        let ballista = SessionContext::standalone_with_state(state).await.unwrap();
        let distributed = run(&ballista).await;
        let local = run(&SessionContext::new()).await;
        assert_eq!(grouped(&distributed), grouped(&local));
        assert_eq!(grouped(&distributed), obs_expected(5000.0));
    });
}
