//! A gridded dataset (xarray's N-d variables sharing named dimensions) as a long
//! table, one row per grid point, as `Dataset.to_dataframe()` gives it:
//!
//! - the dimensions, in order of first appearance over the variables (those
//!   with the most dimensions first, then by name), become the first columns: the dimension's coordinate variable where there is
//!   one, else the positions 0..n (pandas' RangeIndex); pyarrow's `pandas`
//!   metadata marks them as the index;
//! - then every other variable (or those asked for), broadcast over the
//!   dimensions it lacks, CF-decoded as the options say.
//!
//! Rows are in C order over the dimensions. The variables are read whole (each
//! bounded by [`ReadOptions::max_read_bytes`](super::ReadOptions)); batches are
//! gathered from them.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader, UInt64Array};
use arrow_schema::{ArrowError, DataType as ArrowType, Field, Schema, SchemaRef};

use super::{DEFAULT_MAX_BATCH_ROWS, Skipped, ZarrArray, ZarrGroup};
use crate::conventions::cf::dimension_names;
use crate::conventions::pandas::{self, PandasColumn, pandas_metadata};
use crate::error::{Error, Result, SkipReason, TableProblem};
use crate::metadata::NodeMetadata;
use crate::store::join_key;

/// One variable: its values (C order over its own dimensions) and, per output
/// dimension, its stride (0 where it lacks the dimension).
#[derive(Debug)]
struct Variable {
    values: ArrayRef,
    strides: Vec<u64>,
}

/// The long table of a gridded dataset: a `RecordBatchReader` of its grid.
#[derive(Debug)]
pub(crate) struct LongTable {
    grid: Arc<LongGrid>,
    next: u64,
    batch_size: u64,
}

/// A gridded dataset's variables, read whole, and the long table's shape:
/// any range of its rows gathered from them ([`LongGrid::gather`]).
#[derive(Debug)]
pub(crate) struct LongGrid {
    schema: SchemaRef,
    /// The output dimensions' lengths.
    shape: Vec<u64>,
    columns: Vec<Variable>,
    total: u64,
    skipped: Vec<Skipped>,
    /// The group, in messages.
    label: String,
}

impl LongTable {
    /// The long table of `group`'s variables (`projection`: only these data
    /// variables, in this order).
    ///
    /// # Errors
    /// As [`LongGrid::new`].
    pub(crate) fn new(group: &ZarrGroup, projection: Option<&[String]>) -> Result<Self> {
        Ok(Self {
            grid: Arc::new(LongGrid::new(group, projection)?),
            next: 0,
            batch_size: DEFAULT_MAX_BATCH_ROWS as u64,
        })
    }

    /// The children that are not in the table.
    pub(crate) fn skipped(&self) -> &[Skipped] {
        self.grid.skipped()
    }

    /// Rows (grid points).
    pub(crate) fn total_rows(&self) -> u64 {
        self.grid.total_rows()
    }

    fn batch(&mut self) -> Result<Option<RecordBatch>> {
        let n = (self.grid.total - self.next).min(self.batch_size);
        if n == 0 {
            return Ok(None);
        }
        let rows = self.next..self.next + n;
        self.next += n;
        let all: Vec<usize> = (0..self.grid.columns.len()).collect();
        let arrays = self.grid.gather(rows, &all)?;
        Ok(Some(RecordBatch::try_new(
            self.grid.schema.clone(),
            arrays,
        )?))
    }
}

impl LongGrid {
    /// The grid of `group`'s variables (`projection`: only these data
    /// variables, in this order), each read whole.
    ///
    /// # Errors
    /// [`Error::Table`] when a variable has no dimension names, dimensions of one
    /// name differ in length, or a projected name is not a variable; read errors.
    pub(crate) fn new(group: &ZarrGroup, projection: Option<&[String]>) -> Result<Self> {
        let label = group.label();
        let err = |problem: TableProblem| Error::Table {
            path: label.clone(),
            problem,
        };
        // Every array child with its dimension names; the other children named.
        let mut arrays: Vec<(ZarrArray, Vec<String>)> = Vec::new();
        let mut skipped: Vec<Skipped> = group
            .skipped()
            .iter()
            .filter(|s| matches!(s.reason, SkipReason::Unreadable(_) | SkipReason::Element(_)))
            .cloned()
            .collect();
        for (name, node) in group.child_nodes() {
            let NodeMetadata::Array(meta) = node.metadata() else {
                if projection.is_none() {
                    skipped.push(Skipped::new(name.clone(), SkipReason::GroupNotVariable));
                }
                continue;
            };
            let dims = dimension_names(meta)
                .filter(|d| d.len() == meta.shape.len())
                .and_then(|d| d.into_iter().collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    err(TableProblem::NoDimensionNames {
                        variable: name.clone(),
                    })
                });
            let array = ZarrArray::from_metadata(
                group.store().clone(),
                join_key(group.path(), name),
                (**meta).clone(),
                node.conventions().clone(),
                *group.options(),
            )?;
            match dims {
                Ok(dims) => arrays.push((array, dims)),
                // Only the variables asked for need dimensions.
                Err(e) if projection.is_none_or(|p| p.contains(name)) => return Err(e),
                Err(_) => {}
            }
        }
        // Dimensions in order of first appearance over the variables with the
        // most dimensions first (xarray's order when, as usual, the variables
        // share one order), with their lengths.
        let mut by_rank: Vec<&(ZarrArray, Vec<String>)> = arrays.iter().collect();
        by_rank.sort_by_key(|(_, names)| std::cmp::Reverse(names.len()));
        let mut dims: Vec<(String, u64)> = Vec::new();
        for (array, names) in by_rank {
            for (d, &len) in names.iter().zip(&array.metadata().shape) {
                match dims.iter().find(|(n, _)| n == d) {
                    Some((_, l)) if *l != len => {
                        return Err(err(TableProblem::DimensionLengths {
                            dimension: d.clone(),
                            length: *l,
                            other_length: len,
                            variable: array.column_name().to_string(),
                        }));
                    }
                    Some(_) => {}
                    None => dims.push((d.clone(), len)),
                }
            }
        }
        let is_dim_coord = |(array, names): &(ZarrArray, Vec<String>)| {
            names.len() == 1 && names[0] == array.column_name()
        };
        let data: Vec<&(ZarrArray, Vec<String>)> = match projection {
            None => arrays.iter().filter(|a| !is_dim_coord(a)).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    arrays
                        .iter()
                        .find(|(a, _)| a.column_name() == n)
                        .ok_or_else(|| err(TableProblem::NoSuchVariable { name: n.clone() }))
                })
                .collect::<Result<_>>()?,
        };
        // Only the dimensions the chosen variables span (all, without a choice).
        if projection.is_some() {
            dims.retain(|(d, _)| data.iter().any(|(_, names)| names.contains(d)));
        }
        let shape: Vec<u64> = dims.iter().map(|(_, l)| *l).collect();
        let total = shape
            .iter()
            .try_fold(1u64, |acc, &l| acc.checked_mul(l))
            .ok_or_else(|| err(TableProblem::GridTooLarge))?;
        let mut fields = Vec::new();
        let mut columns = Vec::new();
        for (d, (name, len)) in dims.iter().enumerate() {
            let mut strides = vec![0; dims.len()];
            strides[d] = 1;
            let coordinate = arrays
                .iter()
                .find(|a| is_dim_coord(a) && a.0.column_name() == name);
            let (field, values) = match coordinate {
                Some((array, _)) => read_decoded(array)?,
                None => (
                    Field::new(name, ArrowType::UInt64, false),
                    Arc::new(UInt64Array::from_iter_values(0..*len)) as ArrayRef,
                ),
            };
            fields.push(field);
            columns.push(Variable { values, strides });
        }
        for (array, names) in data {
            let own = &array.metadata().shape;
            let mut strides = vec![0u64; dims.len()];
            let mut stride = 1u64;
            for (k, dim) in names.iter().enumerate().rev() {
                if let Some(d) = dims.iter().position(|(n, _)| n == dim) {
                    strides[d] = stride;
                }
                stride = stride.saturating_mul(own[k]);
            }
            let (field, values) = read_decoded(array)?;
            fields.push(field);
            columns.push(Variable { values, strides });
        }
        let index: Vec<&str> = dims.iter().map(|(n, _)| n.as_str()).collect();
        let pandas: Vec<PandasColumn<'_>> = fields
            .iter()
            .map(|field| PandasColumn {
                field,
                nullable: false,
                categories: None,
            })
            .collect();
        let metadata = pandas_metadata(&index, &pandas);
        let schema = Schema::new(fields)
            .with_metadata(HashMap::from([(pandas::SCHEMA_KEY.to_string(), metadata)]));
        Ok(Self {
            schema: Arc::new(schema),
            shape,
            columns,
            total,
            label: label.clone(),
            skipped: if projection.is_none() {
                skipped
            } else {
                Vec::new()
            },
        })
    }

    /// The children that are not in the table (subgroups, nodes zarrow cannot
    /// read), each with the reason; none when variables were chosen.
    pub(crate) fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Rows (grid points).
    pub(crate) fn total_rows(&self) -> u64 {
        self.total
    }

    /// The table's columns (with pandas' metadata marking the dimensions as
    /// the index).
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Columns `columns` (indices into [`Self::schema`]) of rows `rows`.
    ///
    /// # Errors
    /// A row past the end or a column that is none; the gather's.
    pub(crate) fn gather(&self, rows: Range<u64>, columns: &[usize]) -> Result<Vec<ArrayRef>> {
        if rows.end > self.total || rows.start > rows.end {
            return Err(Error::RowsOutOfRange {
                path: self.label.clone(),
                start: rows.start,
                end: rows.end,
                len: self.total,
            });
        }
        let mut arrays = Vec::with_capacity(columns.len());
        for &c in columns {
            let column = self.columns.get(c).ok_or_else(|| Error::Table {
                path: self.label.clone(),
                problem: TableProblem::NoSuchVariable {
                    name: format!("#{c}"),
                },
            })?;
            let indices = UInt64Array::from_iter_values(rows.clone().map(|r| {
                let mut linear = r;
                let mut index = 0u64;
                for (extent, stride) in self.shape.iter().zip(&column.strides).rev() {
                    let i = linear % extent.max(&1);
                    linear /= extent.max(&1);
                    index += i * stride;
                }
                index
            }));
            arrays.push(arrow_select::take::take(
                column.values.as_ref(),
                &indices,
                None,
            )?);
        }
        Ok(arrays)
    }
}

/// A variable's values, whole (C order), CF-decoded when the options say so,
/// and its field.
fn read_decoded(array: &ZarrArray) -> Result<(Field, ArrayRef)> {
    let raw = array.read_all()?;
    let cf = array.cf_decode()?;
    Ok(match cf {
        Some(cf) => {
            let values = cf
                .decode(&raw)
                .map_err(|e| array.convention_err(crate::Convention::Cf, e))?;
            (
                Field::new(array.column_name(), cf.data_type().clone(), true),
                values,
            )
        }
        // Times hold NaT, read as nulls.
        None => (
            Field::new(
                array.column_name(),
                raw.data_type().clone(),
                array.metadata().data_type.has_nat(),
            ),
            raw,
        ),
    })
}

impl Iterator for LongTable {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let result = self.batch();
        if result.is_err() {
            self.next = self.grid.total;
        }
        result.map_err(ArrowError::from).transpose()
    }
}

impl RecordBatchReader for LongTable {
    fn schema(&self) -> SchemaRef {
        self.grid.schema().clone()
    }
}
