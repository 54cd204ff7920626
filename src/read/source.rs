//! [`TableSource`]: how the node at a store's root reads as a table, decided
//! once for every engine (`zarrow.read` and `zarrow convert` through
//! [`open_table`](super::open_table), the DataFusion table's snapshot).

use std::sync::Arc;

use super::{ReadOptions, ReaderBuilder, ZarrArray, ZarrGroup, read_node};
use crate::error::{Error, Result};
use crate::metadata::NodeMetadata;
use crate::store::Store;

/// How a node reads as a table.
#[derive(Debug, Clone)]
pub(crate) enum TableSource {
    /// A group's 1-D arrays (a column each), or one 1-D array (one column
    /// named after it): rows read by a [`ReaderBuilder`].
    Rows(ReaderBuilder),
    /// An N-d array, flattened in C order, read slab by slab (a slab: the
    /// elements whose first index falls in one chunk row).
    Flat(ZarrArray),
    /// A group of N-d variables as a long table: a row per grid point, its
    /// coordinates and each variable's value (asked for with `long`); the
    /// variables selected, or all.
    Long(ZarrGroup, Option<Vec<String>>),
}

impl TableSource {
    /// The node at the root of `store` as a table: `name` names a root
    /// array's column and prefixes a group's nested columns (as
    /// [`ZarrGroup::with_column_name`]); `columns` selects a group's columns
    /// (a long table's variables); `long` reads a group as a long table.
    ///
    /// # Errors
    /// [`Error::OptionNotApplicable`] for a column selection or a long table
    /// of an array; the readers' errors.
    pub(crate) fn open(
        store: Arc<dyn Store>,
        name: &str,
        options: ReadOptions,
        columns: Option<&[String]>,
        long: bool,
    ) -> Result<Self> {
        let refuse = |options: &'static str, applies_to: &'static str| {
            Err(Error::OptionNotApplicable {
                options: vec![options],
                applies_to,
            })
        };
        Ok(match read_node(store.as_ref(), "")? {
            NodeMetadata::Array(_) => {
                if columns.is_some() {
                    return refuse("a column selection", "groups only");
                }
                if long {
                    return refuse("a long table", "a group of N-d variables, not an array");
                }
                let array = ZarrArray::open_with(store, "", options)?.with_column_name(name);
                if array.metadata().shape.len() == 1 {
                    Self::Rows(array.reader())
                } else {
                    Self::Flat(array)
                }
            }
            NodeMetadata::Group(_) if long => {
                let group = ZarrGroup::open_with(store, "", options)?;
                Self::Long(group, columns.map(<[String]>::to_vec))
            }
            NodeMetadata::Group(_) => {
                let builder = ZarrGroup::open_with(store, "", options)?
                    .with_column_name(name)?
                    .reader();
                Self::Rows(match columns {
                    Some(columns) => builder.with_projection(columns.to_vec()),
                    None => builder,
                })
            }
        })
    }
}
