//! Icechunk repositories (feature `icechunk`): opened from an
//! [`IcechunkLocation`] at a branch, tag or snapshot, read through a session
//! as a [`Store`] (`store.rs`), and written as one commit per write (`write.rs`).
//!
//! icechunk 2.3 builds its storage itself (its own object_store 0.14 and
//! clients): zarrow hands it the settings it would open the same cloud URL
//! with (the `AWS_*`, `GOOGLE_*`, `AZURE_*` variables and the URL options), not
//! a store. Its futures need a tokio runtime: every call here runs on the
//! caller's ([`Stores::with_runtime`](crate::Stores::with_runtime)) or through
//! the one blocking adapter.

mod storage;
mod store;
pub(crate) mod write;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use icechunk::Repository as IcRepository;
use icechunk::format::SnapshotId;
use icechunk::repository::VersionInfo;

pub(crate) use store::{IcechunkAsync, IcechunkStore};
use store::{SessionStore, StatsTable};

use crate::error::{Error, LocationError, Result};
use crate::location::{IcechunkLocation, UrlOptions, Version};
use crate::store::{Blocking, Store};

/// An icechunk error (a repository's, a session's, a store's, a storage's)
/// at `location`: its kind, without the span trace its own `Display` adds.
pub(crate) fn ic_error<K>(
    location: &impl std::fmt::Display,
    e: icechunk::storage::ICError<K>,
) -> Error
where
    K: std::error::Error + Send + Sync + 'static,
{
    Error::Remote {
        location: location.to_string(),
        source: Box::new(e.kind),
    }
}

/// A snapshot id as icechunk parses it, or the location's error.
fn snapshot_id(location: &IcechunkLocation, id: &str) -> Result<SnapshotId> {
    SnapshotId::try_from(id).map_err(|why| Error::Location {
        location: location.to_string(),
        reason: LocationError::InvalidQuery {
            detail: format!("snapshot={id:?} is not a snapshot id: {why}"),
        },
    })
}

/// The version a location names, as icechunk names it.
fn version_info(location: &IcechunkLocation) -> Result<VersionInfo> {
    Ok(match location.version() {
        Version::Branch(b) => VersionInfo::BranchTipRef(b.clone()),
        Version::Tag(t) => VersionInfo::TagRef(t.clone()),
        Version::Snapshot(s) => VersionInfo::SnapshotId(snapshot_id(location, s)?),
    })
}

/// Open the repository at `location` (`create`: make it when there is none),
/// its virtual chunk containers authorized as `options` say.
async fn open_repository(
    location: &IcechunkLocation,
    options: &UrlOptions,
    create: bool,
) -> Result<IcRepository> {
    let storage = storage::open(location, options).await?;
    let authorized = storage::virtual_chunk_credentials(location, options)?;
    let opened = if create {
        let mut builder = IcRepository::open_or_create(storage);
        if !authorized.is_empty() {
            builder = builder.authorize_virtual_chunk_access(authorized);
        }
        builder.execute().await
    } else {
        let mut builder = IcRepository::open(storage);
        if !authorized.is_empty() {
            builder = builder.authorize_virtual_chunk_access(authorized);
        }
        builder.execute().await
    };
    opened.map_err(|e| ic_error(location, e))
}

/// The store of the node at `location`, read-only at its version (a
/// branch's tip as it is now).
///
/// # Errors
/// [`Error::Remote`] when the repository, the branch or tag, or the snapshot
/// does not open.
pub(crate) fn open_read(
    location: &IcechunkLocation,
    options: &UrlOptions,
    blocking: &Blocking,
) -> Result<IcechunkStore> {
    blocking.block_on(async {
        let repo = open_repository(location, options, false).await?;
        let version = version_info(location)?;
        let session = repo
            .readonly_session(&version)
            .await
            .map_err(|e| ic_error(location, e))?;
        store_of(&repo, session, location, location.path(), blocking).await
    })?
}

/// A read-only session as icechunk serializes it (icechunk-python's
/// `Session` and `IcechunkStore` pickle to these bytes), as a store at the
/// repository's root, its calls waiting on `runtime`; named `name` in
/// messages. Its snapshot's chunk statistics are not read; its snapshot id is
/// its [`Store::pinned_version`].
///
/// # Errors
/// [`Error::Remote`] for bytes icechunk cannot read (another version's, or a
/// storage this build has no client for: icechunk-python's own S3 client);
/// [`Error::ReadOnlyVersion`]'s kind for a writable session: a write needs a
/// commit, which only a location's branch gives.
pub fn store_from_session_bytes(
    bytes: &[u8],
    name: &str,
    runtime: tokio::runtime::Handle,
) -> Result<Arc<dyn Store>> {
    let session = icechunk::session::Session::from_bytes(bytes).map_err(|e| ic_error(&name, e))?;
    if !session.read_only() {
        return Err(Error::OptionNotApplicable {
            options: vec!["a writable Icechunk session"],
            applies_to: "no zarrow call: pass a read-only session to read, an icechunk+... location to write (one commit per write)",
        });
    }
    let blocking = Blocking::on(runtime);
    let snapshot = session.snapshot_id().to_string();
    let store = blocking.block_on(async move {
        icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(session))).await
    })?;
    let session = SessionStore {
        store,
        snapshot,
        writable: false,
        stats: StatsTable::default(),
    };
    Ok(Arc::new(IcechunkStore::with_blocking(
        IcechunkAsync::new(session, "", name.to_string(), false),
        blocking,
    )))
}

/// The key of zarrow's entry in the properties of the commits it makes.
pub(crate) const PROPERTY: &str = "zarrow";

/// `session` as a store rooted at the node `root`, with the chunk statistics
/// its snapshot's commit recorded.
async fn store_of(
    repo: &IcRepository,
    session: icechunk::session::Session,
    location: &IcechunkLocation,
    root: &str,
    blocking: &Blocking,
) -> Result<IcechunkStore> {
    let snapshot = session.snapshot_id().clone();
    let writable = !session.read_only();
    let info = repo
        .lookup_snapshot(&snapshot)
        .await
        .map_err(|e| ic_error(location, e))?;
    let stats = StatsTable {
        carried: recorded_stats(&info.metadata),
        written: BTreeMap::new(),
    };
    let store = icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(session))).await;
    let session = SessionStore {
        store,
        snapshot: snapshot.to_string(),
        writable,
        stats,
    };
    Ok(IcechunkStore::with_blocking(
        IcechunkAsync::new(
            session,
            root,
            location.to_string(),
            location.is_local_repository(),
        ),
        blocking.clone(),
    ))
}

/// The chunk statistics files a commit's properties record (base64, by
/// key); an entry that does not decode is left out (statistics only skip
/// reads: without them, every chunk is read).
fn recorded_stats(
    properties: &BTreeMap<String, serde_json::Value>,
) -> BTreeMap<String, bytes::Bytes> {
    use base64::Engine as _;
    let Some(recorded) = properties
        .get(PROPERTY)
        .and_then(|p| p.get("stats"))
        .and_then(serde_json::Value::as_object)
    else {
        return BTreeMap::new();
    };
    recorded
        .iter()
        .filter_map(|(key, value)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(value.as_str()?)
                .ok()?;
            Some((key.clone(), bytes::Bytes::from(bytes)))
        })
        .collect()
}

/// The credentials of each virtual chunk container a reader may read from.
type Authorized = HashMap<String, Option<icechunk::config::Credentials>>;
