#!/usr/bin/env python3
"""W1 read from Python (issue 15): zarrow's Python package against the Python peers
and against zarrow's own Rust path, in one run, on the same files.

    bash python/ci.sh                  # or any install of the package into .venv
    cargo build --release --example zarrow_compare
    .venv/bin/python benches/compare/python_read.py [--quick] [--runs N]

W1 is run.py's: 10,000,000 strings of 0-32 ASCII bytes, vlen-utf8 + zstd (level 0)
in chunks of 1,000,000, written by zarr-python (``--quick``: 1,000,000 strings); the
same strings in a zstd Parquet file for pyarrow. Generated into
benches/compare/data/python/ when missing (run.py's generator, reused).

Peers, each giving an Arrow string array or table of all of W1 (checked equal):

- zarrow (Python): ``pa.table(zarrow.read(W1))``, Utf8 and Utf8View;
- zarrow (Rust): ``zarrow_compare read W1 utf8 warm`` (the same library path,
  timed in its own process after one untimed run, as the Python peers are timed
  in this process after theirs), and cold (a fresh process);
- zarr-python: ``zarr.open_array(W1)[:]`` then ``pa.array(..., pa.string())``;
- zarrista 0.1 (zarrs): ``retrieve_array_subset`` of everything, to Arrow through
  its PyCapsule export;
- pyarrow: the same strings from zstd Parquet (``pq.read_table``).

Medians of RUNS rounds (default 7) after one untimed run each; each round runs
every peer once, so the load of a shared machine touches them alike. Prints the table and the
targets (>= 10x zarr-python, faster than zarrista, within 1.1x of zarrow's Rust
path) and writes benches/RESULTS-python.md.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zarr

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as compare  # noqa: E402  run.py's workload generator and Rust program paths

import zarrow  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benches" / "compare" / "data" / "python"
OUT = REPO / "benches" / "RESULTS-python.md"


def generate(n: int) -> tuple[Path, Path]:
    from zarr.codecs import ZstdCodec

    DATA.mkdir(parents=True, exist_ok=True)
    w1, parquet, stamp = DATA / "w1.zarr", DATA / "w1.parquet", DATA / f"ready-{n}"
    if not stamp.exists():
        print(f"generating: {n:,} short strings, chunks of {compare.w1_chunk(n):,}", flush=True)
        for p in DATA.glob("ready-*"):
            p.unlink()
        s = compare.short_strings(n)
        compare.write_zarr_python(w1, s, compare.w1_chunk(n), [ZstdCodec(level=0)])
        pq.write_table(pa.table({"s": s}), parquet, compression="zstd")
        stamp.touch()
    return w1, parquet


def zarrow_python(w1: Path, string_type: str):
    return lambda: pa.table(zarrow.read(w1, string_type=string_type)).column(0)


def zarr_python(w1: Path):
    return lambda: pa.array(zarr.open_array(str(w1), mode="r")[:], pa.string())


def zarrista_read(w1: Path):
    import zarrista

    def go():
        arr = zarrista.Array.open(zarrista.store.FilesystemStore(str(w1)), "/")
        return pa.array(arr.retrieve_array_subset((slice(None),)))
    return go


def parquet(path: Path):
    return lambda: pq.read_table(path).column(0)


def rust(w1: Path, warm: bool):
    cmd = [str(compare.ZARROW), "read", str(w1), "utf8"] + (["warm"] if warm else [])
    return lambda: float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()[0])


def measure_all(peers: list[tuple[str, object, bool]], runs: int) -> list[dict]:
    """Median seconds of each peer over `runs` rounds, after one untimed run each.
    Rounds interleave the peers (each round runs every peer once), so a change in
    the machine's load (other jobs on a shared machine) touches them alike. A peer
    marked self-timed returns its own seconds (the Rust program)."""
    rows = []
    for label, fn, _ in peers:
        try:
            rows.append({"label": label, "result": fn(), "times": [], "error": None})
        except Exception as e:  # noqa: BLE001 - a failing peer is reported, not dropped
            rows.append({"label": label, "result": None, "times": [], "error": f"{type(e).__name__}: {str(e)[:200]}"})
    for _ in range(runs):
        for row, (_, fn, self_timed) in zip(rows, peers):
            if row["error"]:
                continue
            start = time.perf_counter()
            took = fn()
            row["times"].append(took if self_timed else time.perf_counter() - start)
    for row in rows:
        row["median"] = statistics.median(row["times"]) if row["times"] else None
        shown = f"{row['median']:.3f} s" if row["median"] is not None else f"FAILED ({row['error']})"
        print(f"  {row['label']:<70} {shown}", flush=True)
    return rows


def same_strings(a, b) -> bool:
    a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
    return a.cast(pa.large_string()).equals(b.cast(pa.large_string()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000,000 strings")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    n = 1_000_000 if args.quick else 10_000_000
    w1, w1_parquet = generate(n)
    print(f"W1: {n:,} short strings, vlen-utf8 + zstd (zarr-python); medians of {args.runs} runs", flush=True)

    rows = measure_all([
        ("zarrow (Python): pa.table(zarrow.read(W1))", zarrow_python(w1, "utf8"), False),
        ("zarrow (Python): pa.table(zarrow.read(W1, string_type=\"utf8-view\"))",
         zarrow_python(w1, "utf8-view"), False),
        ("zarrow (Rust): zarrow_compare read W1 utf8, warm", rust(w1, True), True),
        ("zarrow (Rust): zarrow_compare read W1 utf8, fresh process", rust(w1, False), True),
        ("zarr-python: arr[:] -> pa.array", zarr_python(w1), False),
        ("zarrista 0.1: retrieve_array_subset -> pa.array", zarrista_read(w1), False),
        ("pyarrow: the same strings from zstd Parquet", parquet(w1_parquet), False),
    ], args.runs)
    ours = rows[0]
    # Every peer read the same strings.
    for r in rows[4:]:
        if r["result"] is not None and not same_strings(r["result"], ours["result"]):
            r["error"] = "read other values than zarrow"
            print(f"  {r['label']}: READ OTHER VALUES", flush=True)

    def ratio(a, b):
        return a["median"] / b["median"] if a["median"] and b["median"] else None

    targets = [
        ("zarr-python / zarrow (Python) (>= 10x)", ratio(rows[4], ours), lambda x: x >= 10),
        ("zarrista / zarrow (Python) (> 1x: faster than zarrista)", ratio(rows[5], ours), lambda x: x > 1),
        ("zarrow (Python) / zarrow (Rust, warm) (<= 1.1x)", ratio(ours, rows[2]), lambda x: x <= 1.1),
        ("zarrow (Python) / zarrow (Rust, fresh process)", ratio(ours, rows[3]), None),
        ("zarrow (Python) / pyarrow Parquet", ratio(ours, rows[6]), None),
    ]
    print()
    lines = [
        "# W1 from Python (issue 15)",
        "",
        f"Produced by `.venv/bin/python benches/compare/python_read.py{' --quick' if args.quick else ''}` "
        f"on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
        f"Machine: {compare.machine()}, zarrow (Python package) {zarrow.__version__}. W1: {n:,} strings of 0-32 ASCII bytes, vlen-utf8 + zstd in chunks of "
        f"{compare.w1_chunk(n):,}, written by zarr-python. Medians of {args.runs} rounds after one untimed run each, the peers interleaved in every round; "
        "the Python peers run in the harness's process, zarrow's Rust path in its own "
        "(`warm`: timed after one untimed run in that process, as the Python peers are).",
        "",
        "| peer | median | vs. zarrow (Python) |",
        "|---|---|---|",
    ]
    for r in rows:
        shown = f"{r['median']:.3f} s" if r["median"] is not None else f"FAILED ({r['error']})"
        rel = ratio(r, ours)
        lines.append(f"| {r['label']} | {shown} | {'' if r is ours or rel is None else f'{rel:.2f}x'} |")
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    for label, value, ok in targets:
        shown = "n/a" if value is None else f"{value:.2f}x"
        met = "-" if ok is None or value is None else ("yes" if ok(value) else "no")
        lines.append(f"| {label} | {shown} | {met} |")
        print(f"  {label:<70} {shown} {met}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"\nwrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
