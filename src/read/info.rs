//! What a node is, in Zarr and in Arrow terms, as data: `zarrow info` renders it
//! as text and the Python package's `zarrow.info` as a dict (it serialises with
//! serde).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{ReadOptions, ZarrArray, ZarrGroup, read_node};
use crate::error::Result;
use crate::metadata::NodeMetadata;
use crate::store::Store;

/// A node: an array or a group (serialised with `"node": "array"` or `"group"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "node", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NodeInfo {
    /// An array.
    Array(ArrayInfo),
    /// A group.
    Group(GroupInfo),
}

/// An array.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ArrayInfo {
    /// 2 or 3.
    pub zarr_format: u8,
    /// The shape.
    pub shape: Vec<u64>,
    /// The shape of every chunk.
    pub chunk_shape: Vec<u64>,
    /// The Zarr data type's name.
    pub data_type: String,
    /// The fill value, described.
    pub fill_value: String,
    /// How chunk indices become keys.
    pub chunk_key_encoding: String,
    /// The codec chain, described.
    pub codecs: String,
    /// The Arrow type it reads as.
    pub arrow_type: String,
    /// Chunks in the grid.
    pub chunks: u64,
    /// Chunks stored (the others read as the fill value); `None` when the store
    /// could not be listed (a plain HTTP server cannot): see `chunks_unlisted`.
    pub chunks_present: Option<u64>,
    /// Why the stored chunks could not be counted, when they could not.
    pub chunks_unlisted: Option<String>,
    /// The user attributes.
    pub attributes: Map<String, Value>,
    /// Chunks with statistics (zarrow's `zarrow.stats`) that still describe
    /// them; `None`: no statistics, or none used (see `stats_note`).
    pub stats_fresh: Option<u64>,
    /// The chunks statistics describe in the array's current shape (the
    /// array's length over the statistics' chunk length: inner chunks of a
    /// sharded array); `None` with `stats_fresh`.
    pub stats_chunks: Option<u64>,
    /// Chunks whose statistics are stale: stored again since (they are read).
    pub stats_stale: Vec<u64>,
    /// Why the statistics are not used at all, when they are not (the
    /// metadata changed since, or the file cannot be read), or that they
    /// cannot be checked (a store that cannot list: they are used as they are).
    pub stats_note: Option<String>,
}

/// A group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GroupInfo {
    /// 2 or 3.
    pub zarr_format: u8,
    /// Its anndata `encoding-type`, if any.
    pub anndata: Option<String>,
    /// The user attributes.
    pub attributes: Map<String, Value>,
    /// Its children, by name.
    pub children: Vec<ChildInfo>,
    /// The columns of the table it reads as (1-D arrays and conventions).
    pub columns: Vec<ColumnInfo>,
    /// The children that are not columns, each with the reason.
    pub not_columns: Vec<String>,
}

/// A child of a group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChildInfo {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(flatten)]
    pub node: ChildNode,
}

/// What a child of a group is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "node", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChildNode {
    /// An array zarrow reads.
    Array(Box<ArrayInfo>),
    /// An array zarrow cannot read, and why (one must not hide the others).
    Unreadable {
        /// The error opening it.
        error: String,
    },
    /// A group (not descended into).
    Group {
        /// 2 or 3.
        zarr_format: u8,
        /// Its anndata `encoding-type`, if any.
        anndata: Option<String>,
    },
}

/// A column of a group's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ColumnInfo {
    /// Its name.
    pub name: String,
    /// Its Arrow type.
    pub arrow_type: String,
    /// Its length.
    pub rows: u64,
}

/// The array `array`. A store that cannot be listed leaves the count of stored
/// chunks unknown, with the reason, rather than failing.
///
/// # Errors
/// None at present: a listing error becomes `chunks_unlisted`.
pub fn describe_array(array: &ZarrArray) -> Result<ArrayInfo> {
    describe_with(array, array.statistics_report())
}

/// [`describe_array`], its statistics checked against the store even where it
/// cannot list versions (plain HTTP: a HEAD per chunk's object, bounded in
/// concurrency, compares each object's size with the size its recorded
/// version begins with): `zarrow stats --verify`.
///
/// # Errors
/// None at present: as [`describe_array`]; a failed check is a note.
pub fn describe_array_verified(array: &ZarrArray) -> Result<ArrayInfo> {
    describe_with(array, array.verified_statistics())
}

fn describe_with(
    array: &ZarrArray,
    report: Result<Option<crate::stats::Report>>,
) -> Result<ArrayInfo> {
    let m = array.metadata();
    let (chunks_present, chunks_unlisted) = match array.chunks_present() {
        Ok(n) => (Some(n), None),
        Err(e) => (None, Some(e.with_sources())),
    };
    let (stats_fresh, stats_chunks, stats_stale, stats_note) = match report {
        Ok(None) => (None, None, Vec::new(), None),
        // None is used: no row is fresh or stale.
        Ok(Some(report)) if report.unusable.is_some() || report.stats.is_none() => {
            let why = report.unusable.as_deref().unwrap_or("another version");
            (None, None, Vec::new(), Some(format!("not used: {why}")))
        }
        Ok(Some(report)) => {
            let fresh = report.fresh.iter().filter(|f| **f).count() as u64;
            let chunks = report.stats.as_ref().map(|s| {
                let len = m.shape.first().copied().unwrap_or(0);
                len.div_ceil(s.chunk_len.max(1))
            });
            let note = (!report.verified).then(|| {
                "not checked: the store cannot list versions; used as they are".to_string()
            });
            (Some(fresh), chunks, report.stale(), note)
        }
        Err(e) => (
            None,
            None,
            Vec::new(),
            Some(format!("unreadable: {}", e.with_sources())),
        ),
    };
    Ok(ArrayInfo {
        stats_fresh,
        stats_chunks,
        stats_stale,
        stats_note,
        zarr_format: m.zarr_format,
        shape: m.shape.clone(),
        chunk_shape: m.chunk_shape.clone(),
        data_type: m.data_type.to_string(),
        fill_value: m.fill_value.describe(&m.data_type),
        chunk_key_encoding: m.chunk_key_encoding.to_string(),
        codecs: array.codecs().to_string(),
        arrow_type: array.arrow_type().to_string(),
        chunks: array.grid().num_chunks(),
        chunks_present,
        chunks_unlisted,
        attributes: m.attributes.clone(),
    })
}

/// The node at the root of `store`; `name` names a root array's column and
/// prefixes a group's nested columns (as [`ZarrGroup::with_column_name`]).
///
/// # Errors
/// Reading the node's metadata, opening it, listing its chunks.
pub fn describe_node(store: Arc<dyn Store>, name: &str, options: ReadOptions) -> Result<NodeInfo> {
    match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            let array = ZarrArray::open_with(store, "", options)?.with_column_name(name);
            Ok(NodeInfo::Array(describe_array(&array)?))
        }
        NodeMetadata::Group(meta) => {
            let group = ZarrGroup::open_with(store.clone(), "", options)?.with_column_name(name)?;
            let mut children = Vec::new();
            for (name, node) in group.child_nodes() {
                let node = match node.metadata() {
                    NodeMetadata::Array(_) => {
                        match ZarrArray::open_with(store.clone(), name, options) {
                            Ok(array) => ChildNode::Array(Box::new(describe_array(&array)?)),
                            Err(e) => ChildNode::Unreadable {
                                error: e.to_string(),
                            },
                        }
                    }
                    NodeMetadata::Group(g) => ChildNode::Group {
                        zarr_format: g.zarr_format,
                        anndata: node.conventions().anndata_type().map(str::to_string),
                    },
                };
                children.push(ChildInfo {
                    name: name.clone(),
                    node,
                });
            }
            let columns = group
                .columns()
                .iter()
                .map(|c| ColumnInfo {
                    name: c.name().to_string(),
                    arrow_type: c.field().data_type().to_string(),
                    rows: c.len(),
                })
                .collect();
            Ok(NodeInfo::Group(GroupInfo {
                zarr_format: meta.zarr_format,
                anndata: group.conventions().anndata_type().map(str::to_string),
                attributes: meta.attributes.clone(),
                children,
                columns,
                not_columns: group.skipped().iter().map(ToString::to_string).collect(),
            }))
        }
    }
}
