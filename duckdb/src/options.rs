//! `read_zarr`'s named parameters: the options' one declaration (the URL's,
//! then the table's: `UrlOptions` and `ZarrTableOptions`, as `zarrow.table`
//! and `CREATE EXTERNAL TABLE ... OPTIONS` take them), none listed here.
//!
//! Each is a named parameter of any type: a list (`columns := ['a', 'b']`)
//! gives its items, anything else its text (`decode_cf := false`,
//! `concurrency := 8`, `columns := 'a,b'`), which the declaration parses. A
//! bad value is the declaration's error, naming the key and what it takes.

use duckdb_neo::bind_arguments::BindArgument;
use duckdb_neo::connection::Context;
use duckdb_neo::enums::LogicalTypeID;
use duckdb_neo::signature::{FunctionParameter, FunctionParameterKind, SignatureBuilder};
use duckdb_neo::types::Any;
use duckdb_neo::value::Value;
use duckdb_neo::{DuckDBType, Result};
use zarrow::Options;
use zarrow::datafusion::ZarrTableOptions;
use zarrow::location::UrlOptions;

use crate::zarrow_error;

/// The options a read takes: the URL's and the table's.
pub(crate) type ReadGroups = (UrlOptions, ZarrTableOptions);

/// Every option's key, in the order the parameters are declared.
fn keys() -> Vec<&'static str> {
    UrlOptions::entries()
        .into_iter()
        .chain(ZarrTableOptions::entries())
        .map(|entry| entry.key)
        .collect()
}

/// `signature` with every option as a named parameter, after the positional
/// ones.
pub(crate) fn declare(mut signature: SignatureBuilder) -> SignatureBuilder {
    for key in keys() {
        signature = signature.param(
            FunctionParameter::new::<Any>(key)
                .kind(FunctionParameterKind::Named)
                // NULL: not given (the option keeps its default).
                .default_value(None::<String>),
        );
    }
    signature
}

/// The options given among `arguments` (the declared parameters in order:
/// `positional` of them first, then the options).
pub(crate) fn parse(
    context: &Context,
    arguments: &[BindArgument],
    positional: usize,
) -> Result<ReadGroups> {
    let (mut url, mut table) = ReadGroups::default();
    for (key, argument) in keys().into_iter().zip(arguments.iter().skip(positional)) {
        let Some(value) = &argument.value else {
            continue;
        };
        if value.is_null()? {
            continue;
        }
        let set = set_either(&mut url, &mut table, key, given(context, value)?)
            .unwrap_or_else(|| unreachable!("{key} is declared by one of the groups"));
        set.map_err(zarrow_error)?;
    }
    Ok((url, table))
}

/// Set `key` from `given` on whichever of `first` and `second` declares it;
/// `None` when neither does.
pub(crate) fn set_either(
    first: &mut impl Options,
    second: &mut impl Options,
    key: &str,
    given: Given,
) -> Option<zarrow::Result<()>> {
    match given {
        Given::Items(items) => first
            .try_set_items(key, &items)
            .or_else(|| second.try_set_items(key, &items)),
        Given::Text(text) => first
            .try_set(key, &text)
            .or_else(|| second.try_set(key, &text)),
    }
}

/// What a parameter gives an option.
pub(crate) enum Given {
    /// A list's items.
    Items(Vec<String>),
    /// Any other value's text (a list option's: comma-separated).
    Text(String),
}

/// A parameter's value as an option takes it.
pub(crate) fn given(context: &Context, value: &Value) -> Result<Given> {
    let varchar = String::logical_type(context)?;
    let text = |v: &Value| -> Result<String> {
        Ok(v.cast(context, &varchar)?
            .get::<String>()?
            .unwrap_or_default())
    };
    Ok(match value.logical_type()?.id()? {
        LogicalTypeID::List | LogicalTypeID::Array => {
            Given::Items(value.children()?.iter().map(text).collect::<Result<_>>()?)
        }
        _ => Given::Text(text(value)?),
    })
}

/// Whether `key` is one of `read_zarr`'s named parameters.
#[cfg(test)]
pub(crate) fn is_option(key: &str) -> bool {
    keys().contains(&key)
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_unique() {
        let keys = super::keys();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "{keys:?}");
        assert!(super::is_option("columns") && super::is_option("anonymous"));
    }
}
