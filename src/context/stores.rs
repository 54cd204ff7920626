//! [`Stores`]: the registry of open stores a context reads and writes
//! through: how a [`Location`] becomes a store (a local directory, a URL's
//! object store, an engine's registered store, an Icechunk session), the
//! runtime its blocking calls wait on, and the Icechunk commits a write
//! makes. A [`Location`] is a plain value; opening it is this module's.

use std::fmt;
use std::sync::Arc;

use object_store::ObjectStore;

use crate::error::Result;
#[cfg(not(feature = "icechunk"))]
use crate::error::{Error, LocationError};
#[cfg(feature = "icechunk")]
use crate::location::IcechunkLocation;
use crate::location::clouds::{cloud_store, remote};
use crate::location::{Location, RemoteUrl, UrlOptions};
use crate::store::{
    Blocking, Consolidated, LocalStore, ObjectStoreAsync, ObjectStoreBackend, Store,
};

/// Open the store a URL names: `s3://bucket/prefix` (credentials, region and
/// endpoint from `AWS_*`), `gs://` (`GOOGLE_*`), `az://`, `abfs://` (`AZURE_*`),
/// `http://`, `https://`, its blocking calls waiting on `blocking`. What
/// [`Stores::open`] does with a URL no engine
/// has registered a store for.
///
/// # Errors
/// [`Error::Remote`] for a URL or configuration `object_store` refuses.
fn open_url(
    url: &RemoteUrl,
    options: &UrlOptions,
    blocking: Blocking,
) -> Result<ObjectStoreBackend> {
    let text = url.as_str();
    let (store, prefix) = cloud_store(url, options).map_err(|e| remote(text, e))?;
    let mut backend =
        ObjectStoreBackend::with_blocking(ObjectStoreAsync::new(store, &prefix, text), blocking);
    if let Some(n) = options.retries {
        backend = backend.with_body_retries(n);
    }
    Ok(match options.concurrency {
        Some(n) => backend.with_concurrency(n),
        None => backend,
    })
}

/// An object store some engine has registered for a URL (a DataFusion
/// session's): [`Stores`] reads through it rather than open one of its own.
pub(crate) trait RegisteredStores: fmt::Debug + Send + Sync {
    /// The store registered for `url`'s scheme and authority, if any.
    fn object_store(&self, url: &RemoteUrl) -> Option<Arc<dyn ObjectStore>>;
}

/// The one registry that opens a [`Location`]: how URLs are opened
/// ([`UrlOptions`]), which runtime a URL's blocking calls wait on, and the
/// object stores an engine has registered, consulted first. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Stores {
    url: UrlOptions,
    blocking: Blocking,
    registered: Option<Arc<dyn RegisteredStores>>,
    /// The context's recycler, for the local stores it opens to read into.
    recycler: Option<Arc<crate::recycle::Recycler>>,
}

impl Default for Stores {
    fn default() -> Self {
        Self::new(UrlOptions::default())
    }
}

impl Stores {
    /// A registry that opens URLs with `url`, their blocking calls waiting on
    /// the process's I/O runtime, started by the first.
    pub fn new(url: UrlOptions) -> Self {
        Self {
            url,
            blocking: Blocking::default(),
            registered: None,
            recycler: None,
        }
    }

    /// Local stores opened to read read their chunks into buffers from
    /// `recycler` (the context's: see
    /// [`ExecutionContext::with_buffer_reuse`](crate::ExecutionContext::with_buffer_reuse)).
    pub(crate) fn with_recycler(mut self, recycler: Option<Arc<crate::recycle::Recycler>>) -> Self {
        self.recycler = recycler;
        self
    }

    /// A URL's blocking calls wait on `runtime` (the caller's, lent down)
    /// instead of the process's I/O runtime.
    pub fn with_runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.blocking = Blocking::on(runtime);
        self
    }

    #[cfg(feature = "datafusion")]
    /// Read through the stores an engine has registered, where it has one
    /// for a URL.
    pub(crate) fn with_registered(mut self, registered: Arc<dyn RegisteredStores>) -> Self {
        self.registered = Some(registered);
        self
    }

    #[cfg(feature = "datafusion")]
    /// How URLs are opened.
    pub(crate) fn url_options(&self) -> &UrlOptions {
        &self.url
    }

    /// The store at `location`, its keys as they are (no consolidated
    /// metadata read): a local directory (which must exist), a URL through
    /// the registered store or one opened from the environment, a supplied
    /// store.
    ///
    /// # Errors
    /// [`Error::Location`](crate::Error::Location) for a local path that is not a directory;
    /// [`Error::Remote`](crate::Error::Remote) for a URL or configuration object_store refuses.
    pub fn open(&self, location: &Location) -> Result<Arc<dyn Store>> {
        match location {
            Location::Path(path) => {
                // An existing directory, else the location's error.
                location.local_dir()?;
                Ok(Arc::new(
                    LocalStore::new(path).with_recycler(self.recycler.clone()),
                ))
            }
            Location::Url(url) => Ok(match self.registered_async(url) {
                Some(store) => Arc::new(ObjectStoreBackend::with_blocking(
                    store,
                    self.blocking.clone(),
                )),
                None => Arc::new(open_url(url, &self.url, self.blocking.clone())?),
            }),
            Location::Store { store, .. } => Ok(store.clone()),
            #[cfg(feature = "icechunk")]
            Location::Icechunk(l) => Ok(Arc::new(crate::icechunk::open_read(
                l,
                &self.url,
                &self.blocking,
            )?)),
            #[cfg(not(feature = "icechunk"))]
            Location::Icechunk(l) => Err(Error::Location {
                location: l.to_string(),
                reason: LocationError::NotBuilt {
                    scheme: "icechunk".into(),
                    feature: "icechunk",
                },
            }),
        }
    }

    /// [`Stores::open`], a URL whose store does not exist yet (an output) too;
    /// a local path need not exist.
    ///
    /// # Errors
    /// As [`Stores::open`], but for a missing local directory.
    #[cfg(feature = "convert")]
    pub(crate) fn open_output(&self, location: &Location) -> Result<Arc<dyn Store>> {
        match location {
            Location::Path(path) => Ok(Arc::new(LocalStore::new(path))),
            other => self.open(other),
        }
    }

    /// [`Stores::open`], read through the store's consolidated metadata when
    /// it has some, as zarr-python does.
    ///
    /// # Errors
    /// As [`Stores::open`] and [`Consolidated::open`].
    pub fn open_consolidated(&self, location: &Location) -> Result<Arc<dyn Store>> {
        if let Location::Icechunk(_) = location {
            // A repository's snapshot is its consolidated metadata: one
            // object lists every node.
            return self.open(location);
        }
        Consolidated::open(self.open(location)?)
    }

    #[cfg(feature = "icechunk")]
    /// Write the node at `location` through `write` as one commit to its
    /// branch (see [`crate::icechunk::write::write`]).
    pub(crate) fn write_icechunk(
        &self,
        location: &IcechunkLocation,
        options: &crate::write::WriteOptions,
        commit: crate::icechunk::write::Commit<'_>,
        write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>,
    ) -> Result<u64> {
        crate::icechunk::write::write(location, &self.url, &self.blocking, options, commit, write)
    }

    #[cfg(all(feature = "icechunk", feature = "convert"))]
    /// Record chunk statistics at `location` through `record` (given the node's
    /// store in a writable session), as one commit on its branch.
    pub(crate) fn commit_icechunk_stats<T>(
        &self,
        location: &IcechunkLocation,
        record: impl FnMut(Arc<dyn Store>) -> Result<T>,
    ) -> Result<T> {
        crate::icechunk::write::commit_recorded(
            location,
            &self.url,
            &self.blocking,
            "zarrow stats: chunk statistics",
            record,
        )
    }

    /// The async store an engine has registered for `url`, under the URL's
    /// path.
    pub(crate) fn registered_async(&self, url: &RemoteUrl) -> Option<ObjectStoreAsync> {
        let store = self.registered.as_ref()?.object_store(url)?;
        let (_, prefix) = url.split_root();
        Some(ObjectStoreAsync::new(store, &prefix, url.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, LocationError};

    #[test]
    fn a_file_is_not_a_store() {
        let e = Stores::default()
            .open(&Location::parse("Cargo.toml").unwrap())
            .unwrap_err();
        assert!(matches!(
            e,
            Error::Location {
                reason: LocationError::NotADirectory,
                ..
            }
        ));
        let e = Stores::default()
            .open(&Location::parse("no/such/dir").unwrap())
            .unwrap_err();
        assert!(matches!(
            e,
            Error::Location {
                reason: LocationError::Missing,
                ..
            }
        ));
    }
}
