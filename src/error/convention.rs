//! What a convention (anndata, CF, zarrow's own attributes) cannot apply to, and
//! whose convention it is.

use arrow_schema::{ArrowError, DataType as ArrowType};

use super::{Cut, Error};

/// The conventions zarrow applies on top of Zarr ([`Error::Convention`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Convention {
    /// anndata's element encodings (categoricals, nullable arrays, dataframes).
    AnnData,
    /// CF attributes (xarray's scale, offset, missing values and times).
    Cf,
    /// zarrow's own attributes (a recorded dictionary column).
    Zarrow,
}

/// Values a convention cannot be applied to: what `conventions::anndata`'s and
/// `conventions::cf`'s
/// functions return (the reader adds the array's name, the writer the column's:
/// [`Error::Convention`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConventionError {
    /// anndata categorical codes that are not signed integers.
    #[error("categorical codes must be signed integers, not {0}")]
    CodeType(ArrowType),
    /// A categorical code below -1 (missing) or past the last category.
    #[error(
        "categorical code {code} is outside the {categories} categories (codes are 0..{categories}, or -1 for missing)"
    )]
    CodeOutOfRange {
        /// The first such code.
        code: i64,
        /// How many categories there are.
        categories: i64,
    },
    /// An anndata mask that is not boolean.
    #[error("the mask must be bool, not {0}")]
    MaskType(ArrowType),
    /// An anndata mask of another length than its values.
    #[error("the mask has {mask} rows, the values {values}")]
    MaskLength {
        /// The mask's rows.
        mask: usize,
        /// The values' rows.
        values: usize,
    },
    /// Categories of a type an anndata `categorical` is not written with.
    #[error("categories of type {0} cannot be written")]
    CategoryType(ArrowType),
    /// A batch's categories of another type than the column's.
    #[error("categories are {expected}, not {found}")]
    CategoriesChanged {
        /// The column's categories' type.
        expected: ArrowType,
        /// The batch's.
        found: ArrowType,
    },
    /// A stored category that is missing (null).
    #[error("a stored category is missing")]
    MissingCategory,
    /// A stored category that appears twice.
    #[error("a stored category appears twice")]
    DuplicateCategory,
    /// More categories than 32-bit codes count.
    #[error("more than 2^31 categories")]
    TooManyCategories,
    /// A categorical column without a category.
    #[error("a categorical column without categories cannot be written")]
    NoCategories,
    /// More categories than the stored codes' type counts.
    #[error("its stored codes are {0}: the categories no longer fit")]
    CodesOverflow(ArrowType),
    /// Dictionary keys that are not integers.
    #[error("dictionary keys of type {0}")]
    KeyType(ArrowType),
    /// CF decoding of values that are not numbers.
    #[error("cannot CF-decode {0}")]
    NotNumeric(ArrowType),
    /// CF time `units` in a unit zarrow does not know.
    #[error("CF time unit {unit:?} in units {units:?}")]
    TimeUnit {
        /// The unit.
        unit: String,
        /// The `units` attribute.
        units: String,
    },
    /// CF times in a calendar other than the (proleptic) Gregorian one.
    #[error(
        "calendar {calendar:?} (units {units:?}): zarrow decodes CF times in the standard and proleptic_gregorian calendars only; read the raw values instead"
    )]
    Calendar {
        /// The `calendar` attribute.
        calendar: String,
        /// The `units` attribute.
        units: String,
    },
    /// CF time `units` whose reference date does not parse.
    #[error("cannot parse the reference date in units {:?}", Cut(units))]
    ReferenceDate {
        /// The `units` attribute.
        units: String,
    },
    /// CF times of the standard calendar before 1582-10-15, which are Julian.
    #[error(
        "calendar {calendar:?} with a reference date before 1582-10-15 (units {units:?}) counts Julian days, which zarrow does not decode; read the raw values instead"
    )]
    JulianDates {
        /// The `calendar` attribute.
        calendar: String,
        /// The `units` attribute.
        units: String,
    },
    /// A CF time past what a nanosecond timestamp holds.
    #[error("time value {0} is outside what a nanosecond timestamp holds")]
    TimeOutOfRange(f64),
    /// arrow-rs refused the arrays.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// A member of an anndata element (`codes`, `categories`, `values`, `mask`)
    /// that is not 1-D.
    #[error("its {role} array is {}-D (shape {shape:?})", shape.len())]
    MemberShape {
        /// The member.
        role: &'static str,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// A member of an anndata element that is a group.
    #[error("its {name:?} is a group, not an array")]
    MemberIsGroup {
        /// The member.
        name: &'static str,
    },
    /// A member of an anndata element that is missing.
    #[error("it has no {name:?} array")]
    MemberMissing {
        /// The member.
        name: &'static str,
    },
    /// A member of an anndata element whose metadata cannot be read.
    #[error("{source}")]
    MemberUnreadable {
        /// The member.
        name: &'static str,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// The values of an anndata `nullable-*` element of another kind than it says.
    #[error("{kind} values must not be {data_type}")]
    NullableValues {
        /// The element's kind (`Integer`, `Boolean`, `String`).
        kind: &'static str,
        /// The values' Zarr data type.
        data_type: String,
    },
}

impl ConventionError {
    /// Whether the values are sound but zarrow does not decode them (a calendar,
    /// a time unit): an unsupported feature rather than invalid data.
    pub(crate) fn is_unsupported(&self) -> bool {
        matches!(
            self,
            ConventionError::TimeUnit { .. }
                | ConventionError::Calendar { .. }
                | ConventionError::JulianDates { .. }
                | ConventionError::CategoryType(_)
                | ConventionError::NotNumeric(_)
        )
    }
}
