#!/usr/bin/env bash
# The side-by-side benchmark: zarrow (library), zarr-python, pyarrow and zarrs on the
# same workloads, in one run on this machine. Writes benches/RESULTS.md.
#   bash benches/compare/run.sh            # full size (10M strings; ~15 min on 2 cores)
#   bash benches/compare/run.sh --quick    # 1M strings, 3 runs: a smoke test
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --disable-pip-version-check -q -r testdata/gen/requirements.txt
cargo build --release -q --example zarrow_compare
cargo build --release -q --manifest-path benches/compare/zarrs-bench/Cargo.toml --target-dir target/gen-zarrs
exec .venv/bin/python benches/compare/run.py "$@"
