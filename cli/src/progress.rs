//! Progress over a `RecordBatchReader` on stderr: a bar on a terminal; otherwise
//! (a log, a pipe) one line every [`LINE_EVERY`] once a conversion runs that long.

use std::io::Write as _;
use std::time::{Duration, Instant};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use indicatif::{ProgressBar, ProgressStyle};

/// How often a progress line is written when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// Counts rows through a progress bar on stderr.
pub(crate) struct Progress<R> {
    inner: R,
    bar: ProgressBar,
    total: Option<u64>,
    last_line: Instant,
}

impl<R: RecordBatchReader> Progress<R> {
    /// A bar to `total_rows`, or a spinner counting rows when the total is unknown.
    pub(crate) fn new(inner: R, total_rows: Option<u64>) -> Self {
        let (bar, template) = match total_rows {
            Some(total) => (
                ProgressBar::new(total),
                "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({eta})",
            ),
            None => (
                ProgressBar::new_spinner(),
                "{spinner} [{elapsed_precise}] {human_pos} rows",
            ),
        };
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self {
            inner,
            bar,
            total: total_rows,
            last_line: Instant::now(),
        }
    }

    /// Where no bar is drawn, a plain line now and then.
    fn line(&mut self) {
        if !self.bar.is_hidden() || self.last_line.elapsed() < LINE_EVERY {
            return;
        }
        self.last_line = Instant::now();
        let done = self.bar.position();
        let text = match self.total {
            Some(total) if total > 0 => format!(
                "zarrow: {done} of {total} rows ({:.1}%)",
                done as f64 * 100.0 / total as f64
            ),
            _ => format!("zarrow: {done} rows"),
        };
        let _ = writeln!(std::io::stderr(), "{text}");
    }
}

impl<R: RecordBatchReader> Iterator for Progress<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        match &item {
            Some(Ok(batch)) => {
                self.bar.inc(batch.num_rows() as u64);
                self.line();
            }
            _ => self.bar.finish_and_clear(),
        }
        item
    }
}

impl<R: RecordBatchReader> RecordBatchReader for Progress<R> {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
