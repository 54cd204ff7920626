#!/usr/bin/env python3
"""Peak memory of zarrow on large linear-format documents, against their size.

Usage: check_linear_memory.py ZARROW_BIN

Issue 4 asks that a large array take no more than a few times its JSON size in
memory. For float64, integer and string arrays of a few million elements this
converts JSON -> Zarr, Zarr -> JSON and CSV -> Zarr with the zarrow binary, reads
each child's peak resident set size (getrusage, Linux KiB), and requires it to be
at most LIMIT times the input's size. Prints one line per case and
"N passed, M failed".
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 3.0  # x the size of the JSON / CSV text


def peak_rss_bytes(cmd: list[str]) -> int:
    """Run cmd in a fresh child and return its peak RSS (bytes)."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "if p.returncode: sys.exit(p.stderr.decode()[-400:])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    if out.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    return int(out.stdout.strip()) * 1024


def document(dtype: str, values: list) -> str:
    n = len(values)
    header = ["version", "1.0.0", "ndarray", "shape", n, "strides", 1, "offset", 0, "order", "row-major",
              "dtype", dtype, "length", n, "capacity", n, "data"]
    return json.dumps(header + values, separators=(",", ":"))


def main() -> int:
    zarrow = sys.argv[1]
    n = 3_000_000
    cases = {
        "float64": document("float64", [i * 1.000001 for i in range(n)]),
        "int32": document("int32", [(i * 7919) % 2_000_000_000 - 1_000_000_000 for i in range(n)]),
        "generic-strings": document("generic", [f"cell-{i % 1000}-{'x' * (i % 9)}" for i in range(n)]),
    }
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="zarrow-mem-") as tmp_name:
        tmp = Path(tmp_name)
        for name, text in cases.items():
            src = tmp / f"{name}.json"
            src.write_text(text)
            size = src.stat().st_size
            store = tmp / f"{name}.zarr"
            checks = [
                ("json -> zarr", [zarrow, "convert", str(src), str(store)], size),
                ("zarr -> json", [zarrow, "convert", str(store), str(tmp / f"{name}.back.json")], size),
                ("zarr -> csv", [zarrow, "convert", str(store), str(tmp / f"{name}.csv")], size),
            ]
            for label, cmd, input_size in checks:
                peak = peak_rss_bytes(cmd)
                ratio = peak / input_size
                ok = ratio <= LIMIT
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} {label}: peak {peak / 2**20:.0f} MiB = {ratio:.2f}x the {input_size / 2**20:.0f} MiB document (limit {LIMIT}x)")
            csv = tmp / f"{name}.csv"
            peak = peak_rss_bytes([zarrow, "convert", str(csv), str(tmp / f"{name}.csv.zarr")])
            ratio = peak / csv.stat().st_size
            ok = ratio <= LIMIT
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} csv -> zarr: peak {peak / 2**20:.0f} MiB = {ratio:.2f}x the {csv.stat().st_size / 2**20:.0f} MiB CSV (limit {LIMIT}x)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
