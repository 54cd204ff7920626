//! Where a node is, as Python names it: a path or URL (opened as the command
//! line opens it, credentials from the environment), or an obstore store
//! (through pyo3-object_store), whose own configuration and credentials apply.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::ObjectStore;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3_object_store::AnyObjectStore;
use zarrow::convert::End;
use zarrow::store::{
    Blocking, Consolidated, ObjectStoreAsync, ObjectStoreBackend, Store, location_name,
    open_consolidated,
};

/// A path, a URL, or an obstore store (its prefix the node).
pub(crate) enum Location {
    Path(PathBuf),
    Store {
        store: Arc<dyn ObjectStore>,
        /// The store's `repr`, naming it in messages.
        label: String,
        /// `obstore://` and the store's prefix: how a table names it (its last
        /// segment is a root array's column name), never opened as a URL.
        location: String,
    },
}

impl<'a, 'py> FromPyObject<'a, 'py> for Location {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(path) = obj.extract::<PathBuf>() {
            return Ok(Self::Path(path));
        }
        let store = obj.extract::<AnyObjectStore>().map_err(|e| {
            let kind = obj
                .get_type()
                .name()
                .map_or_else(|_| "this object".into(), |n| n.to_string());
            let err = PyTypeError::new_err(format!(
                "a location is a path, a URL or an obstore store, not {kind}"
            ));
            err.set_cause(obj.py(), Some(e));
            err
        })?;
        // obstore's stores name their prefix (a str, or a path for LocalStore).
        let prefix = obj
            .getattr("prefix")
            .ok()
            .and_then(|p| p.extract::<Option<PathBuf>>().ok())
            .flatten()
            .map(|p| p.to_string_lossy().trim_matches('/').to_string())
            .unwrap_or_default();
        Ok(Self::Store {
            store: store.into_dyn(),
            label: obj.repr()?.to_string(),
            location: zarrow::store::in_process_location(&prefix),
        })
    }
}

impl Location {
    /// The store (through its consolidated metadata when it has some) and the
    /// name a root array's column takes. A URL's blocking calls wait on a
    /// runtime of their own, an obstore store's on the package's.
    ///
    /// # Errors
    /// `anonymous` with an obstore store (its own configuration says whether
    /// it signs requests); a URL or directory that cannot be opened.
    pub(crate) fn open(&self, anonymous: bool) -> zarrow::Result<(Arc<dyn Store>, String)> {
        match self {
            Self::Path(path) => Ok((
                open_consolidated(path, &crate::url_options(anonymous))?,
                location_name(path),
            )),
            Self::Store { location, .. } => Ok((
                Consolidated::open(self.backend(anonymous)?)?,
                location_name(Path::new(location)),
            )),
        }
    }

    /// The node as one end of a conversion or write: the path or URL, or
    /// the obstore store's keys (no consolidated metadata read) and the name
    /// it goes by.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub(crate) fn end(&self, anonymous: bool) -> zarrow::Result<End<'_>> {
        match self {
            Self::Path(path) => Ok(End::Path(path)),
            Self::Store { location, .. } => Ok(End::Store {
                store: self.backend(anonymous)?,
                name: Path::new(location.as_str()),
            }),
        }
    }

    /// The obstore store's backend; its blocking calls wait on the package's
    /// runtime.
    pub(crate) fn backend(&self, anonymous: bool) -> zarrow::Result<Arc<dyn Store>> {
        let Self::Store { store, label, .. } = self else {
            return Err(zarrow::Error::InvalidArgument(
                "a path has no obstore store".into(),
            ));
        };
        if anonymous {
            return Err(zarrow::Error::InvalidArgument(format!(
                "anonymous applies to URLs: {label} signs its requests as obstore \
                 was configured (skip_signature=True for a public bucket)"
            )));
        }
        let runtime =
            crate::runtime().map_err(|e| zarrow::Error::InvalidArgument(e.to_string()))?;
        Ok(Arc::new(ObjectStoreBackend::with_blocking(
            ObjectStoreAsync::new(store.clone(), "", label),
            Blocking::on(runtime),
        )))
    }
}
