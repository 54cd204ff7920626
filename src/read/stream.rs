//! Blocking readers as async `Stream`s (feature `async`).
//!
//! A reader runs on a thread of its own, at most `buffer` batches ahead of the
//! consumer, so that an async caller (a DataFusion plan, say) never blocks its
//! executor on I/O or decoding. Dropping the stream stops the reader after the
//! batch in hand.

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

use crate::error::{Error, Result};

/// Open a reader with `open` on a new thread and stream its batches: an error
/// from `open` is the stream's only item.
pub(crate) fn spawn<I>(
    open: impl FnOnce() -> Result<I> + Send + 'static,
    buffer: usize,
) -> impl futures::Stream<Item = Result<RecordBatch>> + Send + 'static
where
    I: Iterator<Item = std::result::Result<RecordBatch, ArrowError>>,
{
    let (sender, mut receiver) = tokio::sync::mpsc::channel(buffer.max(1));
    std::thread::spawn(move || {
        let reader = match open() {
            Ok(reader) => reader,
            Err(e) => {
                let _ = sender.blocking_send(Err(e));
                return;
            }
        };
        for batch in reader {
            // The consumer is gone: stop reading.
            if sender.blocking_send(batch.map_err(Error::from)).is_err() {
                break;
            }
        }
    });
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}
