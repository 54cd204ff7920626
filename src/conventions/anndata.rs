//! anndata's on-disk dataframes, both ways: the attributes that say how a group
//! or an array is to be read (`encoding-type`) and the Arrow arrays its element
//! encodings become; and for a write, the element a column becomes, its parts
//! and their attributes.
//!
//! | anndata element (`encoding-type`) | stored as | Arrow |
//! |---|---|---|
//! | `dataframe` | group: one element per column, `_index`, `column-order` | a table, the index first |
//! | `categorical` | group: `codes` (int, -1 missing), `categories`, `ordered` | `Dictionary(codes type, categories type)`, ordered flag kept |
//! | `nullable-integer`, `nullable-boolean`, `nullable-string-array` | group: `values`, `mask` (true: missing) | the values' type, null where the mask is set |
//! | `array`, `string-array` | a 1-D array | the array's type |
//!
//! Read: [`encoding`] names a node's element; [`categorical`] (or
//! [`categorical_values`]) and [`masked`] assemble an element's arrays into one
//! column. Write: `column_encoding` picks a column's element and
//! `index_element` the dataframe's index; `Categories` (codes and
//! categories, unified across batches), `split_masked` (values and mask) and
//! `row_numbers` (a RangeIndex) give the parts; `array_attributes`,
//! `categorical_attributes`, `nullable_attributes` and
//! `dataframe_attributes` their attributes.

mod categories;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, PrimitiveArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType as ArrowType, Field};
use serde_json::{Map, Value, json};

pub(crate) use categories::Categories;

use super::ConventionError;

/// The element that holds a dataframe's row labels when the index is unnamed:
/// anndata's name for an unnamed pandas index (and for a RangeIndex, stored as
/// the row numbers).
pub(crate) const INDEX: &str = "_index";

/// A `categorical` element's codes: one per row, -1 for missing.
pub(crate) const CODES: &str = "codes";

/// A `categorical` element's categories, in code order.
pub(crate) const CATEGORIES: &str = "categories";

/// A `nullable-*` element's values.
pub(crate) const VALUES: &str = "values";

/// A `nullable-*` element's mask: true where a value is missing.
pub(crate) const MASK: &str = "mask";

const ENCODING_TYPE: &str = "encoding-type";
const ENCODING_VERSION: &str = "encoding-version";
const COLUMN_ORDER: &str = "column-order";
const ORDERED: &str = "ordered";
const DATAFRAME: &str = "dataframe";
const CATEGORICAL: &str = "categorical";
const ARRAY: &str = "array";
const STRING_ARRAY: &str = "string-array";

/// anndata encodings of groups that hold other elements, as opposed to
/// elements that are not tables (sparse matrices).
const CONTAINERS: [&str; 3] = ["anndata", "dict", "raw"];

/// How anndata says a node is to be read: its `encoding-type` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Encoding {
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
pub(crate) enum Nullable {
    /// `nullable-integer`.
    Integer,
    /// `nullable-boolean`.
    Boolean,
    /// `nullable-string-array`.
    String,
}

impl Nullable {
    const ALL: [Self; 3] = [Self::Integer, Self::Boolean, Self::String];

    /// The element's `encoding-type`.
    pub(crate) fn encoding_type(self) -> &'static str {
        match self {
            Self::Integer => "nullable-integer",
            Self::Boolean => "nullable-boolean",
            Self::String => "nullable-string-array",
        }
    }

    /// The nullable element whose values are of Arrow type `t`, if there is
    /// one: what a column of `t` with nulls is written as, and the values a
    /// nullable element of that kind must hold.
    pub(crate) fn of(t: &ArrowType) -> Option<Self> {
        match t {
            ArrowType::Boolean => Some(Self::Boolean),
            t if t.is_integer() => Some(Self::Integer),
            ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => Some(Self::String),
            _ => None,
        }
    }
}

/// The `encoding-type` anndata wrote on a node, as written.
pub(crate) fn encoding_type(attributes: &Map<String, Value>) -> Option<&str> {
    attributes.get(ENCODING_TYPE)?.as_str()
}

/// The anndata encoding named in `attributes`, if any.
pub(crate) fn encoding(attributes: &Map<String, Value>) -> Option<Encoding> {
    let kind = encoding_type(attributes)?;
    Some(match kind {
        DATAFRAME => Encoding::DataFrame {
            index: attributes
                .get(INDEX)
                .and_then(Value::as_str)
                .map(str::to_string),
            column_order: match attributes.get(COLUMN_ORDER) {
                Some(Value::Array(names)) => names
                    .iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect(),
                // anndata writes a lone column as a bare string.
                Some(Value::String(name)) => vec![name.clone()],
                _ => Vec::new(),
            },
        },
        CATEGORICAL => Encoding::Categorical {
            ordered: attributes
                .get(ORDERED)
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        ARRAY | STRING_ARRAY => Encoding::Array,
        other => match Nullable::ALL
            .into_iter()
            .find(|k| k.encoding_type() == other)
        {
            Some(kind) => Encoding::Nullable(kind),
            None => Encoding::Other(other.to_string()),
        },
    })
}

/// Whether an element of encoding `kind` (an [`Encoding::Other`]) holds other
/// elements (`anndata`, `dict`, `raw`), rather than being one that is no table
/// (a sparse matrix).
pub(crate) fn is_container(kind: &str) -> bool {
    CONTAINERS.contains(&kind)
}

/// The element a column of `field` is written as: a dictionary is a
/// `categorical` (its ordered flag kept); a type that a nullable element holds
/// is that element when its nulls are kept (`keep_nulls`); any other column an
/// array ([`Encoding::Array`]).
pub(crate) fn column_encoding(field: &Field, keep_nulls: bool) -> Encoding {
    match field.data_type() {
        ArrowType::Dictionary(..) => Encoding::Categorical {
            ordered: field.dict_is_ordered().unwrap_or(false),
        },
        t => match Nullable::of(t) {
            Some(kind) if keep_nulls => Encoding::Nullable(kind),
            _ => Encoding::Array,
        },
    }
}

/// Whether an array element of Arrow type `t` stores its nulls as the fill
/// value: floats, whose missing value pandas marks as NaN.
pub(crate) fn nulls_as_nan(t: &ArrowType) -> bool {
    t.is_floating()
}

/// The attributes anndata writes on an element: `encoding-type: kind` and its
/// `encoding-version` (0.1.0 for the nullable elements, 0.2.0 for the others).
pub(crate) fn element_attributes(kind: &str) -> Map<String, Value> {
    let version = if kind.starts_with("nullable-") {
        "0.1.0"
    } else {
        "0.2.0"
    };
    let mut attributes = Map::new();
    attributes.insert(ENCODING_TYPE.into(), json!(kind));
    attributes.insert(ENCODING_VERSION.into(), json!(version));
    attributes
}

/// The attributes of an array of Arrow type `t` written as an element (a
/// column, or a part of one: codes, categories, values, mask, row numbers):
/// `string-array` for strings, else `array`.
pub(crate) fn array_attributes(t: &ArrowType) -> Map<String, Value> {
    element_attributes(match t {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => STRING_ARRAY,
        _ => ARRAY,
    })
}

/// The attributes of a `categorical` element's group.
pub(crate) fn categorical_attributes(ordered: bool) -> Map<String, Value> {
    let mut attributes = element_attributes(CATEGORICAL);
    attributes.insert(ORDERED.into(), json!(ordered));
    attributes
}

/// The attributes of a `nullable-*` element's group.
pub(crate) fn nullable_attributes(kind: Nullable) -> Map<String, Value> {
    element_attributes(kind.encoding_type())
}

/// The attributes of a `dataframe` group: its index element and the other
/// columns, in order.
pub(crate) fn dataframe_attributes(index: &str, column_order: &[&String]) -> Map<String, Value> {
    let mut attributes = element_attributes(DATAFRAME);
    attributes.insert(INDEX.into(), json!(index));
    attributes.insert(COLUMN_ORDER.into(), json!(column_order));
    attributes
}

/// The element that holds the row labels of a dataframe written from a table
/// with `columns`, whose pandas index is the column `pandas_index`: that
/// column, else one named `_index`, else (a RangeIndex) the row numbers,
/// stored as `_index`; and whether it is the row numbers.
pub(crate) fn index_element<'a>(
    pandas_index: Option<&'a str>,
    columns: &[String],
) -> (&'a str, bool) {
    match pandas_index {
        Some(name) => (name, false),
        None => (INDEX, !columns.iter().any(|n| n == INDEX)),
    }
}

/// Rows `first_row..first_row + rows` of a pandas RangeIndex, as anndata stores
/// one: the row numbers.
pub(crate) fn row_numbers(first_row: u64, rows: usize) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(
        (first_row..first_row + rows as u64).map(|r| r as i64),
    ))
}

/// A column with nulls as a `nullable-*` element's parts: its values (the
/// nulls' slots as they are) and the mask, true where a value is missing. The
/// inverse of [`masked`].
pub(crate) fn split_masked(array: &ArrayRef) -> [ArrayRef; 2] {
    let missing = match array.logical_nulls() {
        Some(nulls) => !nulls.inner(),
        None => BooleanBuffer::new_unset(array.len()),
    };
    [array.clone(), Arc::new(BooleanArray::new(missing, None))]
}

/// The Arrow type of a categorical column: codes as the keys, categories as the
/// values. `None` when the codes are not a signed integer type.
pub(crate) fn dictionary_type(codes: &ArrowType, categories: &ArrowType) -> Option<ArrowType> {
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
pub(crate) fn categorical(
    codes: &ArrayRef,
    categories: &ArrayRef,
) -> Result<ArrayRef, ConventionError> {
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
pub(crate) fn categorical_values(
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
pub(crate) fn masked(values: &ArrayRef, mask: &ArrayRef) -> Result<ArrayRef, ConventionError> {
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
    fn written_attributes_read_back() {
        for kind in Nullable::ALL {
            assert_eq!(
                encoding(&nullable_attributes(kind)),
                Some(Encoding::Nullable(kind))
            );
        }
        assert_eq!(
            encoding(&categorical_attributes(true)),
            Some(Encoding::Categorical { ordered: true })
        );
        for t in [ArrowType::Utf8View, ArrowType::Float32] {
            assert_eq!(encoding(&array_attributes(&t)), Some(Encoding::Array));
        }
        let a = "a".to_string();
        assert_eq!(
            encoding(&dataframe_attributes("cell", &[&a])),
            Some(Encoding::DataFrame {
                index: Some("cell".into()),
                column_order: vec![a.clone()]
            })
        );
    }

    #[test]
    fn columns_become_the_elements_that_hold_them() {
        let field = |t: ArrowType| Field::new("x", t, true);
        let dictionary =
            ArrowType::Dictionary(Box::new(ArrowType::Int8), Box::new(ArrowType::Utf8));
        assert_eq!(
            column_encoding(&field(dictionary).with_dict_is_ordered(true), true),
            Encoding::Categorical { ordered: true }
        );
        assert_eq!(
            column_encoding(&field(ArrowType::UInt16), true),
            Encoding::Nullable(Nullable::Integer)
        );
        assert_eq!(
            column_encoding(&field(ArrowType::UInt16), false),
            Encoding::Array
        );
        assert_eq!(
            column_encoding(&field(ArrowType::Float64), true),
            Encoding::Array
        );
        let values: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(3)]));
        let [raw, mask] = split_masked(&values);
        assert_eq!(masked(&raw, &mask).unwrap().to_data(), values.to_data());
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
