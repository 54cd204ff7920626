//! Chunk-sized buffers kept for the next chunk.
//!
//! Every chunk a reader decodes fills new buffers of about the chunk's size (its
//! values and offsets). The allocator gives such large blocks back to the kernel
//! when they are freed (glibc unmaps or trims them; mimalloc measured worse), so
//! each chunk faults its pages in again and a conversion's minor page faults grow
//! with the rows it reads. A [`Recycler`] keeps the buffers that a read's arrays
//! release, up to a byte limit, and fills the next chunks' from them: their pages
//! are faulted in once.
//!
//! An array made from a kept buffer holds it through a [`Buffer`] whose owner
//! returns it to the recycler when the last reference goes (to nowhere if the
//! recycler is gone by then). Buffers under [`MIN_KEPT`] bytes are left to the
//! allocator, which reuses small blocks well.
//!
//! An engine that accounts for a scan's memory gives its recycler a
//! [`KeptBudget`]: a buffer is kept only while the budget grants its bytes (a
//! DataFusion scan's is a reservation in the session's memory pool).

use std::sync::{Arc, Mutex, PoisonError, Weak};

use arrow_buffer::{Buffer, MutableBuffer};

/// The released buffers a reader keeps for its next chunks, at most: about its
/// read-ahead's worth. They live as long as the reader (or its context) does.
pub(crate) const BUFFER_REUSE_BYTES: usize = 256 << 20;

/// The smallest buffer worth keeping.
pub(crate) const MIN_KEPT: usize = 1 << 20;

/// Buffers kept for reuse, up to a byte limit: see the module docs. Made by
/// [`ExecutionContext::with_buffer_reuse`](crate::ExecutionContext::with_buffer_reuse).
#[derive(Debug)]
pub struct Recycler {
    limit: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    buffers: Vec<MutableBuffer>,
    bytes: usize,
    budget: Option<Box<dyn KeptBudget>>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("buffers", &self.buffers.len())
            .field("bytes", &self.bytes)
            .field("budget", &self.budget.is_some())
            .finish()
    }
}

impl Kept {
    /// Account for `bytes` kept in all: false (and nothing changed) when the
    /// budget cannot grant them.
    fn resize(&mut self, bytes: usize) -> bool {
        let granted = self.budget.as_mut().is_none_or(|b| b.resize(bytes));
        if granted {
            self.bytes = bytes;
        }
        granted
    }
}

/// What a [`Recycler`] may keep, beyond its limit: asked before a buffer is kept
/// and told when one leaves.
pub(crate) trait KeptBudget: Send {
    /// Hold `bytes` in all (more or fewer than before); false when it cannot.
    fn resize(&mut self, bytes: usize) -> bool;
}

impl Recycler {
    /// A recycler that keeps up to `limit` bytes of released buffers.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            kept: Mutex::new(Kept::default()),
        })
    }

    /// A reader's (or context's) recycler by default: up to
    /// [`BUFFER_REUSE_BYTES`].
    pub(crate) fn for_reader() -> Arc<Self> {
        Self::new(BUFFER_REUSE_BYTES)
    }

    /// A recycler that keeps up to `limit` bytes, and only what `budget` grants.
    #[cfg_attr(not(feature = "datafusion"), allow(dead_code))]
    pub(crate) fn with_budget(limit: usize, budget: Box<dyn KeptBudget>) -> Arc<Self> {
        Arc::new(Self {
            limit,
            kept: Mutex::new(Kept {
                budget: Some(budget),
                ..Kept::default()
            }),
        })
    }

    /// An empty buffer with room for at least `capacity` bytes: the smallest kept
    /// one that fits and is at most twice the size, else a new one.
    pub(crate) fn take(&self, capacity: usize) -> MutableBuffer {
        if capacity >= MIN_KEPT {
            // Chunks of one array ask for about the same size, a little more or
            // less each time: whole MiBs, so that one's buffer fits the next.
            let capacity = capacity.next_multiple_of(MIN_KEPT);
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            let best = kept
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= capacity && b.capacity() / 2 <= capacity)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(i, _)| i);
            if let Some(i) = best {
                let buffer = kept.buffers.swap_remove(i);
                kept.bytes -= buffer.capacity();
                let bytes = kept.bytes;
                if let Some(budget) = kept.budget.as_mut() {
                    // Fewer bytes: nothing to refuse.
                    budget.resize(bytes);
                }
                return buffer;
            }
            return MutableBuffer::with_capacity(capacity);
        }
        MutableBuffer::with_capacity(capacity)
    }

    /// `buffer`'s bytes as an immutable [`Buffer`] that gives its memory back to
    /// this recycler when the last reference to it is dropped.
    pub(crate) fn freeze(self: &Arc<Self>, buffer: MutableBuffer) -> Buffer {
        if buffer.capacity() < MIN_KEPT {
            return buffer.into();
        }
        let (ptr, len) = (buffer.as_ptr(), buffer.len());
        let owner = Arc::new(Returned {
            buffer: Some(buffer),
            to: Arc::downgrade(self),
        });
        // SAFETY: `ptr` points at the `len` initialized bytes of `buffer`, which
        // `owner` holds (and never touches) until the last `Buffer` made from
        // this allocation is dropped; a MutableBuffer's memory does not move
        // while it is not written to. `ptr` is not null: a MutableBuffer's
        // pointer never is (dangling but aligned when empty, with `len` 0).
        unsafe {
            Buffer::from_custom_allocation(
                std::ptr::NonNull::new_unchecked(ptr.cast_mut()),
                len,
                owner,
            )
        }
    }

    /// Keep `buffer` (emptied) for a later [`Recycler::take`], if it fits the
    /// limit and the budget; otherwise it is freed.
    pub(crate) fn give(&self, mut buffer: MutableBuffer) {
        buffer.clear();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = kept.bytes + buffer.capacity();
        if bytes <= self.limit && kept.resize(bytes) {
            kept.buffers.push(buffer);
        }
    }

    /// Bytes kept now.
    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }
}

/// The owner of a kept buffer's bytes while arrays use them.
struct Returned {
    buffer: Option<MutableBuffer>,
    to: Weak<Recycler>,
}

impl std::panic::RefUnwindSafe for Returned {}

impl Drop for Returned {
    fn drop(&mut self) {
        if let (Some(buffer), Some(to)) = (self.buffer.take(), self.to.upgrade()) {
            to.give(buffer);
        }
    }
}

/// A new buffer for at least `capacity` bytes: from `recycler` if there is one.
pub(crate) fn take(recycler: Option<&Arc<Recycler>>, capacity: usize) -> MutableBuffer {
    match recycler {
        Some(r) => r.take(capacity),
        None => MutableBuffer::with_capacity(capacity),
    }
}

/// `buffer` frozen: given back to `recycler`, if there is one, when released.
pub(crate) fn freeze(recycler: Option<&Arc<Recycler>>, buffer: MutableBuffer) -> Buffer {
    match recycler {
        Some(r) => r.freeze(buffer),
        None => buffer.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_buffer_fills_the_next_request_of_its_size() {
        let recycler = Recycler::new(8 << 20);
        let mut first = recycler.take(2 << 20);
        first.extend_from_slice(&[7u8; 100]);
        let address = first.as_ptr();
        let frozen = recycler.freeze(first);
        assert_eq!(frozen.as_slice(), &[7u8; 100]);
        let slice = frozen.slice(10);
        drop(frozen);
        // A slice still holds it.
        assert_eq!(recycler.kept_bytes(), 0);
        drop(slice);
        assert!(recycler.kept_bytes() >= 2 << 20);
        // Too big a kept buffer for a small request, or too small: not used.
        assert_ne!(recycler.take(MIN_KEPT / 2).as_ptr(), address);
        assert_ne!(recycler.take(8 << 20).as_ptr(), address);
        let again = recycler.take((3 << 20) / 2);
        assert_eq!(again.as_ptr(), address);
        assert!(again.is_empty());
        assert_eq!(recycler.kept_bytes(), 0);
    }

    #[test]
    fn the_limit_bounds_what_is_kept_and_a_dropped_recycler_keeps_nothing() {
        let recycler = Recycler::new(3 << 20);
        let a = recycler.freeze(recycler.take(2 << 20));
        let b = recycler.freeze(recycler.take(2 << 20));
        drop(a);
        drop(b);
        let kept = recycler.kept_bytes();
        assert!((2 << 20..=3 << 20).contains(&kept), "{kept}");
        let c = recycler.freeze(MutableBuffer::with_capacity(2 << 20));
        drop(recycler);
        drop(c); // freed, not returned
    }

    /// A budget that grants up to its own limit and records what it holds.
    struct Granted {
        limit: usize,
        held: Arc<Mutex<usize>>,
    }

    impl KeptBudget for Granted {
        fn resize(&mut self, bytes: usize) -> bool {
            let ok = bytes <= self.limit;
            if ok {
                *self.held.lock().unwrap() = bytes;
            }
            ok
        }
    }

    #[test]
    fn a_budget_decides_what_is_kept_and_hears_of_each_buffer_taken_back() {
        let held = Arc::new(Mutex::new(0));
        let budget = Granted {
            limit: 5 << 20,
            held: held.clone(),
        };
        let recycler = Recycler::with_budget(64 << 20, Box::new(budget));
        let (a, b, c) = (
            recycler.freeze(recycler.take(2 << 20)),
            recycler.freeze(recycler.take(2 << 20)),
            recycler.freeze(recycler.take(2 << 20)),
        );
        drop((a, b, c));
        // Two fit the budget's 5 MiB, the third was freed.
        assert_eq!(recycler.kept_bytes(), 4 << 20);
        assert_eq!(*held.lock().unwrap(), 4 << 20);
        let again = recycler.take(2 << 20);
        assert_eq!(recycler.kept_bytes(), 2 << 20);
        assert_eq!(*held.lock().unwrap(), 2 << 20);
        drop(again);
    }
}
