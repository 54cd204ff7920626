//! A store named by a location string, as a user types it: a directory path or a
//! URL (feature `object-store`).

use std::path::PathBuf;
use std::sync::Arc;

use super::{Consolidated, LocalStore, Store, UrlOptions, file_url_path, is_url, open_url};
use crate::error::{Error, Result};

/// The store at `location`: a URL (`s3://`, `gs://`, `az://`, `http(s)://`...)
/// through `object_store`, else a local directory (a path or a `file://` URL);
/// its consolidated metadata
/// read once when it has some (see [`Consolidated`]).
///
/// # Errors
/// [`Error::InvalidArgument`] for a path that is not a directory; as
/// [`open_url`] and [`Consolidated::open`].
pub fn open_location(location: &str, options: &UrlOptions) -> Result<Arc<dyn Store>> {
    let store: Arc<dyn Store> = if is_url(location) {
        Arc::new(open_url(location, options)?)
    } else {
        let path: PathBuf = file_url_path(location)?.unwrap_or_else(|| location.into());
        if !path.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "{location} is not a Zarr array or group directory"
            )));
        }
        Arc::new(LocalStore::new(path))
    };
    Consolidated::open(store)
}

/// The name a location gives a column read from a root array: its last path
/// component without `.zarr` (`"values"` when there is none).
pub fn location_name(location: &str) -> String {
    let name = if is_url(location) {
        let url = location.trim_end_matches('/');
        match url.rsplit_once('/') {
            Some((head, tail)) if !tail.is_empty() && !head.ends_with(':') => tail.to_string(),
            _ => "values".to_string(),
        }
    } else {
        let path: PathBuf = match file_url_path(location) {
            Ok(Some(path)) => path,
            _ => location.into(),
        };
        path.canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "values".into())
    };
    name.strip_suffix(".zarr").unwrap_or(&name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_last_component() {
        assert_eq!(location_name("s3://bucket/data/t2m.zarr"), "t2m");
        assert_eq!(location_name("s3://bucket/data/t2m.zarr/"), "t2m");
        assert_eq!(location_name("s3://bucket"), "bucket");
        assert_eq!(location_name("https://"), "values");
        assert_eq!(location_name("testdata/stores/obs.zarr"), "obs");
        let here = std::env::current_dir()
            .unwrap()
            .join("testdata/stores/obs.zarr");
        assert_eq!(location_name(&format!("file://{}", here.display())), "obs");
    }
}
