//! Opening a store by location, as the `zarrow` command line and the Python
//! package name it: a URL (`s3://`, `gs://`, `az://`, `abfs://`, `http(s)://`)
//! through `object_store`, else a local directory (a path or a `file://` URL).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    Blocking, Consolidated, LocalStore, Store, UrlOptions, file_url_path, is_url, open_url_with,
};
use crate::error::{Error, Result};

/// The store at `location`: a URL through [`open_url`](super::open_url), else the directory
/// `location` (read with ordinary reads; see [`LocalStore::new_memory_mapped`] for
/// maps).
///
/// # Errors
/// [`Error::InvalidArgument`] when `location` is neither a URL nor a directory;
/// [`open_url`](super::open_url)'s errors.
pub fn open_location(location: &Path, options: &UrlOptions) -> Result<Arc<dyn Store>> {
    open_location_with(location, options, Blocking::owned())
}

/// [`open_location`], a URL's blocking calls waiting on `blocking` (the
/// caller's runtime: [`Blocking::on`]).
///
/// # Errors
/// As [`open_location`].
pub fn open_location_with(
    location: &Path,
    options: &UrlOptions,
    blocking: Blocking,
) -> Result<Arc<dyn Store>> {
    if let Some(url) = location.to_str().filter(|p| is_url(p)) {
        return Ok(Arc::new(open_url_with(url, options, blocking)?));
    }
    let local = local_path(location)?;
    let location = local.as_path();
    if !location.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a Zarr array or group directory",
            location.display()
        )));
    }
    Ok(Arc::new(LocalStore::new(location)))
}

/// A local path: a `file://` URL's (see [`file_url_path`]), else `location`.
fn local_path(location: &Path) -> Result<PathBuf> {
    match location.to_str().map(file_url_path).transpose()? {
        Some(Some(path)) => Ok(path),
        _ => Ok(location.to_path_buf()),
    }
}

/// [`open_location`], read through the store's consolidated metadata when it has
/// some, as zarr-python does.
///
/// # Errors
/// As [`open_location`] and [`Consolidated::open`].
pub fn open_consolidated(location: &Path, options: &UrlOptions) -> Result<Arc<dyn Store>> {
    Consolidated::open(open_location(location, options)?)
}

/// The column name a root array at `location` reads as: its directory (or the
/// URL's last path segment) without `.zarr`; `values` when there is none.
pub fn location_name(location: &Path) -> String {
    let name = if let Some(url) = location.to_str().filter(|p| is_url(p)) {
        let tail = url.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        if tail.is_empty() || url.trim_end_matches('/').ends_with(':') {
            "values".to_string()
        } else {
            tail.to_string()
        }
    } else {
        local_path(location)
            .unwrap_or_else(|_| location.to_path_buf())
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "values".into())
    };
    name.strip_suffix(".zarr").unwrap_or(&name).to_string()
}

/// `location` as another process (another working directory, another machine
/// mounting the same filesystem) must name it: a relative path made absolute;
/// a URL (`s3://`, `file://`, `obstore://`...) as it is.
#[cfg(feature = "datafusion")]
pub(crate) fn portable_location(location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    std::path::absolute(location).map_or_else(
        |_| location.to_string(),
        |p| p.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(location_name(Path::new("s3://bucket/a/obs.zarr/")), "obs");
        assert_eq!(location_name(Path::new("https://host/x")), "x");
        assert_eq!(location_name(Path::new("s3://bucket")), "bucket");
        assert_eq!(location_name(Path::new("https://")), "values");
        assert_eq!(location_name(Path::new("testdata/stores/obs.zarr")), "obs");
        let here = std::env::current_dir()
            .unwrap()
            .join("testdata/stores/obs.zarr");
        let url = format!("file://{}", here.display());
        assert_eq!(location_name(Path::new(&url)), "obs");
    }

    #[test]
    fn a_file_is_not_a_store() {
        let err = open_location(Path::new("Cargo.toml"), &UrlOptions::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("not a Zarr array or group directory")
        );
    }
}
