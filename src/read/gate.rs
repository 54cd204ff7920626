//! How many chunks a remote store's readers decode at once.
//!
//! A remote read runs each chunk on a thread of a fetch pool (many threads: a
//! request mostly waits). Left alone, every thread whose bytes arrived would
//! decode at once: with 32 requests in flight on 2 cores, 32 decoders share the
//! cores, all finish near the end, and the reader's first batch waits for the
//! last chunk. The gate lets one decoder per core run, the earliest started read
//! first, so chunks finish in about the order the reader wants them, and the
//! decoded window stays that of the chunks it has consumed.
//!
//! ```text
//! reader: plan (ticket) ─▶ fetch thread: start ─▶ fetch ─▶ [gate: earliest ticket, a free core] ─▶ decode
//! ```
//!
//! Only decoding (pure CPU, no waiting, no nested reads) runs inside the gate, so
//! a thread holding a permit never waits for another.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// A new place in line: earlier tickets decode first.
pub(crate) fn ticket() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    /// The ticket of the read this thread runs for, set by [`in_line`].
    static LINE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Run `f` with reads in it taking `ticket`'s place in line: a reader takes its
/// tickets when it plans its chunks, in row order, and the threads that run
/// them start in any order.
pub(crate) fn in_line<T>(ticket: u64, f: impl FnOnce() -> T) -> T {
    let before = LINE.replace(Some(ticket));
    let _restore = Restore(before);
    f()
}

/// The place in line of a read starting on this thread: its [`in_line`]
/// ticket, else a new one.
pub(crate) fn current() -> u64 {
    LINE.get().unwrap_or_else(ticket)
}

struct Restore(Option<u64>);

impl Drop for Restore {
    fn drop(&mut self) {
        LINE.set(self.0);
    }
}

/// The process's gate: one permit per core.
pub(crate) fn global() -> &'static DecodeGate {
    static GATE: OnceLock<DecodeGate> = OnceLock::new();
    GATE.get_or_init(|| {
        DecodeGate::new(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
    })
}

/// At most `permits` closures at once, the smallest waiting ticket first.
#[derive(Debug)]
pub(crate) struct DecodeGate {
    permits: usize,
    state: Mutex<State>,
    turn: Condvar,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    /// The waiting reads: (ticket, arrival), unique even when two reads share a
    /// ticket.
    waiting: BTreeSet<(u64, u64)>,
    arrivals: u64,
}

impl DecodeGate {
    pub(crate) fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            state: Mutex::default(),
            turn: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` when a permit is free and no smaller ticket waits for one.
    pub(crate) fn run<T>(&self, ticket: u64, f: impl FnOnce() -> T) -> T {
        let mut state = self.lock();
        let place = (ticket, state.arrivals);
        state.arrivals += 1;
        state.waiting.insert(place);
        while state.running >= self.permits || state.waiting.first() != Some(&place) {
            state = self
                .turn
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.waiting.remove(&place);
        state.running += 1;
        drop(state);
        // The next smallest ticket may take a second free permit.
        self.turn.notify_all();
        let _release = Release(self);
        f()
    }
}

/// Gives the permit back, also when `f` panics.
struct Release<'a>(&'a DecodeGate);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.lock().running -= 1;
        self.0.turn.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, Instant};

    #[test]
    fn no_more_than_the_permits_run_at_once() {
        let gate = Arc::new(DecodeGate::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let (gate, running, most, started) =
                    (gate.clone(), running.clone(), most.clone(), started.clone());
                std::thread::spawn(move || {
                    gate.run(t, || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        let started = started.fetch_add(1, Ordering::SeqCst) + 1;
                        // Stay until a second one runs (the last may have none), or
                        // a while: on a busy machine a short sleep could end
                        // before the next one starts.
                        let until = Instant::now() + Duration::from_secs(5);
                        while running.load(Ordering::SeqCst) < 2
                            && started < 8
                            && Instant::now() < until
                        {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        std::thread::sleep(Duration::from_millis(2));
                        running.fetch_sub(1, Ordering::SeqCst);
                    });
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_smallest_waiting_ticket_goes_first() {
        let gate = Arc::new(DecodeGate::new(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let (hold, release) = std::sync::mpsc::channel::<()>();
        // Ticket 0 holds the only permit while 3, 1 and 2 line up, in that order.
        let first = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.run(0, || release.recv().unwrap()))
        };
        // Only once ticket 0 holds it: a waiter that came first would take it.
        while gate.lock().running == 0 {
            std::thread::yield_now();
        }
        let waiters: Vec<_> = [3u64, 1, 2]
            .into_iter()
            .map(|t| {
                let (waiter, order) = (gate.clone(), order.clone());
                let handle =
                    std::thread::spawn(move || waiter.run(t, || order.lock().unwrap().push(t)));
                while !gate.lock().waiting.iter().any(|&(w, _)| w == t) {
                    std::thread::yield_now();
                }
                handle
            })
            .collect();
        hold.send(()).unwrap();
        first.join().unwrap();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn reads_that_share_a_ticket_each_get_their_turn() {
        let gate = Arc::new(DecodeGate::new(1));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let gate = gate.clone();
                std::thread::spawn(move || {
                    gate.run(5, || std::thread::sleep(Duration::from_millis(2)))
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(gate.lock().waiting.is_empty());
    }

    #[test]
    fn a_panic_gives_the_permit_back() {
        let gate = DecodeGate::new(1);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gate.run(0, || panic!("a decoder panicked"))
        }));
        assert!(panicked.is_err());
        assert_eq!(gate.run(1, || 7), 7);
    }
}
