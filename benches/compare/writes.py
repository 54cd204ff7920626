#!/usr/bin/env python3
"""Issue 28's targets: writes through engines, each run in a fresh process,
interleaved (every case once per round), medians and ratios printed.

* W6 through DataFusion: `COPY (SELECT * FROM p) TO 'x.zarr' STORED AS ZARR`
  (`zarrow sql`) against `zarrow convert` of the same Parquet file (W1's:
  10,000,000 strings of 0-32 ASCII bytes, zstd), both in chunks of 1,000,000.
  Target: within 1.2x.
* Appending 1,000,000 rows (an int64 and a float64 column) to a table of
  100,500,000 rows (chunks of 1,000,000: the last one half full, so each append
  rewrites one chunk per column) against writing the same 1,000,000 rows as a
  new table. Target: about the same (the ratio is reported).

    .venv/bin/python benches/compare/writes.py ZARROW [--runs N] [--big-rows N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402

W1_ROWS = 10_000_000
CHUNK = 1_000_000


def numbers(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table({
        "n": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "x": pa.array(rng.random(n)),
    })


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {done.stderr}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("zarrow")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-rows", type=int, default=100_500_000)
    args = parser.parse_args()
    z = str(Path(args.zarrow).resolve())
    data = bench.DATA / "writes"
    data.mkdir(parents=True, exist_ok=True)

    w1 = data / "w1.parquet"
    if not w1.exists():
        print(f"generating: {W1_ROWS:,} short strings", flush=True)
        pq.write_table(pa.table({"s": bench.short_strings(W1_ROWS)}), w1, compression="zstd")
    one_m = data / "one_m.parquet"
    if not one_m.exists():
        pq.write_table(numbers(10**12, CHUNK), one_m, compression="zstd")
    big = data / f"big_{args.big_rows}.zarr"
    if not (big / "zarr.json").exists():
        print(f"generating: a table of {args.big_rows:,} rows", flush=True)
        source = data / "big.parquet"
        with pq.ParquetWriter(source, numbers(0, 1).schema, compression="zstd") as w:
            for start in range(0, args.big_rows, 10 * CHUNK):
                w.write_table(numbers(start, min(10 * CHUNK, args.big_rows - start)))
        subprocess.run([z, "convert", str(source), str(big), "--chunk-len", str(CHUNK), "--overwrite"], check=True)
        source.unlink()

    if args.runs == 0:
        return
    out = data / "out"
    out.mkdir(exist_ok=True)
    copy = (f"COPY (SELECT * FROM p) TO '{out / 'copy.zarr'}' STORED AS ZARR "
            f"OPTIONS (chunk_len {CHUNK}, overwrite true)")
    cases = {
        "W6 zarrow convert": [z, "convert", str(w1), str(out / "convert.zarr"), "--chunk-len", str(CHUNK), "--overwrite"],
        "W6 COPY ... STORED AS ZARR": [z, "sql", copy, "--table", f"p={w1}"],
        "1M rows, a new table": [z, "convert", str(one_m), str(out / "new.zarr"), "--chunk-len", str(CHUNK), "--overwrite"],
        f"1M rows appended to {args.big_rows:,}": [z, "convert", str(one_m), str(big), "--append"],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.runs):
        for name, cmd in cases.items():
            times[name].append(timed(cmd))
        print(f"round {r + 1}: " + ", ".join(f"{n} {t[-1]:.3f}s" for n, t in times.items()), flush=True)
    median = {name: statistics.median(t) for name, t in times.items()}
    print()
    for name, m in median.items():
        print(f"| {name} | {m:.3f} s |")
    names = list(cases)
    print()
    print(f"| COPY / convert (target <= 1.2x) | {median[names[1]] / median[names[0]]:.2f}x |")
    print(f"| append to the big table / new table (target ~1x) | {median[names[3]] / median[names[2]]:.2f}x |")
    shutil.rmtree(out)


if __name__ == "__main__":
    main()
