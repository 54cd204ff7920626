#!/usr/bin/env python3
"""Issue 27's targets: zarrow inside the Python engines, against each engine's own
Parquet path (and anndata + pandas), in one run.

    .venv/bin/python benches/compare/engines.py [--runs N] [--anndata-runs N]

Run it with the zarrow package built in release (`maturin build --release`, then
`PYTHONPATH=DIR` of the unpacked wheel): CI's build is not optimised.

* **Polars**, on W8's 10M-row anndata obs (`anndata_obs.py write` makes it; this
  script writes it if missing): the query

      scan.filter(pl.col("cell_type") == "type_0007")
          .group_by("sample").agg(pl.len(), pl.col("n_counts").mean())

  over `zarrow.scan(obs)`, over `pl.scan_parquet` of zarrow's own Parquet export of
  that obs (`zarrow.convert`), and as anndata's `read_elem` then the same query in
  pandas (a fresh process each run; the time inside it, imports excluded).
* **datafusion-python 55**, on W10's 10M rows (`sql.py` makes them): W10's group-by
  over `ctx.register_table("t", zarrow.table(zarr))`, against `zarrow.sql` running
  the same query over the same store (zarrow's embedded DataFusion, no FFI).
* **DuckDB 2.0**, on W10's rows: the group-by, and a filtered one (`WHERE i > X`),
  over `zarrow.dataset(zarr)` against DuckDB's `read_parquet` of the same rows.

The in-process peers are interleaved, every one once per round; medians of
`--runs`. Every zarrow result is checked equal to its Parquet peer's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
from datafusion import SessionContext  # noqa: E402

import zarrow  # noqa: E402
from sql import DATA as W10, GROUP_BY  # noqa: E402

OBS_STORE = HERE / "data" / "anndata_obs.zarr"
OBS_PARQUET = HERE / "data" / "anndata_obs_out" / "zarrow.parquet"
CELL_TYPE = "type_0007"
FILTERED = "SELECT s, count(*) AS n FROM t WHERE i > 1000000000000 GROUP BY s"

PANDAS = """
import sys, time, warnings
warnings.filterwarnings("ignore")
import anndata, zarr
start = time.perf_counter()
obs = anndata.io.read_elem(zarr.open_group(sys.argv[1], mode="r")["obs"])
out = (obs[obs["cell_type"] == sys.argv[2]]
       .groupby("sample", observed=True, dropna=False)
       .agg(len=("n_counts", "size"), n_counts=("n_counts", "mean")))
print(time.perf_counter() - start, len(out))
"""


def polars_query(lf: pl.LazyFrame) -> pl.DataFrame:
    return (
        lf.filter(pl.col("cell_type") == CELL_TYPE)
        .group_by("sample")
        .agg(pl.len(), pl.col("n_counts").mean())
        .with_columns(pl.col("sample").cast(pl.String))
        .sort("sample", nulls_last=True)
    )


def interleaved(runs: int, peers: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median wall time of each peer, every one run once per round."""
    walls: dict[str, list[float]] = {name: [] for name in peers}
    for _ in range(runs):
        for name, run in peers.items():
            start = time.perf_counter()
            run()
            walls[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in walls.items()}


def sorted_table(reader) -> pa.Table:
    table = pa.table(reader) if not isinstance(reader, pa.Table) else reader
    table = table.cast(pa.schema([f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f
                                  for f in table.schema]))
    return table.sort_by("s")


def equal(a: pa.Table, b: pa.Table, what: str) -> None:
    if a.num_rows != b.num_rows or a.column_names != b.column_names:
        raise SystemExit(f"{what}: {a.shape} against {b.shape}")
    for name in a.column_names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        close = all(p == q or (isinstance(p, float) and abs(p - q) <= 1e-9 * max(1.0, abs(q)))
                    for p, q in zip(x, y))
        if not close:
            raise SystemExit(f"{what}: column {name} differs")


def bench_polars(runs: int, anndata_runs: int) -> list[str]:
    if not OBS_STORE.exists():
        subprocess.run([sys.executable, str(HERE / "anndata_obs.py"), "write"], check=True)
    if not OBS_PARQUET.exists():
        OBS_PARQUET.parent.mkdir(parents=True, exist_ok=True)
        zarrow.convert(OBS_STORE / "obs", OBS_PARQUET)
    obs = str(OBS_STORE / "obs")
    ours = polars_query(zarrow.scan(obs)).collect()
    theirs = polars_query(pl.scan_parquet(OBS_PARQUET)).collect()
    if not ours.equals(theirs):
        raise SystemExit(f"Polars: zarrow.scan gave\n{ours}\nscan_parquet gave\n{theirs}")
    medians = interleaved(runs, {
        "zarrow.scan": lambda: polars_query(zarrow.scan(obs)).collect(),
        "pl.scan_parquet": lambda: polars_query(pl.scan_parquet(OBS_PARQUET)).collect(),
    })
    pandas = []
    for _ in range(anndata_runs):
        out = subprocess.run([sys.executable, "-c", PANDAS, str(OBS_STORE), CELL_TYPE],
                             check=True, capture_output=True, text=True).stdout.split()
        if int(out[1]) != ours.height:
            raise SystemExit(f"pandas found {out[1]} groups, Polars {ours.height}")
        pandas.append(float(out[0]))
    medians["anndata read_elem + pandas"] = statistics.median(pandas)
    z = medians["zarrow.scan"]
    return [
        f"Polars, W8 obs (10M rows), filter + group_by ({ours.height} groups):",
        *(f"  {name:32s} {wall:8.3f} s" for name, wall in medians.items()),
        f"  zarrow.scan / scan_parquet: {z / medians['pl.scan_parquet']:.2f}x (target <= 1.3x)",
        f"  anndata + pandas / zarrow.scan: {medians['anndata read_elem + pandas'] / z:.1f}x (target >= 10x)",
    ]


def bench_datafusion(runs: int) -> list[str]:
    store = W10 / "t10000000.zarr"
    if not store.exists():
        raise SystemExit(f"{store} is missing: run benches/compare/sql.py once first")

    def ffi() -> pa.Table:
        ctx = SessionContext()
        ctx.register_table("t", zarrow.table(store))
        return ctx.sql(GROUP_BY).to_arrow_table()

    def embedded() -> pa.Table:
        return pa.table(zarrow.sql(GROUP_BY, {"t": store}))

    equal(sorted_table(ffi()), sorted_table(embedded()), "datafusion-python")
    medians = interleaved(runs, {"datafusion-python + zarrow.table": ffi, "zarrow.sql": embedded})
    ratio = medians["datafusion-python + zarrow.table"] / medians["zarrow.sql"]
    return [
        "datafusion-python 55, W10 group-by (10M rows):",
        *(f"  {name:32s} {wall:8.3f} s" for name, wall in medians.items()),
        f"  datafusion-python / zarrow.sql: {ratio:.2f}x (target <= 1.1x)",
    ]


def bench_duckdb(runs: int) -> list[str]:
    store, parquet = W10 / "t10000000.zarr", W10 / "t10000000.parquet"
    lines = ["DuckDB 2.0, W10 rows (10M):"]
    for label, query in (("group-by", GROUP_BY), ("filtered group-by", FILTERED)):
        con = duckdb.connect()

        def over_zarr() -> pa.Table:
            ds = zarrow.dataset(store)  # noqa: F841 - DuckDB finds it by name
            return con.sql(query.replace("FROM t", "FROM ds")).arrow()

        def over_parquet() -> pa.Table:
            return con.sql(query.replace("FROM t", f"FROM read_parquet('{parquet}')")).arrow()

        equal(sorted_table(over_zarr()), sorted_table(over_parquet()), f"DuckDB {label}")
        medians = interleaved(runs, {"zarrow.dataset": over_zarr, "read_parquet": over_parquet})
        lines += [f"  {label}:",
                  *(f"    {name:30s} {wall:8.3f} s" for name, wall in medians.items()),
                  f"    zarrow.dataset / read_parquet: "
                  f"{medians['zarrow.dataset'] / medians['read_parquet']:.2f}x (target <= 1.5x)"]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--anndata-runs", type=int, default=3)
    ap.add_argument("--only", choices=["polars", "datafusion", "duckdb"])
    args = ap.parse_args()
    print(json.dumps({"zarrow": zarrow.__file__, "polars": pl.__version__, "duckdb": duckdb.__version__,
                      "pyarrow": pa.__version__}))
    for name, bench in (("polars", lambda: bench_polars(args.runs, args.anndata_runs)),
                        ("datafusion", lambda: bench_datafusion(args.runs)),
                        ("duckdb", lambda: bench_duckdb(args.runs))):
        if args.only in (None, name):
            print("\n".join(bench()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
