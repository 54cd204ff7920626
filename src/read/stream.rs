//! The async driver of a [`RowDecoder`] (feature `async`): batches as a
//! `Stream`, on the caller's runtime.
//!
//! Requests go to an [`AsyncStore`], at most `concurrency` in flight (as
//! `buffer_unordered` keeps them); answers are pushed as they come, and their
//! [decode jobs](RowDecoder::decode_jobs) run on rayon, whose threads bound the
//! CPU apart from the requests: each sends its chunk back through a oneshot
//! channel, so the runtime's thread never blocks on a decode. A read of one
//! chunk is decoded inline (no pool to wake, no hand-off). No thread, no
//! runtime of its own: dropping the stream drops the requests in flight and
//! asks for no more.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use arrow_array::RecordBatch;
use futures::channel::oneshot;
use futures::stream::{FuturesUnordered, StreamExt};

use super::decoder::{DecodeJob, DecodeResult, DecodedChunk, Fetched, Request, RowDecoder};
use crate::error::{Error, Result};
use crate::store::AsyncStore;

type Fetch = Pin<Box<dyn Future<Output = (u64, Result<Fetched>)> + Send>>;

/// A bound on what a read holds: after each step the driver asks for the bytes
/// its read-ahead holds ([`RowDecoder::buffered_bytes`]), and stops with the
/// budget's error ([`Error::MemoryExhausted`]) when it says no. An engine's
/// memory pool is one (DataFusion's `MemoryReservation`).
pub(crate) trait ReadBudget: Send {
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
    /// Decode jobs on rayon (`None`: decoded inline, by `try_decode`).
    decoding: Option<FuturesUnordered<oneshot::Receiver<DecodedChunk>>>,
    budget: Option<Box<dyn ReadBudget>>,
    done: bool,
}

/// What woke the driver while it waited.
enum Event {
    Fetched(u64, Result<Fetched>),
    /// A decode job's chunk; `Err`: its task ended without one.
    Decoded(std::result::Result<DecodedChunk, oneshot::Canceled>),
}

/// Run `job` on rayon; its chunk comes back through the receiver.
fn spawn_decode(job: DecodeJob) -> oneshot::Receiver<DecodedChunk> {
    let (sender, receiver) = oneshot::channel();
    rayon::spawn(move || {
        // The stream may be gone (dropped early): nobody to tell.
        let _ = sender.send(job.run());
    });
    receiver
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
            let decoding = self.decoding.as_ref().map_or(0, FuturesUnordered::len);
            if self.in_flight.is_empty() && decoding == 0 {
                return Err(Error::Panicked {
                    task: "row decoder (waiting for nothing)",
                });
            }
            // Wait for an answer or a decoded chunk, whichever comes first.
            let event = futures::future::poll_fn(|cx| {
                if let Poll::Ready(Some((id, fetched))) = self.in_flight.poll_next_unpin(cx) {
                    return Poll::Ready(Event::Fetched(id, fetched));
                }
                if let Some(decoding) = &mut self.decoding
                    && let Poll::Ready(Some(decoded)) = decoding.poll_next_unpin(cx)
                {
                    return Poll::Ready(Event::Decoded(decoded));
                }
                Poll::Pending
            })
            .await;
            match event {
                Event::Fetched(id, fetched) => {
                    self.decoder.push(id, fetched?)?;
                    if let Some(decoding) = &mut self.decoding {
                        decoding.extend(self.decoder.decode_jobs().into_iter().map(spawn_decode));
                    }
                    self.send();
                }
                Event::Decoded(decoded) => {
                    let decoded = decoded.map_err(|_| Error::Panicked {
                        task: "chunk decoder",
                    })?;
                    self.decoder.push_decoded(decoded)?;
                }
            }
        }
    }
}

/// Drive `decoder` through `store`, at most `concurrency` requests in flight,
/// its chunks decoded on rayon when `parallel` (else inline), its read-ahead
/// held within `budget` when there is one.
pub(crate) fn drive(
    decoder: RowDecoder,
    store: Arc<dyn AsyncStore>,
    concurrency: usize,
    parallel: bool,
    budget: Option<Box<dyn ReadBudget>>,
) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static {
    let driver = Driver {
        decoder,
        store,
        concurrency: concurrency.max(1),
        queued: VecDeque::new(),
        in_flight: FuturesUnordered::new(),
        decoding: parallel.then(FuturesUnordered::new),
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
                driver.decoding = None;
                driver.queued.clear();
                if let Some(budget) = &mut driver.budget {
                    let _ = budget.resize(0);
                }
                Some((Err(e), driver))
            }
        }
    })
}
