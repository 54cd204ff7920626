//! [`Skipped`]: a child of a group that is not read as a column, and why.
//!
//! Here, beside the error that lists them ([`Error::NoColumns`]), so that the
//! reader depends on the error module and not the other way round.

use std::fmt;
use std::sync::Arc;

use super::{Convention, ConventionError, Cut, Error};

/// A child of a group that is not read as a column, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The child's name; empty for the group itself (an anndata element that
    /// is not a table).
    pub name: String,
    /// Why it is not a column.
    pub reason: SkipReason,
}

impl Skipped {
    /// A skipped child.
    pub(crate) fn new(name: impl Into<String>, reason: SkipReason) -> Self {
        Self {
            name: name.into(),
            reason,
        }
    }

    /// It is an array zarrow reads, but its conventions (CF attributes: a
    /// calendar zarrow does not know) cannot be decoded: reading the whole
    /// table is then an error rather than a table without it; it reads with
    /// conventions off.
    pub(crate) fn is_convention(&self) -> bool {
        matches!(self.reason, SkipReason::Convention { .. })
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            // The group itself.
            return write!(f, "{}", self.reason);
        }
        write!(f, "{}: {}", Cut(&self.name), self.reason)
    }
}

/// Why a child of a group is not a column ([`Skipped::reason`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SkipReason {
    /// Its metadata, or the array itself, cannot be read.
    Unreadable(Arc<Error>),
    /// An array whose conventions cannot be decoded.
    Convention {
        /// The array: the store's location and the node path.
        path: String,
        /// Whose convention.
        convention: Convention,
        /// What cannot be decoded.
        source: Arc<ConventionError>,
    },
    /// An anndata element (a categorical, a nullable array) whose parts do not
    /// make a column.
    Element(Arc<ConventionError>),
    /// An array of more than one dimension.
    NotOneDimensional {
        /// Its shape.
        shape: Vec<u64>,
    },
    /// A group that is an anndata element other than a column (a sparse matrix).
    AnnDataElement {
        /// Its `encoding-type`.
        encoding: String,
    },
    /// The group read is itself an anndata element that is not a table.
    NotATable {
        /// Its `encoding-type`.
        encoding: String,
    },
    /// A group that is an anndata dataframe.
    DataFrame,
    /// A group that is no anndata element.
    Group,
    /// A group among a long table's variables.
    GroupNotVariable,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Unreadable(e) => write!(f, "cannot be read: {e}"),
            SkipReason::Convention { path, source, .. } => {
                write!(f, "cannot be decoded: {:?}: {source}", Cut(path))
            }
            SkipReason::Element(e) => write!(f, "cannot be read: {e}"),
            SkipReason::NotOneDimensional { shape } => write!(
                f,
                "a {}-D array (shape {shape:?}); convert it on its own",
                shape.len()
            ),
            SkipReason::AnnDataElement { encoding } => {
                write!(f, "an anndata {} element, not a column", Cut(encoding))
            }
            SkipReason::NotATable { encoding } => {
                write!(f, "an anndata {} element, not a table", Cut(encoding))
            }
            SkipReason::DataFrame => f.write_str("an anndata dataframe; convert it on its own"),
            SkipReason::Group => f.write_str("a group, not a column; convert it on its own"),
            SkipReason::GroupNotVariable => {
                f.write_str("a group, not a variable; convert it on its own")
            }
        }
    }
}
