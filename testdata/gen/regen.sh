#!/usr/bin/env bash
# Regenerate every golden store and expected file under testdata/.
#
#   bash testdata/gen/regen.sh            # from the repository root (or anywhere)
#
# Needs the venv at .venv (created here if missing, from testdata/gen/requirements.txt)
# and cargo (for the zarrs writer in testdata/gen-zarrs, built with -j1).
# Idempotent: testdata/stores and testdata/expected are deleted and rewritten.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TESTDATA="$REPO/testdata"
VENV="${ZARROW_VENV:-$REPO/.venv}"
PY="$VENV/bin/python"

if [[ ! -x "$PY" ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r "$HERE/requirements.txt"
fi
"$PY" - <<'PYCHECK'
import zarr, numcodecs, pyarrow
assert (zarr.__version__, numcodecs.__version__, pyarrow.__version__) == ("3.1.6", "0.16.6", "26.0.1"), \
    (zarr.__version__, numcodecs.__version__, pyarrow.__version__)
PYCHECK

rm -rf "$TESTDATA/stores" "$TESTDATA/expected"
mkdir -p "$TESTDATA/stores" "$TESTDATA/expected"

# 1. zarr-python stores (+ hand-edited v2 fill variants) and their expected files
"$PY" "$HERE/generate.py"

# 2. ZEP0007 draft-layout stores
"$PY" "$HERE/zep0007.py"

# 3. zarrs stores, read back by zarrs and dumped to JSON, then expected files
export CARGO_TARGET_DIR="$TESTDATA/gen-zarrs/target"
DUMPS="$CARGO_TARGET_DIR/dumps"
rm -rf "$DUMPS"
cargo build -j1 --locked --quiet --manifest-path "$TESTDATA/gen-zarrs/Cargo.toml"
echo "zarrs"
"$CARGO_TARGET_DIR/debug/zarrow-gen-zarrs" "$TESTDATA/stores" "$DUMPS"
"$PY" "$HERE/zarrs_expected.py" "$DUMPS"

# 4. anndata and xarray stores, their inputs and expected files (testdata/conventions)
"$PY" "$HERE/conventions.py"

# 5. the case table in testdata/README.md
"$PY" "$HERE/readme_table.py"

# 6. summary
n_stores=$(find "$TESTDATA/stores" -mindepth 1 -maxdepth 1 -name '*.zarr' | wc -l)
n_expected=$(find "$TESTDATA/expected" -name '*.arrow' | wc -l)
if [[ "$n_stores" != "$n_expected" ]]; then
  echo "regen: $n_stores stores but $n_expected expected files" >&2
  exit 1
fi
bytes=$(find "$TESTDATA/stores" "$TESTDATA/expected" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "regen: $n_stores stores, $bytes bytes of stores + expected files"
