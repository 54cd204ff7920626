//! A store over a local directory: key `a/b/c` is the file `ROOT/a/b/c`.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arrow_buffer::Buffer;

use super::{
    ByteRange, RangeRead, Store, WriteLock, check_range, check_size, read_coalesced, slice_ranges,
    validate_key, wait_for_lock,
};
use crate::error::{Error, Result};
use crate::recycle::{MIN_KEPT, Recycler};

/// A [`Store`] over a directory of the local filesystem.
///
/// Reads fill fresh buffers without zero-filling them first (the allocator's
/// alignment, at least 8 bytes on the platforms zarrow supports, is enough for
/// offsets to be used in place), or, in a store made by the `unsafe`
/// [`LocalStore::new_memory_mapped`], map the file. Writes go to a temporary file
/// in the target directory that is then renamed over the key, so a crash never
/// leaves a torn value behind.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
    memory_map: bool,
    /// Whether each write is synced before it returns; otherwise its writeback
    /// is only started, and whoever publishes the directory syncs it first
    /// ([`LocalStore::synced_by_caller`]).
    sync_each_write: bool,
    /// Where whole values are read into, if anywhere (a reader's recycler).
    recycler: Option<Arc<Recycler>>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A file's version ([`Store::list_versions`]): its size, modification time
/// in nanoseconds, inode and change time, any of which a rewrite (in place or
/// by a rename over it) changes.
#[cfg(unix)]
fn file_version(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "{}:{}.{:09}:{}:{}.{:09}",
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

/// A file's version: its size and modification time.
#[cfg(not(unix))]
fn file_version(meta: &std::fs::Metadata) -> String {
    format!("{}:{:?}", meta.len(), meta.modified().ok())
}

impl LocalStore {
    /// A store rooted at `root`. The directory need not exist yet (it is created
    /// by the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            memory_map: false,
            sync_each_write: true,
            recycler: None,
        }
    }

    /// Read whole values into buffers from `recycler`, given back to it when
    /// released (see `src/recycle.rs`).
    pub(crate) fn with_recycler(mut self, recycler: Option<Arc<Recycler>>) -> Self {
        self.recycler = recycler;
        self
    }

    /// A store for a directory that nobody reads until its writer syncs it and
    /// moves it into place (a Zarr output written beside its destination: see
    /// `write/output.rs`). A write starts the kernel's writeback of its file
    /// instead of waiting for it, so writeback overlaps the encoding and the sync
    /// before the move waits only for the last files.
    #[cfg(feature = "convert")]
    pub(crate) fn synced_by_caller(root: impl Into<PathBuf>) -> Self {
        Self {
            sync_each_write: false,
            ..Self::new(root)
        }
    }

    /// A store rooted at `root` that maps files into memory instead of reading them.
    ///
    /// A value is then a view of the operating system's page cache: nothing is
    /// copied or zeroed, and for uncompressed `zarrs.vlen` and ZEP0007 chunks the
    /// Arrow arrays read from the store point straight into the mapped files (as
    /// pyarrow's `memory_map` does for IPC files). A mapping lives as long as any
    /// buffer or array made from it, which may be long after the store is dropped.
    ///
    /// # Safety
    ///
    /// No file under `root` may be truncated or modified in place, by this process
    /// or any other, while any [`Buffer`] returned by this store (or any Arrow
    /// array, batch or slice made from one) is alive. Otherwise the behaviour is
    /// undefined: touching a page that a truncation removed raises `SIGBUS`, which
    /// ends the process, and a rewrite in place changes the bytes under arrays
    /// whose offsets were already validated, so later reads can go out of bounds.
    ///
    /// Replacing a file by rename (as zarrow's own writers, including
    /// [`Store::set`] on this store, do) and deleting a file keep existing
    /// mappings intact and are allowed. Use [`LocalStore::new`] for a directory
    /// that other writers may change.
    pub unsafe fn new_memory_mapped(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            memory_map: true,
            sync_each_write: true,
            recycler: None,
        }
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
        // Resolved at each check, as the key's path is: the root may be a
        // link that is pointed elsewhere while the store is open.
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

    /// `key`'s file (at `path`) opened for reading, refused where a symbolic
    /// link leads outside the root.
    fn open_inside(&self, key: &str, path: &Path) -> Result<std::io::Result<File>> {
        #[cfg(target_os = "linux")]
        match open_beneath(&self.root, key) {
            // The kernel resolved the key beneath the root and refused any step
            // out of it: one call, and no window between a check and the open.
            Ok(file) => return Ok(Ok(file)),
            // An absolute link, or one through `..` (which may still stay
            // inside), or a kernel without openat2 (before Linux 5.6, or a
            // sandbox that refuses it): checked by resolving the path.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EXDEV | libc::ENOSYS | libc::EPERM | libc::EAGAIN)
                ) => {}
            Err(e) => return Ok(Err(e)),
        }
        self.check_inside(key, path)?;
        let mut options = File::options();
        options.read(true);
        // Opening a FIFO for reading waits for a writer: never wait. (A regular
        // file ignores the flag.)
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        Ok(options.open(path))
    }

    fn open(&self, key: &str) -> Result<Option<(File, PathBuf, u64)>> {
        let path = self.path(key)?;
        match self.open_inside(key, &path)? {
            Ok(file) => {
                let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
                if meta.is_dir() {
                    return Ok(None);
                }
                // Checked on the open file, so nothing can swap it in between.
                if !meta.is_file() {
                    return Err(Error::InvalidKey {
                        key: key.to_string(),
                        reason: "is not a regular file (a FIFO, socket or device is never read)",
                    });
                }
                Ok(Some((file, path, meta.len())))
            }
            Err(e) if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory => {
                Ok(None)
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Each file under `dir` (key `rel`) whose key may start with `prefix`,
    /// handed to `file` with its directory entry: a directory that cannot
    /// hold one is not entered.
    fn walk(
        &self,
        dir: &Path,
        rel: &str,
        prefix: &str,
        file: &mut dyn FnMut(String, &std::fs::DirEntry) -> Result<()>,
    ) -> Result<()> {
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
                let inside = key.starts_with(prefix)
                    || prefix
                        .strip_prefix(key.as_str())
                        .is_some_and(|rest| rest.starts_with('/'));
                if inside {
                    self.walk(&entry.path(), &key, prefix, file)?;
                }
            } else if key.starts_with(prefix) {
                file(key, &entry)?;
            }
        }
        Ok(())
    }

    /// The directory the keys under `prefix` lie in: the deepest one the
    /// prefix names completely.
    fn walked(&self, prefix: &str) -> Result<(PathBuf, String)> {
        let dir_part = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        if !dir_part.is_empty() {
            validate_key(dir_part)?;
        }
        Ok((self.root.join(dir_part), dir_part.to_string()))
    }
}

/// `key` (a validated key: relative, no `..`) opened for reading beneath
/// `root` (openat2 with `RESOLVE_BENEATH`: a symbolic link that leads out of
/// the root fails with `EXDEV`), without waiting on a FIFO.
#[cfg(target_os = "linux")]
fn open_beneath(root: &Path, key: &str) -> std::io::Result<File> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::OpenOptionsExt;
    // The root's handle, opened each time: the root may be a link that is
    // pointed elsewhere while the store is open.
    let root = File::options()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
        .open(root)?;
    let key =
        std::ffi::CString::new(key).map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))?;
    // SAFETY: `open_how` is plain data (three integers): all zeros is a value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH;
    // SAFETY: openat2(2) with a directory handle open across the call, a
    // NUL-terminated path, and `how` with its size; it returns a new
    // descriptor, or -1 and sets errno.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            key.as_ptr(),
            &raw const how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| std::io::Error::from(ErrorKind::Other))?;
    // SAFETY: `fd` is the descriptor openat2 just returned, owned by nothing
    // else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn too_large(path: &Path) -> Error {
    Error::io(
        path,
        std::io::Error::new(
            ErrorKind::FileTooLarge,
            "larger than this machine's address space",
        ),
    )
}

/// Read exactly `len` bytes into a fresh buffer. `read_to_end` reads into the
/// vector's spare capacity, so the memory is not zero-filled first (the zero-fill
/// cost 10-25% of an uncompressed read: `benches/compare`, W2 and W3).
fn read_whole(file: &mut File, path: &Path, len: u64) -> Result<Buffer> {
    let size = usize::try_from(len).map_err(|_| too_large(path))?;
    let mut buf = Vec::with_capacity(size);
    file.take(len)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, e))?;
    if buf.len() != size {
        return Err(Error::io(path, std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(Buffer::from_vec(buf))
}

/// [`read_whole`] into a buffer from `recycler`. A kept buffer's pages are in
/// memory already: filling it with zeros first costs less than the page faults
/// of a new one (whose pages the kernel zeroes anyway).
fn read_reused(file: &mut File, path: &Path, len: u64, recycler: &Arc<Recycler>) -> Result<Buffer> {
    let size = usize::try_from(len).map_err(|_| too_large(path))?;
    let mut buffer = recycler.take(size);
    buffer.resize(size, 0);
    file.read_exact(buffer.as_slice_mut())
        .map_err(|e| Error::io(path, e))?;
    Ok(recycler.freeze(buffer))
}

/// Map the first `len` bytes of `file` (its length when opened) as a [`Buffer`]
/// that keeps the mapping alive. Pages are read when first touched (asking the
/// kernel to populate the mapping up front measured no faster).
fn map_file(file: &File, path: &Path, len: u64) -> Result<Buffer> {
    let len = usize::try_from(len).map_err(|_| too_large(path))?;
    if len == 0 {
        return Ok(Buffer::from_vec(Vec::<u8>::new()));
    }
    let mut options = memmap2::MmapOptions::new();
    options.len(len);
    // SAFETY: `Mmap::map` is unsafe because the mapping aliases a file that could
    // be truncated or rewritten while the returned buffer lives. Only a store made
    // by `LocalStore::new_memory_mapped` calls this, and the caller of that
    // `unsafe` constructor promised (its `# Safety` section) that no file under
    // the root is truncated or modified while a buffer from the store is alive;
    // zarrow itself only ever replaces files by rename.
    let map = unsafe { options.map(file) }.map_err(|e| Error::io(path, e))?;
    let ptr = NonNull::new(map.as_ptr().cast_mut()).ok_or_else(|| too_large(path))?;
    let owner: Arc<memmap2::Mmap> = Arc::new(map);
    // SAFETY: `ptr` points at `len` readable bytes (the mapping's length) owned by
    // `owner`, which the buffer keeps alive; the mapping is read-only and never
    // moves, and nothing in this process writes through it.
    Ok(unsafe { Buffer::from_custom_allocation(ptr, len, owner) })
}

impl LocalStore {
    /// The whole of an opened file: mapped or read.
    fn whole(&self, mut file: File, path: &Path, len: u64) -> Result<Buffer> {
        match &self.recycler {
            _ if self.memory_map => map_file(&file, path, len),
            Some(recycler) if len >= MIN_KEPT as u64 => read_reused(&mut file, path, len, recycler),
            _ => read_whole(&mut file, path, len),
        }
    }
}

/// Whether `file` (a key's last segment) is the temporary file
/// [`LocalStore::set`] writes before renaming it into place: a killed write
/// leaves one behind.
pub(crate) fn is_temporary(file: &str) -> bool {
    file.starts_with('.') && file.ends_with(".tmp")
}

impl Store for LocalStore {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn reading_into(&self, recycler: &Arc<Recycler>) -> Option<Arc<dyn Store>> {
        Some(Arc::new(self.clone().with_recycler(Some(recycler.clone()))))
    }

    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        let Some((file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        self.whole(file, &path, len).map(Some)
    }

    fn get_bounded(&self, key: &str, max_len: u64) -> Result<Option<Buffer>> {
        let Some((file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        check_size(key, len, max_len)?;
        self.whole(file, &path, len).map(Some)
    }

    fn value_len(&self, key: &str) -> Result<Option<u64>> {
        Ok(self.open(key)?.map(|(_, _, len)| len))
    }

    /// One open of the file for all ranges; nearby ranges read together (mapped
    /// files: slices of one mapping).
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        let Some((mut file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        if self.memory_map {
            return slice_ranges(key, ranges, &map_file(&file, &path, len)?).map(Some);
        }
        read_coalesced(key, ranges, len, |range| {
            file.seek(SeekFrom::Start(range.start))
                .map_err(|e| Error::io(&path, e))?;
            read_whole(&mut file, &path, range.end - range.start).map(Some)
        })
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>> {
        let Some((mut file, path, len)) = self.open(key)? else {
            return Ok(None);
        };
        check_range(key, &range, len)?;
        let start = usize::try_from(range.start).map_err(|_| too_large(&path))?;
        let count = usize::try_from(range.end - range.start).map_err(|_| too_large(&path))?;
        if self.memory_map {
            // Map the file and slice it: only the pages the caller touches are read.
            return Ok(Some(
                map_file(&file, &path, len)?.slice_with_length(start, count),
            ));
        }
        file.seek(SeekFrom::Start(range.start))
            .map_err(|e| Error::io(&path, e))?;
        read_whole(&mut file, &path, count as u64).map(Some)
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let path = self.path(key)?;
        let dir = path.parent().unwrap_or(&self.root);
        // The deepest directory of the store that exists first: creating the
        // rest under a link that leaves the root would make directories
        // outside it. (None: the root itself is still to be made.)
        let existing = dir.ancestors().find(|d| d.exists());
        if let Some(existing) = existing.filter(|d| d.starts_with(&self.root)) {
            self.check_inside(key, existing)?;
        }
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
            if self.sync_each_write {
                file.sync_data()?;
            } else {
                super::writeback::start_writeback(&file, 0, 0);
            }
            crate::failpoint::hit("store-write");
            std::fs::rename(&temp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            Error::io(&path, e)
        })
    }

    /// A lock file beside the store's directory (`.NAME.zarrow-lock`, kept
    /// after use), held with the operating system's advisory lock: released
    /// when the writer's process ends, however it ends.
    fn lock(&self, wait: Duration) -> Result<Option<WriteLock>> {
        let root = std::path::absolute(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let path = match (root.parent(), root.file_name()) {
            (Some(parent), Some(name)) => {
                parent.join(format!(".{}.zarrow-lock", name.to_string_lossy()))
            }
            _ => root.join(".zarrow-lock"),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let name = path.display().to_string();
        let file = wait_for_lock(&root.display().to_string(), &name, wait, || {
            match file.try_lock() {
                Ok(()) => Ok(Some(())),
                Err(std::fs::TryLockError::WouldBlock) => Ok(None),
                Err(std::fs::TryLockError::Error(e)) => Err(Error::io(&path, e)),
            }
        })
        .map(|()| file)?;
        Ok(Some(WriteLock::new(name, file)))
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
        let (dir, rel) = self.walked(prefix)?;
        let mut out = Vec::new();
        self.walk(&dir, &rel, prefix, &mut |key, _| {
            out.push(key);
            Ok(())
        })?;
        out.sort();
        Ok(out)
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        let (dir, rel) = self.walked(prefix)?;
        let mut out = Vec::new();
        // Each file stat'ed through its directory's handle (`fstatat` of its
        // name, not its whole path again), without following a link.
        self.walk(&dir, &rel, prefix, &mut |key, entry| {
            match entry.metadata() {
                Ok(meta) => out.push((key, file_version(&meta))),
                // Removed since the listing: not there.
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(entry.path(), e)),
            }
            Ok(())
        })?;
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(out))
    }

    fn version(&self, key: &str) -> Result<Option<Option<String>>> {
        let path = self.path(key)?;
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(Some(Some(file_version(&meta)))),
            // A directory holds no value.
            Ok(_) => Ok(Some(None)),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(Some(None))
            }
            Err(e) => Err(Error::io(path, e)),
        }
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
            // Nothing there, or a value (a file): no children.
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(Vec::new());
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory-mapped store hands out views of the mapping (which starts on a page
    /// boundary), not heap copies; a range is a slice of the same mapping.
    #[cfg(unix)]
    #[test]
    fn memory_mapped_values_are_views_of_the_mapping() {
        let dir = tempfile::tempdir().unwrap();
        let value: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        LocalStore::new(dir.path()).set("k", &value).unwrap();
        // SAFETY: the temporary directory is private to this test, and nothing
        // modifies or truncates its files while the buffers below are alive.
        let store = unsafe { LocalStore::new_memory_mapped(dir.path()) };
        let whole = store.get("k").unwrap().unwrap();
        assert_eq!(whole.as_slice(), &value[..]);
        assert_eq!(whole.as_ptr() as usize % 4096, 0, "not a fresh mapping");
        let part = store.get_range("k", 4096..4100).unwrap().unwrap();
        assert_eq!(part.as_slice(), &value[4096..4100]);
        assert_eq!(part.as_ptr() as usize % 4096, 0, "not a slice of a mapping");
    }

    /// A long listing (a column's chunk files) gives every file once,
    /// sorted, each with the version the file's own status gives; a file
    /// rewritten since lists with a new version.
    #[test]
    fn a_long_listing_gives_each_files_version() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        let keys: Vec<String> = (0..150).map(|i| format!("a/c/{i}")).collect();
        for key in &keys {
            store.set(key, key.as_bytes()).unwrap();
        }
        store.set("b/other", b"x").unwrap();
        let listed = store.list_versions("a/").unwrap().unwrap();
        let mut sorted = keys.clone();
        sorted.sort();
        let names: Vec<&String> = listed.iter().map(|(k, _)| k).collect();
        assert_eq!(names, sorted.iter().collect::<Vec<_>>());
        for (key, version) in &listed {
            assert_eq!(
                store.version(key).unwrap(),
                Some(Some(version.clone())),
                "{key}"
            );
        }
        let before = listed
            .iter()
            .find(|(k, _)| k == "a/c/77")
            .unwrap()
            .1
            .clone();
        store.set("a/c/77", b"rewritten").unwrap();
        let listed = store.list_versions("a/").unwrap().unwrap();
        let after = &listed.iter().find(|(k, _)| k == "a/c/77").unwrap().1;
        assert_ne!(*after, before);
        assert_eq!(listed.len(), 150);
    }

    /// A key that a symbolic link leads outside the root is refused, on the
    /// first read and on later ones; a link that stays inside is followed; a
    /// write through a linked directory that leaves the root is refused too; a
    /// root that is a link pointed elsewhere while the store is open is
    /// followed to its new target.
    #[cfg(unix)]
    #[test]
    fn symbolic_links_out_of_the_root_are_refused() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"no").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path());
        store.set("a/inside", b"yes").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("a/out")).unwrap();
        symlink(dir.path().join("a/inside"), dir.path().join("a/in")).unwrap();
        symlink(outside.path(), dir.path().join("away")).unwrap();
        // Relative links: one that stays inside, one that climbs out.
        symlink("inside", dir.path().join("a/next")).unwrap();
        let climb = pathdiff(&outside.path().join("secret"), &dir.path().join("a"));
        symlink(climb, dir.path().join("a/up")).unwrap();
        for _ in 0..2 {
            assert_eq!(store.get("a/in").unwrap().unwrap().as_slice(), b"yes");
            assert_eq!(store.get("a/next").unwrap().unwrap().as_slice(), b"yes");
            assert!(matches!(store.get("a/up"), Err(Error::InvalidKey { .. })));
            assert!(matches!(store.get("a/out"), Err(Error::InvalidKey { .. })));
            assert!(matches!(
                store.get_range("a/out", 0..1),
                Err(Error::InvalidKey { .. })
            ));
            assert!(matches!(
                store.get("away/secret"),
                Err(Error::InvalidKey { .. })
            ));
        }
        assert!(matches!(
            store.set("away/new", b"x"),
            Err(Error::InvalidKey { .. })
        ));
        assert!(!outside.path().join("new").exists());
        // Nor are directories made outside on the way to the refusal.
        assert!(matches!(
            store.set("away/sub/new", b"x"),
            Err(Error::InvalidKey { .. })
        ));
        assert!(!outside.path().join("sub").exists());
        // A relative root resolves as its keys do.
        let cwd = std::env::current_dir().unwrap();
        let relative = pathdiff(dir.path(), &cwd);
        let store = LocalStore::new(relative);
        assert_eq!(store.get("a/in").unwrap().unwrap().as_slice(), b"yes");
        assert!(matches!(store.get("a/out"), Err(Error::InvalidKey { .. })));
        // A root that is a link, repointed (a deployment's `current`).
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(first.path().join("k"), b"1").unwrap();
        std::fs::write(second.path().join("k"), b"2").unwrap();
        let current = outside.path().join("current");
        symlink(first.path(), &current).unwrap();
        let store = LocalStore::new(&current);
        assert_eq!(store.get("k").unwrap().unwrap().as_slice(), b"1");
        std::fs::remove_file(&current).unwrap();
        symlink(second.path(), &current).unwrap();
        assert_eq!(store.get("k").unwrap().unwrap().as_slice(), b"2");
    }

    /// `path` relative to `base` (both absolute), through `..`s.
    fn pathdiff(path: &Path, base: &Path) -> PathBuf {
        let (path, base): (Vec<_>, Vec<_>) =
            (path.components().collect(), base.components().collect());
        let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
        let mut out: PathBuf = base[common..].iter().map(|_| "..").collect();
        out.extend(&path[common..]);
        out
    }
}
