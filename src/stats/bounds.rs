//! A column's statistics in the terms a filter uses (DataFusion's pruning).

use arrow_array::{Array as _, ArrayRef};
use arrow_schema::DataType as ArrowType;

use super::{ArrayStats, ChunkStats, MAX_SET_VALUE, format, stats_type};
use crate::error::Result;

/// A column's statistics as a filter uses them: the chunks whose statistics
/// still describe them, their bounds in the column's terms.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    /// Rows per chunk.
    pub(crate) chunk_len: u64,
    /// The chunks described, in order.
    pub(crate) chunks: Vec<u64>,
    /// Their lower and upper bounds (null: none known; a chunk holding a
    /// NaN has none).
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
    pub(crate) categories: Option<ArrayRef>,
}

impl Bounds {
    /// The bounds of `stats` rows where `keep` holds. The bounds of a chunk
    /// holding a NaN are unknown: engines order NaN differently (IEEE's
    /// comparisons, a total order where -NaN is the least value, "NaN is the
    /// greatest"), so no bound holds for every one of them.
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
        let with_nans: arrow_array::BooleanArray = u64s(format::NANS)
            .into_iter()
            .map(|n| Some(n > 0))
            .collect();
        let unknown_where_nan = |a: &ArrayRef| arrow_select::nullif::nullif(a.as_ref(), &with_nans);
        Ok(Self {
            chunk_len: stats.chunk_len,
            chunks: u64s(format::CHUNK),
            min: zeros_widened(&unknown_where_nan(batch.column(format::MIN))?, false),
            max: zeros_widened(&unknown_where_nan(batch.column(format::MAX))?, true),
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

    /// The bounds of a categorical column from the bounds of its codes: for
    /// each chunk, the statistics of the categories its codes name (the set
    /// when recorded, else the codes' range when it is small), in the
    /// categories' own type and order (number categories as numbers, float
    /// ones by the NaN and zero rules of [`ChunkStats`]); a code of -1 is a
    /// null, a code past the categories leaves the chunk's bounds unknown.
    pub(crate) fn categorical(codes: Self, categories: &ArrayRef) -> Self {
        use arrow_array::cast::AsArray;
        let n = categories.len() as i64;
        let bound = stats_type(categories.data_type());
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
        let unknown = |bound: &Option<ArrowType>| -> ArrayRef {
            arrow_array::new_null_array(bound.as_ref().unwrap_or(&ArrowType::Null), 1)
        };
        let mut min: Vec<ArrayRef> = Vec::with_capacity(codes.chunks.len());
        let mut max: Vec<ArrayRef> = Vec::with_capacity(codes.chunks.len());
        let mut nulls = Vec::with_capacity(codes.chunks.len());
        for i in 0..codes.chunks.len() {
            let present: Option<Vec<i64>> = match (codes.present(i), code_bounds(i)) {
                (Some(present), _) => Some(present.collect()),
                // A range no longer than a set could be (the numbers are
                // the file's: checked).
                (None, Some((lo, hi)))
                    if hi
                        .checked_sub(lo)
                        .is_some_and(|d| (0..=MAX_SET_VALUE).contains(&d)) =>
                {
                    Some((lo..=hi).collect())
                }
                _ => None,
            };
            let Some(present) = present else {
                min.push(unknown(&bound));
                max.push(unknown(&bound));
                nulls.push(None);
                continue;
            };
            let has_null = present.iter().any(|&c| c < 0);
            nulls.push((!has_null).then_some(0));
            // A code past the categories reads as an error, not a value: no
            // bound from it.
            let named: Option<Vec<u64>> = present
                .iter()
                .filter(|&&c| c >= 0)
                .map(|&c| (c < n).then_some(c as u64))
                .collect();
            let stats = named.filter(|_| bound.is_some()).and_then(|named| {
                let named = arrow_array::UInt64Array::from(named);
                let values = arrow_select::take::take(categories.as_ref(), &named, None).ok()?;
                ChunkStats::of(values.as_ref())
            });
            match stats {
                Some(stats) if stats.nans == 0 => {
                    min.push(stats.min);
                    max.push(stats.max);
                }
                _ => {
                    min.push(unknown(&bound));
                    max.push(unknown(&bound));
                }
            }
        }
        let concat = |parts: &[ArrayRef]| -> ArrayRef {
            let parts: Vec<&dyn arrow_array::Array> = parts.iter().map(|a| a.as_ref()).collect();
            arrow_select::concat::concat(&parts)
                .unwrap_or_else(|_| arrow_array::new_null_array(&ArrowType::Null, parts.len()))
        };
        Self {
            chunk_len: codes.chunk_len,
            min: concat(&min),
            max: concat(&max),
            nulls,
            rows: codes.rows,
            sets: codes.sets,
            chunks: codes.chunks,
            categories: Some(categories.clone()),
        }
    }
}

/// Float bounds widened: each zero (of either sign, as another writer may
/// record it) to the least subnormal below, or above when `upper` (no bound
/// of a zero holds for every engine's order of zeros); float16 and float32
/// bounds one unit in the last place outward (an engine that rounds a
/// float64 literal to the column's type, as Polars and numpy do, may find
/// `x >= k` true for a value just below `k`).
fn zeros_widened(bounds: &ArrayRef, upper: bool) -> ArrayRef {
    use super::compute::widened;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    /// The next float outward by bits: `bits` of a finite value of the sign
    /// `negative`, one step away from zero when it moves outward, toward it
    /// otherwise.
    fn step(bits: u32, negative: bool, upper: bool, sign_bit: u32) -> u32 {
        let magnitude = bits & !sign_bit;
        if magnitude == 0 {
            // A zero: the least subnormal outward.
            return if upper { 1 } else { sign_bit | 1 };
        }
        if upper != negative {
            bits + 1
        } else {
            bits - 1
        }
    }
    match bounds.data_type() {
        ArrowType::Float16 => std::sync::Arc::new(
            bounds
                .as_primitive::<Float16Type>()
                .unary::<_, Float16Type>(|v| {
                    if !v.is_finite() {
                        return v;
                    }
                    let bits = u32::from(v.to_bits());
                    let next = step(bits, v.is_sign_negative(), upper, 0x8000);
                    half::f16::from_bits(next as u16)
                }),
        ),
        ArrowType::Float32 => std::sync::Arc::new(
            bounds
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| {
                    if !v.is_finite() {
                        return v;
                    }
                    f32::from_bits(step(v.to_bits(), v.is_sign_negative(), upper, 0x8000_0000))
                }),
        ),
        ArrowType::Float64 => {
            let tiny = f64::from_bits(1);
            let tiny = if upper { tiny } else { -tiny };
            std::sync::Arc::new(
                bounds
                    .as_primitive::<Float64Type>()
                    .unary::<_, Float64Type>(|v| widened(v, tiny)),
            )
        }
        _ => bounds.clone(),
    }
}
