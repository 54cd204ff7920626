//! zarrow's integration tests: one binary, one module per concern.

mod bad_data;
mod common;
mod golden;
mod robustness;
mod store;
