//! The library's integration tests: one binary, one module per concern. The
//! command line's are in cli/tests/integration.

/// The repository's root (testdata/, fuzz/).
const REPOSITORY: &str = env!("CARGO_MANIFEST_DIR");

mod append;
mod bad_data;
// Some helpers serve only the DataFusion tests (and the command line's, which
// include this module too): a build without DataFusion leaves them unused.
#[cfg_attr(not(feature = "datafusion"), allow(dead_code))]
mod common;
mod consolidated;
mod conventions;
mod data_types;
#[cfg(feature = "datafusion")]
mod datafusion;
#[cfg(feature = "datafusion")]
mod engine;
mod export_parquet;
mod fuzz_replay;
mod golden;
#[cfg(all(feature = "icechunk", feature = "datafusion"))]
mod icechunk;
mod linear;
mod metadata_errors;
#[cfg(feature = "datafusion")]
mod prune_invariant;
mod reader;
mod robustness;
mod roundtrip;
mod shard_reads;
#[cfg(feature = "datafusion")]
mod stats;
#[cfg(feature = "datafusion")]
mod stats_conformance;
mod store;
#[cfg(feature = "object-store")]
mod store_conformance;
mod zero_copy;
