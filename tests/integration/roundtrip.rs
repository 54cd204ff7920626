//! Arrow -> Zarr -> Arrow is the identity: for every encoding, Arrow type, Zarr
//! format, compressor and chunk length (1, small, exact, larger than the data),
//! including empty arrays and empty values. Seeded property tests (proptest).

use std::sync::Arc;

use arrow_array::builder::{BinaryViewBuilder, StringViewBuilder};
use arrow_array::*;
use arrow_schema::{DataType as ArrowType, Field, Schema};
use proptest::prelude::*;
use zarrow::write::{
    Compressor, Encoding, NullPolicy, WriteOptions, write_array, write_batches,
    write_group_metadata,
};
use zarrow::{Error, MemoryStore, ReadOptions, ShapeProblem, Store, ZarrArray, ZarrGroup};

const TYPES: [&str; 17] = [
    "utf8",
    "large_utf8",
    "utf8_view",
    "binary",
    "large_binary",
    "binary_view",
    "bool",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f32",
    "f64",
];

/// An array of `kind` built from raw material, so every type gets varied values.
fn build(kind: &str, strings: &[String], numbers: &[u64]) -> ArrayRef {
    let n = numbers.len();
    let text = || strings.iter().cycle().take(n).map(String::as_str);
    let bytes = || strings.iter().cycle().take(n).map(|s| s.as_bytes());
    match kind {
        "utf8" => Arc::new(StringArray::from_iter_values(text())),
        "large_utf8" => Arc::new(LargeStringArray::from_iter_values(text())),
        "utf8_view" => {
            let mut b = StringViewBuilder::new();
            text().for_each(|s| b.append_value(s));
            Arc::new(b.finish())
        }
        "binary" => Arc::new(BinaryArray::from_iter_values(bytes())),
        "large_binary" => Arc::new(LargeBinaryArray::from_iter_values(bytes())),
        "binary_view" => {
            let mut b = BinaryViewBuilder::new();
            bytes().for_each(|s| b.append_value(s));
            Arc::new(b.finish())
        }
        "bool" => Arc::new(BooleanArray::from_iter(
            numbers.iter().map(|v| Some(v % 2 == 1)),
        )),
        "i8" => Arc::new(Int8Array::from_iter_values(
            numbers.iter().map(|&v| v as i8),
        )),
        "i16" => Arc::new(Int16Array::from_iter_values(
            numbers.iter().map(|&v| v as i16),
        )),
        "i32" => Arc::new(Int32Array::from_iter_values(
            numbers.iter().map(|&v| v as i32),
        )),
        "i64" => Arc::new(Int64Array::from_iter_values(
            numbers.iter().map(|&v| v as i64),
        )),
        "u8" => Arc::new(UInt8Array::from_iter_values(
            numbers.iter().map(|&v| v as u8),
        )),
        "u16" => Arc::new(UInt16Array::from_iter_values(
            numbers.iter().map(|&v| v as u16),
        )),
        "u32" => Arc::new(UInt32Array::from_iter_values(
            numbers.iter().map(|&v| v as u32),
        )),
        "u64" => Arc::new(UInt64Array::from_iter_values(numbers.iter().copied())),
        "f32" => Arc::new(Float32Array::from_iter_values(
            numbers.iter().map(|&v| f32::from_bits(v as u32)),
        )),
        "f64" => Arc::new(Float64Array::from_iter_values(
            numbers.iter().map(|&v| f64::from_bits(v)),
        )),
        _ => unreachable!(),
    }
}

fn options_strategy() -> impl Strategy<Value = WriteOptions> {
    (
        prop::sample::select(vec![
            Encoding::Default,
            Encoding::ZarrsVlen,
            Encoding::Zep0007,
        ]),
        prop::sample::select(vec![2u8, 3]),
        prop::sample::select(vec![
            Compressor::Zstd,
            Compressor::Gzip,
            Compressor::Blosc,
            Compressor::None,
        ]),
    )
        .prop_map(|(encoding, format, compressor)| WriteOptions {
            encoding,
            zarr_format: format,
            compressor,
            ..WriteOptions::default()
        })
}

/// Bit-exact equality (so NaNs with equal payloads compare equal).
fn same(a: &dyn Array, b: &dyn Array) -> bool {
    a.data_type() == b.data_type() && a.to_data() == b.to_data()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn arrays_round_trip(
        kind in prop::sample::select(TYPES.to_vec()),
        strings in prop::collection::vec(".{0,12}", 1..6),
        numbers in prop::collection::vec(any::<u64>(), 0..40),
        options in options_strategy(),
        chunk_choice in 0usize..4,
    ) {
        let array = build(kind, &strings, &numbers);
        let n = array.len();
        let chunk_len = [1, 3, n.max(1), n + 5][chunk_choice];
        let options = WriteOptions { chunk_len: Some(chunk_len), ..options };
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let result = write_array(store.clone(), "col", &array, options.clone());
        if options.zarr_format == 2 && options.encoding != Encoding::Default {
            prop_assert!(matches!(&result, Err(Error::OptionConflict { other, .. }) if other == "zarr_format 2"), "v2 has no {:?}", options.encoding);
            return Ok(());
        }
        prop_assert_eq!(result.unwrap(), n as u64);
        let back = ZarrArray::open(store.clone(), "col").unwrap();
        prop_assert_eq!(back.metadata().chunk_shape.clone(), vec![chunk_len as u64]);
        let got = back.read_all().unwrap();
        prop_assert!(same(got.as_ref(), array.as_ref()), "{kind}: {got:?} != {array:?}");
    }

    #[test]
    fn tables_round_trip_in_order(
        kinds in prop::collection::vec(prop::sample::select(TYPES.to_vec()), 1..5),
        strings in prop::collection::vec(".{0,12}", 1..6),
        numbers in prop::collection::vec(any::<u64>(), 0..60),
        batch in 1usize..25,
        chunk_len in 1usize..30,
        options in options_strategy().prop_filter("v3 for non-default encodings", |o| o.zarr_format == 3 || o.encoding == Encoding::Default),
    ) {
        // Columns named in reverse order, so sorted-by-name order would differ.
        let names: Vec<String> = (0..kinds.len()).map(|i| format!("z{}", kinds.len() - i)).collect();
        let columns: Vec<ArrayRef> = kinds.iter().map(|k| build(k, &strings, &numbers)).collect();
        let schema = Arc::new(Schema::new(
            names.iter().zip(&columns).map(|(n, c)| Field::new(n, c.data_type().clone(), false)).collect::<Vec<_>>(),
        ));
        let table = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let batches: Vec<RecordBatch> = (0..table.num_rows().div_ceil(batch))
            .map(|i| table.slice(i * batch, batch.min(table.num_rows() - i * batch)))
            .collect();
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema.clone());
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let rows = write_batches(reader, store.clone(), "table", WriteOptions { chunk_len: Some(chunk_len), ..options }).unwrap();
        prop_assert_eq!(rows, numbers.len() as u64);
        let back: Vec<RecordBatch> = ZarrGroup::open(store, "table").unwrap().reader().build().unwrap().map(|b| b.unwrap()).collect();
        let got_names: Vec<String> = match back.first() {
            Some(b) => b.schema().fields().iter().map(|f| f.name().clone()).collect(),
            None => names.clone(),
        };
        prop_assert_eq!(&got_names, &names);
        for (i, name) in names.iter().enumerate() {
            let parts: Vec<&dyn Array> = back.iter().map(|b| b.column(i).as_ref()).collect();
            let got = if parts.is_empty() { table.column(i).slice(0, 0) } else { arrow_select::concat::concat(&parts).unwrap() };
            prop_assert!(same(got.as_ref(), table.column(i).as_ref()), "{name}");
        }
    }
}

#[test]
fn nulls_are_refused_with_column_and_row() {
    let array: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a"),
        Some("b"),
        None,
        Some("d"),
    ]));
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let err = write_array(store.clone(), "names", &array, WriteOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Nulls { column, row: 2 } if column == "names"),
        "{err}"
    );
    // The library names its own API; the CLI adds its flag (tests/integration/cli.rs).
    assert!(err.to_string().contains("NullPolicy::Fill"));
    // Nothing was written: no metadata, so no array.
    assert!(ZarrArray::open(store.clone(), "names").is_err());

    let ok = write_array(
        store.clone(),
        "names",
        &array,
        WriteOptions {
            nulls: NullPolicy::Fill,
            ..WriteOptions::default()
        },
    );
    assert_eq!(ok.unwrap(), 4);
    let back = ZarrArray::open(store, "names").unwrap().read_all().unwrap();
    assert_eq!(
        back.as_ref(),
        &StringArray::from(vec!["a", "b", "", "d"]) as &dyn Array
    );
}

/// Under `NullPolicy::Fill` a null float becomes NaN (pandas' missing float), not
/// 0.0; other values are kept bit for bit.
#[test]
fn null_floats_fill_as_nan() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let fill = WriteOptions {
        nulls: NullPolicy::Fill,
        ..WriteOptions::default()
    };
    let f64s: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(1.5),
        None,
        Some(0.0),
        Some(-0.0),
    ]));
    write_array(store.clone(), "d", &f64s, fill.clone()).unwrap();
    let back = ZarrArray::open(store.clone(), "d")
        .unwrap()
        .read_all()
        .unwrap();
    let back = back.as_any().downcast_ref::<Float64Array>().unwrap();
    assert_eq!(back.value(0), 1.5);
    assert!(back.value(1).is_nan());
    assert_eq!(back.value(2).to_bits(), 0f64.to_bits());
    assert_eq!(back.value(3).to_bits(), (-0f64).to_bits());
    let f32s: ArrayRef = Arc::new(Float32Array::from(vec![None, Some(2.0)]));
    write_array(store.clone(), "f", &f32s, fill).unwrap();
    let back = ZarrArray::open(store, "f").unwrap().read_all().unwrap();
    let back = back.as_any().downcast_ref::<Float32Array>().unwrap();
    assert!(back.value(0).is_nan());
    assert_eq!(back.value(1), 2.0);
}

#[test]
fn null_rows_count_across_batches() {
    let schema = Arc::new(Schema::new(vec![Field::new("x", ArrowType::Int32, true)]));
    let batches = vec![
        RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int32Array::from(vec![1, 2, 3]))],
        )
        .unwrap(),
        RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int32Array::from(vec![Some(4), None]))],
        )
        .unwrap(),
    ];
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let err = write_batches(
        reader,
        Arc::new(MemoryStore::new()),
        "",
        WriteOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Nulls { row: 4, .. }), "{err}");
}

/// A table's dictionary column is stored as an anndata `categorical` (codes and
/// categories), its Arrow type recorded: read back, its batches are
/// dictionaries of the recorded key type over the categories, each row the
/// value it was written as (batches with dictionaries of their own, null keys,
/// unsigned keys, an all-null column without a value).
#[test]
fn a_tables_dictionary_column_is_a_categorical_read_back_as_its_type() {
    let int8 = |keys: Vec<Option<i8>>, values: Vec<&str>| -> ArrayRef {
        Arc::new(
            DictionaryArray::<arrow_array::types::Int8Type>::try_new(
                Int8Array::from(keys),
                Arc::new(StringArray::from(values)),
            )
            .unwrap(),
        )
    };
    let uint16 = |keys: Vec<Option<u16>>, values: Vec<i64>| -> ArrayRef {
        Arc::new(
            DictionaryArray::<arrow_array::types::UInt16Type>::try_new(
                UInt16Array::from(keys),
                Arc::new(Int64Array::from(values)),
            )
            .unwrap(),
        )
    };
    let empty = |rows: usize| -> ArrayRef {
        Arc::new(
            DictionaryArray::<arrow_array::types::Int32Type>::try_new(
                Int32Array::from(vec![None; rows]),
                Arc::new(LargeStringArray::from(Vec::<&str>::new())),
            )
            .unwrap(),
        )
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new_dictionary("s", ArrowType::Int8, ArrowType::Utf8, true)
            .with_dict_is_ordered(true),
        Field::new_dictionary("n", ArrowType::UInt16, ArrowType::Int64, true),
        Field::new_dictionary("e", ArrowType::Int32, ArrowType::LargeUtf8, true),
    ]));
    let batches = vec![
        RecordBatch::try_new(
            schema.clone(),
            vec![
                int8(
                    vec![Some(1), None, Some(0), Some(1)],
                    vec!["b", "a", "unused"],
                ),
                uint16(vec![Some(0), Some(1), None, Some(0)], vec![70_000, -3]),
                empty(4),
            ],
        )
        .unwrap(),
        RecordBatch::try_new(
            schema.clone(),
            vec![
                int8(vec![Some(0), Some(2), Some(1)], vec!["c", "a", "b"]),
                uint16(vec![Some(1), Some(1), Some(0)], vec![5, -3]),
                empty(3),
            ],
        )
        .unwrap(),
    ];
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let options = WriteOptions {
        chunk_len: Some(3),
        ..WriteOptions::default()
    };
    let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), schema.clone());
    write_batches(reader, store.clone(), "", options).unwrap();
    // Stored as anndata writes a categorical: a group of codes and categories.
    let group: serde_json::Value =
        serde_json::from_slice(&store.get("s/zarr.json").unwrap().unwrap()).unwrap();
    assert_eq!(group["node_type"], "group");
    assert_eq!(group["attributes"]["encoding-type"], "categorical");
    assert_eq!(group["attributes"]["ordered"], true);
    let categories = ZarrArray::open(store.clone(), "s/categories")
        .unwrap()
        .read_all()
        .unwrap();
    // The first batch's dictionary in its order (its unused value kept), then
    // what later batches bring.
    assert_eq!(
        categories.as_ref(),
        &StringArray::from(vec!["b", "a", "unused", "c"]) as &dyn Array
    );
    let group = ZarrGroup::open(store.clone(), "").unwrap();
    let back: Vec<RecordBatch> = group
        .reader()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
    for field in schema.fields() {
        let got = back.column_by_name(field.name()).unwrap();
        assert_eq!(got.data_type(), field.data_type(), "{}", field.name());
        let parts: Vec<&dyn Array> = batches
            .iter()
            .map(|b| b.column_by_name(field.name()).unwrap().as_ref())
            .collect();
        let want = arrow_select::concat::concat(&parts).unwrap();
        let values = |a: &ArrayRef| {
            let t = match a.data_type() {
                ArrowType::Dictionary(_, v) => v.as_ref().clone(),
                t => t.clone(),
            };
            arrow_cast::cast(a, &t).unwrap()
        };
        assert_eq!(
            values(got).as_ref(),
            values(&want).as_ref(),
            "{}",
            field.name()
        );
    }
    assert_eq!(
        back.schema()
            .field_with_name("s")
            .unwrap()
            .dict_is_ordered(),
        Some(true)
    );
}

#[test]
fn dictionaries_are_written_as_their_values() {
    let dict: DictionaryArray<arrow_array::types::Int8Type> =
        vec!["x", "y", "x", "z"].into_iter().collect();
    let array: ArrayRef = Arc::new(dict);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    write_array(store.clone(), "d", &array, WriteOptions::default()).unwrap();
    // The array alone reads as its stored values (as zarr-python reads them).
    let back = ZarrArray::open(store.clone(), "d")
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(
        back.as_ref(),
        &StringArray::from(vec!["x", "y", "x", "z"]) as &dyn Array
    );
    // As a column of its group's table it is the dictionary it was written as
    // (its Arrow type recorded); `categorical_values` reads the values.
    write_group_metadata(store.as_ref(), "", &["d".to_string()], 3).unwrap();
    for (values, want) in [
        (
            false,
            ArrowType::Dictionary(Box::new(ArrowType::Int8), Box::new(ArrowType::Utf8)),
        ),
        (true, ArrowType::Utf8),
    ] {
        let group = ZarrGroup::open_with(
            store.clone(),
            "",
            ReadOptions {
                categorical_values: values,
                ..ReadOptions::default()
            },
        )
        .unwrap();
        let batches: Vec<RecordBatch> = group
            .reader()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        let column = batches[0].column(0);
        assert_eq!(column.data_type(), &want);
        let strings = arrow_cast::cast(column, &ArrowType::Utf8).unwrap();
        assert_eq!(
            strings.as_ref(),
            &StringArray::from(vec!["x", "y", "x", "z"]) as &dyn Array
        );
    }
}

#[test]
fn existing_nodes_need_overwrite() {
    let array: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    write_array(store.clone(), "a", &array, WriteOptions::default()).unwrap();
    let again = write_array(store.clone(), "a", &array, WriteOptions::default());
    assert!(matches!(again, Err(Error::AlreadyExists { .. })));
    let smaller: ArrayRef = Arc::new(Int32Array::from(vec![9]));
    write_array(
        store.clone(),
        "a",
        &smaller,
        WriteOptions {
            overwrite: true,
            chunk_len: Some(1),
            ..WriteOptions::default()
        },
    )
    .unwrap();
    // Old chunks are gone with the old array (the statistics are the new
    // array's).
    assert_eq!(
        store.list_prefix("a/").unwrap(),
        vec!["a/c/0", "a/zarr.json", "a/zarrow.stats"]
    );
    assert!(write_array(store.clone(), "__reserved", &array, WriteOptions::default()).is_err());
}

#[test]
fn unsupported_arrow_types_are_named() {
    let array: ArrayRef = Arc::new(Time32SecondArray::from(vec![1]));
    let err = write_array(
        Arc::new(MemoryStore::new()),
        "when",
        &array,
        WriteOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::UnsupportedArrowType { column: Some(c), data_type: ArrowType::Time32(_), .. } if c == "when"
        ),
        "{err}"
    );
}

#[test]
fn metadata_is_written_after_the_chunks() {
    for format in [2u8, 3] {
        let store = crate::common::Observed::new(Arc::new(MemoryStore::new()));
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", ArrowType::Int32, false),
            Field::new("b", ArrowType::Utf8, false),
        ]));
        let batches: Vec<RecordBatch> = (0..5)
            .map(|i| {
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Int32Array::from(vec![i; 7])),
                        Arc::new(StringArray::from(vec!["s"; 7])),
                    ],
                )
                .unwrap()
            })
            .collect();
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        let options = WriteOptions {
            zarr_format: format,
            chunk_len: Some(10),
            ..WriteOptions::default()
        };
        write_batches(reader, store.clone(), "g", options).unwrap();
        let sets = store.take_writes();
        let is_meta =
            |k: &str| k.ends_with("zarr.json") || k.ends_with(".zarray") || k.ends_with(".zgroup");
        let is_stats = |k: &str| k.ends_with("/zarrow.stats");
        for column in ["g/a/", "g/b/"] {
            let last_chunk = sets
                .iter()
                .rposition(|k| {
                    k.starts_with(column) && !is_meta(k) && !k.ends_with(".zattrs") && !is_stats(k)
                })
                .unwrap();
            // The statistics after the chunks they describe, before the
            // metadata that makes the array visible.
            let stats = sets
                .iter()
                .position(|k| k.starts_with(column) && is_stats(k))
                .unwrap();
            let meta = sets
                .iter()
                .position(|k| k.starts_with(column) && is_meta(k))
                .unwrap();
            assert!(
                last_chunk < stats && stats < meta,
                "v{format} {column}: {sets:?}"
            );
        }
        let group_meta = sets
            .iter()
            .position(|k| k == "g/zarr.json" || k == "g/.zgroup")
            .unwrap();
        // The group appears last: its metadata (v3, with the consolidated metadata
        // in it) after every child; v2's .zmetadata after that.
        let last = if format == 2 {
            "g/.zmetadata"
        } else {
            "g/zarr.json"
        };
        assert_eq!(sets.last().map(String::as_str), Some(last), "{sets:?}");
        assert!(
            sets.iter()
                .enumerate()
                .all(|(i, k)| i <= group_meta || k == "g/.zmetadata"),
            "the group appears last: {sets:?}"
        );
        assert_eq!(
            sets.iter()
                .filter(|k| {
                    k.starts_with("g/a/") && !is_meta(k) && !k.ends_with(".zattrs") && !is_stats(k)
                })
                .count(),
            4
        );
    }
}

#[test]
fn fixed_width_chunks_are_budgeted_by_their_exact_size() {
    // A chunk of 1,000 uint8 takes 1,000 bytes: a limit of 1,000 bytes reads it (a
    // per-element estimate of views would refuse it), 999 does not. Its fill value
    // (a missing chunk) is budgeted the same way.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let values: ArrayRef = Arc::new(UInt8Array::from_iter_values((0..2000).map(|i| i as u8)));
    let options = WriteOptions {
        chunk_len: Some(1000),
        compressor: Compressor::None,
        ..WriteOptions::default()
    };
    write_array(store.clone(), "u8", &values, options).unwrap();
    let read = |limit: usize| {
        let options = zarrow::ReadOptions {
            max_chunk_bytes: limit,
            ..zarrow::ReadOptions::default()
        };
        ZarrArray::open_with(store.clone(), "u8", options)?.read_all()
    };
    assert_eq!(read(1000).unwrap().as_ref(), values.as_ref());
    assert!(matches!(read(999), Err(Error::Chunk { .. })));
    store.delete("u8/c/1").unwrap();
    let with_fill = read(1000).unwrap();
    assert_eq!(with_fill.len(), 2000);
    // Strings keep the per-element bound of a view (16 bytes).
    let names: ArrayRef = Arc::new(StringArray::from_iter_values((0..1000).map(|_| "a")));
    let options = WriteOptions {
        chunk_len: Some(1000),
        ..WriteOptions::default()
    };
    write_array(store.clone(), "s", &names, options).unwrap();
    let open = |limit: usize| {
        let options = zarrow::ReadOptions {
            max_chunk_bytes: limit,
            ..zarrow::ReadOptions::default()
        };
        ZarrArray::open_with(store.clone(), "s", options)?.read_all()
    };
    assert!(open(16_000).is_ok());
    assert!(open(15_999).is_err());
}

#[test]
fn reading_a_shape_that_promises_too_much_is_refused_not_allocated() {
    // 2^40 int8 elements, no chunk stored: read_all would be 1 TiB of fill values.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let meta = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [1u64 << 40], "data_type": "int8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
        "codecs": [{"name": "bytes"}]
    });
    store
        .set("huge/zarr.json", meta.to_string().as_bytes())
        .unwrap();
    let array = ZarrArray::open(store.clone(), "huge").unwrap();
    let err = array.read_all().unwrap_err();
    assert!(
        matches!(err, Error::ReadTooLarge { elements, .. } if elements == 1 << 40),
        "{err}"
    );
    assert!(err.to_string().contains("max_read_bytes"));
    assert!(matches!(
        array.read_range(0..(1 << 37)),
        Err(Error::ReadTooLarge { .. })
    ));
    // A range within the bound reads (as fill values); a raised bound lets more through.
    let some = array.read_range(5..1005).unwrap();
    assert_eq!(some.len(), 1000);
    assert_eq!(
        some.as_any().downcast_ref::<Int8Array>().unwrap().value(0),
        7
    );
    let options = zarrow::ReadOptions {
        max_read_bytes: 999,
        ..zarrow::ReadOptions::default()
    };
    let bounded = ZarrArray::open_with(store, "huge", options).unwrap();
    assert!(bounded.read_range(0..999).is_ok());
    assert!(matches!(
        bounded.read_range(0..1000),
        Err(Error::ReadTooLarge { bytes: 1000, .. })
    ));
}

/// Chunk and shard options of the other kind of array are refused, not ignored;
/// a 1-D array written as an N-d one may be sharded by length.
#[test]
fn shapes_of_the_other_kind_of_array_are_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let three: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
    for options in [
        WriteOptions {
            chunk_shape: Some(vec![2]),
            ..WriteOptions::default()
        },
        WriteOptions {
            shard_shape: Some(vec![2]),
            ..WriteOptions::default()
        },
    ] {
        assert!(matches!(
            write_array(store.clone(), "a", &three, options),
            Err(Error::OptionNotApplicable { options, .. }) if options == ["chunk_shape", "shard_shape"]
        ));
    }
    let sharded = WriteOptions {
        chunk_len: Some(1),
        shard_len: Some(2),
        ..WriteOptions::default()
    };
    zarrow::write::write_nd_array(store.clone(), "b", &three, &[3], sharded.clone()).unwrap();
    let b = ZarrArray::open(store.clone(), "b").unwrap();
    assert_eq!(b.metadata().chunk_shape, vec![2]);
    assert_eq!(b.read_all().unwrap().as_ref(), three.as_ref());
    let six: ArrayRef = Arc::new(Int32Array::from((0..6).collect::<Vec<_>>()));
    assert!(matches!(
        zarrow::write::write_nd_array(store, "c", &six, &[2, 3], sharded),
        Err(Error::InvalidShape {
            problem: ShapeProblem::ShardLenOfNd,
            ..
        })
    ));
}
