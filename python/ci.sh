#!/usr/bin/env bash
# The Python package's CI, from the repository root:
#   bash python/ci.sh [lint|test]     (no argument: both)
# lint: rustfmt and clippy (-D warnings) on the python crate. (.ci/run lints the whole
#       workspace in one clippy run instead.)
# test: the test requirements into .venv (beside testdata/gen/requirements.txt); the
#       package built by maturin (release profile; .ci/run passes MATURIN_PEP517_ARGS
#       ="--profile ci --features ci-shared-build" to share its build) and installed
#       into .venv, as
#       `pip install ./python` does, in the repository's target/ directory so the
#       crates the root build compiled are reused (CARGO_TARGET_DIR wins if set);
#       pytest python/tests.
set -euo pipefail
cd "$(dirname "$0")/.."
phase="${1:-all}"
case "$phase" in
    lint | test | all) ;;
    *) echo "usage: bash python/ci.sh [lint|test]" >&2; exit 2 ;;
esac
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# maturin (the build backend) runs from the venv.
export PATH="$PWD/.venv/bin:$PATH"
start=$(date +%s)
step() { printf '\n=== python: %s (%ss)\n' "$1" "$(( $(date +%s) - start ))"; }

if [ "$phase" != test ]; then
    step "fmt, clippy (python crate)"
    cargo fmt --check -p zarrow-python
    cargo clippy -p zarrow-python --all-targets -- -D warnings
fi
[ "$phase" = lint ] && exit 0

step "test requirements"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install --disable-pip-version-check -q -r testdata/gen/requirements.txt
fi
.venv/bin/python -m pip install --disable-pip-version-check -q -r python/requirements-test.txt

step "build and install (maturin; release unless MATURIN_PEP517_ARGS says --profile)"
# No build isolation: maturin comes pinned from requirements-test.txt; pip runs it
# as the PEP 517 backend exactly as `pip install ./python` does. PROTOC names no
# program: a build script that compiled protobuf definitions would fail here (the
# package needs no protoc).
PROTOC=/nonexistent/protoc .venv/bin/python -m pip install --disable-pip-version-check -q --no-build-isolation --force-reinstall --no-deps ./python

step "pytest"
.venv/bin/python -m pytest python/tests -q

step "done"
