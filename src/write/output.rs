//! Outputs that appear whole or not at all.
//!
//! Every output (a Parquet / IPC / JSON / CSV file, or a Zarr directory) is written
//! beside its destination under `.NAME.PID.partial` and moved into place when
//! complete:
//!
//! - a file by `rename`, which replaces an old file in one step;
//! - a directory by exchanging it with the old one in one step (Linux
//!   `renameat2(RENAME_EXCHANGE)`), and only then removing the old one, so a kill at
//!   any moment leaves either the old or the new store whole at the destination.
//!   Where the filesystem cannot exchange, the old store is first renamed aside to
//!   `.NAME.PID.old` (a kill between the two renames leaves it there, whole).
//!
//! Before the move, the output is on the disk: a file synced, a directory with
//! every file and directory in it; after it, the parent directory. A power loss
//! leaves the old output or the new one. The writeback starts as the output is
//! written (`store/writeback.rs`), so these syncs wait only for the tail.
//!
//! A partial output is locked (`flock`) by the process writing it for as long as it
//! lives. The command line removes the partial outputs on SIGINT, SIGTERM and
//! SIGHUP ([`remove_partials`]) before the process exits; a partial left
//! by a killed process (whose lock the kernel released) is removed by the next
//! conversion to the same destination, and a partial that a live process holds is
//! never touched.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::error::LocationError;
use crate::error::{Error, Overwrite, Result, StoreAction};
pub use crate::store::writeback::WritebackFile;
use crate::store::writeback::sync_tree;

/// The partial outputs that a signal must remove. The signal handler takes the lock
/// and never gives it back (the process exits), so a commit, which holds it while
/// it moves an output into place, never races the removal.
static PARTIALS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn partials() -> MutexGuard<'static, Vec<PathBuf>> {
    PARTIALS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Remove every partial output and keep the registry locked for as long as the
/// returned guard lives: for a signal handler that then ends the process (the
/// `zarrow` command line's, on SIGINT, SIGTERM and SIGHUP, exits holding it), so
/// that no commit races the removal. A commit waits while the guard lives.
#[must_use = "the registry stays locked only while the guard lives"]
pub fn remove_partials() -> PartialsRemoved {
    let held = partials();
    for path in held.iter() {
        remove_all(path);
    }
    PartialsRemoved { _held: held }
}

/// Write the file `dst` whole or not at all: `write` fills a buffered
/// partial file beside it (its writeback started as it grows), which is
/// flushed, synced and moved into place once
/// `write` returns `Ok` (and removed if it fails). An existing `dst` needs
/// `overwrite`. Every file output (Parquet, IPC, the linear format's JSON and
/// CSV, `zarrow sql --output`) is written here.
///
/// # Errors
/// `dst` exists and not `overwrite`; `write`'s errors; writing, syncing or
/// moving the file.
pub fn write_atomic<T>(
    dst: &Path,
    overwrite: bool,
    write: impl FnOnce(&mut BufWriter<WritebackFile>) -> Result<T>,
) -> Result<T> {
    let (partial, file) = Partial::file(dst, overwrite)?;
    // The kernel writes the file back while `write` goes on (see
    // `store/writeback.rs`): the sync below waits only for the tail.
    let mut out = BufWriter::with_capacity(1 << 20, WritebackFile::new(file));
    let value = write(&mut out)?;
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(WritebackFile::sync)
        .map_err(|e| io_error(partial.path(), e))?;
    partial.commit()?;
    Ok(value)
}

/// The partial-output registry, locked ([`remove_partials`]).
pub struct PartialsRemoved {
    _held: MutexGuard<'static, Vec<PathBuf>>,
}

impl std::fmt::Debug for PartialsRemoved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartialsRemoved").finish_non_exhaustive()
    }
}

/// Remove a file or directory tree, retrying while writer threads of this process
/// may still be adding files to it.
fn remove_all(path: &Path) {
    for _ in 0..50 {
        let result = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
            _ => std::fs::remove_file(path),
        };
        if result.is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// An output being written beside its destination: removed when dropped
/// uncommitted, moved into place by [`Partial::commit`].
#[derive(Debug)]
pub(crate) struct Partial {
    temp: PathBuf,
    dst: PathBuf,
    kind: Kind,
    /// Holds the lock that tells other processes this partial is alive.
    _lock: File,
    committed: bool,
}

/// `dst`'s parent directory and file name.
fn split(dst: &Path) -> Result<(PathBuf, String)> {
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::Location {
            location: dst.display().to_string(),
            reason: LocationError::NoName,
        })?;
    let parent = match dst.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

/// Whether `dir` holds Zarr metadata at its root (so it may be replaced).
fn is_zarr_store(dir: &Path) -> bool {
    ["zarr.json", ".zgroup", ".zarray"]
        .iter()
        .any(|m| dir.join(m).is_file())
}

impl Partial {
    /// Start writing the file `dst`; returns the file to write. An existing `dst`
    /// needs `overwrite`.
    ///
    /// # Errors
    /// `dst` exists and not `overwrite`; creating the partial file.
    pub(crate) fn file(dst: &Path, overwrite: bool) -> Result<(Self, File)> {
        if dst.exists() && !overwrite {
            return Err(exists(dst));
        }
        let partial = Self::start(dst, Kind::File)?;
        let file = partial
            ._lock
            .try_clone()
            .map_err(|e| io_error(&partial.temp, e))?;
        Ok((partial, file))
    }

    /// Start writing the Zarr directory `dst`. An existing `dst` needs `overwrite`
    /// and must be a Zarr store.
    pub(crate) fn dir(dst: &Path, overwrite: bool) -> Result<Self> {
        if dst.exists() {
            if !overwrite {
                return Err(exists(dst));
            }
            if !dst.is_dir() || !is_zarr_store(dst) {
                return Err(Error::NotAZarrStore {
                    path: dst.display().to_string(),
                    entries: None,
                    action: StoreAction::Replace,
                });
            }
        }
        Self::start(dst, Kind::Dir)
    }

    fn start(dst: &Path, kind: Kind) -> Result<Self> {
        let (parent, name) = split(dst)?;
        std::fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        remove_stale(&parent, &name);
        // The process id names the writer for `remove_stale`; the counter keeps two
        // writers in one process (Python threads) apart.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let temp = parent.join(format!(
            ".{name}.{}-{}.partial",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Registered before it exists, so a signal from here on removes it.
        partials().push(temp.clone());
        let lock = (|| match kind {
            Kind::File => {
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&temp)?;
                file.lock()?;
                Ok(file)
            }
            Kind::Dir => {
                std::fs::create_dir(&temp)?;
                let dir = File::open(&temp)?;
                dir.lock()?;
                Ok(dir)
            }
        })()
        .map_err(|e| {
            unregister(&temp);
            io_error(&temp, e)
        })?;
        Ok(Self {
            temp,
            dst: dst.to_path_buf(),
            kind,
            _lock: lock,
            committed: false,
        })
    }

    /// Where to write.
    pub(crate) fn path(&self) -> &Path {
        &self.temp
    }

    /// Move the complete output into place (see the module docs).
    ///
    /// # Errors
    /// Moving the partial output into place.
    pub(crate) fn commit(mut self) -> Result<()> {
        if self.kind == Kind::Dir {
            // Every file and directory of the new store on the disk before it
            // appears (its files' writeback started as each was written). A
            // file output was synced by its writer.
            sync_tree(&self.temp).map_err(|(path, e)| io_error(&path, e))?;
        }
        let old = {
            // Not while a signal handler removes partial outputs (it never returns).
            let mut held = partials();
            let old = match self.kind {
                Kind::Dir if self.dst.exists() => Some(self.replace_dir(&mut held)?),
                Kind::File | Kind::Dir => {
                    std::fs::rename(&self.temp, &self.dst).map_err(|e| io_error(&self.dst, e))?;
                    None
                }
            };
            self.committed = true;
            old
        };
        if let Some(old) = old {
            // The old store: still registered, so a signal now removes it too.
            remove_all(&old);
            unregister(&old);
            if old.exists() {
                let _ = writeln!(
                    std::io::stderr(),
                    "zarrow: warning: could not remove the replaced store, left at {}",
                    old.display()
                );
            }
        }
        unregister(&self.temp);
        if let Ok((parent, _)) = split(&self.dst) {
            // Make the rename durable (best effort: not every platform syncs a directory).
            let _ = File::open(parent).and_then(|d| d.sync_all());
        }
        Ok(())
    }

    /// Swap the new store at `temp` with the old one at `dst`; returns where the old
    /// one now is (registered in `held` for removal).
    fn replace_dir(&self, held: &mut Vec<PathBuf>) -> Result<PathBuf> {
        match exchange(&self.temp, &self.dst) {
            Ok(()) => Ok(self.temp.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => self.replace_by_renames(held),
            Err(e) => Err(io_error(&self.dst, e)),
        }
    }

    /// Where the filesystem cannot exchange: the old store renamed aside, the new
    /// one renamed into place.
    fn replace_by_renames(&self, held: &mut Vec<PathBuf>) -> Result<PathBuf> {
        let (parent, name) = split(&self.dst)?;
        let aside = parent.join(format!(".{name}.{}.old", std::process::id()));
        std::fs::rename(&self.dst, &aside).map_err(|e| io_error(&self.dst, e))?;
        if let Err(e) = std::fs::rename(&self.temp, &self.dst) {
            // Put the old store back rather than leave no store at all.
            let _ = std::fs::rename(&aside, &self.dst);
            return Err(io_error(&self.dst, e));
        }
        held.push(aside.clone());
        Ok(aside)
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.committed {
            remove_all(&self.temp);
            unregister(&self.temp);
        }
    }
}

fn unregister(path: &Path) {
    partials().retain(|p| p != path);
}

fn exists(dst: &Path) -> Error {
    Error::AlreadyExists {
        path: dst.display().to_string(),
        overwrite: Overwrite::Convert,
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// Exchange two paths in one step; [`std::io::ErrorKind::Unsupported`] where the
/// kernel or the filesystem cannot.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use rustix::io::Errno;
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(|e| match e {
        Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP => std::io::ErrorKind::Unsupported.into(),
        other => other.into(),
    })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Remove the partial outputs for `name` in `parent` that no live process holds.
fn remove_stale(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".partial"))
        else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            continue;
        }
        let path = entry.path();
        // The writer holds the lock until it exits: taking it means nobody writes.
        let Ok(handle) = File::open(&path) else {
            continue;
        };
        if handle.try_lock().is_ok() {
            remove_all(&path);
            let _ = writeln!(
                std::io::stderr(),
                "zarrow: removed {}, left by a conversion that did not finish",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_by_renames_keeps_one_whole_store() {
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("a.zarr");
        std::fs::create_dir(&dst).unwrap();
        std::fs::write(dst.join("zarr.json"), b"old").unwrap();
        let partial = Partial::dir(&dst, true).unwrap();
        std::fs::write(partial.path().join("zarr.json"), b"new").unwrap();
        let mut held = Vec::new();
        let old = partial.replace_by_renames(&mut held).unwrap();
        assert_eq!(std::fs::read(dst.join("zarr.json")).unwrap(), b"new");
        assert_eq!(std::fs::read(old.join("zarr.json")).unwrap(), b"old");
        assert_eq!(held, vec![old]);
    }

    #[test]
    fn a_failed_second_rename_puts_the_old_store_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("a.zarr");
        std::fs::create_dir(&dst).unwrap();
        std::fs::write(dst.join("zarr.json"), b"old").unwrap();
        let partial = Partial::dir(&dst, true).unwrap();
        // The new store vanished: the rename into place fails.
        std::fs::remove_dir(partial.path()).unwrap();
        assert!(partial.replace_by_renames(&mut Vec::new()).is_err());
        assert_eq!(std::fs::read(dst.join("zarr.json")).unwrap(), b"old");
    }

    #[test]
    fn a_partial_is_removed_when_dropped_uncommitted() {
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("out.parquet");
        let (partial, _file) = Partial::file(&dst, false).unwrap();
        let temp = partial.path().to_path_buf();
        assert!(temp.exists());
        assert!(partials().contains(&temp));
        drop(partial);
        assert!(!temp.exists() && !dst.exists());
        assert!(!partials().contains(&temp));
    }

    #[test]
    fn two_writers_in_one_process_do_not_share_a_partial() {
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("out.parquet");
        let (first, mut file) = Partial::file(&dst, false).unwrap();
        file.write_all(b"first").unwrap();
        let (second, _) = Partial::file(&dst, false).unwrap();
        assert_ne!(first.path(), second.path());
        drop(second);
        assert_eq!(std::fs::read(first.path()).unwrap(), b"first");
    }
}
