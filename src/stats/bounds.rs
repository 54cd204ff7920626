//! A column's statistics in the terms a filter uses (DataFusion's pruning).

use arrow_array::{Array as _, ArrayRef};
use arrow_schema::DataType as ArrowType;

use super::{ArrayStats, format};
use crate::error::Result;

/// A column's statistics as a filter uses them: the chunks whose statistics
/// still describe them, their bounds in the column's terms.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    /// Rows per chunk.
    pub(crate) chunk_len: u64,
    /// The chunks described, in order.
    pub(crate) chunks: Vec<u64>,
    /// Their lower and upper bounds (null: none known).
    pub(crate) min: ArrayRef,
    pub(crate) max: ArrayRef,
    /// Their null counts (`None`: not known).
    pub(crate) nulls: Vec<Option<u64>>,
    /// Their rows.
    pub(crate) rows: Vec<u64>,
    /// The values present, where recorded (small integers: bit `v + 1`).
    pub(crate) sets: Vec<Option<Vec<u8>>>,
    /// A categorical's categories, which its codes (the sets' values) name;
    /// `None`: the sets hold the values themselves.
    pub(crate) categories: Option<arrow_array::StringArray>,
}

impl Bounds {
    /// The bounds of `stats` rows where `keep` holds.
    pub(crate) fn of(stats: &ArrayStats, keep: &[bool]) -> Result<Self> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::UInt64Type;
        let mask = arrow_array::BooleanArray::from(keep.to_vec());
        let batch = arrow_select::filter::filter_record_batch(&stats.batch, &mask)?;
        let u64s = |i: usize| {
            batch
                .column(i)
                .as_primitive::<UInt64Type>()
                .values()
                .to_vec()
        };
        Ok(Self {
            chunk_len: stats.chunk_len,
            chunks: u64s(format::CHUNK),
            min: batch.column(format::MIN).clone(),
            max: batch.column(format::MAX).clone(),
            nulls: u64s(format::NULLS).into_iter().map(Some).collect(),
            rows: u64s(format::ROWS),
            sets: {
                let sets = batch.column(format::SET).as_binary::<i32>();
                (0..sets.len())
                    .map(|i| arrow_array::Array::is_valid(sets, i).then(|| sets.value(i).to_vec()))
                    .collect()
            },
            categories: None,
        })
    }

    /// The values of chunk `i`'s set (for a categorical, its codes; -1 is a
    /// null there), `None` where no set was recorded.
    pub(crate) fn present(&self, i: usize) -> Option<impl Iterator<Item = i64> + '_> {
        let bits = self.sets.get(i)?.as_ref()?;
        Some(
            (0..bits.len() * 8)
                .filter(|b| bits[b / 8] & (1 << (b % 8)) != 0)
                .map(|b| b as i64 - 1),
        )
    }

    /// The bounds of a categorical column from the bounds of its codes: each
    /// chunk's least and greatest category among the codes present (the set
    /// when recorded, else the codes' range); a code of -1 is a null.
    pub(crate) fn categorical(codes: Self, categories: &arrow_array::StringArray) -> Self {
        use arrow_array::cast::AsArray;
        let n = categories.len() as i64;
        // The codes' bounds as i64, cast once for every chunk.
        let as_i64 = |a: &ArrayRef| {
            arrow_cast::cast(a, &ArrowType::Int64)
                .ok()
                .map(|c| c.as_primitive::<arrow_array::types::Int64Type>().clone())
        };
        let (lows, highs) = (as_i64(&codes.min), as_i64(&codes.max));
        let code_bounds = |i: usize| -> Option<(i64, i64)> {
            let at = |a: &Option<arrow_array::Int64Array>| {
                a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i))
            };
            Some((at(&lows)?, at(&highs)?))
        };
        let mut min: Vec<Option<&str>> = Vec::with_capacity(codes.chunks.len());
        let mut max: Vec<Option<&str>> = Vec::with_capacity(codes.chunks.len());
        let mut nulls = Vec::with_capacity(codes.chunks.len());
        for i in 0..codes.chunks.len() {
            let present: Vec<i64> = match (codes.present(i), code_bounds(i)) {
                (Some(present), _) => present.collect(),
                (None, Some((lo, hi))) if hi - lo <= n => (lo..=hi).collect(),
                _ => {
                    // Unknown: no bounds.
                    min.push(None);
                    max.push(None);
                    nulls.push(None);
                    continue;
                }
            };
            let has_null = present.iter().any(|&c| c < 0);
            // A code past the categories reads as an error, not a value: no
            // bound from it.
            let values: Option<Vec<&str>> = present
                .iter()
                .filter(|&&c| c >= 0)
                .map(|&c| (c < n).then(|| categories.value(c as usize)))
                .collect();
            match values {
                Some(values) => {
                    min.push(values.iter().min().copied());
                    max.push(values.iter().max().copied());
                }
                None => {
                    min.push(None);
                    max.push(None);
                }
            }
            nulls.push((!has_null).then_some(0));
        }
        Self {
            chunk_len: codes.chunk_len,
            min: std::sync::Arc::new(arrow_array::StringArray::from(min)),
            max: std::sync::Arc::new(arrow_array::StringArray::from(max)),
            nulls,
            rows: codes.rows,
            sets: codes.sets,
            chunks: codes.chunks,
            categories: Some(categories.clone()),
        }
    }
}
