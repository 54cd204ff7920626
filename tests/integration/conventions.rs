//! anndata dataframes and xarray datasets read through the library, against what
//! anndata 0.12 and xarray 2026.9 read from the same stores (testdata/conventions/,
//! made by testdata/gen/conventions.py: `expected/*.arrow` is `pa.Table.from_pandas`
//! of `anndata.io.read_elem(...)`, of `xr.open_zarr(...)`'s variables, or of
//! `Dataset.to_dataframe()`, index first).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, SchemaRef};
use serde_json::Value;
use zarrow::Store as _;
use zarrow::write::{Layout, WriteOptions, write_batches};
use zarrow::{
    Error, LocalStore, MemoryStore, NodeMetadata, ReadOptions, SkipReason, TableProblem, ZarrArray,
    ZarrGroup, read_node,
};

use crate::common::{read_ipc, testdata};

fn root() -> std::path::PathBuf {
    testdata().join("conventions")
}

fn cases() -> Vec<Value> {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(root().join("cases.json")).unwrap()).unwrap();
    manifest["cases"].as_array().unwrap().clone()
}

/// One row's value as text: nulls, NaN, dictionary values and times alike.
fn cell(a: &dyn Array, i: usize) -> String {
    if a.is_null(i) {
        return "null".into();
    }
    macro_rules! prim {
        ($t:ty) => {
            format!("{:?}", a.as_primitive::<$t>().value(i))
        };
    }
    match a.data_type() {
        DataType::Dictionary(..) => {
            let dict = a.as_any_dictionary();
            let key = dict.normalized_keys()[i];
            cell(dict.values().as_ref(), key)
        }
        DataType::Utf8 => a.as_string::<i32>().value(i).into(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).into(),
        DataType::Utf8View => a.as_string_view().value(i).into(),
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::UInt8 => prim!(UInt8Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::UInt64 => prim!(UInt64Type),
        DataType::Float32 => prim!(Float32Type),
        DataType::Float64 => prim!(Float64Type),
        DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, _) => {
            prim!(TimestampNanosecondType)
        }
        other => panic!("no comparison for {other}"),
    }
}

fn cells(a: &dyn Array) -> Vec<String> {
    (0..a.len()).map(|i| cell(a, i)).collect()
}

fn concat(schema: SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&schema, batches).unwrap()
}

/// A case's `zarrow convert` arguments.
fn args(case: &Value) -> Vec<&str> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// The columns `--columns a,b` names.
fn columns_arg(args: &[&str]) -> Option<Vec<String>> {
    args.iter()
        .position(|a| *a == "--columns")
        .map(|i| args[i + 1].split(',').map(str::to_string).collect())
}

/// Read a case's node as `zarrow convert` would, through the library.
fn read_case(case: &Value) -> zarrow::Result<RecordBatch> {
    let store_dir = root().join(case["store"].as_str().unwrap());
    let node = case["node"].as_str().unwrap_or("");
    let args = args(case);
    let options = ReadOptions {
        decode_cf: !args.contains(&"--no-cf"),
        ..ReadOptions::default()
    };
    let columns = columns_arg(&args);
    let store = Arc::new(LocalStore::new(&store_dir));
    let name = node.rsplit('/').next().unwrap_or("").to_string();
    let reader: Box<dyn RecordBatchReader> = match read_node(store.as_ref(), node)? {
        NodeMetadata::Array(_) => {
            let array = ZarrArray::open_with(store, node, options)?.with_column_name(name);
            Box::new(array.reader().build()?)
        }
        NodeMetadata::Group(_) if args.contains(&"--long") => {
            let group = ZarrGroup::open_with(store, node, options)?;
            Box::new(group.long_table(columns.as_deref())?)
        }
        NodeMetadata::Group(_) => {
            let group = ZarrGroup::open_with(store, node, options)?.with_column_name(&name)?;
            let builder = group.reader();
            let builder = match columns {
                Some(c) => builder.with_projection(c),
                None => builder,
            };
            Box::new(builder.build()?)
        }
    };
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok(concat(schema, &batches))
}

fn expected(case: &Value) -> RecordBatch {
    let path = root().join(case["expected"].as_str().unwrap());
    let batches = read_ipc(&path);
    concat(batches[0].schema(), &batches)
}

/// Compare `got` with the libraries' table: names, order, values (as text), and
/// the Arrow features the conventions promise (dictionary and its ordered flag,
/// nanosecond timestamps).
fn compare(case: &str, got: &RecordBatch, want: &RecordBatch) -> Vec<String> {
    let mut failures = Vec::new();
    let names = |b: &RecordBatch| -> Vec<String> {
        b.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    };
    if names(got) != names(want) {
        failures.push(format!(
            "{case}: columns {:?}, expected {:?}",
            names(got),
            names(want)
        ));
        return failures;
    }
    for (i, field) in want.schema().fields().iter().enumerate() {
        let got_field = got.schema().field(i).clone();
        let (g, w) = (got.column(i), want.column(i));
        if let DataType::Dictionary(..) = field.data_type() {
            if !matches!(got_field.data_type(), DataType::Dictionary(..)) {
                failures.push(format!(
                    "{case}.{}: {} is not a dictionary",
                    field.name(),
                    got_field.data_type()
                ));
            } else if got_field.dict_is_ordered() != field.dict_is_ordered() {
                failures.push(format!("{case}.{}: ordered flag differs", field.name()));
            } else {
                // The categories themselves, in their order.
                let gv = cells(g.as_any_dictionary().values().as_ref());
                let wv = cells(w.as_any_dictionary().values().as_ref());
                if gv != wv {
                    failures.push(format!(
                        "{case}.{}: categories {gv:?}, expected {wv:?}",
                        field.name()
                    ));
                }
            }
        }
        if matches!(field.data_type(), DataType::Timestamp(..))
            && got_field.data_type() != field.data_type()
        {
            failures.push(format!(
                "{case}.{}: {} instead of {}",
                field.name(),
                got_field.data_type(),
                field.data_type()
            ));
        }
        if cells(g.as_ref()) != cells(w.as_ref()) {
            failures.push(format!(
                "{case}.{}: values {:?}, expected {:?}",
                field.name(),
                cells(g.as_ref()),
                cells(w.as_ref())
            ));
        }
    }
    failures
}

#[test]
fn anndata_and_xarray_stores_read_as_the_libraries_read_them() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let name = case["case"].as_str().unwrap().to_string();
        if case.get("expected").is_none_or(Value::is_null) {
            continue;
        }
        match read_case(&case) {
            Ok(got) => failures.extend(compare(&name, &got, &expected(&case))),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} cases with expectations");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// xarray's long tables (`Dataset.to_dataframe()`) as DataFusion tables
/// (`long`): every row in order over several partitions, a projection, a
/// limit, and a filter DataFusion applies, against xarray's frame.
#[cfg(feature = "datafusion")]
#[test]
fn long_tables_through_datafusion_are_xarrays_frames() {
    use datafusion::physical_plan::collect_partitioned;
    use zarrow::datafusion::{ZarrTable, ZarrTableOptions};

    use crate::datafusion::{context, query, runtime};

    let runtime = runtime();
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        if case["kind"] != "xarray-long" || case.get("expected").is_none_or(Value::is_null) {
            continue;
        }
        let name = case["case"].as_str().unwrap().to_string();
        let args = args(&case);
        let mut options = ZarrTableOptions::default();
        options.long = true;
        options.read.decode_cf = !args.contains(&"--no-cf");
        options.columns = columns_arg(&args);
        let dir = root().join(case["store"].as_str().unwrap());
        let node = case["node"].as_str().unwrap_or("");
        let location = zarrow::Location::parse(dir.join(node).to_str().unwrap()).unwrap();
        let table = ZarrTable::open(&location, options, &zarrow::Stores::default()).unwrap();
        let want = expected(&case);
        let rows = want.num_rows();
        let ctx = context(3);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let last = want.schema().field(want.num_columns() - 1).name().clone();
        runtime.block_on(async {
            // In order: the partitions are row ranges, in row order.
            let plan = ctx
                .sql("SELECT * FROM t")
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            let parts = collect_partitioned(plan.clone(), ctx.task_ctx())
                .await
                .unwrap();
            let batches: Vec<RecordBatch> = parts.into_iter().flatten().collect();
            let got = concat(plan.schema(), &batches);
            failures.extend(compare(&name, &got, &want));
            let limited = query(&ctx, &format!("SELECT \"{last}\" FROM t LIMIT 7")).await;
            let got = concat(limited[0].schema(), &limited);
            if cells(got.column(0).as_ref())
                != cells(&*want.column(want.num_columns() - 1).slice(0, rows.min(7)))
            {
                failures.push(format!("{name}: LIMIT 7 of {last} differs"));
            }
            let counted = query(
                &ctx,
                &format!("SELECT count(*) FROM t WHERE \"{last}\" IS NOT NULL"),
            )
            .await;
            let count = counted[0].column(0).as_primitive::<Int64Type>().value(0) as usize;
            let want_count = rows - want.column(want.num_columns() - 1).null_count();
            if count != want_count {
                failures.push(format!(
                    "{name}: {count} non-null {last}, expected {want_count}"
                ));
            }
        });
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} long cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refusals_name_what_is_refused() {
    let mut checked = 0;
    for case in cases() {
        if case["kind"] != "refuse" {
            continue;
        }
        let word = case["error_contains"].as_str().unwrap();
        match read_case(&case) {
            Ok(_) => panic!("{}: read, expected a refusal", case["case"]),
            Err(e) => assert!(
                e.to_string().contains(word),
                "{}: {e} does not name {word}",
                case["case"]
            ),
        }
        checked += 1;
    }
    assert!(checked >= 4);
}

#[test]
fn dataframes_carry_pandas_metadata_naming_the_index() {
    let case = cases()
        .into_iter()
        .find(|c| c["case"] == "anndata_v3__obs")
        .unwrap();
    let got = read_case(&case).unwrap();
    let pandas: Value = serde_json::from_str(&got.schema().metadata()["pandas"]).unwrap();
    let want = expected(&case);
    let want_pandas: Value = serde_json::from_str(&want.schema().metadata()["pandas"]).unwrap();
    assert_eq!(pandas["index_columns"], want_pandas["index_columns"]);
    // Nullable columns are pandas extension types, as anndata reads them.
    let numpy_type = |meta: &Value, name: &str| {
        meta["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["field_name"] == name)
            .map(|c| c["numpy_type"].clone())
    };
    for name in ["n_genes", "is_doublet", "donor_note", "cell_type"] {
        assert_eq!(
            numpy_type(&pandas, name),
            numpy_type(&want_pandas, name),
            "{name}"
        );
    }
}

#[test]
fn an_unreadable_child_is_named_and_does_not_stop_the_others() {
    let store = Arc::new(MemoryStore::new());
    let src = Arc::new(LocalStore::new(
        testdata().join("stores/v3_int32.zarr").as_path(),
    ));
    // A group: one good array (copied), one whose metadata names an unknown codec.
    for key in src.list_prefix("").unwrap() {
        let value = src.get(&key).unwrap().unwrap();
        store.set(&format!("good/{key}"), &value).unwrap();
    }
    let good = String::from_utf8(
        std::fs::read(testdata().join("stores/v3_int32.zarr/zarr.json")).unwrap(),
    )
    .unwrap();
    let bad = good.replace("\"bytes\"", "\"no.such.codec\"");
    assert_ne!(good, bad);
    store.set("bad/zarr.json", bad.as_bytes()).unwrap();
    zarrow::Store::set(
        store.as_ref(),
        "zarr.json",
        br#"{"zarr_format": 3, "node_type": "group"}"#,
    )
    .unwrap();
    let group = ZarrGroup::open(store.clone(), "").unwrap();
    let skipped = group.skipped();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].name, "bad");
    assert!(
        matches!(&skipped[0].reason, SkipReason::Unreadable(e)
            if matches!(&**e, Error::UnsupportedCodec { name, .. } if name == "no.such.codec")),
        "{}",
        skipped[0]
    );
    // The whole table: the good column, the bad one named by the builder.
    let builder = group.reader();
    assert_eq!(builder.skipped().len(), 1);
    let batch = builder.build().unwrap().next().unwrap().unwrap();
    assert_eq!(batch.schema().field(0).name(), "good");
    // Asking for it is an error that says why.
    let err = group.reader().with_projection(["bad"]).build().unwrap_err();
    assert!(
        matches!(&err, Error::Table { problem: TableProblem::Skipped(s), .. } if s.name == "bad"),
        "{err}"
    );
}

#[test]
fn a_table_written_as_anndata_reads_back_as_the_same_columns() {
    // The pandas-written input of the write cases, through the library both ways.
    let input = read_ipc(&root().join("inputs/frame_anndata.arrow"));
    let schema = input[0].schema();
    let store: Arc<dyn zarrow::Store> = Arc::new(MemoryStore::new());
    let reader =
        arrow_array::RecordBatchIterator::new(input.clone().into_iter().map(Ok), schema.clone());
    let options = WriteOptions {
        layout: Layout::AnnData,
        ..WriteOptions::default()
    };
    write_batches(reader, store.clone(), "obs", options).unwrap();
    let got = ZarrGroup::open(store, "obs")
        .unwrap()
        .reader()
        .build()
        .unwrap();
    let got_schema = got.schema();
    let got = concat(got_schema, &got.collect::<Result<Vec<_>, _>>().unwrap());
    let want = concat(schema, &input);
    // The index (pandas' index column) comes first on reading; the rest in order.
    let pandas: Value = serde_json::from_str(&want.schema().metadata()["pandas"]).unwrap();
    let index = pandas["index_columns"][0].as_str().unwrap();
    assert_eq!(got.schema().field(0).name(), index);
    for field in want.schema().fields() {
        let g = got.column_by_name(field.name()).unwrap();
        let w = want.column_by_name(field.name()).unwrap();
        assert_eq!(cells(g.as_ref()), cells(w.as_ref()), "{}", field.name());
        if let DataType::Dictionary(..) = field.data_type() {
            assert!(matches!(g.data_type(), DataType::Dictionary(..)));
        }
    }
}

#[test]
fn nullable_and_categorical_columns_line_up_across_chunks_and_batches() {
    // 3000 rows in chunks of 1000, read in batches of 300: batches are slices of
    // a chunk at an offset (rows 300..600: 300 bits in) or span two (rows
    // 900..1200), values and mask alike.
    use arrow_array::{BooleanArray, DictionaryArray, Int64Array, StringArray};
    let n = 3000;
    let bools = BooleanArray::from(
        (0..n)
            .map(|i| (i % 5 != 2).then_some(i % 2 == 0))
            .collect::<Vec<_>>(),
    );
    let ints = Int64Array::from(
        (0..n)
            .map(|i| (i % 7 != 3).then_some(i * 10))
            .collect::<Vec<_>>(),
    );
    let strings = StringArray::from(
        (0..n)
            .map(|i| (i % 4 != 1).then(|| format!("s{i}")))
            .collect::<Vec<_>>(),
    );
    let cats: DictionaryArray<arrow_array::types::Int8Type> = (0..n)
        .map(|i| (i % 9 != 0).then_some(["a", "b", "c"][(i % 3) as usize]))
        .collect();
    let batch = RecordBatch::try_from_iter([
        ("b", Arc::new(bools) as arrow_array::ArrayRef),
        ("i", Arc::new(ints) as _),
        ("s", Arc::new(strings) as _),
        ("c", Arc::new(cats) as _),
    ])
    .unwrap();
    let store: Arc<dyn zarrow::Store> = Arc::new(MemoryStore::new());
    let reader = arrow_array::RecordBatchIterator::new([Ok(batch.clone())], batch.schema());
    let options = WriteOptions {
        layout: Layout::AnnData,
        chunk_len: Some(1000),
        ..WriteOptions::default()
    };
    write_batches(reader, store.clone(), "df", options).unwrap();
    let reader = ZarrGroup::open(store, "df")
        .unwrap()
        .reader()
        .with_batch_size(300)
        .build()
        .unwrap();
    let schema = reader.schema();
    let got = concat(schema, &reader.collect::<Result<Vec<_>, _>>().unwrap());
    // The row numbers were written as the index, first.
    assert_eq!(got.schema().field(0).name(), "_index");
    for name in ["b", "i", "s", "c"] {
        let g = got.column_by_name(name).unwrap();
        let w = batch.column_by_name(name).unwrap();
        assert_eq!(cells(g.as_ref()), cells(w.as_ref()), "{name}");
    }
}
