#!/usr/bin/env python3
"""W11 (issue 40): filtered queries over an atlas-like obs, Zarr with chunk
statistics against the same table in Parquet.

Usage: benches/compare/w11.py [--rows N] [--rounds R] [--zarrow BIN]

Data: N rows (default 10,000,000): `sample` 200 samples of uneven size stored
one after another, `day` sorted, `n_genes` and `score` random, `barcode` unique.
pyarrow writes the Parquet copy (default row groups and pages, the page index
on); `zarrow convert` writes the Zarr copy from it in chunks of 100,000 (with
statistics, as every zarrow write).

Timed in one datafusion-python 55 process, the engines interleaved, the median
of R rounds: each query over the Zarr table (`zarrow.table`, DataFusion through
zarrow's provider) and over the Parquet copy (DataFusion's own scan with
`pushdown_filters` and `reorder_filters` on: the strongest Parquet baseline).
Each Zarr answer is checked against the Parquet one. Also: the bytes of the
statistics against the store's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benches" / "compare" / "data" / "w11"
QUERIES = {
    "a": "SELECT barcode, n_genes, score FROM t WHERE sample = 'S0117'",
    "b": "SELECT barcode, score FROM t WHERE day BETWEEN 1000 AND 1010",
    "c": "SELECT barcode FROM t WHERE n_genes = 4321 AND score < 0.01",
    # Issue 50: DataFusion's dynamic filters (a TopK's threshold, a hash
    # join's build side) at the scan.
    "d": "SELECT barcode, day FROM t ORDER BY day LIMIT 10",
    "e": "SELECT barcode, day FROM t ORDER BY day DESC LIMIT 10",
    "f": "WITH s(sample) AS (VALUES ('S0017'), ('S0117'), ('S0190')) "
         "SELECT t.barcode FROM t JOIN s ON t.sample = s.sample",
    "f-in": "SELECT barcode FROM t WHERE sample IN ('S0017', 'S0117', 'S0190')",
}



def sessions(parquet: Path, zarr: Path):
    """Two datafusion-python sessions with table `t`: the Parquet file read by
    DataFusion's own scan, with `pushdown_filters` and `reorder_filters` on (the
    strongest Parquet baseline), and the Zarr copy through `zarrow.table`."""
    import datafusion
    import zarrow

    config = (datafusion.SessionConfig()
              .set("datafusion.execution.parquet.pushdown_filters", "true")
              .set("datafusion.execution.parquet.reorder_filters", "true"))
    ctx_parquet = datafusion.SessionContext(config)
    ctx_parquet.register_parquet("t", str(parquet))
    ctx_zarr = datafusion.SessionContext()
    ctx_zarr.register_table("t", zarrow.table(zarr))
    return ctx_parquet, ctx_zarr


def generate(rows: int, zarrow: str, convert=None) -> tuple[Path, Path]:
    """The Parquet and Zarr copies (made if missing); `convert(parquet, zarr)`
    in place of the binary `zarrow` (the Python package's `zarrow.convert`)."""
    parquet = DATA / f"w11-{rows}.parquet"
    zarr = DATA / f"w11-{rows}.zarr"
    DATA.mkdir(parents=True, exist_ok=True)
    if not parquet.exists():
        rng = np.random.default_rng(11)
        sizes = rng.gamma(2.0, 1.0, 200)
        sizes = np.maximum((sizes / sizes.sum() * rows).astype(np.int64), 1)
        sizes[-1] += rows - sizes.sum()
        sample = np.repeat([f"S{i:04d}" for i in range(200)], sizes)
        day = np.arange(rows) * 2000 // rows
        table = pa.table({
            "sample": pa.array(sample, pa.string()),
            "day": pa.array(day, pa.int32()),
            "n_genes": pa.array(rng.integers(200, 8000, rows), pa.int32()),
            "score": pa.array(rng.random(rows), pa.float64()),
            "barcode": pa.array([f"BC{i:012d}-1" for i in range(rows)], pa.string()),
        })
        pq.write_table(table, parquet, write_page_index=True)
    if not zarr.exists() and convert is not None:
        convert(parquet, zarr)
    elif not zarr.exists():
        subprocess.run([zarrow, "convert", str(parquet), str(zarr), "--chunk-len", "100000"], check=True)
    return parquet, zarr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--zarrow", default=str(REPO / "target" / "release" / "zarrow"))
    ap.add_argument("--requests", action="store_true",
                    help="print each query's chunk requests and pruned rows (EXPLAIN ANALYZE through "
                         "zarrow.sql) instead of timing")
    ap.add_argument("--only", help="the queries to run, comma-separated (default: all)")
    args = ap.parse_args()
    queries = {k: q for k, q in QUERIES.items() if not args.only or k in args.only.split(",")}
    parquet, zarr = generate(args.rows, args.zarrow)

    import zarrow

    ctx_parquet, ctx_zarr = sessions(parquet, zarr)

    if args.requests:
        # Through zarrow's own session (`zarrow.sql`, as `zarrow sql`):
        # datafusion-python 55 pushes no filter or sort into an FFI table.
        import re
        for name, query in queries.items():
            answer = pa.table(zarrow.sql(f"EXPLAIN ANALYZE {query}", {"t": str(zarr)}))
            plan = "\n".join(str(v) for v in answer.column("plan").to_pylist())
            scan = next(line for line in plan.splitlines() if "file_type=zarr" in line)
            metric = lambda key: sum(int(v) for v in re.findall(rf"\b{key}=(\d+)", scan))
            files = len(re.findall(r"\[t:", scan)) or 1
            pruned = re.findall(r"rows_pruned_by_statistics=([\d.]+(?: [KMG])?)", scan)
            print(f"({name}) chunk requests {metric('requests')}, rows pruned by statistics "
                  f"{'+'.join(pruned)}, files {files}  {query}")
        return

    def run(ctx, query):
        start = time.perf_counter()
        result = ctx.sql(query).to_arrow_table()
        return time.perf_counter() - start, result

    for name, query in queries.items():
        times = {"zarr": [], "parquet": []}
        for _ in range(args.rounds):
            for engine, ctx in (("zarr", ctx_zarr), ("parquet", ctx_parquet)):
                t, result = run(ctx, query)
                times[engine].append(t)
                if engine == "zarr":
                    zarr_result = result
                else:
                    rows = lambda t: sorted(map(tuple, zip(*(
                        c.cast(pa.string()).to_pylist() if pa.types.is_string_view(c.type) or pa.types.is_binary_view(c.type)
                        else c.to_pylist() for c in t.columns))))
                    assert rows(zarr_result) == rows(result), name
        z, p = statistics.median(times["zarr"]), statistics.median(times["parquet"])
        spread = lambda v: f"{min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}"
        print(f"({name}) zarr {z * 1e3:.1f} ms [{spread(times['zarr'])}], "
              f"parquet {p * 1e3:.1f} ms [{spread(times['parquet'])}]: ratio {z / p:.2f}  {query}")

    stats = sum(f.stat().st_size for f in zarr.rglob("zarrow.stats"))
    total = sum(f.stat().st_size for f in zarr.rglob("*") if f.is_file())
    print(f"statistics: {stats} bytes of {total} ({100 * stats / total:.3f}%)")


if __name__ == "__main__":
    main()
