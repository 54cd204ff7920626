#!/usr/bin/env python3
"""W11 (issue 40) in Polars and DuckDB: filtered queries over an atlas-like
obs, through zarrow (filters pushed into zarrow: chunks pruned by their
statistics) against each engine's own Parquet reader on the same table.

Usage: benches/compare/w11_engines.py [--rows N] [--rounds R] [--zarrow BIN]

The data are W11's (benches/compare/w11.py makes them, or this script does, the
same way): N rows (default 10,000,000) in Parquet written by pyarrow (page
index on) and in Zarr written by `zarrow convert` from it (chunks of 100,000,
with statistics).

Timed in one process, the four readers interleaved each round, the median of
R rounds (at least 11):
- Polars: `zarrow.scan(zarr)` against `pl.scan_parquet(parquet)`;
- DuckDB: `zarrow.dataset(zarr)` against `read_parquet(parquet)`.
Each zarrow answer is checked against the Parquet one (as sorted rows).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from w11 import generate

REPO = Path(__file__).resolve().parents[2]
QUERIES = {
    "a": "SELECT barcode, n_genes, score FROM t WHERE sample = 'S0117'",
    "b": "SELECT barcode, score FROM t WHERE day BETWEEN 1000 AND 1010",
}


def polars_query(name: str, lf: Any) -> Any:
    import polars as pl

    if name == "a":
        return lf.filter(pl.col("sample") == "S0117").select("barcode", "n_genes", "score")
    return lf.filter(pl.col("day").is_between(1000, 1010)).select("barcode", "score")


def rows(frame: Any) -> list:
    """A Polars frame's rows, sorted (categoricals and views as strings)."""
    import polars as pl

    return sorted(frame.with_columns(pl.col(pl.Categorical).cast(pl.String)).rows())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--zarrow", default=str(REPO / "target" / "release" / "zarrow"))
    args = ap.parse_args()
    parquet, zarr = generate(args.rows, args.zarrow)

    import duckdb
    import polars as pl
    import zarrow

    con = duckdb.connect()
    dataset = zarrow.dataset(zarr)
    con.register("zt", dataset)
    runs: dict[str, Callable[[str], Any]] = {
        "polars zarrow.scan": lambda q: polars_query(q, zarrow.scan(zarr)).collect(),
        "polars scan_parquet": lambda q: polars_query(q, pl.scan_parquet(parquet)).collect(),
        "duckdb zarrow.dataset": lambda q: con.sql(QUERIES[q].replace("FROM t", "FROM zt")).pl(),
        "duckdb read_parquet": lambda q: con.sql(QUERIES[q].replace("FROM t", f"FROM read_parquet('{parquet}')")).pl(),
    }
    pairs = [("polars zarrow.scan", "polars scan_parquet"), ("duckdb zarrow.dataset", "duckdb read_parquet")]
    for name, query in QUERIES.items():
        times: dict[str, list[float]] = {engine: [] for engine in runs}
        answers: dict[str, Any] = {}
        for _ in range(args.rounds):
            for engine, run in runs.items():
                start = time.perf_counter()
                answers[engine] = run(name)
                times[engine].append(time.perf_counter() - start)
        for zarr_engine, parquet_engine in pairs:
            assert rows(answers[zarr_engine]) == rows(answers[parquet_engine]), (name, zarr_engine)
            z, p = statistics.median(times[zarr_engine]), statistics.median(times[parquet_engine])
            spread = lambda v: f"{min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}"  # noqa: E731
            print(f"({name}) {zarr_engine} {z * 1e3:.1f} ms [{spread(times[zarr_engine])}], "
                  f"{parquet_engine} {p * 1e3:.1f} ms [{spread(times[parquet_engine])}]: "
                  f"ratio {z / p:.2f}  ({answers[zarr_engine].height} rows)  {query}")


if __name__ == "__main__":
    main()
