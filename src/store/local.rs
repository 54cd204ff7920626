//! A store over a local directory: key `a/b/c` is the file `ROOT/a/b/c`.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_buffer::{Buffer, MutableBuffer};

use super::{Store, check_range, check_size, validate_key};
use crate::error::{Error, Result};

/// A [`Store`] over a directory of the local filesystem.
///
/// Reads allocate Arrow-aligned (64-byte) buffers. Writes go to a temporary file in
/// the target directory that is then renamed over the key, so a crash never leaves
/// a torn value behind.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl LocalStore {
    /// A store rooted at `root`. The directory need not exist yet (it is created
    /// by the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        validate_key(key)?;
        Ok(self.root.join(key))
    }

    /// Refuse a path that symbolic links lead outside the root.
    fn check_inside(&self, key: &str, path: &Path) -> Result<()> {
        let Ok(resolved) = path.canonicalize() else {
            return Ok(()); // absent: nothing to follow
        };
        let root = self
            .root
            .canonicalize()
            .map_err(|e| Error::io(&self.root, e))?;
        if !resolved.starts_with(&root) {
            return Err(Error::InvalidKey {
                key: key.to_string(),
                reason: "resolves outside the store root (through a symbolic link)",
            });
        }
        Ok(())
    }

    fn open(&self, key: &str) -> Result<Option<(File, PathBuf, u64)>> {
        let path = self.path(key)?;
        self.check_inside(key, &path)?;
        match File::open(&path) {
            Ok(file) => {
                let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
                if meta.is_dir() {
                    return Ok(None);
                }
                Ok(Some((file, path, meta.len())))
            }
            Err(e) if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory => {
                Ok(None)
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn walk(&self, dir: &Path, rel: &str, out: &mut Vec<String>) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory => {
                return Ok(());
            }
            Err(e) => return Err(Error::io(dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not a valid key
            };
            let key = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let file_type = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
            if file_type.is_dir() {
                self.walk(&entry.path(), &key, out)?;
            } else {
                out.push(key);
            }
        }
        Ok(())
    }
}

/// Read exactly `len` bytes into a fresh Arrow-aligned buffer.
fn read_aligned(file: &mut File, path: &Path, len: u64) -> Result<Buffer> {
    let len = usize::try_from(len)
        .map_err(|_| Error::InvalidArgument(format!("{} is too large", path.display())))?;
    let mut buf = MutableBuffer::from_len_zeroed(len);
    file.read_exact(buf.as_slice_mut())
        .map_err(|e| Error::io(path, e))?;
    Ok(buf.into())
}

impl Store for LocalStore {
    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        let Some((mut file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        read_aligned(&mut file, &path, len).map(Some)
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        let Some((mut file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        check_size(key, len, max_len)?;
        read_aligned(&mut file, &path, len).map(Some)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>> {
        let Some((mut file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        check_range(key, &range, len)?;
        file.seek(SeekFrom::Start(range.start))
            .map_err(|e| Error::io(&path, e))?;
        read_aligned(&mut file, &path, range.end - range.start).map(Some)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        self.check_inside(key, dir)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("value");
        let temp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            let mut file = File::create(&temp)?;
            file.write_all(value)?;
            file.sync_data()?;
            std::fs::rename(&temp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            Error::io(&path, e)
        })
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        // Walk the deepest directory that the prefix names completely.
        let dir_part = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        if !dir_part.is_empty() {
            validate_key(dir_part)?;
        }
        let mut out = Vec::new();
        self.walk(&self.root.join(dir_part), dir_part, &mut out)?;
        out.retain(|k| k.starts_with(prefix));
        out.sort();
        Ok(out)
    }

    fn list_children(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.trim_matches('/');
        let dir = if prefix.is_empty() {
            self.root.clone()
        } else {
            self.path(prefix)?
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            // Not `Path::is_dir`, which follows symbolic links out of the store.
            let is_dir = entry
                .file_type()
                .map_err(|e| Error::io(entry.path(), e))?
                .is_dir();
            if is_dir && let Ok(name) = entry.file_name().into_string() {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }
}
