//! Ranged reads: several byte ranges of one value, nearby ones fetched together.
//!
//! ```text
//! asked:    [a    )   [b  )                          [c   )
//! fetched:  [a ......... b)                          [c   )   (gap a..b < COALESCE_GAP)
//! returned: a, b, c: slices of the fetched buffers, in the order asked
//! ```

use std::ops::Range;

use arrow_buffer::Buffer;

use super::check_range;
use crate::error::Result;

/// Ranges closer than this many bytes are fetched as one request (object_store's
/// default for `get_ranges`): reading a gap costs less than a second request.
pub(crate) const COALESCE_GAP: u64 = 1 << 20;

/// A byte range of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ByteRange {
    /// Bytes `start..end`.
    Bounded(Range<u64>),
    /// The last `n` bytes (all of them when the value is shorter).
    Suffix(u64),
}

/// Ranges of one value as fetched: one buffer per range asked, and the value's
/// whole length (which a suffix read needs to place what it got).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RangeRead {
    /// The bytes of each range, in the order asked.
    pub buffers: Vec<Buffer>,
    /// The length of the whole value.
    pub value_len: u64,
}

impl RangeRead {
    /// A read of `buffers` from a value of `value_len` bytes.
    pub fn new(buffers: Vec<Buffer>, value_len: u64) -> Self {
        Self { buffers, value_len }
    }
}

/// `ranges` as bounded ranges of a value of `len` bytes, each checked against it.
pub(crate) fn resolve(key: &str, ranges: &[ByteRange], len: u64) -> Result<Vec<Range<u64>>> {
    ranges
        .iter()
        .map(|r| {
            let r = match r {
                ByteRange::Bounded(r) => r.clone(),
                ByteRange::Suffix(n) => len.saturating_sub(*n)..len,
            };
            check_range(key, &r, len)?;
            Ok(r)
        })
        .collect()
}

/// The ranges to fetch for `ranges`: sorted, overlapping or nearer than `gap`
/// merged.
pub(crate) fn coalesce(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// `ranges` of `value` (all of it in memory, or mapped) at `key`: slices, no copy.
pub(crate) fn slice_ranges(key: &str, ranges: &[ByteRange], value: &Buffer) -> Result<RangeRead> {
    let len = value.len() as u64;
    let buffers = resolve(key, ranges, len)?
        .iter()
        .map(|r| value.slice_with_length(r.start as usize, (r.end - r.start) as usize))
        .collect();
    Ok(RangeRead::new(buffers, len))
}

/// `ranges` of a value of `len` bytes at `key`: resolved, nearby ones merged and
/// each merged range fetched once with `fetch`, then split back in the order
/// asked. `None` when `fetch` finds the value gone.
pub(crate) fn read_coalesced(
    key: &str,
    ranges: &[ByteRange],
    len: u64,
    mut fetch: impl FnMut(Range<u64>) -> Result<Option<Buffer>>,
) -> Result<Option<RangeRead>> {
    let wanted = resolve(key, ranges, len)?;
    let merged = coalesce(&wanted, COALESCE_GAP);
    let mut fetched = Vec::with_capacity(merged.len());
    for range in &merged {
        match fetch(range.clone())? {
            Some(buffer) => fetched.push(buffer),
            None => return Ok(None),
        }
    }
    Ok(Some(RangeRead::new(split(&wanted, &merged, &fetched), len)))
}

/// Each of `ranges` as a slice of the fetched `merged` ranges (`buffers`), which
/// cover them all (empty ranges are empty buffers).
pub(crate) fn split(
    ranges: &[Range<u64>],
    merged: &[Range<u64>],
    buffers: &[Buffer],
) -> Vec<Buffer> {
    ranges
        .iter()
        .map(|r| {
            let found = merged
                .iter()
                .zip(buffers)
                .find(|(m, _)| m.start <= r.start && r.end <= m.end);
            match found {
                Some((m, b)) if !r.is_empty() => {
                    b.slice_with_length((r.start - m.start) as usize, (r.end - r.start) as usize)
                }
                _ => Buffer::from_vec(Vec::<u8>::new()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearby_ranges_merge_and_split_back() {
        let ranges = [30..40, 0..10, 12..20, 100..110, 5..8, 50..50];
        let merged = coalesce(&ranges, 5);
        assert_eq!(merged, vec![0..20, 30..40, 100..110]);
        let value: Vec<u8> = (0..120u8).collect();
        let buffers: Vec<Buffer> = merged
            .iter()
            .map(|m| Buffer::from_slice_ref(&value[m.start as usize..m.end as usize]))
            .collect();
        let parts = split(&ranges, &merged, &buffers);
        for (r, part) in ranges.iter().zip(&parts) {
            assert_eq!(part.as_slice(), &value[r.start as usize..r.end as usize]);
        }
        assert_eq!(coalesce(&[0..10, 11..20], 0), vec![0..10, 11..20]);
        assert_eq!(coalesce(&[0..10, 10..20], 0), vec![0..20]);
    }

    #[test]
    fn suffixes_resolve_against_the_length() {
        let got = resolve("k", &[ByteRange::Suffix(4), ByteRange::Suffix(99)], 10).unwrap();
        assert_eq!(got, vec![6..10, 0..10]);
        assert!(resolve("k", &[ByteRange::Bounded(5..11)], 10).is_err());
    }
}
