//! pandas' `pandas` schema metadata, as pyarrow writes and reads it: what a
//! table zarrow reads carries so that `Table.to_pandas()` rebuilds the frame
//! anndata (or xarray) gives ([`pandas_metadata`]), and what a table zarrow
//! writes tells of its index and nullable columns (`PandasSchema`).

use arrow_schema::{DataType as ArrowType, Field, Schema};
use serde_json::{Value, json};

use super::anndata::INDEX;

/// The schema metadata key of pyarrow's pandas metadata.
pub(crate) const SCHEMA_KEY: &str = "pandas";

/// The `numpy_type`s of pandas' nullable extension types, which anndata stores
/// as nullable elements.
const EXTENSION_TYPES: [&str; 10] = [
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "boolean", "string",
];

/// pandas' names for an Arrow column: (`pandas_type`, `numpy_type`), as pyarrow
/// writes them in its `pandas` schema metadata. `nullable`: a pandas extension
/// type (`Int64`, `boolean`, `string`), as anndata reads a nullable element.
fn pandas_types(data_type: &ArrowType, nullable: bool) -> (String, String) {
    use ArrowType as T;
    let (pandas, numpy) = match data_type {
        T::Boolean => ("bool", if nullable { "boolean" } else { "bool" }),
        T::Int8 => ("int8", if nullable { "Int8" } else { "int8" }),
        T::Int16 => ("int16", if nullable { "Int16" } else { "int16" }),
        T::Int32 => ("int32", if nullable { "Int32" } else { "int32" }),
        T::Int64 => ("int64", if nullable { "Int64" } else { "int64" }),
        T::UInt8 => ("uint8", if nullable { "UInt8" } else { "uint8" }),
        T::UInt16 => ("uint16", if nullable { "UInt16" } else { "uint16" }),
        T::UInt32 => ("uint32", if nullable { "UInt32" } else { "uint32" }),
        T::UInt64 => ("uint64", if nullable { "UInt64" } else { "uint64" }),
        T::Float16 => ("float16", "float16"),
        T::Float32 => ("float32", "float32"),
        T::Float64 => ("float64", "float64"),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => {
            ("unicode", if nullable { "string" } else { "object" })
        }
        T::Binary | T::LargeBinary | T::BinaryView => ("bytes", "object"),
        T::Date32 => ("date", "object"),
        T::Timestamp(unit, _) => {
            return (
                "datetime".into(),
                format!("datetime64[{}]", unit_name(unit)),
            );
        }
        T::Duration(unit) => {
            return (
                "timedelta".into(),
                format!("timedelta64[{}]", unit_name(unit)),
            );
        }
        T::Dictionary(keys, _) => return ("categorical".into(), pandas_types(keys, false).1),
        _ => ("object", "object"),
    };
    (pandas.into(), numpy.into())
}

fn unit_name(unit: &arrow_schema::TimeUnit) -> &'static str {
    match unit {
        arrow_schema::TimeUnit::Second => "s",
        arrow_schema::TimeUnit::Millisecond => "ms",
        arrow_schema::TimeUnit::Microsecond => "us",
        arrow_schema::TimeUnit::Nanosecond => "ns",
    }
}

/// One column of a dataframe, for [`pandas_metadata`].
#[derive(Debug, Clone)]
pub(crate) struct PandasColumn<'a> {
    /// The Arrow field.
    pub field: &'a Field,
    /// Read from a nullable element: a pandas extension type.
    pub nullable: bool,
    /// For a categorical column: how many categories.
    pub categories: Option<usize>,
}

/// pyarrow's `pandas` schema metadata for a dataframe: `index` names the columns
/// that hold the row labels (anndata's `_index`, whose pandas name is `None` when
/// anndata wrote it unnamed, as `_index`; xarray's dimensions), so
/// `Table.to_pandas()` rebuilds the frame anndata (or xarray) gives: index,
/// column order, categoricals and nullable types.
pub(crate) fn pandas_metadata(index: &[&str], columns: &[PandasColumn<'_>]) -> String {
    let entries: Vec<Value> = columns
        .iter()
        .map(|c| {
            let name = c.field.name();
            let (pandas_type, numpy_type) = pandas_types(c.field.data_type(), c.nullable);
            let metadata = match (c.categories, c.field.data_type()) {
                (Some(n), _) => json!({
                    "num_categories": n,
                    "ordered": c.field.dict_is_ordered().unwrap_or(false),
                }),
                (None, ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View) => {
                    json!({"encoding": "UTF-8"})
                }
                _ => Value::Null,
            };
            let pandas_name = if name == INDEX && index.contains(&INDEX) {
                Value::Null
            } else {
                Value::String(name.clone())
            };
            json!({
                "name": pandas_name,
                "field_name": name,
                "pandas_type": pandas_type,
                "numpy_type": numpy_type,
                "metadata": metadata,
            })
        })
        .collect();
    json!({
        "index_columns": index,
        "column_indexes": [{
            "name": null,
            "field_name": null,
            "pandas_type": "unicode",
            "numpy_type": "object",
            "metadata": {"encoding": "UTF-8"},
        }],
        "columns": entries,
        "creator": {"library": "zarrow", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.3.3",
    })
    .to_string()
}

/// What pyarrow's `pandas` metadata in a schema says of a table to write: the
/// column that holds its index, and each column's pandas dtype.
#[derive(Debug, Clone, Default)]
pub(crate) struct PandasSchema {
    index: Option<String>,
    numpy_types: Vec<(String, String)>,
}

impl PandasSchema {
    /// What `schema`'s pandas metadata says (nothing, without any).
    pub(crate) fn of(schema: &Schema) -> Self {
        let meta: Option<Value> = schema
            .metadata()
            .get(SCHEMA_KEY)
            .and_then(|m| serde_json::from_str(m).ok());
        let Some(meta) = meta else {
            return Self::default();
        };
        // One named index column; a RangeIndex is a JSON object, not a name.
        let index = match meta.get("index_columns").and_then(Value::as_array) {
            Some(cols) if cols.len() == 1 => cols[0]
                .as_str()
                .filter(|name| schema.field_with_name(name).is_ok())
                .map(str::to_string),
            _ => None,
        };
        let numpy_types = meta
            .get("columns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .filter_map(|c| {
                        Some((
                            c.get("field_name")?.as_str()?.to_string(),
                            c.get("numpy_type")?.as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { index, numpy_types }
    }

    /// The one column that holds the index's labels, when the index is one
    /// named column of the schema (not a RangeIndex).
    pub(crate) fn index(&self) -> Option<&str> {
        self.index.as_deref()
    }

    /// Whether pandas holds column `field` in a nullable extension type
    /// (`Int64`, `boolean`, `string`, ...); `None` when the metadata does not
    /// name the column.
    pub(crate) fn nullable(&self, field: &str) -> Option<bool> {
        self.numpy_types
            .iter()
            .find(|(name, _)| name == field)
            .map(|(_, t)| EXTENSION_TYPES.contains(&t.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_extension_types_written_read_as_nullable() {
        use ArrowType as T;
        for t in [
            T::Boolean,
            T::Int8,
            T::Int16,
            T::Int32,
            T::Int64,
            T::UInt8,
            T::UInt16,
            T::UInt32,
            T::UInt64,
            T::Utf8,
        ] {
            assert!(
                EXTENSION_TYPES.contains(&pandas_types(&t, true).1.as_str()),
                "{t}"
            );
            assert!(
                !EXTENSION_TYPES.contains(&pandas_types(&t, false).1.as_str()),
                "{t}"
            );
        }
    }

    #[test]
    fn written_metadata_reads_back() {
        let fields = [
            Field::new("cell", ArrowType::Utf8, false),
            Field::new("count", ArrowType::Int64, true),
            Field::new("ok", ArrowType::Boolean, true),
            Field::new("x", ArrowType::Float64, true),
        ];
        let columns: Vec<PandasColumn<'_>> = fields
            .iter()
            .map(|field| PandasColumn {
                field,
                nullable: field.name() != "x",
                categories: None,
            })
            .collect();
        let metadata = pandas_metadata(&["cell"], &columns);
        let schema = Schema::new(fields.to_vec())
            .with_metadata(HashMap::from([(SCHEMA_KEY.to_string(), metadata)]));
        let pandas = PandasSchema::of(&schema);
        assert_eq!(pandas.index(), Some("cell"));
        assert_eq!(pandas.nullable("count"), Some(true));
        assert_eq!(pandas.nullable("ok"), Some(true));
        assert_eq!(pandas.nullable("x"), Some(false));
        assert_eq!(pandas.nullable("y"), None);
        let plain = PandasSchema::of(&Schema::new(fields.to_vec()));
        assert_eq!((plain.index(), plain.nullable("count")), (None, None));
    }
}
