//! One conformance suite for every store backend: what zarrow's readers and
//! writers rely on a store for, checked alike on each.
//!
//! - In process: [`LocalStore`] (read and memory-mapped), [`MemoryStore`], and
//!   object_store's `InMemory` and `LocalFileSystem` through
//!   [`ObjectStoreBackend`] (sync) and [`ObjectStoreAsync`] (async, on the
//!   test's runtime). [`SyncAsAsync`] runs the async checks over a sync store.
//! - With servers: S3 (moto) and HTTP (read-only: a server cannot list or
//!   take writes). `tests/interop/check_remote.py` starts them on loopback and
//!   runs these tests (`--ignored`) with their addresses in the environment.
//!
//! The expected values are the fixture's bytes, written here; the expected
//! behaviour is the [`Store`] trait's documentation.

use std::sync::Arc;

use arrow_buffer::Buffer;
use zarrow::__private::SyncAsAsync;
use zarrow::store::{AsyncStore, ByteRange, ObjectStoreAsync, ObjectStoreBackend};
use zarrow::{Error, LocalStore, MemoryStore, Store, StoreExt};

/// A value of 1,000 bytes, each its own: a range read in the wrong place shows.
fn long_value() -> Vec<u8> {
    (0..1000u32).map(|i| (i * 7 % 251) as u8).collect()
}

/// The fixture: keys and values (an empty value among them).
fn fixture() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("a/zarr.json", br#"{"zarr_format": 3}"#.to_vec()),
        ("a/c/0", long_value()),
        ("a/c/1", Vec::new()),
        ("b/c/0/0", b"0123456789".to_vec()),
        ("top", b"top".to_vec()),
    ]
}

fn write_fixture(store: &dyn Store) {
    for (key, value) in fixture() {
        store.set(key, &value).unwrap();
    }
}

fn bytes(b: Option<Buffer>) -> Option<Vec<u8>> {
    b.map(|b| b.to_vec())
}

/// Reads (and, when `lists`, listings) of the fixture.
fn check_reads(store: &dyn Store, lists: bool) {
    let name = store.location();
    let long = long_value();
    for (key, value) in fixture() {
        assert_eq!(
            bytes(store.get(key).unwrap()),
            Some(value.clone()),
            "{name}: get {key}"
        );
        assert_eq!(
            store.value_len(key).unwrap(),
            Some(value.len() as u64),
            "{name}: len {key}"
        );
        assert!(store.exists(key).unwrap(), "{name}: {key} exists");
    }
    for absent in ["nothing", "a/c/9", "a/zarr.jsonx"] {
        assert_eq!(
            bytes(store.get(absent).unwrap()),
            None,
            "{name}: get {absent}"
        );
        assert_eq!(
            store.value_len(absent).unwrap(),
            None,
            "{name}: len {absent}"
        );
        assert!(!store.exists(absent).unwrap(), "{name}: {absent} is absent");
        assert!(
            store
                .get_ranges(absent, &[ByteRange::Bounded(0..1)])
                .unwrap()
                .is_none(),
            "{name}: ranges of {absent}"
        );
        assert_eq!(
            bytes(store.get_range(absent, 0..1).unwrap()),
            None,
            "{name}: range of {absent}"
        );
    }

    // Bounded reads: at the limit, and over it.
    assert_eq!(
        bytes(store.get_bounded("a/c/0", 1000).unwrap()),
        Some(long.clone())
    );
    assert!(
        matches!(
            store.get_bounded("a/c/0", 999),
            Err(Error::ValueTooLarge {
                size: 1000,
                limit: 999,
                ..
            })
        ),
        "{name}: a value over the bound"
    );
    assert_eq!(bytes(store.get_bounded("absent", 1).unwrap()), None);

    // One range: inside, to the end, empty, past the end.
    assert_eq!(
        bytes(store.get_range("a/c/0", 10..20).unwrap()),
        Some(long[10..20].to_vec())
    );
    assert_eq!(
        bytes(store.get_range("a/c/0", 990..1000).unwrap()),
        Some(long[990..].to_vec())
    );
    assert_eq!(
        bytes(store.get_range("b/c/0/0", 0..0).unwrap()),
        Some(Vec::new())
    );
    assert!(
        store.get_range("a/c/0", 995..1005).is_err(),
        "{name}: a range past the end"
    );

    // Several ranges: in the order asked (not sorted), near ones and far ones,
    // a suffix, a suffix longer than the value.
    let asked = [
        ByteRange::Bounded(500..510),
        ByteRange::Bounded(0..10),
        ByteRange::Bounded(12..40),
        ByteRange::Suffix(16),
        ByteRange::Bounded(999..1000),
    ];
    let read = store.get_ranges("a/c/0", &asked).unwrap().expect("present");
    assert_eq!(read.value_len, 1000, "{name}: the value's length");
    let got: Vec<Vec<u8>> = read.buffers.iter().map(|b| b.to_vec()).collect();
    let want = vec![
        long[500..510].to_vec(),
        long[..10].to_vec(),
        long[12..40].to_vec(),
        long[984..].to_vec(),
        long[999..].to_vec(),
    ];
    assert_eq!(got, want, "{name}: ranges");
    let read = store
        .get_ranges("b/c/0/0", &[ByteRange::Suffix(64)])
        .unwrap()
        .unwrap();
    assert_eq!(
        read.buffers[0].to_vec(),
        b"0123456789",
        "{name}: a suffix longer than the value"
    );
    assert!(
        store
            .get_ranges(
                "a/c/0",
                &[ByteRange::Bounded(0..10), ByteRange::Bounded(990..1001)]
            )
            .is_err(),
        "{name}: ranges past the end"
    );

    // Keys that would leave the store.
    for bad in ["../escape", "a/../../escape", "/absolute"] {
        assert!(store.get(bad).is_err(), "{name}: {bad} is refused");
    }

    if lists {
        let mut all: Vec<&str> = fixture().iter().map(|(k, _)| *k).collect();
        all.sort_unstable();
        assert_eq!(
            store.list_prefix("").unwrap(),
            all,
            "{name}: list everything"
        );
        assert_eq!(
            store.list_prefix("a/").unwrap(),
            ["a/c/0", "a/c/1", "a/zarr.json"],
            "{name}: list a/"
        );
        assert!(store.list_prefix("none/").unwrap().is_empty());
        assert_eq!(
            store.list_children("").unwrap(),
            ["a", "b"],
            "{name}: the root's children"
        );
        assert_eq!(
            store.list_children("a").unwrap(),
            ["c"],
            "{name}: a's children"
        );
        assert_eq!(
            store.list_children("b/c").unwrap(),
            ["0"],
            "{name}: b/c's children"
        );
        assert!(
            store.list_children("top").unwrap().is_empty(),
            "{name}: a value has no children"
        );
    }
}

/// Writes: a new key, a shorter value over a longer one, deletes (of an absent
/// key too). Leaves the fixture as it was.
fn check_writes(store: &dyn Store) {
    let name = store.location();
    store.set("w/new", b"a new value").unwrap();
    assert_eq!(
        bytes(store.get("w/new").unwrap()),
        Some(b"a new value".to_vec())
    );
    store.set("w/new", b"short").unwrap();
    assert_eq!(
        bytes(store.get("w/new").unwrap()),
        Some(b"short".to_vec()),
        "{name}: overwritten"
    );
    assert_eq!(store.value_len("w/new").unwrap(), Some(5));
    store.delete("w/new").unwrap();
    assert_eq!(bytes(store.get("w/new").unwrap()), None, "{name}: deleted");
    store.delete("w/new").unwrap();
    store.delete("never/was").unwrap();
    assert!(
        store.set("../escape", b"x").is_err(),
        "{name}: a write outside the store"
    );
}

/// The same reads through the async form.
async fn check_async(store: &dyn AsyncStore, lists: bool) {
    let name = store.location();
    let long = long_value();
    for (key, value) in fixture() {
        let got = store.get_bounded(key, u64::MAX).await.unwrap();
        assert_eq!(bytes(got), Some(value.clone()), "{name}: async get {key}");
        assert_eq!(
            store.value_len(key).await.unwrap(),
            Some(value.len() as u64)
        );
    }
    assert!(store.get_bounded("nothing", 10).await.unwrap().is_none());
    assert!(store.value_len("nothing").await.unwrap().is_none());
    assert!(matches!(
        store.get_bounded("a/c/0", 999).await,
        Err(Error::ValueTooLarge { .. })
    ));
    let asked = [
        ByteRange::Bounded(500..510),
        ByteRange::Bounded(0..10),
        ByteRange::Suffix(16),
    ];
    let read = store
        .get_ranges("a/c/0", &asked)
        .await
        .unwrap()
        .expect("present");
    assert_eq!(read.value_len, 1000);
    let got: Vec<Vec<u8>> = read.buffers.iter().map(|b| b.to_vec()).collect();
    assert_eq!(
        got,
        [
            long[500..510].to_vec(),
            long[..10].to_vec(),
            long[984..].to_vec()
        ]
    );
    assert!(store.get_ranges("nothing", &asked).await.unwrap().is_none());
    assert!(
        store
            .get_ranges("a/c/0", &[ByteRange::Bounded(990..1001)])
            .await
            .is_err()
    );
    if lists {
        let children = store.list_children("").await.unwrap();
        assert!(
            children == ["a", "b"] || children == ["a", "b", "w"],
            "{name}: async children {children:?}"
        );
        assert_eq!(store.list_prefix("b/").await.unwrap(), ["b/c/0/0"]);
    }
}

async fn check_async_writes(store: &dyn AsyncStore) {
    store
        .put("w/async", bytes::Bytes::from_static(b"v1"))
        .await
        .unwrap();
    store
        .put("w/async", bytes::Bytes::from_static(b"v"))
        .await
        .unwrap();
    assert_eq!(
        bytes(store.get_bounded("w/async", 10).await.unwrap()),
        Some(b"v".to_vec())
    );
    store.delete("w/async").await.unwrap();
    store.delete("w/async").await.unwrap();
    assert!(store.get_bounded("w/async", 10).await.unwrap().is_none());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every check on a writable store that lists, sync then async.
fn conforms(store: Arc<dyn Store>) {
    write_fixture(store.as_ref());
    check_reads(store.as_ref(), true);
    check_writes(store.as_ref());
    let rt = runtime();
    let async_form: Arc<dyn AsyncStore> = match store.remote() {
        Some(remote) => remote.store,
        None => Arc::new(SyncAsAsync::new(store.clone())),
    };
    rt.block_on(async {
        check_async(async_form.as_ref(), true).await;
        check_async_writes(async_form.as_ref()).await;
    });
}

#[test]
fn local() {
    let dir = tempfile::tempdir().unwrap();
    conforms(Arc::new(LocalStore::new(dir.path())));
}

#[test]
fn memory_mapped() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(&LocalStore::new(dir.path()));
    // SAFETY: nothing else writes the temporary directory while it is mapped
    // (the checks' own writes replace files, never change one in place).
    conforms(Arc::new(unsafe {
        LocalStore::new_memory_mapped(dir.path())
    }));
}

#[test]
fn memory() {
    conforms(Arc::new(MemoryStore::new()));
}

#[test]
fn object_store_in_memory() {
    let inner = Arc::new(object_store::memory::InMemory::new());
    conforms(Arc::new(ObjectStoreBackend::over(
        inner,
        "root/t.zarr",
        "memory:///root/t.zarr",
    )));
}

#[test]
fn object_store_local_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let inner =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    conforms(Arc::new(ObjectStoreBackend::over(
        inner,
        "t.zarr",
        "file:///t.zarr",
    )));
}

/// The async form used directly on the caller's runtime (as a DataFusion scan
/// uses it), with no sync adapter anywhere.
#[test]
fn object_store_async_on_the_callers_runtime() {
    let inner = Arc::new(object_store::memory::InMemory::new());
    let store = ObjectStoreAsync::new(inner, "t.zarr", "memory:///t.zarr");
    runtime().block_on(async {
        for (key, value) in fixture() {
            store.put(key, bytes::Bytes::from(value)).await.unwrap();
        }
        check_async(&store, true).await;
        check_async_writes(&store).await;
    });
}

/// The environment variable `name`, which check_remote.py sets.
fn server(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: tests/interop/check_remote.py runs this test with its servers")
    })
}

/// S3 (moto): check_remote.py sets `ZARROW_CONFORMANCE_S3` to a bucket URL and
/// the AWS variables to its moto server.
#[test]
#[ignore = "needs an S3 server: tests/interop/check_remote.py runs it"]
fn s3() {
    let url = format!(
        "{}/conformance-{}",
        server("ZARROW_CONFORMANCE_S3"),
        std::process::id()
    );
    let store = zarrow::Stores::default()
        .open(&zarrow::Location::parse(&url).unwrap())
        .unwrap();
    conforms(store);
}

/// HTTP: check_remote.py serves directory `ZARROW_CONFORMANCE_HTTP_DIR` at
/// `ZARROW_CONFORMANCE_HTTP`; the fixture is written to the directory and read
/// over HTTP (which cannot list or write).
#[test]
#[ignore = "needs an HTTP server: tests/interop/check_remote.py runs it"]
fn http() {
    let dir = server("ZARROW_CONFORMANCE_HTTP_DIR");
    let url = server("ZARROW_CONFORMANCE_HTTP");
    let sub = format!("conformance-{}", std::process::id());
    write_fixture(&LocalStore::new(std::path::Path::new(&dir).join(&sub)));
    let url = format!("{}/{sub}", url.trim_end_matches('/'));
    let store = zarrow::Stores::default()
        .open(&zarrow::Location::parse(&url).unwrap())
        .unwrap();
    check_reads(store.as_ref(), false);
    let remote = store.remote().expect("an HTTP store has an async form");
    runtime().block_on(check_async(remote.store.as_ref(), false));
    // It refuses writes with an error (never a silent no-op).
    assert!(
        store.set("w/new", b"x").is_err(),
        "a write to an HTTP server"
    );
}
