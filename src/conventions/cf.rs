//! The CF conventions xarray writes into array attributes, decoded to the values
//! `xarray.open_zarr` gives:
//!
//! - packed data: `scale_factor`, `add_offset`, and `_FillValue` / `missing_value`
//!   (masked values become NaN), into the float type xarray picks;
//! - time: `units: "<unit> since <date>"` with a `standard`, `gregorian` or
//!   `proleptic_gregorian` `calendar` becomes `Timestamp(ns)` (masked values null);
//!   another calendar is refused by name;
//! - dimension names (`dimension_names` in v3, `_ARRAY_DIMENSIONS` in v2), read
//!   ([`dimension_names`], carried on an Arrow field as [`DIMENSION_NAMES_KEY`])
//!   and recorded on the arrays zarrow writes (`record_dimension_names`).
//!
//! A Zarr v2 array written by xarray (it has `_ARRAY_DIMENSIONS`) uses its
//! `fill_value` as `_FillValue`, as xarray does.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, TimestampNanosecondArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use serde_json::{Map, Value, json};

use super::ConventionError;
use crate::metadata::{ArrayMetadata, FillValue};

/// xarray's attribute for a v2 array's dimension names (v3 has a field).
const V2_DIMENSIONS: &str = "_ARRAY_DIMENSIONS";

/// The field metadata key under which a column's dimension names are recorded
/// (a JSON list; `null` for an unnamed dimension).
pub(crate) const DIMENSION_NAMES_KEY: &str = "dimension_names";

/// The dimension names of an array: v3 `dimension_names`, else v2 xarray's
/// `_ARRAY_DIMENSIONS` attribute.
pub(crate) fn dimension_names(meta: &ArrayMetadata) -> Option<Vec<Option<String>>> {
    if let Some(names) = &meta.dimension_names {
        return Some(names.clone());
    }
    let names = meta.attributes.get(V2_DIMENSIONS)?.as_array()?;
    Some(
        names
            .iter()
            .map(|n| n.as_str().map(str::to_string))
            .collect(),
    )
}

/// The Arrow field metadata that carries an array's [`dimension_names`], under
/// [`DIMENSION_NAMES_KEY`] (empty when it has none).
pub(crate) fn dimension_metadata(meta: &ArrayMetadata) -> HashMap<String, String> {
    let mut metadata = HashMap::new();
    if let Some(names) = dimension_names(meta) {
        metadata.insert(
            DIMENSION_NAMES_KEY.to_string(),
            serde_json::to_string(&names).unwrap_or_default(),
        );
    }
    metadata
}

/// Record `names` as the dimension names of the array `meta` describes, as
/// xarray reads them: v3 `dimension_names`, v2 the `_ARRAY_DIMENSIONS`
/// attribute (after the attributes it has).
pub(crate) fn record_dimension_names(meta: &mut ArrayMetadata, names: &[&str]) {
    if meta.zarr_format == 2 {
        meta.attributes.insert(V2_DIMENSIONS.into(), json!(names));
    } else {
        meta.dimension_names = Some(names.iter().map(|n| Some(n.to_string())).collect());
    }
}

/// How an array's CF attributes change its values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CfDecode {
    scale: Option<f64>,
    offset: Option<f64>,
    /// Raw values that mean "missing" (`_FillValue`, `missing_value`).
    missing: Vec<f64>,
    time: Option<Time>,
    out: ArrowType,
}

/// `<unit> since <reference>`: nanoseconds per unit and the reference instant.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time {
    unit_ns: i64,
    /// May lie outside a nanosecond timestamp's years (1677-2262): "days since
    /// 0001-01-01" is common; only the sums must fit.
    reference_ns: i128,
}

impl CfDecode {
    /// What the attributes of `meta` ask for, if anything, for values of Arrow type
    /// `raw` (numbers only: strings and bytes are left alone).
    ///
    /// # Errors
    /// A time variable in a calendar other than the standard (proleptic)
    /// Gregorian one, or `units` zarrow cannot parse.
    pub(crate) fn from_metadata(
        meta: &ArrayMetadata,
        raw: &ArrowType,
    ) -> Result<Option<Self>, ConventionError> {
        if !raw.is_numeric() {
            return Ok(None);
        }
        let attrs = &meta.attributes;
        let number = |key: &str| attrs.get(key).and_then(Value::as_f64);
        let scale = number("scale_factor");
        let offset = number("add_offset");
        let mut missing = Vec::new();
        for key in ["_FillValue", "missing_value"] {
            match attrs.get(key) {
                Some(Value::Array(values)) => missing.extend(values.iter().filter_map(as_f64)),
                Some(v) => missing.extend(as_f64(v)),
                None => {}
            }
        }
        if meta.zarr_format == 2
            && !meta.fill_value_unset
            && !attrs.contains_key("_FillValue")
            && attrs.contains_key(V2_DIMENSIONS)
        {
            missing.extend(fill_as_f64(&meta.fill_value));
        }
        let time = time(attrs)?;
        if time.is_some() && raw == &ArrowType::Int64 {
            // NaT: numpy's missing time, stored as the smallest int64.
            missing.push(i64::MIN as f64);
        }
        // Masking NaN in floats changes nothing: the type and values stay.
        let only_nan = missing.iter().all(|m| m.is_nan()) && raw.is_floating();
        if scale.is_none() && offset.is_none() && time.is_none() && (missing.is_empty() || only_nan)
        {
            return Ok(None);
        }
        let out = if time.is_some() {
            ArrowType::Timestamp(TimeUnit::Nanosecond, None)
        } else {
            float_type(raw, scale.is_some() || offset.is_some())
        };
        Ok(Some(Self {
            scale,
            offset,
            missing,
            time,
            out,
        }))
    }

    /// The Arrow type of the decoded values.
    pub(crate) fn data_type(&self) -> &ArrowType {
        &self.out
    }

    /// Decode `raw` values.
    ///
    /// # Errors
    /// A time that does not fit a 64-bit nanosecond timestamp.
    pub(crate) fn decode(&self, raw: &ArrayRef) -> Result<ArrayRef, ConventionError> {
        let values =
            to_f64(raw).ok_or_else(|| ConventionError::NotNumeric(raw.data_type().clone()))?;
        let is_missing = |v: f64| {
            self.missing
                .iter()
                .any(|&m| v == m || (v.is_nan() && m.is_nan()))
        };
        let valid = |i: usize| raw.is_valid(i) && !is_missing(values[i]);
        if let Some(time) = self.time {
            let ints = as_i64_exact(raw);
            let mut out = Vec::with_capacity(values.len());
            for i in 0..values.len() {
                if !valid(i) {
                    out.push(0);
                    continue;
                }
                let ns = match &ints {
                    Some(ints) => Some(i128::from(ints[i]) * i128::from(time.unit_ns)),
                    None => {
                        let ns = (values[i] * time.unit_ns as f64).round();
                        (ns.is_finite() && ns.abs() < 1e30).then_some(ns as i128)
                    }
                }
                .and_then(|ns| i64::try_from(ns + time.reference_ns).ok())
                .ok_or(ConventionError::TimeOutOfRange(values[i]))?;
                out.push(ns);
            }
            let nulls = NullBuffer::from_iter((0..values.len()).map(valid));
            let nulls = (nulls.null_count() > 0).then_some(nulls);
            return Ok(Arc::new(TimestampNanosecondArray::new(out.into(), nulls)));
        }
        // Only what the attributes give is applied (x * 1 + 0 would turn -0 into 0).
        let (scale, offset) = (self.scale, self.offset);
        let decode = |i: usize| match (valid(i), scale, offset) {
            (false, ..) => f64::NAN,
            (true, Some(s), Some(o)) => values[i] * s + o,
            (true, Some(s), None) => values[i] * s,
            (true, None, Some(o)) => values[i] + o,
            (true, None, None) => values[i],
        };
        Ok(match self.out {
            ArrowType::Float32 => {
                // xarray computes in float32 when it picks float32.
                let f32s = to_f32(raw);
                Arc::new(Float32Array::from_iter_values((0..values.len()).map(
                    |i| match (&f32s, valid(i)) {
                        (_, false) => f32::NAN,
                        (Some(v), true) => {
                            let mut x = v[i];
                            if let Some(s) = scale {
                                x *= s as f32;
                            }
                            if let Some(o) = offset {
                                x += o as f32;
                            }
                            x
                        }
                        (None, true) => decode(i) as f32,
                    },
                )))
            }
            _ => Arc::new(Float64Array::from_iter_values(
                (0..values.len()).map(decode),
            )),
        })
    }
}

/// The float type xarray decodes packed or masked values of type `raw` into.
fn float_type(raw: &ArrowType, scaled: bool) -> ArrowType {
    use ArrowType as T;
    match raw {
        // Scale factors and offsets from JSON are Python floats (float64).
        _ if scaled => T::Float64,
        T::Float16 | T::Int8 | T::Int16 | T::UInt8 | T::UInt16 | T::Float32 => T::Float32,
        _ => T::Float64,
    }
}

/// A number as CF attributes hold it: JSON, `"NaN"` / `"Infinity"`, or (as
/// xarray writes float fill values in Zarr v3) base64 of its little-endian
/// float64 (or float32) bytes.
fn as_f64(v: &Value) -> Option<f64> {
    use base64::Engine as _;
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(other)
                    .ok()?;
                match bytes.len() {
                    8 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
                    4 => Some(f64::from(f32::from_le_bytes(bytes.try_into().ok()?))),
                    _ => None,
                }
            }
        },
        _ => None,
    }
}

fn fill_as_f64(fill: &FillValue) -> Option<f64> {
    match fill {
        FillValue::Int(i) => Some(*i as f64),
        FillValue::UInt(u) => Some(*u as f64),
        FillValue::Float(f) => Some(*f),
        _ => None,
    }
}

/// The values of a numeric array as f64.
fn to_f64(a: &ArrayRef) -> Option<Vec<f64>> {
    macro_rules! collect {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| v as f64)
                .collect()
        };
    }
    Some(match a.data_type() {
        ArrowType::Int8 => collect!(Int8Type),
        ArrowType::Int16 => collect!(Int16Type),
        ArrowType::Int32 => collect!(Int32Type),
        ArrowType::Int64 => collect!(Int64Type),
        ArrowType::UInt8 => collect!(UInt8Type),
        ArrowType::UInt16 => collect!(UInt16Type),
        ArrowType::UInt32 => collect!(UInt32Type),
        ArrowType::UInt64 => collect!(UInt64Type),
        ArrowType::Float16 => a
            .as_primitive::<Float16Type>()
            .values()
            .iter()
            .map(|v| v.to_f64())
            .collect(),
        ArrowType::Float32 => collect!(Float32Type),
        ArrowType::Float64 => collect!(Float64Type),
        _ => return None,
    })
}

/// The values as f32, for types that convert to f32 exactly.
fn to_f32(a: &ArrayRef) -> Option<Vec<f32>> {
    macro_rules! collect {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| f32::from(v))
                .collect()
        };
    }
    Some(match a.data_type() {
        ArrowType::Int8 => collect!(Int8Type),
        ArrowType::Int16 => collect!(Int16Type),
        ArrowType::UInt8 => collect!(UInt8Type),
        ArrowType::UInt16 => collect!(UInt16Type),
        ArrowType::Float16 => a
            .as_primitive::<Float16Type>()
            .values()
            .iter()
            .map(|v| v.to_f32())
            .collect(),
        ArrowType::Float32 => a.as_primitive::<Float32Type>().values().to_vec(),
        _ => return None,
    })
}

/// Integer values as i64, exactly (None for floats and for u64 beyond i64).
fn as_i64_exact(a: &ArrayRef) -> Option<Vec<i64>> {
    macro_rules! collect {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| i64::from(v))
                .collect()
        };
    }
    Some(match a.data_type() {
        ArrowType::Int8 => collect!(Int8Type),
        ArrowType::Int16 => collect!(Int16Type),
        ArrowType::Int32 => collect!(Int32Type),
        ArrowType::Int64 => a.as_primitive::<Int64Type>().values().to_vec(),
        ArrowType::UInt8 => collect!(UInt8Type),
        ArrowType::UInt16 => collect!(UInt16Type),
        ArrowType::UInt32 => collect!(UInt32Type),
        ArrowType::UInt64 => a
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|&v| i64::try_from(v).ok())
            .collect::<Option<_>>()?,
        _ => return None,
    })
}

/// The calendars whose dates are the proleptic Gregorian ones numpy and Arrow use.
const GREGORIAN: [&str; 3] = ["standard", "gregorian", "proleptic_gregorian"];

/// Parse `units: "<unit> since <date>"` and `calendar`.
fn time(attrs: &Map<String, Value>) -> Result<Option<Time>, ConventionError> {
    let Some(units) = attrs.get("units").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some((unit, reference)) = units.split_once(" since ") else {
        return Ok(None);
    };
    let unit_ns: i64 = match unit.trim().to_ascii_lowercase().as_str() {
        "days" | "day" | "d" => 86_400_000_000_000,
        "hours" | "hour" | "hr" | "h" => 3_600_000_000_000,
        "minutes" | "minute" | "min" => 60_000_000_000,
        "seconds" | "second" | "sec" | "s" => 1_000_000_000,
        "milliseconds" | "millisecond" | "msec" | "ms" => 1_000_000,
        "microseconds" | "microsecond" | "usec" | "us" => 1_000,
        "nanoseconds" | "nanosecond" | "nsec" | "ns" => 1,
        other => {
            return Err(ConventionError::TimeUnit {
                unit: other.to_string(),
                units: units.to_string(),
            });
        }
    };
    let calendar = attrs
        .get("calendar")
        .and_then(Value::as_str)
        .unwrap_or("standard")
        .to_ascii_lowercase();
    if !GREGORIAN.contains(&calendar.as_str()) {
        return Err(ConventionError::Calendar {
            calendar,
            units: units.to_string(),
        });
    }
    let reference_ns =
        parse_instant(reference.trim()).ok_or_else(|| ConventionError::ReferenceDate {
            units: units.to_string(),
        })?;
    // Before 1582-10-15 the standard calendar is Julian: not numpy's dates.
    if calendar != "proleptic_gregorian" && reference_ns < GREGORIAN_START_NS {
        return Err(ConventionError::JulianDates {
            calendar,
            units: units.to_string(),
        });
    }
    Ok(Some(Time {
        unit_ns,
        reference_ns,
    }))
}

/// 1582-10-15T00:00:00 in nanoseconds since 1970.
const GREGORIAN_START_NS: i128 = -141_427 * 86_400_000_000_000;

/// Parse `YYYY-MM-DD[( |T)hh:mm[:ss[.fff]]][Z|±hh[:mm]]` to nanoseconds since
/// 1970-01-01T00:00:00 UTC.
fn parse_instant(s: &str) -> Option<i128> {
    let (date, rest) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let (sign, date) = match date.strip_prefix('-') {
        Some(d) => (-1, d),
        None => (1, date),
    };
    let mut parts = date.splitn(3, '-');
    let year: i64 = sign * parts.next()?.parse::<i64>().ok()?;
    let month: u32 = parts.next().map_or(Some(1), |m| m.parse().ok())?;
    let day: u32 = parts.next().map_or(Some(1), |d| d.parse().ok())?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (time, zone) = match rest.find(['Z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let mut seconds_of_day: f64 = 0.0;
    if !time.is_empty() {
        let mut hms = time.split(':');
        let h: f64 = hms.next()?.parse().ok()?;
        let m: f64 = hms.next().map_or(Some(0.0), |m| m.parse().ok())?;
        let sec: f64 = hms.next().map_or(Some(0.0), |s| s.parse().ok())?;
        seconds_of_day = h * 3600.0 + m * 60.0 + sec;
    }
    let offset_seconds: i64 = match zone {
        "" | "Z" | "UTC" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let digits = &z[1..];
            let (h, m) = digits.split_once(':').unwrap_or((digits, "0"));
            sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60)
        }
    };
    if year.abs() > 1_000_000 || !(0.0..=86_401.0).contains(&seconds_of_day) {
        return None;
    }
    let days = i128::from(days_from_civil(year, month, day));
    let seconds = days * 86_400 - i128::from(offset_seconds);
    Some(seconds * 1_000_000_000 + (seconds_of_day * 1e9).round() as i128)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::TimestampNanosecondType;
    use arrow_array::{Int16Array, Int64Array};
    use serde_json::json;

    fn attrs(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn reference_dates_parse_to_epoch_nanoseconds() {
        assert_eq!(parse_instant("1970-01-01"), Some(0));
        assert_eq!(parse_instant("2020-01-01"), Some(1_577_836_800_000_000_000));
        assert_eq!(
            parse_instant("2020-01-01 06:00:00"),
            Some(1_577_836_800_000_000_000 + 6 * 3_600_000_000_000)
        );
        assert_eq!(
            parse_instant("2020-01-01T00:00:00+01:00"),
            Some(1_577_836_800_000_000_000 - 3_600_000_000_000)
        );
        assert_eq!(parse_instant("1582-10-15"), Some(GREGORIAN_START_NS));
        assert_eq!(parse_instant("not a date"), None);
    }

    #[test]
    fn other_calendars_are_refused_by_name() {
        let err = time(&attrs(
            json!({"units": "days since 2000-01-01", "calendar": "noleap"}),
        ))
        .unwrap_err();
        assert!(
            matches!(&err, ConventionError::Calendar { calendar, .. } if calendar == "noleap"),
            "{err}"
        );
        assert!(err.to_string().contains("noleap"), "{err}");
        let julian = time(&attrs(json!({"units": "days since 1500-01-01"}))).unwrap_err();
        assert!(
            matches!(julian, ConventionError::JulianDates { .. }),
            "{julian}"
        );
        let unit = time(&attrs(json!({"units": "fortnights since 2000-01-01"}))).unwrap_err();
        assert!(matches!(unit, ConventionError::TimeUnit { .. }), "{unit}");
        let date = time(&attrs(json!({"units": "days since the flood"}))).unwrap_err();
        assert!(
            matches!(date, ConventionError::ReferenceDate { .. }),
            "{date}"
        );
        assert!(time(&attrs(json!({"units": "days since 2000-01-01"}))).is_ok());
        assert!(matches!(time(&attrs(json!({"units": "metres"}))), Ok(None)));
    }

    fn meta_with(attributes: Map<String, Value>) -> ArrayMetadata {
        let doc = json!({
            "zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": attributes,
        });
        match crate::metadata::parse_zarr_json("zarr.json", doc.to_string().as_bytes()).unwrap() {
            crate::NodeMetadata::Array(m) => *m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn recorded_dimension_names_read_back() {
        let cell = Some(vec![Some("cell".to_string())]);
        let mut v3 = meta_with(Map::new());
        record_dimension_names(&mut v3, &["cell"]);
        assert_eq!(v3.dimension_names, cell);
        assert!(v3.attributes.is_empty());
        let mut v2 = meta_with(Map::new());
        v2.zarr_format = 2;
        record_dimension_names(&mut v2, &["cell"]);
        assert_eq!(v2.dimension_names, None);
        assert_eq!(dimension_names(&v2), cell);
        assert_eq!(dimension_metadata(&v2)[DIMENSION_NAMES_KEY], r#"["cell"]"#);
    }

    #[test]
    fn packed_values_are_scaled_and_masked() {
        let meta = meta_with(attrs(
            json!({"scale_factor": 0.1, "add_offset": 1000.0, "_FillValue": -1}),
        ));
        let cf = CfDecode::from_metadata(&meta, &ArrowType::Int16)
            .unwrap()
            .unwrap();
        assert_eq!(cf.data_type(), &ArrowType::Float64);
        let raw: ArrayRef = Arc::new(Int16Array::from(vec![132, -1, 0]));
        let out = cf.decode(&raw).unwrap();
        let out = out.as_primitive::<Float64Type>();
        assert_eq!(out.value(0), 132.0 * 0.1 + 1000.0);
        assert!(out.value(1).is_nan());
        assert_eq!(out.value(2), 1000.0);
    }

    #[test]
    fn times_become_nanosecond_timestamps() {
        let meta = meta_with(attrs(
            json!({"units": "hours since 2020-01-01", "calendar": "proleptic_gregorian", "_FillValue": -9}),
        ));
        let cf = CfDecode::from_metadata(&meta, &ArrowType::Int64)
            .unwrap()
            .unwrap();
        let raw: ArrayRef = Arc::new(Int64Array::from(vec![0, 25, -9]));
        let out = cf.decode(&raw).unwrap();
        let out = out.as_primitive::<TimestampNanosecondType>();
        assert_eq!(out.value(0), 1_577_836_800_000_000_000);
        assert_eq!(
            out.value(1),
            1_577_836_800_000_000_000 + 25 * 3_600_000_000_000
        );
        assert!(out.is_null(2));
    }
}
