//! zarrow's own attributes: what its writer records, under the attribute
//! `zarrow`, for what Zarr's data types cannot say, and what its reader takes
//! back from them.
//!
//! | node | recorded (`attributes.zarrow`) | read back as |
//! |---|---|---|
//! | array | `arrow_type`: the Arrow type written, by name | the string layout ([`recorded_string_type`]); a dictionary's key type ([`recorded_dictionary_keys`]) |
//! | array of `Timestamp(_, tz)` | `timezone`: numpy's datetime64 is zoneless, the values are UTC | the timestamp's timezone ([`recorded_timezone`]) |
//! | group (plain layout) | `columns`: the table's column order | the columns' order ([`recorded_columns`]) |

use arrow_array::ArrayRef;
use arrow_schema::DataType as ArrowType;
use serde_json::{Map, Value, json};

use super::ConventionError;
use crate::metadata::StringType;

/// The attribute under which zarrow records what a reader of its own needs.
pub(crate) const ATTRIBUTE: &str = "zarrow";

/// The Arrow type an array was written from, by name (`Utf8View`, ...).
const ARROW_TYPE: &str = "arrow_type";

/// A timestamp array's timezone.
const TIMEZONE: &str = "timezone";

/// A group's column order.
const COLUMNS: &str = "columns";

/// The attributes zarrow records on an array written from Arrow type
/// `arrow_type`: the type's name and, for a timestamp with one, its timezone.
pub(crate) fn array_attributes(arrow_type: &ArrowType) -> Map<String, Value> {
    let mut zarrow = Map::new();
    zarrow.insert(ARROW_TYPE.into(), json!(arrow_type.to_string()));
    // numpy's datetime64 has no timezone: the values are UTC, the zone kept here.
    if let ArrowType::Timestamp(_, Some(tz)) = arrow_type {
        zarrow.insert(TIMEZONE.into(), json!(tz.as_ref()));
    }
    let mut attributes = Map::new();
    attributes.insert(ATTRIBUTE.into(), Value::Object(zarrow));
    attributes
}

/// The attributes zarrow records on a plain group: its column order.
pub(crate) fn group_attributes(columns: &[String]) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert(ATTRIBUTE.into(), json!({ COLUMNS: columns }));
    attributes
}

/// One entry of zarrow's attribute.
fn recorded<'a>(attributes: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    attributes.get(ATTRIBUTE)?.get(key)
}

/// The Arrow type zarrow's writer recorded in `attributes.zarrow.arrow_type`
/// (arrow-rs' own spelling, which it parses back).
fn recorded_type(attributes: &Map<String, Value>) -> Option<ArrowType> {
    recorded(attributes, ARROW_TYPE)?.as_str()?.parse().ok()
}

/// The string layout zarrow's writer recorded in `attributes.zarrow.arrow_type`
/// (of a dictionary: of its values).
pub(crate) fn recorded_string_type(attributes: &Map<String, Value>) -> Option<StringType> {
    let recorded = recorded_type(attributes)?;
    let values = match &recorded {
        ArrowType::Dictionary(_, values) => values.as_ref(),
        other => other,
    };
    match values {
        ArrowType::Utf8 | ArrowType::Binary => Some(StringType::Utf8),
        ArrowType::LargeUtf8 | ArrowType::LargeBinary => Some(StringType::LargeUtf8),
        ArrowType::Utf8View | ArrowType::BinaryView => Some(StringType::Utf8View),
        _ => None,
    }
}

/// The key type of a dictionary column the plain layout stored (Zarr has no
/// dictionary type): as a categorical, whose codes are cast to it; before, as
/// its values, which are encoded again with keys of it.
pub(crate) fn recorded_dictionary_keys(attributes: &Map<String, Value>) -> Option<ArrowType> {
    match recorded_type(attributes)? {
        ArrowType::Dictionary(keys, _) if keys.is_dictionary_key_type() => Some(*keys),
        _ => None,
    }
}

/// Whether keys of type `keys` number `count` values (a key for each).
pub(crate) fn keys_number(keys: &ArrowType, count: u64) -> bool {
    let most: u64 = match keys {
        ArrowType::Int8 => i8::MAX as u64,
        ArrowType::Int16 => i16::MAX as u64,
        ArrowType::Int32 => i32::MAX as u64,
        ArrowType::Int64 => i64::MAX as u64,
        ArrowType::UInt8 => u8::MAX.into(),
        ArrowType::UInt16 => u16::MAX.into(),
        ArrowType::UInt32 => u32::MAX.into(),
        ArrowType::UInt64 => u64::MAX,
        _ => return false,
    };
    count == 0 || count - 1 <= most
}

/// `values` encoded as a dictionary with `keys` (a recorded dictionary column,
/// read back): the distinct values in order of first appearance.
///
/// # Errors
/// More distinct values than `keys` can number.
pub(crate) fn dictionary(values: &ArrayRef, keys: &ArrowType) -> Result<ArrayRef, ConventionError> {
    let t = ArrowType::Dictionary(Box::new(keys.clone()), Box::new(values.data_type().clone()));
    Ok(arrow_cast::cast(values, &t)?)
}

/// The timezone zarrow's writer recorded for a `Timestamp` column in
/// `attributes.zarrow.timezone` (numpy's datetime64 values are UTC and zoneless).
pub(crate) fn recorded_timezone(attributes: &Map<String, Value>) -> Option<String> {
    let tz = recorded(attributes, TIMEZONE)?.as_str()?;
    Some(tz.to_string())
}

/// The column order zarrow's writer recorded in a group's `attributes.zarrow.columns`.
pub(crate) fn recorded_columns(attributes: &Map<String, Value>) -> Option<Vec<String>> {
    recorded(attributes, COLUMNS)?
        .as_array()?
        .iter()
        .map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// What zarrow's writer recorded on a node, read back: the functions above,
/// asked once (when the node is opened, as part of its
/// [`Conventions`](super::Conventions)).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub(crate) struct Recorded {
    /// An array's string layout ([`recorded_string_type`]).
    pub string_type: Option<StringType>,
    /// The key type of a dictionary column stored as its values
    /// ([`recorded_dictionary_keys`]).
    pub dictionary_keys: Option<ArrowType>,
    /// A timestamp array's timezone ([`recorded_timezone`]).
    pub timezone: Option<String>,
    /// A group's column order ([`recorded_columns`]).
    pub columns: Option<Vec<String>>,
}

impl Recorded {
    /// What `attributes` record.
    pub(crate) fn of(attributes: &Map<String, Value>) -> Self {
        Self {
            string_type: recorded_string_type(attributes),
            dictionary_keys: recorded_dictionary_keys(attributes),
            timezone: recorded_timezone(attributes),
            columns: recorded_columns(attributes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::TimeUnit;

    #[test]
    fn what_is_recorded_reads_back() {
        for (t, layout) in [
            (ArrowType::Utf8, StringType::Utf8),
            (ArrowType::LargeBinary, StringType::LargeUtf8),
            (ArrowType::Utf8View, StringType::Utf8View),
        ] {
            assert_eq!(recorded_string_type(&array_attributes(&t)), Some(layout));
        }
        assert_eq!(
            recorded_string_type(&array_attributes(&ArrowType::Int8)),
            None
        );
        let zoned = ArrowType::Timestamp(TimeUnit::Second, Some("Europe/Paris".into()));
        assert_eq!(
            recorded_timezone(&array_attributes(&zoned)).as_deref(),
            Some("Europe/Paris")
        );
        let dictionary =
            ArrowType::Dictionary(Box::new(ArrowType::Int16), Box::new(ArrowType::LargeUtf8));
        let attributes = array_attributes(&dictionary);
        assert_eq!(
            recorded_string_type(&attributes),
            Some(StringType::LargeUtf8)
        );
        assert_eq!(
            recorded_dictionary_keys(&attributes),
            Some(ArrowType::Int16)
        );
        assert_eq!(
            recorded_dictionary_keys(&array_attributes(&ArrowType::Utf8)),
            None
        );
        let columns = vec!["b".to_string(), "a".to_string()];
        assert_eq!(recorded_columns(&group_attributes(&columns)), Some(columns));
        assert_eq!(recorded_columns(&Map::new()), None);
    }
}
