//! The fuzz corpus and crash regressions, replayed on stable: every file in
//! `fuzz/corpus/NAME/` and `fuzz/regressions/NAME/` goes through fuzz target NAME
//! (the same function `cargo fuzz run NAME` calls, from `fuzz/src/lib.rs`), which
//! panics only when zarrow misbehaves. See `fuzz/README.md`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../../fuzz/src/lib.rs"]
mod targets;

/// The input files of `dir` (not `.gitkeep`, not READMEs), sorted.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            !name.starts_with('.') && !name.starts_with("README")
        })
        .collect();
    files.sort();
    files
}

/// Run target `name` on its corpus and regressions; fail naming every input that
/// panics.
fn replay(name: &str) {
    let target = targets::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .expect("a target of that name");
    replay_with(name, target);
}

/// The pruning invariant's target (feature `datafusion`, not in `TARGETS`).
#[cfg(feature = "datafusion")]
#[test]
fn prune() {
    replay_with("prune", targets::prune_invariant);
}

/// Run `target` on the corpus and regressions of `name`.
fn replay_with(name: &str, target: fn(&[u8])) {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut failures = Vec::new();
    let mut count = 0;
    for kind in ["corpus", "regressions"] {
        for file in inputs(&fuzz.join(kind).join(name)) {
            let data = std::fs::read(&file).expect("read a fuzz input");
            count += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(&data))) {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let shown = file
                    .strip_prefix(&fuzz)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                failures.push(format!("fuzz/{shown}: {message}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} inputs of fuzz target {name} panic:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        #[test]
        fn every_target_is_replayed() {
            let tested = [$(stringify!($name)),*];
            for (name, _) in targets::TARGETS {
                assert!(tested.contains(&name), "fuzz target {name} has no replay test");
            }
        }
    };
}

replay_tests!(
    vlen_interleaved,
    zarrs_vlen,
    zep0007,
    fixed,
    transpose,
    sharding,
    compressors,
    metadata_v3,
    metadata_v2,
    fill_value,
    linear_json,
    linear_csv,
    write_roundtrip,
    push_decoder,
    append_roundtrip,
    stats,
);
