#!/usr/bin/env python3
"""A/B of two `zarrow` binaries on W1, W8 and W10, interleaved (issue 50's "no slower").

Usage: benches/compare/ab.py ROUNDS OLD_BIN NEW_BIN [--only W1|W8|W10 ...]

The workloads, made here if missing (under benches/compare/data/ab):
- W1: `zarrow convert w1.zarr out.arrow`, W1 as run.py makes it (10,000,000 strings
  of 0-32 bytes, vlen-utf8 + zstd level 0, chunks of 1,000,000, by zarr-python);
- W8: `zarrow convert obs.zarr/obs out.parquet`, the anndata obs of
  `anndata_obs.py write` (10,000,000 rows);
- W10: `zarrow sql` of sql.py's group-by over its Zarr table (10,000,000 rows,
  converted by NEW_BIN).

Every run is a fresh process: wall time around spawn..wait4, CPU the child's
user + system from `os.wait4`. One untimed warm-up run of each binary first; then
ROUNDS rounds, and which binary goes first alternates from round to round. Prints
per workload and binary the median, p25-p75 and min-max of wall and CPU, and the
paired (per-round) new/old ratios of wall time. The two binaries' outputs are
compared byte for byte after the warm-up (W10: as sorted rows).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "ab"
PY = sys.executable


def w1() -> Path:
    store = DATA / "w1.zarr"
    if not (store / "zarr.json").exists():
        from zarr.codecs import ZstdCodec

        from run import short_strings, write_zarr_python

        write_zarr_python(store, short_strings(10_000_000), 1_000_000, [ZstdCodec(level=0)])
    return store


def w8() -> Path:
    store = DATA / "obs.zarr"
    if not (store / "obs" / "zarr.json").exists():
        subprocess.run([PY, str(HERE / "anndata_obs.py"), "write", "--rows", "10000000", "--store", str(store)],
                       check=True)
    return store / "obs"


def w10(zarrow: str) -> Path:
    import sql

    _, zarr = sql.generate(10_000_000)
    if not zarr.exists():
        parquet = zarr.with_suffix(".parquet")
        subprocess.run([zarrow, "convert", str(parquet), str(zarr)], check=True, capture_output=True)
    return zarr


def quartiles(xs: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def run(cmd: list[str]) -> tuple[float, float]:
    # stderr to a file, not a pipe: a child that writes more than a pipe holds
    # would block before wait4 returns.
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if status:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime


def same_output(name: str, outs: list[Path]) -> str:
    if name == "W10":
        import pyarrow as pa

        tables = []
        for p in outs:
            with pa.ipc.open_file(p) as f:
                tables.append(f.read_all().sort_by("s"))
        return "same rows" if tables[0].equals(tables[1]) else "DIFFERENT rows"
    return "byte-identical" if filecmp.cmp(outs[0], outs[1], shallow=False) else "DIFFERENT bytes"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("rounds", type=int)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--only", action="append", choices=["W1", "W8", "W10"])
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("ROUNDS must be at least 2 (the spreads need two runs)")
    DATA.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    bins = {"old": args.old, "new": args.new}

    def commands(name: str, out: Path, binary: str) -> list[str]:
        if name == "W1":
            return [binary, "convert", str(w1()), str(out), "--overwrite"]
        if name == "W8":
            return [binary, "convert", str(w8()), str(out), "--overwrite"]
        import sql

        return [binary, "sql", sql.GROUP_BY, "--table", f"t={w10(args.new)}", "--output", str(out), "--overwrite"]

    suffix = {"W1": "arrow", "W8": "parquet", "W10": "arrow"}
    for name in args.only or ["W1", "W8", "W10"]:
        outs = {who: DATA / f"out-{name}-{who}.{suffix[name]}" for who in bins}
        cmds = {who: commands(name, outs[who], b) for who, b in bins.items()}
        for who in bins:  # warm-up, and the outputs to compare
            run(cmds[who])
        verdict = same_output(name, [outs["old"], outs["new"]])
        wall: dict[str, list[float]] = {w: [] for w in bins}
        cpu: dict[str, list[float]] = {w: [] for w in bins}
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for who in order:
                w, c = run(cmds[who])
                wall[who].append(w)
                cpu[who].append(c)
        print(f"\n{name}: {args.rounds} rounds, outputs {verdict}")
        print("| binary | wall median | wall p25-p75 | wall min-max | CPU median | CPU p25-p75 | CPU min-max |")
        print("|---|---|---|---|---|---|---|")
        for who in bins:
            wq, cq = quartiles(wall[who]), quartiles(cpu[who])
            print(f"| {who} | {statistics.median(wall[who]):.3f} s | {wq[0]:.3f}-{wq[1]:.3f} | "
                  f"{min(wall[who]):.3f}-{max(wall[who]):.3f} | {statistics.median(cpu[who]):.3f} s | "
                  f"{cq[0]:.3f}-{cq[1]:.3f} | {min(cpu[who]):.3f}-{max(cpu[who]):.3f} |")
        paired = [n / o for n, o in zip(wall["new"], wall["old"])]
        pq_ = quartiles(paired)
        print(f"new/old: wall {statistics.median(wall['new']) / statistics.median(wall['old']):.3f}, "
              f"CPU {statistics.median(cpu['new']) / statistics.median(cpu['old']):.3f}; "
              f"paired wall median {statistics.median(paired):.3f} (p25-p75 {pq_[0]:.3f}-{pq_[1]:.3f})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
