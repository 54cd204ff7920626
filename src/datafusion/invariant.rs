//! The pruning invariant, checked on random data: **every chunk that chunk
//! statistics prune holds no row that the filter keeps**. Hidden: it serves
//! the property test (`tests/integration/prune_invariant.rs`) and the fuzz
//! target `prune` (fuzz/), which check a case drawn from a seed
//! ([`check_seed`]) or from the fuzzer's bytes ([`check_bytes`]).
//!
//! A case is a column of one type (every type statistics are recorded for,
//! and anndata categoricals of string, integer, float and boolean
//! categories), cut into chunks, and a random filter over it. Its statistics
//! are computed as the writers compute them (`ChunkStats`), written to a
//! statistics file and read back (`encode`, `decode`), and pruned with by
//! the scan's own code (`super::prune::kept_chunks`). The truth is
//! DataFusion's own physical expression evaluated over each chunk's rows.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, Float16Array, Float32Array,
    Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, cast, col, lit};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;

use super::filter::plan_locally;
use crate::stats::{ArrayStats, Bounds, ChunkStats, Header, decode, encode, stats_type};

/// Where a case's random choices come from.
pub(crate) trait Source {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `true` one time in `n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items`.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Seeded(pub(crate) u64);

impl Source for Seeded {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A fuzzer's bytes, eight at a time (zeros once they run out).
#[derive(Debug)]
pub(crate) struct FromBytes<'a>(pub(crate) &'a [u8]);

impl Source for FromBytes<'_> {
    fn next_u64(&mut self) -> u64 {
        let n = self.0.len().min(8);
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        u64::from_le_bytes(word)
    }
}

/// What one case found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Chunks of the column.
    pub chunks: usize,
    /// Chunks statistics pruned (none of which held a match).
    pub pruned: usize,
    /// Chunks holding a match (all kept).
    pub matching: usize,
    /// Pruned chunks whose rows the filter cannot evaluate (an overflowing
    /// cast, say): the query would have failed without statistics.
    pub pruned_errors: usize,
    /// The filter could not be typed or planned over the column: not a case.
    pub skipped: bool,
}

/// A column cut into chunks, and a filter over it.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// The column `x`, as a reader reads it.
    pub(crate) schema: SchemaRef,
    /// Its chunks' rows (all of `chunk_len` rows but the last).
    pub(crate) chunks: Vec<ArrayRef>,
    /// Rows per chunk.
    pub(crate) chunk_len: usize,
    /// An anndata categorical's codes per chunk and its categories (the
    /// statistics are the codes'); `None`: the values' own.
    pub(crate) categorical: Option<(Vec<ArrayRef>, ArrayRef)>,
    /// The filter, as a user writes it (typed before use).
    pub(crate) filter: Expr,
    /// Whether the filter is simplified as DataFusion's optimizer does
    /// before it reaches a scan (else only typed).
    pub(crate) simplify: bool,
}

/// A random case.
pub(crate) fn random_case(src: &mut impl Source) -> Case {
    let kind = random_kind(src);
    let chunk_len = *src.pick(&[1, 1, 2, 3, 4, 5, 8, 16]);
    let n_chunks = 1 + src.below(5);
    // The last chunk may be short.
    let last = 1 + src.below(chunk_len);
    let lens: Vec<usize> = (0..n_chunks)
        .map(|i| if i + 1 == n_chunks { last } else { chunk_len })
        .collect();
    let (schema, chunks, categorical) = match &kind {
        Kind::Plain(t) => {
            let mut pool = Pool::new(t, src);
            let chunks = lens
                .iter()
                .map(|&n| {
                    let nulls = *src.pick(&[0, 0, 0, 1, 2, 8]);
                    pool.array(t, n, nulls, src)
                })
                .collect::<Vec<_>>();
            (
                Schema::new(vec![Field::new("x", t.clone(), true)]),
                chunks,
                None,
            )
        }
        Kind::Categorical {
            codes,
            categories,
            values,
        } => {
            let cats = distinct_categories(categories, src);
            let n = cats.len() as i64;
            let codes: Vec<ArrayRef> = lens
                .iter()
                .map(|&len| {
                    let with_null = src.one_in(3);
                    let few = src.one_in(2);
                    let c: Vec<i64> = (0..len)
                        .map(|_| {
                            if with_null && src.one_in(3) {
                                -1
                            } else if few {
                                (src.below(2) as i64).min(n - 1)
                            } else {
                                src.below(n as usize) as i64
                            }
                        })
                        .collect();
                    arrow_cast::cast(&Int64Array::from(c), codes).expect("codes fit")
                })
                .collect();
            let chunks: Vec<ArrayRef> = codes
                .iter()
                .map(|c| {
                    if *values {
                        crate::conventions::anndata::categorical_values(c, &cats)
                    } else {
                        crate::conventions::anndata::categorical(c, &cats)
                    }
                    .expect("codes in range")
                })
                .collect();
            let t = chunks[0].data_type().clone();
            (
                Schema::new(vec![Field::new("x", t, true)]),
                chunks,
                Some((codes, cats)),
            )
        }
    };
    let schema = Arc::new(schema);
    let filter = random_filter(&schema, &chunks, src, 0);
    Case {
        schema,
        chunks,
        chunk_len,
        categorical,
        filter,
        simplify: src.one_in(2),
    }
}

/// Check the case drawn from `seed` (the property test's cases: each seed its
/// own, so that a failure names the seed that reproduces it).
///
/// # Errors
/// The invariant broken, described for a reproduction.
pub fn check_seed(seed: u64) -> Result<Verdict, String> {
    check(&random_case(&mut Seeded(seed)))
}

/// Check the case drawn from a fuzzer's `data`, eight bytes a random word
/// (zeros once they run out).
///
/// # Errors
/// The invariant broken, described for a reproduction.
pub fn check_bytes(data: &[u8]) -> Result<Verdict, String> {
    check(&random_case(&mut FromBytes(data)))
}

/// Check `case`: `Err` names a pruned chunk that holds a match.
///
/// # Errors
/// The invariant broken, described for a reproduction.
pub(crate) fn check(case: &Case) -> Result<Verdict, String> {
    let mut verdict = Verdict {
        chunks: case.chunks.len(),
        ..Verdict::default()
    };
    let props = ExecutionProps::new();
    let Ok(df_schema) = DFSchema::try_from(case.schema.as_ref().clone()) else {
        verdict.skipped = true;
        return Ok(verdict);
    };
    let df_schema = Arc::new(df_schema);
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(df_schema.clone())
            .build(),
    );
    let typed = simplifier
        .coerce(case.filter.clone(), &df_schema)
        .and_then(|e| {
            if case.simplify {
                simplifier.simplify(e)
            } else {
                Ok(e)
            }
        });
    let Ok(filter) = typed else {
        verdict.skipped = true;
        return Ok(verdict);
    };
    let Ok(physical) = plan_locally(&filter, &case.schema, &props) else {
        verdict.skipped = true;
        return Ok(verdict);
    };
    // The truth: which chunks hold a row the filter keeps (`None`: it
    // cannot be evaluated over them).
    let truth: Vec<Option<bool>> = case
        .chunks
        .iter()
        .map(|chunk| {
            let batch = RecordBatch::try_new(case.schema.clone(), vec![chunk.clone()]).ok()?;
            let value = physical.evaluate(&batch).ok()?;
            let rows = value.into_array(batch.num_rows()).ok()?;
            let rows = rows.as_boolean_opt()?;
            Some(rows.iter().any(|r| r == Some(true)))
        })
        .collect();
    let bounds = match statistics(case) {
        Ok(bounds) => bounds,
        Err(e) => return Err(format!("statistics: {e}")),
    };
    let rows: u64 = case.chunks.iter().map(|c| c.len() as u64).sum();
    let shown = format!(
        "min {:?} max {:?} nulls {:?}",
        bounds.min, bounds.max, bounds.nulls
    );
    let kept = match super::prune::kept_chunks(
        &case.schema,
        std::slice::from_ref(&filter),
        "x",
        bounds,
        rows,
    ) {
        Ok(kept) => kept,
        // As when the scan's filter cannot be planned: the query fails
        // with statistics and without.
        Err(_) => {
            verdict.skipped = true;
            return Ok(verdict);
        }
    };
    let len = case.chunk_len as u64;
    for (i, truth) in truth.iter().enumerate() {
        let (start, end) = (i as u64 * len, i as u64 * len + case.chunks[i].len() as u64);
        let is_kept = kept
            .as_ref()
            .is_none_or(|k| k.iter().any(|r| r.start < end && start < r.end));
        match (truth, is_kept) {
            (Some(true), false) => {
                return Err(format!(
                    "chunk {i} holds a match and was pruned\n  filter: {filter}\n  \
                     type: {}\n  chunk: {:?}\n  kept ranges: {kept:?}\n  statistics: {shown}",
                    case.schema.field(0).data_type(),
                    case.chunks[i],
                ));
            }
            (Some(true), true) => verdict.matching += 1,
            (None, false) => {
                verdict.pruned += 1;
                verdict.pruned_errors += 1;
            }
            (_, false) => verdict.pruned += 1,
            _ => {}
        }
    }
    Ok(verdict)
}

/// The column's statistics as a scan reads them: each chunk's computed as
/// the writers do, through a statistics file and back.
fn statistics(case: &Case) -> crate::Result<Bounds> {
    let leaves = match &case.categorical {
        Some((codes, _)) => codes,
        None => &case.chunks,
    };
    let rows: Vec<(u64, ChunkStats, Option<String>)> = leaves
        .iter()
        .enumerate()
        .filter_map(|(i, chunk)| Some((i as u64, ChunkStats::of(chunk.as_ref())?, None)))
        .collect();
    let bound = stats_type(leaves[0].data_type()).unwrap_or(DataType::Null);
    let array = serde_json::json!({});
    let header = Header {
        chunk_len: case.chunk_len as u64,
        array_len: leaves.iter().map(|c| c.len() as u64).sum(),
        array: &array,
    };
    let file = encode(&rows, &bound, &header)?;
    let stats: ArrayStats = match decode("x/zarrow.stats", &file)? {
        Ok(stats) => stats,
        Err(version) => {
            return Err(crate::Error::Internal {
                what: if version.is_empty() {
                    "no version"
                } else {
                    "another version read back"
                },
            });
        }
    };
    let fresh = crate::stats::fresh(&stats, None, header.array_len, |_| String::new());
    let bounds = Bounds::of(&stats, &fresh)?;
    Ok(match &case.categorical {
        Some((_, categories)) => Bounds::categorical(bounds, categories),
        None => bounds,
    })
}

/// A column's kind.
#[derive(Debug, Clone)]
enum Kind {
    Plain(DataType),
    Categorical {
        codes: DataType,
        categories: DataType,
        /// Read as the categories' values (else a dictionary).
        values: bool,
    },
}

fn random_kind(src: &mut impl Source) -> Kind {
    use DataType as T;
    let zones: [Option<Arc<str>>; 3] = [None, Some("UTC".into()), Some("+05:30".into())];
    let units = [
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
        TimeUnit::Nanosecond,
    ];
    match src.below(24) {
        0 => Kind::Plain(T::Int8),
        1 => Kind::Plain(T::Int16),
        2 => Kind::Plain(T::Int32),
        3 => Kind::Plain(T::Int64),
        4 => Kind::Plain(T::UInt8),
        5 => Kind::Plain(T::UInt16),
        6 => Kind::Plain(T::UInt32),
        7 => Kind::Plain(T::UInt64),
        8 => Kind::Plain(T::Float16),
        9 => Kind::Plain(T::Float32),
        10 | 11 => Kind::Plain(T::Float64),
        12 => Kind::Plain(T::Boolean),
        13 => Kind::Plain(src.pick(&[T::Utf8, T::LargeUtf8, T::Utf8View]).clone()),
        14 => Kind::Plain(src.pick(&[T::Utf8, T::Utf8View]).clone()),
        15 => Kind::Plain(
            src.pick(&[
                T::Binary,
                T::LargeBinary,
                T::BinaryView,
                T::FixedSizeBinary(3),
                T::FixedSizeBinary(66),
            ])
            .clone(),
        ),
        16 => Kind::Plain(T::Timestamp(*src.pick(&units), src.pick(&zones).clone())),
        17 => Kind::Plain(src.pick(&[T::Date32, T::Date64]).clone()),
        18 => Kind::Plain(T::Duration(*src.pick(&units))),
        19 => Kind::Plain(
            src.pick(&[
                T::Time32(TimeUnit::Second),
                T::Time32(TimeUnit::Millisecond),
                T::Time64(TimeUnit::Microsecond),
                T::Time64(TimeUnit::Nanosecond),
            ])
            .clone(),
        ),
        _ => Kind::Categorical {
            codes: src.pick(&[T::Int8, T::Int16, T::Int32]).clone(),
            categories: src
                .pick(&[
                    T::Utf8,
                    T::Utf8View,
                    T::Int64,
                    T::Int32,
                    T::Float64,
                    T::Boolean,
                ])
                .clone(),
            values: src.one_in(3),
        },
    }
}

/// Values a case draws from: a few per type, chosen once per case so that
/// chunks share values and the filter's literals hit them.
struct Pool {
    ints: Vec<i128>,
    floats: Vec<f64>,
    texts: Vec<String>,
    bytes: Vec<Vec<u8>>,
}

/// The range of an integer type (times by their storage).
fn int_range(t: &DataType) -> (i128, i128) {
    use DataType as T;
    match t {
        T::Int8 => (i8::MIN.into(), i8::MAX.into()),
        T::Int16 => (i16::MIN.into(), i16::MAX.into()),
        T::Int32 | T::Date32 => (i32::MIN.into(), i32::MAX.into()),
        T::Time32(TimeUnit::Second) => (0, 86_399),
        T::Time32(_) => (0, 86_399_999),
        T::Time64(TimeUnit::Microsecond) => (0, 86_399_999_999),
        T::Time64(_) => (0, 86_399_999_999_999),
        T::UInt8 => (0, u8::MAX.into()),
        T::UInt16 => (0, u16::MAX.into()),
        T::UInt32 => (0, u32::MAX.into()),
        T::UInt64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// Text fragments: ASCII, multibyte characters (2, 3 and 4 bytes), the
/// greatest scalar value, and DEL.
const FRAGMENTS: [&str; 10] = [
    "a",
    "b",
    "z",
    "é",
    "€",
    "𝄞",
    "\u{10FFFF}",
    "\u{7F}",
    "ab",
    "\u{FFFF}",
];

impl Pool {
    fn new(t: &DataType, src: &mut impl Source) -> Self {
        let (lo, hi) = int_range(t);
        let mut ints = vec![lo, lo + 1, hi - 1, hi, 0, 1, 2, -1, -2, 10, 1000];
        ints.retain(|v| (lo..=hi).contains(v));
        for _ in 0..4 {
            let span = (hi - lo) as u128;
            let r = (u128::from(src.next_u64()) << 64 | u128::from(src.next_u64())) % (span + 1);
            ints.push(lo + r as i128);
        }
        for _ in 0..4 {
            ints.push((src.below(21) as i128 - 10).clamp(lo, hi));
        }
        let mut floats = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.25,
            10.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MAX,
            f64::MIN,
            65504.0,
            1e-8,
        ];
        for _ in 0..3 {
            // NaN of either sign, any payload.
            let payload = (src.next_u64() & 0x000f_ffff_ffff_ffff).max(1);
            let sign = if src.one_in(2) { 1 << 63 } else { 0 };
            floats.push(f64::from_bits(sign | 0x7ff0_0000_0000_0000 | payload));
            floats.push(f64::from_bits(src.next_u64()));
        }
        floats.push(f64::NAN);
        floats.push(-f64::NAN);
        let mut texts: Vec<String> = vec![String::new()];
        for _ in 0..6 {
            let target = *src.pick(&[1, 2, 5, 60, 62, 63, 64, 65, 66, 67, 70, 130]);
            let mut s = match texts.len() {
                n if n > 1 && src.one_in(2) => texts[src.below(n)].clone(),
                _ => String::new(),
            };
            while s.len() < target {
                let fragment = FRAGMENTS[src.below(FRAGMENTS.len())];
                s.push_str(fragment);
            }
            if src.one_in(3) {
                // A prefix of it too.
                let mut cut = src.below(s.len() + 1);
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                texts.push(s[..cut].to_string());
            }
            texts.push(s);
        }
        let mut bytes: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..6 {
            let target = *src.pick(&[1, 3, 63, 64, 65, 66, 80]);
            let mut b = match bytes.len() {
                n if n > 1 && src.one_in(2) => bytes[src.below(n)].clone(),
                _ => Vec::new(),
            };
            while b.len() < target {
                b.push(*src.pick(&[0u8, 1, 0x61, 0x7f, 0x80, 0xfe, 0xff, 0xff]));
            }
            if src.one_in(3) {
                let cut = src.below(b.len() + 1);
                bytes.push(b[..cut].to_vec());
            }
            bytes.push(b);
        }
        Self {
            ints,
            floats,
            texts,
            bytes,
        }
    }

    /// `n` values of type `t`, about one in `nulls` null (0: none, 1: all).
    fn array(&mut self, t: &DataType, n: usize, nulls: usize, src: &mut impl Source) -> ArrayRef {
        use DataType as T;
        let mask: Vec<bool> = (0..n)
            .map(|_| match nulls {
                0 => false,
                1 => true,
                k => src.one_in(k),
            })
            .collect();
        let choices: Vec<usize> = (0..n).map(|_| src.below(1 << 16)).collect();
        let at = |i: usize, len: usize| choices[i] % len.max(1);
        let masked = |i: usize| mask[i];
        match t {
            T::Boolean => Arc::new(BooleanArray::from(
                (0..n)
                    .map(|i| (!masked(i)).then_some(choices[i] % 2 == 1))
                    .collect::<Vec<_>>(),
            )),
            T::Float16 => Arc::new(Float16Array::from(
                (0..n)
                    .map(|i| {
                        (!masked(i))
                            .then(|| half::f16::from_f64(self.floats[at(i, self.floats.len())]))
                    })
                    .collect::<Vec<_>>(),
            )),
            T::Float32 => Arc::new(Float32Array::from(
                (0..n)
                    .map(|i| (!masked(i)).then(|| self.floats[at(i, self.floats.len())] as f32))
                    .collect::<Vec<_>>(),
            )),
            T::Float64 => Arc::new(Float64Array::from(
                (0..n)
                    .map(|i| (!masked(i)).then(|| self.floats[at(i, self.floats.len())]))
                    .collect::<Vec<_>>(),
            )),
            T::Utf8 | T::LargeUtf8 | T::Utf8View => {
                let a = StringArray::from(
                    (0..n)
                        .map(|i| (!masked(i)).then(|| self.texts[at(i, self.texts.len())].as_str()))
                        .collect::<Vec<_>>(),
                );
                arrow_cast::cast(&a, t).expect("strings cast")
            }
            T::Binary | T::LargeBinary | T::BinaryView => {
                let a = BinaryArray::from(
                    (0..n)
                        .map(|i| {
                            (!masked(i)).then(|| self.bytes[at(i, self.bytes.len())].as_slice())
                        })
                        .collect::<Vec<_>>(),
                );
                arrow_cast::cast(&a, t).expect("bytes cast")
            }
            T::FixedSizeBinary(w) => {
                let w = *w as usize;
                let values: Vec<Option<Vec<u8>>> = (0..n)
                    .map(|i| {
                        (!masked(i)).then(|| {
                            let mut b = self.bytes[at(i, self.bytes.len())].clone();
                            b.resize(w, 0xff);
                            b
                        })
                    })
                    .collect();
                Arc::new(
                    FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                        values.into_iter(),
                        w as i32,
                    )
                    .expect("fixed-size bytes"),
                )
            }
            T::UInt64 => Arc::new(UInt64Array::from(
                (0..n)
                    .map(|i| (!masked(i)).then(|| self.ints[at(i, self.ints.len())] as u64))
                    .collect::<Vec<_>>(),
            )),
            other => {
                // Integers and times: drawn in range, stored as i64, cast.
                let values = Int64Array::from(
                    (0..n)
                        .map(|i| (!masked(i)).then(|| self.ints[at(i, self.ints.len())] as i64))
                        .collect::<Vec<_>>(),
                );
                let storage = match other {
                    T::Date32 | T::Time32(_) => T::Int32,
                    _ => T::Int64,
                };
                let narrow = match other {
                    T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 => {
                        other.clone()
                    }
                    _ => storage,
                };
                let narrowed = arrow_cast::cast(&values, &narrow).expect("in range");
                match other {
                    T::Int8 | T::Int16 | T::Int32 | T::UInt8 | T::UInt16 | T::UInt32 | T::Int64 => {
                        narrowed
                    }
                    _ => {
                        // Reinterpret the storage as the time type.
                        let data = narrowed.to_data().into_builder().data_type(other.clone());
                        arrow_array::make_array(data.build().expect("time storage"))
                    }
                }
            }
        }
    }
}

/// Categories of type `t`, distinct, as anndata stores them (numbers that
/// sort differently as text among them).
fn distinct_categories(t: &DataType, src: &mut impl Source) -> ArrayRef {
    use DataType as T;
    let n = 1 + src.below(6);
    match t {
        T::Boolean => {
            let order = src.one_in(2);
            Arc::new(BooleanArray::from(if n == 1 {
                vec![order]
            } else {
                vec![order, !order]
            }))
        }
        T::Float64 => {
            let mut pool = vec![
                0.5,
                10.0,
                2.25,
                -1.0,
                0.0,
                100.0,
                f64::INFINITY,
                1e-300,
                -7.5,
            ];
            if src.one_in(2) {
                pool.push(f64::NAN);
            }
            if src.one_in(3) {
                pool[4] = -0.0;
            }
            let picked: Vec<f64> = shuffle(pool, src).into_iter().take(n).collect();
            Arc::new(Float64Array::from(picked))
        }
        T::Int64 | T::Int32 => {
            let pool = vec![
                2i64,
                10,
                1,
                100,
                -3,
                0,
                9,
                21,
                i32::MAX.into(),
                i32::MIN.into(),
            ];
            let picked: Vec<i64> = shuffle(pool, src).into_iter().take(n).collect();
            arrow_cast::cast(&Int64Array::from(picked), t).expect("categories fit")
        }
        other => {
            let pool: Vec<String> = vec![
                "B cell".into(),
                "T cell".into(),
                "10".into(),
                "2".into(),
                "é".into(),
                "z".repeat(70),
                format!("{}y", "z".repeat(63)),
                String::new(),
            ];
            let picked: Vec<String> = shuffle(pool, src).into_iter().take(n).collect();
            arrow_cast::cast(&StringArray::from(picked), other).expect("strings cast")
        }
    }
}

fn shuffle<T>(mut items: Vec<T>, src: &mut impl Source) -> Vec<T> {
    for i in (1..items.len()).rev() {
        let j = src.below(i + 1);
        items.swap(i, j);
    }
    items
}

/// A literal for a filter on `x`: a value of a chunk, or of the type's pool,
/// or of another type the engines coerce.
fn literal(schema: &Schema, chunks: &[ArrayRef], src: &mut impl Source) -> ScalarValue {
    let t = schema.field(0).data_type();
    let value_type = match t {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    };
    match src.below(6) {
        0..=2 => {
            let chunk = &chunks[src.below(chunks.len())];
            if chunk.is_empty() {
                return ScalarValue::try_from(&value_type).unwrap_or(ScalarValue::Null);
            }
            let value = ScalarValue::try_from_array(chunk.as_ref(), src.below(chunk.len()))
                .unwrap_or(ScalarValue::Null);
            match value {
                ScalarValue::Dictionary(_, inner) => *inner,
                other => other,
            }
        }
        3 => {
            let mut pool = Pool::new(&value_type, src);
            let one = pool.array(&value_type, 1, 0, src);
            ScalarValue::try_from_array(one.as_ref(), 0).unwrap_or(ScalarValue::Null)
        }
        4 => {
            // Another type: an integer, a float or a string.
            match src.below(4) {
                0 => ScalarValue::Int64(Some(*src.pick(&[0, 1, 2, 10, -1, 300, i64::MAX]))),
                1 => ScalarValue::Float64(Some(*src.pick(&[0.0, -0.0, 0.5, 9.5, 2.0, f64::NAN]))),
                2 => ScalarValue::UInt64(Some(*src.pick(&[0, u64::MAX, 1 << 63]))),
                _ => ScalarValue::Utf8(Some(
                    (*src.pick(&["2", "10", "B cell", "a", "é"][..])).to_string(),
                )),
            }
        }
        _ => ScalarValue::try_from(&value_type).unwrap_or(ScalarValue::Null),
    }
}

/// A random filter over `x`, at most three levels deep.
fn random_filter(
    schema: &Schema,
    chunks: &[ArrayRef],
    src: &mut impl Source,
    depth: usize,
) -> Expr {
    let x = col("x");
    let t = schema.field(0).data_type();
    let value_type = match t {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    };
    let top = if depth >= 2 { 8 } else { 11 };
    match src.below(top) {
        0 | 1 => {
            let v = lit(literal(schema, chunks, src));
            let op = src.below(6);
            let (l, r) = if src.one_in(4) { (v, x) } else { (x, v) };
            compare(l, op, r)
        }
        2 => {
            let (a, b) = (literal(schema, chunks, src), literal(schema, chunks, src));
            let negated = src.one_in(3);
            Expr::Between(datafusion::logical_expr::Between::new(
                Box::new(x),
                negated,
                Box::new(lit(a)),
                Box::new(lit(b)),
            ))
        }
        3 => {
            let n = 1 + src.below(4);
            let list: Vec<Expr> = (0..n).map(|_| lit(literal(schema, chunks, src))).collect();
            x.in_list(list, src.one_in(3))
        }
        4 => {
            if src.one_in(2) {
                x.is_null()
            } else {
                x.is_not_null()
            }
        }
        5 => match &value_type {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let value = literal(schema, chunks, src);
                let text = value.try_as_str().flatten().unwrap_or("a").to_string();
                let mut cut = src.below(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                let pattern = format!("{}%", &text[..cut]);
                if src.one_in(4) {
                    x.not_like(lit(pattern))
                } else {
                    x.like(lit(pattern))
                }
            }
            _ => x.is_not_null(),
        },
        6 => {
            // A cast of the column.
            let to = src
                .pick(&[
                    DataType::Int64,
                    DataType::Float64,
                    DataType::Int8,
                    DataType::Utf8,
                    DataType::Date32,
                    DataType::Timestamp(TimeUnit::Nanosecond, None),
                ])
                .clone();
            let v = literal(schema, chunks, src);
            compare(cast(x, to), src.below(6), lit(v))
        }
        7 => {
            // Arithmetic on the column.
            let k = lit(literal(schema, chunks, src));
            let e = match src.below(3) {
                0 => x + k,
                1 => x - k,
                _ => x * k,
            };
            compare(e, src.below(6), lit(literal(schema, chunks, src)))
        }
        8 => Expr::Not(Box::new(random_filter(schema, chunks, src, depth + 1))),
        9 => random_filter(schema, chunks, src, depth + 1).and(random_filter(
            schema,
            chunks,
            src,
            depth + 1,
        )),
        _ => random_filter(schema, chunks, src, depth + 1).or(random_filter(
            schema,
            chunks,
            src,
            depth + 1,
        )),
    }
}

fn compare(l: Expr, op: usize, r: Expr) -> Expr {
    match op {
        0 => l.eq(r),
        1 => l.not_eq(r),
        2 => l.lt(r),
        3 => l.lt_eq(r),
        4 => l.gt(r),
        _ => l.gt_eq(r),
    }
}

/// A filter typed over `schema` and simplified as DataFusion's optimizer
/// does before it reaches a scan (`None`: it cannot be).
pub(crate) fn typed(filter: Expr, schema: &SchemaRef) -> Option<Expr> {
    let df_schema = Arc::new(DFSchema::try_from(schema.as_ref().clone()).ok()?);
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(df_schema.clone())
            .build(),
    );
    let typed = simplifier.coerce(filter, &df_schema).ok()?;
    simplifier.simplify(typed).ok()
}

/// The statistic chunks of the 1-D array at the root of `store` that
/// zarrow keeps for `filter` over its column `x` (the conformance cases of
/// docs/spec/chunk-statistics.md): read, checked and pruned as a scan does;
/// `categories`, for an anndata categorical's codes array. `Ok(None)`: no
/// statistics are used (none, unusable, another version).
///
/// # Errors
/// A statistics file that is not one; a filter that cannot be typed.
pub fn conformance_kept(
    store: Arc<dyn crate::Store>,
    filter: Expr,
    categories: Option<ArrayRef>,
    decode_cf: bool,
) -> crate::Result<Option<Vec<bool>>> {
    let options = crate::ReadOptions {
        decode_cf,
        ..crate::ReadOptions::default()
    };
    let array = crate::ZarrArray::open_with(store, "", options)?;
    let Some(bounds) = array.chunk_statistics()? else {
        return Ok(None);
    };
    let len = array.metadata().shape[0];
    let chunk_len = bounds.chunk_len;
    let (bounds, column_type) = match &categories {
        Some(categories) => (
            Bounds::categorical(bounds, categories),
            DataType::Dictionary(
                Box::new(array.arrow_type()),
                Box::new(categories.data_type().clone()),
            ),
        ),
        None => (bounds, array.arrow_type()),
    };
    let schema = Arc::new(Schema::new(vec![Field::new("x", column_type, true)]));
    let typed = typed(filter, &schema).ok_or(crate::Error::Internal {
        what: "a conformance filter DataFusion cannot type",
    })?;
    let kept = super::prune::kept_chunks(&schema, &[typed], "x", bounds, len).map_err(|_| {
        crate::Error::Internal {
            what: "a conformance filter DataFusion cannot plan",
        }
    })?;
    let n = len.div_ceil(chunk_len.max(1));
    Ok(Some(
        (0..n)
            .map(|i| {
                let (start, end) = (i * chunk_len, ((i + 1) * chunk_len).min(len));
                kept.as_ref()
                    .is_none_or(|k| k.iter().any(|r| r.start < end && start < r.end))
            })
            .collect(),
    ))
}
