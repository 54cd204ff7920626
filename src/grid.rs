//! Regular chunk grids: chunk indices, chunk keys, edge trimming, C-order maps.
//!
//! ```text
//! shape (5, 3), chunk shape (2, 2): a 3 x 2 grid of chunks
//!
//!        col 0 1 | 2 .        chunk (2, 1) holds element (4, 2) only; the rest
//!  row 0  [0,0]  | [0,1]      of it is fill-value padding, dropped on read
//!  row 1         |
//!  row 2  [1,0]  | [1,1]
//!  row 3         |
//!  row 4  [2,0]  | [2,1]
//! ```

use std::fmt;

/// How chunk indices map to store keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChunkKeyEncoding {
    /// `default` (`c/1/2`) or `v2` (`1.2`).
    pub kind: KeyKind,
    /// `/` or `.`.
    pub separator: char,
}

/// The chunk key encoding's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyKind {
    /// v3 `default`: `c` then the indices, all joined by the separator.
    Default,
    /// v3 `v2` and every v2 array: the indices joined by the separator.
    V2,
}

impl ChunkKeyEncoding {
    /// The key of the chunk at `indices`, relative to the array's node path.
    ///
    /// A 0-d array's only chunk is `c` (default) or `0` (v2).
    pub(crate) fn key(&self, indices: &[u64]) -> String {
        let sep = self.separator.to_string();
        let joined = indices
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(&sep);
        match (self.kind, indices.is_empty()) {
            (KeyKind::Default, true) => "c".to_string(),
            (KeyKind::Default, false) => format!("c{sep}{joined}"),
            (KeyKind::V2, true) => "0".to_string(),
            (KeyKind::V2, false) => joined,
        }
    }
}

impl ChunkKeyEncoding {
    /// The chunk indices a key names, or `None` when it is not a chunk key of this
    /// encoding (metadata files, other nodes' keys).
    pub(crate) fn parse(&self, key: &str) -> Option<Vec<u64>> {
        let indices = match self.kind {
            KeyKind::Default if key == "c" => return Some(Vec::new()),
            KeyKind::Default => key.strip_prefix('c')?.strip_prefix(self.separator)?,
            KeyKind::V2 => key,
        };
        indices
            .split(self.separator)
            .map(|i| i.parse().ok())
            .collect()
    }
}

impl fmt::Display for ChunkKeyEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.kind {
            KeyKind::Default => "default",
            KeyKind::V2 => "v2",
        };
        write!(f, "{name} (separator {:?})", self.separator)
    }
}

/// A regular grid over an array shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grid {
    shape: Vec<u64>,
    chunk_shape: Vec<u64>,
}

impl Grid {
    /// A grid; `chunk_shape` must have `shape`'s rank and no zero extent (checked by
    /// metadata validation).
    pub(crate) fn new(shape: &[u64], chunk_shape: &[u64]) -> Self {
        Self {
            shape: shape.to_vec(),
            chunk_shape: chunk_shape.to_vec(),
        }
    }

    /// Chunks along each dimension.
    pub(crate) fn grid_shape(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect()
    }

    /// Total number of chunks (1 for a 0-d array).
    pub(crate) fn num_chunks(&self) -> u64 {
        self.grid_shape().iter().product()
    }

    /// The chunk indices of the `linear`-th chunk in C order.
    pub(crate) fn unravel(&self, linear: u64) -> Vec<u64> {
        unravel(linear, &self.grid_shape())
    }

    /// How much of the chunk at `indices` lies inside the array, per dimension.
    pub(crate) fn valid_extent(&self, indices: &[u64]) -> Vec<u64> {
        indices
            .iter()
            .zip(self.shape.iter().zip(&self.chunk_shape))
            .map(|(&i, (&s, &c))| c.min(s.saturating_sub(i * c)))
            .collect()
    }
}

/// C-order multi-index of `linear` within `shape`.
pub(crate) fn unravel(mut linear: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let extent = shape[d].max(1);
        out[d] = linear % extent;
        linear /= extent;
    }
    out
}

/// C-order linear index of `indices` within `shape`.
pub(crate) fn ravel(indices: &[u64], shape: &[u64]) -> u64 {
    indices
        .iter()
        .zip(shape)
        .fold(0, |acc, (&i, &s)| acc * s + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected keys from the Zarr v3 spec ("chunk key encoding" section).
    #[test]
    fn keys() {
        let default = ChunkKeyEncoding {
            kind: KeyKind::Default,
            separator: '/',
        };
        assert_eq!(default.key(&[1, 23, 45]), "c/1/23/45");
        assert_eq!(default.key(&[]), "c");
        let dot = ChunkKeyEncoding {
            kind: KeyKind::Default,
            separator: '.',
        };
        assert_eq!(dot.key(&[1, 2]), "c.1.2");
        let v2 = ChunkKeyEncoding {
            kind: KeyKind::V2,
            separator: '.',
        };
        assert_eq!(v2.key(&[1, 23, 45]), "1.23.45");
        assert_eq!(v2.key(&[]), "0");
        let v2s = ChunkKeyEncoding {
            kind: KeyKind::V2,
            separator: '/',
        };
        assert_eq!(v2s.key(&[1, 2]), "1/2");
        assert_eq!(default.parse("c/1/23/45"), Some(vec![1, 23, 45]));
        assert_eq!(default.parse("c"), Some(vec![]));
        assert_eq!(default.parse("zarr.json"), None);
        assert_eq!(v2.parse("1.23.45"), Some(vec![1, 23, 45]));
        assert_eq!(v2.parse(".zarray"), None);
        assert_eq!(dot.parse("c/1"), None);
    }

    #[test]
    fn grid_math() {
        let g = Grid::new(&[5, 3], &[2, 2]);
        assert_eq!(g.grid_shape(), vec![3, 2]);
        assert_eq!(g.num_chunks(), 6);
        assert_eq!(g.unravel(5), vec![2, 1]);
        assert_eq!(g.valid_extent(&[2, 1]), vec![1, 1]);
        assert_eq!(g.valid_extent(&[0, 0]), vec![2, 2]);
        assert_eq!(Grid::new(&[], &[]).num_chunks(), 1);
        assert_eq!(Grid::new(&[0], &[4]).num_chunks(), 0);
        assert_eq!(ravel(&[2, 1], &[3, 2]), 5);
    }
}
