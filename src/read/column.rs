//! [`Column`]: one column of a table, as a group stores it: a 1-D array (CF
//! attributes decoded), or an anndata element stored as a group of arrays
//! (`categorical`: codes and categories; `nullable-*`: values and mask).
//!
//! A column reads its *leaves* (the 1-D arrays whose rows line up with the
//! table's) through the batch reader, row range by row range, then
//! [assembles](Column::assemble) them into one Arrow array. What each
//! convention means is its module's ([`conventions`](crate::conventions)):
//! this is the driver that holds the arrays and calls them.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType as ArrowType, Field};

use super::ZarrArray;
use crate::StringType;
use crate::conventions::ConventionError;
use crate::conventions::anndata::{self, Nullable};
use crate::conventions::cf::{self, CfDecode};
use crate::conventions::pandas::PandasColumn;
use crate::conventions::zarrow;
use crate::error::Convention;
use crate::error::{Error, Result};

/// One column of a table.
#[derive(Debug, Clone)]
pub struct Column {
    field: Arc<Field>,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A 1-D array, CF-decoded when its attributes say so, or encoded again
    /// as the dictionary zarrow's writer recorded (`dictionary`: its key type).
    Array {
        array: ZarrArray,
        cf: Option<CfDecode>,
        dictionary: Option<ArrowType>,
    },
    /// anndata `categorical`: codes (the rows) into categories (read once).
    Categorical {
        codes: ZarrArray,
        categories: ZarrArray,
        /// As the categories' values (see [`ReadOptions::categorical_values`]).
        values: bool,
    },
    /// anndata `nullable-*`: values, null where the mask is true.
    Masked { values: ZarrArray, mask: ZarrArray },
}

impl Column {
    /// A 1-D array read alone as a column (its values, [`ZarrArray::arrow_type`]),
    /// its CF attributes decoded when its options say so.
    ///
    /// # Errors
    /// A CF attribute zarrow cannot decode (a non-Gregorian calendar, say).
    pub(crate) fn array(array: ZarrArray) -> Result<Self> {
        Self::with_dictionary(array, None)
    }

    /// A 1-D array as a column of its group's table: as [`Column::array`], and a
    /// dictionary column the plain layout stored as its values is a dictionary
    /// again, unless the options ask for values (as they do of anndata's
    /// categoricals).
    ///
    /// # Errors
    /// As [`Column::array`].
    pub(crate) fn table_column(array: ZarrArray) -> Result<Self> {
        let keys = match array.options().categorical_values {
            false => array.conventions().recorded().dictionary_keys.clone(),
            true => None,
        };
        Self::with_dictionary(array, keys)
    }

    fn with_dictionary(array: ZarrArray, keys: Option<ArrowType>) -> Result<Self> {
        let raw = array.arrow_type();
        let cf = array.cf_decode()?;
        let dictionary = if cf.is_none() { keys } else { None };
        let (data_type, nullable) = match (&cf, &dictionary) {
            (Some(cf), _) => (cf.data_type().clone(), true),
            (None, Some(keys)) => (
                ArrowType::Dictionary(Box::new(keys.clone()), Box::new(raw)),
                array.field().is_nullable(),
            ),
            (None, None) => (raw, array.field().is_nullable()),
        };
        let metadata = cf::dimension_metadata(array.metadata());
        let field = Field::new(array.column_name(), data_type, nullable).with_metadata(metadata);
        Ok(Self {
            field: Arc::new(field),
            kind: Kind::Array {
                array,
                cf,
                dictionary,
            },
        })
    }

    /// An anndata `categorical` element named `name`.
    ///
    /// `keys`: the key type zarrow's writer recorded (the plain layout's
    /// dictionaries), taken where every category has a key of it.
    ///
    /// # Errors
    /// Codes that are not a signed integer type, or not 1-D, or categories
    /// that are not 1-D.
    pub(crate) fn categorical(
        name: &str,
        codes: ZarrArray,
        categories: ZarrArray,
        ordered: bool,
        keys: Option<&ArrowType>,
    ) -> std::result::Result<Self, ConventionError> {
        one_d(&codes, anndata::CODES)?;
        one_d(&categories, anndata::CATEGORIES)?;
        let mut data_type = anndata::dictionary_type(&codes.arrow_type(), &categories.arrow_type())
            .ok_or_else(|| ConventionError::CodeType(codes.arrow_type()))?;
        if let Some(keys) = keys.filter(|k| zarrow::keys_number(k, categories.len())) {
            data_type =
                ArrowType::Dictionary(Box::new(keys.clone()), Box::new(categories.arrow_type()));
        }
        let values = codes.options().categorical_values;
        // As values, each row is a view of its category unless a string type is
        // chosen: no string is copied.
        let categories = if values {
            categories.or_string_type(StringType::Utf8View)
        } else {
            categories
        };
        let field = if values {
            Field::new(name, categories.arrow_type(), true)
        } else {
            Field::new(name, data_type, true).with_dict_is_ordered(ordered)
        };
        Ok(Self {
            field: Arc::new(field),
            kind: Kind::Categorical {
                codes,
                categories,
                values,
            },
        })
    }

    /// An anndata `nullable-*` element named `name`.
    ///
    /// # Errors
    /// A mask that is not bool, arrays that are not 1-D or differ in length,
    /// or values of the wrong kind for `kind`.
    pub(crate) fn masked(
        name: &str,
        values: ZarrArray,
        mask: ZarrArray,
        kind: Nullable,
    ) -> std::result::Result<Self, ConventionError> {
        one_d(&values, anndata::VALUES)?;
        one_d(&mask, anndata::MASK)?;
        if mask.arrow_type() != ArrowType::Boolean {
            return Err(ConventionError::MaskType(mask.arrow_type()));
        }
        if mask.len() != values.len() {
            return Err(ConventionError::MaskLength {
                mask: usize::try_from(mask.len()).unwrap_or(usize::MAX),
                values: usize::try_from(values.len()).unwrap_or(usize::MAX),
            });
        }
        let data_type = values.arrow_type();
        if Nullable::of(&data_type) != Some(kind) {
            return Err(ConventionError::NullableValues {
                kind: match kind {
                    Nullable::Integer => "Integer",
                    Nullable::Boolean => "Boolean",
                    Nullable::String => "String",
                },
                data_type: values.metadata().data_type.to_string().to_string(),
            });
        }
        Ok(Self {
            field: Arc::new(Field::new(name, data_type, true)),
            kind: Kind::Masked { values, mask },
        })
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        self.field.name()
    }

    /// The Arrow field (type after conventions are applied).
    pub fn field(&self) -> &Arc<Field> {
        &self.field
    }

    /// Rows.
    pub(crate) fn len(&self) -> u64 {
        self.leaves()[0].len()
    }

    #[cfg(feature = "datafusion")]
    /// The column's chunk statistics, its bounds as the table shows its
    /// values: an array's own; a categorical's from its codes' (see
    /// [`Bounds::categorical`](crate::stats::Bounds::categorical)); none for
    /// a masked column.
    ///
    /// # Errors
    /// As [`ZarrArray::chunk_statistics`]; reading the categories.
    pub(crate) fn statistics(&self) -> Result<Option<crate::stats::Bounds>> {
        match &self.kind {
            Kind::Array { array, .. } => array.chunk_statistics(),
            Kind::Categorical {
                codes, categories, ..
            } => {
                let Some(bounds) = codes.chunk_statistics()? else {
                    return Ok(None);
                };
                Ok(Some(crate::stats::Bounds::categorical(
                    bounds,
                    &categories.read_all()?,
                )))
            }
            Kind::Masked { .. } => Ok(None),
        }
    }

    /// The arrays read row by row: the array, the codes, or values and mask.
    pub(crate) fn leaves(&self) -> Vec<&ZarrArray> {
        match &self.kind {
            Kind::Array { array, .. } => vec![array],
            Kind::Categorical { codes, .. } => vec![codes],
            Kind::Masked { values, mask } => vec![values, mask],
        }
    }

    /// The longest chunk (shard) among the leaves.
    pub(crate) fn chunk_len(&self) -> u64 {
        self.leaves()
            .iter()
            .map(|a| a.row_chunk_len())
            .max()
            .unwrap_or(1)
    }

    /// What the column reads whole, before any row: an anndata categorical's
    /// categories (their array; `None` for any other column).
    pub fn categories(&self) -> Option<&ZarrArray> {
        match &self.kind {
            Kind::Categorical { categories, .. } => Some(categories),
            _ => None,
        }
    }

    /// One row range of the column from its leaves' arrays for it (in
    /// [`leaves`](Self::leaves) order) and its [`categories`](Self::categories), read whole.
    pub(crate) fn assemble(
        &self,
        prepared: Option<&ArrayRef>,
        mut leaves: Vec<ArrayRef>,
    ) -> Result<ArrayRef> {
        let anndata =
            |array: &ZarrArray, e: ConventionError| array.convention_err(Convention::AnnData, e);
        match &self.kind {
            Kind::Array {
                cf: None,
                dictionary: None,
                ..
            } => Ok(leaves.swap_remove(0)),
            Kind::Array {
                array,
                cf: None,
                dictionary: Some(keys),
            } => zarrow::dictionary(&leaves[0], keys)
                .map_err(|e| array.convention_err(Convention::Zarrow, e)),
            Kind::Array {
                array,
                cf: Some(cf),
                ..
            } => cf
                .decode(&leaves[0])
                .map_err(|e| array.convention_err(Convention::Cf, e)),
            Kind::Categorical { codes, values, .. } => {
                let Some(dictionary) = prepared else {
                    return Err(Error::Internal {
                        what: "a categorical column's categories were not read before its rows",
                    });
                };
                let assemble = if *values {
                    anndata::categorical_values
                } else {
                    anndata::categorical
                };
                let column = assemble(&leaves[0], dictionary).map_err(|e| anndata(codes, e))?;
                // Recorded keys of another type than the codes': cast (the
                // keys alone, the categories shared).
                if column.data_type() == self.field.data_type() {
                    Ok(column)
                } else {
                    Ok(arrow_cast::cast(&column, self.field.data_type())?)
                }
            }
            Kind::Masked { values, .. } => {
                anndata::masked(&leaves[0], &leaves[1]).map_err(|e| anndata(values, e))
            }
        }
    }

    /// The column's entry in pyarrow's `pandas` metadata.
    pub(crate) fn pandas(&self) -> PandasColumn<'_> {
        PandasColumn {
            field: &self.field,
            nullable: matches!(self.kind, Kind::Masked { .. }),
            categories: match &self.kind {
                Kind::Categorical {
                    categories,
                    values: false,
                    ..
                } => Some(usize::try_from(categories.len()).unwrap_or(usize::MAX)),
                _ => None,
            },
        }
    }
}

fn one_d(array: &ZarrArray, role: &'static str) -> std::result::Result<(), ConventionError> {
    match array.metadata().shape.len() {
        1 => Ok(()),
        _ => Err(ConventionError::MemberShape {
            role,
            shape: array.metadata().shape.clone(),
        }),
    }
}
