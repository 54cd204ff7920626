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
//! With two cores or more, one permit is kept for the earliest read still to
//! decode (the *head*: the chunk the reader waits for) while its bytes are on the
//! way: a later chunk whose bytes came first decodes on the other cores, not on
//! all of them, so the head starts as soon as it arrives instead of after a whole
//! chunk's decoding.
//!
//! ```text
//! reader: plan (ticket) ─▶ fetch thread: join ─▶ fetch ─▶ [gate: earliest ticket, a free core] ─▶ decode
//! ```
//!
//! Only decoding (pure CPU, no waiting, no nested reads) runs inside the gate, so
//! a thread holding a permit never waits for another; a read leaves the line when
//! its [`Place`] drops, also on an error, so a kept permit is never kept for ever.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
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
    /// The reads in line and not decoding now (fetching or waiting): how many
    /// per ticket.
    pending: BTreeMap<u64, usize>,
}

impl State {
    fn pend(&mut self, ticket: u64) {
        *self.pending.entry(ticket).or_default() += 1;
    }

    fn unpend(&mut self, ticket: u64) {
        if let Some(n) = self.pending.get_mut(&ticket) {
            *n -= 1;
            if *n == 0 {
                self.pending.remove(&ticket);
            }
        }
    }
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

    /// Take a place in line for a read with `ticket`, before its first fetch.
    pub(crate) fn join(&self, ticket: u64) -> Place<'_> {
        self.lock().pend(ticket);
        Place { gate: self, ticket }
    }

    /// Run `f` once, in line with `ticket` (a read of one fetch).
    #[cfg(test)]
    pub(crate) fn run<T>(&self, ticket: u64, f: impl FnOnce() -> T) -> T {
        self.join(ticket).run(f)
    }

    /// Whether the read waiting at `place` may take a permit now: one is free,
    /// no smaller ticket waits, and it is the head or leaves a permit for it.
    fn may_run(&self, state: &State, place: (u64, u64)) -> bool {
        let head = state.pending.first_key_value().map(|(&t, _)| t);
        state.running < self.permits
            && state.waiting.first() == Some(&place)
            && (self.permits == 1 || state.running + 1 < self.permits || head == Some(place.0))
    }
}

/// A read's place in line, from before its first fetch until it is dropped.
pub(crate) struct Place<'a> {
    gate: &'a DecodeGate,
    ticket: u64,
}

impl Place<'_> {
    /// Run `f` (a decode) when [`DecodeGate::may_run`] lets it.
    pub(crate) fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        let gate = self.gate;
        let mut state = gate.lock();
        let place = (self.ticket, state.arrivals);
        state.arrivals += 1;
        state.waiting.insert(place);
        while !gate.may_run(&state, place) {
            state = gate
                .turn
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.waiting.remove(&place);
        state.running += 1;
        state.unpend(self.ticket);
        drop(state);
        // The next smallest ticket may take a second free permit, or be the head.
        gate.turn.notify_all();
        let _release = Release(self);
        f()
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.gate.lock().unpend(self.ticket);
        self.gate.turn.notify_all();
    }
}

/// Gives the permit back, also when `f` panics: the read is in line again
/// (fetching its next bytes, or leaving).
struct Release<'a, 'b>(&'a Place<'b>);

impl Drop for Release<'_, '_> {
    fn drop(&mut self) {
        let mut state = self.0.gate.lock();
        state.running -= 1;
        state.pend(self.0.ticket);
        drop(state);
        self.0.gate.turn.notify_all();
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

    /// Starts a thread running ticket `t` that holds its permit until `release`
    /// sends, and waits until it holds it.
    fn holder(
        gate: &Arc<DecodeGate>,
        t: u64,
    ) -> (std::thread::JoinHandle<()>, std::sync::mpsc::Sender<()>) {
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let before = gate.lock().running;
        let g = gate.clone();
        let handle = std::thread::spawn(move || g.run(t, || hold.recv().unwrap()));
        let until = Instant::now() + Duration::from_secs(10);
        while gate.lock().running == before {
            assert!(Instant::now() < until, "ticket {t} never took a permit");
            std::thread::yield_now();
        }
        (handle, release)
    }

    /// Starts a thread running ticket `t`, and waits until the gate has made it
    /// wait (it is seen in line only after being refused a permit).
    fn waiter(
        gate: &Arc<DecodeGate>,
        t: u64,
        ran: &Arc<AtomicUsize>,
    ) -> std::thread::JoinHandle<()> {
        let (g, ran) = (gate.clone(), ran.clone());
        let handle = std::thread::spawn(move || {
            g.run(t, || {
                ran.fetch_add(1, Ordering::SeqCst);
            });
        });
        let until = Instant::now() + Duration::from_secs(10);
        while !gate.lock().waiting.iter().any(|&(w, _)| w == t) {
            assert!(Instant::now() < until, "ticket {t} was never made to wait");
            std::thread::yield_now();
        }
        handle
    }

    #[test]
    fn a_permit_is_kept_for_the_head_while_its_bytes_are_on_the_way() {
        let gate = Arc::new(DecodeGate::new(2));
        // Ticket 0 is fetching; 1 came first and decodes; 2 must leave 0 a core.
        let head = gate.join(0);
        let (first, release) = holder(&gate, 1);
        let ran = Arc::new(AtomicUsize::new(0));
        let second = waiter(&gate, 2, &ran);
        // The head's bytes arrive: it decodes beside 1 at once.
        let beside = head.run(|| gate.lock().running);
        assert_eq!(beside, 2);
        drop(head);
        release.send(()).unwrap();
        first.join().unwrap();
        second.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(gate.lock().pending.is_empty());
    }

    #[test]
    fn a_head_that_leaves_without_decoding_frees_its_permit() {
        let gate = Arc::new(DecodeGate::new(2));
        let head = gate.join(0);
        let (first, release) = holder(&gate, 1);
        let ran = Arc::new(AtomicUsize::new(0));
        let second = waiter(&gate, 2, &ran);
        // The head's fetch failed: 2 takes the second permit while 1 still holds.
        drop(head);
        second.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(gate.lock().running, 1);
        release.send(()).unwrap();
        first.join().unwrap();
    }

    #[test]
    fn one_permit_is_never_kept_idle() {
        let gate = DecodeGate::new(1);
        let _head = gate.join(0);
        assert_eq!(gate.run(1, || 7), 7);
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
