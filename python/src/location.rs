//! Where a node is, as Python names it: a path or URL (parsed once by
//! [`Location::parse`], opened as the command line opens it, credentials
//! from the environment), or an obstore store (through pyo3-object_store),
//! whose own configuration and credentials apply.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3_object_store::AnyObjectStore;
use zarrow::location::UrlOptions;
use zarrow::store::{ObjectStoreAsync, ObjectStoreBackend};
use zarrow::{Location, ParseOptionError, Store, Stores};

use crate::errors::to_py;

/// A [`Location`] from a Python argument: a `str` or `os.PathLike`, or an
/// obstore store (its prefix the node) with the store itself, which the
/// [`Stores`] this call opens it through are given.
pub(crate) struct PyLocation(pub(crate) Location, Option<Arc<dyn Store>>);

impl PyLocation {
    /// A supplied store, named `name`.
    fn supplied(store: Arc<dyn Store>, name: String) -> Self {
        Self(Location::supplied(name), Some(store))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for PyLocation {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(path) = obj.extract::<PathBuf>() {
            return Location::parse_os(path.as_os_str())
                .map(|location| Self(location, None))
                .map_err(to_py);
        }
        if let Some(location) = icechunk_session(&obj)? {
            return Ok(location);
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
        // Its blocking calls wait on the process's one runtime.
        let label = obj.repr()?.to_string();
        let backend =
            ObjectStoreBackend::new(ObjectStoreAsync::new(store.into_dyn(), "", &label), None);
        Ok(Self::supplied(
            Arc::new(backend),
            format!("obstore://{prefix}"),
        ))
    }
}

/// An icechunk-python `Session` or `IcechunkStore` (read-only) as a store
/// at its repository's root, through the bytes it pickles to; `None` for any
/// other object. Writes need the `icechunk+...` location (one commit each).
fn icechunk_session(obj: &Borrowed<'_, '_, PyAny>) -> PyResult<Option<PyLocation>> {
    let kind = obj.get_type();
    let module = kind.module().map(|m| m.to_string()).unwrap_or_default();
    if module != "icechunk" && !module.starts_with("icechunk.") {
        return Ok(None);
    }
    let bytes: Vec<u8> = match kind.name()?.to_string().as_str() {
        "Session" | "ForkSession" => obj
            .getattr("_session")?
            .call_method0("as_bytes")?
            .extract()?,
        "IcechunkStore" => obj.getattr("_store")?.call_method0("as_bytes")?.extract()?,
        _ => return Ok(None),
    };
    let name = format!("icechunk session ({})", obj.repr()?);
    let store =
        zarrow::icechunk::store_from_session_bytes(&bytes, &name, crate::runtime().map_err(to_py)?)
            .map_err(to_py)?;
    let snapshot = store.pinned_version().unwrap_or_default();
    Ok(Some(PyLocation::supplied(
        store,
        format!("icechunk://{snapshot}"),
    )))
}

impl PyLocation {
    /// How this call opens its location: see [`stores`].
    ///
    /// # Errors
    /// As [`stores`].
    pub(crate) fn stores(&self, url: UrlOptions) -> zarrow::Result<Stores> {
        stores(url, &[self])
    }

    /// Refuse `anonymous` with an obstore store (its own configuration says
    /// whether it signs requests).
    ///
    /// # Errors
    /// [`zarrow::Error::Option`] naming `anonymous`.
    pub(crate) fn check_anonymous(&self, anonymous: bool) -> zarrow::Result<()> {
        if anonymous && matches!(self.0, Location::Store { .. }) {
            return Err(ParseOptionError {
                option: "anonymous",
                value: "true".into(),
                allowed: "false with an obstore store, which signs its requests as obstore \
                          was configured (skip_signature=True for a public bucket)",
            }
            .into());
        }
        Ok(())
    }
}

/// How a call opens `locations`: a supplied store (an obstore store, an
/// icechunk-python session) as itself, URLs with `url`, their blocking calls
/// waiting on the process's one runtime (`zarrow::store::runtime`, started
/// only when a URL or a repository is read: a local path needs none).
///
/// # Errors
/// As [`PyLocation::check_anonymous`].
pub(crate) fn stores(url: UrlOptions, locations: &[&PyLocation]) -> zarrow::Result<Stores> {
    let mut stores = Stores::new(url.clone());
    for location in locations {
        location.check_anonymous(url.anonymous)?;
        if let (Location::Store { id, .. }, Some(store)) = (&location.0, &location.1) {
            stores = stores.with_store(*id, store.clone());
        }
    }
    Ok(stores)
}
