#!/usr/bin/env python3
"""W10 (issue 14): SQL over a Zarr table against the same query over Parquet.

Usage: benches/compare/sql.py [--rows N] [--runs R] [--zarrow BIN]

Data: N rows (default 10,000,000): `s` a string of ~1,000 distinct values, `i` an
int64, `f` a float64; written once by pyarrow to Parquet (zstd), and converted to
Zarr v3 by `zarrow convert` (vlen-utf8 + zstd, zarrow's default chunks).

Timed in fresh processes, median of R runs, 2 cores, same run:
* `zarrow sql "SELECT s, count(*), avg(f) FROM t GROUP BY s"` with t the Zarr store
  (zarrow's TableProvider), with 2 partitions (the default on 2 cores) and with 1;
* the same binary and query with t the Parquet file (DataFusion's own Parquet scan);
* DuckDB 2.0.0 over the Parquet file (timed inside its process: no interpreter start);
* `SELECT * FROM t LIMIT 10` over each.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benches" / "compare" / "data" / "w10"
GROUP_BY = "SELECT s, count(*) AS n, avg(f) AS f FROM t GROUP BY s"
LIMIT = "SELECT * FROM t LIMIT 10"


def generate(rows: int) -> tuple[Path, Path]:
    parquet = DATA / f"t{rows}.parquet"
    zarr = DATA / f"t{rows}.zarr"
    DATA.mkdir(parents=True, exist_ok=True)
    if not parquet.exists():
        rng = np.random.default_rng(10)
        words = np.array(
            [f"category-{k:04d}-" + "x" * int(rng.integers(0, 24)) for k in range(1000)], dtype=object
        )
        table = pa.table(
            {
                "s": pa.array(words[rng.integers(0, 1000, rows)], pa.string()),
                "i": pa.array(rng.integers(0, 1 << 40, rows), pa.int64()),
                "f": pa.array(rng.random(rows), pa.float64()),
            }
        )
        pq.write_table(table, parquet, compression="zstd")
    return parquet, zarr


def timed(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr}")
        # A peer that times itself prints its own seconds last.
        last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if last and last[0].startswith("seconds "):
            elapsed = float(last[0].split()[1])
        times.append(elapsed)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--zarrow", default=str(REPO / "target" / "release" / "zarrow"))
    args = parser.parse_args()
    parquet, zarr = generate(args.rows)
    zarrow = args.zarrow
    if not zarr.exists():
        subprocess.run([zarrow, "convert", str(parquet), str(zarr)], check=True, capture_output=True)
    out = DATA / "out.arrow"

    def sql(query: str, table: Path, partitions: int | None = None) -> list[str]:
        cmd = [zarrow, "sql", query, "--table", f"t={table}", "--output", str(out), "--overwrite"]
        if partitions:
            cmd += ["--partitions", str(partitions)]
        return cmd

    duckdb = [
        sys.executable,
        "-c",
        "import sys, time, duckdb\n"
        "con = duckdb.connect()\n"
        "q = sys.argv[1].replace('FROM t', \"FROM read_parquet('\" + sys.argv[2] + \"')\")\n"
        "start = time.perf_counter()\n"
        "con.sql(q).fetch_arrow_table()\n"
        "print('seconds', time.perf_counter() - start)\n",
    ]
    rows = [
        ("zarrow sql, Zarr table, 2 partitions", timed(sql(GROUP_BY, zarr, 2), args.runs)),
        ("zarrow sql, Zarr table, 1 partition", timed(sql(GROUP_BY, zarr, 1), args.runs)),
        ("zarrow sql, Parquet (DataFusion's scan), 2 partitions", timed(sql(GROUP_BY, parquet, 2), args.runs)),
        ("DuckDB 2.0.0 over Parquet", timed([*duckdb, GROUP_BY, str(parquet)], args.runs)),
        ("LIMIT 10: zarrow sql, Zarr table", timed(sql(LIMIT, zarr), args.runs)),
        ("LIMIT 10: zarrow sql, Parquet", timed(sql(LIMIT, parquet), args.runs)),
    ]
    size = lambda p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    print(f"{args.rows:,} rows; Parquet {size(parquet) / 2**20:.0f} MiB, Zarr {size(zarr) / 2**20:.0f} MiB; median of {args.runs}\n")
    print("| query | median |\n|---|---|")
    for name, t in rows:
        print(f"| {name} | {t:.3f} s |")
    zarr2, zarr1, df, duck = (t for _, t in rows[:4])
    print(f"\nZarr / DataFusion-on-Parquet: {zarr2 / df:.2f}x (target <= 1.5x)")
    print(f"Zarr / DuckDB-on-Parquet: {zarr2 / duck:.2f}x")
    print(f"1 -> 2 partitions: {zarr1 / zarr2:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
