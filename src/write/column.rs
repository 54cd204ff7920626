//! What one table column becomes in a group: one array (the plain layout, but
//! for a dictionary: a `categorical`), or
//! under the anndata layout an element: `categorical` (codes + categories),
//! `nullable-*` (values + mask), or an array carrying its `encoding-type`.
//!
//! This is the driver: it holds each part's [`ArrayWriter`] and feeds it;
//! which element a column becomes, how it splits into parts, their names and
//! attributes are [`anndata`]'s.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType as ArrowType, Field};

use super::append::Existing;
use super::array::{ArrayWriter, value_type};
use super::metadata::write_group_documents;
use super::pipeline::Pipeline;
use super::{Layout, NullPolicy, WriteOptions};
use crate::conventions::ConventionError;
use crate::conventions::anndata::{self, Categories, Encoding, Nullable};
use crate::conventions::zarrow;
use crate::error::{AppendMismatch, Error, Result};
use crate::metadata::NodeMetadata;
use crate::read::Node;
use crate::store::{Store, join_key, node_label};

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
        /// The column's name, for errors.
        column: String,
        store: Arc<dyn Store>,
        path: String,
        options: WriteOptions,
        ordered: bool,
        /// The column's Arrow type, recorded on the element (the plain
        /// layout's dictionaries: read back with their own key type).
        recorded: Option<ArrowType>,
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
        kind: Nullable,
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
        // One array of the element, with its attributes.
        let part = |key: String, t: &ArrowType, options: WriteOptions| -> Result<ArrayWriter> {
            Ok(ArrayWriter::create(store.clone(), key, t, options)?
                .with_attributes(anndata::array_attributes(t)))
        };
        // The plain layout stores a dictionary as an anndata `categorical` too
        // (its Arrow type recorded: read back without hashing a value); any
        // other column, or a dictionary whose values a categorical cannot
        // hold, as one array.
        let plain = options.layout == Layout::Plain;
        let encoding = match data_type {
            ArrowType::Dictionary(_, values) if plain && !Categories::hold(values) => {
                Encoding::Array
            }
            ArrowType::Dictionary(..) => anndata::column_encoding(field, false),
            _ if plain => Encoding::Array,
            _ => anndata::column_encoding(field, nullable == Nullability::Element),
        };
        if plain && encoding == Encoding::Array {
            return Ok(Self::Array(
                ArrayWriter::create(store.clone(), path, data_type, options.clone())?
                    .with_dimension(dimension),
            ));
        }
        match encoding {
            Encoding::Categorical { ordered } => {
                let categories = Categories::new(value_type(data_type))
                    .map_err(categorical_err(field.name()))?;
                let mut codes = part(
                    join_key(&path, anndata::CODES),
                    categories.codes_type(),
                    options.clone(),
                )?;
                if plain {
                    codes = codes.with_dimension(dimension);
                }
                Ok(Self::Categorical {
                    codes,
                    categories,
                    column: field.name().clone(),
                    store: store.clone(),
                    path,
                    options: options.clone(),
                    ordered,
                    recorded: plain.then(|| data_type.clone()),
                    stored: None,
                    appending: false,
                })
            }
            Encoding::Nullable(kind) => {
                // The mask says which values are missing.
                let fill = WriteOptions {
                    nulls: NullPolicy::Fill,
                    ..options.clone()
                };
                let values = part(join_key(&path, anndata::VALUES), data_type, fill)?;
                let mask = part(
                    join_key(&path, anndata::MASK),
                    &ArrowType::Boolean,
                    options.clone(),
                )?;
                Ok(Self::Nullable {
                    values,
                    mask,
                    store: store.clone(),
                    path,
                    zarr_format: options.zarr_format,
                    kind,
                    appending: false,
                })
            }
            _ => Ok(Self::Array(part(
                path,
                data_type,
                array_options(data_type, options),
            )?)),
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
        let node = Node::read(committed.as_ref(), &path)?;
        match (node.metadata(), node.conventions().anndata().cloned()) {
            (NodeMetadata::Array(_), _) => {
                let options = if options.layout == Layout::AnnData {
                    array_options(element_type, options)
                } else {
                    options.clone()
                };
                Ok(Self::Array(leaf(path, data_type, options)?))
            }
            (_, Some(Encoding::Categorical { ordered })) => {
                // A dictionary (a pandas Categorical), or the values themselves
                // (what a SQL engine reads a categorical as).
                let values = element_type;
                let codes_key = join_key(&path, anndata::CODES);
                let stored_codes = Existing::open(committed, &codes_key, &ArrowType::Int32)?;
                let codes_type = stored_codes
                    .metadata()
                    .data_type
                    .arrow_type(Default::default());
                if !codes_type.is_integer() || codes_type.is_unsigned_integer() {
                    return Err(Error::AppendMismatch {
                        path: node_label(committed.as_ref(), &path),
                        reason: AppendMismatch::CodesType {
                            column: field.name().clone(),
                            codes: codes_type,
                        },
                    });
                }
                let codes = ArrayWriter::appending(
                    store.clone(),
                    codes_key,
                    &codes_type,
                    options.clone(),
                    stored_codes,
                )?;
                let stored =
                    Existing::open(committed, &join_key(&path, anndata::CATEGORIES), values)?;
                let categories = Categories::seeded(values, &codes_type, &stored.read_all()?)
                    .map_err(categorical_err(field.name()))?;
                Ok(Self::Categorical {
                    codes,
                    categories,
                    column: field.name().clone(),
                    store: store.clone(),
                    path,
                    options: options.clone(),
                    ordered,
                    recorded: None,
                    stored: Some(stored),
                    appending: true,
                })
            }
            (_, Some(Encoding::Nullable(kind))) => {
                let fill = WriteOptions {
                    nulls: NullPolicy::Fill,
                    ..options.clone()
                };
                let values = leaf(join_key(&path, anndata::VALUES), element_type, fill)?;
                let mask = leaf(
                    join_key(&path, anndata::MASK),
                    &ArrowType::Boolean,
                    options.clone(),
                )?;
                Ok(Self::Nullable {
                    values,
                    mask,
                    store: store.clone(),
                    path,
                    zarr_format: options.zarr_format,
                    kind,
                    appending: true,
                })
            }
            (_, other) => Err(Error::AppendMismatch {
                path: node_label(committed.as_ref(), &path),
                reason: AppendMismatch::GroupColumn {
                    column: field.name().clone(),
                    encoding: match other {
                        Some(Encoding::Other(kind)) => Some(kind),
                        _ => None,
                    },
                },
            }),
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
            return Err(Error::AppendMismatch {
                path: node_label(committed.as_ref(), &path),
                reason: AppendMismatch::IndexLabels {
                    index: path,
                    data_type: existing.metadata().data_type.to_string().to_string(),
                },
            });
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
        Ok(Self::RowNumbers(writer.with_attributes(
            anndata::array_attributes(&ArrowType::Int64),
        )))
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
            (Self::RowNumbers(_), _) => vec![anndata::row_numbers(first_row, rows)],
            (Self::Array(_), Some(a)) => vec![a.clone()],
            (
                Self::Categorical {
                    categories, column, ..
                },
                Some(a),
            ) => vec![categories.codes(a).map_err(categorical_err(column))?],
            (Self::Nullable { .. }, Some(a)) => anndata::split_masked(a).into(),
            (_, None) => {
                return Err(Error::Internal {
                    what: "a column writer got no values",
                });
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
            column,
            store,
            path,
            options,
            stored,
            ..
        } = self
            && let Some(stored) = stored.take()
        {
            let known = usize::try_from(stored.rows()).unwrap_or(usize::MAX);
            let values = categories.values().map_err(categorical_err(column))?;
            let key = join_key(path, anndata::CATEGORIES);
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
                column,
                store,
                path,
                options,
                ordered,
                recorded,
                appending: false,
                ..
            } => {
                // A dictionary the plain layout stores may have no values (every
                // row null); anndata's writer refuses a categorical without one.
                let values = match (categories.values(), &recorded) {
                    (Err(ConventionError::NoCategories), Some(_)) => {
                        arrow_array::new_empty_array(categories.value_type())
                    }
                    (values, _) => values.map_err(categorical_err(column))?,
                };
                let mut attributes = anndata::categorical_attributes(*ordered);
                if let Some(t) = recorded {
                    attributes.extend(zarrow::array_attributes(t));
                }
                let mut writer = ArrayWriter::create(
                    store.clone(),
                    join_key(path, anndata::CATEGORIES),
                    values.data_type(),
                    categories_options(options, values.len()),
                )?
                .with_attributes(anndata::array_attributes(values.data_type()));
                writer.write(&values)?;
                writer.finish()?;
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
                    anndata::nullable_attributes(*kind),
                    false,
                )?;
            }
            _ => {}
        }
        Ok(rows)
    }
}

/// The options of a categorical's `n` categories: in one chunk of `n` (or
/// chunks of the length asked for, when shorter), unsharded, as anndata writes
/// them. Chunks of the table's length would hold mostly fill values, which a
/// reader of a vlen chunk decodes too.
fn categories_options(options: &WriteOptions, n: usize) -> WriteOptions {
    let n = n.max(1);
    WriteOptions {
        chunk_len: Some(options.chunk_len.map_or(n, |c| c.min(n))),
        shard_len: None,
        ..options.clone()
    }
}

/// The options of an anndata array element of Arrow type `t`: nulls written as
/// the fill value where anndata says so.
fn array_options(t: &ArrowType, options: &WriteOptions) -> WriteOptions {
    if anndata::nulls_as_nan(t) {
        WriteOptions {
            nulls: NullPolicy::Fill,
            ..options.clone()
        }
    } else {
        options.clone()
    }
}

/// What a categorical column's [`Categories`] refuse, as the writer reports it:
/// an anndata convention error about column `column`.
fn categorical_err(column: &str) -> impl Fn(ConventionError) -> Error + '_ {
    move |e| match e {
        ConventionError::Arrow(e) => Error::from(e),
        e => Error::Convention {
            path: column.to_string(),
            convention: crate::Convention::AnnData,
            source: Arc::new(e),
        },
    }
}
