//! The pruning invariant on random data: every chunk that statistics prune
//! holds no row the filter keeps, the truth being DataFusion's own physical
//! expression over the chunk (`zarrow::datafusion::invariant`).
//!
//! `ZARROW_PRUNE_CASES` sets the number of cases (CI: the default below; a
//! release run of 1,000,000 before a change to statistics lands:
//! `ZARROW_PRUNE_CASES=1000000 cargo test --release --all-features --test
//! integration prune_invariant -- --nocapture`), `ZARROW_PRUNE_SEED` the
//! first seed. Each case's seed is its own: a failure names it.

use zarrow::datafusion::invariant::{Verdict, check_seed};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One seed's case, checked.
fn run(seed: u64) -> Result<Verdict, String> {
    check_seed(seed).map_err(|e| format!("seed {seed}: {e}"))
}

#[test]
fn pruned_chunks_hold_no_match() {
    let cases = env_u64("ZARROW_PRUNE_CASES", 20_000);
    let first = env_u64("ZARROW_PRUNE_SEED", 0x5eed);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let totals: Vec<(Verdict, u64, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut total = Verdict::default();
                    let (mut skipped, mut failures) = (0u64, Vec::new());
                    let mut seed = first + t;
                    while seed < first + cases {
                        match run(seed) {
                            Ok(v) if v.skipped => skipped += 1,
                            Ok(v) => {
                                total.chunks += v.chunks;
                                total.pruned += v.pruned;
                                total.matching += v.matching;
                                total.pruned_errors += v.pruned_errors;
                            }
                            Err(e) if failures.len() < 5 => failures.push(e),
                            Err(_) => {}
                        }
                        seed += threads;
                    }
                    (total, skipped, failures)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = Verdict::default();
    let mut skipped = 0;
    let mut failures = Vec::new();
    for (v, s, f) in totals {
        total.chunks += v.chunks;
        total.pruned += v.pruned;
        total.matching += v.matching;
        total.pruned_errors += v.pruned_errors;
        skipped += s;
        failures.extend(f);
    }
    println!(
        "{cases} cases ({skipped} not typeable): {} chunks, {} pruned ({} of them \
         unevaluable), {} holding a match",
        total.chunks, total.pruned, total.pruned_errors, total.matching
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The check has teeth: statistics prune a good share of the chunks, and
    // most cases are typed and checked.
    assert!(
        skipped * 2 < cases,
        "{skipped} of {cases} cases could not be typed"
    );
    assert!(total.pruned * 10 > total.chunks, "{total:?}");
}
