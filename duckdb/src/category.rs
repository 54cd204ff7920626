//! anndata categoricals as DuckDB `ENUM`s, where the query asks for them
//! (`categorical_values := false`): DuckDB's own dictionary type, fixed when
//! the query binds. Its rows are the codes, written straight into DuckDB's
//! vectors (one to four bytes a row): no category string is copied, hashed or
//! compared per row, so a `GROUP BY` or a join on one groups small integers.
//!
//! The categories are read when the query binds ([`ZarrTable::categories`]);
//! every range the scan reads reads them again, and a range whose categories
//! differ from the bound ones (the store rewritten in between) is an error,
//! never codes read against the wrong categories.
//!
//! A categorical is an `ENUM` only where its categories can be one: strings,
//! none null, none repeated. Any other (integer categories, say) is handed over
//! as its values' type, as DuckDB's Arrow import reads a dictionary.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_schema::DataType;
use duckdb_neo::connection::Context;
use duckdb_neo::logical_type::LogicalType;
use duckdb_neo::vector::{Unknown, Vector};
use duckdb_neo::{Error, Parameters, QueryParameter, Result};

/// A column handed to DuckDB as an `ENUM` of its categories.
#[derive(Debug, Clone)]
pub(crate) struct Categories {
    name: String,
    values: ArrayRef,
}

impl Categories {
    /// `values` as the categories of an `ENUM` column `name`, or `None` where
    /// they cannot be one (not strings, a null, a repeated one).
    pub(crate) fn of(name: &str, values: ArrayRef) -> Option<Self> {
        let strings = strings(&values)?;
        let mut seen = HashSet::with_capacity(strings.len());
        if !strings.iter().all(|s| seen.insert(*s)) || u32::try_from(strings.len()).is_err() {
            return None;
        }
        Some(Self {
            name: name.to_string(),
            values,
        })
    }

    /// The `ENUM` type of the categories, in their order.
    pub(crate) fn logical_type(&self, context: &Context) -> Result<LogicalType> {
        let strings = strings(&self.values).unwrap_or_default();
        let parameters: Vec<&dyn QueryParameter> =
            strings.iter().map(|s| s as &dyn QueryParameter).collect();
        LogicalType::create(context, "ENUM", Parameters::positional(&parameters))
    }

    /// The keys of `column` (a dictionary array as the scan read it), after
    /// checking that its dictionary is the bound categories.
    pub(crate) fn keys(&self, column: &ArrayRef) -> Result<ArrayRef> {
        let dictionary = column.as_any_dictionary_opt().ok_or_else(|| {
            Error::invalid_input(format!(
                "zarrow: internal error: categorical {} read as {}",
                self.name,
                column.data_type()
            ))
        })?;
        if dictionary.values().as_ref() != self.values.as_ref() {
            return Err(Error::invalid_input(format!(
                "zarrow: the categories of {} changed since the query was planned; plan it again",
                self.name
            )));
        }
        Ok(dictionary.keys().slice(0, column.len()))
    }

    /// Write `keys` (as [`Self::keys`] gave them, sliced to the rows) into
    /// `vector`, an output vector of this `ENUM` type: each row's code in the
    /// width DuckDB stores an `ENUM` of this many entries, a null key a null.
    pub(crate) fn write(&self, keys: &ArrayRef, vector: &mut Vector<'_, Unknown>) -> Result<()> {
        match keys.data_type() {
            DataType::Int8 => self.write_as::<Int8Type>(keys, vector),
            DataType::Int16 => self.write_as::<Int16Type>(keys, vector),
            DataType::Int32 => self.write_as::<Int32Type>(keys, vector),
            DataType::Int64 => self.write_as::<Int64Type>(keys, vector),
            other => Err(Error::invalid_input(format!(
                "zarrow: categorical {} has codes of type {other}",
                self.name
            ))),
        }
    }

    fn write_as<K: ArrowPrimitiveType>(
        &self,
        keys: &ArrayRef,
        vector: &mut Vector<'_, Unknown>,
    ) -> Result<()>
    where
        K::Native: Into<i64>,
    {
        let keys: &PrimitiveArray<K> = keys.as_primitive::<K>();
        let nulls = keys.logical_nulls().filter(|n| n.null_count() > 0);
        let entries = self.values.len() as i64;
        // Every valid key is a code of the categories (a null's slot may hold
        // anything: it is written as 0).
        let valid = |row: usize| nulls.as_ref().is_none_or(|n| n.is_valid(row));
        let values = keys.values();
        let inside = |k: &K::Native| (0..entries).contains(&(*k).into());
        let all_inside = match &nulls {
            // (No early exit: the loop vectorizes.)
            None => values.iter().fold(true, |ok, k| ok & inside(k)),
            Some(_) => values
                .iter()
                .enumerate()
                .all(|(r, k)| !valid(r) || inside(k)),
        };
        if !all_inside {
            return Err(Error::invalid_input(format!(
                "zarrow: a code of categorical {} lies outside its categories",
                self.name
            )));
        }
        vector.set_size(keys.len())?;
        let mut writer = vector.writer()?;
        let data = writer.as_mut_ptr().cast::<u8>();
        if data.is_null() || writer.len() != keys.len() {
            return Err(Error::invalid_input(
                "zarrow: internal error: an ENUM output vector without storage",
            ));
        }
        macro_rules! fill {
            ($t:ty) => {{
                let out = std::slice::from_raw_parts_mut(data.cast::<$t>(), values.len());
                match &nulls {
                    None => out
                        .iter_mut()
                        .zip(values.iter())
                        .for_each(|(o, k)| *o = Into::<i64>::into(*k) as $t),
                    Some(_) => {
                        out.iter_mut()
                            .zip(values.iter())
                            .enumerate()
                            .for_each(|(r, (o, k))| {
                                *o = if valid(r) {
                                    Into::<i64>::into(*k) as $t
                                } else {
                                    0
                                }
                            })
                    }
                }
            }};
        }
        // SAFETY: the vector is flat, writable, `keys.len()` rows long, of an
        // ENUM of `entries` entries, which DuckDB stores as u8 up to 255
        // entries, u16 up to 65,535 and u32 beyond (the v2 C API's contract);
        // every slot is written, each with a code below `entries` (checked
        // above), which fits the width.
        unsafe {
            if entries <= i64::from(u8::MAX) {
                fill!(u8);
            } else if entries <= i64::from(u16::MAX) {
                fill!(u16);
            } else {
                fill!(u32);
            }
            writer.fill_validity(true)?;
            if let Some(nulls) = &nulls {
                for row in (0..keys.len()).filter(|&r| nulls.is_null(r)) {
                    writer.set_row_validity(row, false)?;
                }
            }
        }
        Ok(())
    }
}

/// `values` as strings, or `None` when they are not strings or one is null.
fn strings(values: &ArrayRef) -> Option<Vec<&str>> {
    match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
        DataType::Utf8View => values.as_string_view().iter().collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray, StringViewArray};

    use super::Categories;

    #[test]
    fn only_unique_non_null_strings_make_an_enum() {
        let strings = |v: Vec<Option<&str>>| Arc::new(StringArray::from(v)) as ArrayRef;
        assert!(Categories::of("c", strings(vec![Some("b"), Some("a")])).is_some());
        let view = Arc::new(StringViewArray::from(vec!["x", "y"])) as ArrayRef;
        assert!(Categories::of("c", view).is_some());
        assert!(Categories::of("c", strings(vec![])).is_some());
        assert!(Categories::of("c", strings(vec![Some("a"), Some("a")])).is_none());
        assert!(Categories::of("c", strings(vec![Some("a"), None])).is_none());
        let ints = Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef;
        assert!(Categories::of("c", ints).is_none());
    }
}
