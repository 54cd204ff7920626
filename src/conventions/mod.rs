//! Conventions other libraries (and zarrow itself) layer on Zarr, one module
//! each, owning both directions: how a read detects a convention in the
//! attributes and assembles the Arrow arrays it means, and how a write splits a
//! column into the convention's parts and the attributes it records.
//!
//! - [`anndata`]: anndata's dataframe elements (`encoding-type`): detect and
//!   assemble `categorical` and `nullable-*` elements; for a write, the element
//!   a column becomes, its parts (codes and categories unified across batches,
//!   values and mask, a RangeIndex's row numbers) and their attributes.
//! - [`cf`]: xarray's CF attributes, decoded; its dimension names, read (v3
//!   `dimension_names`, v2 `_ARRAY_DIMENSIONS`) and recorded.
//! - [`pandas`]: pyarrow's `pandas` schema metadata, written for a table read
//!   and read from a table to write (its index, its nullable columns).
//! - [`zarrow`](mod@zarrow): zarrow's own attributes (an array's Arrow type and
//!   timezone, a group's column order), recorded and read back.
//!
//! Pure functions: attributes in, plans and arrays out; no store. The reader and
//! the writer (`read/column.rs`, `write/column.rs`, the group modules) drive
//! them: they hold each column's arrays and call these for every decision.

pub mod anndata;
pub mod cf;
pub mod pandas;
pub mod zarrow;

pub use crate::error::ConventionError;
