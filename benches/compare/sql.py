#!/usr/bin/env python3
"""W10 (issue 14): SQL over a Zarr table against the same query over Parquet.

Usage: benches/compare/sql.py [--rows N] [--runs R] [--zarrow BIN]

Data: N rows (default 10,000,000): `s` a string of ~1,000 distinct values, `i` an
int64, `f` a float64; written once by pyarrow to Parquet (zstd), and converted to
Zarr v3 by `zarrow convert` (vlen-utf8 + zstd, zarrow's default chunks). A second
Zarr store holds the same rows as anndata writes a dataframe (`--layout anndata`
from the same table with `s` dictionary-typed): `s` a categorical (int16 codes and
1,000 categories), the counterpart of Parquet's dictionary encoding.

Timed in fresh processes, median of R runs, 2 cores, same run:
* `zarrow sql "SELECT s, count(*), avg(f) FROM t GROUP BY s"` with t the Zarr store
  (zarrow's TableProvider, its defaults: strings as Utf8View, as DataFusion reads
  Parquet), with 2 partitions (the default on 2 cores) and with 1;
* the same binary and query with t the Parquet file (DataFusion's own Parquet scan);
* DuckDB 2.0.0 over the Parquet file (timed inside its process: no interpreter start);
* the group-by over the categorical store, read as SQL tables read it by default
  (each row a view of its category's string, as DataFusion's Parquet scan reads a
  dictionary-encoded column) and as a dictionary (`--categorical-values=false`);
* `SELECT * FROM t LIMIT 10` over each.

Each Zarr query's result is checked against the Parquet query's (sorted by `s`).
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


def categorical(parquet: Path, zarrow: str, convert=None) -> Path:
    """The rows of `parquet` as an anndata dataframe: `s` a categorical.
    `convert(source, store)` in place of the binary `zarrow` (the Python
    package's `zarrow.convert` with `layout="anndata"`)."""
    store = parquet.with_name(parquet.stem + "_cat.zarr")
    if not store.exists():
        table = pq.read_table(parquet)
        source = parquet.with_name(parquet.stem + "_dict.parquet")
        table = table.set_column(0, "s", table.column("s").dictionary_encode())
        pq.write_table(table, source, compression="zstd")
        if convert is not None:
            convert(source, store)
        else:
            subprocess.run([zarrow, "convert", str(source), str(store), "--layout", "anndata"], check=True,
                           capture_output=True)
        source.unlink()
    return store


DICTIONARY = ["--categorical-values=false"]


def same_result(zarrow: str, query: str, zarr: Path, parquet: Path, out: Path, extra: list[str]) -> None:
    """The query over the Zarr table gives the Parquet table's rows."""
    results = []
    for table, flags in ((zarr, extra), (parquet, [])):
        subprocess.run([zarrow, "sql", query, "--table", f"t={table}", "--output", str(out), "--overwrite",
                        *flags], check=True, capture_output=True)
        got = pa.ipc.open_file(out).read_all()
        got = got.set_column(0, "s", got.column("s").cast(pa.string()))
        results.append(got.sort_by("s"))
    zarr_rows, parquet_rows = results
    if zarr_rows.column("s") != parquet_rows.column("s") or zarr_rows.column("n") != parquet_rows.column("n"):
        raise SystemExit(f"{zarr.name}: the groups or counts differ from Parquet's")
    close = np.allclose(zarr_rows.column("f").to_numpy(), parquet_rows.column("f").to_numpy(), rtol=1e-12)
    if not close:
        raise SystemExit(f"{zarr.name}: the averages differ from Parquet's")


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
    cat = categorical(parquet, zarrow)
    out = DATA / "out.arrow"
    for store, extra in ((zarr, []), (cat, []), (cat, DICTIONARY)):
        same_result(zarrow, GROUP_BY, store, parquet, out, extra)

    def sql(query: str, table: Path, partitions: int | None = None, extra: tuple = ()) -> list[str]:
        cmd = [zarrow, "sql", query, "--table", f"t={table}", "--output", str(out), "--overwrite", *extra]
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
        ("zarrow sql, Zarr table with `s` categorical (anndata), 2 partitions",
         timed(sql(GROUP_BY, cat, 2), args.runs)),
        ("the same, read as a dictionary (--categorical-values=false)",
         timed(sql(GROUP_BY, cat, 2, DICTIONARY), args.runs)),
        ("LIMIT 10: zarrow sql, Zarr table", timed(sql(LIMIT, zarr), args.runs)),
        ("LIMIT 10: zarrow sql, Parquet", timed(sql(LIMIT, parquet), args.runs)),
    ]
    size = lambda p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    print(f"{args.rows:,} rows; Parquet {size(parquet) / 2**20:.0f} MiB, Zarr {size(zarr) / 2**20:.0f} MiB, "
          f"Zarr with `s` categorical {size(cat) / 2**20:.0f} MiB; median of {args.runs}; "
          "each Zarr query's result checked against Parquet's\n")
    print("| query | median |\n|---|---|")
    for name, t in rows:
        print(f"| {name} | {t:.3f} s |")
    zarr2, zarr1, df, duck, cat2, dictionary2 = (t for _, t in rows[:6])
    print(f"\nZarr (vlen-utf8) / DataFusion-on-Parquet: {zarr2 / df:.2f}x (target <= 1.5x)")
    print(f"Zarr with `s` categorical / DataFusion-on-Parquet: {cat2 / df:.2f}x (target <= 1.5x); "
          f"read as a dictionary: {dictionary2 / df:.2f}x")
    print(f"Zarr / DuckDB-on-Parquet: {zarr2 / duck:.2f}x")
    print(f"1 -> 2 partitions: {zarr1 / zarr2:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
