//! A write to an Icechunk branch: one commit.
//!
//! The chunks and metadata go into a writable session; the commit is the one
//! atomic step (no lock, lease, temporary key or rename): a reader sees the
//! snapshot before or the one after, and a process killed at any point leaves
//! the branch at the old snapshot or the new one.
//!
//! Two writers: the second commit finds the branch moved. Changes that do not
//! touch the same nodes are rebased (icechunk's conflict detector). An append
//! changes its arrays' shapes, which no rebase reconciles: the rows it added are
//! read back from its own session and appended again on the new tip, then
//! committed, a bounded number of times. Nothing is resolved by keeping "ours",
//! which would overwrite the other writer's chunks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use icechunk::conflicts::detector::ConflictDetector;
use icechunk::session::{SessionError, SessionErrorKind};
use serde_json::{Value, json};

use super::{IcechunkStore, PROPERTY, ic_error, open_repository, store_of};
use crate::error::{Error, Overwrite, Result};
use crate::location::{IcechunkLocation, UrlOptions, Version};
use crate::read::ZarrGroup;
use crate::store::{Blocking, Store};
use crate::write::{WriteOptions, write_batches};

/// Commits tried before a write gives up with [`Error::Conflict`].
pub(crate) const MAX_ATTEMPTS: u32 = 10;

/// What the commit says: its message and what zarrow did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Commit<'a> {
    /// The message given (`--message`, `message=`), else one naming zarrow
    /// and the operation.
    pub(crate) message: Option<&'a str>,
    /// Replace the node if it exists.
    pub(crate) overwrite: bool,
}

/// Write the node at `location` through `write` (given the session's store and
/// the node's path in it) and commit it to the location's branch: the rows
/// written. See the module docs for what two writers do.
///
/// # Errors
/// [`Error::ReadOnlyVersion`] for a tag or snapshot; a Zarr v2 output;
/// [`Error::AlreadyExists`] without `overwrite` or `append`;
/// [`Error::Conflict`] when the branch kept moving; the repository's and
/// `write`'s errors.
pub(crate) fn write(
    location: &IcechunkLocation,
    url: &UrlOptions,
    blocking: &Blocking,
    options: &WriteOptions,
    commit: Commit<'_>,
    write: impl FnOnce(Arc<dyn Store>, &str) -> Result<u64>,
) -> Result<u64> {
    let Version::Branch(branch) = location.version() else {
        return Err(Error::ReadOnlyVersion {
            location: location.to_string(),
            version: location.version().to_string(),
        });
    };
    if options.zarr_format != 3 {
        return Err(Error::OptionConflict {
            option: "zarr_format 2".into(),
            other: "an Icechunk output".into(),
            why: "an Icechunk repository holds Zarr v3 only",
        });
    }
    let path = location.path();
    let repo = blocking.block_on(open_repository(location, url, true))??;
    let session = |repo: &icechunk::Repository| {
        blocking.block_on(async {
            let session = repo
                .writable_session(branch)
                .await
                .map_err(|e| ic_error(location, e))?;
            store_of(repo, session, location, "", blocking).await
        })?
    };
    let mut store = session(&repo)?;
    let exists = node_exists(&store, path)?;
    let before = if options.appends() && exists {
        rows_of(&store, path)?
    } else {
        0
    };
    if exists && !options.appends() {
        if !commit.overwrite {
            return Err(Error::AlreadyExists {
                path: location.to_string(),
                overwrite: Overwrite::Convert,
            });
        }
        let ic = store.inner().icechunk().clone();
        blocking
            .block_on(ic.delete_dir(path))?
            .map_err(|e| ic_error(location, e))?;
    }
    make_parents(&store, path)?;
    let shared: Arc<dyn Store> = Arc::new(store.clone());
    let rows = write(shared, path)?;
    let operation = if options.appends() { "append" } else { "write" };
    let message = commit.message.map_or_else(
        || format!("zarrow {operation}: {rows} rows to {}", node_name(path)),
        str::to_string,
    );
    let mut added = before..before + rows;
    for attempt in 1..=MAX_ATTEMPTS {
        // The race tests' pause widens the first attempt's window only: a redo
        // held back as long would lose every time to a writer that started after
        // it (each of its attempts waiting while the other commits).
        if attempt == 1 {
            crate::failpoint::pause("icechunk-commit");
        }
        crate::failpoint::hit("icechunk-commit");
        match commit_once(&store, blocking, &message, operation, rows, attempt)? {
            Committed::Done => return Ok(rows),
            Committed::Moved if attempt == MAX_ATTEMPTS => break,
            Committed::Moved => {}
        }
        // The branch moved: rebase what touches other nodes only.
        if rebase(&store, blocking)? {
            store.inner().drop_carried_stats();
            continue;
        }
        if !options.appends() {
            break;
        }
        // An append: its rows again, on the new tip.
        std::thread::sleep(backoff(attempt));
        let next = session(&repo)?;
        let start = if node_exists(&next, path)? {
            rows_of(&next, path)?
        } else {
            0
        };
        reappend(&store, &next, path, added.clone(), options)?;
        added = start..start + rows;
        store = next;
    }
    Err(Error::Conflict {
        location: location.to_string(),
        branch: branch.clone(),
        attempts: MAX_ATTEMPTS,
    })
}

/// Run `record` in a writable session of `location`'s branch, at the
/// repository's root, and commit what it stored with `message` (statistics
/// only: the commit changes no chunk). When the branch moved, `record` runs
/// again on the new tip: what it recorded describes the snapshot it read.
///
/// # Errors
/// As [`write`]; `record`'s.
pub(crate) fn commit_recorded<T>(
    location: &IcechunkLocation,
    url: &UrlOptions,
    blocking: &Blocking,
    message: &str,
    mut record: impl FnMut(Arc<dyn Store>) -> Result<T>,
) -> Result<T> {
    let Version::Branch(branch) = location.version() else {
        return Err(Error::ReadOnlyVersion {
            location: location.to_string(),
            version: location.version().to_string(),
        });
    };
    let repo = blocking.block_on(open_repository(location, url, false))??;
    for attempt in 1..=MAX_ATTEMPTS {
        let store = blocking.block_on(async {
            let session = repo
                .writable_session(branch)
                .await
                .map_err(|e| ic_error(location, e))?;
            store_of(&repo, session, location, location.path(), blocking).await
        })??;
        let recorded = record(Arc::new(store.clone()))?;
        match commit_once(&store, blocking, message, "stats", 0, attempt)? {
            Committed::Done => return Ok(recorded),
            Committed::Moved => std::thread::sleep(backoff(attempt)),
        }
    }
    Err(Error::Conflict {
        location: location.to_string(),
        branch: branch.clone(),
        attempts: MAX_ATTEMPTS,
    })
}

/// How a commit went.
enum Committed {
    Done,
    /// The branch's tip is not the session's parent any more.
    Moved,
}

/// Commit `store`'s session once, its statistics in the properties.
fn commit_once(
    store: &IcechunkStore,
    blocking: &Blocking,
    message: &str,
    operation: &str,
    rows: u64,
    attempt: u32,
) -> Result<Committed> {
    use base64::Engine as _;
    let stats: serde_json::Map<String, Value> = store
        .inner()
        .commit_stats()
        .into_iter()
        .map(|(k, v)| {
            (
                k,
                Value::String(base64::engine::general_purpose::STANDARD.encode(v)),
            )
        })
        .collect();
    let properties = BTreeMap::from([(
        PROPERTY.to_string(),
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "operation": operation,
            "rows": rows,
            "attempt": attempt,
            "stats": stats,
        }),
    )]);
    let ic = store.inner().icechunk().clone();
    let committed = blocking.block_on(async move {
        let session = ic.session();
        let mut session = session.write().await;
        session
            .commit(message)
            .properties(properties)
            .allow_empty(true)
            .execute()
            .await
    })?;
    match committed {
        Ok(_) => Ok(Committed::Done),
        Err(SessionError {
            kind: SessionErrorKind::Conflict { .. },
            ..
        }) => Ok(Committed::Moved),
        Err(e) => Err(ic_error(&Store::location(store), e)),
    }
}

/// Rebase `store`'s session onto the branch's tip where no change of the
/// other writer's touches the same node: whether it could.
fn rebase(store: &IcechunkStore, blocking: &Blocking) -> Result<bool> {
    let ic = store.inner().icechunk().clone();
    let rebased = blocking.block_on(async move {
        let session = ic.session();
        let mut session = session.write().await;
        session.rebase(&ConflictDetector).await
    })?;
    match rebased {
        Ok(()) => Ok(true),
        Err(SessionError {
            kind: SessionErrorKind::RebaseFailed { .. },
            ..
        }) => Ok(false),
        Err(e) => Err(ic_error(&Store::location(store), e)),
    }
}

/// Whether a node is at `path`.
fn node_exists(store: &IcechunkStore, path: &str) -> Result<bool> {
    Ok(store
        .value_len(&crate::store::join_key(path, "zarr.json"))?
        .is_some())
}

/// The rows of the group at `path`.
fn rows_of(store: &IcechunkStore, path: &str) -> Result<u64> {
    let group = ZarrGroup::open(Arc::new(store.clone()), path)?;
    Ok(group.reader().rows()?.end)
}

/// Append the rows `added` of the group at `path` in `from` (this writer's
/// own, uncommitted) to the same group in `to` (a session on the new tip).
fn reappend(
    from: &IcechunkStore,
    to: &IcechunkStore,
    path: &str,
    added: std::ops::Range<u64>,
    options: &WriteOptions,
) -> Result<()> {
    let group = ZarrGroup::open(Arc::new(from.clone()), path)?;
    let reader = group.reader().with_row_range(added).build()?;
    make_parents(to, path)?;
    write_batches(reader, Arc::new(to.clone()), path, options.clone())?;
    Ok(())
}

/// Make the groups above `path` that do not exist (Zarr v3 has no implicit
/// groups).
fn make_parents(store: &IcechunkStore, path: &str) -> Result<()> {
    let mut parents: Vec<&str> = Vec::new();
    let mut at = path;
    while let Some((parent, _)) = at.rsplit_once('/') {
        parents.push(parent);
        at = parent;
    }
    parents.push("");
    for parent in parents.into_iter().rev() {
        let key = crate::store::join_key(parent, "zarr.json");
        if store.value_len(&key)?.is_none() {
            let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
            store.set(&key, doc.to_string().as_bytes())?;
        }
    }
    Ok(())
}

/// The node's name in a message: its path, or "the root".
fn node_name(path: &str) -> String {
    if path.is_empty() {
        "the root".into()
    } else {
        path.to_string()
    }
}

/// A short wait before a second try, growing with the attempts and varying
/// between writers (so that two do not retry in lockstep).
fn backoff(attempt: u32) -> Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()) % 50);
    Duration::from_millis(20 * u64::from(attempt) + jitter)
}
