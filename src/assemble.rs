//! Gather equally shaped parts (chunks of an array, inner chunks of a shard) into
//! one array in C order over a region.
//!
//! ```text
//! parts on a 1 x 2 grid, part shape (2, 2), region (2, 3):
//!
//!   part 0    part 1          region, C order
//!   a b       e f             a b e
//!   c d       g h      ──▶    c d g      (f, h lie outside the region)
//! ```

use arrow_array::{Array, ArrayRef};
use arrow_schema::ArrowError;

use crate::grid::{ravel, unravel};

/// One part: its decoded elements (all `part_shape` of them, C order), or a
/// one-element array holding the fill value for a part that is absent.
#[derive(Debug)]
pub(crate) enum Part {
    Present(ArrayRef),
    Missing(ArrayRef),
}

impl Part {
    fn array(&self) -> &dyn Array {
        match self {
            Part::Present(a) | Part::Missing(a) => a.as_ref(),
        }
    }
}

/// One dimension: the first `total` elements of `parts` (each `part_len` long) as
/// runs, in order: a slice of each present part (no copy), the fill value repeated
/// for a missing one.
pub(crate) fn runs(parts: &[Part], part_len: u64, total: u64) -> Result<Vec<ArrayRef>, ArrowError> {
    let mut pieces = Vec::new();
    let mut remaining = total;
    for part in parts {
        let take = remaining.min(part_len);
        if take == 0 {
            break;
        }
        pieces.push(match part {
            Part::Present(a) => a.slice(0, take as usize),
            Part::Missing(a) => {
                let idx: Vec<(usize, usize)> = vec![(0, 0); take as usize];
                arrow_select::interleave::interleave(&[a.as_ref()], &idx)?
            }
        });
        remaining -= take;
    }
    Ok(pieces)
}

/// The elements of `region` (anchored at the grid's origin) in C order, taken from
/// `parts` laid out in C order on `grid` with `part_shape` each.
pub(crate) fn gather(
    parts: &[Part],
    grid: &[u64],
    part_shape: &[u64],
    region: &[u64],
) -> Result<ArrayRef, ArrowError> {
    let total: u64 = region.iter().product();
    let Some(first) = parts.first() else {
        return Err(ArrowError::InvalidArgumentError(
            "no parts to gather".into(),
        ));
    };
    // One dimension: parts are runs of the output; slice and concatenate.
    if region.len() == 1 {
        let mut pieces = runs(parts, part_shape[0], total)?;
        return match pieces.len() {
            0 => Ok(first.array().slice(0, 0)),
            1 => Ok(pieces.swap_remove(0)),
            _ => {
                let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs)
            }
        };
    }
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(total as usize);
    let mut grid_idx = vec![0u64; region.len()];
    let mut within = vec![0u64; region.len()];
    for linear in 0..total {
        let x = unravel(linear, region);
        for d in 0..region.len() {
            grid_idx[d] = x[d] / part_shape[d];
            within[d] = x[d] % part_shape[d];
        }
        let j = ravel(&grid_idx, grid) as usize;
        let e = match parts.get(j) {
            Some(Part::Present(_)) => ravel(&within, part_shape) as usize,
            Some(Part::Missing(_)) => 0,
            None => {
                return Err(ArrowError::InvalidArgumentError(format!(
                    "part {j} is outside the grid"
                )));
            }
        };
        picks.push((j, e));
    }
    let arrays: Vec<&dyn Array> = parts.iter().map(Part::array).collect();
    arrow_select::interleave::interleave(&arrays, &picks)
}

/// The elements of the box `region` at `origin` of a whole array of `shape`
/// (`array` in C order), in C order: the inverse of [`gather`], cutting a chunk (or
/// an inner chunk) out of an N-d array. Positions past the array's edge repeat its
/// first element: they pad an edge chunk and are never read back.
pub(crate) fn cut(
    array: &ArrayRef,
    shape: &[u64],
    origin: &[u64],
    region: &[u64],
) -> Result<ArrayRef, ArrowError> {
    let total: u64 = region.iter().product();
    let inside = |x: &[u64]| x.iter().zip(shape).all(|(x, s)| x < s);
    // One dimension, or a region that is one contiguous run: a slice.
    if region.len() == 1 && origin[0] + region[0] <= shape[0] {
        return Ok(array.slice(origin[0] as usize, region[0] as usize));
    }
    let mut picks = Vec::with_capacity(total as usize);
    for linear in 0..total {
        let x: Vec<u64> = unravel(linear, region)
            .iter()
            .zip(origin)
            .map(|(w, o)| w + o)
            .collect();
        picks.push(if inside(&x) { ravel(&x, shape) } else { 0 });
    }
    arrow_select::take::take(array.as_ref(), &arrow_array::UInt64Array::from(picks), None)
}
