//! pyarrow's compute expressions (the filters DuckDB hands `zarrow.dataset`,
//! and the Polars scan's predicate as Polars' own converter writes it) as
//! DataFusion's, read from the form pyarrow pickles them in
//! (`Expression.__reduce__`): an Arrow IPC file whose one row holds each
//! literal and each call's options, and whose schema's metadata holds the
//! tree, in prefix order:
//!
//! ```text
//! call NAME   <its arguments>   [options INDEX]   end NAME
//! field_ref NAME
//! literal INDEX        (the column holding it)
//! ```
//!
//! Only what DataFusion evaluates exactly as pyarrow does is taken: the
//! comparisons, Kleene `and` / `or`, `invert`, `is_null`, `is_valid`,
//! `is_nan` and `is_in`, over columns named by one name and literals.
//! Anything else (a cast, a nested field, another function, a form this
//! reader does not know) is refused with the reason, and the engine filters
//! itself.
//!
//! Where `is_in` treats a null otherwise than SQL's `IN` (pyarrow's default
//! answers `false` for a null, SQL's `NULL`), the difference matters only
//! below a negation: at the top of a filter, or below `and` and `or` only, a
//! row is kept only where the filter is true, and `false` and `NULL` both
//! drop it. There it is SQL's `IN`, which the scan prunes by; elsewhere the
//! exact form.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_ipc::reader::{FileReader, read_footer_length};
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, lit};

/// Why an expression is not taken.
pub(crate) type Refusal = String;

/// The largest pickled expression read (a long `is_in` set fits many times).
const MAX_BYTES: usize = 64 << 20;

/// The expression pickled in `bytes`, as DataFusion's.
pub(crate) fn from_pyarrow(bytes: &[u8]) -> Result<Expr, Refusal> {
    if bytes.len() > MAX_BYTES {
        return Err(format!(
            "a pickled expression of {} bytes (at most {MAX_BYTES})",
            bytes.len()
        ));
    }
    let tree = metadata(bytes)?;
    // arrow-ipc's reader slices buffers as a file declares them, and panics
    // where they lie outside it: such bytes are refused, not a panic.
    let values = std::panic::catch_unwind(|| values(bytes))
        .unwrap_or_else(|_| Err("not pyarrow's pickled expression: bad buffers".to_string()))?;
    let mut walk = Walk {
        tree: &tree,
        at: 0,
        values: values.as_ref(),
    };
    let expr = walk.expr(Polarity::Positive)?;
    if walk.at != tree.len() {
        return Err(format!(
            "pyarrow's expression has {} entries after its end",
            tree.len() - walk.at
        ));
    }
    Ok(expr)
}

/// The schema's metadata, in order (an IPC file's footer holds the schema;
/// arrow-rs' own reader keeps its metadata as a map, which loses the order
/// and the repeated keys).
fn metadata(bytes: &[u8]) -> Result<Vec<(String, String)>, Refusal> {
    let bad = |why: &str| format!("not pyarrow's pickled expression: {why}");
    let n = bytes.len();
    if n < 10 {
        return Err(bad("too short"));
    }
    let mut tail = [0u8; 10];
    tail.copy_from_slice(&bytes[n - 10..]);
    let footer_len = read_footer_length(tail).map_err(|e| bad(&e.to_string()))?;
    let start = (n - 10)
        .checked_sub(footer_len)
        .ok_or_else(|| bad("a footer longer than the file"))?;
    let footer = arrow_ipc::root_as_footer(&bytes[start..n - 10])
        .map_err(|e| bad(&format!("its footer: {e}")))?;
    // A compressed batch declares the length it decompresses to, which the
    // reader would allocate: pyarrow pickles none.
    for block in footer.recordBatches().iter().flatten() {
        let offset = usize::try_from(block.offset()).map_err(|_| bad("a bad block"))?;
        let len = usize::try_from(block.metaDataLength()).map_err(|_| bad("a bad block"))?;
        let meta = offset
            .checked_add(len)
            .and_then(|end| bytes.get(offset..end))
            .ok_or_else(|| bad("a block past the end"))?;
        let skip = if meta.starts_with(&[0xff; 4]) { 8 } else { 4 };
        let batch = meta
            .get(skip..)
            .and_then(|m| arrow_ipc::root_as_message(m).ok())
            .and_then(|m| m.header_as_record_batch())
            .ok_or_else(|| bad("a block that is no record batch"))?;
        if batch.compression().is_some() {
            return Err(bad("compressed buffers"));
        }
    }
    let entries = footer
        .schema()
        .and_then(|s| s.custom_metadata())
        .ok_or_else(|| bad("no metadata"))?;
    Ok(entries
        .iter()
        .map(|kv| {
            (
                kv.key().unwrap_or_default().to_string(),
                kv.value().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

/// The row of literals and options (`None`: the expression has none).
fn values(bytes: &[u8]) -> Result<Option<RecordBatch>, Refusal> {
    let mut batches = FileReader::try_new(Cursor::new(bytes), None)
        .map_err(|e| format!("not pyarrow's pickled expression: {e}"))?;
    match batches.next() {
        None => Ok(None),
        Some(batch) => batch
            .map(Some)
            .map_err(|e| format!("not pyarrow's pickled expression: {e}")),
    }
}

/// Where an expression stands in the filter: `Positive` where only `and` and
/// `or` are above it (it keeps a row only where it is true, so `false` and
/// `NULL` are alike), `Exact` anywhere else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Polarity {
    Positive,
    Exact,
}

struct Walk<'a> {
    tree: &'a [(String, String)],
    at: usize,
    values: Option<&'a RecordBatch>,
}

impl<'a> Walk<'a> {
    fn next(&mut self) -> Result<(&'a str, &'a str), Refusal> {
        let tree = self.tree;
        let (key, value) = tree.get(self.at).ok_or("pyarrow's expression ends early")?;
        self.at += 1;
        Ok((key.as_str(), value.as_str()))
    }

    fn peek(&self) -> Option<&str> {
        self.tree.get(self.at).map(|(k, _)| k.as_str())
    }

    /// The column at `index` (a metadata value), its one row.
    fn value(&self, index: &str) -> Result<&'a dyn Array, Refusal> {
        let i: usize = index
            .parse()
            .map_err(|_| format!("a literal's index {index:?} is no number"))?;
        let batch = self.values.ok_or("a literal, but no values")?;
        if i >= batch.num_columns() || batch.num_rows() != 1 {
            return Err(format!("no value {i}"));
        }
        Ok(batch.column(i).as_ref())
    }

    fn expr(&mut self, polarity: Polarity) -> Result<Expr, Refusal> {
        let (key, value) = self.next()?;
        match key {
            "field_ref" => Ok(Expr::Column(Column::new_unqualified(value))),
            "literal" => {
                let value = self.value(value)?;
                ScalarValue::try_from_array(value, 0)
                    .map(lit)
                    .map_err(|e| format!("a literal: {e}"))
            }
            "call" => self.call(value, polarity),
            other => Err(format!("{other:?} (a form zarrow does not read)")),
        }
    }

    /// A call's arguments, its options (if any), and its end.
    fn call(&mut self, name: &str, polarity: Polarity) -> Result<Expr, Refusal> {
        let below = match name {
            "and_kleene" | "or_kleene" => polarity,
            _ => Polarity::Exact,
        };
        let mut args = Vec::new();
        while !matches!(self.peek(), Some("options" | "end") | None) {
            args.push(self.expr(below)?);
        }
        let mut options = None;
        if self.peek() == Some("options") {
            let (_, index) = self.next()?;
            options = Some(
                self.value(index)?
                    .as_struct_opt()
                    .ok_or("a call's options are not a struct")?
                    .clone(),
            );
        }
        match self.next()? {
            ("end", end) if end == name => {}
            _ => return Err(format!("{name}: no end where one was expected")),
        }
        let binary = |op: Operator, args: Vec<Expr>| -> Result<Expr, Refusal> {
            match <[Expr; 2]>::try_from(args) {
                Ok([l, r]) => Ok(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(l),
                    op,
                    Box::new(r),
                ))),
                Err(args) => Err(format!("{name} of {} arguments", args.len())),
            }
        };
        let one = |args: Vec<Expr>| -> Result<Expr, Refusal> {
            match <[Expr; 1]>::try_from(args) {
                Ok([a]) => Ok(a),
                Err(args) => Err(format!("{name} of {} arguments", args.len())),
            }
        };
        match name {
            "equal" => binary(Operator::Eq, args),
            "not_equal" => binary(Operator::NotEq, args),
            "less" => binary(Operator::Lt, args),
            "less_equal" => binary(Operator::LtEq, args),
            "greater" => binary(Operator::Gt, args),
            "greater_equal" => binary(Operator::GtEq, args),
            "and_kleene" => binary(Operator::And, args),
            "or_kleene" => binary(Operator::Or, args),
            "invert" => Ok(Expr::Not(Box::new(one(args)?))),
            "is_valid" => Ok(Expr::IsNotNull(Box::new(one(args)?))),
            "is_null" => {
                let nan_is_null = options
                    .as_ref()
                    .and_then(|o| o.column_by_name("nan_is_null"))
                    .and_then(|c| c.as_boolean_opt().map(|b| b.is_valid(0) && b.value(0)))
                    .unwrap_or(false);
                if nan_is_null {
                    return Err("is_null with nan_is_null (a NaN as null)".to_string());
                }
                Ok(Expr::IsNull(Box::new(one(args)?)))
            }
            "is_nan" => Ok(datafusion::functions::math::expr_fn::isnan(one(args)?)),
            "is_in" => {
                let options = options.ok_or("is_in without its options")?;
                is_in(one(args)?, &options, polarity)
            }
            other => Err(format!(
                "the function {other:?} (zarrow takes comparisons, and, or, \
                 not, is_null, is_valid, is_nan and is_in)"
            )),
        }
    }
}

/// pyarrow's `is_in` with `options` (its value set and how it matches nulls).
fn is_in(x: Expr, options: &StructArray, polarity: Polarity) -> Result<Expr, Refusal> {
    let set = options
        .column_by_name("value_set")
        .and_then(|c| c.as_list_opt::<i32>())
        .filter(|l| l.len() == 1 && l.is_valid(0))
        .ok_or("is_in's value set is not a list")?
        .value(0);
    // Arrow's SetLookupOptions: MATCH, SKIP, EMIT_NULL, INCONCLUSIVE.
    let behavior = options
        .column_by_name("null_matching_behavior")
        .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt32Type>())
        .filter(|c| c.len() == 1 && c.is_valid(0))
        .map(|c| c.value(0))
        .ok_or("is_in's null matching is not given")?;
    let mut values = Vec::with_capacity(set.len());
    let mut set_has_null = false;
    for i in 0..set.len() {
        if set.is_null(i) {
            set_has_null = true;
        } else {
            values
                .push(lit(ScalarValue::try_from_array(&set, i)
                    .map_err(|e| format!("is_in's set: {e}"))?));
        }
    }
    if values.is_empty() {
        return Err("is_in of no value".to_string());
    }
    // SQL's IN over the set's values: NULL for a null `x`.
    let member = x.clone().in_list(values.clone(), false);
    Ok(match behavior {
        // A null `x` is true where the set has a null, else false.
        0 if set_has_null => x.is_null().or(member),
        0 | 1 if polarity == Polarity::Positive => member,
        0 | 1 => x.is_not_null().and(member),
        // A null `x` is null.
        2 => member,
        // SQL's own IN, the null in the set included.
        3 if set_has_null => {
            let mut with_null = values;
            with_null.push(lit(ScalarValue::Null));
            x.in_list(with_null, false)
        }
        3 => member,
        other => return Err(format!("is_in's null matching {other}")),
    })
}
