//! Conventions other libraries (and zarrow itself) layer on Zarr, one module
//! each, owning both directions: how a read detects a convention in the
//! attributes and assembles the Arrow arrays it means, and how a write splits a
//! column into the convention's parts and the attributes it records.
//!
//! - [`anndata`]: anndata's dataframe elements (`encoding-type`): detect and
//!   assemble `categorical` and `nullable-*` elements; for a write, the element
//!   a column becomes, its parts (codes and categories unified across batches,
//!   values and mask, a RangeIndex's row numbers) and their attributes.
//! - [`cf`]: xarray's CF attributes, decoded; its dimension names, read (v3
//!   `dimension_names`, v2 `_ARRAY_DIMENSIONS`) and recorded.
//! - [`pandas`]: pyarrow's `pandas` schema metadata, written for a table read
//!   and read from a table to write (its index, its nullable columns).
//! - [`zarrow`](mod@zarrow): zarrow's own attributes (an array's Arrow type and
//!   timezone, a group's column order), recorded and read back.
//!
//! Pure functions: attributes in, plans and arrays out; no store. What a node's
//! attributes say is decided once, when the node is opened ([`Conventions`],
//! which a [`Node`](crate::read::Node), a [`ZarrArray`](crate::ZarrArray) and a
//! [`ZarrGroup`](crate::ZarrGroup) carry); the reader and the writer
//! (`read/column.rs`, `write/column.rs`, the group modules) then drive these
//! functions with it.

pub(crate) mod anndata;
pub(crate) mod cf;
pub(crate) mod pandas;
pub(crate) mod zarrow;

use std::sync::Arc;

use serde_json::{Map, Value};

pub(crate) use crate::error::ConventionError;
use crate::metadata::{ArrayMetadata, NodeMetadata, StringType};

/// The conventions a node follows, decided once from its attributes when it is
/// opened and carried with it: its anndata encoding, its CF decoding (an
/// array's) and what zarrow's writer recorded on it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conventions {
    anndata_type: Option<String>,
    anndata: Option<anndata::Encoding>,
    recorded: zarrow::Recorded,
    cf: Option<std::result::Result<cf::CfDecode, Arc<ConventionError>>>,
}

impl Conventions {
    /// The conventions of the node `meta` describes.
    pub(crate) fn of(meta: &NodeMetadata) -> Self {
        match meta {
            NodeMetadata::Array(meta) => Self::of_array(meta),
            NodeMetadata::Group(meta) => Self::of_attributes(&meta.attributes),
        }
    }

    /// The conventions of an array: its attributes' and its CF decoding.
    pub(crate) fn of_array(meta: &ArrayMetadata) -> Self {
        // CF decodes numbers only, whose Arrow type neither the string layout
        // nor a recorded timezone changes.
        let raw = meta.data_type.arrow_type(StringType::default());
        Self {
            cf: cf::CfDecode::from_metadata(meta, &raw)
                .map_err(Arc::new)
                .transpose(),
            ..Self::of_attributes(&meta.attributes)
        }
    }

    /// The conventions `attributes` declare (no CF decoding: that is an
    /// array's, see [`Conventions::of_array`]).
    pub(crate) fn of_attributes(attributes: &Map<String, Value>) -> Self {
        Self {
            anndata_type: anndata::encoding_type(attributes).map(str::to_string),
            anndata: anndata::encoding(attributes),
            recorded: zarrow::Recorded::of(attributes),
            cf: None,
        }
    }

    /// The anndata element the node is ([`anndata::encoding`]), if any.
    pub(crate) fn anndata(&self) -> Option<&anndata::Encoding> {
        self.anndata.as_ref()
    }

    /// The node's anndata `encoding-type`, as written
    /// ([`anndata::encoding_type`]).
    pub(crate) fn anndata_type(&self) -> Option<&str> {
        self.anndata_type.as_deref()
    }

    /// What zarrow's writer recorded on the node.
    pub(crate) fn recorded(&self) -> &zarrow::Recorded {
        &self.recorded
    }

    /// How an array's CF attributes change its values
    /// ([`cf::CfDecode::from_metadata`]), if they do.
    ///
    /// # Errors
    /// Attributes zarrow cannot decode (a calendar other than the Gregorian
    /// one, say).
    pub(crate) fn cf(&self) -> std::result::Result<Option<&cf::CfDecode>, Arc<ConventionError>> {
        self.cf
            .as_ref()
            .map(|cf| cf.as_ref().map_err(Arc::clone))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::metadata::parse_zarr_json;

    fn node(doc: Value) -> NodeMetadata {
        parse_zarr_json("zarr.json", doc.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn decided_once_from_the_attributes() {
        let group = node(json!({
            "zarr_format": 3, "node_type": "group",
            "attributes": {"encoding-type": "dataframe", "_index": "cell",
                           "column-order": ["a"], "zarrow": {"columns": ["b"]}},
        }));
        let conventions = Conventions::of(&group);
        assert_eq!(conventions.anndata_type(), Some("dataframe"));
        assert_eq!(
            conventions.anndata(),
            Some(&anndata::Encoding::DataFrame {
                index: Some("cell".into()),
                column_order: vec!["a".into()],
            })
        );
        assert_eq!(conventions.recorded().columns, Some(vec!["b".to_string()]));
        assert!(matches!(conventions.cf(), Ok(None)));

        let array = |attributes: Value| {
            node(json!({
                "zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "attributes": attributes,
            }))
        };
        let scaled = Conventions::of(&array(json!({"scale_factor": 0.5})));
        assert_eq!(scaled.anndata(), None);
        assert_eq!(
            scaled.cf().unwrap().map(cf::CfDecode::data_type),
            Some(&arrow_schema::DataType::Float64)
        );
        // An error is kept for the read that decodes, not raised at open.
        let julian = array(json!({"units": "days since 2000-01-01", "calendar": "julian"}));
        assert!(Conventions::of(&julian).cf().is_err());
    }
}
