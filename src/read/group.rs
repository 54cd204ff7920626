//! [`ZarrGroup`]: a group whose 1-D arrays (and anndata elements) are the
//! columns of one table.
//!
//! Which children are columns, and in which order:
//! - an anndata dataframe (`encoding-type: dataframe`): the `_index` element
//!   first, then `column-order`, then any other column;
//! - otherwise the order zarrow's writer recorded, else by name.
//!
//! A 1-D array is a column (its CF attributes decoded); so are anndata's
//! `categorical` and `nullable-*` elements, stored as groups of arrays. Every other
//! child (an N-d array, a sparse matrix, a subgroup, a node whose metadata zarrow
//! cannot read) is [skipped](ZarrGroup::skipped), with the reason, never in
//! silence. A group that is itself an anndata element reads as a table of that one
//! column.

use std::sync::Arc;

use super::{Column, LongTable, Node, ReadOptions, ReaderBuilder, TableReader, ZarrArray};
use crate::conventions::Conventions;
use crate::conventions::anndata::{self, Encoding};
use crate::error::{ConventionError, Error, NodeKind, Result, SkipReason, Skipped};
use crate::metadata::NodeMetadata;
use crate::store::{Store, join_key, node_label};

/// A Zarr group opened for reading: its children's metadata and the columns
/// they make, loaded once (the group's own attributes: [`read_node`](crate::read_node)).
///
/// Cheap to clone (the store, children and columns are shared).
#[derive(Debug, Clone)]
pub struct ZarrGroup {
    store: Arc<dyn Store>,
    path: String,
    conventions: Arc<Conventions>,
    children: Arc<Vec<(String, Node)>>,
    columns: Arc<Vec<Column>>,
    skipped: Arc<Vec<Skipped>>,
    options: ReadOptions,
}

impl ZarrGroup {
    /// Open the group at node `path` (`""` for the root) with default options.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], metadata errors, or [`Error::WrongNodeKind`] when
    /// the node is an array.
    pub fn open(store: Arc<dyn Store>, path: &str) -> Result<Self> {
        Self::open_with(store, path, ReadOptions::default())
    }

    /// Open with explicit options: reads the group's metadata and every child's.
    ///
    /// # Errors
    /// As [`ZarrGroup::open`]. A child whose metadata is invalid, or that cannot
    /// be read as a column, is not an error: it is [skipped](Self::skipped), with
    /// the reason. Directories without metadata are not children.
    pub fn open_with(store: Arc<dyn Store>, path: &str, options: ReadOptions) -> Result<Self> {
        let path = path.trim_matches('/').to_string();
        let conventions = match Node::read(store.as_ref(), &path)?.into_parts() {
            (NodeMetadata::Group(_), conventions) => conventions,
            (NodeMetadata::Array(_), _) => {
                return Err(Error::WrongNodeKind {
                    path: node_label(store.as_ref(), &path),
                    expected: NodeKind::Group,
                    found: NodeKind::Array,
                });
            }
        };
        let mut children = Vec::new();
        let mut skipped = Vec::new();
        for name in store.list_children(&path)? {
            match Node::read(store.as_ref(), &join_key(&path, &name)) {
                Ok(node) => children.push((name, node)),
                Err(Error::NodeNotFound { .. }) => {}
                Err(e) => skipped.push(Skipped::new(name, SkipReason::Unreadable(Arc::new(e)))),
            }
        }
        let mut group = Self {
            store,
            path,
            conventions,
            children: Arc::new(children),
            columns: Arc::new(Vec::new()),
            skipped: Arc::new(Vec::new()),
            options,
        };
        let (columns, more) = group.resolve_columns();
        skipped.extend(more);
        group.columns = Arc::new(columns);
        group.skipped = Arc::new(skipped);
        Ok(group)
    }

    /// The group's node path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The group as a user names it: the store's location and the node path.
    pub(crate) fn label(&self) -> String {
        node_label(self.store.as_ref(), &self.path)
    }

    /// The store the group is in.
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The conventions the group follows, decided when it was opened.
    pub(crate) fn conventions(&self) -> &Conventions {
        &self.conventions
    }

    /// The direct children whose metadata zarrow reads, by name, sorted, each
    /// with its metadata.
    pub fn children(&self) -> impl ExactSizeIterator<Item = (&str, &NodeMetadata)> + '_ {
        self.children
            .iter()
            .map(|(name, node)| (name.as_str(), node.metadata()))
    }

    /// The direct children, by name, sorted, as opened (with their conventions).
    pub(crate) fn child_nodes(&self) -> &[(String, Node)] {
        &self.children
    }

    /// The table's columns, in order: an anndata dataframe's `_index`, then its
    /// `column-order`; otherwise the order zarrow's writer recorded, else by name.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The children that are not columns, each with the reason.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The anndata dataframe's index column (`_index`), when the group is one
    /// and the index is among its columns.
    pub(crate) fn dataframe_index(&self) -> Option<&str> {
        match self.conventions.anndata() {
            Some(Encoding::DataFrame {
                index: Some(index), ..
            }) => self
                .columns
                .iter()
                .find(|c| c.name() == index)
                .map(Column::name),
            _ => None,
        }
    }

    /// Whether the group is an anndata dataframe or one element of one (a table
    /// that pandas metadata describes).
    pub(crate) fn is_dataframe(&self) -> bool {
        matches!(
            self.conventions.anndata(),
            Some(Encoding::DataFrame { .. } | Encoding::Categorical { .. } | Encoding::Nullable(_))
        )
    }

    /// For a group that is one anndata element (a categorical, a nullable
    /// array): name its column `name` (default: the group's name, or `values`
    /// at a store's root). No effect on other groups.
    ///
    /// # Errors
    /// As [`ZarrGroup::open`] (the element is rebuilt under the new name).
    pub fn with_column_name(mut self, name: &str) -> Result<Self> {
        if let Some(column) = self.element(name) {
            self.columns = Arc::new(vec![column.map_err(|source| Error::Convention {
                path: self.label(),
                convention: crate::Convention::AnnData,
                source: Arc::new(source),
            })?]);
        }
        Ok(self)
    }

    /// The read options in force.
    pub(crate) fn options(&self) -> &ReadOptions {
        &self.options
    }

    /// A builder for a table reader over this group's columns.
    pub fn reader(&self) -> ReaderBuilder {
        ReaderBuilder::for_group(self.clone())
    }

    /// The group as a gridded dataset's long table, one row per grid point, like
    /// xarray's `Dataset.to_dataframe()` (`variables`: only these), with its
    /// rows and the children it leaves out (none when `variables` are given).
    ///
    /// # Errors
    /// [`Error::Table`](crate::Error::Table) when a variable has no dimension
    /// names, dimensions of one name differ in length, or a projected name is
    /// not a variable; read errors.
    pub fn long_table(&self, variables: Option<&[String]>) -> Result<TableReader> {
        LongTable::new(self, variables).map(TableReader::long)
    }

    fn array(
        &self,
        path: &str,
        meta: &crate::ArrayMetadata,
        conventions: &Arc<Conventions>,
    ) -> Result<ZarrArray> {
        ZarrArray::from_metadata(
            self.store.clone(),
            path.to_string(),
            meta.clone(),
            conventions.clone(),
            self.options,
        )
    }

    /// The member `name` of the child group at `path`, as an array.
    fn member(
        &self,
        path: &str,
        name: &'static str,
    ) -> std::result::Result<ZarrArray, ConventionError> {
        let key = join_key(path, name);
        let unreadable = |e| ConventionError::MemberUnreadable {
            name,
            source: Box::new(e),
        };
        match Node::read(self.store.as_ref(), &key).map(Node::into_parts) {
            Ok((NodeMetadata::Array(meta), conventions)) => {
                self.array(&key, &meta, &conventions).map_err(unreadable)
            }
            Ok((NodeMetadata::Group(_), _)) => Err(ConventionError::MemberIsGroup { name }),
            Err(Error::NodeNotFound { .. }) => Err(ConventionError::MemberMissing { name }),
            Err(e) => Err(unreadable(e)),
        }
    }

    /// The column that the group at `path`, following `conventions`, makes
    /// when it is an anndata element; `None` when it is not one.
    fn element_at(
        &self,
        path: &str,
        name: &str,
        conventions: &Conventions,
    ) -> Option<std::result::Result<Column, ConventionError>> {
        Some(match *conventions.anndata()? {
            Encoding::Categorical { ordered } => {
                self.member(path, anndata::CODES).and_then(|codes| {
                    let categories = self.member(path, anndata::CATEGORIES)?;
                    let keys = conventions.recorded().dictionary_keys.as_ref();
                    Column::categorical(name, codes, categories, ordered, keys)
                })
            }
            Encoding::Nullable(kind) => self.member(path, anndata::VALUES).and_then(|values| {
                let mask = self.member(path, anndata::MASK)?;
                Column::masked(name, values, mask, kind)
            }),
            _ => return None,
        })
    }

    /// This group as one element's column, when it is one.
    fn element(&self, name: &str) -> Option<std::result::Result<Column, ConventionError>> {
        self.element_at(&self.path, name, &self.conventions)
    }

    /// The columns and the skipped children, in the table's order.
    fn resolve_columns(&self) -> (Vec<Column>, Vec<Skipped>) {
        let own_name = self.path.rsplit('/').next().unwrap_or("");
        let own_name = if own_name.is_empty() {
            "values"
        } else {
            own_name
        };
        // A group that holds other elements lists them as skipped children.
        if let Some(Encoding::Other(kind)) = self.conventions.anndata()
            && !anndata::is_container(kind)
        {
            // A sparse matrix, say: its arrays are not columns of one table.
            return (
                Vec::new(),
                vec![Skipped::new(
                    "",
                    SkipReason::NotATable {
                        encoding: kind.clone(),
                    },
                )],
            );
        }
        match self.element(own_name) {
            Some(Ok(column)) => return (vec![column], Vec::new()),
            Some(Err(e)) => {
                return (
                    Vec::new(),
                    vec![Skipped::new(own_name, SkipReason::Element(Arc::new(e)))],
                );
            }
            None => {}
        }
        let mut columns = Vec::new();
        let mut skipped = Vec::new();
        for (name, node) in self.children.iter() {
            let key = join_key(&self.path, name);
            let column = match node.metadata() {
                NodeMetadata::Array(meta) if meta.shape.len() == 1 => {
                    match self
                        .array(&key, meta, node.conventions())
                        .and_then(Column::table_column)
                    {
                        Ok(column) => Ok(column),
                        Err(Error::Convention {
                            path,
                            convention,
                            source,
                        }) => Err(SkipReason::Convention {
                            path,
                            convention,
                            source,
                        }),
                        Err(e) => Err(SkipReason::Unreadable(Arc::new(e))),
                    }
                }
                NodeMetadata::Array(meta) => Err(SkipReason::NotOneDimensional {
                    shape: meta.shape.clone(),
                }),
                NodeMetadata::Group(_) => match self.element_at(&key, name, node.conventions()) {
                    Some(column) => column.map_err(|e| SkipReason::Element(Arc::new(e))),
                    None => Err(match node.conventions().anndata() {
                        Some(Encoding::Other(kind)) => SkipReason::AnnDataElement {
                            encoding: kind.clone(),
                        },
                        Some(Encoding::DataFrame { .. }) => SkipReason::DataFrame,
                        _ => SkipReason::Group,
                    }),
                },
            };
            match column {
                Ok(column) => columns.push(column),
                Err(reason) => skipped.push(Skipped::new(name.clone(), reason)),
            }
        }
        let order: Vec<String> = match self.conventions.anndata() {
            Some(Encoding::DataFrame {
                index,
                column_order,
            }) => index.iter().chain(column_order).cloned().collect(),
            _ => self
                .conventions
                .recorded()
                .columns
                .clone()
                .unwrap_or_default(),
        };
        let mut ordered = Vec::with_capacity(columns.len());
        for name in order {
            if let Some(pos) = columns.iter().position(|c: &Column| c.name() == name) {
                ordered.push(columns.remove(pos));
            }
        }
        ordered.extend(columns);
        (ordered, skipped)
    }
}
