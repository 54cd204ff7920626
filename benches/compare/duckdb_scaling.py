#!/usr/bin/env python3
"""Issue 51's thread target (1 -> 2 threads >= 1.7x on W10), measured so that
the machine's drift cannot make the ratio: one DuckDB connection per run, its
rounds alternating `SET threads = 1` and `SET threads = 2` (which goes first
alternates too), the ratio of the medians. With several extension builds, each
runs in its own process, the builds alternated (`--runs` each).

    .venv/bin/python benches/compare/duckdb_scaling.py EXTENSION [EXTENSION ...]
        [--rounds 9] [--runs 2] [--parquet]

EXTENSION: release builds (`bash duckdb/build.sh`). `--parquet`: `read_parquet`
of the same rows too, in the same runs. Data: duckdb_ext.py's W10 (made if
missing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUERIES = {
    "group-by": "SELECT s, count(*) AS n, avg(f) AS f FROM {t} GROUP BY s",
    "filtered group-by": "SELECT s, count(*) AS n FROM {t} WHERE i > 1000000000000 GROUP BY s",
}


def run(extension: str, rounds: int, parquet: bool) -> dict[str, float]:
    """One process's ratios: 1-thread median / 2-thread median, per query and table."""
    import duckdb

    sys.path.insert(0, str(HERE))
    from duckdb_ext import w10

    table_parquet, zarr, cat = w10()
    tables = {
        "vlen": f"read_zarr('{zarr}')",
        "categorical": f"read_zarr('{cat}')",
        "enum": f"read_zarr('{cat}', categorical_values := false)",
    }
    if parquet:
        tables["parquet"] = f"read_parquet('{table_parquet}')"
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension}'")
    out = {}
    for qname, query in QUERIES.items():
        for tname, table in tables.items():
            sql = query.format(t=table)
            times: dict[int, list[float]] = {1: [], 2: []}
            for r in range(rounds + 1):
                for threads in (1, 2) if r % 2 else (2, 1):
                    con.execute(f"SET threads = {threads}")
                    start = time.perf_counter()
                    con.execute(sql).fetchall()
                    if r:  # round 0 warms the page cache
                        times[threads].append(time.perf_counter() - start)
            one, two = statistics.median(times[1]), statistics.median(times[2])
            out[f"{qname}, {tname}"] = one / two
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("extensions", nargs="*")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--parquet", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run(args.child, args.rounds, args.parquet)))
        return
    ratios: dict[str, dict[str, list[float]]] = {e: {} for e in args.extensions}
    for _ in range(args.runs):
        for ext in args.extensions:
            cmd = [sys.executable, __file__, "--child", ext, "--rounds", str(args.rounds)]
            if args.parquet:
                cmd.append("--parquet")
            got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            for name, ratio in got.items():
                ratios[ext].setdefault(name, []).append(ratio)
    names = list(next(iter(ratios.values())))
    print("| query, table | " + " | ".join(args.extensions) + " |")
    print("|---|" + "---|" * len(args.extensions))
    for name in names:
        cells = [", ".join(f"{r:.2f}x" for r in ratios[e][name]) for e in args.extensions]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
