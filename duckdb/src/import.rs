//! Arrow record batches into DuckDB chunks, through DuckDB's own Arrow
//! importer (the C data interface): DuckDB chooses the types (a string column
//! is VARCHAR, a string view too, a dictionary its values' type) and takes the
//! arrays over; their buffers are freed when DuckDB releases them.

use std::collections::VecDeque;
use std::mem::ManuallyDrop;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::Schema;
use duckdb_neo::arrow::{ArrowArray, ArrowImporter, ArrowSchema};
use duckdb_neo::connection::Context;
use duckdb_neo::data_chunk::{DataChunk, DataChunkRef};
use duckdb_neo::ffi;
use duckdb_neo::logical_type::LogicalType;
use duckdb_neo::vector::Unknown;
use duckdb_neo::{Error, Result};

use crate::zarrow_error;

/// `schema` in the C data interface, as DuckDB's bindings declare it.
fn ffi_schema(schema: &Schema) -> Result<ArrowSchema> {
    let exported = FFI_ArrowSchema::try_from(schema).map_err(zarrow_error)?;
    let exported = ManuallyDrop::new(exported);
    // SAFETY: both are the C data interface's `struct ArrowSchema` (repr(C),
    // the same fields in the same order); the value is moved, not copied: its
    // release callback is called once, by DuckDB's wrapper.
    let raw = unsafe {
        std::ptr::read((&*exported as *const FFI_ArrowSchema).cast::<ffi::ArrowSchema>())
    };
    // SAFETY: `raw` is a valid exported schema that nothing else releases.
    Ok(unsafe { ArrowSchema::from_raw(raw) })
}

/// `batch` in the C data interface (a struct array of its columns).
fn ffi_array(batch: RecordBatch) -> ArrowArray {
    let data = StructArray::from(batch).into_data();
    let exported = ManuallyDrop::new(FFI_ArrowArray::new(&data));
    // SAFETY: as in `ffi_schema`, for `struct ArrowArray`.
    let raw =
        unsafe { std::ptr::read((&*exported as *const FFI_ArrowArray).cast::<ffi::ArrowArray>()) };
    // SAFETY: `raw` is a valid exported array that nothing else releases.
    unsafe { ArrowArray::from_raw(raw) }
}

/// The DuckDB columns (name, type) that a table of `schema` gives.
pub(crate) fn duckdb_columns(
    context: &Context,
    schema: &Schema,
) -> Result<Vec<(String, LogicalType)>> {
    let importer = ArrowImporter::new(context, ffi_schema(schema)?, None)?;
    importer.schema()?.get_all()
}

/// Chunks imported and not yet handed on.
#[derive(Default)]
pub(crate) struct Imported {
    chunks: VecDeque<DataChunk<'static>>,
    /// The chunk the output last referenced: kept until the next call, while
    /// DuckDB reads the output.
    current: Option<DataChunk<'static>>,
}

impl Imported {
    /// Import `batch` into chunks of `rows` rows at most (the output's
    /// capacity, DuckDB's vector size).
    pub(crate) fn push(
        &mut self,
        context: &Context,
        batch: RecordBatch,
        rows: usize,
    ) -> Result<()> {
        let schema = ffi_schema(batch.schema().as_ref())?;
        let mut importer = ArrowImporter::new(context, schema, Some(rows.max(1)))?;
        importer.append_consumed(ffi_array(batch), true)?;
        while let Some(chunk) = importer.next_chunk()? {
            self.chunks.push_back(chunk);
        }
        Ok(())
    }

    /// Reference the next chunk's columns from `output`; false when none is
    /// left.
    pub(crate) fn emit(&mut self, output: &mut DataChunkRef<'_>) -> Result<bool> {
        let Some(chunk) = self.chunks.pop_front() else {
            self.current = None;
            return Ok(false);
        };
        if chunk.col_count() != output.col_count() {
            return Err(Error::invalid_input(format!(
                "zarrow: internal error: {} columns imported for {} output columns",
                chunk.col_count(),
                output.col_count()
            )));
        }
        for i in 0..output.col_count() {
            let source = chunk.get_vector_at::<Unknown>(i)?;
            let target = output.get_vector_at_mut::<Unknown>(i)?;
            // SAFETY: `chunk` is kept in `self.current` until the next call,
            // after DuckDB has read this output, and it is not changed.
            unsafe { target.reference(source) }?;
        }
        self.current = Some(chunk);
        Ok(true)
    }
}
