//! Bounds on what one conversion from Zarr may produce, checked before anything is
//! read: a store's shape can promise far more rows than it stores (a missing chunk
//! reads as the fill value), so a few bytes of metadata could otherwise make a
//! conversion run for hours and fill the disk.

use crate::error::{Error, LimitKind, Result};
use arrow_schema::DataType;

/// Default for `--max-rows`: the largest row count Arrow's 32-bit lengths and most
/// tools handle without a second thought.
pub(crate) const DEFAULT_MAX_ROWS: u64 = i32::MAX as u64;

/// Default for `--max-bytes`: 64 GiB of Arrow data.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 64 << 30;

crate::options::options! {
    /// [from Zarr] Bounds on the input of one conversion, checked before anything
    /// is read.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct Limits("limits") {
        /// [from Zarr] Refuse an input of more rows than this (a store's shape may
        /// promise far more than it stores: missing chunks read as the fill value;
        /// default 2147483647).
        pub max_rows: u64 = DEFAULT_MAX_ROWS,
        /// [from Zarr] Refuse an input whose Arrow data would exceed this many
        /// bytes (estimated from the shape and types; suffixes K, M, G, T;
        /// default 64 GiB).
        pub max_bytes: u64 as crate::options::Size = DEFAULT_MAX_BYTES,
    }
}

/// The least Arrow memory one value of `data_type` takes, in bits: its width for
/// numbers, one bit for a bool, one 32-bit offset for strings and bytes.
fn min_bits(data_type: &DataType) -> u64 {
    match data_type {
        DataType::Boolean => 1,
        other => other.primitive_width().map_or(32, |w| w as u64 * 8),
    }
}

/// Refuse a conversion of `columns` (each: its row count and Arrow type) whose
/// rows or estimated bytes exceed the bounds, naming what to raise.
pub(crate) fn check<'a>(
    what: &str,
    columns: impl IntoIterator<Item = (u64, &'a DataType)>,
    max_rows: u64,
    max_bytes: u64,
) -> Result<()> {
    let (mut rows, mut bits) = (0u64, 0u128);
    for (n, data_type) in columns {
        rows = rows.max(n);
        bits += u128::from(n) * u128::from(min_bits(data_type));
    }
    if rows > max_rows {
        return Err(Error::LimitExceeded {
            what: what.to_string(),
            limit: LimitKind::Rows,
            value: rows,
            max: max_rows,
        });
    }
    let bytes = bits.div_ceil(8);
    if bytes > u128::from(max_bytes) {
        return Err(Error::LimitExceeded {
            what: what.to_string(),
            limit: LimitKind::Bytes,
            value: u64::try_from(bytes).unwrap_or(u64::MAX),
            max: max_bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("64GiB"), Ok(64 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2kb"), Ok(2048));
        let e = parse_size("12X").unwrap_err();
        assert_eq!((e.option, e.value.as_str()), ("size", "12X"));
        assert!(parse_size("G").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn bounds() {
        let f64 = DataType::Float64;
        let utf8 = DataType::Utf8;
        assert!(check("a", [(10, &f64), (10, &utf8)], 10, 120).is_ok());
        let rows = check("a", [(11, &f64)], 10, u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            rows.contains("11 rows") && rows.contains("--max-rows 11"),
            "{rows}"
        );
        // 10 float64 (80 bytes) + 10 string offsets (40 bytes) = 120 bytes.
        let bytes = check("a", [(10, &f64), (10, &utf8)], 10, 119)
            .unwrap_err()
            .to_string();
        assert!(bytes.contains("--max-bytes 120"), "{bytes}");
        // Bools are bit-packed.
        assert!(check("a", [(16, &DataType::Boolean)], 16, 2).is_ok());
    }
}
