#!/usr/bin/env python3
"""A small conversion from the command line (issue 26's CLI target): 2,000,000 short
strings (0-32 ASCII bytes, vlen-utf8 + zstd, one chunk of 1,000,000 per half,
written by zarr-python) to an Arrow IPC file, each peer in a fresh process:

* `zarrow convert IN OUT.arrow` (one or more binaries, for A/B; with
  `--arenas N`, each zarrow binary also runs with glibc's arenas capped at N
  through GLIBC_TUNABLES, the cap the CLI used to set itself);
* zarr-python 3.1.6 reading the array, pyarrow writing the same IPC file.

Runs are interleaved (every peer once per round). Prints medians of wall time,
user and system CPU, peak RSS and minor page faults of the child, then each
ratio to the first zarrow binary. With `--strace`, also counts the system calls
one run of each zarrow binary makes (threads started, mmaps, futex waits).

    .venv/bin/python benches/compare/cli_small.py [--runs N] [--arenas N] [--strace] ZARROW [ZARROW ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402

ROWS = 2_000_000
CHUNK = 1_000_000

ZARR_PYTHON = """
import sys, warnings
warnings.filterwarnings("ignore")
import pyarrow as pa, zarr
arr = zarr.open_array(sys.argv[1], mode="r")
table = pa.table({"values": pa.array(arr[:], type=pa.string())})
with pa.OSFile(sys.argv[2], "wb") as f, pa.ipc.new_file(f, table.schema) as w:
    w.write_table(table)
"""


def store() -> Path:
    path = bench.DATA / f"cli_small_{ROWS}.zarr"
    if not (path / "zarr.json").exists():
        import zarr.codecs

        bench.write_zarr_python(path, bench.short_strings(ROWS, seed=3), CHUNK, [zarr.codecs.ZstdCodec()])
    return path


def timed(cmd: list[str], env: dict | None = None) -> dict:
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, **(env or {})})
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed: {child.stderr.read().decode()[-500:]}")
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime,
            "rss": usage.ru_maxrss / 1024, "faults": usage.ru_minflt}


def strace_counts(cmd: list[str], env: dict | None = None) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        subprocess.run(["strace", "-f", "-c", "-o", log.name, *cmd], check=True, capture_output=True,
                       env={**os.environ, **(env or {})})
        counts = {}
        for line in log.read().splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[-1] in ("clone3", "clone", "mmap", "munmap", "futex", "madvise", "total"):
                counts[parts[-1]] = int(parts[3]) if parts[-1] != "total" else int(parts[2])
        return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("zarrow", nargs="+")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--arenas", type=int)
    parser.add_argument("--strace", action="store_true")
    args = parser.parse_args()
    src = store()
    out_dir = Path(tempfile.mkdtemp(prefix="cli_small_"))
    peers: list[tuple[str, list[str], dict | None]] = []
    for i, binary in enumerate(args.zarrow):
        cmd = [binary, "convert", str(src), str(out_dir / f"z{i}.arrow"), "--overwrite"]
        peers.append((f"zarrow convert [{binary}]", cmd, None))
        if args.arenas:
            tunables = {"GLIBC_TUNABLES": f"glibc.malloc.arena_max={args.arenas}"}
            peers.append((f"zarrow convert, arenas <= {args.arenas} [{binary}]", cmd, tunables))
    peers.append(("zarr-python + pyarrow", [sys.executable, "-c", ZARR_PYTHON, str(src), str(out_dir / "py.arrow")], None))
    results: dict[str, list[dict]] = {label: [] for label, _, _ in peers}
    for label, cmd, env in peers:  # warm the page cache, untimed
        timed(cmd, env)
    for _ in range(args.runs):
        for label, cmd, env in peers:
            results[label].append(timed(cmd, env))
    import pyarrow as pa

    expected = pa.ipc.open_file(str(out_dir / "py.arrow")).read_all().column(0)
    for i in range(len(args.zarrow)):
        got = pa.ipc.open_file(str(out_dir / f"z{i}.arrow")).read_all().column(0)
        if not got.cast(pa.string()).equals(expected):
            raise SystemExit(f"zarrow [{args.zarrow[i]}] wrote different values from zarr-python")
    print(f"{ROWS:,} short strings (vlen-utf8 + zstd) to Arrow IPC, fresh processes, "
          f"medians of {args.runs} interleaved runs")
    print("| peer | wall (ms) | user (ms) | sys (ms) | peak RSS (MiB) | minor faults |")
    print("|---|---|---|---|---|---|")
    med = {}
    for label, runs in results.items():
        m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        med[label] = m
        print(f"| {label} | {m['wall'] * 1e3:.1f} | {m['user'] * 1e3:.1f} | {m['sys'] * 1e3:.1f} | "
              f"{m['rss']:.0f} | {m['faults']:.0f} |")
    first = peers[0][0]
    for label in med:
        if label != first:
            print(f"{label} / {first}: {med[label]['wall'] / med[first]['wall']:.2f}x")
    if args.strace:
        for label, cmd, env in peers:
            if label.startswith("zarrow"):
                print(f"system calls, {label}: {strace_counts(cmd, env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
