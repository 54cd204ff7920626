//! numpy datetime64 / timedelta64, float16 and numcodecs delta: read as zarr-python
//! 3.1.6 wrote them (testdata/stores), refused with the unit named where zarrow
//! cannot, and written in the form zarr-python writes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, TimestampMillisecondType};
use arrow_array::{
    Array, ArrayRef, Date32Array, DurationMicrosecondArray, Float16Array, RecordBatch,
    RecordBatchIterator, TimestampMillisecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema, TimeUnit};
use serde_json::{Value as Json, json};
use zarrow::write::{NullPolicy, WriteOptions, write_array, write_batches};
use zarrow::{Error, LocalStore, MemoryStore, Store, ZarrArray, ZarrGroup};

use crate::common::{column, read_ipc, testdata, values};

fn golden(case: &str) -> (ZarrArray, ArrayRef) {
    let store = Arc::new(LocalStore::new(
        testdata().join("stores").join(format!("{case}.zarr")),
    ));
    let array = ZarrArray::open(store, "").unwrap();
    let expected = column(
        &read_ipc(&testdata().join("expected").join(format!("{case}.arrow"))),
        case,
    );
    (array, expected)
}

fn golden_json(case: &str, document: &str) -> Json {
    let path = testdata()
        .join("stores")
        .join(format!("{case}.zarr"))
        .join(document);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn nat_reads_as_null_and_a_missing_chunk_as_nat() {
    let (array, expected) = golden("v3_datetime64_ns_nat");
    assert_eq!(
        array.arrow_type(),
        ArrowType::Timestamp(TimeUnit::Nanosecond, None)
    );
    assert!(array.field().is_nullable());
    let got = array.read_all().unwrap();
    // zarr-python's NaT positions (pyarrow: NaT -> null): 1, 5, 8, 9 and the
    // absent chunk c/3 (9..11).
    let nulls: Vec<usize> = (0..got.len()).filter(|&i| got.is_null(i)).collect();
    assert_eq!(nulls, vec![1, 5, 8, 9, 10]);
    assert_eq!(values(got.as_ref()), values(expected.as_ref()));
    // The extremes numpy's ns range allows come through exactly.
    let ts = got.as_primitive::<arrow_array::types::TimestampNanosecondType>();
    assert_eq!(ts.value(4), i64::MAX);
    assert_eq!(ts.value(3), i64::MIN + 1);
}

#[test]
fn days_are_date32_and_big_endian_times_swap() {
    let (array, expected) = golden("v2_datetime64_D");
    assert_eq!(array.arrow_type(), ArrowType::Date32);
    let got = array.read_all().unwrap();
    assert_eq!(values(got.as_ref()), values(expected.as_ref()));
    assert_eq!(got.null_count(), 1);
    let (array, expected) = golden("v2_datetime64_ms_big_endian");
    let got = array.read_all().unwrap();
    assert_eq!(got.data_type(), expected.data_type());
    assert_eq!(
        got.as_primitive::<TimestampMillisecondType>().value(0),
        1_000_000_000_123
    );
    assert_eq!(values(got.as_ref()), values(expected.as_ref()));
}

#[test]
fn float16_and_delta_read_as_zarr_python_reads_them() {
    let (array, expected) = golden("v3_float16");
    assert_eq!(array.arrow_type(), ArrowType::Float16);
    let got = array.read_all().unwrap();
    assert_eq!(values(got.as_ref()), values(expected.as_ref()));
    assert_eq!(
        got.as_primitive::<Float16Type>().value(6),
        half::f16::from_f32(65504.0)
    );
    for case in ["v2_int32_delta", "v3_int64_numcodecs_delta"] {
        let (array, expected) = golden(case);
        let got = array.read_all().unwrap();
        assert_eq!(values(got.as_ref()), values(expected.as_ref()), "{case}");
    }
}

/// A v3 array document for `data_type`, as zarr-python writes it.
fn v3_doc(data_type: Json) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [2], "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": i64::MIN,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
    }))
    .unwrap()
}

#[test]
fn other_units_and_scales_are_refused_by_name() {
    for (data_type, named) in [
        (
            json!({"name": "numpy.datetime64", "configuration": {"unit": "h", "scale_factor": 1}}),
            "'h'",
        ),
        (
            json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 10}}),
            "'10s'",
        ),
        (
            json!({"name": "numpy.timedelta64", "configuration": {"unit": "D", "scale_factor": 1}}),
            "'D'",
        ),
    ] {
        let store = Arc::new(MemoryStore::new());
        store.set("zarr.json", &v3_doc(data_type)).unwrap();
        match ZarrArray::open(store, "") {
            Err(e @ Error::UnsupportedDataType { .. }) => {
                let message = e.to_string();
                assert!(message.contains(named), "{message}");
                assert!(message.contains("zarrow reads s, ms, us"), "{message}");
            }
            other => panic!("{named}: {other:?}"),
        }
    }
    // v2: `<M8[h]`, and a delta filter whose dtype is not the array's.
    let store = Arc::new(MemoryStore::new());
    let zarray = json!({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<M8[h]",
        "compressor": null, "fill_value": null, "order": "C", "filters": null});
    store
        .set(".zarray", &serde_json::to_vec(&zarray).unwrap())
        .unwrap();
    let message = ZarrArray::open(store, "").unwrap_err().to_string();
    assert!(message.contains("'h'"), "{message}");
    let store = Arc::new(MemoryStore::new());
    let zarray = json!({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4",
        "compressor": null, "fill_value": 0, "order": "C",
        "filters": [{"id": "delta", "dtype": "<i8", "astype": "<i8"}]});
    store
        .set(".zarray", &serde_json::to_vec(&zarray).unwrap())
        .unwrap();
    let message = ZarrArray::open(store, "").unwrap_err().to_string();
    assert!(message.contains("\"<i8\""), "{message}");
}

#[test]
fn times_write_as_zarr_python_writes_them_and_keep_their_timezone() {
    let ts: ArrayRef = Arc::new(
        TimestampMillisecondArray::from(vec![Some(1_000), None, Some(-5)])
            .with_timezone("Europe/Paris"),
    );
    let days: ArrayRef = Arc::new(Date32Array::from(vec![Some(18_321), Some(-1), None]));
    let dur: ArrayRef = Arc::new(DurationMicrosecondArray::from(vec![
        None,
        Some(7),
        Some(-7),
    ]));
    let half: ArrayRef = Arc::new(Float16Array::from(vec![
        half::f16::NAN,
        half::f16::from_f32(1.5),
        half::f16::NEG_INFINITY,
    ]));
    let schema = Arc::new(Schema::new(vec![
        Field::new("ts", ts.data_type().clone(), true),
        Field::new("days", ArrowType::Date32, true),
        Field::new("dur", dur.data_type().clone(), true),
        Field::new("half", ArrowType::Float16, false),
    ]));
    let batch = RecordBatch::try_new(schema, vec![ts, days, dur, half]).unwrap();
    for format in [3u8, 2] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        // Nulls of times are NaT, so the default policy (refuse nulls) accepts them.
        let options = WriteOptions {
            zarr_format: format,
            nulls: NullPolicy::Error,
            ..WriteOptions::default()
        };
        let reader = RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
        write_batches(reader, store.clone(), "t", options).unwrap();
        let group = ZarrGroup::open(store.clone(), "t").unwrap();
        let back: Vec<RecordBatch> = group
            .reader()
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for name in ["ts", "days", "dur", "half"] {
            let got = column(&back, name);
            let want = batch.column_by_name(name).unwrap();
            assert_eq!(got.data_type(), want.data_type(), "v{format} {name}");
            assert_eq!(
                values(got.as_ref()),
                values(want.as_ref()),
                "v{format} {name}"
            );
        }
        // The metadata takes zarr-python's form (from its golden stores).
        if format == 3 {
            let doc: Json =
                serde_json::from_slice(&store.get("t/ts/zarr.json").unwrap().unwrap()).unwrap();
            let zp = golden_json("v3_timedelta64_ms", "zarr.json");
            assert_eq!(
                doc["data_type"]["name"], "numpy.datetime64",
                "{}",
                doc["data_type"]
            );
            assert_eq!(doc["data_type"]["configuration"]["unit"], "ms");
            assert_eq!(
                doc["data_type"]["configuration"]["scale_factor"],
                zp["data_type"]["configuration"]["scale_factor"]
            );
            assert_eq!(doc["fill_value"], zp["fill_value"]);
            assert_eq!(doc["attributes"]["zarrow"]["timezone"], "Europe/Paris");
        } else {
            let doc: Json =
                serde_json::from_slice(&store.get("t/days/.zarray").unwrap().unwrap()).unwrap();
            assert_eq!(
                doc["dtype"],
                golden_json("v2_datetime64_D", ".zarray")["dtype"]
            );
            let doc: Json =
                serde_json::from_slice(&store.get("t/half/.zarray").unwrap().unwrap()).unwrap();
            assert_eq!(doc["dtype"], golden_json("v2_float16", ".zarray")["dtype"]);
        }
    }
    // One array alone: Date64 is numpy's datetime64[ms].
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let d64: ArrayRef = Arc::new(arrow_array::Date64Array::from(vec![86_400_000, 0]));
    write_array(store.clone(), "d", &d64, WriteOptions::default()).unwrap();
    let back = ZarrArray::open(store, "d").unwrap();
    assert_eq!(
        back.arrow_type(),
        ArrowType::Timestamp(TimeUnit::Millisecond, None)
    );
}
