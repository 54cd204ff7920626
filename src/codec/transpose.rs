//! `transpose`: the chunk's dimensions are stored permuted.
//!
//! Spec: <https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/index.html>.
//! v3 name `transpose`, `{"order": [1, 0]}`; a v2 array with `"order": "F"` is the
//! same as `transpose` with the reversed order.
//!
//! Encoding turns a chunk of shape `S` into one of shape `P`, `P[k] = S[order[k]]`,
//! with `encoded[p] = decoded[s]` where `s[order[k]] = p[k]`. Decoding gathers the
//! elements back into C order over `S`: one copy (Arrow's `take`).

use std::sync::Arc;

use arrow_array::{ArrayRef, UInt64Array};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ArrayToArrayCodec, ConfigError, settings};
use crate::error::{ChunkError, EncodeError};

/// The names of `transpose`.
pub(crate) const NAMES: &[&str] = &["transpose"];

/// The `transpose` codec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transpose {
    /// A permutation of `0..ndim`.
    pub(crate) order: Vec<usize>,
}

#[derive(Deserialize)]
struct Settings {
    order: Vec<usize>,
}

pub(super) fn build(
    name: &str,
    config: &Map<String, Value>,
) -> Result<Arc<dyn ArrayToArrayCodec>, ConfigError> {
    let order = settings::<Settings>(name, config)?.order;
    if !is_permutation(&order, order.len()) {
        return Err(ConfigError::invalid_found(
            name,
            "configuration.order",
            "a permutation of the dimensions",
            format!("{order:?}"),
        ));
    }
    Ok(Arc::new(Transpose { order }))
}

impl ArrayToArrayCodec for Transpose {
    fn encoded_shape(&self, shape: &[u64]) -> Result<Vec<u64>, EncodeError> {
        if self.order.len() != shape.len() {
            return Err(EncodeError::RankMismatch {
                order: self.order.clone(),
                shape: shape.to_vec(),
            });
        }
        Ok(permute(shape, &self.order))
    }

    fn decode(&self, array: &ArrayRef, shape: &[u64]) -> Result<ArrayRef, ChunkError> {
        undo(array, shape, &self.order)
    }

    fn encode(&self, array: &ArrayRef, shape: &[u64]) -> Result<ArrayRef, EncodeError> {
        apply(array, shape, &self.order)
    }

    fn metadata(&self) -> Value {
        json!({"name": "transpose", "configuration": {"order": self.order}})
    }
}

/// The shape after the permutation: `P[k] = shape[order[k]]`.
pub(crate) fn permute(shape: &[u64], order: &[usize]) -> Vec<u64> {
    order
        .iter()
        .map(|&d| shape.get(d).copied().unwrap_or(1))
        .collect()
}

/// Whether `order` is a permutation of `0..ndim`.
pub(crate) fn is_permutation(order: &[usize], ndim: usize) -> bool {
    let mut seen = vec![false; ndim];
    order.len() == ndim
        && order
            .iter()
            .all(|&d| d < ndim && !std::mem::replace(&mut seen[d], true))
}

/// Undo the permutation: `array` is in C order over `permute(shape, order)`; the
/// result is in C order over `shape`.
pub(crate) fn undo(
    array: &ArrayRef,
    shape: &[u64],
    order: &[usize],
) -> Result<ArrayRef, ChunkError> {
    let ndim = shape.len();
    if !is_permutation(order, ndim) {
        return Err(ChunkError::Decompress {
            codec: "transpose",
            message: format!("order {order:?} is not a permutation of {ndim} dimensions"),
        });
    }
    if ndim <= 1 || order.iter().enumerate().all(|(k, &d)| k == d) {
        return Ok(array.clone());
    }
    let permuted = permute(shape, order);
    // C-order strides of the stored (permuted) layout, per original dimension.
    let mut permuted_stride = vec![1u64; ndim];
    for k in (0..ndim.saturating_sub(1)).rev() {
        permuted_stride[k] = permuted_stride[k + 1] * permuted[k + 1];
    }
    let mut stride = vec![0u64; ndim];
    for (k, &d) in order.iter().enumerate() {
        stride[d] = permuted_stride[k];
    }
    let total: u64 = shape.iter().product();
    let mut indices = Vec::with_capacity(total as usize);
    let mut s = vec![0u64; ndim];
    for _ in 0..total {
        indices.push(s.iter().zip(&stride).map(|(a, b)| a * b).sum::<u64>());
        // Advance the C-order odometer over `shape`.
        for d in (0..ndim).rev() {
            s[d] += 1;
            if s[d] < shape[d] {
                break;
            }
            s[d] = 0;
        }
    }
    Ok(arrow_select::take::take(
        array.as_ref(),
        &UInt64Array::from(indices),
        None,
    )?)
}

/// Apply the permutation: `array` is in C order over `shape` (all its elements);
/// the result is in C order over `permute(shape, order)`.
fn apply(array: &ArrayRef, shape: &[u64], order: &[usize]) -> Result<ArrayRef, EncodeError> {
    let total: u64 = shape.iter().product();
    if array.len() as u64 != total {
        return Err(EncodeError::PartialChunk {
            codec: "transpose",
            values: array.len() as u64,
            shape: shape.to_vec(),
        });
    }
    let ndim = shape.len();
    if ndim <= 1 || order.iter().enumerate().all(|(k, &d)| k == d) {
        return Ok(array.clone());
    }
    // C-order strides over `shape`; element p of the output is element s of the
    // input with s[order[k]] = p[k].
    let mut stride = vec![1u64; ndim];
    for d in (0..ndim - 1).rev() {
        stride[d] = stride[d + 1] * shape[d + 1];
    }
    let permuted = permute(shape, order);
    let mut indices = Vec::with_capacity(total as usize);
    let mut p = vec![0u64; ndim];
    for _ in 0..total {
        indices.push(
            p.iter()
                .zip(order)
                .map(|(&i, &d)| i * stride[d])
                .sum::<u64>(),
        );
        for k in (0..ndim).rev() {
            p[k] += 1;
            if p[k] < permuted[k] {
                break;
            }
            p[k] = 0;
        }
    }
    arrow_select::take::take(array.as_ref(), &UInt64Array::from(indices), None)
        .map_err(|source| EncodeError::Arrow { source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;

    #[test]
    fn transpose_2d_and_3d() {
        // decoded (2, 3) = [[0, 1, 2], [3, 4, 5]]; stored transposed (3, 2) =
        // [[0, 3], [1, 4], [2, 5]], i.e. [0, 3, 1, 4, 2, 5].
        let stored: ArrayRef = Arc::new(Int32Array::from(vec![0, 3, 1, 4, 2, 5]));
        let out = undo(&stored, &[2, 3], &[1, 0]).unwrap();
        assert_eq!(
            out.as_primitive::<Int32Type>().values(),
            &[0, 1, 2, 3, 4, 5]
        );
        // (2, 1, 2) with order [2, 0, 1]: stored shape (2, 2, 1), stored[p] =
        // decoded[s] with s = (p1, p2, p0). decoded = 0..4 in C order.
        let stored: ArrayRef = Arc::new(Int32Array::from(vec![0, 2, 1, 3]));
        let out = undo(&stored, &[2, 1, 2], &[2, 0, 1]).unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().values(), &[0, 1, 2, 3]);
        assert!(is_permutation(&[2, 0, 1], 3));
        assert!(!is_permutation(&[0, 0, 1], 3));
        assert!(!is_permutation(&[0, 3, 1], 3));
    }

    #[test]
    fn apply_is_the_inverse_of_undo() {
        let decoded: ArrayRef = Arc::new(Int32Array::from((0..24).collect::<Vec<i32>>()));
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]] {
            let stored = apply(&decoded, &[2, 3, 4], &order).unwrap();
            let back = undo(&stored, &[2, 3, 4], &order).unwrap();
            assert_eq!(back.as_ref(), decoded.as_ref(), "{order:?}");
        }
        // The spec's 2-D example: decoded [[0, 1, 2], [3, 4, 5]] stores as [0, 3, 1, 4, 2, 5].
        let decoded: ArrayRef = Arc::new(Int32Array::from(vec![0, 1, 2, 3, 4, 5]));
        let stored = apply(&decoded, &[2, 3], &[1, 0]).unwrap();
        assert_eq!(
            stored.as_primitive::<Int32Type>().values(),
            &[0, 3, 1, 4, 2, 5]
        );
    }
}
