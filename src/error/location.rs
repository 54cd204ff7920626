//! What is wrong with a location ([`Error::Location`](super::Error::Location)):
//! beside the error, so that `location` imports the error and not the other
//! way round.

use std::fmt;

/// Why a text names no location zarrow can use ([`Error::Location`](super::Error::Location)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// A `scheme://` zarrow does not open: never taken for a local path.
    #[error(
        "unknown URL scheme {scheme:?} (s3, s3a, gs, az, azure, abfs, abfss, adl, http, https, file, and icechunk+file, icechunk+s3, icechunk+gs, icechunk+az; a local path needs no scheme)"
    )]
    UnknownScheme {
        /// The scheme, lower case.
        scheme: String,
    },
    /// A cloud this build of zarrow leaves out.
    #[error("{scheme}:// URLs need zarrow's `{feature}` feature, which this build leaves out")]
    NotBuilt {
        /// The scheme.
        scheme: String,
        /// The cargo feature that builds its client.
        feature: &'static str,
    },
    /// The text has a URL's shape but is no valid URL (or names no bucket).
    #[error("not a valid URL: {source}")]
    InvalidUrl {
        /// The parser's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A `file://` URL that names no local path.
    #[error("names no local path: {reason}")]
    NotLocal {
        /// Why.
        reason: FileUrlProblem,
    },
    /// A name for a store opened in another process or call (`obstore://`):
    /// only the store itself opens it.
    #[error("names a store opened in this process (an obstore store): pass the store itself")]
    InProcess,
    /// A local input that does not exist.
    #[error("is not a Zarr array or group directory, nor a file: it does not exist")]
    Missing,
    /// A local path that is not the directory of a Zarr store.
    #[error("is not a Zarr array or group directory")]
    NotADirectory,
    /// A table or linear-format file asked of a URL: files are written to
    /// the local disk only.
    #[error(
        "a table or linear-format file is written to a local path only (write it locally, then upload it)"
    )]
    RemoteFile,
    /// A name object_store refuses as an object path.
    #[error("is not a valid object path: {source}")]
    ObjectPath {
        /// object_store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An Icechunk location's query (`?branch=...&path=...`) that does not
    /// name one version and one node.
    #[error("{detail}")]
    InvalidQuery {
        /// What is wrong.
        detail: String,
    },
    /// A path with no file or directory name (`/`, `..`).
    #[error("names no file or directory")]
    NoName,
}

/// What is wrong with a `file://` URL ([`LocationError::NotLocal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileUrlProblem {
    /// A host other than `localhost` (`file://server/share`).
    Host,
    /// A query or a fragment.
    QueryOrFragment,
}

impl fmt::Display for FileUrlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Host => "a file URL has no host but localhost (file:///path)",
            Self::QueryOrFragment => {
                "it has a query or fragment (write ? as %3F and # as %23 in a file name)"
            }
        })
    }
}
