//! A Zarr store to `OUT.{parquet,arrow,arrows}`.

use arrow_array::RecordBatchReader;

use super::{Job, Written, limits};
use crate::error::Result;
use crate::export::ExportFormat;
use crate::read::open_table;

pub(super) fn convert(args: &Job<'_>, format: ExportFormat) -> Result<Written> {
    args.write.refuse_appending()?;
    let store = args.open_src()?;
    let reader = open_table(
        store,
        &args.src.name(),
        args.read,
        &args.select,
        args.context,
    )?;
    // Nothing is dropped in silence: name every child that is not a column.
    for skipped in reader.skipped() {
        args.observer.note(&format!("not converted: {skipped}"));
    }
    let total = reader.total_rows();
    export(
        args,
        format,
        args.observer.reader(Box::new(reader), Some(total)),
        total,
    )
}

/// Check the limits, then write `reader`'s `total` rows to the output atomically.
fn export(
    args: &Job<'_>,
    format: ExportFormat,
    reader: impl RecordBatchReader + Send + 'static,
    total: u64,
) -> Result<Written> {
    let columns = reader.schema();
    limits::check(
        &args.src.to_string(),
        columns.fields().iter().map(|f| (total, f.data_type())),
        args.limits.max_rows,
        args.limits.max_bytes,
    )?;
    if format == ExportFormat::Parquet {
        // Nothing changes in silence: arrow-rs' Parquet writer re-encodes
        // dictionaries in order of appearance.
        for field in columns.fields() {
            if matches!(field.data_type(), arrow_schema::DataType::Dictionary(..)) {
                args.observer.note(&format!(
                    "{}: Parquet keeps the categories that occur, in order of appearance, not their stored order or unused ones (.arrow keeps them)",
                    field.name()
                ));
            }
        }
    }
    args.write_table(reader, format)
}
