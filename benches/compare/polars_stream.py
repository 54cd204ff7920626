#!/usr/bin/env python3
"""Issue 52 item 6: Polars' streaming engine over a zarrow scan keeps memory
bounded. Peak RSS of one process per run, against the same runs over
`pl.scan_parquet` of the same table.

Usage: benches/compare/polars_stream.py [--rows N] [--runs R]

Data: w11.py's table (benches/compare/data/w11; 10M rows: `sample`, `day`,
`n_genes`, `score`, `barcode`). Each run is a fresh Python process (peak RSS
is a process's high-water mark: `ru_maxrss` of the child), the median of R:

- `import`: Python with polars and zarrow imported, nothing read (the floor);
- `sink_parquet`: the whole table streamed to a Parquet file;
- `streaming group-by`: `collect(engine="streaming")` of a filter and a
  group-by over every row;
- `in memory`: the whole table collected (the engine's default): what
  "bounded" is measured against.

Run also with a data-segment limit (`--limit-mib`, `RLIMIT_DATA`, below what
the in-memory collect takes) to show the streaming runs complete under it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

RUN = r"""
import sys, polars as pl, zarrow
kind, source, what, out = sys.argv[1:5]
lf = pl.scan_parquet(source) if kind == "parquet" else zarrow.scan(source)
if what == "import":
    pass
elif what == "sink_parquet":
    lf.sink_parquet(out)
elif what == "streaming group-by":
    got = (lf.filter(pl.col("score") < 0.5).group_by("sample")
           .agg(pl.len(), pl.col("n_genes").mean()).collect(engine="streaming"))
    assert got.height == 200, got.height
elif what == "in memory":
    got = lf.collect()
    assert got.height > 0
"""


def one(kind: str, source: Path, what: str, limit: int | None) -> tuple[float, bool]:
    """Peak RSS (MiB) of one run, measured by a wrapper process of its own
    (RUSAGE_CHILDREN only grows across runs in one parent)."""
    wrapper = (
        "import resource, subprocess, sys;"
        "lim = int(sys.argv[1]);"
        "pre = (lambda: resource.setrlimit(resource.RLIMIT_DATA, (lim, lim))) if lim else None;"
        "p = subprocess.run(sys.argv[2:], capture_output=True, preexec_fn=pre);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode);"
        "sys.stderr.write(p.stderr.decode()[-2000:])"
    )
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [sys.executable, "-c", wrapper, str(limit or 0),
             sys.executable, "-c", RUN, kind, str(source), what, str(Path(tmp) / "out.parquet")],
            capture_output=True, text=True, timeout=900,
        )
    rss, code = done.stdout.split()
    return int(rss) / 1024, int(code) == 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit-mib", type=int, default=None,
                    help="RLIMIT_DATA for every run, in MiB (default: none)")
    args = ap.parse_args()
    data = HERE / "data" / "w11"
    sources = {"parquet": data / f"w11-{args.rows}.parquet", "zarrow": data / f"w11-{args.rows}.zarr"}
    for path in sources.values():
        if not path.exists():
            raise SystemExit(f"no {path}: run benches/compare/w11.py --rows {args.rows} first")
    limit = args.limit_mib * 2**20 if args.limit_mib else None
    print(f"peak RSS, MiB (median of {args.runs} processes){'' if limit is None else f', RLIMIT_DATA {args.limit_mib} MiB'}")
    print()
    print("| run | scan_parquet | zarrow.scan |")
    print("|---|---|---|")
    for what in ["import", "sink_parquet", "streaming group-by", "in memory"]:
        cells = []
        for kind, source in sources.items():
            runs = [one(kind, source, what, limit) for _ in range(args.runs)]
            rss = statistics.median(r for r, _ in runs)
            ok = all(good for _, good in runs)
            cells.append(f"{rss:.0f}" + ("" if ok else " (failed)"))
        print(f"| {what} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
