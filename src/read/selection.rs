//! [`Selection`]: the rows a read gives out of its row range (parquet's
//! `RowSelection`, as sorted row ranges), and how a decoded run is cut to them.
//!
//! ```text
//! rows    0 ─────────────────────────────────────────── n
//! chosen     [──)        [─)  [────────)
//! chunks  |─────────|─────────|─────────|─────────|
//!           read     read      read      never planned
//! ```
//!
//! A reader with a selection plans only the chunks that hold a chosen row, and
//! of each only the rows from its first chosen row to its last (a sharded
//! chunk's inner chunks outside them are never fetched); the decoded rows are
//! then cut to the chosen ones, as slices of the decoded arrays.

use std::ops::Range;

use arrow_array::{ArrayRef, BooleanArray};
use arrow_buffer::BooleanBufferBuilder;

use crate::error::Result;

/// Past this many chosen pieces in one decoded run, the run is filtered once
/// (one copy of the chosen rows) rather than cut into as many slices, each of
/// which a batch would concatenate.
const MAX_SLICES_PER_RUN: usize = 16;

/// Chosen rows: sorted, disjoint, non-empty ranges, none touching the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    ranges: Vec<Range<u64>>,
    /// `before[i]`: the chosen rows in `ranges[..i]`.
    before: Vec<u64>,
}

impl Selection {
    /// The rows of `ranges` (in any order, overlapping or not) that lie in
    /// `within`.
    pub(crate) fn new(ranges: impl IntoIterator<Item = Range<u64>>, within: Range<u64>) -> Self {
        let mut clipped: Vec<Range<u64>> = ranges
            .into_iter()
            .map(|r| r.start.max(within.start)..r.end.min(within.end))
            .filter(|r| r.start < r.end)
            .collect();
        clipped.sort_by_key(|r| r.start);
        let mut ranges: Vec<Range<u64>> = Vec::with_capacity(clipped.len());
        for r in clipped {
            match ranges.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => ranges.push(r),
            }
        }
        let mut before = Vec::with_capacity(ranges.len());
        let mut total = 0u64;
        for r in &ranges {
            before.push(total);
            total += r.end - r.start;
        }
        Self { ranges, before }
    }

    /// Every row of `rows`.
    pub(crate) fn all(rows: Range<u64>) -> Self {
        Self::new([rows.clone()], rows)
    }

    /// How many rows are chosen.
    pub(crate) fn len(&self) -> u64 {
        match (self.ranges.last(), self.before.last()) {
            (Some(r), Some(b)) => b + (r.end - r.start),
            _ => 0,
        }
    }

    /// The chosen ranges, in order.
    #[cfg(test)]
    pub(crate) fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// The row of the `i`-th chosen row (counting from 0); past the last, the
    /// end of the last range.
    pub(crate) fn row(&self, i: u64) -> u64 {
        // The last range that starts at or before the i-th chosen row.
        let k = self.before.partition_point(|&b| b <= i);
        match k.checked_sub(1) {
            Some(k) => (self.ranges[k].start + (i - self.before[k])).min(self.ranges[k].end),
            None => self.ranges.first().map_or(0, |r| r.start),
        }
    }

    /// The row just past the first `n` chosen rows (for `n` = 0, the first
    /// chosen row).
    pub(crate) fn end_of(&self, n: u64) -> u64 {
        match n.checked_sub(1) {
            Some(last) => self.row(last) + 1,
            None => self.row(0),
        }
    }

    /// The first chosen row at or after `row`.
    pub(crate) fn next_from(&self, row: u64) -> Option<u64> {
        let k = self.ranges.partition_point(|r| r.end <= row);
        self.ranges.get(k).map(|r| r.start.max(row))
    }

    /// The chosen parts of `rows`, in order.
    pub(crate) fn within(&self, rows: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let k = self.ranges.partition_point(|r| r.end <= rows.start);
        self.ranges[k..]
            .iter()
            .take_while(move |r| r.start < rows.end)
            .map(move |r| r.start.max(rows.start)..r.end.min(rows.end))
    }

    /// How many rows of `rows` are chosen.
    pub(crate) fn count(&self, rows: Range<u64>) -> u64 {
        self.within(rows).map(|r| r.end - r.start).sum()
    }
}

/// The rows `keep` (relative to the same origin as `start`, the first row of
/// `runs`) of consecutive decoded `runs`: slices, or, where a run holds many
/// pieces, the run filtered to them.
pub(crate) fn cut_runs(
    runs: Vec<ArrayRef>,
    start: u64,
    keep: &[Range<u64>],
) -> Result<Vec<ArrayRef>> {
    let mut out = Vec::new();
    let mut at = start;
    for run in runs {
        let len = run.len() as u64;
        let span = at..at + len;
        let pieces: Vec<Range<u64>> = keep
            .iter()
            .filter(|r| r.start < span.end && r.end > span.start)
            .map(|r| r.start.max(span.start) - at..r.end.min(span.end) - at)
            .collect();
        at = span.end;
        match pieces.as_slice() {
            [] => {}
            [whole] if whole.start == 0 && whole.end == len => out.push(run),
            pieces if pieces.len() <= MAX_SLICES_PER_RUN => out.extend(
                pieces
                    .iter()
                    .map(|p| run.slice(p.start as usize, (p.end - p.start) as usize)),
            ),
            pieces => {
                let mut mask = BooleanBufferBuilder::new(run.len());
                let mut filled = 0;
                for p in pieces {
                    mask.append_n((p.start - filled) as usize, false);
                    mask.append_n((p.end - p.start) as usize, true);
                    filled = p.end;
                }
                mask.append_n((len - filled) as usize, false);
                let mask = BooleanArray::new(mask.finish(), None);
                out.push(arrow_select::filter::filter(run.as_ref(), &mask)?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, Int64Array};

    use super::*;

    #[test]
    fn merges_clips_and_counts() {
        let s = Selection::new([30..40, 5..10, 8..12, 12..13, 90..200], 0..100);
        assert_eq!(s.ranges(), &[5..13, 30..40, 90..100]);
        assert_eq!(s.len(), 8 + 10 + 10);
        assert_eq!(s.row(0), 5);
        assert_eq!(s.row(7), 12);
        assert_eq!(s.row(8), 30);
        assert_eq!(s.row(27), 99);
        assert_eq!(s.row(28), 100);
        assert_eq!(s.end_of(0), 5);
        assert_eq!(s.end_of(8), 13);
        assert_eq!(s.end_of(28), 100);
        assert_eq!(s.next_from(0), Some(5));
        assert_eq!(s.next_from(13), Some(30));
        assert_eq!(s.next_from(35), Some(35));
        assert_eq!(s.next_from(100), None);
        assert_eq!(s.count(0..100), 28);
        assert_eq!(s.count(10..35), 3 + 5);
        assert_eq!(
            s.within(10..95).collect::<Vec<_>>(),
            vec![10..13, 30..40, 90..95]
        );
        assert_eq!(Selection::new([], 0..10).len(), 0);
        assert_eq!(Selection::all(3..9).ranges(), std::slice::from_ref(&(3..9)));
    }

    /// Every row of every run is kept exactly when a range keeps it, in
    /// order, whether sliced or filtered.
    #[test]
    fn cuts_runs_to_the_chosen_rows() {
        let runs: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(100..140)),
            Arc::new(Int64Array::from_iter_values(140..150)),
        ];
        let sparse: Vec<Range<u64>> = (0..25).map(|i| 100 + i * 2..101 + i * 2).collect();
        let whole: Vec<Range<u64>> = std::iter::once(100..150).collect();
        for keep in [vec![102..105, 138..143], whole, sparse, vec![]] {
            let cut = cut_runs(runs.clone(), 100, &keep).unwrap();
            let got: Vec<i64> = cut
                .iter()
                .flat_map(|a| a.as_primitive::<Int64Type>().values().to_vec())
                .collect();
            let want: Vec<i64> = (100..150)
                .filter(|v| keep.iter().any(|r| r.contains(&(*v as u64))))
                .collect();
            assert_eq!(got, want, "{keep:?}");
            assert!(cut.iter().all(|a| !a.is_empty()));
        }
    }

    /// A selection reads exactly its rows, whatever the layout (chunks,
    /// shards read in part, strings with nulls), and never a chunk (or
    /// shard) without a chosen row: those are overwritten with garbage, so
    /// reading one would fail.
    #[test]
    fn reads_only_chunks_holding_a_chosen_row() {
        use arrow_array::{RecordBatch, RecordBatchIterator, StringArray};
        use arrow_schema::{DataType, Field, Schema};

        use crate::store::{MemoryStore, Store};
        use crate::write::{WriteOptions, write_batches};

        let n = 200u64;
        let ints: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n as i64).map(|v| (v % 7 != 3).then_some(v)),
        ));
        let strings: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|v| (v % 5 != 1).then(|| format!("s{v}"))),
        ));
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(schema.clone(), vec![ints, strings]).unwrap();
        let choices: Vec<Vec<Range<u64>>> = vec![
            vec![3..4],
            vec![0..2, 37..41, 42..44, 120..121, 199..200],
            (0..40).map(|i| i * 5..i * 5 + 1).collect(),
            vec![],
            vec![0..200],
        ];
        for (chunk_len, shard_len) in [(10, None), (5, Some(20))] {
            for chosen in &choices {
                let store = Arc::new(MemoryStore::new());
                // anndata's nullable columns: values and a mask, two arrays
                // a column's rows are read from.
                let options = WriteOptions {
                    chunk_len: Some(chunk_len),
                    shard_len,
                    layout: crate::write::Layout::AnnData,
                    stats: false,
                    ..WriteOptions::default()
                };
                let reader = RecordBatchIterator::new([Ok(batch.clone())], schema.clone());
                write_batches(reader, store.clone(), "t", options).unwrap();
                // The stored objects (chunks or shards) holding no chosen row.
                let per_object = shard_len.unwrap_or(chunk_len) as u64;
                let (mut corrupted, mut arrays) = (0, std::collections::BTreeSet::new());
                for key in store.list_prefix("t/").unwrap() {
                    let (array, last) = key.rsplit_once('/').unwrap();
                    let Ok(index) = last.parse::<u64>() else {
                        continue;
                    };
                    arrays.insert(array.to_string());
                    let rows = index * per_object..(index + 1) * per_object;
                    if !chosen
                        .iter()
                        .any(|r| r.start < rows.end && r.end > rows.start)
                    {
                        store.set(&key, b"not a chunk").unwrap();
                        corrupted += 1;
                    }
                }
                // A column's values and mask, and the frame's index.
                let arrays = arrays.len() as u64;
                assert_eq!(arrays, 5);
                let objects = n.div_ceil(per_object) * arrays;
                let untouched = chosen
                    .iter()
                    .flat_map(|r| r.start / per_object..(r.end - 1) / per_object + 1)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len() as u64;
                assert_eq!(corrupted, objects - untouched * arrays, "{chosen:?}");
                let group = crate::ZarrGroup::open(store, "t").unwrap();
                let reader = group
                    .reader()
                    .with_projection(["i", "s"])
                    .with_row_selection(chosen.clone())
                    .build()
                    .unwrap();
                let rows: Vec<u64> = chosen.iter().flat_map(|r| r.clone()).collect();
                assert_eq!(reader.total_rows(), rows.len() as u64);
                let got: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
                let got = arrow_select::concat::concat_batches(&schema, &got).unwrap();
                let got = RecordBatch::try_new(schema.clone(), got.columns().to_vec()).unwrap();
                let indices = arrow_array::UInt64Array::from(rows);
                let want = arrow_select::take::take_record_batch(&batch, &indices).unwrap();
                assert_eq!(got, want, "{chunk_len} {shard_len:?} {chosen:?}");
            }
        }
    }
}
