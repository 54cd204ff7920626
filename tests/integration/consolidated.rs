//! Consolidated metadata: stores zarr-python (under xarray) consolidated open with
//! one metadata request and no listing, and read as without it; zarrow's own
//! groups carry consolidated metadata that reads the same way.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_data::ArrayData;
use zarrow::store::Consolidated;
use zarrow::write::{WriteOptions, write_batches};
use zarrow::{LocalStore, MemoryStore, Store, ZarrGroup};

use crate::common::{Observed, testdata};

/// Each column's values (as Arrow data, without schema metadata): the table, or
/// (`gridded`) the long table.
fn values(group: &ZarrGroup, gridded: bool) -> Vec<ArrayData> {
    let batches: Vec<RecordBatch> = if gridded {
        group
            .long_table(None)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    } else {
        group
            .reader()
            .build()
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    };
    batches
        .iter()
        .flat_map(|b| b.columns().iter().map(|c| c.to_data()))
        .collect()
}

#[test]
fn consolidated_stores_open_without_listing_and_read_the_same() {
    // Written by xarray 2026.9.0 on zarr-python 3.1.6: v2 with .zmetadata, v3 with
    // consolidated_metadata in the root zarr.json. (A gridded dataset has N-d
    // children, not columns: its 1-D coordinates are the columns compared.)
    for (name, metadata_reads) in [("xr_ts_v2.zarr", 2), ("xr_grid_v3.zarr", 1)] {
        let dir = testdata().join("conventions/stores").join(name);
        let plain = ZarrGroup::open(Arc::new(LocalStore::new(&dir)), "").unwrap();
        let observed = Observed::new(Arc::new(LocalStore::new(&dir)));
        let store = Consolidated::open(observed.clone()).unwrap();
        let group = ZarrGroup::open(store, "").unwrap();
        let reads = observed.take();
        // v2 asks for zarr.json (absent) before .zmetadata.
        assert_eq!(reads.len(), metadata_reads, "{name}: {reads:?}");
        assert_eq!(observed.take_lists(), 0, "{name}: listed");
        let names = |g: &ZarrGroup| -> Vec<String> {
            g.columns().iter().map(|c| c.name().to_string()).collect()
        };
        assert_eq!(names(&group), names(&plain), "{name}");
        assert_eq!(group.children().len(), plain.children().len(), "{name}");
        let gridded = name.contains("grid");
        assert_eq!(values(&group, gridded), values(&plain, gridded), "{name}");
        // Only chunks after the open.
        assert!(
            observed
                .take()
                .iter()
                .all(|(k, _)| !k.ends_with("zarr.json") && !k.ends_with(".zarray")),
            "{name}"
        );
    }
}

#[test]
fn zarrow_groups_are_written_consolidated() {
    for format in [2u8, 3] {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let src = ZarrGroup::open(
            Arc::new(LocalStore::new(
                testdata().join("stores/obs.zarr").as_path(),
            )),
            "",
        )
        .unwrap();
        let reader = src.reader().build().unwrap();
        let options = WriteOptions {
            zarr_format: format,
            ..WriteOptions::default()
        };
        write_batches(reader, inner.clone(), "", options).unwrap();
        let observed = Observed::new(inner);
        let group = ZarrGroup::open(Consolidated::open(observed.clone()).unwrap(), "").unwrap();
        assert_eq!(observed.take_lists(), 0, "v{format}");
        assert_eq!(group.columns().len(), src.columns().len(), "v{format}");
        assert_eq!(values(&group, false), values(&src, false), "v{format}");
    }
}

#[test]
fn the_root_document_is_read_once_without_consolidated_metadata() {
    // As the CLI opens a node: the store, the node's kind, then the node.
    for name in ["v3_int32.zarr", "v2_i8.zarr"] {
        let observed = Observed::new(Arc::new(LocalStore::new(
            testdata().join("stores").join(name).as_path(),
        )));
        let store = Consolidated::open(observed.clone()).unwrap();
        zarrow::read_node(store.as_ref(), "").unwrap();
        let array = zarrow::ZarrArray::open(store.clone(), "").unwrap();
        let metadata_reads: Vec<String> = observed
            .take()
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.ends_with("zarr.json") || k.starts_with(".z"))
            .collect();
        // zarr.json once (absent for v2; then .zmetadata, absent too), then v2's
        // .zarray and .zattrs once: the store remembers every document it read,
        // although the node is read twice.
        let want: &[&str] = if name.starts_with("v3") {
            &["zarr.json"]
        } else {
            &["zarr.json", ".zmetadata", ".zarray", ".zattrs"]
        };
        assert_eq!(metadata_reads, want, "{name}");
        assert_eq!(array.read_all().unwrap().len() as u64, array.len());
    }
}
