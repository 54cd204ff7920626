//! Conventions other libraries layer on Zarr, read from attributes and applied
//! to the Arrow arrays zarrow decodes: anndata's dataframe element encodings
//! ([`anndata`]) and xarray's CF attributes and dimension names ([`cf`]).
//!
//! Pure functions: attributes in, plans and arrays out; no store.

pub mod anndata;
pub mod cf;
