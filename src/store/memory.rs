//! An in-memory store, for tests and for building hierarchies before writing them.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use arrow_buffer::Buffer;

use super::{
    ByteRange, RangeRead, Store, WriteLock, check_range, slice_ranges, validate_key, wait_for_lock,
};
use crate::error::Result;

/// A [`Store`] that keeps every value in memory, in a sorted map.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: RwLock<BTreeMap<String, Buffer>>,
    /// Each key's version: the count of stores when it was last set.
    versions: Mutex<BTreeMap<String, u64>>,
    stores: std::sync::atomic::AtomicU64,
    /// Whether a writer holds the store (see [`Store::lock`]).
    held: Arc<Mutex<bool>>,
}

/// A [`MemoryStore`]'s writer lock, given back when dropped.
struct Held(Arc<Mutex<bool>>);

impl Drop for Held {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = false;
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Buffer>> {
        // A panic while holding the lock cannot leave the map half-updated (every
        // write is a single insert or remove), so a poisoned lock is still usable.
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Buffer>> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }

    fn versions(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.versions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn lock(&self, wait: Duration) -> Result<Option<WriteLock>> {
        wait_for_lock("a memory store", "its writer lock", wait, || {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            Ok((!*held).then(|| {
                *held = true;
                Held(self.held.clone())
            }))
        })
        .map(|held| Some(WriteLock::new("a memory store's writer lock", held)))
    }

    fn get(&self, key: &str) -> Result<Option<Buffer>> {
        validate_key(key)?;
        Ok(self.read().get(key).cloned())
    }

    fn value_len(&self, key: &str) -> Result<Option<u64>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|v| v.len() as u64))
    }

    /// Slices of the stored value: no copy.
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> Result<Option<RangeRead>> {
        validate_key(key)?;
        let Some(value) = self.read().get(key).cloned() else {
            return Ok(None);
        };
        slice_ranges(key, ranges, &value).map(Some)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> Result<Option<Buffer>> {
        validate_key(key)?;
        let Some(value) = self.read().get(key).cloned() else {
            return Ok(None);
        };
        check_range(key, &range, value.len() as u64)?;
        Ok(Some(value.slice_with_length(
            range.start as usize,
            (range.end - range.start) as usize,
        )))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        validate_key(key)?;
        let mut map = self.write();
        map.insert(key.to_string(), Buffer::from_slice_ref(value));
        let version = self
            .stores
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.versions().insert(key.to_string(), version);
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let mut map = self.write();
        map.remove(key);
        self.versions().remove(key);
        Ok(())
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(self
            .read()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<(String, String)>>> {
        let map = self.read();
        let versions = self.versions();
        Ok(Some(
            map.range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| {
                    let version = versions.get(k).copied().unwrap_or_default();
                    (k.clone(), format!("{}:{version}", v.len()))
                })
                .collect(),
        ))
    }

    fn list_children(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.trim_matches('/');
        let dir = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        let mut out: Vec<String> = Vec::new();
        for key in self.list_prefix(&dir)? {
            if let Some((child, _rest)) = key[dir.len()..].split_once('/')
                && out.last().map(String::as_str) != Some(child)
            {
                out.push(child.to_string());
            }
        }
        out.dedup();
        Ok(out)
    }
}
