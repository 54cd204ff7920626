//! The replacement scan: a table name that is a Zarr location is read as
//! `read_zarr(location)`, so that `FROM 'atlas.zarr/obs'` and
//! `FROM 's3://bucket/atlas.zarr'` work as `FROM 'x.parquet'` does.
//!
//! A name is claimed when one of its path's components ends in `.zarr` (the
//! store, or a node inside it), or when it is an Icechunk location
//! (`icechunk+...`). Anything else is left to DuckDB and its other scans.

use duckdb_neo::connection::Context;
use duckdb_neo::extension::Extension;
use duckdb_neo::qualified_name::QualifiedName;
use duckdb_neo::replacement_scan::{
    ReplacementHandle, ReplacementScanBuilder, ReplacementScanCallbacks, ReplacementType,
};
use duckdb_neo::{Result, ToValue};

use crate::guard;

struct ZarrReplacement;

impl ReplacementScanCallbacks for ZarrReplacement {
    fn scan(
        &self,
        context: &Context,
        name: &QualifiedName,
        handle: ReplacementHandle<'_>,
    ) -> Result<()> {
        guard(|| {
            let view = name.get_view()?;
            if view.catalog.is_some() || view.schema.is_some() {
                return Ok(());
            }
            let table = view.table.as_str();
            if !is_zarr_location(table) {
                return Ok(());
            }
            handle.set_reference(ReplacementType::Table(QualifiedName::from_parts(&[
                crate::scan::FUNCTION,
            ])?))?;
            handle.add_parameter(table.value(context)?)?;
            Ok(())
        })
    }
}

/// Register the scan.
pub(crate) fn register(extension: &Extension) -> Result<()> {
    ReplacementScanBuilder::new(ZarrReplacement).register(extension)
}

/// Whether `name` names a Zarr node: a path (or URL) one of whose components
/// ends in `.zarr`, or an Icechunk location.
fn is_zarr_location(name: &str) -> bool {
    if name.starts_with("icechunk+") {
        return true;
    }
    // A URL's query (`?branch=...`) is not part of its path.
    let path = name.split(['?', '#']).next().unwrap_or(name);
    path.split(['/', '\\'])
        .any(|component| component.len() > ".zarr".len() && component.ends_with(".zarr"))
}

#[cfg(test)]
mod tests {
    use super::is_zarr_location;

    #[test]
    fn zarr_locations() {
        for yes in [
            "atlas.zarr",
            "atlas.zarr/",
            "data/atlas.zarr/obs",
            "s3://bucket/atlas.zarr",
            "https://host/a/b.zarr/var?x=1",
            "icechunk+s3://bucket/repo?tag=v1",
            "C:\\data\\x.zarr\\obs",
        ] {
            assert!(is_zarr_location(yes), "{yes}");
        }
        for no in [
            "obs",
            "x.parquet",
            ".zarr",
            "data/zarr/obs",
            "atlas.zarr.parquet",
            "https://host/q?file=a.zarr",
            "my_table",
        ] {
            assert!(!is_zarr_location(no), "{no}");
        }
    }
}
