//! The async driver of a [`RowDecoder`] (feature `async`): batches as a
//! `Stream`, on the caller's runtime.
//!
//! Requests go to an [`AsyncStore`], at most `concurrency` in flight (as
//! `buffer_unordered` keeps them); answers are pushed as they come, and the
//! decoder decodes them on rayon, whose threads bound the CPU apart from the
//! requests. No thread, no runtime of its own: dropping the stream drops the
//! requests in flight and asks for no more.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use arrow_array::RecordBatch;
use futures::stream::{FuturesUnordered, StreamExt};

use super::decoder::{DecodeResult, Fetched, Request, RowDecoder};
use crate::error::{Error, Result};
use crate::store::AsyncStore;

type Fetch = Pin<Box<dyn Future<Output = (u64, Result<Fetched>)> + Send>>;

/// A bound on what a read holds: after each step the driver asks for the bytes
/// its read-ahead holds ([`RowDecoder::buffered_bytes`]), and stops with the
/// budget's error ([`Error::MemoryExhausted`]) when it says no. An engine's
/// memory pool is one (DataFusion's `MemoryReservation`).
pub trait ReadBudget: Send {
    /// Hold `bytes` in all (more or fewer than before).
    ///
    /// # Errors
    /// [`Error::MemoryExhausted`] when the budget cannot give them.
    fn resize(&mut self, bytes: u64) -> Result<()>;
}

/// What the stream keeps between batches.
struct Driver {
    decoder: RowDecoder,
    store: Arc<dyn AsyncStore>,
    concurrency: usize,
    /// Requests the decoder handed out, not yet sent.
    queued: VecDeque<Request>,
    in_flight: FuturesUnordered<Fetch>,
    budget: Option<Box<dyn ReadBudget>>,
    done: bool,
}

/// What woke the driver while it waited.
enum Event {
    Fetched(u64, Result<Fetched>),
    Decoded,
}

/// Fetch what `request` asks of `store`.
pub(crate) async fn fetch(store: &dyn AsyncStore, request: &Request) -> Result<Fetched> {
    Ok(match &request.ranges {
        None => store
            .get_bounded(&request.key, request.max_len)
            .await?
            .map_or(Fetched::Missing, Fetched::Whole),
        Some(ranges) => store
            .get_ranges(&request.key, ranges)
            .await?
            .map_or(Fetched::Missing, Fetched::Ranges),
    })
}

impl Driver {
    /// Send queued requests while fewer than `concurrency` are in flight.
    fn send(&mut self) {
        while self.in_flight.len() < self.concurrency {
            let Some(request) = self.queued.pop_front() else {
                break;
            };
            let store = self.store.clone();
            self.in_flight.push(Box::pin(async move {
                let fetched = fetch(store.as_ref(), &request).await;
                (request.id, fetched)
            }));
        }
    }

    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let result = self.decoder.try_decode()?;
            if let Some(budget) = &mut self.budget {
                budget.resize(self.decoder.buffered_bytes())?;
            }
            match result {
                DecodeResult::Batch(batch) => return Ok(Some(batch)),
                DecodeResult::Finished => return Ok(None),
                DecodeResult::NeedsData(requests) if !requests.is_empty() => {
                    self.queued.extend(requests);
                    self.send();
                    continue;
                }
                DecodeResult::NeedsData(_) => {}
            }
            if self.in_flight.is_empty() && !self.decoder.is_decoding() {
                return Err(Error::Panicked {
                    task: "row decoder (waiting for nothing)",
                });
            }
            // Wait for an answer or a decoded chunk, whichever comes first.
            let event = futures::future::poll_fn(|cx| {
                if let Poll::Ready(Some((id, fetched))) = self.in_flight.poll_next_unpin(cx) {
                    return Poll::Ready(Event::Fetched(id, fetched));
                }
                if self.decoder.is_decoding() && self.decoder.poll_decoded(cx).is_ready() {
                    return Poll::Ready(Event::Decoded);
                }
                Poll::Pending
            })
            .await;
            if let Event::Fetched(id, fetched) = event {
                self.decoder.push(id, fetched?)?;
                self.send();
            }
        }
    }
}

/// Drive `decoder` through `store`, at most `concurrency` requests in flight,
/// its read-ahead held within `budget` when there is one.
pub(crate) fn drive(
    decoder: RowDecoder,
    store: Arc<dyn AsyncStore>,
    concurrency: usize,
    budget: Option<Box<dyn ReadBudget>>,
) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
    let driver = Driver {
        decoder,
        store,
        concurrency: concurrency.max(1),
        queued: VecDeque::new(),
        in_flight: FuturesUnordered::new(),
        budget,
        done: false,
    };
    futures::stream::unfold(driver, |mut driver| async move {
        if driver.done {
            return None;
        }
        match driver.next_batch().await {
            Ok(Some(batch)) => Some((Ok(batch), driver)),
            Ok(None) => None,
            Err(e) => {
                // Stop after the first error; the requests in flight are dropped.
                driver.done = true;
                driver.in_flight = FuturesUnordered::new();
                driver.queued.clear();
                if let Some(budget) = &mut driver.budget {
                    let _ = budget.resize(0);
                }
                Some((Err(e), driver))
            }
        }
    })
}
