//! Arrow record batches into DuckDB chunks, through DuckDB's own Arrow
//! importer (the C data interface): DuckDB chooses the types (a string column
//! is VARCHAR, a string view too, a dictionary its values' type) and takes the
//! arrays over; their buffers are freed when DuckDB releases them.

use std::collections::VecDeque;
use std::mem::ManuallyDrop;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::Schema;
use duckdb_neo::arrow::{ArrowArray, ArrowImporter, ArrowSchema};
use duckdb_neo::connection::Context;
use duckdb_neo::data_chunk::{DataChunk, DataChunkRef};
use duckdb_neo::ffi;
use duckdb_neo::logical_type::LogicalType;
use duckdb_neo::vector::Unknown;
use duckdb_neo::{Error, Result};

use crate::category::Categories;
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
    pieces: VecDeque<Piece>,
    /// The chunk the output last referenced: kept until the next call, while
    /// DuckDB reads the output.
    current: Option<DataChunk<'static>>,
}

/// One output chunk's rows: the imported columns (none when every column is
/// an `ENUM`) and each `ENUM` column's keys (by output column).
struct Piece {
    chunk: Option<DataChunk<'static>>,
    keys: Vec<(usize, ArrayRef)>,
}

impl Imported {
    /// Import `batch` into chunks of `rows` rows at most (the output's
    /// capacity, DuckDB's vector size). `enums[i]`: the categories of column
    /// `i` where DuckDB was told it is an `ENUM` (written as codes, not
    /// imported).
    pub(crate) fn push(
        &mut self,
        context: &Context,
        batch: RecordBatch,
        rows: usize,
        enums: &[Option<Categories>],
    ) -> Result<()> {
        let rows = rows.max(1);
        let mut keys = Vec::new();
        let mut imported = Vec::new();
        for (i, column) in batch.columns().iter().enumerate() {
            match enums.get(i).and_then(Option::as_ref) {
                Some(categories) => keys.push((i, categories.keys(column)?)),
                None => imported.push(i),
            }
        }
        let total = batch.num_rows();
        let mut chunks = VecDeque::new();
        // (A batch of no columns goes through the importer as before: it
        // counts the rows.)
        if !imported.is_empty() || keys.is_empty() {
            let batch = if keys.is_empty() {
                batch
            } else {
                batch.project(&imported).map_err(zarrow_error)?
            };
            let schema = ffi_schema(batch.schema().as_ref())?;
            let mut importer = ArrowImporter::new(context, schema, Some(rows))?;
            importer.append_consumed(ffi_array(batch), true)?;
            while let Some(chunk) = importer.next_chunk()? {
                chunks.push_back(chunk);
            }
        }
        let mut offset = 0;
        while offset < total {
            let chunk = chunks.pop_front();
            let len = match &chunk {
                Some(chunk) => chunk.row_count()?,
                None if imported.is_empty() && !keys.is_empty() => rows.min(total - offset),
                None => {
                    return Err(Error::invalid_input(
                        "zarrow: internal error: DuckDB's Arrow import gave fewer rows than a batch",
                    ));
                }
            };
            if len == 0 || offset + len > total {
                return Err(Error::invalid_input(
                    "zarrow: internal error: DuckDB's Arrow import gave a chunk beyond its batch",
                ));
            }
            self.pieces.push_back(Piece {
                chunk,
                keys: keys
                    .iter()
                    .map(|(i, k)| (*i, k.slice(offset, len)))
                    .collect(),
            });
            offset += len;
        }
        Ok(())
    }

    /// Fill `output` with the next chunk's columns (referenced, or an `ENUM`'s
    /// codes written); false when none is left.
    pub(crate) fn emit(
        &mut self,
        output: &mut DataChunkRef<'_>,
        enums: &[Option<Categories>],
    ) -> Result<bool> {
        let Some(piece) = self.pieces.pop_front() else {
            self.current = None;
            return Ok(false);
        };
        let imported = piece.chunk.as_ref().map_or(0, |c| c.col_count());
        if imported + piece.keys.len() != output.col_count() {
            return Err(Error::invalid_input(format!(
                "zarrow: internal error: {} columns read for {} output columns",
                imported + piece.keys.len(),
                output.col_count()
            )));
        }
        let mut keys = piece.keys.iter().peekable();
        let mut next_imported = 0;
        for i in 0..output.col_count() {
            let mut target = output.get_vector_at_mut::<Unknown>(i)?;
            match keys.next_if(|(k, _)| *k == i) {
                Some((_, codes)) => {
                    let categories = enums.get(i).and_then(Option::as_ref).ok_or_else(|| {
                        Error::invalid_input("zarrow: internal error: an ENUM column lost")
                    })?;
                    categories.write(codes, &mut target)?;
                }
                None => {
                    let chunk = piece.chunk.as_ref().ok_or_else(|| {
                        Error::invalid_input("zarrow: internal error: an imported column lost")
                    })?;
                    let source = chunk.get_vector_at::<Unknown>(next_imported)?;
                    next_imported += 1;
                    // SAFETY: the chunk is kept in `self.current` until the
                    // next call, after DuckDB has read this output, and it is
                    // not changed.
                    unsafe { target.reference(source) }?;
                }
            }
        }
        self.current = piece.chunk;
        Ok(true)
    }
}
