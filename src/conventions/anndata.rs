//! anndata's on-disk dataframes: the attributes that say how a group or an array
//! is to be read (`encoding-type`), and the Arrow arrays its element encodings
//! become.
//!
//! | anndata element (`encoding-type`) | stored as | Arrow |
//! |---|---|---|
//! | `dataframe` | group: one element per column, `_index`, `column-order` | a table, the index first |
//! | `categorical` | group: `codes` (int, -1 missing), `categories`, `ordered` | `Dictionary(codes type, categories type)`, ordered flag kept |
//! | `nullable-integer`, `nullable-boolean`, `nullable-string-array` | group: `values`, `mask` (true: missing) | the values' type, null where the mask is set |
//! | `array`, `string-array` | a 1-D array | the array's type |

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::{DataType as ArrowType, Field};
use serde_json::{Map, Value, json};

use super::ConventionError;

/// How anndata says a node is to be read: its `encoding-type` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// `dataframe`: a group of columns.
    DataFrame {
        /// The element holding the row labels (`_index`).
        index: Option<String>,
        /// The columns, in order (`column-order`), the index not among them.
        column_order: Vec<String>,
    },
    /// `categorical`: `codes` into `categories`.
    Categorical {
        /// Whether the categories are ordered.
        ordered: bool,
    },
    /// `nullable-integer`, `nullable-boolean`, `nullable-string-array`: `values`
    /// and a `mask` that is true where a value is missing.
    Nullable(Nullable),
    /// `array` or `string-array`: an ordinary array.
    Array,
    /// Any other encoding (`csr_matrix`, `dict`, `anndata`, ...): not a column.
    Other(String),
}

/// The kind of a nullable element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nullable {
    /// `nullable-integer`.
    Integer,
    /// `nullable-boolean`.
    Boolean,
    /// `nullable-string-array`.
    String,
}

/// The anndata encoding named in `attributes`, if any.
pub fn encoding(attributes: &Map<String, Value>) -> Option<Encoding> {
    let kind = attributes.get("encoding-type")?.as_str()?;
    Some(match kind {
        "dataframe" => Encoding::DataFrame {
            index: attributes
                .get("_index")
                .and_then(Value::as_str)
                .map(str::to_string),
            column_order: match attributes.get("column-order") {
                Some(Value::Array(names)) => names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect(),
                // anndata writes a lone column as a bare string.
                Some(Value::String(name)) => vec![name.clone()],
                _ => Vec::new(),
            },
        },
        "categorical" => Encoding::Categorical {
            ordered: attributes
                .get("ordered")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        "nullable-integer" => Encoding::Nullable(Nullable::Integer),
        "nullable-boolean" => Encoding::Nullable(Nullable::Boolean),
        "nullable-string-array" => Encoding::Nullable(Nullable::String),
        "array" | "string-array" => Encoding::Array,
        other => Encoding::Other(other.to_string()),
    })
}

/// The attributes anndata writes on an element: `encoding-type: kind` and its
/// `encoding-version` (0.1.0 for the nullable elements, 0.2.0 for the others).
pub fn element_attributes(kind: &str) -> Map<String, Value> {
    let version = if kind.starts_with("nullable-") {
        "0.1.0"
    } else {
        "0.2.0"
    };
    let mut attributes = Map::new();
    attributes.insert("encoding-type".into(), json!(kind));
    attributes.insert("encoding-version".into(), json!(version));
    attributes
}

/// The attributes of a `categorical` element's group.
pub fn categorical_attributes(ordered: bool) -> Map<String, Value> {
    let mut attributes = element_attributes("categorical");
    attributes.insert("ordered".into(), json!(ordered));
    attributes
}

/// The attributes of a `dataframe` group: its index element and the other
/// columns, in order.
pub fn dataframe_attributes(index: &str, column_order: &[&String]) -> Map<String, Value> {
    let mut attributes = element_attributes("dataframe");
    attributes.insert("_index".into(), json!(index));
    attributes.insert("column-order".into(), json!(column_order));
    attributes
}

/// The element an array of Arrow type `t` is written as: `string-array` for
/// strings, else `array`.
pub fn array_encoding(t: &ArrowType) -> &'static str {
    match t {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => "string-array",
        _ => "array",
    }
}

/// The nullable element that holds Arrow type `t` with nulls, if there is one.
pub fn nullable_encoding(t: &ArrowType) -> Option<&'static str> {
    match t {
        ArrowType::Boolean => Some("nullable-boolean"),
        t if t.is_integer() => Some("nullable-integer"),
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            Some("nullable-string-array")
        }
        _ => None,
    }
}

/// The Arrow type of a categorical column: codes as the keys, categories as the
/// values. `None` when the codes are not a signed integer type.
pub fn dictionary_type(codes: &ArrowType, categories: &ArrowType) -> Option<ArrowType> {
    matches!(
        codes,
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 | ArrowType::Int64
    )
    .then(|| ArrowType::Dictionary(Box::new(codes.clone()), Box::new(categories.clone())))
}

/// `codes` into `categories` as a `DictionaryArray` (no copy of either): code -1
/// is a null (pandas' missing category).
///
/// # Errors
/// A code below -1 or past the last category, or codes of a non-integer type.
pub fn categorical(codes: &ArrayRef, categories: &ArrayRef) -> Result<ArrayRef, ConventionError> {
    match codes.data_type() {
        ArrowType::Int8 => dictionary::<Int8Type>(codes, categories),
        ArrowType::Int16 => dictionary::<Int16Type>(codes, categories),
        ArrowType::Int32 => dictionary::<Int32Type>(codes, categories),
        ArrowType::Int64 => dictionary::<Int64Type>(codes, categories),
        other => Err(ConventionError::CodeType(other.clone())),
    }
}

/// `codes` into `categories` as the categories' values, one per row (a `take`:
/// for `Utf8View` categories only the views are copied); code -1 is a null.
///
/// # Errors
/// As [`categorical`].
pub fn categorical_values(
    codes: &ArrayRef,
    categories: &ArrayRef,
) -> Result<ArrayRef, ConventionError> {
    let take = |keys: &dyn Array| Ok(arrow_select::take::take(categories.as_ref(), keys, None)?);
    match codes.data_type() {
        ArrowType::Int8 => take(&keys::<Int8Type>(codes, categories)?),
        ArrowType::Int16 => take(&keys::<Int16Type>(codes, categories)?),
        ArrowType::Int32 => take(&keys::<Int32Type>(codes, categories)?),
        ArrowType::Int64 => take(&keys::<Int64Type>(codes, categories)?),
        other => Err(ConventionError::CodeType(other.clone())),
    }
}

fn dictionary<K>(codes: &ArrayRef, categories: &ArrayRef) -> Result<ArrayRef, ConventionError>
where
    K: arrow_array::types::ArrowDictionaryKeyType,
    K::Native: Into<i64> + Ord,
{
    crate::offsets::keys::dictionary(codes.as_primitive::<K>(), categories)
}

/// The codes as keys into `categories`: checked to lie in them, -1 a null.
fn keys<K>(codes: &ArrayRef, categories: &ArrayRef) -> Result<PrimitiveArray<K>, ConventionError>
where
    K: arrow_array::types::ArrowDictionaryKeyType,
    K::Native: Into<i64> + Ord,
{
    crate::offsets::keys::codes_as_keys(codes.as_primitive::<K>(), categories.len())
}

/// `values` with a null wherever `mask` is true (anndata's mask marks missing
/// values): arrow's `nullif`, which keeps the values' buffers and handles
/// slices at any offset.
///
/// # Errors
/// A mask that is not boolean or not as long as the values.
pub fn masked(values: &ArrayRef, mask: &ArrayRef) -> Result<ArrayRef, ConventionError> {
    let Some(mask) = mask.as_boolean_opt() else {
        return Err(ConventionError::MaskType(mask.data_type().clone()));
    };
    if mask.len() != values.len() {
        return Err(ConventionError::MaskLength {
            mask: mask.len(),
            values: values.len(),
        });
    }
    Ok(arrow_select::nullif::nullif(values.as_ref(), mask)?)
}

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
pub struct PandasColumn<'a> {
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
pub fn pandas_metadata(index: &[&str], columns: &[PandasColumn<'_>]) -> String {
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
            let pandas_name = if name == "_index" && index.contains(&"_index") {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use arrow_array::{ArrayAccessor, BooleanArray, Int8Array, Int64Array, StringArray};

    #[test]
    fn encodings_are_read_from_attributes() {
        let attrs = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            encoding(&attrs(json!({
                "encoding-type": "dataframe", "_index": "cell", "column-order": ["a", "b"]
            }))),
            Some(Encoding::DataFrame {
                index: Some("cell".into()),
                column_order: vec!["a".into(), "b".into()]
            })
        );
        assert_eq!(
            encoding(&attrs(
                json!({"encoding-type": "categorical", "ordered": true})
            )),
            Some(Encoding::Categorical { ordered: true })
        );
        assert_eq!(
            encoding(&attrs(json!({"encoding-type": "nullable-boolean"}))),
            Some(Encoding::Nullable(Nullable::Boolean))
        );
        assert_eq!(
            encoding(&attrs(json!({"encoding-type": "csr_matrix"}))),
            Some(Encoding::Other("csr_matrix".into()))
        );
        assert_eq!(encoding(&attrs(json!({"units": "m"}))), None);
    }

    #[test]
    fn code_minus_one_is_null_and_others_are_checked() {
        let codes: ArrayRef = Arc::new(Int8Array::from(vec![0, -1, 1, 0]));
        let categories: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let out = categorical(&codes, &categories).unwrap();
        let dict = out.as_dictionary::<Int8Type>();
        assert_eq!(dict.null_count(), 1);
        assert!(dict.is_null(1));
        let values = dict.downcast_dict::<StringArray>().unwrap();
        assert_eq!(values.value(2), "b");
        for bad in [2i8, -2] {
            let codes: ArrayRef = Arc::new(Int8Array::from(vec![0, bad]));
            let err = categorical(&codes, &categories).unwrap_err();
            assert!(
                matches!(err, ConventionError::CodeOutOfRange { code, categories: 2 } if code == i64::from(bad)),
                "{err}"
            );
        }
    }

    #[test]
    fn mask_true_means_missing() {
        let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
        let mask: ArrayRef = Arc::new(BooleanArray::from(vec![false, true, false]));
        let out = masked(&values, &mask).unwrap();
        assert_eq!(
            out.as_primitive::<Int64Type>().iter().collect::<Vec<_>>(),
            vec![Some(1), None, Some(3)]
        );
        let short: ArrayRef = Arc::new(BooleanArray::from(vec![false]));
        assert!(matches!(
            masked(&values, &short),
            Err(ConventionError::MaskLength { mask: 1, values: 3 })
        ));
    }

    #[test]
    fn sliced_values_take_the_mask_of_their_own_rows() {
        let bools: ArrayRef = Arc::new(BooleanArray::from(vec![true; 20]));
        let mask: ArrayRef = Arc::new(BooleanArray::from(
            (0..20).map(|i| i % 3 == 0).collect::<Vec<_>>(),
        ));
        let (values, mask) = (bools.slice(5, 12), mask.slice(5, 12));
        let out = masked(&values, &mask).unwrap();
        let out = out.as_boolean();
        for i in 0..12 {
            assert_eq!(out.is_null(i), (i + 5) % 3 == 0, "row {i}");
        }
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..20).map(|i| i.to_string()),
        ));
        let out = masked(&strings.slice(5, 12), &mask).unwrap();
        assert_eq!(out.as_string::<i32>().value(1), "6");
        assert!(out.is_null(1) == (6 % 3 == 0));
    }
}
