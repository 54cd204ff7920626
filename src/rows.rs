//! A FIFO of Arrow array slices from which rows are taken in fixed counts: how the
//! group reader lines up columns with different chunk lengths, and how the writer
//! cuts incoming batches into chunks.

use std::collections::VecDeque;

use arrow_array::{Array, ArrayRef};
use arrow_schema::ArrowError;

/// Queued rows of one column.
#[derive(Debug, Default)]
pub(crate) struct RowQueue {
    parts: VecDeque<ArrayRef>,
    rows: usize,
}

impl RowQueue {
    /// Rows queued.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// Queue `array`'s rows.
    pub(crate) fn push(&mut self, array: ArrayRef) {
        if !array.is_empty() {
            self.rows += array.len();
            self.parts.push_back(array);
        }
    }

    /// Take the first `n` queued rows (fewer if fewer are queued) as one array: a
    /// slice when one part covers them, else a concatenation (one copy).
    pub(crate) fn take(&mut self, mut n: usize) -> Result<Option<ArrayRef>, ArrowError> {
        let mut taken = Vec::new();
        while n > 0 {
            let Some(front) = self.parts.pop_front() else {
                break;
            };
            if front.len() <= n {
                n -= front.len();
                self.rows -= front.len();
                taken.push(front);
            } else {
                taken.push(front.slice(0, n));
                self.parts.push_front(front.slice(n, front.len() - n));
                self.rows -= n;
                n = 0;
            }
        }
        match taken.len() {
            0 => Ok(None),
            1 => Ok(taken.pop()),
            _ => {
                let refs: Vec<&dyn Array> = taken.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs).map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use std::sync::Arc;

    #[test]
    fn takes_across_parts() {
        let mut q = RowQueue::default();
        q.push(Arc::new(Int32Array::from(vec![1, 2, 3])));
        q.push(Arc::new(Int32Array::from(Vec::<i32>::new())));
        q.push(Arc::new(Int32Array::from(vec![4, 5])));
        assert_eq!(q.len(), 5);
        let a = q.take(2).unwrap().unwrap();
        assert_eq!(a.as_primitive::<Int32Type>().values(), &[1, 2]);
        let b = q.take(2).unwrap().unwrap();
        assert_eq!(b.as_primitive::<Int32Type>().values(), &[3, 4]);
        let c = q.take(9).unwrap().unwrap();
        assert_eq!(c.as_primitive::<Int32Type>().values(), &[5]);
        assert!(q.take(1).unwrap().is_none());
        assert_eq!(q.len(), 0);
    }
}
