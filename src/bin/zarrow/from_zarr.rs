//! `zarrow convert STORE.zarr OUT.{parquet,arrow,arrows}`.

use arrow_array::RecordBatchReader;
use zarrow::export::{ExportFormat, write_file};
use zarrow::{Error, NodeMetadata, Result, ZarrArray, ZarrGroup, read_node};

use crate::limits;
use crate::output::{self, Partial};
use crate::progress::Progress;
use crate::{ConvertArgs, open_store, store_name};

pub(crate) fn convert(args: &ConvertArgs) -> Result<()> {
    let (src, dst) = (&args.src, &args.dst);
    let format = ExportFormat::from_path(dst).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "cannot tell the output format of {}: use .parquet, .arrow/.ipc/.feather (IPC file) or .arrows (IPC stream)",
            dst.display()
        ))
    })?;
    let store = open_store(src, args.mmap, &args.remote)?;
    let options = match args.string_type {
        Some(t) => args.read_options().with_string_type(t),
        None => args.read_options(),
    };
    let some_rows = args.rows.is_some() || args.limit.is_some();
    let mut builder = match read_node(store.as_ref(), "")? {
        NodeMetadata::Array(_) => {
            if args.columns.is_some() {
                return Err(Error::InvalidArgument(
                    "--columns applies to groups only".into(),
                ));
            }
            let array = ZarrArray::open_with(store, "", options)?.with_column_name(store_name(src));
            if !some_rows && array.metadata().shape.len() != 1 {
                // The whole N-d array, flattened: one batch per chunk row.
                let total = array.len();
                return export(
                    args,
                    format,
                    Progress::new(array.batches(), Some(total)),
                    total,
                );
            }
            if array.metadata().shape.len() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "--rows and --limit need a 1-D array; this one has shape {:?}",
                    array.metadata().shape
                )));
            }
            array.reader()
        }
        NodeMetadata::Group(_) if args.long => {
            if some_rows {
                return Err(Error::InvalidArgument(
                    "--rows and --limit do not apply to --long".into(),
                ));
            }
            let group = ZarrGroup::open_with(store, "", options)?;
            let table = group.long_table(args.columns.as_deref())?;
            for skipped in table.skipped() {
                eprintln!("zarrow: not converted: {skipped}");
            }
            let total = table.total_rows();
            return export(args, format, Progress::new(table, Some(total)), total);
        }
        NodeMetadata::Group(_) => {
            let builder = ZarrGroup::open_with(store, "", options)?
                .with_column_name(&store_name(src))?
                .reader();
            match &args.columns {
                Some(columns) => builder.with_projection(columns.clone()),
                None => builder,
            }
        }
    };
    // Nothing is dropped in silence: name every child that is not a column.
    for skipped in builder.skipped().iter().filter(|s| !s.convention) {
        eprintln!("zarrow: not converted: {skipped}");
    }
    if let Some(rows) = &args.rows {
        builder = builder.with_row_range(rows.clone());
    }
    if let Some(limit) = args.limit {
        builder = builder.with_limit(limit);
    }
    let reader = builder.build()?;
    let total = reader.total_rows();
    export(args, format, Progress::new(reader, Some(total)), total)
}

/// Check the limits, then write `reader`'s `total` rows to the output atomically.
fn export(
    args: &ConvertArgs,
    format: ExportFormat,
    reader: impl RecordBatchReader + Send + 'static,
    total: u64,
) -> Result<()> {
    let (src, dst) = (&args.src, &args.dst);
    let columns = reader.schema();
    limits::check(
        &src.display().to_string(),
        columns.fields().iter().map(|f| (total, f.data_type())),
        args.max_rows,
        args.max_bytes,
    )?;
    if format == ExportFormat::Parquet {
        // Nothing changes in silence: arrow-rs' Parquet writer re-encodes
        // dictionaries in order of appearance.
        for field in columns.fields() {
            if matches!(field.data_type(), arrow_schema::DataType::Dictionary(..)) {
                eprintln!(
                    "zarrow: {}: Parquet keeps the categories that occur, in order of appearance, not their stored order or unused ones (.arrow keeps them)",
                    field.name()
                );
            }
        }
    }
    let (partial, file) = Partial::file(dst, args.overwrite)?;
    let rows = write_file(reader, file, partial.path(), format, args.compression)?;
    partial.commit()?;
    output::report_rows(rows, dst);
    Ok(())
}
