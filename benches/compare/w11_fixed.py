#!/usr/bin/env python3
"""The fixed cost of a query through datafusion-python (issue 50, item 7):
per-query time of queries that read little or nothing, over W11's Zarr table
(`zarrow.table`) and its Parquet copy, many times in a loop after warm-ups.

Usage: benches/compare/w11_fixed.py [--rows N] [--loops L]
(the data from `w11.py` first). Under `perf record -D 5000` it profiles the
loop without the imports.
"""

from __future__ import annotations

import argparse
import statistics
import time

from w11 import DATA, sessions

QUERIES = {
    # Statistics prune every chunk: nothing is read.
    "pruned": "SELECT barcode FROM t WHERE day > 5000",
    "count": "SELECT count(*) FROM t",
    "a": "SELECT barcode, n_genes, score FROM t WHERE sample = 'S0117'",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--loops", type=int, default=200)
    parser.add_argument("--only", choices=sorted(QUERIES), action="append")
    args = parser.parse_args()
    ctx_parquet, ctx_zarr = sessions(DATA / f"w11-{args.rows}.parquet", DATA / f"w11-{args.rows}.zarr")
    for name, sql in QUERIES.items():
        if args.only and name not in args.only:
            continue
        per = {}
        for engine, ctx in (("zarr", ctx_zarr), ("parquet", ctx_parquet)):
            for _ in range(3):
                ctx.sql(sql).collect()
            times = []
            for _ in range(args.loops):
                t = time.perf_counter()
                ctx.sql(sql).collect()
                times.append(time.perf_counter() - t)
            per[engine] = statistics.median(times)
        print(f"{name:7} zarr {per['zarr'] * 1e3:7.2f} ms  parquet "
              f"{per['parquet'] * 1e3:7.2f} ms  ratio {per['zarr'] / per['parquet']:.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
