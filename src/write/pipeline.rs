//! [`Pipeline`]: chunks are encoded, compressed and stored on rayon's pool while
//! the caller goes on reading its input and cutting the next chunks.
//!
//! ```text
//! caller:  batch ─▶ cut chunk 0 ─▶ batch ─▶ cut chunk 1 ─▶ batch ─▶ …
//! pool:                 └─▶ encode+store 0     └─▶ encode+store 1
//! ```
//!
//! At most `limit` chunks (one per core, plus one) are in flight, so memory stays bounded by a
//! few chunks however fast the input arrives. A failed chunk is reported by the
//! next [`Pipeline::submit`] or by [`Pipeline::finish`]. Dropping a pipeline (for
//! example after an error) waits for its running tasks, so nothing is written to
//! the store after the writer that owns it is gone.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};

use crate::error::{Error, Result};

/// A bounded set of chunk tasks running on rayon's global pool.
#[derive(Debug)]
pub(crate) struct Pipeline {
    limit: usize,
    in_flight: usize,
    sender: Sender<Result<()>>,
    receiver: Receiver<Result<()>>,
    /// The first error seen, kept until it has been reported.
    failed: Option<Error>,
}

impl Default for Pipeline {
    fn default() -> Self {
        // One task per core keeps every core busy; one more lets the next chunk
        // start the moment a core frees up.
        Self::with_limit(rayon::current_num_threads() + 1)
    }
}

impl Pipeline {
    /// A pipeline with at most `limit` (at least 1) chunks in flight.
    pub(crate) fn with_limit(limit: usize) -> Self {
        let (sender, receiver) = channel();
        Self {
            limit: limit.max(1),
            in_flight: 0,
            sender,
            receiver,
            failed: None,
        }
    }

    /// Run `task` on the pool, first waiting for a slot when `limit` tasks are in
    /// flight. Returns the error of an earlier task, if one failed.
    ///
    /// Called from inside a rayon worker, `task` runs inline instead: blocking a
    /// worker on tasks queued behind it could deadlock a small pool.
    pub(crate) fn submit(
        &mut self,
        task: impl FnOnce() -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.collect_finished();
        while self.failed.is_none() && self.in_flight >= self.limit {
            self.wait_one();
        }
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        if rayon::current_thread_index().is_some() {
            return task();
        }
        let sender = self.sender.clone();
        self.in_flight += 1;
        rayon::spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(task)).unwrap_or_else(|_| {
                Err(Error::Panicked {
                    task: "chunk encoder",
                })
            });
            // The receiver lives as long as the pipeline, which waits for us.
            let _ = sender.send(result);
        });
        Ok(())
    }

    /// Wait for every task; the first error among them, or of an earlier one.
    pub(crate) fn finish(&mut self) -> Result<()> {
        while self.in_flight > 0 {
            self.wait_one();
        }
        match self.failed.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn collect_finished(&mut self) {
        while self.in_flight > 0 {
            match self.receiver.try_recv() {
                Ok(result) => self.record(result),
                Err(_) => break,
            }
        }
    }

    fn wait_one(&mut self) {
        // `recv` cannot fail: `self.sender` keeps the channel open.
        if let Ok(result) = self.receiver.recv() {
            self.record(result);
        }
    }

    fn record(&mut self, result: Result<()>) {
        self.in_flight -= 1;
        if let (Err(error), None) = (result, &self.failed) {
            self.failed = Some(error);
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        while self.in_flight > 0 {
            self.wait_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn runs_every_task_and_bounds_those_in_flight() {
        let mut pipeline = Pipeline::with_limit(2);
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        for _ in 0..20 {
            let (running, peak, done) = (running.clone(), peak.clone(), done.clone());
            pipeline
                .submit(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
        }
        pipeline.finish().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 20);
        assert!(peak.load(Ordering::SeqCst) <= 2);
    }

    #[test]
    fn a_failed_task_is_reported_and_drop_waits_for_the_rest() {
        let done = Arc::new(AtomicUsize::new(0));
        let mut pipeline = Pipeline::with_limit(3);
        pipeline
            .submit(|| Err(Error::Internal { what: "boom" }))
            .unwrap();
        let mut reported = false;
        for _ in 0..10 {
            let done = done.clone();
            let submitted = pipeline.submit(move || {
                std::thread::sleep(Duration::from_millis(5));
                done.fetch_add(1, Ordering::SeqCst);
                Ok(())
            });
            if submitted.is_err() {
                reported = true;
                break;
            }
        }
        let finished = pipeline.finish();
        assert!(reported || finished.is_err(), "the failure was lost");
        let started = done.load(Ordering::SeqCst);
        let mut pipeline = Pipeline::with_limit(3);
        for _ in 0..3 {
            let done = done.clone();
            pipeline
                .submit(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    done.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                })
                .unwrap();
        }
        drop(pipeline);
        assert_eq!(
            done.load(Ordering::SeqCst),
            started + 3,
            "drop returned early"
        );
    }

    #[test]
    fn a_panicking_task_becomes_an_error() {
        let mut pipeline = Pipeline::with_limit(1);
        pipeline.submit(|| panic!("encoder bug")).unwrap();
        assert!(pipeline.finish().is_err());
    }
}
