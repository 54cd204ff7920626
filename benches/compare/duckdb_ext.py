#!/usr/bin/env python3
"""Issue 51's targets: zarrow's DuckDB extension (`read_zarr`) against DuckDB's own
`read_parquet` over the same tables, in one DuckDB 2.0.0 process.

    .venv/bin/python benches/compare/duckdb_ext.py EXTENSION [--rounds 11] [--only NAME ...]
        [--dataset]

EXTENSION: a release build (`bash duckdb/build.sh`; CI's is not optimised).
`--dataset`: also time `zarrow.dataset` (the Python-side adapter) in the same run:
the zarrow package must then be a release build too.

Data (made if missing, by pyarrow and `zarrow.convert`, under benches/compare/data):
* W10 (sql.py's): 10M rows, `s` ~1,000 distinct strings (vlen-utf8 in Zarr), `i`
  int64, `f` float64; and the same rows as an anndata dataframe with `s` a
  categorical (`_cat.zarr`). Parquet: pyarrow's (zstd).
* W11 (w11.py's): an atlas-like obs of 10M rows, chunks of 100,000 rows, with
  statistics; Parquet by pyarrow with the page index.
* W8 (anndata_obs.py's): anndata's 10M-row obs; Parquet: pyarrow's copy of
  zarrow's export, with the page index.

Each round runs every peer of a query once, in turn, alternating which goes first;
the median of the rounds is reported with the ratio, and each zarrow answer is
checked against Parquet's (sorted).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import zarrow  # noqa: E402

W10 = HERE / "data" / "w10"
W11 = HERE / "data" / "w11"
W8_STORE = HERE / "data" / "anndata_obs.zarr"
W8_PARQUET = HERE / "data" / "anndata_obs_out" / "pyarrow.parquet"
ROWS = 10_000_000


def w10() -> tuple[Path, Path, Path]:
    from sql import categorical, generate

    parquet, zarr = generate(ROWS)
    if not zarr.exists():
        zarrow.convert(parquet, zarr)
    cat = categorical(parquet, "", convert=lambda src, dst: zarrow.convert(src, dst, layout="anndata"))
    return parquet, zarr, cat


def w11() -> tuple[Path, Path]:
    import w11 as gen

    return gen.generate(ROWS, "", convert=lambda p, z: zarrow.convert(p, z, chunk_len=100_000))


def w8() -> tuple[Path, Path]:
    if not W8_STORE.exists():
        raise SystemExit("make W8's data first: .venv/bin/python benches/compare/anndata_obs.py write")
    if not W8_PARQUET.exists():
        W8_PARQUET.parent.mkdir(parents=True, exist_ok=True)
        export = W8_PARQUET.with_name("zarrow-export.parquet")
        if not export.exists():
            zarrow.convert(W8_STORE / "obs", export)
        pq.write_table(pq.read_table(export), W8_PARQUET, write_page_index=True)
    return W8_STORE / "obs", W8_PARQUET


def connect(extension: str, threads: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "threads": threads})
    con.execute(f"LOAD '{extension}'")
    return con


def timed(con, query: str) -> tuple[float, list]:
    start = time.perf_counter()
    rows = con.execute(query).fetchall()
    return time.perf_counter() - start, rows


def normal(rows: list) -> list:
    """Rows compared across engines: sorted, floats rounded (an average's last
    bits depend on the order it was summed in)."""
    return sorted((tuple(round(v, 6) if isinstance(v, float) else v for v in r) for r in rows), key=repr)


def bench(con, name: str, query: str, peers: dict[str, str], rounds: int, reference: str) -> dict[str, float]:
    times: dict[str, list[float]] = {p: [] for p in peers}
    answers: dict[str, list] = {}
    order = list(peers)
    for r in range(rounds + 1):
        for peer in order if r % 2 else reversed(order):
            seconds, rows = timed(con, query.format(t=peers[peer]))
            if r:  # round 0 warms the page cache and the metadata
                times[peer].append(seconds)
            answers[peer] = normal(rows)
    for peer in peers:
        if answers[peer] != answers[reference]:
            raise SystemExit(f"{name}: {peer}'s answer differs from {reference}'s")
    medians = {p: statistics.median(t) for p, t in times.items()}
    base = medians[reference]
    cells = "  ".join(f"{p} {m * 1000:8.1f} ms ({m / base:5.2f}x)" for p, m in medians.items())
    print(f"{name:34} {cells}", flush=True)
    return medians


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("extension")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--dataset", action="store_true")
    args = ap.parse_args()
    want = lambda name: args.only is None or any(name.startswith(o) for o in args.only)  # noqa: E731
    print(f"duckdb {duckdb.__version__}; rounds {args.rounds}; medians, ratio to read_parquet")

    if want("W10"):
        parquet, zarr, cat = w10()
        group_by = "SELECT s, count(*) AS n, avg(f) AS f FROM {t} GROUP BY s"
        filtered = "SELECT s, count(*) AS n FROM {t} WHERE i > 1000000000000 GROUP BY s"
        for threads in (2, 1):
            con = connect(args.extension, threads)
            peers = {"parquet": f"read_parquet('{parquet}')", "zarr": f"read_zarr('{zarr}')"}
            if args.dataset:
                con.register("dataset", zarrow.dataset(zarr))
                peers["dataset"] = "dataset"
            bench(con, f"W10 group-by, {threads} thr", group_by, peers, args.rounds, "parquet")
            bench(con, f"W10 group-by categorical, {threads} thr", group_by,
                  {"parquet": peers["parquet"], "zarr": f"read_zarr('{cat}')",
                   "enum": f"read_zarr('{cat}', categorical_values := false)"}, args.rounds, "parquet")
            bench(con, f"W10 filtered group-by, {threads} thr", filtered, peers, args.rounds, "parquet")

    if want("W11"):
        parquet, zarr = w11()
        con = connect(args.extension, 2)
        peers = {"parquet": f"read_parquet('{parquet}')", "zarr": f"read_zarr('{zarr}')"}
        for name, query in {
            "W11 (a) sample = 'S0117'": "SELECT barcode, n_genes, score FROM {t} WHERE sample = 'S0117'",
            "W11 (b) day BETWEEN": "SELECT barcode, score FROM {t} WHERE day BETWEEN 1000 AND 1010",
        }.items():
            bench(con, name, query, peers, args.rounds, "parquet")

    if want("W8"):
        store, parquet = w8()
        con = connect(args.extension, 2)
        query = ("SELECT sample, count(*) AS n, avg(n_counts) AS m FROM {t} "
                 "WHERE cell_type = 'type_0007' GROUP BY sample")
        peers = {"parquet": f"read_parquet('{parquet}')", "zarr": f"read_zarr('{store}')",
                 "enum": f"read_zarr('{store}', categorical_values := false)"}
        bench(con, "W8 filter query", query, peers, args.rounds, "parquet")


if __name__ == "__main__":
    main()
