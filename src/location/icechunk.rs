//! An Icechunk repository as a location: where it is stored, which version
//! (a branch, a tag or a snapshot) and which node inside it.
//!
//! ```text
//! icechunk+file:///abs/repo?branch=dev&path=obs
//! icechunk+s3://bucket/prefix?snapshot=64Q9SG3FZK772SN0V3J0
//! icechunk+gs://bucket/prefix?tag=v1      icechunk+az://container/prefix
//! ```
//!
//! The repository's own URL (without `icechunk+`) is parsed as any location is:
//! a `file://` URL is a local path, a cloud's URL needs that cloud's feature.
//! Parsing reads nothing; opening needs the `icechunk` feature.

use std::fmt;
use std::path::PathBuf;

use super::{Location, RemoteUrl};
use crate::error::{Error, LocationError, Result};

/// The scheme prefix of an Icechunk location.
pub(crate) const PREFIX: &str = "icechunk+";

/// The branch read and written when the location names no version.
pub(crate) const DEFAULT_BRANCH: &str = "main";

/// An Icechunk repository, a version of it and a node in it
/// ([`Location::Icechunk`]), parsed; shown as written (`Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcechunkLocation {
    repository: Repository,
    version: Version,
    path: String,
    text: String,
}

/// Where an Icechunk repository is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Repository {
    /// A local directory.
    Path(PathBuf),
    /// A bucket and prefix of a cloud (S3, GCS, Azure).
    Url(RemoteUrl),
}

/// Which version of a repository: what a read sees, and for a branch, what a
/// write commits to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Version {
    /// The tip of a branch (`branch=`; `main` by default): read as it is when
    /// opened, written by a commit.
    Branch(String),
    /// A tag (`tag=`): read-only.
    Tag(String),
    /// A snapshot by its id (`snapshot=`, 20 characters of Crockford base32):
    /// read-only.
    Snapshot(String),
}

impl Version {
    /// The query key that names it.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Self::Branch(_) => "branch",
            Self::Tag(_) => "tag",
            Self::Snapshot(_) => "snapshot",
        }
    }

    /// The branch, tag or snapshot id.
    pub(crate) fn name(&self) -> &str {
        match self {
            Self::Branch(n) | Self::Tag(n) | Self::Snapshot(n) => n,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.key(), self.name())
    }
}

impl IcechunkLocation {
    /// Parse `text`, an `icechunk+SCHEME://...` URL (the caller checked the
    /// prefix).
    pub(crate) fn parse(text: &str) -> Result<Self> {
        let refuse = |reason| Error::Location {
            location: text.to_string(),
            reason,
        };
        let query = |detail: String| refuse(LocationError::InvalidQuery { detail });
        let inner = &text[PREFIX.len()..];
        let (inner, query_text) = inner.split_once('?').unwrap_or((inner, ""));
        if inner.contains('#') || query_text.contains('#') {
            return Err(query(
                "a fragment (#) is not part of an Icechunk location".into(),
            ));
        }
        let repository = match Location::parse(inner)? {
            Location::Path(path) if inner.to_ascii_lowercase().starts_with("file:") => {
                Repository::Path(path)
            }
            Location::Url(url) if url.cloud() != super::Cloud::Http => Repository::Url(url),
            _ => {
                let scheme = super::scheme_of(text).unwrap_or_default();
                return Err(refuse(LocationError::UnknownScheme { scheme }));
            }
        };
        let mut version = None;
        let mut path = None;
        for (key, value) in url::form_urlencoded::parse(query_text.as_bytes()) {
            let value = value.into_owned();
            let named = match key.as_ref() {
                "branch" => Version::Branch(value),
                "tag" => Version::Tag(value),
                "snapshot" => Version::Snapshot(value),
                "path" => {
                    if path.replace(value).is_some() {
                        return Err(query("path= is given twice".into()));
                    }
                    continue;
                }
                other => {
                    return Err(query(format!(
                        "unknown key {other:?} (branch=, tag=, snapshot=, path=)"
                    )));
                }
            };
            if named.name().is_empty() {
                return Err(query(format!("{}= names nothing", named.key())));
            }
            if let Some(before) = version.replace(named) {
                return Err(query(format!(
                    "{}= and {}=: name at most one version",
                    before.key(),
                    version.as_ref().map_or("", Version::key)
                )));
            }
        }
        let path = path.unwrap_or_default();
        let trimmed = path.trim_matches('/');
        if trimmed
            .split('/')
            .any(|s| matches!(s, "." | "..") || (s.is_empty() && !trimmed.is_empty()))
        {
            return Err(query(format!("path={path:?} is not a node path")));
        }
        Ok(Self {
            repository,
            version: version.unwrap_or_else(|| Version::Branch(DEFAULT_BRANCH.into())),
            path: trimmed.to_string(),
            text: text.to_string(),
        })
    }

    /// Where the repository is stored.
    #[cfg(any(test, feature = "icechunk"))]
    pub(crate) fn repository(&self) -> &Repository {
        &self.repository
    }

    /// The version read (and for a branch, written).
    #[cfg(any(test, feature = "icechunk"))]
    pub(crate) fn version(&self) -> &Version {
        &self.version
    }

    /// The node's path inside the repository (`""`: its root).
    #[cfg(any(test, feature = "icechunk"))]
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Whether the repository is on this machine's disk.
    #[cfg(feature = "icechunk")]
    pub(crate) fn is_local_repository(&self) -> bool {
        matches!(self.repository, Repository::Path(_))
    }

    /// The same node of the same repository at `version` (how a plan sent to
    /// another machine pins the snapshot its client resolved).
    #[cfg(any(test, feature = "datafusion"))]
    pub(crate) fn at(&self, version: Version) -> Self {
        self.with(version, self.path.clone())
    }

    #[cfg(any(test, feature = "datafusion"))]
    fn with(&self, version: Version, path: String) -> Self {
        let repository = match &self.repository {
            Repository::Path(p) => {
                url::Url::from_file_path(std::path::absolute(p).unwrap_or(p.clone()))
                    .map_or_else(|()| format!("file://{}", p.display()), String::from)
            }
            Repository::Url(url) => url.as_str().to_string(),
        };
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query.append_pair(version.key(), version.name());
        if !path.is_empty() {
            query.append_pair("path", &path);
        }
        Self {
            repository: self.repository.clone(),
            text: format!("{PREFIX}{repository}?{}", query.finish()),
            version,
            path,
        }
    }

    /// The column name a root array here reads as (see [`Location::name`]).
    pub(crate) fn name(&self) -> Option<String> {
        match self.path.rsplit('/').next().filter(|s| !s.is_empty()) {
            Some(last) => Some(last.to_string()),
            None => match &self.repository {
                Repository::Path(p) => p.file_name().map(|n| n.to_string_lossy().into_owned()),
                Repository::Url(url) => Some(Location::Url(url.clone()).name()),
            },
        }
    }

    /// The location as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for IcechunkLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<IcechunkLocation> {
        IcechunkLocation::parse(text)
    }

    #[test]
    fn versions_and_paths() {
        let l = parse("icechunk+file:///data/repo").unwrap();
        assert_eq!(l.repository(), &Repository::Path("/data/repo".into()));
        assert_eq!(l.version(), &Version::Branch("main".into()));
        assert_eq!(l.path(), "");
        let l = parse("icechunk+file:///data/my%20repo?tag=v1&path=/a/obs/").unwrap();
        assert_eq!(l.repository(), &Repository::Path("/data/my repo".into()));
        assert_eq!(l.version(), &Version::Tag("v1".into()));
        assert_eq!(l.path(), "a/obs");
        assert_eq!(l.name().as_deref(), Some("obs"));
        let pinned = l.at(Version::Snapshot("64Q9SG3FZK772SN0V3J0".into()));
        assert_eq!(
            pinned.as_str(),
            "icechunk+file:///data/my%20repo?snapshot=64Q9SG3FZK772SN0V3J0&path=a%2Fobs"
        );
        assert_eq!(parse(pinned.as_str()).unwrap(), pinned);
    }

    #[test]
    fn bad_queries_are_refused() {
        for bad in [
            "icechunk+file:///r?branch=a&tag=b",
            "icechunk+file:///r?snapshot=",
            "icechunk+file:///r?ref=a",
            "icechunk+file:///r?path=a&path=b",
            "icechunk+file:///r?path=a/../b",
            "icechunk+file:///r?path=a//b",
            "icechunk+file:///r#x",
        ] {
            assert!(
                matches!(
                    parse(bad),
                    Err(Error::Location {
                        reason: LocationError::InvalidQuery { .. },
                        ..
                    })
                ),
                "{bad}: {:?}",
                parse(bad)
            );
        }
        for bad in ["icechunk+http://h/r", "icechunk+x://h/r", "icechunk+/r"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
