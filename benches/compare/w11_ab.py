#!/usr/bin/env python3
"""W11 A/B: queries (a) and (b) of benches/compare/w11.py in DataFusion through two
or more builds of the Python package, interleaved.

Usage: benches/compare/w11_ab.py ROUNDS SITE[=STORE] [SITE[=STORE] ...] [--rows N] [--zarrow BIN]

Each SITE is a directory holding one build of the package (`pip install --target
SITE zarrow-*.whl`, or `pip install --target SITE ./python`). The data are W11's
(w11.py's `generate`: the Parquet file by pyarrow, the Zarr copy by `zarrow
convert --chunk-len 100000`, made once by BIN), or STORE: a copy whose statistics
that build wrote (`zarrow.build_stats`, for a build that reads another version of
the statistics convention). Each round starts one process per
SITE, in an order that alternates between rounds, so that a shared machine's load
touches them alike; a process opens a datafusion-python session with
`zarrow.table`, runs each query once to warm up and then three times, and reports
the median. Printed per SITE and query: the median over the rounds with the
spread, the ratio to the first SITE, and the chunk requests and bytes of one
EXPLAIN ANALYZE (`requests`, `bytes_fetched`, the scan's metrics).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

from w11 import QUERIES, REPO, generate

CHILD = r"""
import json, re, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import datafusion, zarrow
zarr, names = sys.argv[2], sys.argv[3].split(",")
queries = json.loads(sys.argv[4])
ctx = datafusion.SessionContext()
ctx.register_table("t", zarrow.table(zarr))
out = {"package": zarrow.__file__}
for name in names:
    q = queries[name]
    ctx.sql(q).to_arrow_table()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        ctx.sql(q).to_arrow_table()
        times.append(time.perf_counter() - start)
    plan = ctx.sql("EXPLAIN ANALYZE " + q).to_arrow_table()
    text = "\n".join(str(v) for v in plan.column(plan.num_columns - 1).to_pylist())
    # DataFusion prints metrics rounded, with a unit: "994.3 K".
    unit = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
    metric = lambda key: round(sum(float(n) * unit[u] for n, u in re.findall(key + r"=([\d.]+)(?: ([KMG]))?", text)))
    out[name] = {"seconds": statistics.median(times), "requests": metric("requests"),
                 "bytes": metric("bytes_fetched")}
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("rounds", type=int)
    ap.add_argument("sites", nargs="+")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--queries", default="a,b")
    ap.add_argument("--zarrow", default=str(REPO / "target" / "release" / "zarrow"))
    args = ap.parse_args()
    _, zarr = generate(args.rows, args.zarrow)
    stores = {}
    for i, entry in enumerate(args.sites):
        site, _, store = entry.partition("=")
        args.sites[i] = site
        stores[site] = store or str(zarr)
    names = args.queries.split(",")
    times: dict = {(s, n): [] for s in args.sites for n in names}
    counts: dict = {}
    for r in range(args.rounds):
        order = args.sites if r % 2 == 0 else list(reversed(args.sites))
        for site in order:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(Path(site).resolve()), stores[site], ",".join(names),
                                   json.dumps(QUERIES)], capture_output=True, text=True, timeout=600)
            if proc.returncode:
                raise SystemExit(f"{site}: {proc.stderr[-2000:]}")
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            if not out["package"].startswith(str(Path(site).resolve())):
                raise SystemExit(f"{site}: imported {out['package']}, not the site's package")
            for n in names:
                times[(site, n)].append(out[n]["seconds"])
                counts[(site, n)] = (out[n]["requests"], out[n]["bytes"])
    first = args.sites[0]
    for n in names:
        base = statistics.median(times[(first, n)])
        for site in args.sites:
            v = times[(site, n)]
            m = statistics.median(v)
            req, nbytes = counts[(site, n)]
            print(f"({n}) {site}: {m * 1e3:.1f} ms [{min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}], "
                  f"{m / base:.3f}x of the first; {req} chunk requests, {nbytes} bytes  {QUERIES[n]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
