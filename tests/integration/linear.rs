//! The stdlib linear exchange format: the RFC's examples with expected values worked
//! out by hand from the RFC's indexing rule, every validation error, and Zarr ->
//! JSON / CSV -> Zarr round trips of every test store.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType as ArrowType;
use zarrow::linear::{Linear, parse_json, read_csv, write_csv, write_json};
use zarrow::{Error, LocalStore, NodeMetadata, ZarrArray, ZarrGroup, read_node};

use crate::common::{testdata, values};

fn parse(text: &str) -> zarrow::Result<Linear> {
    parse_json(text.as_bytes())
}

fn f64s(l: &Linear) -> Vec<f64> {
    l.to_arrow()
        .unwrap()
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

#[test]
fn the_rfc_2x2_example() {
    let l = parse(
        r#"["version", "1.0.0", "ndarray", "shape", 2, 2, "strides", 2, 1, "offset", 0,
        "order", "row-major", "dtype", "float64", "length", 4, "capacity", 4, "data", 1, 2, 3, 4]"#,
    )
    .unwrap();
    assert_eq!(l.shape, vec![2, 2]);
    assert_eq!(f64s(&l), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn reordered_header_fields() {
    // The RFC's own reordering: capacity, length, dtype, order, offset, strides, shape.
    let l = parse(
        r#"["version", "1.0.0", "ndarray", "capacity", 4, "length", 4, "dtype", "float64",
        "order", "row-major", "offset", 0, "strides", 2, 1, "shape", 2, 2, "data", 1, 2, 3, 4]"#,
    )
    .unwrap();
    assert_eq!(l.shape, vec![2, 2]);
    assert_eq!(f64s(&l), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn column_major_views_come_out_row_major() {
    // [[1, 2], [3, 4]] stored column by column: buffer [1, 3, 2, 4], strides [1, 2].
    // (0,1) -> 0*1 + 1*2 = 2 -> 2; (1,0) -> 1 -> 3.
    let l = parse(r#"["version", "1.0.0", "ndarray", "shape", 2, 2, "strides", 1, 2, "offset", 0,
        "order", "column-major", "dtype", "float64", "length", 4, "capacity", 4, "data", 1, 3, 2, 4]"#)
    .unwrap();
    assert_eq!(f64s(&l), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn offsets_negative_strides_and_spare_capacity() {
    // A 1-d view of 2 elements from offset 2 in a buffer of 5.
    let l = parse(
        r#"["version","1.0.0","ndarray","shape",2,"strides",1,"offset",2,"order","row-major",
        "dtype","float64","length",2,"capacity",5,"data",9,9,7,8,9]"#,
    )
    .unwrap();
    assert_eq!(f64s(&l), vec![7.0, 8.0]);
    // Reversed: offset 2, stride -1 over [1, 2, 3] -> 3, 2, 1.
    let l = parse(
        r#"["version","1.0.0","ndarray","shape",3,"strides",-1,"offset",2,"order","row-major",
        "dtype","float64","length",3,"capacity",3,"data",1,2,3]"#,
    )
    .unwrap();
    assert_eq!(f64s(&l), vec![3.0, 2.0, 1.0]);
    // Rows reversed: (i, j) -> 2 - 2i + j over [1..5]: (0,0)=3 (0,1)=4 (1,0)=1 (1,1)=2.
    let l = parse(
        r#"["version","1.0.0","ndarray","shape",2,2,"strides",-2,1,"offset",2,"order","row-major",
        "dtype","int32","length",4,"capacity",5,"data",1,2,3,4,5]"#,
    )
    .unwrap();
    assert_eq!(
        l.to_arrow().unwrap().as_primitive::<Int32Type>().values(),
        &[3, 4, 1, 2]
    );
}

#[test]
fn zero_dimensional_arrays() {
    let l = parse(
        r#"["version","1.0.0","ndarray","shape","strides",0,"offset",1,"order","row-major",
        "dtype","int32","length",1,"capacity",2,"data",5,6]"#,
    )
    .unwrap();
    assert!(l.shape.is_empty());
    assert_eq!(
        l.to_arrow().unwrap().as_primitive::<Int32Type>().values(),
        &[6]
    );
    // Written back: no shape values, one stride of 0.
    let mut out = Vec::new();
    write_json(&mut out, l.to_arrow().unwrap().as_ref(), &[]).unwrap();
    let tokens: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
    let text: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
    assert_eq!(text[3..7], ["\"shape\"", "\"strides\"", "0", "\"offset\""]);
}

#[test]
fn generic_values_are_typed_by_content() {
    let typed = |n: usize, data: &str| {
        parse(&format!(
            r#"["version","1.0.0","ndarray","shape",{n},"strides",1,"offset",0,"order","row-major","dtype","generic","length",{n},"capacity",{n},"data",{data}]"#
        ))
        .and_then(|l| l.to_arrow())
    };
    assert_eq!(
        typed(3, r#""a","","é""#).unwrap().data_type(),
        &ArrowType::Utf8
    );
    assert_eq!(
        typed(3, "1,-2,9007199254740993").unwrap().data_type(),
        &ArrowType::Int64
    );
    let big = typed(2, "1,18446744073709551615").unwrap();
    assert_eq!(big.data_type(), &ArrowType::UInt64);
    assert_eq!(
        big.as_primitive::<arrow_array::types::UInt64Type>()
            .value(1),
        u64::MAX
    );
    assert_eq!(typed(2, "1,2.5").unwrap().data_type(), &ArrowType::Float64);
    assert_eq!(
        typed(2, "true,false").unwrap().data_type(),
        &ArrowType::Boolean
    );
    assert_eq!(
        typed(2, "[104,105],[]")
            .unwrap()
            .as_binary::<i32>()
            .value(0),
        b"hi"
    );
    assert!(matches!(typed(2, r#""a",1"#), Err(Error::Linear { .. })));
    assert!(matches!(typed(1, "[300]"), Err(Error::Linear { .. })));
}

/// Each RFC rule, broken once: the error names the field.
#[test]
fn invalid_documents_name_the_field() {
    let ok = r#"["version","1.0.0","ndarray","shape",2,"strides",1,"offset",0,"order","row-major","dtype","int8","length",2,"capacity",2,"data",1,2]"#;
    parse(ok).unwrap();
    let cases = [
        (ok.replace(r#""version","1.0.0","#, ""), "version"),
        (ok.replace("1.0.0", "2.0.0"), "version"),
        (ok.replace(r#""ndarray","#, ""), "ndarray"),
        (ok.replace(r#""offset",0,"#, ""), "offset"),
        (ok.replace(r#""dtype","int8","#, ""), "dtype"),
        (ok.replace(r#""capacity",2,"#, ""), "capacity"),
        (
            ok.replace(
                r#""order","row-major","#,
                r#""order","row-major","order","row-major","#,
            ),
            "order",
        ),
        (
            ok.replace(r#""shape",2,"#, r#""shape",2,"shape",2,"#),
            "shape",
        ),
        (ok.replace(r#""length",2"#, r#""length",3"#), "length"),
        (ok.replace(r#""capacity",2"#, r#""capacity",3"#), "capacity"),
        (ok.replace(r#""offset",0"#, r#""offset",1"#), "offset"),
        (ok.replace(r#""strides",1"#, r#""strides",-1"#), "offset"),
        (
            ok.replace(r#""strides",1,"#, r#""strides",1,1,"#),
            "strides",
        ),
        (ok.replace("int8", "complex128"), "dtype"),
        (ok.replace("row-major", "diagonal"), "order"),
        (ok.replace(r#""data",1,2"#, r#""data",1,300"#), "data[1]"),
        (ok.replace(r#""data",1,2"#, r#""data",1,"x""#), "data[1]"),
        (ok.replace(r#""data",1,2"#, r#""data",1,2.5"#), "data[1]"),
        (ok.replace(r#""data",1,2]"#, ""), "json"),
        (ok.replace(r#","data",1,2"#, ""), "data"),
        (ok.replace(r#""shape",2"#, r#""shape",-2"#), "shape"),
        (
            ok.replace(r#""length",2"#, r#""length",2,"width",3"#),
            "header",
        ),
        ("{}".to_string(), "json"),
    ];
    for (text, field) in cases {
        match parse(&text) {
            Err(Error::Linear {
                field: f,
                expected,
                found,
            }) => assert_eq!(f, field, "{text}: expected {expected}, found {found:?}"),
            other => panic!("{text}: expected an error naming {field}, got {other:?}"),
        }
    }
    // The typed parts: what was expected where, and what was there.
    let text = ok.replace(r#""data",1,2"#, r#""data",1,300"#);
    match parse(&text) {
        Err(Error::Linear {
            field,
            expected,
            found,
        }) => {
            assert_eq!(field, "data[1]");
            assert_eq!(expected, "a value of dtype int8");
            assert_eq!(found.as_deref(), Some("300"));
        }
        other => panic!("expected a typed linear-format error, got {other:?}"),
    }
    match parse(&ok.replace(r#","data",1,2"#, "")) {
        Err(Error::Linear { field, found, .. }) => {
            assert_eq!(field, "data");
            assert_eq!(found, None, "a missing field has nothing found");
        }
        other => panic!("expected a typed linear-format error, got {other:?}"),
    }
    // A float beyond float32's range is refused; NaN and infinities are spelled out.
    let f32s = |data: &str| {
        parse(&format!(
            r#"["version","1.0.0","ndarray","shape",2,"strides",1,"offset",0,"order","row-major","dtype","float32","length",2,"capacity",2,"data",{data}]"#
        ))
    };
    assert!(f32s("1e39,0").is_err());
    assert!(f32s(r#""NaN","-Infinity""#).is_ok());
}

/// What each Zarr data type's values come back as (docs/formats.md's table).
fn linear_type(t: &ArrowType, values: &dyn Array) -> ArrowType {
    match t {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => ArrowType::Utf8,
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => ArrowType::Binary,
        ArrowType::UInt64 if values.is_empty() => ArrowType::Utf8,
        ArrowType::UInt64
            if values
                .as_primitive::<arrow_array::types::UInt64Type>()
                .values()
                .iter()
                .all(|&v| v <= i64::MAX as u64) =>
        {
            ArrowType::Int64
        }
        ArrowType::Int64 if values.is_empty() => ArrowType::Utf8,
        other => other.clone(),
    }
}

/// Every array of every test store (arrays and the arrays of groups).
fn all_arrays() -> Vec<(String, ArrayRef, Vec<u64>)> {
    let mut out = Vec::new();
    let mut stores: Vec<_> = std::fs::read_dir(testdata().join("stores"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    stores.sort();
    for path in stores {
        let store = Arc::new(LocalStore::new(&path));
        let case = path.file_stem().unwrap().to_string_lossy().into_owned();
        let paths: Vec<String> = match read_node(store.as_ref(), "").unwrap() {
            NodeMetadata::Array(_) => vec![String::new()],
            NodeMetadata::Group(_) => ZarrGroup::open(store.clone(), "")
                .unwrap()
                .children()
                .filter(|(_, m)| matches!(m, NodeMetadata::Array(_)))
                .map(|(n, _)| n.to_string())
                .collect(),
        };
        for p in paths {
            let array = ZarrArray::open(store.clone(), &p).unwrap();
            // The linear format has no form for numpy's times or float16: zarrow
            // refuses them there (they are not round-tripped).
            let t = array.arrow_type();
            if t.is_temporal() || t == arrow_schema::DataType::Float16 {
                continue;
            }
            out.push((
                format!("{case}/{p}"),
                array.read_all().unwrap(),
                array.metadata().shape.clone(),
            ));
        }
    }
    assert!(out.len() > 80, "{}", out.len());
    out
}

#[test]
fn every_store_round_trips_through_json() {
    for (name, array, shape) in all_arrays() {
        let mut json = Vec::new();
        write_json(&mut json, array.as_ref(), &shape).unwrap();
        let back = parse_json(json.as_slice()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_came_back(&name, array.as_ref(), &shape, &back);
    }
}

/// `back` holds `array` (of `shape`) with the documented type mapping.
fn assert_came_back(name: &str, array: &dyn Array, shape: &[u64], back: &Linear) {
    assert_eq!(back.shape, shape, "{name}");
    let got = back.to_arrow().unwrap();
    assert_eq!(
        got.data_type(),
        &linear_type(array.data_type(), array),
        "{name}"
    );
    assert_eq!(values(got.as_ref()), values(array), "{name}");
}

#[test]
fn every_store_round_trips_through_csv() {
    let arrays = all_arrays();
    let columns: Vec<(String, &dyn Array, Vec<u64>)> = arrays
        .iter()
        .map(|(n, a, s)| (n.clone(), a.as_ref(), s.clone()))
        .collect();
    let mut csv = Vec::new();
    write_csv(&mut csv, &columns).unwrap();
    let back = read_csv(csv.as_slice()).unwrap();
    assert_eq!(back.len(), arrays.len());
    for ((name, array, shape), (back_name, linear)) in arrays.iter().zip(&back) {
        assert_eq!(name, back_name);
        assert_came_back(name, array.as_ref(), shape, linear);
    }
}

#[test]
fn csv_cells_stay_plain_where_they_can() {
    let strings: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
        "plain",
        "",
        "12",
        "true",
        "a,b",
        "say \"hi\"",
    ]));
    let mut csv = Vec::new();
    write_csv(&mut csv, &[("s".to_string(), strings.as_ref(), vec![6])]).unwrap();
    let text = String::from_utf8(csv.clone()).unwrap();
    assert!(
        text.starts_with("s\nversion\n1.0.0\nndarray\nshape\n6\n"),
        "{text}"
    );
    assert!(text.contains("\nplain\n"), "{text}");
    // Strings that would read as other JSON values are quoted as JSON strings.
    assert!(
        text.contains("\n\"\"\"12\"\"\"\n") && text.contains("\n\"\"\"true\"\"\"\n"),
        "{text}"
    );
    let back = read_csv(csv.as_slice()).unwrap();
    assert_eq!(
        values(back[0].1.to_arrow().unwrap().as_ref()),
        values(strings.as_ref())
    );
}
