//! `zarrow info`.

use std::fmt::Write as _;
use std::io::Write as _;

use std::sync::Arc;
use zarrow::location::UrlOptions;

use zarrow::metadata::NodeMetadata;
use zarrow::read::{ArrayInfo, ChildNode, NodeInfo, ZarrGroup, describe_node, read_node};
use zarrow::store::Store;
use zarrow::{Error, Location, ReadOptions, Result, Stores, ZarrArray};

use crate::flags::Flags;

pub(crate) fn info(
    path: &Location,
    read: &Flags<ReadOptions>,
    url: &Flags<UrlOptions>,
) -> Result<()> {
    let text = describe(path, *read.options(), url.options().clone())?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // A closed pipe (`zarrow info ... | head`) is the reader's choice, not an error.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Output {
            what: "stdout".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// `zarrow stats --show`: each 1-D array's statistics coverage, the arrays
/// of nested groups too.
pub(crate) fn show_stats(path: &Location, url: &Flags<UrlOptions>) -> Result<()> {
    let store = Stores::new(url.options().clone()).open_consolidated(path)?;
    let mut out = String::new();
    show_node(&mut out, &store, "", false)?;
    print!("{out}");
    Ok(())
}

/// `zarrow stats --verify`: as `--show`, each statistic checked against the
/// store even where it cannot list (a HEAD per chunk's object over plain
/// HTTP). `Ok(false)`: a statistic is stale or a file is not used.
pub(crate) fn verify_stats(path: &Location, url: &Flags<UrlOptions>) -> Result<bool> {
    let store = Stores::new(url.options().clone()).open_consolidated(path)?;
    let mut out = String::new();
    let clean = show_node(&mut out, &store, "", true)?;
    print!("{out}");
    Ok(clean)
}

/// The line of the array at `path` in `store` and of every array below the
/// group there, into `out`; `verify` checks them against the store. One
/// store for the whole walk, opened through its consolidated metadata when
/// it has some: the metadata the statistics are compared with is the
/// metadata reads decode the chunks with. Whether every statistic found is
/// fresh and used.
fn show_node(out: &mut String, store: &Arc<dyn Store>, path: &str, verify: bool) -> Result<bool> {
    let describe = |path: &str| -> Result<ArrayInfo> {
        let array = ZarrArray::open_with(store.clone(), path, ReadOptions::default())?;
        if verify {
            zarrow::read::describe_array_verified(&array)
        } else {
            zarrow::read::describe_array(&array)
        }
    };
    let mut clean = true;
    match read_node(store.as_ref(), path)? {
        NodeMetadata::Array(_) => {
            let array = describe(path)?;
            clean &= stats_clean(&array);
            stats_line(out, path, &array);
        }
        NodeMetadata::Group(_) => {
            let group = ZarrGroup::open_with(store.clone(), path, ReadOptions::default())?;
            for (name, metadata) in group.children() {
                let child_path = zarrow::store::join_key(path, name);
                match metadata {
                    NodeMetadata::Array(_) => match describe(&child_path) {
                        Ok(array) => {
                            clean &= stats_clean(&array);
                            stats_line(out, &child_path, &array);
                        }
                        Err(error) => {
                            let _ = writeln!(out, "{child_path}: cannot be read: {error}");
                        }
                    },
                    NodeMetadata::Group(_) => {
                        clean &= show_node(out, store, &child_path, verify)?;
                    }
                }
            }
        }
    }
    Ok(clean)
}

/// Whether an array's statistics, if it has any, are all fresh and used.
fn stats_clean(array: &ArrayInfo) -> bool {
    array.stats_stale.is_empty()
        && !array
            .stats_note
            .as_deref()
            .is_some_and(|n| n.starts_with("not used") || n.starts_with("unreadable"))
}

fn stats_line(out: &mut String, path: &str, array: &ArrayInfo) {
    let shown = if path.is_empty() { "(the array)" } else { path };
    let summary = match stats_summary(array) {
        Some(summary) => summary,
        None if array.shape.len() != 1 => "no statistics (an N-d array)".to_string(),
        None => "no statistics (zarrow stats records them)".to_string(),
    };
    let _ = writeln!(out, "{shown}: {summary}");
}

/// An array's statistics in a line: the chunks they describe, the stale
/// ones (read), and why they are not used or not checked; `None` without any.
fn stats_summary(array: &ArrayInfo) -> Option<String> {
    let note = array.stats_note.as_deref();
    let Some(fresh) = array.stats_fresh else {
        return note.map(str::to_string);
    };
    let stale = match array.stats_stale.len() {
        0 => String::new(),
        n if n <= 8 => format!("; stale (read): chunks {:?}", array.stats_stale),
        n => format!("; stale (read): {n} chunks"),
    };
    let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
    let chunks = array.stats_chunks.unwrap_or(array.chunks);
    Some(format!("{fresh} of {chunks} chunks{stale}{note}"))
}

/// The `info` report for the node at `path`.
fn describe(path: &Location, read: ReadOptions, url: UrlOptions) -> Result<String> {
    let store = Stores::new(url).open_consolidated(path)?;
    let mut out = String::new();
    match describe_node(store, &path.name(), read)? {
        NodeInfo::Array(array) => describe_array(&mut out, &array, ""),
        NodeInfo::Group(group) => {
            let _ = writeln!(out, "node:          group (Zarr v{})", group.zarr_format);
            if let Some(kind) = &group.anndata {
                let _ = writeln!(out, "anndata:       {kind}");
            }
            let _ = writeln!(out, "attributes:    {}", group.attributes.len());
            let _ = writeln!(out, "children:      {}", group.children.len());
            for child in &group.children {
                let _ = writeln!(out, "\n{}/", child.name);
                match &child.node {
                    ChildNode::Array(array) => describe_array(&mut out, array, "  "),
                    ChildNode::Unreadable { error } => {
                        let _ = writeln!(out, "  cannot be read: {error}");
                    }
                    ChildNode::Group {
                        zarr_format,
                        anndata,
                    } => {
                        let _ = writeln!(out, "  node:          group (Zarr v{zarr_format})");
                        if let Some(kind) = anndata {
                            let _ = writeln!(out, "  anndata:       {kind}");
                        }
                    }
                    _ => {}
                }
            }
            let columns = &group.columns;
            let lens: std::collections::BTreeSet<u64> = columns.iter().map(|c| c.rows).collect();
            let table = match (columns.len(), lens.len()) {
                (0, _) => "none (no 1-D arrays)".to_string(),
                (n, 1) => format!("{n} columns x {} rows", lens.first().copied().unwrap_or(0)),
                (n, _) => format!("{n} 1-D arrays of different lengths (convert with --columns)"),
            };
            let _ = writeln!(out, "\ntable:         {table}");
            for column in columns {
                let _ = writeln!(out, "  {}: {}", column.name, column.arrow_type);
            }
            if !group.not_columns.is_empty() {
                let _ = writeln!(out, "not columns:");
                for skipped in &group.not_columns {
                    let _ = writeln!(out, "  {skipped}");
                }
            }
        }
        _ => {}
    }
    Ok(out)
}

fn describe_array(out: &mut String, m: &ArrayInfo, indent: &str) {
    let _ = writeln!(
        out,
        "{indent}node:          array (Zarr v{})",
        m.zarr_format
    );
    let _ = writeln!(out, "{indent}shape:         {:?}", m.shape);
    let _ = writeln!(out, "{indent}chunk shape:   {:?}", m.chunk_shape);
    let _ = writeln!(out, "{indent}data type:     {}", m.data_type);
    let _ = writeln!(out, "{indent}fill value:    {}", m.fill_value);
    let _ = writeln!(out, "{indent}chunk keys:    {}", m.chunk_key_encoding);
    let _ = writeln!(out, "{indent}codecs:        {}", m.codecs);
    let _ = writeln!(out, "{indent}arrow type:    {}", m.arrow_type);
    let _ = match (m.chunks_present, &m.chunks_unlisted) {
        (Some(present), _) => writeln!(
            out,
            "{indent}chunks:        {present} of {} present",
            m.chunks
        ),
        (None, reason) => {
            // One line, however many the server's error page has.
            let reason = reason.as_deref().unwrap_or("the store could not be listed");
            let mut reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
            if let Some((cut, _)) = reason.char_indices().nth(160) {
                reason.truncate(cut);
                reason.push_str(" ...");
            }
            writeln!(
                out,
                "{indent}chunks:        {} (how many are stored is unknown: {reason})",
                m.chunks
            )
        }
    };
    if let Some(summary) = stats_summary(m) {
        let _ = writeln!(out, "{indent}statistics:    {summary}");
    }
}
