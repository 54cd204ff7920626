//! zarrow as a DuckDB 2.0 extension (the v2 C API, through `duckdb-neo`).
//!
//! ```text
//! LOAD 'zarrow.duckdb_extension'
//!   read_zarr(location, <read options>)  ── scan.rs: bind opens the table (schema,
//!       row count); DuckDB pushes projection and filters (filter.rs: those
//!       zarrow evaluates exactly are accepted, the rest stay DuckDB's); each
//!       DuckDB thread claims row ranges of one DataFusion plan over the table
//!       (chunks pruned by statistics, the other columns read where rows match)
//!       and hands their batches over as Arrow (import.rs)
//!   FROM 'x.zarr/obs'  ── replace.rs: a Zarr location read as read_zarr(location)
//! ```
//!
//! The named parameters are the options' one declaration (options.rs). Every
//! callback runs under `guard`: a panic becomes a DuckDB error with zarrow's
//! message, not an invalidated database. All I/O waits on the process's one
//! runtime (`zarrow::store::runtime`), started by the first remote read.

mod category;
mod copy;
mod filter;
mod import;
mod kept;
mod options;
mod replace;
mod scan;

use duckdb_neo::duckdb_entrypoint_c_api_v2;
use duckdb_neo::extension::Extension;

/// Register `read_zarr` and the replacement scan.
#[duckdb_entrypoint_c_api_v2(extension_name = "zarrow", api_version = "v2.0.0")]
pub fn entrypoint(extension: &Extension) -> Result<(), Box<dyn std::error::Error>> {
    scan::register(extension)?;
    replace::register(extension)?;
    copy::register(extension)?;
    Ok(())
}

/// Run a callback's body; a panic in it is returned as an error (DuckDB's
/// "invalid input", which fails the query and leaves the database usable),
/// where duckdb-neo would report it as an internal error, which invalidates
/// the database.
pub(crate) fn guard<T>(f: impl FnOnce() -> duckdb_neo::Result<T>) -> duckdb_neo::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Err(duckdb_neo::Error::invalid_input(format!(
                "zarrow: internal error (please report it): {what}"
            )))
        }
    }
}

/// A zarrow error as DuckDB's: its message, whole.
pub(crate) fn zarrow_error(e: impl std::fmt::Display) -> duckdb_neo::Error {
    duckdb_neo::Error::invalid_input(format!("zarrow: {e}"))
}
