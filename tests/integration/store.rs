//! One conformance test, run against every store backend.

use zarrow::{Error, LocalStore, MemoryStore, Store, StoreExt};

use zarrow::store::ByteRange;

fn conformance(store: &dyn Store) {
    assert!(store.get("a/zarr.json").unwrap().is_none());
    store.set("a/zarr.json", b"{}").unwrap();
    store.set("a/c/0", b"0123456789").unwrap();
    store.set("a/c/1", b"xyz").unwrap();
    store.set("b/zarr.json", b"{}").unwrap();
    store.set("top", b"t").unwrap();
    assert_eq!(
        store.get("a/c/0").unwrap().unwrap().as_slice(),
        b"0123456789"
    );
    assert_eq!(
        store.get_range("a/c/0", 2..5).unwrap().unwrap().as_slice(),
        b"234"
    );
    assert_eq!(
        store
            .get_range("a/c/0", 10..10)
            .unwrap()
            .unwrap()
            .as_slice(),
        b""
    );
    assert!(store.get_range("a/c/0", 5..11).is_err());
    assert!(store.get_range("missing", 0..1).unwrap().is_none());
    // Several ranges of one value, in the order asked; a suffix; the value's length.
    let read = store
        .get_ranges(
            "a/c/0",
            &[
                ByteRange::Bounded(7..9),
                ByteRange::Suffix(3),
                ByteRange::Bounded(0..2),
                ByteRange::Suffix(99),
                ByteRange::Bounded(4..4),
            ],
        )
        .unwrap()
        .unwrap();
    let parts: Vec<&[u8]> = read.buffers.iter().map(|b| b.as_slice()).collect();
    assert_eq!(parts, [&b"78"[..], b"789", b"01", b"0123456789", b""]);
    assert_eq!(read.value_len, 10);
    assert_eq!(store.value_len("a/c/1").unwrap(), Some(3));
    assert_eq!(store.value_len("missing").unwrap(), None);
    assert!(
        store
            .get_ranges("missing", &[ByteRange::Suffix(1)])
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_ranges("a/c/0", &[ByteRange::Bounded(9..11)])
            .is_err()
    );
    assert_eq!(store.get_bounded("a/c/0", 10).unwrap().unwrap().len(), 10);
    assert!(matches!(
        store.get_bounded("a/c/0", 9),
        Err(Error::ValueTooLarge {
            size: 10,
            limit: 9,
            ..
        })
    ));
    assert!(store.get_bounded("missing", 0).unwrap().is_none());
    assert!(store.exists("a/c/0").unwrap() && !store.exists("missing").unwrap());
    // Overwrite replaces the whole value.
    store.set("a/c/1", b"z").unwrap();
    assert_eq!(store.get("a/c/1").unwrap().unwrap().as_slice(), b"z");
    assert_eq!(
        store.list_prefix("a/").unwrap(),
        vec!["a/c/0", "a/c/1", "a/zarr.json"]
    );
    assert_eq!(store.list_prefix("a/c/").unwrap(), vec!["a/c/0", "a/c/1"]);
    assert_eq!(store.list_prefix("").unwrap().len(), 5);
    assert_eq!(store.list_children("").unwrap(), vec!["a", "b"]);
    assert_eq!(store.list_children("a").unwrap(), vec!["c"]);
    assert!(store.list_children("nothing").unwrap().is_empty());
    store.delete("a/c/1").unwrap();
    store.delete("a/c/1").unwrap();
    assert!(store.get("a/c/1").unwrap().is_none());
    // A directory is not a value.
    assert!(store.get("a/c").unwrap().is_none());
    for bad in ["../escape", "/etc/passwd", "a/../../x", "a//b", ""] {
        assert!(
            matches!(store.get(bad), Err(Error::InvalidKey { .. })),
            "get {bad:?}"
        );
        assert!(
            matches!(store.set(bad, b"x"), Err(Error::InvalidKey { .. })),
            "set {bad:?}"
        );
        assert!(
            matches!(store.delete(bad), Err(Error::InvalidKey { .. })),
            "delete {bad:?}"
        );
    }
}

#[test]
fn memory_store_conforms() {
    conformance(&MemoryStore::new());
}

/// A store with only the required methods: the trait's defaults (`value_len`,
/// coalesced `get_ranges`) must conform too.
#[derive(Debug, Default)]
struct RequiredOnly(MemoryStore);

impl Store for RequiredOnly {
    fn get(&self, key: &str) -> zarrow::Result<Option<arrow_buffer::Buffer>> {
        self.0.get(key)
    }
    fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> zarrow::Result<Option<arrow_buffer::Buffer>> {
        self.0.get_range(key, range)
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrow::Result<()> {
        self.0.set(key, value)
    }
    fn delete(&self, key: &str) -> zarrow::Result<()> {
        self.0.delete(key)
    }
    fn list_prefix(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        self.0.list_prefix(prefix)
    }
    fn list_children(&self, prefix: &str) -> zarrow::Result<Vec<String>> {
        self.0.list_children(prefix)
    }
}

#[test]
fn the_default_methods_conform() {
    conformance(&RequiredOnly::default());
}

#[test]
fn local_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(&LocalStore::new(dir.path()));
    // Nothing was written outside the root, and no temporary files were left.
    let parent_entries = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(parent_entries, 3, "a, b, top");
}

#[test]
fn memory_mapped_local_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: the temporary directory is private to this test; the conformance
    // run changes its files only through the store, by rename.
    conformance(&unsafe { LocalStore::new_memory_mapped(dir.path()) });
}

/// A mapped value outlives a replacement of its file (zarrow writes by rename),
/// and an empty file maps to an empty buffer.
#[test]
fn memory_mapped_values_survive_a_rewrite_by_rename() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: the temporary directory is private to this test, and its files are
    // replaced only by the store's own rename (which the contract allows).
    let store = unsafe { LocalStore::new_memory_mapped(dir.path()) };
    store.set("k", b"old value").unwrap();
    store.set("empty", b"").unwrap();
    let old = store.get("k").unwrap().unwrap();
    let part = store.get_range("k", 4..9).unwrap().unwrap();
    store.set("k", b"new").unwrap();
    assert_eq!(old.as_slice(), b"old value");
    assert_eq!(part.as_slice(), b"value");
    assert_eq!(store.get("k").unwrap().unwrap().as_slice(), b"new");
    assert!(store.get("empty").unwrap().unwrap().is_empty());
}

#[test]
fn local_store_buffers_are_aligned_for_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path());
    // u64 offsets (zarrs.vlen, ZEP0007 large types) are used in place when aligned.
    for size in [1, 100, 5000, 3 << 20] {
        store.set("k", &vec![1u8; size]).unwrap();
        let b = store.get("k").unwrap().unwrap();
        assert_eq!(b.len(), size);
        assert_eq!(b.as_ptr() as usize % 8, 0, "{size} bytes");
    }
}
