//! The linear format in CSV: one column per array (the first row holds the array
//! names), each column one array's tokens from `"version"` to its last data element;
//! shorter columns end with empty cells.
//!
//! A cell is read as JSON when it parses as JSON and as a plain string otherwise, so
//! a spreadsheet shows `version`, `row-major`, `2`, `true` as they are. A string
//! value that would read as something else (`""`, `"12"`, `"true"`, `"[1]"`) is
//! written JSON-quoted, which keeps every value exact. An empty cell ends its column.

use std::io::{Read, Write};

use arrow_array::Array;
use serde_json::Value;

use super::Linear;
use super::export::{Token, Tokens, non_finite};
use super::parse::Parser;
use crate::error::{Error, Result};

fn cell(token: Token, out: &mut Vec<u8>) {
    match token {
        Token::Str(s) if !s.is_empty() && serde_json::from_str::<Value>(s).is_err() => {
            out.extend_from_slice(s.as_bytes())
        }
        // NaN and the infinities as bare words: not JSON, so they read back as the
        // strings float columns accept.
        Token::F32(v) if !v.is_finite() => out.extend_from_slice(non_finite(v.into()).as_bytes()),
        Token::F64(v) if !v.is_finite() => out.extend_from_slice(non_finite(v).as_bytes()),
        _ => token.json(out),
    }
}

/// Write `(name, C-order values, shape)` arrays as CSV columns.
///
/// # Errors
/// An array type the linear format cannot hold; I/O errors.
pub fn write_csv(w: impl Write, columns: &[(String, &dyn Array, Vec<u64>)]) -> Result<()> {
    if columns.is_empty() {
        return Err(Error::linear(
            "csv",
            "one array or more (a linear-format CSV has one column per array)",
            None,
        ));
    }
    let tokens = columns
        .iter()
        .map(|(_, array, shape)| Tokens::new(*array, shape))
        .collect::<Result<Vec<_>>>()?;
    let io = |e: csv::Error| Error::Output {
        what: "CSV".into(),
        source: e.into(),
    };
    let mut out = csv::WriterBuilder::new().flexible(false).from_writer(w);
    out.write_record(columns.iter().map(|(name, _, _)| name.as_bytes()))
        .map_err(io)?;
    let rows = tokens.iter().map(Tokens::len).max().unwrap_or(0);
    let mut cells: Vec<Vec<u8>> = vec![Vec::new(); tokens.len()];
    for row in 0..rows {
        for (text, column) in cells.iter_mut().zip(&tokens) {
            text.clear();
            if row < column.len() {
                cell(column.get(row), text);
            }
        }
        out.write_record(&cells).map_err(io)?;
    }
    out.flush().map_err(|source| Error::Output {
        what: "CSV".into(),
        source,
    })
}

/// Read CSV columns, each an array in the linear format, streaming.
///
/// # Errors
/// [`Error::Linear`] naming the column and field; CSV errors.
pub fn read_csv(r: impl Read) -> Result<Vec<(String, Linear)>> {
    let io = |e: csv::Error| Error::linear("csv", "CSV (RFC 4180)", Some(&e));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(r);
    let names: Vec<String> = reader
        .headers()
        .map_err(io)?
        .iter()
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(Error::linear(
            "csv",
            "a header row (a linear-format CSV names one array per column)",
            None,
        ));
    }
    let mut parsers: Vec<(Parser, bool)> = names.iter().map(|_| (Parser::new(), false)).collect();
    for record in reader.records() {
        let record = record.map_err(io)?;
        for (c, text) in record.iter().enumerate() {
            let (parser, ended) = &mut parsers[c];
            if text.is_empty() {
                *ended = true;
                continue;
            }
            if *ended {
                return Err(Error::linear(
                    format!("column {:?}", names[c]),
                    "no value after an empty cell (an empty cell ends a column)",
                    Some(&text),
                ));
            }
            let token =
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
            parser.push(token).map_err(|e| in_column(&names[c], e))?;
        }
    }
    names
        .into_iter()
        .zip(parsers)
        .map(|(name, (parser, _))| {
            parser
                .finish()
                .map_err(|e| in_column(&name, e))
                .map(|l| (name, l))
        })
        .collect()
}

fn in_column(name: &str, e: Error) -> Error {
    match e {
        Error::Linear {
            field,
            expected,
            found,
        } => Error::Linear {
            field: format!("column {name:?}: {field}"),
            expected,
            found,
        },
        other => other,
    }
}
