#!/usr/bin/env python3
"""Where issue 27's two unmet targets go: CPU time (user and system, this
process's threads) beside wall time, for the Polars and DuckDB queries of
`engines.py`, split into the parts each path is made of.

    .venv/bin/python benches/compare/engines_cpu.py [--runs N]

Run it with the package built in release (as `engines.py`). On 2 cores a query
cannot take less wall time than half its CPU time; the lines below show which
part's CPU time alone leaves the target out of reach:

* Polars: zstd decompression of the chunks the scan reads (numcodecs' Zstd, one
  thread), zarrow's read of those columns (with and without the categorical
  prefilter), the whole scan, and Polars' whole query over Parquet.
* DuckDB: zarrow's read of `s` and `f`, DuckDB's query over the same columns
  already in memory as an Arrow table (no read at all; plain strings, string
  views, and dictionary-encoded strings as Parquet stores them), the query over
  `zarrow.dataset`, and over `read_parquet`.

Medians of `--runs`, each part run once per round.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
from numcodecs import Zstd  # noqa: E402

import zarrow  # noqa: E402
from engines import CELL_TYPE, OBS_PARQUET, OBS_STORE, polars_query  # noqa: E402
from sql import DATA as W10, GROUP_BY  # noqa: E402


def measure(runs: int, parts: dict[str, Callable[[], object]]) -> list[str]:
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in parts}
    for _ in range(runs):
        for name, run in parts.items():
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            run()
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
            times[name].append((wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime))
    lines = [f"  {'':44s} {'wall':>7s} {'user':>7s} {'sys':>7s}"]
    for name, samples in times.items():
        wall, user, system = (statistics.median(s[i] for s in samples) for i in range(3))
        lines.append(f"  {name:44s} {wall:7.4f} {user:7.4f} {system:7.4f}")
    return lines


def drain(reader) -> None:
    while reader._next_stream() is not None:
        pass


def polars_parts(runs: int) -> list[str]:
    obs = OBS_STORE / "obs"
    columns = ["cell_type", "sample", "n_counts"]
    chunks = [p.read_bytes() for c in ("cell_type/codes", "sample/codes", "n_counts")
              for p in sorted((obs / c / "c").iterdir())]
    zstd = Zstd()
    opened = dict(string_type="utf8-view", anonymous=False)
    return ["Polars, W8 obs (s):", *measure(runs, {
        "zstd of the three arrays' chunks (1 thread)": lambda: [len(zstd.decode(c)) for c in chunks],
        "zarrow read of the three columns": lambda: drain(zarrow._open(obs, columns, None, **opened)),
        "  with the categorical prefilter": lambda: drain(
            zarrow._open(obs, columns, None, keep=[("cell_type", [CELL_TYPE])], **opened)),
        "zarrow.scan query": lambda: polars_query(zarrow.scan(obs)).collect(),
        "pl.scan_parquet query": lambda: polars_query(pl.scan_parquet(OBS_PARQUET)).collect(),
    })]


def duckdb_parts(runs: int) -> list[str]:
    store, parquet = W10 / "t10000000.zarr", W10 / "t10000000.parquet"
    plain = pa.table(zarrow.read(store, columns=["s", "f"], string_type="utf8"))
    tables = {
        "plain": plain,
        "views": pa.table(zarrow.read(store, columns=["s", "f"], string_type="utf8-view")),
        "dictionary": plain.set_column(0, "s", plain.column("s").dictionary_encode()),
    }

    def query(table: str, over: object = None) -> object:
        con = duckdb.connect()
        if over is not None:
            con.register(table, over)
        return con.sql(GROUP_BY.replace("FROM t", f"FROM {table}")).fetchall()

    return ["DuckDB, W10 group-by (s):", *measure(runs, {
        "zarrow read of s, f": lambda: drain(zarrow.read(store, columns=["s", "f"], string_type="utf8")),
        **{f"DuckDB over them in memory, {name}": (lambda name=name: query(name, tables[name]))
           for name in tables},
        "DuckDB over zarrow.dataset": lambda: query("ds", zarrow.dataset(store)),
        "DuckDB over read_parquet": lambda: query(f"read_parquet('{parquet}')"),
    })]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if not OBS_PARQUET.exists() or not (W10 / "t10000000.zarr").exists():
        raise SystemExit("run benches/compare/engines.py once first (it writes the data)")
    print("\n".join(polars_parts(args.runs) + duckdb_parts(args.runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
