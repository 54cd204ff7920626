//! zarrow's integration tests: one binary, one module per concern.

mod append;
mod bad_data;
#[cfg(feature = "cluster")]
mod ballista;
mod cli;
mod cli_options;
mod common;
mod consolidated;
mod conventions;
#[cfg(all(feature = "failpoints", unix))]
mod crash;
mod data_types;
#[cfg(feature = "datafusion")]
mod datafusion;
#[cfg(feature = "datafusion")]
mod engine;
mod export_parquet;
mod file_urls;
mod fuzz_replay;
mod golden;
mod linear;
mod outputs;
mod reader;
mod robustness;
mod roundtrip;
mod shard_reads;
mod store;
#[cfg(feature = "object-store")]
mod store_conformance;
mod zero_copy;
