#!/usr/bin/env python3
"""A/B of two builds of the Python package on W11's filtered scans of one
`zarrow.Dataset` (issue 52): each build in its own venv, one process per run,
the builds alternated.

Usage: benches/compare/polars_ab.py OLD_PYTHON NEW_PYTHON [--pairs 5] [--scans 31]

Each run times three `zarrow.scan(ds)` queries (pruned entirely, W11 (a), (b)):
the median of `--scans` scans after 3 warm-up scans. Data: w11.py's 10M-row
table (benches/compare/data/w11).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ZARR = HERE / "data" / "w11" / "w11-10000000.zarr"

RUN = """
import statistics, sys, time, warnings
import polars as pl, zarrow
warnings.simplefilter("ignore")
ds = zarrow.Dataset(sys.argv[1])
scans = int(sys.argv[2])
queries = {
    "pruned": (pl.col("day") > 10**9, ["barcode"]),
    "a": (pl.col("sample") == "S0117", ["barcode", "n_genes", "score"]),
    "b": (pl.col("day").is_between(1000, 1010), ["barcode", "score"]),
}
for name, (predicate, columns) in queries.items():
    run = lambda: zarrow.scan(ds).filter(predicate).select(columns).collect()
    for _ in range(3):
        run()
    times = []
    for _ in range(scans):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    print(name, statistics.median(times) * 1e3)
"""


def run(python: str, scans: int) -> dict[str, float]:
    out = subprocess.run([python, "-c", RUN, str(ZARR), str(scans)], check=True, capture_output=True, text=True)
    return {name: float(ms) for name, ms in (line.split() for line in out.stdout.splitlines())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--scans", type=int, default=31)
    args = ap.parse_args()
    if not ZARR.exists():
        sys.exit(f"no W11 data at {ZARR}: run benches/compare/w11.py first")
    got: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for _ in range(args.pairs):
        for side, python in (("old", args.old), ("new", args.new)):
            for name, ms in run(python, args.scans).items():
                got[side].setdefault(name, []).append(ms)
    print("| query | old | new | medians, new / old |")
    print("|---|---|---|---|")
    for name in got["old"]:
        old, new = got["old"][name], got["new"][name]
        a, b = statistics.median(old), statistics.median(new)
        print(f"| {name} | {', '.join(f'{v:.2f}' for v in old)} ms | {', '.join(f'{v:.2f}' for v in new)} ms "
              f"| {b:.2f} / {a:.2f} = {b / a:.2f} |")


if __name__ == "__main__":
    main()
