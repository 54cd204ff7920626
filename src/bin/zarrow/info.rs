//! `zarrow info`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use zarrow::read::Column;
use zarrow::{
    Error, NodeMetadata, ReadOptions, Result, StringType, ZarrArray, ZarrGroup, read_node,
};

use crate::{RemoteArgs, open_store, store_name};

fn options(string_type: Option<StringType>) -> ReadOptions {
    match string_type {
        Some(t) => ReadOptions::default().with_string_type(t),
        None => ReadOptions::default(),
    }
}

pub(crate) fn info(
    path: &Path,
    string_type: Option<StringType>,
    remote: &RemoteArgs,
) -> Result<()> {
    let text = describe(path, string_type, remote)?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A closed pipe (`zarrow info ... | head`) is the reader's choice, not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::InvalidArgument(format!("writing to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// The `info` report for the node at `path`.
fn describe(path: &Path, string_type: Option<StringType>, remote: &RemoteArgs) -> Result<String> {
    let store = open_store(path, false, remote)?;
    let options = options(string_type);
    let mut out = String::new();
    match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            let array =
                ZarrArray::open_with(store, "", options)?.with_column_name(store_name(path));
            describe_array(&mut out, &array, "")?;
        }
        NodeMetadata::Group(meta) => {
            let group = ZarrGroup::open_with(store.clone(), "", options)?
                .with_column_name(&store_name(path))?;
            let children = group.children();
            let _ = writeln!(out, "node:          group (Zarr v{})", meta.zarr_format);
            if let Some(kind) = meta
                .attributes
                .get("encoding-type")
                .and_then(|v| v.as_str())
            {
                let _ = writeln!(out, "anndata:       {kind}");
            }
            let _ = writeln!(out, "attributes:    {}", meta.attributes.len());
            let _ = writeln!(out, "children:      {}", children.len());
            for (name, node) in children {
                let _ = writeln!(out, "\n{name}/");
                match node {
                    // One array zarrow cannot read must not hide the others.
                    NodeMetadata::Array(_) => {
                        match ZarrArray::open_with(store.clone(), name, options) {
                            Ok(array) => describe_array(&mut out, &array, "  ")?,
                            Err(e) => {
                                let _ = writeln!(out, "  cannot be read: {e}");
                            }
                        }
                    }
                    NodeMetadata::Group(g) => {
                        let _ = writeln!(out, "  node:          group (Zarr v{})", g.zarr_format);
                        if let Some(kind) =
                            g.attributes.get("encoding-type").and_then(|v| v.as_str())
                        {
                            let _ = writeln!(out, "  anndata:       {kind}");
                        }
                    }
                }
            }
            let columns = group.columns();
            let lens: std::collections::BTreeSet<u64> = columns.iter().map(Column::len).collect();
            let table = match (columns.len(), lens.len()) {
                (0, _) => "none (no 1-D arrays)".to_string(),
                (n, 1) => format!("{n} columns x {} rows", lens.first().copied().unwrap_or(0)),
                (n, _) => format!("{n} 1-D arrays of different lengths (convert with --columns)"),
            };
            let _ = writeln!(out, "\ntable:         {table}");
            for column in columns {
                let _ = writeln!(out, "  {}: {}", column.name(), column.field().data_type());
            }
            if !group.skipped().is_empty() {
                let _ = writeln!(out, "not columns:");
                for skipped in group.skipped() {
                    let _ = writeln!(out, "  {skipped}");
                }
            }
        }
    }
    Ok(out)
}

fn describe_array(out: &mut String, array: &ZarrArray, indent: &str) -> Result<()> {
    let m = array.metadata();
    let present = array.chunks_present()?;
    let _ = writeln!(
        out,
        "{indent}node:          array (Zarr v{})",
        m.zarr_format
    );
    let _ = writeln!(out, "{indent}shape:         {:?}", m.shape);
    let _ = writeln!(out, "{indent}chunk shape:   {:?}", m.chunk_shape);
    let _ = writeln!(out, "{indent}data type:     {}", m.data_type.zarr_name());
    let _ = writeln!(
        out,
        "{indent}fill value:    {}",
        m.fill_value.describe(&m.data_type)
    );
    let _ = writeln!(out, "{indent}chunk keys:    {}", m.chunk_key_encoding);
    let _ = writeln!(out, "{indent}codecs:        {}", array.codecs());
    let _ = writeln!(out, "{indent}arrow type:    {}", array.arrow_type());
    let _ = writeln!(
        out,
        "{indent}chunks:        {present} of {} present",
        array.grid().num_chunks()
    );
    Ok(())
}
