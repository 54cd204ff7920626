//! A progress bar over a `RecordBatchReader` (stderr; hidden when not a terminal).

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use indicatif::{ProgressBar, ProgressStyle};

/// Counts rows through a progress bar on stderr (indicatif hides it when stderr is
/// not a terminal).
pub(crate) struct Progress<R> {
    inner: R,
    bar: ProgressBar,
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
        Self { inner, bar }
    }
}

impl<R: RecordBatchReader> Iterator for Progress<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.inner.next();
        match &item {
            Some(Ok(batch)) => self.bar.inc(batch.num_rows() as u64),
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
