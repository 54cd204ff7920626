//! Tables kept open across queries: a `read_zarr` of a location it read
//! before, with the same options, binds the table it bound then, brought up
//! to date ([`ZarrTable::refreshed`]: the version of each metadata document,
//! none read; opened again only when one changed), so that a query whose
//! chunks statistics rule out costs no metadata read. Chunks are always read
//! from the store, and chunk statistics are checked at each scan (read again
//! only when their file changed).
//!
//! A long table is not kept (its variables are read whole when it opens),
//! and at most [`MAX_KEPT`] tables are.

use std::sync::{Mutex, OnceLock, PoisonError};

use zarrow::datafusion::{ZarrTable, ZarrTableOptions};
use zarrow::location::UrlOptions;
use zarrow::{Location, Stores};

/// The most tables kept (the oldest is dropped first).
const MAX_KEPT: usize = 64;

/// The tables kept, by location and options, oldest first.
static KEPT: OnceLock<Mutex<Vec<(String, ZarrTable)>>> = OnceLock::new();

/// The table at `location` with these options: the one kept, brought up to
/// date, or opened (and kept).
///
/// # Errors
/// As [`ZarrTable::open_tracked`] and [`ZarrTable::refreshed`].
pub(crate) fn table(
    location: &Location,
    options: ZarrTableOptions,
    url: UrlOptions,
) -> zarrow::Result<ZarrTable> {
    if options.long {
        return ZarrTable::open(location, options, &Stores::new(url));
    }
    let key = format!("{location}\u{0}{options:?}\u{0}{url:?}");
    let kept = KEPT.get_or_init(Mutex::default);
    let held = {
        let kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().find(|(k, _)| *k == key).map(|(_, t)| t.clone())
    };
    let table = match held {
        Some(table) => match table.refreshed()? {
            None => return Ok(table),
            Some(current) => current,
        },
        None => ZarrTable::open_tracked(location, options, &Stores::new(url))?,
    };
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    kept.retain(|(k, _)| *k != key);
    if kept.len() >= MAX_KEPT {
        kept.remove(0);
    }
    kept.push((key, table.clone()));
    Ok(table)
}
