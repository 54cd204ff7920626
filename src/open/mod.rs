//! Locations opened: how a [`Location`] becomes a store to read (a local
//! directory, a URL's object store, an engine's registered store, an
//! Icechunk session), and how an output is written whole or not at all
//! (`destination.rs`). The one place that turns the plain values of
//! [`crate::location`] into I/O, through the [`Stores`] of a context; it sits
//! above the readers, the writers and Icechunk, which never reach up to it.

#[cfg(feature = "convert")]
mod destination;

use std::sync::Arc;

use crate::Stores;
use crate::error::{Error, LocationError, Result};
#[cfg(all(feature = "icechunk", feature = "convert"))]
use crate::location::IcechunkLocation;
use crate::location::Location;
use crate::store::{Consolidated, LocalStore, Store};

impl Stores {
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
                    LocalStore::new(path).with_recycler(self.recycler().cloned()),
                ))
            }
            Location::Url(url) => self.open_url(url),
            Location::Store { id, .. } => self.supplied(*id).ok_or_else(|| Error::Location {
                location: location.to_string(),
                reason: LocationError::InProcess,
            }),
            #[cfg(feature = "icechunk")]
            Location::Icechunk(l) => Ok(Arc::new(crate::icechunk::open_read(
                l,
                self.url_options(),
                self.blocking(),
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
            self.url_options(),
            self.blocking(),
            "zarrow stats: chunk statistics",
            record,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::error::{Error, LocationError};
    use crate::location::Location;
    use crate::{MemoryStore, Store, Stores};

    #[test]
    fn a_supplied_location_opens_the_store_given_for_it() {
        // Two stores under one name stay two locations.
        let (a, b) = (
            Location::supplied("obstore://"),
            Location::supplied("obstore://"),
        );
        let (Location::Store { id: id_a, .. }, Location::Store { id: id_b, .. }) = (&a, &b) else {
            panic!("not supplied locations");
        };
        let first: Arc<dyn Store> = Arc::new(MemoryStore::new());
        first.set("k", b"first").unwrap();
        let second: Arc<dyn Store> = Arc::new(MemoryStore::new());
        second.set("k", b"second").unwrap();
        let stores = Stores::default()
            .with_store(*id_a, first)
            .with_store(*id_b, second);
        assert_eq!(
            &stores.open(&a).unwrap().get("k").unwrap().unwrap()[..],
            b"first"
        );
        assert_eq!(
            &stores.open(&b).unwrap().get("k").unwrap().unwrap()[..],
            b"second"
        );
        // Stores that were given neither cannot open them.
        let e = Stores::default().open(&a).unwrap_err();
        assert!(matches!(
            e,
            Error::Location {
                reason: LocationError::InProcess,
                ..
            }
        ));
    }

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
