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
    let store = open_store(src, args.mmap)?;
    let options = match args.string_type {
        Some(t) => args.read_options().with_string_type(t),
        None => args.read_options(),
    };
    let (reader, total): (Box<dyn RecordBatchReader + Send>, u64) =
        match read_node(store.as_ref(), "")? {
            NodeMetadata::Array(_) => {
                if args.columns.is_some() {
                    return Err(Error::InvalidArgument(
                        "--columns applies to groups only".into(),
                    ));
                }
                let array =
                    ZarrArray::open_with(store, "", options)?.with_column_name(store_name(src));
                let total = array.len();
                (Box::new(Progress::new(array.batches(), Some(total))), total)
            }
            NodeMetadata::Group(_) => {
                let mut builder = ZarrGroup::open_with(store, "", options)?.reader();
                if let Some(columns) = &args.columns {
                    builder = builder.with_projection(columns.clone());
                }
                let reader = builder.build()?;
                let total = reader.total_rows();
                (Box::new(Progress::new(reader, Some(total))), total)
            }
        };
    let columns = reader.schema();
    limits::check(
        &src.display().to_string(),
        columns.fields().iter().map(|f| (total, f.data_type())),
        args.max_rows,
        args.max_bytes,
    )?;
    let (partial, file) = Partial::file(dst, args.overwrite)?;
    let rows = write_file(reader, file, partial.path(), format, args.compression)?;
    partial.commit()?;
    output::report_rows(rows, dst);
    Ok(())
}
