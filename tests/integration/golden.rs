//! Every store in testdata/stores/ read by zarrow equals the values its writer
//! (zarr-python, zarrs, or the ZEP0007 draft script) read back, saved by pyarrow in
//! testdata/expected/<case>.arrow.

use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrow_schema::DataType as ArrowType;
use zarrow::{LocalStore, NodeMetadata, ReadOptions, StringType, ZarrArray, ZarrGroup, read_node};

use crate::common::{column, read_ipc, testdata, values};

fn cases() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(testdata().join("stores"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter_map(|n| n.strip_suffix(".zarr").map(str::to_string))
        .collect();
    out.sort();
    assert!(out.len() >= 40, "testdata/stores looks incomplete: {out:?}");
    out
}

/// The Arrow type zarrow produces for `expected` (a pyarrow Utf8/Binary type) under
/// `string_type`: the layout's string or binary type.
fn with_layout(expected: &ArrowType, string_type: StringType) -> ArrowType {
    let (string, binary) = match string_type {
        StringType::Utf8 => (ArrowType::Utf8, ArrowType::Binary),
        StringType::LargeUtf8 => (ArrowType::LargeUtf8, ArrowType::LargeBinary),
        StringType::Utf8View => (ArrowType::Utf8View, ArrowType::BinaryView),
        other => panic!("a string layout the golden test does not know: {other:?}"),
    };
    match expected {
        ArrowType::Utf8 => string,
        ArrowType::Binary => binary,
        other => other.clone(),
    }
}

fn check_case(case: &str, string_type: StringType, memory_map: bool) -> Result<(), String> {
    let expected_path = testdata().join("expected").join(format!("{case}.arrow"));
    if !expected_path.exists() {
        return Err(format!(
            "{case}: no expected file {}",
            expected_path.display()
        ));
    }
    let expected = read_ipc(&expected_path);
    let schema = expected[0].schema();
    let root = testdata().join("stores").join(format!("{case}.zarr"));
    let store = Arc::new(if memory_map {
        // SAFETY: the golden stores are checked in and nothing writes them while
        // the tests run.
        unsafe { LocalStore::new_memory_mapped(root) }
    } else {
        LocalStore::new(root)
    });
    let options = ReadOptions {
        string_type: Some(string_type),
        ..ReadOptions::default()
    };
    let node = read_node(store.as_ref(), "").map_err(|e| format!("{case}: {e}"))?;
    let batches: Vec<_> = match node {
        NodeMetadata::Array(_) => {
            let array = ZarrArray::open_with(store.clone(), "", options)
                .map_err(|e| format!("{case}: {e}"))?
                .with_column_name(case);
            // Whole-array read agrees with the streaming read.
            let whole = array
                .read_all()
                .map_err(|e| format!("{case}: read_all: {e}"))?;
            let exp = column(&expected, case);
            if values(whole.as_ref()) != values(exp.as_ref()) {
                return Err(format!(
                    "{case}: read_all differs:\n got {:?}\n want {:?}",
                    values(whole.as_ref()),
                    values(exp.as_ref())
                ));
            }
            array
                .batches(&zarrow::ExecutionContext::default())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{case}: batches: {e}"))?
        }
        NodeMetadata::Group(_) => {
            let reader = ZarrGroup::open_with(store, "", options)
                .unwrap()
                .reader()
                .build()
                .map_err(|e| format!("{case}: {e}"))?;
            let got_names: Vec<String> = reader
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            let want_names: Vec<String> =
                schema.fields().iter().map(|f| f.name().clone()).collect();
            if got_names != want_names {
                return Err(format!(
                    "{case}: columns {got_names:?}, expected {want_names:?}"
                ));
            }
            reader
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{case}: batches: {e}"))?
        }
    };
    for field in schema.fields() {
        let got = column(&batches, field.name());
        let want = column(&expected, field.name());
        let want_type = with_layout(field.data_type(), string_type);
        if got.data_type() != &want_type {
            return Err(format!(
                "{case}.{}: type {} expected {want_type}",
                field.name(),
                got.data_type()
            ));
        }
        if values(got.as_ref()) != values(want.as_ref()) {
            return Err(format!(
                "{case}.{}: values differ\n got  {:?}\n want {:?}",
                field.name(),
                values(got.as_ref()),
                values(want.as_ref())
            ));
        }
    }
    Ok(())
}

fn run_all(string_type: StringType) {
    run_all_from(string_type, false);
}

fn run_all_from(string_type: StringType, memory_map: bool) {
    let failures: Vec<String> = cases()
        .iter()
        .filter_map(|c| check_case(c, string_type, memory_map).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_store_matches_its_writer_utf8() {
    run_all(StringType::Utf8);
}

/// The memory-mapped store gives the same values (its buffers are views of the
/// files, page-aligned, and sliced for ranges).
#[test]
fn every_store_matches_its_writer_memory_mapped() {
    run_all_from(StringType::Utf8, true);
    run_all_from(StringType::Utf8View, true);
}

#[test]
fn every_store_matches_its_writer_large_utf8() {
    run_all(StringType::LargeUtf8);
}

#[test]
fn every_store_matches_its_writer_utf8_view() {
    run_all(StringType::Utf8View);
}

#[test]
fn element_ranges_match_slices_of_the_whole() {
    for case in [
        "v3_string",
        "v3_string_fill_missing",
        "v3_int32",
        "v2_string_dot",
    ] {
        let store = Arc::new(LocalStore::new(
            testdata().join("stores").join(format!("{case}.zarr")),
        ));
        let array = ZarrArray::open(store, "").unwrap();
        let expected = column(
            &read_ipc(&testdata().join("expected").join(format!("{case}.arrow"))),
            case,
        );
        let want = values(expected.as_ref());
        let n = array.len();
        for start in 0..=n {
            for end in start..=n {
                let got = array.read_range(start..end).unwrap();
                assert_eq!(
                    values(got.as_ref()),
                    want[start as usize..end as usize],
                    "{case} {start}..{end}"
                );
            }
        }
        assert!(array.read_range(0..n + 1).is_err());
    }
}
