#!/usr/bin/env python3
"""W10 A/B: the same query with two or more zarrow binaries, interleaved.

Usage: benches/compare/sql_ab.py ROUNDS ZARROW_BIN [ZARROW_BIN ...]

Runs W10's group-by (benches/compare/sql.py, whose data it reuses: run that once
first) over the Zarr table and over the Parquet file with every binary in turn,
ROUNDS times, so that a shared machine's load touches them alike. Prints, per
binary and table, the median wall time and the median CPU time (user + system of
the child), then each binary's Zarr / Parquet ratios.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sql import DATA, GROUP_BY


def main() -> int:
    rounds, binaries = int(sys.argv[1]), sys.argv[2:]
    tables = {"zarr": DATA / "t10000000.zarr", "parquet": DATA / "t10000000.parquet"}
    wall: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    out = DATA / "ab.arrow"
    for _ in range(rounds):
        for binary in binaries:
            for name, table in tables.items():
                cmd = [binary, "sql", GROUP_BY, "--table", f"t={table}", "--output", str(out), "--overwrite"]
                start = time.perf_counter()
                child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, usage = os.wait4(child.pid, 0)
                elapsed = time.perf_counter() - start
                if status:
                    raise SystemExit(f"{' '.join(cmd)} failed: {child.stderr.read().decode()}")
                wall.setdefault((binary, name), []).append(elapsed)
                cpu.setdefault((binary, name), []).append(usage.ru_utime + usage.ru_stime)
    print("| binary | Zarr: wall / CPU | Parquet: wall / CPU | Zarr / Parquet (wall) |\n|---|---|---|---|")
    for binary in binaries:
        m = {k: (statistics.median(wall[(binary, k)]), statistics.median(cpu[(binary, k)])) for k in tables}
        print(f"| {Path(binary).name} | {m['zarr'][0]:.3f} s / {m['zarr'][1]:.3f} s | "
              f"{m['parquet'][0]:.3f} s / {m['parquet'][1]:.3f} s | {m['zarr'][0] / m['parquet'][0]:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
