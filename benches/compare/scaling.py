#!/usr/bin/env python3
"""Scaling (issue 42): W1 and W10 at 1, 2 (and 4, 8 where the machine has them)
threads, a model of 16 and 64 cores, and the figure in docs/architecture.md.

    .venv/bin/python benches/compare/scaling.py --compare BIN --zarrow BIN [--runs N] [--png PATH]

* W1: 10,000,000 short strings (vlen-utf8 + zstd, chunks of 1,000,000, written by
  zarr-python), read by `zarrow_compare read` as Utf8 and as Utf8View, and the
  zstd bound (`zarrow_compare bound`: read and decompress every chunk, nothing
  else), with RAYON_NUM_THREADS=T.
* W10: `SELECT s, count(*), avg(f) FROM t GROUP BY s` over 10,000,000 rows
  (benches/compare/sql.py's data: run that once first), over the Zarr table and
  over the Parquet file, `zarrow sql --partitions T` with RAYON_NUM_THREADS=T and
  DataFusion's runtime on T threads (TOKIO_WORKER_THREADS=T).

Rounds are interleaved (every job once per round); medians. The model, per job:
the work divides into `units` pieces (W1: 10 chunks; W10: the table's chunks or
row groups, 10 each) that run on min(T, units) threads, plus a serial part:

    t(T) = serial + ceil(units / T) * unit,   unit = (t(1) - serial) / units

`serial` is fitted from the 1- and 2-thread times (Amdahl on what the two
measure). It assumes that a core runs a unit as fast at 64 cores as at 1 (no
memory-bandwidth limit: W1 moves about 330 MB, 6 ms at 50 GB/s, which the table
reports beside each prediction), and that nothing else shares the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402
from sql import DATA as W10_DATA, GROUP_BY  # noqa: E402

W1_ROWS = 10_000_000
W1_CHUNK = 1_000_000
UNITS = 10
# Bytes W1 moves through memory: its zstd chunks read, about 200 MB decoded
# (values and offsets) written.
W1_BYTES = 330e6
BANDWIDTH = 50e9


def w1_store(path: Path | None) -> Path:
    if path is not None:
        return path
    store = bench.DATA / "scaling_w1.zarr"
    if not (store / "zarr.json").exists():
        from zarr.codecs import ZstdCodec

        bench.write_zarr_python(store, bench.short_strings(W1_ROWS), W1_CHUNK, [ZstdCodec(level=0)])
    return store


def run_timed(cmd: list[str], threads: int, program_times_itself: bool) -> float:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "TOKIO_WORKER_THREADS": str(threads)}
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-500:]}")
    return float(done.stdout.split()[0]) if program_times_itself else elapsed


def fit(t1: float, t2: float, units: int = UNITS) -> tuple[float, float]:
    """(serial, unit) from the 1- and 2-thread times (see the module docs)."""
    waves2 = math.ceil(units / 2)
    # t1 = s + units * u; t2 = s + waves2 * u
    unit = max((t1 - t2) / (units - waves2), 0.0)
    serial = max(t1 - units * unit, 0.0)
    return serial, unit


def model(serial: float, unit: float, threads: int, units: int = UNITS) -> float:
    return serial + math.ceil(units / min(threads, units)) * unit


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", required=True, help="the zarrow_compare example (release)")
    parser.add_argument("--zarrow", required=True, help="the zarrow binary (release)")
    parser.add_argument("--w1", type=Path, help="a W1 store (default: made under benches/compare/data)")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--png", type=Path, default=bench.REPO / "docs" / "scaling.png")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    args = parser.parse_args()
    w1 = w1_store(args.w1)
    zarr, parquet = W10_DATA / "t10000000.zarr", W10_DATA / "t10000000.parquet"
    if not (zarr.exists() and parquet.exists()):
        raise SystemExit("W10's data is missing: run benches/compare/sql.py first")
    out = W10_DATA / "scaling.arrow"
    cores = os.cpu_count() or 1
    counts = [t for t in (1, 2, 4, 8) if t <= cores]
    jobs = {
        "W1 bound (zstd)": ([args.compare, "bound", str(w1)], True),
        "W1 zarrow -> Utf8": ([args.compare, "read", str(w1), "utf8"], True),
        "W1 zarrow -> Utf8View": ([args.compare, "read", str(w1), "utf8-view"], True),
    }
    sql = lambda table, t: [args.zarrow, "sql", GROUP_BY, "--table", f"t={table}", "--output", str(out),
                            "--overwrite", "--partitions", str(t)]
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.runs):
        for t in counts:
            for name, (cmd, itself) in jobs.items():
                times.setdefault((name, t), []).append(run_timed(cmd, t, itself))
            for name, table in (("W10 over Zarr", zarr), ("W10 over Parquet", parquet)):
                times.setdefault((name, t), []).append(run_timed(sql(table, t), t, False))
    names = [*jobs, "W10 over Zarr", "W10 over Parquet"]
    medians = {(n, t): statistics.median(times[(n, t)]) for n in names for t in counts}
    predicted = [16, 64]
    print(f"{cores} cores; medians of {args.runs} interleaved rounds\n")
    head = " | ".join(f"{t} thr." for t in counts)
    print(f"| job | {head} | serial (fit) | 16 cores (model) | 64 cores (model) |")
    print("|---|" + "---|" * (len(counts) + 3))
    fits = {}
    for n in names:
        serial, unit = fit(medians[(n, 1)], medians[(n, 2)])
        fits[n] = (serial, unit)
        cells = " | ".join(f"{medians[(n, t)]:.3f} s" for t in counts)
        preds = " | ".join(f"{model(serial, unit, p):.3f} s ({medians[(n, 1)] / model(serial, unit, p):.1f}x)"
                           for p in predicted)
        print(f"| {n} | {cells} | {serial:.3f} s | {preds} |")
    print(f"\nW1's memory traffic floor at {BANDWIDTH / 1e9:.0f} GB/s: {W1_BYTES / BANDWIDTH * 1e3:.1f} ms")
    for n in jobs:
        if n != "W1 bound (zstd)":
            for p in [1, 2, 16, 64]:
                bound = model(*fits["W1 bound (zstd)"], p) if p > 2 else medians[("W1 bound (zstd)", p)]
                mine = model(*fits[n], p) if p > 2 else medians[(n, p)]
                print(f"{n} / bound at {p} threads: {mine / bound:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({f"{n}@{t}": v for (n, t), v in medians.items()}, indent=1))
    plot(args.png, names, counts, medians, fits)
    return 0


def plot(png: Path, names, counts, medians, fits) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    xs = [1, 2, 4, 8, 16, 32, 64]
    for n in names:
        serial, unit = fits[n]
        line, = ax.plot(xs, [model(serial, unit, x) for x in xs], linestyle="--", linewidth=1)
        ax.plot(counts, [medians[(n, t)] for t in counts], marker="o", linestyle="none",
                color=line.get_color(), label=n)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("threads (W10: partitions)")
    ax.set_ylabel("seconds")
    ax.set_title("W1 and W10: measured (dots) and modelled (dashed)")
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png)
    print(f"\nwrote {png}")


if __name__ == "__main__":
    sys.exit(main())
