#!/usr/bin/env python3
"""anndata obs table -> Parquet: the workload and the anndata/pandas baseline.

    # 1. write the workload: an anndata obs dataframe of N rows, Zarr v3, by anndata 0.12.19
    .venv/bin/python benches/compare/anndata_obs.py write [--rows 10000000] [--store PATH]

    # 2. time the baseline (and zarrow, if given): wall time and peak RSS of a fresh process
    .venv/bin/python benches/compare/anndata_obs.py time [--store PATH] [--zarrow BIN] [--runs 3]

The table (seeded, deterministic): a string index `cell_id`; 3 categorical string columns
with 10 / 100 / 1000 categories (int8 / int8 / int16 codes on disk, ~1% missing -> -1 in
the first); 2 nullable columns (Int64 and boolean, ~5% NA); 5 numeric columns (float64,
float64 with ~2% NaN, float32, int32, int64). Written with
anndata.io.write_elem(zarr.open_group(store, zarr_format=3), "obs", df) under
anndata.settings.zarr_write_format = 3.

The baseline is exactly `anndata.io.read_elem(zarr.open_group(path)["obs"]).to_parquet(out)`
run in a child process; this script measures the child's wall time (median of --runs) and
peak RSS (getrusage RUSAGE_CHILDREN ru_maxrss, as benches/compare/run.py does). With
--zarrow BIN it also times `BIN convert STORE/obs OUT.parquet` the same way. Results are
printed and appended as one JSON line per run to <store>.results.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

REPO = Path(__file__).resolve().parents[2]
DEFAULT_STORE = REPO / "benches" / "compare" / "data" / "anndata_obs.zarr"


def make_obs(n: int, seed: int = 0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)

    def categorical(k: int, prefix: str, missing: float) -> pd.Categorical:
        codes = rng.integers(0, k, n).astype(np.int16 if k > 127 else np.int8)
        if missing:
            codes[rng.random(n) < missing] = -1
        cats = [f"{prefix}_{i:04d}" for i in range(k)]
        return pd.Categorical.from_codes(codes, categories=cats)

    na = rng.random(n) < 0.05
    nab = rng.random(n) < 0.05
    f2 = rng.standard_normal(n)
    f2[rng.random(n) < 0.02] = np.nan
    index = pd.Index(np.char.add("cell_", np.arange(n).astype("U9")).astype(object), name="cell_id")
    return pd.DataFrame(
        {
            "sample": categorical(10, "sample", 0.01),
            "cell_type": categorical(100, "type", 0.0),
            "cluster": categorical(1000, "cluster", 0.0),
            "n_genes": pd.arrays.IntegerArray(rng.integers(200, 8000, n, dtype=np.int64), na),
            "is_doublet": pd.arrays.BooleanArray(rng.random(n) < 0.1, nab),
            "total_counts": rng.gamma(2.0, 2000.0, n),
            "score": f2,
            "pct_mito": rng.random(n, dtype=np.float32) * 20,
            "n_counts": rng.integers(0, 100_000, n, dtype=np.int32),
            "barcode_rank": rng.permutation(n).astype(np.int64),
        },
        index=index,
    )


def cmd_write(args) -> int:
    import anndata as ad
    import zarr

    store = Path(args.store)
    if store.exists():
        shutil.rmtree(store)
    store.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    df = make_obs(args.rows)
    t1 = time.perf_counter()
    ad.settings.zarr_write_format = 3
    root = zarr.open_group(str(store), mode="w", zarr_format=3)
    ad.io.write_elem(root, "obs", df)
    t2 = time.perf_counter()
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    chunks = zarr.open_group(str(store), mode="r")["obs/total_counts"].chunks
    print(f"wrote {store}: {args.rows:,} rows x {df.shape[1]} cols (+ index), {size / 2**20:.1f} MiB on disk, "
          f"chunks {chunks}; build {t1 - t0:.1f}s, anndata write {t2 - t1:.1f}s")
    return 0


BASELINE = """
import sys, warnings
warnings.filterwarnings("ignore")
import anndata, zarr
anndata.io.read_elem(zarr.open_group(sys.argv[1], mode="r")["obs"]).to_parquet(sys.argv[2])
"""

# runs the command in a grandchild so ru_maxrss (RUSAGE_CHILDREN) covers exactly that process
RSS_WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
if p.returncode:
    sys.stderr.write(p.stderr[-2000:])
    sys.exit(p.returncode)
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(cmd: list[str]) -> tuple[float, float]:
    proc = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    wall, kib = proc.stdout.split()
    return float(wall), int(kib) / 1024


def cmd_time(args) -> int:
    import pyarrow.parquet as pq

    store = Path(args.store)
    if not (store / "obs").exists():
        print(f"no {store}/obs: run `{sys.argv[0]} write` first", file=sys.stderr)
        return 2
    out_dir = store.parent / "anndata_obs_out"
    out_dir.mkdir(exist_ok=True)
    peers = {"anndata+pandas": [sys.executable, "-c", BASELINE, str(store), str(out_dir / "anndata.parquet")]}
    if args.zarrow:
        zarrow = [sys.executable, args.zarrow] if args.zarrow.endswith(".py") else [args.zarrow]
        peers["zarrow"] = [*zarrow, "convert", str(store / "obs"), str(out_dir / "zarrow.parquet"), "--overwrite"]
    results = []
    for name, cmd in peers.items():
        walls, rss = [], []
        for _ in range(args.runs):
            w, r = measure(cmd)
            walls.append(w)
            rss.append(r)
        out = Path(next(a for a in reversed(cmd) if a.endswith(".parquet")))
        rows = pq.ParquetFile(out).metadata.num_rows
        res = {"peer": name, "rows": rows, "runs": args.runs, "wall_s_median": round(statistics.median(walls), 3),
               "wall_s_all": [round(w, 3) for w in walls], "peak_rss_mib_max": round(max(rss), 1),
               "parquet_mib": round(out.stat().st_size / 2**20, 2), "store": str(store),
               "machine": f"{platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}",
               "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        results.append(res)
        print(f"{name:15s} {rows:>12,} rows  wall {res['wall_s_median']:8.2f} s (median of {args.runs})  "
              f"peak RSS {res['peak_rss_mib_max']:8.0f} MiB  parquet {res['parquet_mib']:.1f} MiB")
    with open(str(store) + ".results.jsonl", "a") as f:
        for res in results:
            f.write(json.dumps(res) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the anndata obs store")
    w.add_argument("--rows", type=int, default=10_000_000)
    w.add_argument("--store", default=str(DEFAULT_STORE))
    t = sub.add_parser("time", help="time anndata read_elem(...).to_parquet (and zarrow)")
    t.add_argument("--store", default=str(DEFAULT_STORE))
    t.add_argument("--zarrow", help="a zarrow binary (or a .py stand-in, run with this python); "
                                    "times `zarrow convert STORE/obs OUT.parquet` too")
    t.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    return cmd_write(args) if args.cmd == "write" else cmd_time(args)


if __name__ == "__main__":
    sys.exit(main())
