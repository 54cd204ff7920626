#!/usr/bin/env bash
# Build zarrow's DuckDB extension and print its path (the last line):
#   bash duckdb/build.sh
# Environment: PROFILE (cargo profile, default release), FEATURES (cargo
# --features of zarrow-duckdb), PYTHON (a Python with duckdb, whose
# `PRAGMA platform` names the platform; without one, it is worked out from
# uname as DuckDB names it), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-release}
features=()
if [ -n "${FEATURES:-}" ]; then
    features=(--features "$FEATURES")
fi
cargo build --profile "$profile" -p zarrow-duckdb "${features[@]}" >&2
target=${CARGO_TARGET_DIR:-target}
case "$profile" in
    dev) dir=debug ;;
    *) dir=$profile ;;
esac
case "$(uname -s)" in
    Darwin) library="$target/$dir/libzarrow_duckdb.dylib" ;;
    *) library="$target/$dir/libzarrow_duckdb.so" ;;
esac
platform=$("${PYTHON:-python3}" -c "import duckdb; print(duckdb.sql('PRAGMA platform').fetchall()[0][0])" 2>/dev/null || true)
if [ -z "$platform" ]; then
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) platform=linux_amd64 ;;
        Linux-aarch64) platform=linux_arm64 ;;
        Darwin-arm64) platform=osx_arm64 ;;
        Darwin-x86_64) platform=osx_amd64 ;;
        *) echo "unknown platform $(uname -s)-$(uname -m): set PYTHON to a Python with duckdb" >&2; exit 1 ;;
    esac
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' duckdb/Cargo.toml | head -1)
out="$target/$dir/zarrow.duckdb_extension"
python3 duckdb/metadata.py "$library" "$out" --platform "$platform" \
    --duckdb-version v2.0.0 --extension-version "$version"
echo "built for DuckDB v2.0.0 on $platform" >&2
realpath "$out"
