//! Durable outputs without the wait at the end.
//!
//! An output is synced before it appears (its file, then the directories that
//! name it), so a crash or a power loss leaves the old output or the new one. A
//! sync that finds the whole output still dirty waits for all of it to reach the
//! disk, after the last byte is written. On Linux the kernel is asked instead to
//! start writing each part back as soon as it is written
//! (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, as databases do), so that the
//! writeback runs while zarrow is still decoding and the final sync waits only for
//! the tail. Elsewhere the final sync does it all.

use std::fs::File;
#[cfg(feature = "convert")]
use std::io;
#[cfg(feature = "convert")]
use std::io::Write;
#[cfg(feature = "convert")]
use std::path::Path;

/// How many bytes [`WritebackFile`] lets accumulate before it starts their
/// writeback.
#[cfg(feature = "convert")]
const STEP: u64 = 4 << 20;

/// Ask the kernel to start writing `file[offset..offset + len]` back to the disk,
/// without waiting for it (a hint: an error is ignored, as the final sync reports
/// what matters). `len` 0 means to the end of the file.
pub(crate) fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: `file` is an open file whose descriptor outlives the call;
        // sync_file_range reads no memory of ours. SYNC_FILE_RANGE_WRITE only
        // starts the writeback of dirty pages in the range and returns.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

/// A file written front to back (an IPC, Parquet, JSON or CSV output) whose
/// writeback starts every 4 MiB; its `sync` makes it durable.
#[cfg(feature = "convert")]
#[derive(Debug)]
pub struct WritebackFile {
    file: File,
    written: u64,
    /// Where the bytes not yet handed to writeback start.
    started: u64,
}

#[cfg(feature = "convert")]
impl WritebackFile {
    /// `file`, written from its start.
    pub(crate) fn new(file: File) -> Self {
        Self {
            file,
            written: 0,
            started: 0,
        }
    }

    /// Start the writeback of the rest, then wait for the whole file (data and
    /// metadata) to be on the disk.
    ///
    /// # Errors
    /// The sync's.
    pub(crate) fn sync(mut self) -> io::Result<File> {
        self.start_rest();
        self.file.sync_all()?;
        Ok(self.file)
    }

    fn start_rest(&mut self) {
        if self.written > self.started {
            start_writeback(&self.file, self.started, self.written - self.started);
            self.started = self.written;
        }
    }
}

#[cfg(feature = "convert")]
impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= STEP {
            self.start_rest();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Sync every file and directory under `dir` and `dir` itself, each directory
/// after what it names: a tree written with [`start_writeback`] (a Zarr store
/// written beside its destination) made durable before it is moved into place.
///
/// # Errors
/// Listing or syncing an entry, with its path.
#[cfg(feature = "convert")]
pub(crate) fn sync_tree(dir: &Path) -> Result<(), (std::path::PathBuf, io::Error)> {
    let entries = std::fs::read_dir(dir).map_err(|e| (dir.to_path_buf(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| (dir.to_path_buf(), e))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| (path.clone(), e))?;
        if kind.is_dir() {
            sync_tree(&path)?;
        } else if kind.is_file() {
            // fsync through a read-only descriptor syncs the file's data too.
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| (path.clone(), e))?;
        }
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| (dir.to_path_buf(), e))
}

#[cfg(all(test, feature = "convert"))]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_writeback_file_keeps_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut out = WritebackFile::new(File::create(&path).unwrap());
        // Pieces that straddle the writeback steps.
        let piece: Vec<u8> = (0..=255u8).cycle().take(1_000_003).collect();
        for _ in 0..12 {
            out.write_all(&piece).unwrap();
        }
        assert_eq!(out.written, 12_000_036);
        assert!(out.started >= 2 * STEP && out.started < out.written);
        out.sync().unwrap();
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 12_000_036);
        assert!(back.chunks(piece.len()).all(|c| c == piece));
    }

    #[test]
    fn sync_tree_reaches_every_level_and_names_what_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/c")).unwrap();
        std::fs::write(dir.path().join("zarr.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("a/c/0"), b"chunk").unwrap();
        sync_tree(dir.path()).unwrap();
        let missing = dir.path().join("gone");
        let (path, e) = sync_tree(&missing).unwrap_err();
        assert_eq!(path, missing);
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
