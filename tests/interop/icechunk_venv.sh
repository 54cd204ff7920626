#!/usr/bin/env bash
# The Icechunk checks' venv (.venv-icechunk): icechunk-python 2.3 needs Python >= 3.12,
# which the main venv's interpreter may not be. The newest 3.12+ under pyenv (else the
# first on PATH that runs) makes it; the pinned requirements and the zarrow package (built by
# maturin in the repository's target/ directory, as python/ci.sh builds it, so nothing
# compiles twice) go in.
#   bash tests/interop/icechunk_venv.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
if [ ! -x .venv-icechunk/bin/python ]; then
    # A candidate must run and be >= 3.12: pyenv's shims put every installed
    # version's `python3.13` on PATH, and one that is not the selected version
    # only prints an error.
    new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
    py=""
    if command -v pyenv >/dev/null; then
        for dir in "$(pyenv root)"/versions/3.1[2-9]*; do
            if [ -x "$dir/bin/python3" ] && new_enough "$dir/bin/python3"; then py="$dir/bin/python3"; fi
        done
    fi
    if [ -z "$py" ]; then
        for candidate in python3.14 python3.13 python3.12 python3; do
            if command -v "$candidate" >/dev/null && new_enough "$candidate"; then py=$(command -v "$candidate"); break; fi
        done
    fi
    if [ -z "$py" ]; then
        echo "no Python >= 3.12 found (under pyenv or on PATH): icechunk-python 2.3 needs one" >&2
        exit 1
    fi
    echo "the Icechunk venv's Python: $py ($("$py" --version))"
    "$py" -m venv .venv-icechunk
fi
.venv-icechunk/bin/python -m pip install --disable-pip-version-check -q -r testdata/gen/requirements-icechunk.txt
# maturin runs from this venv; MATURIN_PEP517_ARGS (from .ci/run: the ci profile and
# features) as in python/ci.sh, so the build is python/ci.sh's, reused.
PATH="$PWD/.venv-icechunk/bin:$PATH" .venv-icechunk/bin/python -m pip install --disable-pip-version-check -q \
    --no-build-isolation --force-reinstall --no-deps ./python
