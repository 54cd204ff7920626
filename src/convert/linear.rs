//! Conversions to and from the stdlib linear exchange format: a Zarr array to
//! `.json`, a group (or an array) to `.csv` (one column per array), and back.

use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchIterator};
use arrow_schema::{Field, Schema};

use super::to_zarr::options;
use super::{Job, Written, limits};
use crate::ReadOptions;
use crate::error::{Conversion, Error, Result};
use crate::export::ExportFormat;
use crate::linear::{parse_json, read_csv, write_csv, write_json};
use crate::metadata::NodeMetadata;
use crate::options::Options as _;
use crate::read::{ZarrArray, ZarrGroup, read_node};
use crate::write::output::write_atomic;
use crate::write::{write_group_metadata, write_nd_array};

/// The linear-format file kinds, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Json,
    Csv,
}

/// The arrays of a group in the order zarrow recorded, else by name; or the array.
fn arrays(args: &Job<'_>) -> Result<Vec<(String, ZarrArray)>> {
    // Whole arrays, whatever the string layout: the linear format holds values.
    let options = ReadOptions {
        string_type: None,
        ..args.read
    };
    let store = args.open_src()?;
    match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            let name = args.src.name();
            Ok(vec![(name, ZarrArray::open_with(store, "", options)?)])
        }
        NodeMetadata::Group(_) => {
            let group = ZarrGroup::open_with(store.clone(), "", options)?;
            // Nothing is dropped in silence: a child group is named.
            for (name, node) in group.child_nodes() {
                if matches!(node.metadata(), NodeMetadata::Group(_)) {
                    args.observer
                        .note(&format!("not converted: {name} (a group inside the group)"));
                }
            }
            let mut names: Vec<String> = group
                .child_nodes()
                .iter()
                .filter(|(_, node)| matches!(node.metadata(), NodeMetadata::Array(_)))
                .map(|(name, _)| name.clone())
                .collect();
            if let Some(order) = &group.conventions().recorded().columns {
                names.sort_by_key(|n| order.iter().position(|o| o == n).unwrap_or(usize::MAX));
            }
            names
                .into_iter()
                .map(|n| Ok((n.clone(), ZarrArray::open_with(store.clone(), &n, options)?)))
                .collect()
        }
    }
}

/// Zarr (array or group) to `.json` (one array) or `.csv`.
pub(super) fn export(args: &Job<'_>, kind: Kind) -> Result<Written> {
    args.write.refuse_appending()?;
    // The linear format holds whole arrays: a selection would be dropped.
    let given: Vec<&'static str> = args.select.values().into_iter().map(|(k, _)| k).collect();
    if !given.is_empty() {
        return Err(Error::OptionNotApplicable {
            options: given,
            applies_to: "a table or Zarr output, not a .json / .csv one (the linear format holds whole arrays)",
        });
    }
    let arrays = arrays(args)?;
    let types: Vec<_> = arrays.iter().map(|(_, a)| a.arrow_type()).collect();
    limits::check(
        &args.src.to_string(),
        arrays.iter().zip(&types).map(|((_, a), t)| (a.len(), t)),
        args.limits.max_rows,
        args.limits.max_bytes,
    )?;
    let read: Vec<(String, ArrayRef, Vec<u64>)> = arrays
        .iter()
        .map(|(name, a)| Ok((name.clone(), a.read_all()?, a.metadata().shape.clone())))
        .collect::<Result<_>>()?;
    match kind {
        Kind::Json => {
            let [(_, values, shape)] = read.as_slice() else {
                return Err(Error::UnsupportedConversion {
                    path: args.src.to_string(),
                    reason: Conversion::GroupToJson { arrays: read.len() },
                });
            };
            write_atomic(args.dst_path(), args.overwrites(), |w| {
                write_json(w, values.as_ref(), shape)
            })?;
        }
        Kind::Csv => {
            let columns: Vec<(String, &dyn Array, Vec<u64>)> = read
                .iter()
                .map(|(n, a, s)| (n.clone(), a.as_ref(), s.clone()))
                .collect();
            write_atomic(args.dst_path(), args.overwrites(), |w| {
                write_csv(w, &columns)
            })?;
        }
    }
    Ok(Written::Arrays(read.len()))
}

/// `.json` to Zarr (an N-d array) or a table file (one flattened column); `.csv` to
/// a Zarr group (one array per column).
pub(super) fn import(args: &Job<'_>, kind: Kind, table: Option<ExportFormat>) -> Result<Written> {
    if args.write.appends() {
        return Err(Error::UnsupportedConversion {
            path: args.src.to_string(),
            reason: Conversion::AppendLinear,
        });
    }
    let open = || {
        File::open(args.src_path())
            .map(BufReader::new)
            .map_err(|e| Error::io(args.src_path(), e))
    };
    let write_options = options(args)?;
    match (kind, table) {
        (Kind::Json, None) => {
            // Everything is parsed and checked before anything is written.
            let linear = parse_json(open()?)?;
            let shape = linear.shape.clone();
            let values = linear.into_arrow()?;
            args.write_dst(|store, _| write_nd_array(store, "", &values, &shape, write_options))
                .map(Written::Rows)
        }
        (Kind::Json, Some(format)) => {
            let values = parse_json(open()?)?.into_arrow()?;
            let name = args
                .src_path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "values".into());
            let schema = Arc::new(Schema::new(vec![Field::new(
                name,
                values.data_type().clone(),
                false,
            )]));
            let batch = RecordBatch::try_new(schema.clone(), vec![values])?;
            args.write_table(RecordBatchIterator::new(vec![Ok(batch)], schema), format)
        }
        (Kind::Csv, None) => {
            let columns = read_csv(open()?)?;
            let arrays = columns
                .into_iter()
                .map(|(name, linear)| {
                    let shape = linear.shape.clone();
                    Ok((name, linear.into_arrow()?, shape))
                })
                .collect::<Result<Vec<_>>>()?;
            let format = write_options.zarr_format;
            args.write_dst(|store, _| {
                let mut rows = 0;
                for (name, values, shape) in &arrays {
                    rows = rows.max(write_nd_array(
                        store.clone(),
                        name,
                        values,
                        shape,
                        write_options.clone(),
                    )?);
                }
                let names: Vec<String> = arrays.iter().map(|(n, _, _)| n.clone()).collect();
                write_group_metadata(store.as_ref(), "", &names, format)?;
                Ok(rows)
            })
            .map(Written::Rows)
        }
        (Kind::Csv, Some(_)) => Err(Error::UnsupportedConversion {
            path: args.src.to_string(),
            reason: Conversion::CsvToTable,
        }),
    }
}
