//! The Polars scan's prefilter on categoricals: a row whose categorical
//! column holds none of the categories a filter compares it with cannot match,
//! and is dropped before it crosses to Python. The categories are compared
//! once (per dictionary), then each row's code is looked up. The scan still
//! applies its whole filter to the rows that remain: this only narrows them.
//!
//! The rows kept from consecutive batches (all of them, with no category to
//! keep) are gathered before they cross: a selective filter, or short chunks,
//! would otherwise hand Polars thousands of batches of a few hundred rows, each
//! paying the import of its categoricals and a Python round. The batches grow:
//! the first crosses as soon as it has a row, each later one once it holds as
//! many rows as crossed before (up to the batch size asked for; a batch of a
//! quarter of it crosses as it is, uncopied), so that a
//! query that stops early (`head` after a filter) has read at most about twice
//! the rows it used. A dictionary column whose batches share their categories
//! (a reader's do) is gathered by its codes alone, the categories kept once.

use std::collections::{HashSet, VecDeque};

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, RecordBatch, RecordBatchReader};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{ArrowError, DataType, SchemaRef};
use arrow_select::concat::concat;
use zarrow::__private::bits as mask;

/// Rows a batch holds at least to cross as it is, whatever it follows.
const LONG_BATCH: usize = 1024;

/// Rows of `inner` whose every listed categorical column holds one of its
/// listed categories.
pub(crate) struct KeepCategories {
    inner: Box<dyn RecordBatchReader + Send>,
    columns: Vec<Kept>,
    /// Kept rows not yet handed on, and how many.
    pending: VecDeque<RecordBatch>,
    pending_rows: usize,
    /// The pending batches could not be gathered (their dictionaries
    /// differ): they are handed on one by one before more is read.
    draining: bool,
    /// Rows per batch handed on, once the batches have grown (at least; the
    /// last may hold fewer).
    batch_rows: usize,
    /// Rows handed on so far: the next batch waits for as many.
    handed: usize,
    ended: bool,
}

struct Kept {
    index: usize,
    categories: HashSet<String>,
    /// The last dictionary seen, and which of its entries are kept: a reader's
    /// batches share their categories, so they are compared once.
    seen: Option<(ArrayRef, Vec<bool>)>,
}

impl KeepCategories {
    /// # Errors
    /// A column that is not in the schema, or not a dictionary of strings.
    pub(crate) fn new(
        inner: Box<dyn RecordBatchReader + Send>,
        keep: Vec<(String, Vec<String>)>,
        batch_rows: usize,
    ) -> Result<Self, String> {
        let schema = inner.schema();
        let mut columns = Vec::with_capacity(keep.len());
        for (name, categories) in keep {
            let index = schema
                .index_of(&name)
                .map_err(|_| format!("keep: {name:?} is not a column"))?;
            match schema.field(index).data_type() {
                DataType::Dictionary(_, values) if crate::enums::is_string(values) => {}
                other => {
                    return Err(format!(
                        "keep: {name:?} is {other}, not a dictionary of strings"
                    ));
                }
            }
            columns.push(Kept {
                index,
                categories: categories.into_iter().collect(),
                seen: None,
            });
        }
        Ok(Self {
            inner,
            columns,
            pending: VecDeque::new(),
            pending_rows: 0,
            draining: false,
            batch_rows: batch_rows.max(1),
            handed: 0,
            ended: false,
        })
    }

    /// The pending rows as one batch (none pending: `None`); where their
    /// dictionaries differ, the first of them, the others handed on next.
    fn gathered(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        self.pending_rows = 0;
        if self.pending.len() <= 1 {
            return self.pending.pop_front().map(Ok);
        }
        match gather(&self.inner.schema(), self.pending.make_contiguous()) {
            Ok(Some(batch)) => {
                self.pending.clear();
                Some(Ok(batch))
            }
            Ok(None) => {
                self.draining = true;
                self.pending.pop_front().map(Ok)
            }
            Err(e) => {
                self.pending.clear();
                Some(Err(e))
            }
        }
    }

    fn keep(&mut self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mut mask: Option<BooleanBuffer> = None;
        for kept in &mut self.columns {
            let column = batch.column(kept.index);
            let Some(dictionary) = column.as_any_dictionary_opt() else {
                return Err(ArrowError::SchemaError(format!(
                    "keep: column {} is not a dictionary",
                    kept.index
                )));
            };
            let values = dictionary.values();
            if !kept
                .seen
                .as_ref()
                .is_some_and(|(seen, _)| std::sync::Arc::ptr_eq(seen, values))
            {
                let mut allowed = kept_entries(values.as_ref(), &kept.categories)?;
                // Padded to every bit pattern of a narrow key (see `kept_rows`).
                let patterns = match column.data_type() {
                    DataType::Dictionary(key, _) => match key.as_ref() {
                        DataType::Int8 | DataType::UInt8 => 1 << 8,
                        DataType::Int16 | DataType::UInt16 => 1 << 16,
                        _ => 0,
                    },
                    _ => 0,
                };
                allowed.resize(allowed.len().max(patterns), false);
                kept.seen = Some((values.clone(), allowed));
            }
            let allowed = kept.seen.as_ref().map(|(_, a)| a.as_slice()).unwrap_or(&[]);
            let mut rows = kept_rows(column.as_ref(), allowed)?;
            if let Some(nulls) = column.logical_nulls() {
                rows = &rows & nulls.inner();
            }
            mask = Some(match mask {
                None => rows,
                Some(before) => &before & &rows,
            });
        }
        match mask {
            None => Ok(batch),
            Some(mask) => {
                arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(mask, None))
            }
        }
    }
}

/// The rows of a dictionary `column` whose key names an entry `allowed` marks,
/// null rows included (the caller masks them out: a null row's key may be
/// anything). A row's test is a lookup without a branch: `allowed` covers every
/// bit pattern of an 8- or 16-bit key (padded with `false`; a valid key lies
/// in the dictionary, so other patterns only ever come from null rows).
fn kept_rows(column: &dyn Array, allowed: &[bool]) -> Result<BooleanBuffer, ArrowError> {
    fn keys<K: ArrowDictionaryKeyType>(column: &dyn Array) -> &[K::Native] {
        column.as_dictionary::<K>().keys().values()
    }
    fn table<const N: usize>(allowed: &[bool]) -> Result<&[bool; N], ArrowError> {
        allowed
            .get(..N)
            .and_then(|t| t.try_into().ok())
            .ok_or_else(|| ArrowError::SchemaError("keep: a table of kept keys too short".into()))
    }
    /// A wide key, looked up with a bounds check (a negative one is no entry).
    fn wide<K: ArrowDictionaryKeyType>(column: &dyn Array, allowed: &[bool]) -> BooleanBuffer
    where
        usize: TryFrom<K::Native>,
    {
        mask(keys::<K>(column), |k| {
            usize::try_from(k)
                .ok()
                .and_then(|k| allowed.get(k).copied())
                .unwrap_or(false)
        })
    }
    let DataType::Dictionary(key, _) = column.data_type() else {
        return Err(ArrowError::SchemaError(
            "keep: a column that is not a dictionary".into(),
        ));
    };
    Ok(match key.as_ref() {
        DataType::Int8 => {
            let table = table::<256>(allowed)?;
            mask(keys::<Int8Type>(column), |k| table[usize::from(k as u8)])
        }
        DataType::UInt8 => {
            let table = table::<256>(allowed)?;
            mask(keys::<UInt8Type>(column), |k| table[usize::from(k)])
        }
        DataType::Int16 => {
            let table = table::<65536>(allowed)?;
            mask(keys::<Int16Type>(column), |k| table[usize::from(k as u16)])
        }
        DataType::UInt16 => {
            let table = table::<65536>(allowed)?;
            mask(keys::<UInt16Type>(column), |k| table[usize::from(k)])
        }
        DataType::Int32 => wide::<Int32Type>(column, allowed),
        DataType::UInt32 => wide::<UInt32Type>(column, allowed),
        DataType::Int64 => wide::<Int64Type>(column, allowed),
        DataType::UInt64 => wide::<UInt64Type>(column, allowed),
        other => {
            return Err(ArrowError::SchemaError(format!(
                "keep: dictionary keys of type {other}"
            )));
        }
    })
}

/// Which entries of a dictionary's `values` are among `categories`.
fn kept_entries(values: &dyn Array, categories: &HashSet<String>) -> Result<Vec<bool>, ArrowError> {
    let strings = crate::enums::strings_of(values).ok_or_else(|| {
        ArrowError::SchemaError(format!("keep: categories of type {}", values.data_type()))
    })?;
    Ok(strings
        .into_iter()
        .map(|v| v.is_some_and(|v| categories.contains(v)))
        .collect())
}

/// `batches` (of `schema`) as one; `None` where a dictionary column's
/// batches do not share their values.
fn gather(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Option<RecordBatch>, ArrowError> {
    let mut columns = Vec::with_capacity(schema.fields().len());
    for i in 0..schema.fields().len() {
        let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
        match gather_column(&parts)? {
            Some(column) => columns.push(column),
            None => return Ok(None),
        }
    }
    RecordBatch::try_new(schema.clone(), columns).map(Some)
}

/// `parts` end to end. Dictionaries sharing their values (the same array, or
/// equal ones) keep them, their keys concatenated; `None` for dictionaries
/// that do not (arrow's `concat` would merge them, and panics where the
/// merged values outgrow the keys).
fn gather_column(parts: &[&dyn Array]) -> Result<Option<ArrayRef>, ArrowError> {
    match parts[0].data_type() {
        DataType::Dictionary(key, _) => match key.as_ref() {
            DataType::Int8 => gather_dictionaries::<Int8Type>(parts),
            DataType::Int16 => gather_dictionaries::<Int16Type>(parts),
            DataType::Int32 => gather_dictionaries::<Int32Type>(parts),
            DataType::Int64 => gather_dictionaries::<Int64Type>(parts),
            DataType::UInt8 => gather_dictionaries::<UInt8Type>(parts),
            DataType::UInt16 => gather_dictionaries::<UInt16Type>(parts),
            DataType::UInt32 => gather_dictionaries::<UInt32Type>(parts),
            DataType::UInt64 => gather_dictionaries::<UInt64Type>(parts),
            _ => Ok(None),
        },
        _ => concat(parts).map(Some),
    }
}

fn gather_dictionaries<K: ArrowDictionaryKeyType>(
    parts: &[&dyn Array],
) -> Result<Option<ArrayRef>, ArrowError> {
    let values = parts[0].as_dictionary::<K>().values();
    let shared = |p: &&dyn Array| {
        let other = p.as_dictionary::<K>().values();
        Arc::ptr_eq(other, values) || other.to_data() == values.to_data()
    };
    if !parts.iter().all(shared) {
        return Ok(None);
    }
    let keys: Vec<&dyn Array> = parts
        .iter()
        .map(|p| p.as_dictionary::<K>().keys() as &dyn Array)
        .collect();
    let keys = concat(&keys)?.as_primitive::<K>().clone();
    Ok(Some(Arc::new(DictionaryArray::<K>::try_new(
        keys,
        values.clone(),
    )?)))
}

impl Iterator for KeepCategories {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.draining {
            match self.pending.pop_front() {
                Some(batch) => return Some(Ok(batch)),
                None => self.draining = false,
            }
        }
        loop {
            if self.ended {
                return None;
            }
            let Some(batch) = self.inner.next() else {
                // The inner reader is not asked again (a stream may not be
                // polled after its end).
                self.ended = true;
                return self.gathered();
            };
            let kept = match batch.and_then(|b| self.keep(b)) {
                Ok(kept) => kept,
                Err(e) => {
                    // An error ends the stream: the rows held back are not
                    // handed on after it.
                    self.ended = true;
                    return Some(Err(e));
                }
            };
            // Nothing kept: no batch crosses.
            if kept.num_rows() == 0 {
                continue;
            }
            let wanted = self.handed.clamp(1, self.batch_rows);
            if self.pending.is_empty() && kept.num_rows() >= wanted {
                self.handed += kept.num_rows();
                return Some(Ok(kept));
            }
            // A long batch crosses as it is, after the rows pending (gathered):
            // gathering it would copy every row to save a batch or two (a
            // reader's chunk-long batches, split at its batch size, would all
            // be copied).
            if kept.num_rows() >= self.batch_rows.div_ceil(4).max(LONG_BATCH) {
                self.handed += self.pending_rows + kept.num_rows();
                let Some(first) = self.gathered() else {
                    return Some(Ok(kept));
                };
                self.pending.push_back(kept);
                self.draining = true;
                return Some(first);
            }
            self.pending_rows += kept.num_rows();
            self.pending.push_back(kept);
            if self.pending_rows >= wanted {
                self.handed += self.pending_rows;
                return self.gathered();
            }
        }
    }
}

impl RecordBatchReader for KeepCategories {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
