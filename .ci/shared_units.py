#!/usr/bin/env python3
"""What CI compiles twice: the units of the Python package's build that the tests'
build does not already have (a crate whose features, or whose dependencies'
features, differ compiles again, and so does everything above it).

    python3 .ci/shared_units.py [python|duckdb]

(`python`, the default: the Python package, zarrow-python; `duckdb`: the DuckDB
extension, zarrow-duckdb, whose feature `ci-shared-build` does the same.)

Reads both builds' unit graphs from cargo (`--unit-graph`, an unstable flag:
RUSTC_BOOTSTRAP=1 lets a stable cargo print it; nothing is built). Prints, for each
unit compiled twice whose own dependencies are all shared, the features that
differ: add them to python/Cargo.toml's feature `ci-shared-build` (the tests' build
has them) or to cli/Cargo.toml's dev-dependencies (the package's build has them).
The package's own crates (PyO3 and what only it uses) are expected in the list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = ["cargo", "test", "--profile", "ci", "--all-features", "--no-run"]
PACKAGES = {"python": "zarrow-python", "duckdb": "zarrow-duckdb"}


def package_build(which: str) -> list[str]:
    return ["cargo", "build", "--profile", "ci", "-p", PACKAGES[which], "--features", "ci-shared-build"]


def unit_graph(command: list[str]) -> list[dict]:
    out = subprocess.run(
        command + ["--unit-graph", "-Z", "unstable-options"],
        cwd=REPO, env={**os.environ, "RUSTC_BOOTSTRAP": "1"},
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["units"]


def identities(units: list[dict]) -> list[int]:
    """A unit's identity: itself, its features and profile, and its dependencies'."""
    memo: dict[int, int] = {}

    def key(i: int) -> int:
        if i not in memo:
            u = units[i]
            memo[i] = hash((
                u["pkg_id"], u["target"]["name"], tuple(u["target"]["kind"]), u["mode"],
                tuple(sorted(u["features"])), u["profile"]["opt_level"], u["platform"],
                tuple(sorted(key(d["index"]) for d in u["dependencies"])),
            ))
        return memo[i]

    return [key(i) for i in range(len(units))]


def name(unit: dict) -> str:
    return unit["pkg_id"].split("#")[-1]


def main() -> int:
    which = sys.argv[1] if len(sys.argv) > 1 else "python"
    if which not in PACKAGES:
        print(f"usage: python3 .ci/shared_units.py [{'|'.join(PACKAGES)}]", file=sys.stderr)
        return 2
    tests, package = unit_graph(TESTS), unit_graph(package_build(which))
    shared = set(identities(tests))
    keys = identities(package)
    features: dict[tuple, list[set]] = {}
    for u in tests:
        features.setdefault((u["pkg_id"], u["target"]["name"], u["mode"]), []).append(set(u["features"]))
    twice = [i for i, k in enumerate(keys) if k not in shared]
    for i in twice:
        u = package[i]
        if any(keys[d["index"]] not in shared for d in u["dependencies"]):
            continue  # compiled again because a dependency is: that one is listed
        other = features.get((u["pkg_id"], u["target"]["name"], u["mode"]))
        if other is None:
            print(f"only the package's: {name(u)} ({u['mode']})")
            continue
        mine = set(u["features"])
        for theirs in other:
            print(f"{name(u)} ({u['mode']}): tests' build only {sorted(theirs - mine)}, "
                  f"package's only {sorted(mine - theirs)}")
    print(f"\n{len(twice)} of the package's {len(package)} units are not in the tests' build:",
          " ".join(sorted({name(package[i]) for i in twice})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
