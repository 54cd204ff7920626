//! Where a Zarr node or a table file is: [`Location`], parsed once from what a
//! user typed, and [`Stores`](crate::Stores), the one registry that turns it into a store.
//!
//! Every front end (the command line, the Python package, [`convert`](crate::convert),
//! the DataFusion table, factory and sink, and the cluster's codecs) takes the
//! same strings and goes through these two types, so that "is it a URL or a
//! directory", "which cloud", and "what is a `file://` URL's path" are each
//! answered in one place:
//!
//! | text | [`Location`] |
//! |---|---|
//! | `data/obs.zarr`, `/abs/obs.zarr` | [`Location::Path`] |
//! | `file:///abs/obs.zarr`, `file://localhost/abs/obs.zarr` | [`Location::Path`] (the path decoded) |
//! | `s3://`, `s3a://` | [`Location::Url`], [`Cloud::S3`] (feature `s3`) |
//! | `gs://` | [`Location::Url`], [`Cloud::Gcs`] (feature `gcs`) |
//! | `az://`, `azure://`, `abfs://`, `abfss://`, `adl://` | [`Location::Url`], [`Cloud::Azure`] (feature `azure`) |
//! | `http://`, `https://` | [`Location::Url`], [`Cloud::Http`] (feature `http`), whatever the host: an `https://...amazonaws.com` URL is read over plain HTTP |
//! | `icechunk+file:///abs/repo`, `icechunk+s3://bucket/prefix` (`gs`, `az`), with `?branch=`, `tag=` or `snapshot=` and `path=` | [`Location::Icechunk`] (feature `icechunk`) |
//! | any other `scheme://...` (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`) | an error ([`LocationError::UnknownScheme`]), never a local path |
//!
//! A store the caller opened itself (an obstore store from Python) is a
//! [`Location::Store`]: it has a name but no text that opens it again; the
//! store itself is given to the [`Stores`](crate::Stores) that open it
//! ([`Stores::with_store`](crate::Stores::with_store)). A location is a plain
//! value: this module does no I/O and holds no store.
//!
//! Needs the `object-store` feature.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::ObjectStoreScheme;

pub use crate::error::location::{FileUrlProblem, LocationError};
use crate::error::{Error, Result};

pub(crate) mod clouds;
mod format;
mod icechunk;
pub use clouds::UrlOptions;
#[cfg(all(feature = "icechunk", feature = "s3"))]
pub(crate) use clouds::s3_builder;
pub use format::FileFormat;
pub use icechunk::IcechunkLocation;
#[cfg(feature = "icechunk")]
pub(crate) use icechunk::Repository;
#[cfg(any(feature = "icechunk", feature = "datafusion"))]
pub(crate) use icechunk::Version;

/// Where a Zarr node or a table file is: a local path, an object store URL,
/// or a store the caller supplies. Made by [`Location::parse`] (or
/// [`Location::supplied`]); opened by [`Stores::open`](crate::Stores::open).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Location {
    /// A local file or directory (a `file://` URL's path, decoded).
    Path(PathBuf),
    /// An object store URL.
    Url(RemoteUrl),
    /// A node of an Icechunk repository at a branch, tag or snapshot
    /// (feature `icechunk` to open it).
    Icechunk(IcechunkLocation),
    /// A store the caller opened (an obstore store from Python), its root
    /// the node: it is read and written through the store given to the
    /// [`Stores`](crate::Stores) that open it, and `name` names it in
    /// messages.
    Store {
        /// What it is called: `obstore://PREFIX` for an obstore store.
        name: String,
        /// Which store it is, among those supplied in this process.
        id: SuppliedId,
    },
}

/// Which supplied store a [`Location::Store`] is: made by
/// [`Location::supplied`], unique in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SuppliedId(u64);

/// An object store URL, parsed: its cloud and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    cloud: Cloud,
    url: url::Url,
    /// The URL as written, without a trailing `/`: how it is shown and how
    /// another machine opens it.
    text: String,
}

/// The object stores zarrow opens by URL, each behind the cargo feature of
/// its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cloud {
    /// Amazon S3 and S3-compatible stores (`s3://`, `s3a://`): feature `s3`.
    S3,
    /// Google Cloud Storage (`gs://`): feature `gcs`.
    Gcs,
    /// Azure Blob Storage and ADLS (`az://`, `abfs://`...): feature `azure`.
    Azure,
    /// Plain HTTP(S) (`http://`, `https://`): feature `http`.
    Http,
}

impl Cloud {
    /// The cargo feature that builds this cloud's client.
    pub(crate) fn feature(self) -> &'static str {
        match self {
            Self::S3 => "s3",
            Self::Gcs => "gcs",
            Self::Azure => "azure",
            Self::Http => "http",
        }
    }

    /// Whether this build of zarrow has the cloud's client.
    pub(crate) fn is_built(self) -> bool {
        match self {
            Self::S3 => cfg!(feature = "s3"),
            Self::Gcs => cfg!(feature = "gcs"),
            Self::Azure => cfg!(feature = "azure"),
            Self::Http => cfg!(feature = "http"),
        }
    }
}

/// The scheme the Python package names an obstore store by
/// ([`Location::supplied`]): no text opens one.
const IN_PROCESS_SCHEME: &str = "obstore";

/// The scheme of `text` when it has the shape `scheme://...` (RFC 3986: a
/// letter, then letters, digits, `+`, `-` or `.`; two characters at least,
/// so that a Windows drive `C:` is a path), lower case.
fn scheme_of(text: &str) -> Option<String> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let shaped = first.is_ascii_alphabetic()
        && scheme.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    shaped.then(|| scheme.to_ascii_lowercase())
}

impl Location {
    /// Parse what a user typed: a URL (see the module's table) or a local path.
    /// A text shaped like `scheme://...` is never a local path: an unknown
    /// scheme is an error. Nothing is read: a path is not checked to exist.
    ///
    /// ```
    /// use zarrow::location::{Cloud, Location};
    /// # fn main() -> zarrow::Result<()> {
    /// assert!(matches!(Location::parse("data/obs.zarr")?, Location::Path(_)));
    /// assert!(matches!(Location::parse("file:///data/my%20obs.zarr")?,
    ///     Location::Path(p) if p.to_str() == Some("/data/my obs.zarr")));
    /// assert!(matches!(Location::parse("s3://bucket/obs.zarr")?,
    ///     Location::Url(u) if u.cloud() == Cloud::S3));
    /// assert!(Location::parse("s4://bucket/obs.zarr").is_err());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Location`]: an unknown scheme, a URL that does not parse, a
    /// `file://` URL that names no local path, a cloud this build leaves out,
    /// an `obstore://` name.
    pub fn parse(text: &str) -> Result<Self> {
        let Some(scheme) = scheme_of(text) else {
            return Ok(Self::Path(PathBuf::from(text)));
        };
        let refuse = |reason| Error::Location {
            location: text.to_string(),
            reason,
        };
        let invalid = |e: Box<dyn std::error::Error + Send + Sync>| {
            refuse(LocationError::InvalidUrl { source: e })
        };
        if scheme.starts_with(icechunk::PREFIX) {
            if !cfg!(feature = "icechunk") {
                return Err(refuse(LocationError::NotBuilt {
                    scheme,
                    feature: "icechunk",
                }));
            }
            return IcechunkLocation::parse(text).map(Self::Icechunk);
        }
        match scheme.as_str() {
            "file" => return file_path(text).map(Self::Path).map_err(refuse),
            IN_PROCESS_SCHEME => return Err(refuse(LocationError::InProcess)),
            _ => {}
        }
        let trimmed = text.trim_end_matches('/');
        let url = url::Url::parse(trimmed).map_err(|e| invalid(Box::new(e)))?;
        let cloud = match scheme.as_str() {
            // Plain HTTP whatever the host: object_store would take an
            // `https://...amazonaws.com` URL for S3 and sign its requests.
            "http" | "https" => Cloud::Http,
            _ => match ObjectStoreScheme::parse(&url) {
                Ok((ObjectStoreScheme::AmazonS3, _)) => Cloud::S3,
                Ok((ObjectStoreScheme::GoogleCloudStorage, _)) => Cloud::Gcs,
                Ok((ObjectStoreScheme::MicrosoftAzure, _)) => Cloud::Azure,
                // A known cloud's scheme without a bucket (`s3://`, `gs:///x`).
                Err(e) if is_cloud_scheme(&scheme) => return Err(invalid(Box::new(e))),
                // `memory://` and the schemes object_store does not know.
                _ => return Err(refuse(LocationError::UnknownScheme { scheme })),
            },
        };
        if !cloud.is_built() {
            return Err(refuse(LocationError::NotBuilt {
                scheme,
                feature: cloud.feature(),
            }));
        }
        Ok(Self::Url(RemoteUrl {
            cloud,
            url,
            text: trimmed.to_string(),
        }))
    }

    /// [`Location::parse`] of an OS string (a command-line argument): one
    /// that is not UTF-8 is a local path (no URL is).
    ///
    /// # Errors
    /// As [`Location::parse`].
    pub fn parse_os(text: &std::ffi::OsStr) -> Result<Self> {
        match text.to_str() {
            Some(text) => Self::parse(text),
            None => Ok(Self::Path(PathBuf::from(text))),
        }
    }

    /// A store the caller opened, named `name` in messages (the Python
    /// package names an obstore store `obstore://PREFIX`); the last segment
    /// of `name` gives a root array's column its name, as a path's does.
    ///
    /// Give the store itself to the [`Stores`](crate::Stores) that open it
    /// ([`Stores::with_store`](crate::Stores::with_store)).
    pub fn supplied(name: impl Into<String>) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self::Store {
            name: name.into(),
            id: SuppliedId(NEXT.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// Whether it is on this machine's disk.
    #[cfg(feature = "convert")]
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Self::Path(_))
    }

    /// The local path, checked to be an existing directory (a store's root).
    /// `None` for a URL or a supplied store.
    ///
    /// # Errors
    /// [`Error::Location`]: [`LocationError::Missing`] or
    /// [`LocationError::NotADirectory`].
    pub(crate) fn local_dir(&self) -> Result<Option<&Path>> {
        let Self::Path(path) = self else {
            return Ok(None);
        };
        if path.is_dir() {
            return Ok(Some(path));
        }
        Err(Error::Location {
            location: self.to_string(),
            reason: if path.exists() {
                LocationError::NotADirectory
            } else {
                LocationError::Missing
            },
        })
    }

    /// The local path, for a [`Location::Path`].
    pub fn as_path(&self) -> Option<&Path> {
        match self {
            Self::Path(path) => Some(path),
            _ => None,
        }
    }

    /// What it holds: a file by its extension (Parquet, IPC, CSV, JSON,
    /// read in any case), else a Zarr store (a directory, a URL without such
    /// an extension, an Icechunk repository, a supplied store). Nothing is
    /// read: whether a local path exists is the caller's to ask.
    ///
    /// ```
    /// use zarrow::Location;
    /// use zarrow::export::ExportFormat;
    /// use zarrow::location::FileFormat;
    /// # fn main() -> zarrow::Result<()> {
    /// let format = |text: &str| Location::parse(text).map(|l| l.file_format());
    /// assert_eq!(format("t.PQ")?, FileFormat::Table(ExportFormat::Parquet));
    /// assert_eq!(format("s3://b/t.arrows")?, FileFormat::Table(ExportFormat::IpcStream));
    /// assert_eq!(format("obs.zarr")?, FileFormat::Zarr);
    /// assert_eq!(format("icechunk+file:///r?path=t.csv")?, FileFormat::Zarr);
    /// # Ok(())
    /// # }
    /// ```
    pub fn file_format(&self) -> FileFormat {
        self.file_path()
            .and_then(FileFormat::of_extension)
            .unwrap_or(FileFormat::Zarr)
    }

    /// The extension of its last path segment as written (`"PQ"` of
    /// `t.PQ`), for a path or a URL; what [`Location::file_format`] reads.
    #[cfg(feature = "datafusion")]
    pub(crate) fn extension(&self) -> Option<&str> {
        self.file_path()?.extension()?.to_str()
    }

    /// The path a file's extension is read from: a local path's, a URL's.
    fn file_path(&self) -> Option<&Path> {
        match self {
            Self::Path(path) => Some(path),
            Self::Url(url) => Some(Path::new(url.url.path())),
            Self::Store { .. } | Self::Icechunk(_) => None,
        }
    }

    /// The column name a root array here reads as: the last path segment
    /// without `.zarr`; `values` when there is none.
    pub fn name(&self) -> String {
        let name = match self {
            Self::Path(path) => std::path::absolute(path)
                .ok()
                .and_then(|p| p.canonicalize().ok().or(Some(p)))
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
            Self::Url(url) => url
                .url
                .path_segments()
                .and_then(|mut s| s.rfind(|s| !s.is_empty()))
                .map(str::to_string)
                .or_else(|| url.url.host_str().map(str::to_string)),
            Self::Icechunk(icechunk) => icechunk.name(),
            Self::Store { name, .. } => {
                let path = name.split_once("://").map_or(name.as_str(), |(_, p)| p);
                path.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .map(str::to_string)
            }
        };
        let name = name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "values".into());
        name.strip_suffix(".zarr").unwrap_or(&name).to_string()
    }

    /// The location as another process (another working directory, another
    /// machine mounting the same filesystem) names it: a relative path made
    /// absolute, a URL as it is; `None` for a supplied store, which no other
    /// process can open.
    pub fn portable(&self) -> Option<String> {
        match self {
            Self::Path(path) => Some(
                std::path::absolute(path)
                    .unwrap_or_else(|_| path.clone())
                    .to_string_lossy()
                    .into_owned(),
            ),
            Self::Url(url) => Some(url.text.clone()),
            Self::Icechunk(icechunk) => Some(icechunk.as_str().to_string()),
            Self::Store { .. } => None,
        }
    }

    #[cfg(feature = "convert")]
    /// The location one level up and this one's name in it, for a path or a
    /// URL with a parent below its bucket or host; `None` at a root.
    pub(crate) fn parent(&self) -> Option<(Self, String)> {
        match self {
            Self::Path(path) => {
                let name = path.file_name()?.to_string_lossy().into_owned();
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty())?;
                Some((Self::Path(parent.to_path_buf()), name))
            }
            Self::Url(url) => {
                let (parent, name) = url.text.rsplit_once('/')?;
                if parent.ends_with(":/") || parent.ends_with("//") || name.is_empty() {
                    return None;
                }
                let mut up = url.clone();
                up.url = url::Url::parse(parent).ok()?;
                up.text = parent.to_string();
                Some((Self::Url(up), name.to_string()))
            }
            // A write into a repository climbs its nodes itself.
            Self::Store { .. } | Self::Icechunk(_) => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(path) => write!(f, "{}", path.display()),
            Self::Url(url) => f.write_str(&url.text),
            Self::Icechunk(icechunk) => f.write_str(icechunk.as_str()),
            Self::Store { name, .. } => f.write_str(name),
        }
    }
}

impl std::str::FromStr for Location {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        Self::parse(text)
    }
}

impl RemoteUrl {
    /// Its cloud.
    pub fn cloud(&self) -> Cloud {
        self.cloud
    }

    /// The parsed URL.
    #[cfg(any(
        feature = "s3",
        feature = "gcs",
        feature = "http",
        feature = "icechunk"
    ))]
    pub(crate) fn url(&self) -> &url::Url {
        &self.url
    }

    /// The URL as written, without a trailing `/`.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// `scheme://authority`, which an object store registry keys its stores by,
    /// and the path under it (no leading or trailing `/`).
    pub(crate) fn split_root(&self) -> (String, String) {
        let (scheme, rest) = self.text.split_once("://").unwrap_or(("", &self.text));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        (
            format!("{scheme}://{authority}"),
            path.trim_matches('/').to_string(),
        )
    }
}

fn is_cloud_scheme(scheme: &str) -> bool {
    matches!(
        scheme,
        "s3" | "s3a" | "gs" | "az" | "adl" | "azure" | "abfs" | "abfss"
    )
}

/// The local path a `file://` URL names, its percent-escapes decoded
/// (`file:///data/my%20atlas.zarr` is `/data/my atlas.zarr`).
fn file_path(text: &str) -> std::result::Result<PathBuf, LocationError> {
    let url = url::Url::parse(text).map_err(|e| LocationError::InvalidUrl {
        source: Box::new(e),
    })?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(LocationError::NotLocal {
            reason: FileUrlProblem::QueryOrFragment,
        });
    }
    url.to_file_path().map_err(|()| LocationError::NotLocal {
        reason: FileUrlProblem::Host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(text: &str) -> LocationError {
        match Location::parse(text) {
            Err(Error::Location { reason, .. }) => reason,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn paths_and_urls() {
        for path in [
            "/data/x.zarr",
            "x.zarr",
            "a b://c",
            "://x",
            "C:\\x.zarr",
            "1s3://b",
            "dir/s3://b",
        ] {
            assert!(
                matches!(Location::parse(path), Ok(Location::Path(_))),
                "{path}"
            );
        }
        for (url, cloud) in [
            ("s3://b/x.zarr", Cloud::S3),
            ("S3://b", Cloud::S3),
            ("s3a://b/x", Cloud::S3),
            ("gs://b", Cloud::Gcs),
            ("az://c/p", Cloud::Azure),
            ("abfss://c@acct.dfs.core.windows.net/p", Cloud::Azure),
            ("https://h/x.zarr", Cloud::Http),
            // Plain HTTP, as before: object_store would take these for S3 and
            // Azure and sign the requests.
            ("https://bucket.s3.amazonaws.com/x.zarr", Cloud::Http),
            ("https://acct.blob.core.windows.net/c/x.zarr", Cloud::Http),
        ] {
            match Location::parse(url) {
                Ok(Location::Url(u)) => assert_eq!(u.cloud(), cloud, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    /// A text shaped like a URL is never a local path: schemes with `+`,
    /// `-` and `.` (RFC 3986) included.
    #[test]
    fn unknown_schemes_are_refused() {
        for url in ["s4://b/x", "my-scheme://x", "a.b://x", "memory:///x"] {
            assert!(
                matches!(reason(url), LocationError::UnknownScheme { .. }),
                "{url}"
            );
        }
        assert!(matches!(reason("s3://"), LocationError::InvalidUrl { .. }));
        assert!(matches!(reason("obstore://x"), LocationError::InProcess));
    }

    #[test]
    fn file_urls_are_decoded_local_paths() {
        let path = |s| match Location::parse(s) {
            Ok(Location::Path(p)) => p,
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(path("file:///data/x.zarr"), PathBuf::from("/data/x.zarr"));
        assert_eq!(path("FILE:///data/x.zarr/"), PathBuf::from("/data/x.zarr/"));
        assert_eq!(
            path("file://localhost/data/my%20atlas%23%3F%25.zarr"),
            PathBuf::from("/data/my atlas#?%.zarr")
        );
        assert_eq!(path("file:///d/%C3%A9t%C3%A9"), PathBuf::from("/d/été"));
        for (bad, problem) in [
            ("file://server/share/x.zarr", FileUrlProblem::Host),
            ("file:///x.zarr?v=1", FileUrlProblem::QueryOrFragment),
            ("file:///x#y", FileUrlProblem::QueryOrFragment),
        ] {
            assert!(
                matches!(reason(bad), LocationError::NotLocal { reason } if reason == problem),
                "{bad}"
            );
        }
    }

    #[test]
    fn names() {
        let name = |s| Location::parse(s).unwrap().name();
        assert_eq!(name("s3://bucket/a/obs.zarr/"), "obs");
        assert_eq!(name("https://host/x"), "x");
        assert_eq!(name("s3://bucket"), "bucket");
        assert_eq!(name("testdata/stores/obs.zarr"), "obs");
        let here = std::env::current_dir()
            .unwrap()
            .join("testdata/stores/obs.zarr");
        assert_eq!(name(&format!("file://{}", here.display())), "obs");
        assert_eq!(Location::supplied("obstore://a/t.zarr/").name(), "t");
        assert_eq!(Location::supplied("t").name(), "t");
        assert_eq!(Location::supplied("obstore://").name(), "values");
    }

    #[cfg(feature = "convert")]
    #[test]
    fn parents() {
        let up = |s| {
            Location::parse(s)
                .unwrap()
                .parent()
                .map(|(p, n)| (p.to_string(), n))
        };
        assert_eq!(
            up("s3://b/atlas.zarr/obs"),
            Some(("s3://b/atlas.zarr".into(), "obs".into()))
        );
        assert_eq!(
            up("s3://b/atlas.zarr"),
            Some(("s3://b".into(), "atlas.zarr".into()))
        );
        assert_eq!(up("s3://b"), None);
        assert_eq!(up("a/b"), Some(("a".into(), "b".into())));
        assert_eq!(up("b"), None);
    }
}
