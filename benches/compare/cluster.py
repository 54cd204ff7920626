#!/usr/bin/env python3
"""Issue 29's targets: zarrow on a Ballista cluster of processes on this machine.

    .venv/bin/python benches/compare/cluster.py --zarrow BIN [--runs N]

BIN is a release `zarrow` built with `--features cluster`. Data: W10's 10M rows
(`sql.py` makes them: `s` ~1,000 distinct strings, `i` int64, `f` float64, zarrow's
default chunks), its group-by `SELECT s, count(*), avg(f) FROM t GROUP BY s`, each
run a fresh `zarrow sql` client (its start included, as W10 times it). Reported:

* the query without a cluster (`zarrow sql`, 2 partitions), for reference;
* 1 executor with 2 task slots against 2 executors with 1 slot each (2 partitions);
* the per-task overhead: the same query at 64 partitions against 2, on 2 executors:
  (t64 - t2) / the tasks it added (the executors' logs count them; a scan has at
  most one partition per chunk of its longest-chunked column).

The configurations are interleaved, one run each per round; medians of --runs.
Every answer is checked equal to the local one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests" / "interop"))
from remote_servers import free_port, stop_groups, wait_for  # noqa: E402
from sql import DATA as W10, GROUP_BY  # noqa: E402


@contextlib.contextmanager
def cluster(zarrow: str, tmp: Path, slots: list[int]):
    """A scheduler and one executor per entry of `slots` (its task slots)."""
    port = free_port()
    procs = []

    def start(args: list[str], log: Path) -> subprocess.Popen:
        with open(log, "w") as out:
            proc = subprocess.Popen(["timeout", "-k", "5", "3600", zarrow, "cluster", *args],
                                    stdout=out, stderr=subprocess.STDOUT,
                                    env={**os.environ, "RUST_LOG": "warn,ballista_executor=info"},
                                    start_new_session=True)
        procs.append(proc)
        return proc

    try:
        start(["scheduler", "--bind", f"127.0.0.1:{port}"], tmp / f"scheduler-{port}.log")
        wait_for(port)
        for i, n in enumerate(slots):
            log = tmp / f"executor-{port}-{i}.log"
            start(["executor", "--scheduler", f"127.0.0.1:{port}", "--bind", f"127.0.0.1:{free_port()}",
                   "--grpc-port", str(free_port()), "--concurrent-tasks", str(n)], log)
            deadline = time.monotonic() + 60
            while "registration succeed" not in log.read_text():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"executor did not register: {log.read_text()[-400:]}")
                time.sleep(0.1)
        yield f"df://127.0.0.1:{port}", [tmp / f"executor-{port}-{i}.log" for i in range(len(slots))]
    finally:
        stop_groups(procs, wait=20)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zarrow", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    zarrow = str(Path(args.zarrow).resolve())
    store = W10 / "t10000000.zarr"
    if not store.exists():
        print(f"{store} is missing: run benches/compare/sql.py first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp_s, contextlib.ExitStack() as stack:
        tmp = Path(tmp_s)
        one = stack.enter_context(cluster(zarrow, tmp, [2]))
        two = stack.enter_context(cluster(zarrow, tmp, [1, 1]))
        configs = {
            "local (no cluster), 2 partitions": (None, 2),
            "1 executor x 2 slots, 2 partitions": (one, 2),
            "2 executors x 1 slot, 2 partitions": (two, 2),
            "2 executors x 1 slot, 64 partitions": (two, 64),
        }
        times: dict[str, list[float]] = {name: [] for name in configs}
        tasks: dict[str, int] = {}
        answers = {}

        def executed(logs) -> int:
            return sum(log.read_text().count("Execute task") for log in logs)
        for _ in range(args.runs):
            for name, (where, partitions) in configs.items():
                url, logs = where if where else (None, [])
                before = executed(logs)
                out = tmp / f"{len(answers)}.parquet"
                cmd = [zarrow, "sql", GROUP_BY, "--table", f"t={store}", "--partitions", str(partitions),
                       "--output", str(out), "--overwrite"]
                if url:
                    cmd += ["--cluster", url]
                start = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                times[name].append(time.perf_counter() - start)
                if done.returncode != 0:
                    raise SystemExit(f"{name}: {done.stderr.strip()[-600:]}")
                answers[name] = pq.read_table(out).sort_by("s")
                tasks[name] = executed(logs) - before
        local = answers["local (no cluster), 2 partitions"]
        for name, table in answers.items():
            assert table.column("s").equals(local.column("s")) and table.column("n").equals(local.column("n")), name
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"W10 group-by, 10M rows, median of {args.runs} (fresh client each run):")
        for name, t in med.items():
            print(f"  {name:40s} {t:.3f} s  ({tasks[name]} tasks)")
        one_t = med["1 executor x 2 slots, 2 partitions"]
        two_t = med["2 executors x 1 slot, 2 partitions"]
        t64 = med["2 executors x 1 slot, 64 partitions"]
        print(f"  2 executors / 1 executor: {two_t / one_t:.2f}x")
        print(f"  cluster / local: {two_t / med['local (no cluster), 2 partitions']:.2f}x")
        extra = tasks["2 executors x 1 slot, 64 partitions"] - tasks["2 executors x 1 slot, 2 partitions"]
        print(f"  64 / 2 partitions: {t64 / two_t:.2f}x; {extra} more tasks, "
              f"{(t64 - two_t) / max(extra, 1) * 1000:.1f} ms each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
