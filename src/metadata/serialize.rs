//! Metadata back into documents: the inverse of the parsers in `v2.rs` and `v3.rs`.
//!
//! [`ArrayMetadata::to_documents`] and [`GroupMetadata::to_documents`] give the
//! JSON documents of a node, in the order a writer stores them (v2: `.zattrs`
//! before `.zarray` / `.zgroup`, so the node appears complete). Parsing what they
//! give yields the same metadata (`parse(serialize(m)) == m`, property-tested
//! below), in the form zarr-python 3.1 writes:
//!
//! - v3: `shape`, `data_type`, `chunk_grid`, `chunk_key_encoding`, `fill_value`,
//!   `codecs`, `attributes`, `zarr_format`, `node_type`, `storage_transformers`,
//!   then `dimension_names` when there are any;
//! - v2: `.zarray` with `dtype` from the data type and the `bytes` codec's byte
//!   order, `order` from a leading reversing `transpose`, `filters` (a `vlen-*`
//!   layout last), one `compressor`, and `dimension_separator`.
//!
//! Metadata that its format cannot hold (a v2 array with dimension names or two
//! compressors, a fill value of another type, ...) is an [`Error::Metadata`]
//! naming the document, never a document that parses as something else.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{ArrayMetadata, CodecMetadata, DataType, FillValue, GroupMetadata, Zep0007Offsets};
use crate::error::{Error, Result};
use crate::grid::KeyKind;

/// One metadata document: its name within the node (`zarr.json`, `.zarray`, ...)
/// and its JSON.
pub(crate) type Document = (&'static str, Value);

impl ArrayMetadata {
    /// The documents that store this array: v3 `zarr.json`; v2 `.zattrs` then
    /// `.zarray`.
    ///
    /// # Errors
    /// [`Error::Metadata`] for metadata its format cannot hold: a v2 array with
    /// dimension names, a ZEP0007 type or v3 key encoding, codecs that do not map
    /// onto v2's filters / compressor, a string fill value that is not UTF-8.
    pub(crate) fn to_documents(&self) -> Result<Vec<Document>> {
        match self.zarr_format {
            2 => self.v2_documents(),
            3 => Ok(vec![("zarr.json", self.v3_document()?)]),
            other => Err(Error::metadata_found(
                "zarr.json",
                "zarr_format",
                "2 or 3",
                other,
            )),
        }
    }

    fn v3_document(&self) -> Result<Value> {
        const KEY: &str = "zarr.json";
        let zarrs_bytes = self.data_type == DataType::Bytes
            && self.zep0007.is_none()
            && self.codecs.iter().any(zarrs_vlen);
        let data_type = v3_data_type(&self.data_type, self.zep0007, zarrs_bytes);
        let fill_value = v3_fill(KEY, &self.data_type, &self.fill_value, zarrs_bytes)?;
        let separator = self.chunk_key_encoding.separator.to_string();
        let chunk_key_encoding = match self.chunk_key_encoding.kind {
            KeyKind::Default => {
                json!({"name": "default", "configuration": {"separator": separator}})
            }
            KeyKind::V2 => json!({"name": "v2", "configuration": {"separator": separator}}),
        };
        let codecs: Vec<Value> = self.codecs.iter().map(CodecMetadata::to_v3).collect();
        let mut doc = json!({
            "shape": self.shape,
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.chunk_shape}},
            "chunk_key_encoding": chunk_key_encoding,
            "fill_value": fill_value,
            "codecs": codecs,
            "attributes": self.attributes,
            "zarr_format": 3,
            "node_type": "array",
            "storage_transformers": [],
        });
        if let Some(names) = &self.dimension_names {
            doc["dimension_names"] = json!(names);
        }
        Ok(doc)
    }

    fn v2_documents(&self) -> Result<Vec<Document>> {
        const KEY: &str = ".zarray";
        let refuse = |field: &str, expected: &str, found: String| {
            Err(Error::metadata_found(KEY, field, expected, found))
        };
        if self.dimension_names.is_some() {
            return refuse(
                "dimension_names",
                "none: a v2 array has no dimension_names (xarray keeps them in the _ARRAY_DIMENSIONS attribute)",
                "dimension names".into(),
            );
        }
        if self.zep0007.is_some() {
            return refuse(
                "dtype",
                "a v2 data type (the ZEP0007 data types are v3 only)",
                format!("{} (ZEP0007)", self.data_type),
            );
        }
        if self.chunk_key_encoding.kind != KeyKind::V2 {
            return refuse(
                "dimension_separator",
                "the v2 chunk key encoding (a v2 array's chunk keys are the v2 encoding)",
                "the default (v3) chunk key encoding".into(),
            );
        }
        let mut codecs = self.codecs.as_slice();
        // A leading transpose that reverses the dimensions is v2's order "F".
        let reversed: Vec<u64> = (0..self.shape.len() as u64).rev().collect();
        let order = match codecs.first() {
            Some(c) if c.name == "transpose" && self.shape.len() > 1 => {
                if c.configuration.get("order") != Some(&json!(reversed)) {
                    return refuse(
                        "order",
                        "C or F (a transpose that reverses the dimensions)",
                        format!("transpose {}", Value::Object(c.configuration.clone())),
                    );
                }
                codecs = &codecs[1..];
                "F"
            }
            _ => "C",
        };
        let Some(at) = codecs
            .iter()
            .position(|c| matches!(c.name.as_str(), "bytes" | "vlen-utf8" | "vlen-bytes"))
        else {
            return refuse(
                "filters",
                "a bytes, vlen-utf8 or vlen-bytes layout (v2 needs one)",
                "none".into(),
            );
        };
        let (filters, rest) = codecs.split_at(at);
        let (layout, compressors) = (&rest[0], &rest[1..]);
        let mut filters: Vec<Value> = filters.iter().map(CodecMetadata::to_v2).collect();
        let big = layout.configuration.get("endian") == Some(&json!("big"));
        let dtype = match (layout.name.as_str(), &self.data_type) {
            ("vlen-utf8", DataType::String) | ("vlen-bytes", DataType::Bytes) => {
                filters.push(layout.to_v2());
                "|O".to_string()
            }
            ("bytes", t) if t.fixed_size().is_some() => v2_dtype(t, big),
            (name, t) => {
                return refuse(
                    "dtype",
                    &format!("a data type layout {name} holds"),
                    t.to_string(),
                );
            }
        };
        let compressor = match compressors {
            [] => Value::Null,
            [one] => one.to_v2(),
            more => {
                return refuse(
                    "compressor",
                    "one compressor (a v2 array has one compressor)",
                    format!("{} compressors", more.len()),
                );
            }
        };
        let fill_value = if self.fill_value_unset {
            Value::Null
        } else {
            v2_fill(KEY, &self.data_type, &self.fill_value)?
        };
        let zarray = json!({
            "zarr_format": 2,
            "shape": self.shape,
            "chunks": self.chunk_shape,
            "dtype": dtype,
            "compressor": compressor,
            "fill_value": fill_value,
            "order": order,
            "filters": if filters.is_empty() { Value::Null } else { Value::Array(filters) },
            "dimension_separator": self.chunk_key_encoding.separator.to_string(),
        });
        Ok(vec![
            (".zattrs", Value::Object(self.attributes.clone())),
            (".zarray", zarray),
        ])
    }
}

impl GroupMetadata {
    /// The documents that store this group: v3 `zarr.json`; v2 `.zattrs` then
    /// `.zgroup`. (Consolidated metadata is the store's to add: it lists children.)
    pub(crate) fn to_documents(&self) -> Vec<Document> {
        if self.zarr_format == 2 {
            return vec![
                (".zattrs", Value::Object(self.attributes.clone())),
                (".zgroup", json!({"zarr_format": 2})),
            ];
        }
        vec![(
            "zarr.json",
            json!({"zarr_format": 3, "node_type": "group", "attributes": self.attributes}),
        )]
    }
}

impl CodecMetadata {
    /// The codec of a v2 entry (`{"id": ..., "level": 5}`, as `.zarray`'s
    /// `compressor` and `filters` hold them), named by its id; without a string
    /// id, the object back (less any `id`).
    pub(crate) fn from_v2(mut object: Map<String, Value>) -> Result<Self, Map<String, Value>> {
        match object.shift_remove("id") {
            Some(Value::String(name)) => Ok(Self {
                name,
                configuration: object,
            }),
            _ => Err(object),
        }
    }

    /// The v3 entry: `{"name": ..., "configuration": {...}}`.
    pub(crate) fn to_v3(&self) -> Value {
        json!({"name": self.name, "configuration": self.configuration})
    }

    /// The v2 entry: the configuration's fields beside `"id"`.
    pub(crate) fn to_v2(&self) -> Value {
        let mut object = Map::with_capacity(self.configuration.len() + 1);
        object.insert("id".into(), json!(self.name));
        for (k, v) in &self.configuration {
            object.insert(k.clone(), v.clone());
        }
        Value::Object(object)
    }
}

/// Whether `codec` is `zarrs.vlen`, or a sharding codec whose chunks are.
fn zarrs_vlen(codec: &CodecMetadata) -> bool {
    fn inner(entry: &Value) -> bool {
        entry.get("name").and_then(Value::as_str) == Some("zarrs.vlen")
            || entry
                .get("configuration")
                .and_then(|c| c.get("codecs"))
                .and_then(Value::as_array)
                .is_some_and(|codecs| codecs.iter().any(inner))
    }
    inner(&codec.to_v3())
}

/// The v3 `data_type`: a name, or an object for the parameterised types.
/// `zarrs_bytes`: bytes stored with `zarrs.vlen`, which zarrs names `bytes`.
fn v3_data_type(t: &DataType, zep0007: Option<Zep0007Offsets>, zarrs_bytes: bool) -> Value {
    let time = |name: &str, unit: super::DateTimeUnit| json!({"name": name, "configuration": {"unit": unit.as_str(), "scale_factor": 1}});
    match (t, zep0007) {
        (DataType::String, Some(Zep0007Offsets::Int32)) => json!({"name": "string"}),
        (DataType::String, Some(Zep0007Offsets::Int64)) => json!({"name": "large_string"}),
        (DataType::Bytes, Some(Zep0007Offsets::Int32)) => json!({"name": "binary"}),
        (DataType::Bytes, Some(Zep0007Offsets::Int64)) => json!({"name": "large_binary"}),
        (DataType::Bytes, _) if zarrs_bytes => json!("bytes"),
        (DataType::Bytes, _) => json!("variable_length_bytes"),
        (DataType::DateTime64(unit), _) => time("numpy.datetime64", *unit),
        (DataType::TimeDelta64(unit), _) => time("numpy.timedelta64", *unit),
        (DataType::FixedUtf32 { chars }, _) => {
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": chars * 4}})
        }
        (DataType::NullTerminatedBytes { length }, _) => {
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": length}})
        }
        (t, _) => json!(t.to_string()),
    }
}

/// The v2 `dtype` of a fixed-width type (`<i4`, `|b1`, `<M8[ns]`, `<U3`, `|S5`).
fn v2_dtype(t: &DataType, big: bool) -> String {
    let order = match t.fixed_size() {
        Some(1) => '|',
        _ if matches!(t, DataType::NullTerminatedBytes { .. }) => '|',
        _ if big => '>',
        _ => '<',
    };
    let kind = match t {
        DataType::Bool => "b1".to_string(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            format!("i{}", t.fixed_size().unwrap_or(0))
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            format!("u{}", t.fixed_size().unwrap_or(0))
        }
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            format!("f{}", t.fixed_size().unwrap_or(0))
        }
        DataType::DateTime64(unit) => format!("M8[{}]", unit.as_str()),
        DataType::TimeDelta64(unit) => format!("m8[{}]", unit.as_str()),
        DataType::FixedUtf32 { chars } => format!("U{chars}"),
        DataType::NullTerminatedBytes { length } => format!("S{length}"),
        DataType::String | DataType::Bytes => "O".to_string(),
    };
    format!("{order}{kind}")
}

/// A float as Zarr writes it: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(v)
    }
}

/// Text, which a string fill value must be.
fn text(key: &str, bytes: &[u8]) -> Result<Value> {
    std::str::from_utf8(bytes).map(|s| json!(s)).map_err(|_| {
        Error::metadata_found(
            key,
            "fill_value",
            "UTF-8 text (a string fill value must be UTF-8)",
            format!("b\"{}\"", bytes.escape_ascii()),
        )
    })
}

/// The fill value for `t`, or an error when it is not of `t`'s kind.
fn fill(
    key: &str,
    t: &DataType,
    fill: &FillValue,
    bytes: impl Fn(&[u8]) -> Value,
) -> Result<Value> {
    match (t, fill) {
        (DataType::Bool, FillValue::Bool(b)) => Ok(json!(b)),
        (
            DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::DateTime64(_)
            | DataType::TimeDelta64(_),
            FillValue::Int(v),
        ) => Ok(json!(v)),
        (
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64,
            FillValue::UInt(v),
        ) => Ok(json!(v)),
        (DataType::Float16 | DataType::Float32 | DataType::Float64, FillValue::Float(v)) => {
            Ok(float(*v))
        }
        (DataType::String | DataType::FixedUtf32 { .. }, FillValue::Bytes(b)) => text(key, b),
        (DataType::Bytes | DataType::NullTerminatedBytes { .. }, FillValue::Bytes(b)) => {
            Ok(bytes(b))
        }
        (t, f) => Err(Error::metadata_found(
            key,
            "fill_value",
            format!("a value of data type {t} (a fill value that does not fit data type {t})"),
            f.describe(t),
        )),
    }
}

fn base64(b: &[u8]) -> Value {
    json!(base64::engine::general_purpose::STANDARD.encode(b))
}

/// The v3 `fill_value`: bytes in base64, or (zarrs' `bytes`) a list of bytes.
fn v3_fill(key: &str, t: &DataType, value: &FillValue, zarrs_bytes: bool) -> Result<Value> {
    fill(key, t, value, |b| {
        if zarrs_bytes { json!(b) } else { base64(b) }
    })
}

/// The v2 `fill_value` (bytes in base64, as zarr-python 2 writes them).
fn v2_fill(key: &str, t: &DataType, value: &FillValue) -> Result<Value> {
    fill(key, t, value, base64)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::grid::ChunkKeyEncoding;
    use crate::metadata::{
        DateTimeUnit, NodeMetadata, parse_zarr_json, parse_zarray, parse_zattrs, parse_zgroup,
    };

    /// Parse the documents `to_documents` gave, as a reader does.
    fn parse(meta: &ArrayMetadata) -> ArrayMetadata {
        let docs = meta.to_documents().unwrap();
        let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
        match docs.as_slice() {
            [("zarr.json", doc)] => match parse_zarr_json("zarr.json", &bytes(doc)).unwrap() {
                NodeMetadata::Array(m) => *m,
                NodeMetadata::Group(_) => panic!("a group"),
            },
            [(".zattrs", attrs), (".zarray", doc)] => {
                let attributes = parse_zattrs(".zattrs", &bytes(attrs)).unwrap();
                parse_zarray(".zarray", &bytes(doc), attributes).unwrap()
            }
            other => panic!("documents {other:?}"),
        }
    }

    fn time_unit() -> impl Strategy<Value = DateTimeUnit> {
        prop_oneof![
            Just(DateTimeUnit::Day),
            Just(DateTimeUnit::Second),
            Just(DateTimeUnit::Millisecond),
            Just(DateTimeUnit::Microsecond),
            Just(DateTimeUnit::Nanosecond),
        ]
    }

    fn data_type() -> impl Strategy<Value = DataType> {
        prop_oneof![
            Just(DataType::Bool),
            Just(DataType::Int8),
            Just(DataType::Int16),
            Just(DataType::Int32),
            Just(DataType::Int64),
            Just(DataType::UInt8),
            Just(DataType::UInt16),
            Just(DataType::UInt32),
            Just(DataType::UInt64),
            Just(DataType::Float16),
            Just(DataType::Float32),
            Just(DataType::Float64),
            time_unit().prop_map(DataType::DateTime64),
            time_unit()
                .prop_filter("no timedelta64[D]", |u| *u != DateTimeUnit::Day)
                .prop_map(DataType::TimeDelta64),
            Just(DataType::String),
            Just(DataType::Bytes),
            (1usize..5).prop_map(|chars| DataType::FixedUtf32 { chars }),
            (1usize..9).prop_map(|length| DataType::NullTerminatedBytes { length }),
        ]
    }

    /// A fill value of `t` that reads back as itself (fixed strings without the
    /// trailing NULs a read strips, within their width).
    fn fill(t: DataType) -> BoxedStrategy<FillValue> {
        match t {
            DataType::Bool => any::<bool>().prop_map(FillValue::Bool).boxed(),
            DataType::Int8 => any::<i8>().prop_map(|v| FillValue::Int(v.into())).boxed(),
            DataType::Int16 => any::<i16>().prop_map(|v| FillValue::Int(v.into())).boxed(),
            DataType::Int32 => any::<i32>().prop_map(|v| FillValue::Int(v.into())).boxed(),
            DataType::Int64 | DataType::DateTime64(_) | DataType::TimeDelta64(_) => {
                any::<i64>().prop_map(FillValue::Int).boxed()
            }
            DataType::UInt8 => any::<u8>().prop_map(|v| FillValue::UInt(v.into())).boxed(),
            DataType::UInt16 => any::<u16>().prop_map(|v| FillValue::UInt(v.into())).boxed(),
            DataType::UInt32 => any::<u32>().prop_map(|v| FillValue::UInt(v.into())).boxed(),
            DataType::UInt64 => any::<u64>().prop_map(FillValue::UInt).boxed(),
            DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                let width = t.fixed_size().unwrap_or(8);
                prop_oneof![
                    Just(f64::NAN),
                    Just(f64::INFINITY),
                    Just(f64::NEG_INFINITY),
                    Just(-0.0),
                    any::<u64>().prop_map(move |bits| match width {
                        2 => half::f16::from_bits(bits as u16).to_f64(),
                        4 => f32::from_bits(bits as u32).into(),
                        _ => f64::from_bits(bits),
                    }),
                ]
                .prop_map(FillValue::Float)
                .boxed()
            }
            DataType::String => ".{0,6}"
                .prop_map(|s| FillValue::Bytes(s.into_bytes()))
                .boxed(),
            DataType::FixedUtf32 { chars } => proptest::collection::vec(
                any::<char>().prop_filter("no NUL", |c| *c != '\0'),
                0..=chars,
            )
            .prop_map(|c| FillValue::Bytes(c.into_iter().collect::<String>().into_bytes()))
            .boxed(),
            DataType::Bytes => proptest::collection::vec(any::<u8>(), 0..6)
                .prop_map(FillValue::Bytes)
                .boxed(),
            DataType::NullTerminatedBytes { length } => {
                proptest::collection::vec(any::<u8>(), 0..=length)
                    .prop_map(|mut b| {
                        while b.last() == Some(&0) {
                            b.pop();
                        }
                        FillValue::Bytes(b)
                    })
                    .boxed()
            }
        }
    }

    fn compressor(v2: bool) -> impl Strategy<Value = Option<CodecMetadata>> {
        proptest::option::of(
            (0i64..20, any::<bool>()).prop_map(move |(level, checksum)| {
                let zstd = CodecMetadata::named("zstd").with("level", json!(level));
                if v2 {
                    zstd
                } else {
                    zstd.with("checksum", json!(checksum))
                }
            }),
        )
    }

    prop_compose! {
        /// Any array metadata a parse yields: the codecs in the form the parser
        /// gives them (v2: a `bytes` layout with its byte order, the compressor by
        /// its v2 id; v3 as written).
        fn array()(
            v2 in any::<bool>(),
            t in data_type(),
            dims in proptest::collection::vec((0u64..1000, 1u64..50), 0..4),
            zep in 0u8..3,
            big in any::<bool>(),
            fortran in any::<bool>(),
            zarrs in any::<bool>(),
            slash in any::<bool>(),
            default_keys in any::<bool>(),
            unset in any::<bool>(),
            names in proptest::option::of(proptest::collection::vec(proptest::option::of("[a-z]{1,3}"), 4)),
            attrs in proptest::collection::btree_map("[a-z]{1,4}", any::<i32>(), 0..3),
        )(
            fill in fill(t),
            compressor in compressor(v2),
            v2 in Just(v2), t in Just(t), dims in Just(dims), zep in Just(zep), big in Just(big),
            fortran in Just(fortran), zarrs in Just(zarrs), slash in Just(slash),
            default_keys in Just(default_keys), unset in Just(unset), names in Just(names),
            attrs in Just(attrs),
        ) -> ArrayMetadata {
            let ndim = dims.len();
            let variable = t.fixed_size().is_none();
            let zep0007 = match zep {
                1 if !v2 && variable => Some(Zep0007Offsets::Int32),
                2 if !v2 && variable => Some(Zep0007Offsets::Int64),
                _ => None,
            };
            // `|` dtypes (one byte, `S`) read as little-endian.
            let one_byte = t.fixed_size() == Some(1) || matches!(t, DataType::NullTerminatedBytes { .. });
            let endian = if big && !one_byte { "big" } else { "little" };
            let mut codecs = Vec::new();
            if v2 && fortran && ndim > 1 {
                codecs.push(CodecMetadata::named("transpose").with("order", json!((0..ndim).rev().collect::<Vec<_>>())));
            }
            match (zep0007, t) {
                (Some(_), _) => {}
                (None, DataType::String) if zarrs && !v2 => codecs.push(CodecMetadata::named("zarrs.vlen")),
                (None, DataType::Bytes) if zarrs && !v2 => codecs.push(CodecMetadata::named("zarrs.vlen")),
                (None, DataType::String) => codecs.push(CodecMetadata::named("vlen-utf8")),
                (None, DataType::Bytes) => codecs.push(CodecMetadata::named("vlen-bytes")),
                (None, _) => codecs.push(CodecMetadata::named("bytes").with("endian", json!(endian))),
            }
            codecs.extend(compressor);
            let separator = if slash { '/' } else { '.' };
            let kind = if v2 || !default_keys { KeyKind::V2 } else { KeyKind::Default };
            let fill_value_unset = v2 && unset;
            ArrayMetadata {
                zarr_format: if v2 { 2 } else { 3 },
                shape: dims.iter().map(|d| d.0).collect(),
                chunk_shape: dims.iter().map(|d| d.1).collect(),
                data_type: t,
                fill_value: if fill_value_unset { FillValue::default_for(&t) } else { fill },
                fill_value_unset,
                chunk_key_encoding: ChunkKeyEncoding { kind, separator },
                codecs,
                zep0007,
                attributes: attrs.into_iter().map(|(k, v)| (k, json!(v))).collect(),
                dimension_names: names.filter(|_| !v2).map(|n| n[..ndim].to_vec()),
                stored: Default::default(),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

        /// What a writer serializes, a reader parses back as the same metadata.
        #[test]
        fn parse_of_serialize_is_the_metadata(meta in array()) {
            prop_assert_eq!(parse(&meta), meta);
        }
    }

    #[test]
    fn groups_round_trip() {
        let mut attributes = Map::new();
        attributes.insert("zarrow".into(), json!({"columns": ["a", "b"]}));
        for zarr_format in [2, 3] {
            let group = GroupMetadata {
                zarr_format,
                attributes: attributes.clone(),
            };
            let docs = group.to_documents();
            let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
            let back = match docs.as_slice() {
                [("zarr.json", doc)] => match parse_zarr_json("zarr.json", &bytes(doc)).unwrap() {
                    NodeMetadata::Group(g) => g,
                    NodeMetadata::Array(_) => panic!("an array"),
                },
                [(".zattrs", attrs), (".zgroup", doc)] => {
                    let attrs = parse_zattrs(".zattrs", &bytes(attrs)).unwrap();
                    parse_zgroup(".zgroup", &bytes(doc), attrs).unwrap()
                }
                other => panic!("documents {other:?}"),
            };
            assert_eq!(back, group);
        }
    }

    /// What v2 cannot hold is refused, naming why.
    #[test]
    fn v2_refuses_what_it_cannot_hold() {
        let doc = |meta: &ArrayMetadata| meta.to_documents().unwrap_err().to_string();
        let mut meta = parse(&ArrayMetadata {
            zarr_format: 2,
            shape: vec![4],
            chunk_shape: vec![2],
            data_type: DataType::Int32,
            fill_value: FillValue::Int(0),
            fill_value_unset: false,
            chunk_key_encoding: ChunkKeyEncoding {
                kind: KeyKind::V2,
                separator: '.',
            },
            codecs: vec![CodecMetadata::named("bytes").with("endian", json!("little"))],
            zep0007: None,
            attributes: Map::new(),
            dimension_names: None,
            stored: Default::default(),
        });
        meta.dimension_names = Some(vec![Some("x".into())]);
        assert!(doc(&meta).contains("_ARRAY_DIMENSIONS"), "{}", doc(&meta));
        meta.dimension_names = None;
        meta.codecs.push(CodecMetadata::named("zstd"));
        meta.codecs.push(CodecMetadata::named("gzip"));
        assert!(doc(&meta).contains("one compressor"), "{}", doc(&meta));
        meta.codecs.truncate(1);
        meta.fill_value = FillValue::Bytes(b"x".to_vec());
        assert!(doc(&meta).contains("does not fit"), "{}", doc(&meta));
    }

    /// zarrs names the bytes it stores with `zarrs.vlen` `bytes` (and fills them
    /// with a byte list), sharded or not; other bytes are `variable_length_bytes`.
    #[test]
    fn zarrs_bytes_keep_zarrs_names() {
        let meta = |codecs: Vec<CodecMetadata>| ArrayMetadata {
            zarr_format: 3,
            shape: vec![4],
            chunk_shape: vec![4],
            data_type: DataType::Bytes,
            fill_value: FillValue::Bytes(vec![1]),
            fill_value_unset: false,
            chunk_key_encoding: ChunkKeyEncoding {
                kind: KeyKind::Default,
                separator: '/',
            },
            codecs,
            zep0007: None,
            attributes: Map::new(),
            dimension_names: None,
            stored: Default::default(),
        };
        let shard = |inner: &str| {
            CodecMetadata::named("sharding_indexed")
                .with("codecs", json!([{"name": inner, "configuration": {}}]))
        };
        for (codecs, name, fill) in [
            (
                vec![CodecMetadata::named("zarrs.vlen")],
                "bytes",
                json!([1]),
            ),
            (vec![shard("zarrs.vlen")], "bytes", json!([1])),
            (
                vec![CodecMetadata::named("vlen-bytes")],
                "variable_length_bytes",
                json!("AQ=="),
            ),
            (
                vec![shard("vlen-bytes")],
                "variable_length_bytes",
                json!("AQ=="),
            ),
        ] {
            let m = meta(codecs);
            let doc = &m.to_documents().unwrap()[0].1;
            assert_eq!(
                (&doc["data_type"], &doc["fill_value"]),
                (&json!(name), &fill)
            );
            assert_eq!(parse(&m), m);
        }
    }
}
