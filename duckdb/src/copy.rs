//! `COPY ... TO 'out.zarr' (FORMAT zarr, <write options>)`: DuckDB's rows written
//! as a Zarr group, as `zarrow convert` and `zarrow.write` write one: atomically
//! (a directory appears whole or not at all; an object store's metadata after
//! its chunks; an Icechunk write is one commit), with chunk statistics.
//!
//! ```text
//! bind      the columns' Arrow schema (DuckDB's own Arrow export) and the
//!           options (the write declaration's keys: `WriteOptions`, `UrlOptions`)
//! init      a writer thread: zarrow's group writer over the batches a channel
//!           brings, committing when the channel ends
//! flush     each batch DuckDB hands over, in its order, exported to Arrow and
//!           sent (the channel is bounded: DuckDB waits for the writer)
//! finalize  the channel closed, the writer's commit waited for: its error is
//!           the statement's
//! ```
//!
//! A statement that fails before `finalize` (an error upstream, an interrupt)
//! drops the state: the writer is sent an error, and nothing is committed.

use std::mem::ManuallyDrop;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema, from_ffi};
use arrow_array::{RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use duckdb_neo::arrow::{ArrowArray, ArrowExporter};
use duckdb_neo::column_data_collection::ColumnDataCollection;
use duckdb_neo::connection::Context;
use duckdb_neo::copy_function::{CopyFunctionBuilder, CopyToBindInfo, CopyToFunctionCallbacks};
use duckdb_neo::extension::Extension;
use duckdb_neo::logical_type::LogicalType;
use duckdb_neo::{Error, Result};
use zarrow::location::UrlOptions;
use zarrow::write::{WriteMode, WriteOptions, write_batches};
use zarrow::{Location, Stores};

use crate::options::{given, set_either};
use crate::{guard, zarrow_error};

/// Batches in flight between DuckDB and the writer.
const IN_FLIGHT: usize = 4;

/// What bind found.
pub(crate) struct Bound {
    columns: Vec<(String, LogicalType)>,
    schema: SchemaRef,
    url: UrlOptions,
    options: WriteOptions,
}

/// One output's writer.
pub(crate) struct Output {
    sender: Mutex<Option<SyncSender<std::result::Result<RecordBatch, ArrowError>>>>,
    writer: Mutex<Option<JoinHandle<zarrow::Result<u64>>>>,
}

impl Drop for Output {
    fn drop(&mut self) {
        // Not finalized: the statement failed. The writer reads an error and
        // commits nothing.
        if let Ok(mut sender) = self.sender.lock()
            && let Some(sender) = sender.take()
        {
            let _ = sender.send(Err(ArrowError::ExternalError(
                "the COPY statement failed before its end: nothing is written".into(),
            )));
        }
        if let Ok(mut writer) = self.writer.lock()
            && let Some(writer) = writer.take()
        {
            let _ = writer.join();
        }
    }
}

struct CopyToZarr;

impl CopyToFunctionCallbacks for CopyToZarr {
    type InitData = Output;
    type BindData = Bound;
    type BatchData = ();

    fn bind(&self, context: &Context, info: &CopyToBindInfo) -> Result<Bound> {
        guard(|| {
            let mut columns = Vec::with_capacity(info.column_count()?);
            for i in 0..info.column_count()? {
                let (name, logical_type) = info.get_column(i)?;
                columns.push((name.to_string(), logical_type));
            }
            let refs: Vec<(&str, LogicalType)> = columns
                .iter()
                .map(|(n, t)| (n.as_str(), t.clone()))
                .collect();
            let exporter = ArrowExporter::new(context, &refs, None)?;
            let schema = arrow_schema(exporter.schema()?.into_raw())?;
            let (mut url, mut options) = (UrlOptions::default(), WriteOptions::default());
            for (key, value) in info.options()? {
                let key = key.to_ascii_lowercase();
                if key == "format" || value.is_null()? {
                    continue;
                }
                let set = set_either(&mut url, &mut options, &key, given(context, &value)?);
                match set {
                    Some(result) => result.map_err(zarrow_error)?,
                    None => {
                        return Err(Error::invalid_input(format!(
                            "zarrow: COPY ... (FORMAT zarr) has no option {key:?}"
                        )));
                    }
                }
            }
            // As DuckDB's COPY replaces its output file, an existing Zarr store
            // there is replaced (atomically; a directory that is not a Zarr
            // store never is), unless `mode` or `append` says otherwise.
            if options.mode.is_none() && !options.append {
                options.mode = Some(WriteMode::Overwrite);
            }
            Ok(Bound {
                columns,
                schema: Arc::new(schema),
                url,
                options,
            })
        })
    }

    fn init(&self, _context: &Context, bound: &Bound, file_path: &str) -> Result<Output> {
        guard(|| {
            let location = Location::parse(file_path).map_err(zarrow_error)?;
            let (sender, receiver) = sync_channel(IN_FLIGHT);
            let reader = Channel {
                schema: bound.schema.clone(),
                receiver,
            };
            let stores = Stores::new(bound.url.clone());
            let options = bound.options.clone();
            // A thread of its own: `write_zarr` commits when the write it runs
            // returns, and that write pulls its batches from a reader, while
            // DuckDB pushes them one flush at a time from its own threads, none
            // of which may wait for the whole statement.
            let writer = std::thread::Builder::new()
                .name("zarrow-copy".into())
                .spawn(move || {
                    let how = options.clone();
                    stores.write_zarr(&location, false, &how, |store, node| {
                        write_batches(reader, store, node, options)
                    })
                })
                .map_err(zarrow_error)?;
            Ok(Output {
                sender: Mutex::new(Some(sender)),
                writer: Mutex::new(Some(writer)),
            })
        })
    }

    fn batch(
        &self,
        _context: &Context,
        _bound: &Bound,
        _output: &Output,
        _input: &ColumnDataCollection<'_>,
    ) -> Result<()> {
        Ok(())
    }

    fn flush(
        &self,
        context: &Context,
        bound: &Bound,
        output: &Output,
        input: &ColumnDataCollection<'_>,
        _batch: &mut (),
    ) -> Result<()> {
        guard(|| {
            let refs: Vec<(&str, LogicalType)> = bound
                .columns
                .iter()
                .map(|(n, t)| (n.as_str(), t.clone()))
                .collect();
            let mut exporter = ArrowExporter::new(context, &refs, None)?;
            let mut scan = input.to_scan(context)?;
            while let Some(chunk) = scan.next_chunk()? {
                exporter.append(&chunk, false)?;
            }
            exporter.flush()?;
            while let Some(array) = exporter.next_array()? {
                let batch = record_batch(array, &bound.schema)?;
                let sender = output.sender.lock().map_err(|_| stopped())?;
                let Some(sender) = sender.as_ref() else {
                    return Err(stopped());
                };
                // The writer stopped (it failed): finalize reports why.
                if sender.send(Ok(batch)).is_err() {
                    return Ok(());
                }
            }
            Ok(())
        })
    }

    fn finalize(&self, _context: &Context, _bound: &Bound, output: &Output) -> Result<()> {
        guard(|| {
            // The end of the batches: the writer commits.
            drop(output.sender.lock().map_err(|_| stopped())?.take());
            let writer = output.writer.lock().map_err(|_| stopped())?.take();
            match writer.map(JoinHandle::join) {
                Some(Ok(Ok(_rows))) => Ok(()),
                Some(Ok(Err(e))) => Err(zarrow_error(e)),
                Some(Err(_)) => Err(Error::invalid_input(
                    "zarrow: internal error (please report it): the Zarr writer panicked",
                )),
                None => Err(stopped()),
            }
        })
    }
}

fn stopped() -> Error {
    Error::invalid_input("zarrow: the Zarr writer has already stopped")
}

/// DuckDB's exported schema as arrow-rs's.
fn arrow_schema(raw: duckdb_neo::ffi::ArrowSchema) -> Result<Schema> {
    let raw = ManuallyDrop::new(raw);
    // SAFETY: the same C struct (see import.rs); moved, released once by
    // arrow-rs's wrapper.
    let ffi = unsafe {
        std::ptr::read((&*raw as *const duckdb_neo::ffi::ArrowSchema).cast::<FFI_ArrowSchema>())
    };
    Schema::try_from(&ffi).map_err(zarrow_error)
}

/// One exported struct array as a batch of `schema`.
fn record_batch(array: ArrowArray, schema: &SchemaRef) -> Result<RecordBatch> {
    let raw = ManuallyDrop::new(array.into_raw());
    // SAFETY: as in `arrow_schema`, for `struct ArrowArray`.
    let ffi = unsafe {
        std::ptr::read((&*raw as *const duckdb_neo::ffi::ArrowArray).cast::<FFI_ArrowArray>())
    };
    let struct_type = arrow_schema::DataType::Struct(schema.fields().clone());
    // SAFETY: DuckDB exported the array with this schema's layout.
    let data = unsafe { from_ffi_data(ffi, &struct_type) }?;
    let array = StructArray::from(data);
    RecordBatch::from(array)
        .with_schema(schema.clone())
        .map_err(zarrow_error)
}

/// `from_ffi` with a type in place of an exported schema.
///
/// # Safety
/// `array` must be a valid exported array of `data_type`.
unsafe fn from_ffi_data(
    array: FFI_ArrowArray,
    data_type: &arrow_schema::DataType,
) -> Result<arrow_data::ArrayData> {
    let schema = FFI_ArrowSchema::try_from(data_type).map_err(zarrow_error)?;
    // SAFETY: the caller's.
    unsafe { from_ffi(array, &schema) }.map_err(zarrow_error)
}

/// The batches DuckDB flushes, as a reader.
struct Channel {
    schema: SchemaRef,
    receiver: Receiver<std::result::Result<RecordBatch, ArrowError>>,
}

impl Iterator for Channel {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.receiver.recv().ok()
    }
}

impl RecordBatchReader for Channel {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Register `COPY ... (FORMAT zarr)`.
pub(crate) fn register(extension: &Extension) -> Result<()> {
    CopyFunctionBuilder::new("zarr", CopyToZarr)
        .with_fallback_extension("zarr")
        .register(extension)
}
