//! [`Stores`]: the registry of open stores a context reads and writes
//! through: how URLs are opened, the runtime their blocking calls wait on,
//! the stores an engine has registered or a caller supplied, and the
//! recycler local reads fill from. Opening a [`Location`] with it (which reaches up into Icechunk and
//! the writers) is `crate::open`'s.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use object_store::ObjectStore;

use crate::error::Result;
use crate::location::clouds::{cloud_store, remote};
use crate::location::{Cloud, RemoteUrl, SuppliedId, UrlOptions};
use crate::recycle::Recycler;
use crate::store::{Blocking, ObjectStoreAsync, ObjectStoreBackend, Store};

/// Open the store a URL names: `s3://bucket/prefix` (credentials, region and
/// endpoint from `AWS_*`), `gs://` (`GOOGLE_*`), `az://`, `abfs://` (`AZURE_*`),
/// `http://`, `https://`, its blocking calls waiting on `blocking`. What
/// [`Stores::open`](crate::Stores::open) does with a URL no engine
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
    let mut backend = ObjectStoreBackend::with_blocking(async_store(url, store, &prefix), blocking);
    if let Some(n) = options.retries {
        backend = backend.with_body_retries(n);
    }
    Ok(match options.concurrency {
        Some(n) => backend.with_concurrency(n),
        None => backend,
    })
}

/// `store` under `prefix`, opened for `url`: named by it, listing unless it
/// is a plain HTTP server.
fn async_store(url: &RemoteUrl, store: Arc<dyn ObjectStore>, prefix: &str) -> ObjectStoreAsync {
    ObjectStoreAsync::new(store, prefix, url.as_str()).with_listing(url.cloud() != Cloud::Http)
}

/// An object store some engine has registered for a URL (a DataFusion
/// session's): [`Stores`] reads through it rather than open one of its own.
pub(crate) trait RegisteredStores: fmt::Debug + Send + Sync {
    /// The store registered for `url`'s scheme and authority, if any.
    fn object_store(&self, url: &RemoteUrl) -> Option<Arc<dyn ObjectStore>>;
}

/// The one registry that opens a [`Location`](crate::Location): how URLs are opened
/// ([`UrlOptions`]), which runtime a URL's blocking calls wait on, the
/// object stores an engine has registered, consulted first, and the stores
/// callers supplied ([`Stores::with_store`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Stores {
    url: UrlOptions,
    blocking: Blocking,
    registered: Option<Arc<dyn RegisteredStores>>,
    /// The context's recycler, for the local stores it opens to read into.
    recycler: Option<Arc<Recycler>>,
    /// The stores callers supplied, by their locations' ids.
    supplied: Arc<BTreeMap<SuppliedId, Arc<dyn Store>>>,
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
            supplied: Arc::default(),
        }
    }

    /// Open the [`Location::supplied`](crate::Location::supplied) location
    /// `id` names as `store` (its root the node).
    pub fn with_store(mut self, id: SuppliedId, store: Arc<dyn Store>) -> Self {
        Arc::make_mut(&mut self.supplied).insert(id, store);
        self
    }

    /// The store supplied for `id`, if one was.
    pub(crate) fn supplied(&self, id: SuppliedId) -> Option<Arc<dyn Store>> {
        self.supplied.get(&id).cloned()
    }

    /// Local stores opened to read read their chunks into buffers from
    /// `recycler` (the context's: see
    /// [`ExecutionContext::with_buffer_reuse`](crate::ExecutionContext::with_buffer_reuse)).
    pub(crate) fn with_recycler(mut self, recycler: Option<Arc<Recycler>>) -> Self {
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

    /// How URLs are opened.
    #[cfg(any(feature = "icechunk", feature = "datafusion"))]
    pub(crate) fn url_options(&self) -> &UrlOptions {
        &self.url
    }

    /// What a URL's blocking calls wait on.
    #[cfg(feature = "icechunk")]
    pub(crate) fn blocking(&self) -> &Blocking {
        &self.blocking
    }

    /// The recycler local stores opened to read fill their buffers from.
    pub(crate) fn recycler(&self) -> Option<&Arc<Recycler>> {
        self.recycler.as_ref()
    }

    /// The store at `url`: through the store an engine registered for it,
    /// else one opened from the environment.
    ///
    /// # Errors
    /// [`Error::Remote`](crate::Error::Remote) for a URL or configuration
    /// object_store refuses.
    pub(crate) fn open_url(&self, url: &RemoteUrl) -> Result<Arc<dyn Store>> {
        Ok(match self.registered_async(url) {
            Some(store) => Arc::new(ObjectStoreBackend::with_blocking(
                store,
                self.blocking.clone(),
            )),
            None => Arc::new(open_url(url, &self.url, self.blocking.clone())?),
        })
    }

    /// The async store an engine has registered for `url`, under the URL's
    /// path.
    pub(crate) fn registered_async(&self, url: &RemoteUrl) -> Option<ObjectStoreAsync> {
        let store = self.registered.as_ref()?.object_store(url)?;
        let (_, prefix) = url.split_root();
        Some(async_store(url, store, &prefix))
    }
}
