//! The command line's integration tests: the `zarrow` binary run as a user runs it
//! (and, with `cluster`, zarrow's codecs on Ballista). One module per concern.

use std::process::{Command, Output};

/// The repository's root (testdata/).
const REPOSITORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The library's test helpers (not every one serves the command line's tests).
#[allow(dead_code)]
#[path = "../../../tests/integration/common.rs"]
mod shared;

/// The library's test helpers, and the binary.
mod common {
    pub use crate::shared::*;

    /// Run the `zarrow` binary to completion.
    pub fn zarrow(args: &[&str]) -> super::Output {
        super::Command::new(env!("CARGO_BIN_EXE_zarrow"))
            .args(args)
            .output()
            .expect("run zarrow")
    }

    /// Every batch of a Parquet, IPC stream (`.arrows`) or IPC file written by zarrow.
    pub fn read_output(path: &std::path::Path) -> Vec<arrow_array::RecordBatch> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("parquet") => {
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    std::fs::File::open(path).unwrap(),
                )
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect()
            }
            Some("arrows") => {
                arrow_ipc::reader::StreamReader::try_new(std::fs::File::open(path).unwrap(), None)
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect()
            }
            _ => read_ipc(path),
        }
    }
}

mod append;
#[cfg(feature = "cluster")]
mod ballista;
mod cli;
mod cli_options;
#[cfg(all(feature = "failpoints", unix))]
mod crash;
#[cfg(target_os = "linux")]
mod durable;
mod file_urls;
mod outputs;
mod stats_verify;
