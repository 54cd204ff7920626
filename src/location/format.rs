//! [`FileFormat`]: what a location holds by its extension, decided here once.

use std::path::Path;

use crate::export::ExportFormat;

/// What a location holds: every decision zarrow makes by extension
/// (convert's input and output, `zarrow sql`'s tables and output, DataFusion's
/// tables) is one `match` on this, made by [`Location::file_format`](super::Location::file_format).
/// A location with none of the file extensions is a Zarr store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileFormat {
    /// A Zarr store or node: a directory, a URL without a file extension, an
    /// Icechunk repository, a supplied store.
    Zarr,
    /// A table file: Parquet (`.parquet`, `.pq`) or Arrow IPC (`.arrow`,
    /// `.ipc`, `.feather`: the file format; `.arrows`: the stream format).
    Table(ExportFormat),
    /// `.csv`: comma-separated values.
    Csv,
    /// `.json`: the linear format's JSON (an N-d array's values and shape).
    Json,
}

impl FileFormat {
    /// The format `path`'s extension (any case) names, if it names one.
    pub(crate) fn of_extension(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "parquet" | "pq" => Self::Table(ExportFormat::Parquet),
            "arrow" | "ipc" | "feather" => Self::Table(ExportFormat::IpcFile),
            "arrows" => Self::Table(ExportFormat::IpcStream),
            "csv" => Self::Csv,
            "json" => Self::Json,
            _ => return None,
        })
    }
}
