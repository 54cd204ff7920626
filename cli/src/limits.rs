//! The bounds of a conversion from Zarr (see `zarrow::convert::limits`).

pub(crate) use zarrow::convert::limits::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, parse_size};
