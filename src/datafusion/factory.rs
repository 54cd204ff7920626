//! [`ZarrTableFactory`]: `CREATE EXTERNAL TABLE ... STORED AS ZARR`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::{DataFusionError, plan_err};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{CreateExternalTable, Expr};

use super::df_err;
use super::{ZarrTable, ZarrTableOptions};
use crate::location::Location;
use crate::location::UrlOptions;

/// Makes a [`ZarrTable`] for `CREATE EXTERNAL TABLE name STORED AS ZARR LOCATION
/// '...' [WITH ORDER (column ASC)] [OPTIONS (...)]` (see
/// [`ZarrTableOptions`]; `WITH ORDER` declares a sorted column).
///
/// A URL whose bucket the session has an object store registered for
/// (`RuntimeEnv::register_object_store`) reads through that store; any other
/// URL opens one from the environment, as the command line does.
#[derive(Debug, Default)]
pub struct ZarrTableFactory {}

#[async_trait]
impl TableProviderFactory for ZarrTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let [location] = cmd.locations.as_slice() else {
            return plan_err!("a ZARR table has one LOCATION, not {}", cmd.locations.len());
        };
        if !cmd.table_partition_cols.is_empty() {
            return plan_err!("a ZARR table has no PARTITIONED BY columns");
        }
        let mut options =
            ZarrTableOptions::from_map(cmd.options.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(df_err)?;
        for order in &cmd.order_exprs {
            for sort in order {
                match &sort.expr {
                    Expr::Column(c) if sort.asc => options.sorted.push(c.name.clone()),
                    other => {
                        return plan_err!(
                            "WITH ORDER on a ZARR table names ascending columns, not {other}{}",
                            if sort.asc { "" } else { " DESC" }
                        );
                    }
                }
            }
        }
        let location = Location::parse(location).map_err(df_err)?;
        // Its metadata read blocking on the session's runtime (no runtime of
        // the table's own), through the session's store when it has one.
        let stores = super::session_registry(state.runtime_env().clone(), UrlOptions::default());
        let table =
            tokio::task::spawn_blocking(move || ZarrTable::open(&location, options, &stores))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
                .map_err(df_err)?;
        // A declared schema must be the store's: nothing renamed or retyped in
        // silence.
        let declared = cmd.schema.as_arrow();
        if !declared.fields().is_empty() {
            let actual = table.schema();
            let same = declared.fields().len() == actual.fields().len()
                && declared
                    .fields()
                    .iter()
                    .zip(actual.fields())
                    .all(|(d, a)| d.name() == a.name() && d.data_type() == a.data_type());
            if !same {
                return plan_err!(
                    "the columns declared for {} differ from the store's: leave them out (the store has {})",
                    cmd.name,
                    actual
                        .fields()
                        .iter()
                        .map(|f| format!("{} {}", f.name(), f.data_type()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(Arc::new(table))
    }
}
