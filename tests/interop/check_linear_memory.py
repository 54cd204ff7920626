#!/usr/bin/env python3
"""Peak memory of zarrow on large linear-format documents, against their size.

Usage: check_linear_memory.py ZARROW_BIN

Issue 4 asks that a large array take no more than a few times its JSON size in
memory. For float64, integer and string arrays of a few million elements this
converts JSON -> Zarr, Zarr -> JSON and CSV -> Zarr with the zarrow binary, reads
each child's peak resident set size (getrusage, Linux KiB), and requires what
the document adds to it to be at most LIMIT times the input's size. What it adds:
the peak less that of the same conversion of a tiny document of the same kind
with the same binary (the process's own footprint: an unoptimised CI build's code
and relocations take some 17 MiB more than a release build's, whatever the
input). Prints one line per case and "N passed, M failed".
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 2.5  # x the size of the JSON / CSV text (the release build once passed 3.0x counting its footprint, ~2.5x without)


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


def conversions(zarrow: str, tmp: Path, name: str, text: str) -> list[tuple[str, int, int]]:
    """(label, peak RSS, input size) of json -> zarr, zarr -> json, zarr -> csv and
    csv -> zarr of `text`, in that order (each converts the previous output)."""
    src = tmp / f"{name}.json"
    src.write_text(text)
    store, csv = tmp / f"{name}.zarr", tmp / f"{name}.csv"
    steps = [
        ("json -> zarr", src, store),
        ("zarr -> json", store, tmp / f"{name}.back.json"),
        ("zarr -> csv", store, csv),
        ("csv -> zarr", csv, tmp / f"{name}.csv.zarr"),
    ]
    sizes = {src: src.stat().st_size, store: src.stat().st_size}
    out = []
    for label, source, target in steps:
        peak = peak_rss_bytes([zarrow, "convert", str(source), str(target)])
        out.append((label, peak, sizes.get(source) or source.stat().st_size))
    return out


def main() -> int:
    zarrow = sys.argv[1]
    n = 3_000_000
    makers = {
        "float64": lambda n: document("float64", [i * 1.000001 for i in range(n)]),
        "int32": lambda n: document("int32", [(i * 7919) % 2_000_000_000 - 1_000_000_000 for i in range(n)]),
        "generic-strings": lambda n: document("generic", [f"cell-{i % 1000}-{'x' * (i % 9)}" for i in range(n)]),
    }
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="zarrow-mem-") as tmp_name:
        tmp = Path(tmp_name)
        for name, make in makers.items():
            base = conversions(zarrow, tmp, f"{name}-tiny", make(1000))
            for (label, peak, size), (_, footprint, _) in zip(conversions(zarrow, tmp, name, make(n)), base):
                what = "CSV" if label.startswith("csv") else "document"
                ratio = (peak - footprint) / size
                ok = ratio <= LIMIT
                passed += ok
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name} {label}: peak {peak / 2**20:.0f} MiB, "
                      f"{footprint / 2**20:.0f} MiB on a tiny {what}: {ratio:.2f}x the "
                      f"{size / 2**20:.0f} MiB {what} (limit {LIMIT}x)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
