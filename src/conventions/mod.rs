//! Conventions other libraries layer on Zarr, read from attributes and applied
//! to the Arrow arrays zarrow decodes: anndata's dataframe element encodings
//! ([`anndata`]) and xarray's CF attributes and dimension names ([`cf`]).
//!
//! Pure functions: attributes in, plans and arrays out; no store.

pub mod anndata;
pub mod cf;

use arrow_schema::{ArrowError, DataType as ArrowType};

/// Values a convention cannot be applied to: what [`anndata`]'s and [`cf`]'s
/// functions return (the reader adds the array's name: `Error::Convention`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConventionError {
    /// anndata categorical codes that are not signed integers.
    #[error("categorical codes must be signed integers, not {0}")]
    CodeType(ArrowType),
    /// A categorical code below -1 (missing) or past the last category.
    #[error(
        "categorical code {code} is outside the {categories} categories (codes are 0..{categories}, or -1 for missing)"
    )]
    CodeOutOfRange {
        /// The first such code.
        code: i64,
        /// How many categories there are.
        categories: i64,
    },
    /// An anndata mask that is not boolean.
    #[error("the mask must be bool, not {0}")]
    MaskType(ArrowType),
    /// An anndata mask of another length than its values.
    #[error("the mask has {mask} rows, the values {values}")]
    MaskLength {
        /// The mask's rows.
        mask: usize,
        /// The values' rows.
        values: usize,
    },
    /// CF decoding of values that are not numbers.
    #[error("cannot CF-decode {0}")]
    NotNumeric(ArrowType),
    /// A CF time past what a nanosecond timestamp holds.
    #[error("time value {0} is outside what a nanosecond timestamp holds")]
    TimeOutOfRange(f64),
    /// arrow-rs refused the arrays.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}
