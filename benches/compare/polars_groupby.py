#!/usr/bin/env python3
"""Issue 52 items 3 and 4: the cell-type group-by of the issue in Polars, a Zarr
scan against `pl.scan_parquet` of the same table, strings stored plain and
dictionary-encoded.

Usage: benches/compare/polars_groupby.py [--rows N] [--rounds R]

Data (made when absent, under benches/compare/data/groupby/): N rows
(default 2,000,000) of an atlas-like obs: `sample` 200 samples of uneven size
stored one after another, `cell_type` one of five, `day` sorted, `score`
random, `barcode` unique. Two Parquet files by pyarrow: `plain` (strings) and
`dict` (`sample` and `cell_type` as dictionaries, the Arrow schema stored, so
Polars reads them as categoricals). Three Zarr copies by `zarrow.convert`
(chunks of 100,000): from `plain` (vlen-utf8), from `dict` (anndata
categoricals: the layout zarrow writes dictionaries in), and `dict-values`:
the layout zarrow wrote dictionaries in before (the values as vlen-utf8, the
Arrow type `Dictionary(Int32, Utf8)` recorded; made from the plain copy by
recording that type), which zarrow reads by hashing every chunk's strings.

Queries, each peer in one process, interleaved (which goes first
alternates), the median of R rounds after a warm-up round, each answer
checked against Parquet's (sorted by sample, means to 1e-9):

- `cell_type == "NK"`, group by `sample`, mean of `score`;
- a plain scan of `sample`, `cell_type`, `barcode` against `zarrow.read` of
  them into a DataFrame (`pl.from_arrow`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import zarrow

DATA = Path(__file__).resolve().parent / "data" / "groupby"
TYPES = ["B", "T", "NK", "Mono", "DC"]


def generate(rows: int) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    paths = {
        "plain.parquet": DATA / f"plain-{rows}.parquet",
        "dict.parquet": DATA / f"dict-{rows}.parquet",
        "plain.zarr": DATA / f"plain-{rows}.zarr",
        "dict.zarr": DATA / f"dict-{rows}.zarr",
        "dict-values.zarr": DATA / f"dict-values-{rows}.zarr",
    }
    if not paths["plain.parquet"].exists() or not paths["dict.parquet"].exists():
        rng = np.random.default_rng(52)
        sizes = rng.gamma(2.0, 1.0, 200)
        sizes = np.maximum((sizes / sizes.sum() * rows).astype(np.int64), 1)
        sizes[-1] += rows - sizes.sum()
        sample = np.repeat([f"S{i:04d}" for i in range(200)], sizes)
        cell_type = np.array(TYPES)[rng.integers(0, len(TYPES), rows)]
        table = pa.table({
            "sample": pa.array(sample, pa.string()),
            "cell_type": pa.array(cell_type, pa.string()),
            "day": pa.array(np.arange(rows) * 2000 // rows, pa.int32()),
            "score": pa.array(rng.random(rows), pa.float64()),
            "barcode": pa.array([f"BC{i:012d}-1" for i in range(rows)], pa.string()),
        })
        pq.write_table(table, paths["plain.parquet"])
        encoded = table.set_column(0, "sample", table.column("sample").dictionary_encode())
        encoded = encoded.set_column(1, "cell_type", encoded.column("cell_type").dictionary_encode())
        pq.write_table(encoded, paths["dict.parquet"])
    for source, target in [("plain", "plain.zarr"), ("dict", "dict.zarr")]:
        if not paths[target].exists():
            zarrow.convert(paths[f"{source}.parquet"], paths[target], chunk_len=100_000)
    values = paths["dict-values.zarr"]
    if not values.exists():
        shutil.copytree(paths["plain.zarr"], values)
        for column in ["sample", "cell_type"]:
            doc = values / column / "zarr.json"
            meta = json.loads(doc.read_text())
            meta["attributes"]["zarrow"]["arrow_type"] = "Dictionary(Int32, Utf8)"
            doc.write_text(json.dumps(meta))
        # The consolidated copy of the same documents.
        root = values / "zarr.json"
        meta = json.loads(root.read_text())
        for column in ["sample", "cell_type"]:
            meta["consolidated_metadata"]["metadata"][column]["attributes"]["zarrow"]["arrow_type"] = (
                "Dictionary(Int32, Utf8)")
        root.write_text(json.dumps(meta))
    return paths


def group_by(frame: pl.LazyFrame) -> pl.DataFrame:
    return (frame.filter(pl.col("cell_type") == "NK")
            .group_by("sample").agg(pl.col("score").mean())
            .collect()
            .with_columns(pl.col("sample").cast(pl.String))
            .sort("sample"))


def same(got: pl.DataFrame, want: pl.DataFrame) -> bool:
    return (got["sample"].to_list() == want["sample"].to_list()
            and np.allclose(got["score"].to_numpy(), want["score"].to_numpy(), rtol=1e-9))


def timed(peers: dict, rounds: int, check) -> dict[str, float]:
    times: dict[str, list[float]] = {p: [] for p in peers}
    for round_ in range(rounds + 1):
        order = list(peers) if round_ % 2 == 0 else list(reversed(peers))
        for peer in order:
            start = time.perf_counter()
            got = peers[peer]()
            elapsed = time.perf_counter() - start
            check(peer, got)
            if round_:
                times[peer].append(elapsed)
    return {p: statistics.median(t) * 1e3 for p, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    paths = generate(args.rows)
    want = group_by(pl.scan_parquet(paths["plain.parquet"]))

    def check(peer, got):
        if not same(got, want):
            raise SystemExit(f"{peer} answers the group-by otherwise than Parquet")

    print("| cell-type group-by | scan_parquet | zarrow.scan | ratio |")
    print("|---|---|---|---|")
    for label, parquet, zarr in [
        ("strings (vlen-utf8)", "plain.parquet", "plain.zarr"),
        ("dictionaries (categoricals)", "dict.parquet", "dict.zarr"),
        ("dictionaries (values, the old layout)", "dict.parquet", "dict-values.zarr"),
    ]:
        med = timed({
            "parquet": lambda p=paths[parquet]: group_by(pl.scan_parquet(p)),
            "zarrow": lambda z=paths[zarr]: group_by(zarrow.scan(z)),
        }, args.rounds, check)
        print(f"| {label} | {med['parquet']:.1f} ms | {med['zarrow']:.1f} ms | "
              f"{med['zarrow'] / med['parquet']:.2f}x |")

    columns = ["sample", "cell_type", "barcode"]
    print()
    print("| plain scan of 3 columns | zarrow.read into a DataFrame | zarrow.scan | ratio |")
    print("|---|---|---|---|")
    for label, zarr in [("strings (vlen-utf8)", "plain.zarr"), ("dictionaries (categoricals)", "dict.zarr")]:
        rows = {}

        def count(peer, got, rows=rows):
            rows.setdefault("n", got.height)
            if got.height != rows["n"]:
                raise SystemExit(f"{peer}: {got.height} rows")

        med = timed({
            "read": lambda z=paths[zarr]: pl.DataFrame(zarrow.read(z, columns=columns)),
            "scan": lambda z=paths[zarr]: zarrow.scan(z).select(columns).collect(),
        }, args.rounds, count)
        print(f"| {label} | {med['read']:.1f} ms | {med['scan']:.1f} ms | {med['scan'] / med['read']:.2f}x |")


if __name__ == "__main__":
    main()
