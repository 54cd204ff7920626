//! What one table column becomes in a group: one array (the plain layout), or
//! under the anndata layout an element: `categorical` (codes + categories),
//! `nullable-*` (values + mask), or an array carrying its `encoding-type`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, Int64Array};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType as ArrowType, Field};

use super::append::Existing;
use super::array::{ArrayWriter, value_type};
use super::metadata::write_group_documents;
use super::pipeline::Pipeline;
use super::{Layout, NullPolicy, WriteOptions};
use crate::conventions::anndata::{
    Encoding, Nullable as NullableKind, array_encoding, categorical_attributes, element_attributes,
    encoding, nullable_encoding,
};
use crate::error::{Error, Result};
use crate::metadata::NodeMetadata;
use crate::read::read_node;
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
        /// The codes' type (Int32, or a stored element's own).
        codes_type: ArrowType,
        categories: Categories,
        store: Arc<dyn Store>,
        path: String,
        options: WriteOptions,
        ordered: bool,
        /// Appending: the stored categories, which new ones follow (taken
        /// when they are written).
        stored: Option<Existing>,
        /// Appending to a stored element (whose group documents stay).
        appending: bool,
    },
    /// anndata `nullable-*`: values (nulls filled) and the mask (true: missing).
    Nullable {
        values: ArrayWriter,
        mask: ArrayWriter,
        store: Arc<dyn Store>,
        path: String,
        zarr_format: u8,
        kind: &'static str,
        /// Appending to a stored element (whose group documents stay).
        appending: bool,
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
                    codes_type: ArrowType::Int32,
                    categories: Categories::new(field.name(), values)?,
                    store: store.clone(),
                    path,
                    options: options.clone(),
                    ordered: field.dict_is_ordered().unwrap_or(false),
                    stored: None,
                    appending: false,
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
                    appending: false,
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

    /// The writer that appends `field`'s values to the element stored at
    /// `path` as it is stored: an array, an anndata `categorical` (new
    /// categories added after the stored ones, the codes in the stored codes'
    /// type) or `nullable-*` element. `row_numbers`: the field is a RangeIndex,
    /// continued.
    /// `store` is written to; `committed` reads what the table holds (its
    /// consolidated metadata, when it has some).
    pub(crate) fn appending(
        store: &Arc<dyn Store>,
        committed: &Arc<dyn Store>,
        path: String,
        field: &Field,
        options: &WriteOptions,
    ) -> Result<Self> {
        let data_type = field.data_type();
        let element_type = value_type(data_type);
        let leaf = |key: String, t: &ArrowType, options: WriteOptions| -> Result<ArrayWriter> {
            let existing = Existing::open(committed, &key, value_type(t))?;
            ArrayWriter::appending(store.clone(), key, t, options, existing)
        };
        let anndata = options.layout == Layout::AnnData;
        let node = read_node(committed.as_ref(), &path)?;
        let encoding = match &node {
            NodeMetadata::Array(meta) => encoding(&meta.attributes),
            NodeMetadata::Group(meta) => encoding(&meta.attributes),
        };
        match (node, encoding) {
            (NodeMetadata::Array(_), _) => {
                // pandas marks a missing float as NaN.
                let options = if anndata && element_type.is_floating() {
                    options.clone().with_nulls(NullPolicy::Fill)
                } else {
                    options.clone()
                };
                Ok(Self::Array(leaf(path, data_type, options)?))
            }
            (_, Some(Encoding::Categorical { ordered })) => {
                // A dictionary (a pandas Categorical), or the values themselves
                // (what a SQL engine reads a categorical as).
                let values = element_type;
                let codes_key = join_key(&path, "codes");
                let stored_codes = Existing::open(committed, &codes_key, &ArrowType::Int32)?;
                let codes_type = stored_codes
                    .metadata()
                    .data_type
                    .arrow_type(Default::default());
                if !codes_type.is_integer() || codes_type.is_unsigned_integer() {
                    return Err(Error::InvalidArgument(format!(
                        "column {:?}: its stored codes are {codes_type}, not signed integers",
                        field.name()
                    )));
                }
                let codes = ArrayWriter::appending(
                    store.clone(),
                    codes_key,
                    &codes_type,
                    options.clone(),
                    stored_codes,
                )?;
                let stored = Existing::open(committed, &join_key(&path, "categories"), values)?;
                let categories = Categories::seeded(field.name(), values, stored.read_all()?)?;
                Ok(Self::Categorical {
                    codes,
                    codes_type,
                    categories,
                    store: store.clone(),
                    path,
                    options: options.clone(),
                    ordered,
                    stored: Some(stored),
                    appending: true,
                })
            }
            (_, Some(Encoding::Nullable(kind))) => {
                let fill = options.clone().with_nulls(NullPolicy::Fill);
                let values = leaf(join_key(&path, "values"), element_type, fill)?;
                let mask = leaf(
                    join_key(&path, "mask"),
                    &ArrowType::Boolean,
                    options.clone(),
                )?;
                Ok(Self::Nullable {
                    values,
                    mask,
                    store: store.clone(),
                    path,
                    zarr_format: options.zarr_format,
                    kind: match kind {
                        NullableKind::Integer => "nullable-integer",
                        NullableKind::Boolean => "nullable-boolean",
                        NullableKind::String => "nullable-string-array",
                    },
                    appending: true,
                })
            }
            (_, other) => Err(Error::InvalidArgument(format!(
                "column {:?} is stored as a group ({}) that zarrow does not append rows to",
                field.name(),
                match other {
                    Some(Encoding::Other(kind)) => kind,
                    _ => "no anndata element".to_string(),
                }
            ))),
        }
    }

    /// The stored RangeIndex `_index` at `path`, continued.
    pub(crate) fn row_numbers_appending(
        store: &Arc<dyn Store>,
        committed: &Arc<dyn Store>,
        path: String,
        options: &WriteOptions,
    ) -> Result<Self> {
        let existing = Existing::open(committed, &path, &ArrowType::Int64)?;
        if existing.metadata().data_type != crate::metadata::DataType::Int64 {
            return Err(Error::InvalidArgument(format!(
                "the table's index {path:?} holds {} labels: give the new rows' labels (the pandas index, or a column named as it)",
                existing.metadata().data_type.zarr_name()
            )));
        }
        Ok(Self::RowNumbers(ArrayWriter::appending(
            store.clone(),
            path,
            &ArrowType::Int64,
            options.clone(),
            existing,
        )?))
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

    /// The rows each array written row by row holds so far.
    pub(crate) fn rows(&mut self) -> Vec<u64> {
        self.leaves().iter().map(|w| w.rows()).collect()
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
            (
                Self::Categorical {
                    categories,
                    codes_type,
                    ..
                },
                Some(a),
            ) => vec![narrow_codes(categories.codes(a)?, codes_type, categories)?],
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
        // Appending, a categorical's categories grow first: no stored code
        // points past them.
        if let Self::Categorical {
            categories,
            store,
            path,
            options,
            stored,
            ..
        } = self
            && let Some(stored) = stored.take()
        {
            let known = usize::try_from(stored.rows()).unwrap_or(usize::MAX);
            let values = categories.values()?;
            let key = join_key(path, "categories");
            let mut writer = ArrayWriter::appending(
                store.clone(),
                key,
                values.data_type(),
                options.clone(),
                stored,
            )?;
            writer.write(&values.slice(known, values.len().saturating_sub(known)))?;
            writer.finish()?;
        }
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
                appending: false,
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
                appending: false,
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

/// Int32 `codes` (-1: missing) as `codes_type`, a stored element's own code
/// type (anndata writes pandas' smallest).
fn narrow_codes(
    codes: ArrayRef,
    codes_type: &ArrowType,
    categories: &Categories,
) -> Result<ArrayRef> {
    use arrow_array::{Int8Array, Int16Array};
    let codes = codes.as_primitive::<arrow_array::types::Int32Type>();
    let too_many = || {
        categories.err(&format!(
            "its stored codes are {codes_type}: the categories no longer fit"
        ))
    };
    Ok(match codes_type {
        ArrowType::Int32 => Arc::new(codes.clone()),
        ArrowType::Int64 => Arc::new(Int64Array::from_iter_values(
            codes.values().iter().map(|&c| i64::from(c)),
        )),
        ArrowType::Int16 => Arc::new(
            codes
                .values()
                .iter()
                .map(|&c| i16::try_from(c).map_err(|_| too_many()))
                .collect::<Result<Int16Array>>()?,
        ),
        ArrowType::Int8 => Arc::new(
            codes
                .values()
                .iter()
                .map(|&c| i8::try_from(c).map_err(|_| too_many()))
                .collect::<Result<Int8Array>>()?,
        ),
        other => return Err(categories.err(&format!("codes of type {other}"))),
    })
}

/// A categorical column's categories, unified across batches: each distinct
/// value gets the next code the first time it is seen, so the first batch's
/// dictionary keeps its order (and its unused values); a batch with the first
/// batch's dictionary reuses its codes without hashing.
#[derive(Debug)]
pub(crate) struct Categories {
    column: String,
    /// The categories' type.
    value_type: ArrowType,
    /// The categories in code order, one slice per value.
    parts: Vec<ArrayRef>,
    /// Each category's bytes (the value's, or its fixed-width encoding) to code.
    codes: HashMap<Vec<u8>, i32>,
    /// The first batch's dictionary and its entries' codes.
    first: Option<(ArrayRef, Vec<i32>)>,
}

impl Categories {
    /// The categories stored already (`stored`, in code order), which new ones
    /// follow.
    fn seeded(column: &str, values: &ArrowType, stored: ArrayRef) -> Result<Self> {
        let mut categories = Self::new(column, values)?;
        for i in 0..stored.len() {
            if stored.is_null(i) {
                return Err(categories.err("a stored category is missing"));
            }
            let code = i32::try_from(i).map_err(|_| categories.err("more than 2^31 categories"))?;
            if categories
                .codes
                .insert(value_key(&stored, i), code)
                .is_some()
            {
                return Err(categories.err("a stored category appears twice"));
            }
            categories.parts.push(stored.slice(i, 1));
        }
        Ok(categories)
    }

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
            value_type: values.clone(),
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
        let out = self.entry_codes_uncached(values)?;
        if self.first.is_none() {
            self.first = Some((values.clone(), out.clone()));
        }
        Ok(out)
    }

    /// The code of each of `values` (-1 for a null), new values taking the
    /// next codes.
    fn entry_codes_uncached(&mut self, values: &ArrayRef) -> Result<Vec<i32>> {
        if values.data_type() != &self.value_type {
            return Err(self.err(&format!(
                "categories are {}, not {}",
                self.value_type,
                values.data_type()
            )));
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
        Ok(out)
    }

    /// The codes (-1: missing) of one batch's dictionary array, or of its
    /// values one by one (an append of a column given as values).
    fn codes(&mut self, array: &ArrayRef) -> Result<ArrayRef> {
        let Some(dict) = array.as_any_dictionary_opt() else {
            let codes = self.entry_codes_uncached(array)?;
            return Ok(Arc::new(Int32Array::from(codes)));
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
