//! The writer lock of an object store ([`Store::lock`](super::Store::lock) for
//! [`ObjectStoreBackend`](super::ObjectStoreBackend)): a lease object beside
//! the store's prefix (`a/.t.zarr.zarrow-lease` for `a/t.zarr`).
//!
//! - A writer takes the lease by creating the object only if it is absent
//!   (object_store's `PutMode::Create`: S3's `If-None-Match: *`, GCS's
//!   generation 0, Azure's `If-None-Match`). Of two writers, one wins; the
//!   other waits and tries again.
//! - The lease names its owner and when it runs out. A writer that died holding
//!   it (a kill -9) blocks the others until then: a lease past its time is
//!   taken over by a conditional update of the version that was read
//!   (`PutMode::Update`), which one writer wins.
//! - Released by deleting it, if it is still the writer's own (read, then
//!   deleted: object stores have no conditional delete).
//! - Time comes from each writer's clock: clocks must agree to well within the
//!   lease's time ([`DEFAULT_LEASE_TTL`]). A writer that stalls past it may
//!   lose the lease to another while it still writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde_json::{Value, json};

use super::blocking::Blocking;
use super::{WriteLock, wait_for_lock};
use crate::error::LocationError;
use crate::error::{ConditionalWrite, Error, Result};

/// How long a lease lasts: a writer that died holding it blocks others this
/// long.
pub(crate) const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(600);

/// The largest lease object read (a lease is about 100 bytes).
const MAX_LEASE_BYTES: u64 = 4096;

static OWNERS: AtomicU64 = AtomicU64::new(0);

/// The lease object beside `prefix` (a store's prefix in its object store).
pub(crate) fn lease_path(prefix: &str) -> Result<Path> {
    let name = match prefix.rsplit_once('/') {
        Some((parent, name)) => format!("{parent}/.{name}.zarrow-lease"),
        None if prefix.is_empty() => ".zarrow-lease".to_string(),
        None => format!(".{prefix}.zarrow-lease"),
    };
    Path::parse(&name).map_err(|e| Error::Location {
        location: name.clone(),
        reason: LocationError::ObjectPath {
            source: Box::new(e),
        },
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A held lease, released when dropped.
struct Held {
    store: Arc<dyn ObjectStore>,
    path: Path,
    owner: String,
    blocking: Blocking,
}

impl Drop for Held {
    fn drop(&mut self) {
        let (store, path, owner) = (&self.store, &self.path, &self.owner);
        // A failed release leaves the lease to run out.
        let _ = self.blocking.block_on(async move {
            if read(store.as_ref(), path)
                .await
                .ok()
                .flatten()
                .is_some_and(|(o, _, _)| &o == owner)
            {
                let _ = store.delete(path).await;
            }
        });
    }
}

/// The lease at `path`: its owner, when it runs out (ms), its version.
async fn read(
    store: &dyn ObjectStore,
    path: &Path,
) -> Result<Option<(String, u64, UpdateVersion)>> {
    let got = match store.get(path).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(remote(path, e)),
    };
    if got.meta.size > MAX_LEASE_BYTES {
        return Err(Error::ValueTooLarge {
            key: path.to_string(),
            size: got.meta.size,
            limit: MAX_LEASE_BYTES,
        });
    }
    let version = UpdateVersion {
        e_tag: got.meta.e_tag.clone(),
        version: got.meta.version.clone(),
    };
    let bytes = got.bytes().await.map_err(|e| remote(path, e))?;
    // A lease zarrow cannot read has run out (its writer is not zarrow's).
    let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let owner = doc["owner"].as_str().unwrap_or("").to_string();
    let until = doc["until_ms"].as_u64().unwrap_or(0);
    Ok(Some((owner, until, version)))
}

fn remote(path: &Path, e: object_store::Error) -> Error {
    Error::Remote {
        location: path.to_string(),
        source: Box::new(e),
    }
}

/// Take the lease at `path` of `store` (named `label`), waiting up to `wait`.
///
/// # Errors
/// [`Error::Busy`]; a store without conditional writes; request errors.
pub(crate) fn take(
    store: Arc<dyn ObjectStore>,
    path: Path,
    label: &str,
    ttl: Duration,
    wait: Duration,
    blocking: Blocking,
) -> Result<WriteLock> {
    let owner = format!(
        "pid {} at {} #{}",
        std::process::id(),
        now_ms(),
        OWNERS.fetch_add(1, Ordering::Relaxed)
    );
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let lease = path.to_string();
    wait_for_lock(label, &lease, wait, || {
        blocking.block_on(try_take(store.as_ref(), &path, &owner, ttl_ms))?
    })?;
    Ok(WriteLock::new(
        lease,
        Held {
            store,
            path,
            owner,
            blocking,
        },
    ))
}

/// One try: `Some` when the lease is now `owner`'s, `None` when another holds it.
async fn try_take(
    store: &dyn ObjectStore,
    path: &Path,
    owner: &str,
    ttl_ms: u64,
) -> Result<Option<()>> {
    let body = |owner: &str| {
        PutPayload::from(
            json!({"owner": owner, "until_ms": now_ms().saturating_add(ttl_ms)}).to_string(),
        )
    };
    let create = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match store.put_opts(path, body(owner), create).await {
        Ok(_) => return Ok(Some(())),
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => {}
        Err(e @ object_store::Error::NotImplemented { .. }) => {
            return Err(Error::ConditionalWriteUnsupported {
                location: path.to_string(),
                operation: ConditionalWrite::CreateIfAbsent,
                source: Box::new(e),
            });
        }
        Err(e) => return Err(remote(path, e)),
    }
    let Some((_, until, version)) = read(store, path).await? else {
        // Released meanwhile: the next try may take it.
        return Ok(None);
    };
    if now_ms() <= until {
        return Ok(None);
    }
    // Run out: take it over, if no other writer does first.
    let update = PutOptions {
        mode: PutMode::Update(version),
        ..Default::default()
    };
    match store.put_opts(path, body(owner), update).await {
        Ok(_) => Ok(Some(())),
        Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => {
            Ok(None)
        }
        Err(e @ object_store::Error::NotImplemented { .. }) => {
            Err(Error::ConditionalWriteUnsupported {
                location: path.to_string(),
                operation: ConditionalWrite::ReplaceIfUnchanged,
                source: Box::new(e),
            })
        }
        Err(e) => Err(remote(path, e)),
    }
}
