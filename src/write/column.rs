//! What one table column becomes in a group: one array (the plain layout), or
//! under the anndata layout an element: `categorical` (codes + categories),
//! `nullable-*` (values + mask), or an array carrying its `encoding-type`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, Int64Array};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType as ArrowType, Field};

use super::array::ArrayWriter;
use super::metadata::write_group_documents;
use super::pipeline::Pipeline;
use super::{Layout, NullPolicy, WriteOptions};
use crate::conventions::anndata::{
    array_encoding, categorical_attributes, element_attributes, nullable_encoding,
};
use crate::error::{Error, Result};
use crate::store::{Store, join_key};

/// How a column with nulls is written under the anndata layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nullability {
    /// Never nulls (or nulls refused, as the options say).
    None,
    /// A `nullable-*` element.
    Element,
}

/// One column's writer.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one writer per column, made once: the size does not matter"
)]
pub(crate) enum ColumnWriter {
    /// One array.
    Array(ArrayWriter),
    /// anndata `categorical`: codes streamed, categories gathered and written
    /// last.
    Categorical {
        codes: ArrayWriter,
        categories: Categories,
        store: Arc<dyn Store>,
        path: String,
        options: WriteOptions,
        ordered: bool,
    },
    /// anndata `nullable-*`: values (nulls filled) and the mask (true: missing).
    Nullable {
        values: ArrayWriter,
        mask: ArrayWriter,
        store: Arc<dyn Store>,
        path: String,
        zarr_format: u8,
        kind: &'static str,
    },
    /// A RangeIndex: the row numbers, as anndata writes a pandas RangeIndex.
    RowNumbers(ArrayWriter),
}

impl ColumnWriter {
    /// The writer for `field` at node `path` (prepared by the group).
    pub(crate) fn new(
        store: &Arc<dyn Store>,
        path: String,
        field: &Field,
        nullable: Nullability,
        options: &WriteOptions,
        dimension: &str,
    ) -> Result<Self> {
        let data_type = field.data_type();
        if options.layout == Layout::Plain {
            return Ok(Self::Array(
                ArrayWriter::create(store.clone(), path, data_type, options.clone())?
                    .with_dimension(dimension),
            ));
        }
        let element =
            |writer: ArrayWriter, kind: &str| writer.with_attributes(element_attributes(kind));
        match data_type {
            ArrowType::Dictionary(_, values) => {
                let codes = ArrayWriter::create(
                    store.clone(),
                    join_key(&path, "codes"),
                    &ArrowType::Int32,
                    options.clone(),
                )?;
                Ok(Self::Categorical {
                    codes: element(codes, "array"),
                    categories: Categories::new(field.name(), values)?,
                    store: store.clone(),
                    path,
                    options: options.clone(),
                    ordered: field.dict_is_ordered().unwrap_or(false),
                })
            }
            t if let (Nullability::Element, Some(nullable)) = (nullable, nullable_encoding(t)) => {
                let fill = options.clone().with_nulls(NullPolicy::Fill);
                let values =
                    ArrayWriter::create(store.clone(), join_key(&path, "values"), t, fill)?;
                let kind = array_encoding(t);
                let mask = ArrayWriter::create(
                    store.clone(),
                    join_key(&path, "mask"),
                    &ArrowType::Boolean,
                    options.clone(),
                )?;
                Ok(Self::Nullable {
                    values: element(values, kind),
                    mask: element(mask, "array"),
                    store: store.clone(),
                    path,
                    zarr_format: options.zarr_format,
                    kind: nullable,
                })
            }
            t => {
                // pandas marks a missing float as NaN.
                let options = if t.is_floating() {
                    options.clone().with_nulls(NullPolicy::Fill)
                } else {
                    options.clone()
                };
                let kind = array_encoding(t);
                Ok(Self::Array(element(
                    ArrayWriter::create(store.clone(), path, t, options)?,
                    kind,
                )))
            }
        }
    }

    /// A RangeIndex `_index` column at `path`: the row numbers.
    pub(crate) fn row_numbers(
        store: &Arc<dyn Store>,
        path: String,
        options: &WriteOptions,
    ) -> Result<Self> {
        let writer = ArrayWriter::create(store.clone(), path, &ArrowType::Int64, options.clone())?;
        Ok(Self::RowNumbers(
            writer.with_attributes(element_attributes("array")),
        ))
    }

    /// The arrays written row by row.
    fn leaves(&mut self) -> Vec<&mut ArrayWriter> {
        match self {
            Self::Array(w) | Self::RowNumbers(w) => vec![w],
            Self::Categorical { codes, .. } => vec![codes],
            Self::Nullable { values, mask, .. } => vec![values, mask],
        }
    }

    /// Queue the column's rows of one batch (`rows` rows; `array` is `None` for
    /// a RangeIndex), submitting the chunks that fill up.
    pub(crate) fn push(
        &mut self,
        array: Option<&ArrayRef>,
        first_row: u64,
        rows: usize,
        pipeline: &mut Pipeline,
    ) -> Result<()> {
        let parts: Vec<ArrayRef> = match (&mut *self, array) {
            (Self::RowNumbers(_), _) => vec![Arc::new(Int64Array::from_iter_values(
                (first_row..first_row + rows as u64).map(|r| r as i64),
            ))],
            (Self::Array(_), Some(a)) => vec![a.clone()],
            (Self::Categorical { categories, .. }, Some(a)) => vec![categories.codes(a)?],
            (Self::Nullable { .. }, Some(a)) => {
                let missing = match a.logical_nulls() {
                    Some(nulls) => !nulls.inner(),
                    None => BooleanBuffer::new_unset(a.len()),
                };
                vec![a.clone(), Arc::new(BooleanArray::new(missing, None))]
            }
            (_, None) => {
                return Err(Error::InvalidArgument(
                    "a column writer got no values".into(),
                ));
            }
        };
        for (writer, part) in self.leaves().into_iter().zip(parts) {
            for chunk in writer.push(&part)? {
                pipeline.submit(writer.task(chunk))?;
            }
        }
        Ok(())
    }

    /// Submit every leaf's last chunk.
    pub(crate) fn flush(&mut self, pipeline: &mut Pipeline) -> Result<()> {
        for writer in self.leaves() {
            if let Some(chunk) = writer.take_last()? {
                pipeline.submit(writer.task(chunk))?;
            }
        }
        Ok(())
    }

    /// After every chunk is stored: the leaves' metadata, a categorical's
    /// categories, and an element group's metadata. Returns the rows.
    pub(crate) fn finish_metadata(&mut self) -> Result<u64> {
        let mut rows = 0;
        for writer in self.leaves() {
            rows = writer.finish_metadata()?;
        }
        match self {
            Self::Categorical {
                categories,
                store,
                path,
                options,
                ordered,
                ..
            } => {
                let values = categories.values()?;
                let kind = array_encoding(values.data_type());
                let mut writer = ArrayWriter::create(
                    store.clone(),
                    join_key(path, "categories"),
                    values.data_type(),
                    options.clone(),
                )?
                .with_attributes(element_attributes(kind));
                writer.write(&values)?;
                writer.finish()?;
                let attributes = categorical_attributes(*ordered);
                write_group_documents(
                    store.as_ref(),
                    path,
                    options.zarr_format,
                    attributes,
                    false,
                )?;
            }
            Self::Nullable {
                store,
                path,
                zarr_format,
                kind,
                ..
            } => {
                write_group_documents(
                    store.as_ref(),
                    path,
                    *zarr_format,
                    element_attributes(kind),
                    false,
                )?;
            }
            _ => {}
        }
        Ok(rows)
    }
}

/// A categorical column's categories, unified across batches: each distinct
/// value gets the next code the first time it is seen, so the first batch's
/// dictionary keeps its order (and its unused values); a batch with the first
/// batch's dictionary reuses its codes without hashing.
#[derive(Debug)]
pub(crate) struct Categories {
    column: String,
    /// The categories in code order, one slice per value.
    parts: Vec<ArrayRef>,
    /// Each category's bytes (the value's, or its fixed-width encoding) to code.
    codes: HashMap<Vec<u8>, i32>,
    /// The first batch's dictionary and its entries' codes.
    first: Option<(ArrayRef, Vec<i32>)>,
}

impl Categories {
    fn new(column: &str, values: &ArrowType) -> Result<Self> {
        let supported = values.is_primitive()
            || matches!(
                values,
                ArrowType::Utf8
                    | ArrowType::LargeUtf8
                    | ArrowType::Utf8View
                    | ArrowType::Binary
                    | ArrowType::LargeBinary
                    | ArrowType::BinaryView
            );
        if !supported {
            return Err(Error::InvalidArgument(format!(
                "column {column:?}: categories of type {values} cannot be written"
            )));
        }
        Ok(Self {
            column: column.to_string(),
            parts: Vec::new(),
            codes: HashMap::new(),
            first: None,
        })
    }

    fn err(&self, message: &str) -> Error {
        Error::InvalidArgument(format!("column {:?}: {message}", self.column))
    }

    /// The code of each entry of dictionary `values` (-1 for a null entry).
    fn entry_codes(&mut self, values: &ArrayRef) -> Result<Vec<i32>> {
        if let Some((first, codes)) = &self.first
            && first.to_data() == values.to_data()
        {
            return Ok(codes.clone());
        }
        let mut out = Vec::with_capacity(values.len());
        for i in 0..values.len() {
            if values.is_null(i) {
                out.push(-1);
                continue;
            }
            let next = i32::try_from(self.parts.len())
                .map_err(|_| self.err("more than 2^31 categories"))?;
            let code = *self.codes.entry(value_key(values, i)).or_insert(next);
            if code == next {
                self.parts.push(values.slice(i, 1));
            }
            out.push(code);
        }
        if self.first.is_none() {
            self.first = Some((values.clone(), out.clone()));
        }
        Ok(out)
    }

    /// The codes (-1: missing) of one batch's dictionary array.
    fn codes(&mut self, array: &ArrayRef) -> Result<ArrayRef> {
        let Some(dict) = array.as_any_dictionary_opt() else {
            return Err(self.err(&format!("expected a dictionary, got {}", array.data_type())));
        };
        let map = self.entry_codes(dict.values())?;
        let keys = widen_keys(dict.keys())?;
        let codes: Int32Array = keys
            .iter()
            .map(|k| Some(k.and_then(|k| map.get(k as usize).copied()).unwrap_or(-1)))
            .collect();
        Ok(Arc::new(codes))
    }

    /// Every category, in code order.
    fn values(&mut self) -> Result<ArrayRef> {
        if self.parts.is_empty() {
            return Err(self.err("a categorical column without categories cannot be written"));
        }
        let refs: Vec<&dyn Array> = self.parts.iter().map(AsRef::as_ref).collect();
        Ok(arrow_select::concat::concat(&refs)?)
    }
}

/// The dictionary's keys as UInt64 indices (nulls kept).
fn widen_keys(keys: &dyn Array) -> Result<arrow_array::UInt64Array> {
    use arrow_array::types::*;
    macro_rules! widen {
        ($t:ty) => {
            keys.as_primitive::<$t>()
                .iter()
                .map(|k| k.and_then(|k| u64::try_from(k).ok()))
                .collect()
        };
    }
    Ok(match keys.data_type() {
        ArrowType::Int8 => widen!(Int8Type),
        ArrowType::Int16 => widen!(Int16Type),
        ArrowType::Int32 => widen!(Int32Type),
        ArrowType::Int64 => widen!(Int64Type),
        ArrowType::UInt8 => widen!(UInt8Type),
        ArrowType::UInt16 => widen!(UInt16Type),
        ArrowType::UInt32 => widen!(UInt32Type),
        ArrowType::UInt64 => widen!(UInt64Type),
        other => {
            return Err(Error::InvalidArgument(format!(
                "dictionary keys of type {other}"
            )));
        }
    })
}

/// The bytes that identify value `i` of `values` (a byte or primitive array).
fn value_key(values: &ArrayRef, i: usize) -> Vec<u8> {
    if let Some(a) = values.as_string_opt::<i32>() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_string_opt::<i64>() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_string_view_opt() {
        return a.value(i).as_bytes().to_vec();
    }
    if let Some(a) = values.as_binary_opt::<i32>() {
        return a.value(i).to_vec();
    }
    if let Some(a) = values.as_binary_opt::<i64>() {
        return a.value(i).to_vec();
    }
    if let Some(a) = values.as_binary_view_opt() {
        return a.value(i).to_vec();
    }
    let data = values.to_data();
    let width = values.data_type().primitive_width().unwrap_or(0);
    let start = (data.offset() + i) * width;
    data.buffers()
        .first()
        .map(|b| b.as_slice()[start..start + width].to_vec())
        .unwrap_or_default()
}
