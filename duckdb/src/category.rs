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
        let strings: Vec<&str> = match values.data_type() {
            DataType::Utf8 => values.as_string::<i32>().iter().collect::<Option<_>>()?,
            DataType::LargeUtf8 => values.as_string::<i64>().iter().collect::<Option<_>>()?,
            DataType::Utf8View => values.as_string_view().iter().collect::<Option<_>>()?,
            _ => return None,
        };
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
        let strings = self.strings();
        let parameters: Vec<&dyn QueryParameter> =
            strings.iter().map(|s| s as &dyn QueryParameter).collect();
        LogicalType::create(context, "ENUM", Parameters::positional(&parameters))
    }

    fn strings(&self) -> Vec<&str> {
        let v = &self.values;
        match v.data_type() {
            DataType::Utf8 => v.as_string::<i32>().iter().flatten().collect(),
            DataType::LargeUtf8 => v.as_string::<i64>().iter().flatten().collect(),
            _ => v.as_string_view().iter().flatten().collect(),
        }
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
        let entries = self.values.len();
        let codes: Vec<u32> = match keys.data_type() {
            DataType::Int8 => codes::<Int8Type>(keys, entries)?,
            DataType::Int16 => codes::<Int16Type>(keys, entries)?,
            DataType::Int32 => codes::<Int32Type>(keys, entries)?,
            DataType::Int64 => codes::<Int64Type>(keys, entries)?,
            other => {
                return Err(Error::invalid_input(format!(
                    "zarrow: categorical {} has codes of type {other}",
                    self.name
                )));
            }
        };
        vector.set_size(codes.len())?;
        let mut writer = vector.writer()?;
        let data = writer.as_mut_ptr().cast::<u8>();
        if data.is_null() || writer.len() != codes.len() {
            return Err(Error::invalid_input(
                "zarrow: internal error: an ENUM output vector without storage",
            ));
        }
        // SAFETY: the vector is flat, writable, `codes.len()` rows long, of an
        // ENUM of `entries` entries, which DuckDB stores as u8 up to 255
        // entries, u16 up to 65,535 and u32 beyond (the v2 C API's contract);
        // every slot is written, and each code is below `entries`.
        unsafe {
            if entries <= u8::MAX as usize {
                let out = std::slice::from_raw_parts_mut(data, codes.len());
                out.iter_mut().zip(&codes).for_each(|(o, c)| *o = *c as u8);
            } else if entries <= u16::MAX as usize {
                let out = std::slice::from_raw_parts_mut(data.cast::<u16>(), codes.len());
                out.iter_mut().zip(&codes).for_each(|(o, c)| *o = *c as u16);
            } else {
                let out = std::slice::from_raw_parts_mut(data.cast::<u32>(), codes.len());
                out.copy_from_slice(&codes);
            }
            writer.fill_validity(true)?;
            if let Some(nulls) = keys.logical_nulls() {
                for row in nulls.iter().enumerate().filter(|(_, v)| !v).map(|(r, _)| r) {
                    writer.set_row_validity(row, false)?;
                }
            }
        }
        Ok(())
    }
}

/// Each key as a code below `entries` (a null key 0: its row is a null).
fn codes<K: ArrowPrimitiveType>(keys: &ArrayRef, entries: usize) -> Result<Vec<u32>>
where
    K::Native: TryInto<u32>,
{
    let keys: &PrimitiveArray<K> = keys.as_primitive::<K>();
    let nulls = keys.logical_nulls();
    let mut codes = Vec::with_capacity(keys.len());
    for (row, key) in keys.values().iter().enumerate() {
        if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            codes.push(0);
            continue;
        }
        match (*key).try_into() {
            Ok(code) if (code as usize) < entries => codes.push(code),
            _ => {
                return Err(Error::invalid_input(
                    "zarrow: a categorical's code lies outside its categories",
                ));
            }
        }
    }
    Ok(codes)
}
