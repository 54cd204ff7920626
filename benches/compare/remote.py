#!/usr/bin/env python3
"""W9 (issue 13): W1's strings, sharded (W7's store: shards of 1M rows, 100 inner
chunks each, vlen-utf8 + zstd, written by zarr-python), served over HTTP on loopback
through a proxy that adds 20 ms to every request. In one run:

* zarrow convert URL OUT.arrows (a fresh process; requests counted at the server);
* zarr-python 3.1.6 reading the same URL through obstore's HTTPStore
  (`zarr.storage.ObjectStore`), then pyarrow writing the same IPC stream;
* the bound: requests / concurrency x 20 ms + zarrow's local conversion time;
* peak memory of zarrow reading a 10x larger remote store (the same shards
  hard-linked 10 times over), against the 1x store: it must not grow with the store.

    .venv/bin/python benches/compare/remote.py [--quick] [--runs N]

Needs obstore (pip install obstore) for the zarr-python peer. The server is
`http-delay` (next to this file, built here with cargo on first use): static files
with ranges, every request held back 20 ms. `--server python` uses
tests/interop/check_remote.py's ranged static server behind its delaying proxy
instead, as the first runs did: both are Python threads in this process, relaying
every byte on the same two cores as the peers they serve.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "interop"))

import run as bench  # noqa: E402
import check_remote as servers  # noqa: E402

LATENCY = 0.020
CONCURRENCY = 32
ZARROW = REPO / "target" / "release" / "zarrow"

ZARR_PYTHON = """
import sys, time, warnings
warnings.filterwarnings("ignore")
import pyarrow as pa, zarr
from obstore.store import HTTPStore
from zarr.storage import ObjectStore
url, out = sys.argv[1], sys.argv[2]
http = HTTPStore.from_url(url, client_options={"allow_http": True})
arr = zarr.open_array(store=ObjectStore(http, read_only=True), mode="r")
values = pa.array(arr[:], type=pa.string())
table = pa.table({"values": values})
with pa.OSFile(out, "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
    w.write_table(table)
print(len(values))
"""


@contextlib.contextmanager
def delay_server(root: Path, delay: float):
    """`http-delay` serving `root`: yields its URL and a function counting requests."""
    target = REPO / "target" / "gen-http-delay"
    manifest = HERE / "http-delay" / "Cargo.toml"
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", str(manifest),
                    "--target-dir", str(target)], check=True)
    proc = subprocess.Popen([str(target / "release" / "http-delay"), str(root), str(round(delay * 1000))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}"
        yield url, lambda: int(urllib.request.urlopen(f"{url}/__requests").read())
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


@contextlib.contextmanager
def python_servers(root: Path, delay: float):
    """check_remote.py's static server behind its delaying proxy (Python threads)."""
    with servers.http_server(root) as web:
        proxy = servers.FaultProxy(web, "delay", delay=delay)
        with proxy.serve() as url:
            yield url, lambda: len(proxy.requests)


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of a fresh process."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter()\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "w = time.perf_counter() - t\n"
               "sys.stderr.write(p.stderr[-2000:]) if p.returncode else None\n"
               "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, repr(p.stdout.strip()))\n"
               "sys.exit(p.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{cmd[:3]} failed: {proc.stderr.strip()[-400:]}")
    wall, kib, out = proc.stdout.strip().split(" ", 2)
    return float(wall), int(kib) / 1024, eval(out)  # noqa: S307 - our own repr


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1M strings")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--server", choices=["rust", "python"], default="rust",
                    help="http-delay (default), or check_remote.py's Python server and proxy")
    args = ap.parse_args()
    n = 1_000_000 if args.quick else 10_000_000
    store = bench.generate_w7(n)
    big = bench.DATA / f"w9_10x_{n}.zarr"
    if not big.exists():
        bench.link_repeated(store, big, 10)
    out = bench.DATA / "w9_out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rows = {}

    def median(label: str, cmd: list[str], count=None) -> dict:
        walls, rss, reqs = [], [], []
        for _ in range(args.runs):
            before = count() if count else 0
            w, r, _ = timed(cmd)
            walls.append(w)
            rss.append(r)
            if count:
                reqs.append(count() - before)
        res = {"wall": statistics.median(walls), "rss": max(rss), "requests": reqs[-1] if reqs else None}
        rows[label] = res
        extra = f", {res['requests']} requests" if count else ""
        print(f"{label:55s} {res['wall']:8.3f} s  peak {res['rss']:7.0f} MiB{extra}", flush=True)
        return res

    z = str(ZARROW)
    local = median("zarrow convert, local store", [z, "convert", str(store), str(out / "local.arrows"), "--overwrite"])
    serve = delay_server if args.server == "rust" else python_servers
    print(f"server: {args.server}")
    with serve(bench.DATA, LATENCY) as (url, count):
        remote = median(f"zarrow convert, HTTP + {LATENCY * 1000:.0f} ms", [
            z, "convert", f"{url}/{store.name}", str(out / "remote.arrows"), "--overwrite",
            "--concurrency", str(CONCURRENCY)], count)
        python = median(f"zarr-python 3.1.6 (obstore HTTPStore) + pyarrow IPC, HTTP + {LATENCY * 1000:.0f} ms", [
            sys.executable, "-c", ZARR_PYTHON, f"{url}/{store.name}", str(out / "python.arrows")], count)
        big_run = median(f"zarrow convert, 10x store ({n * 10:,} rows), HTTP + {LATENCY * 1000:.0f} ms", [
            z, "convert", f"{url}/{big.name}", str(out / "big.arrows"), "--overwrite",
            "--concurrency", str(CONCURRENCY)], count)
    bound = remote["requests"] / CONCURRENCY * LATENCY + local["wall"]
    print()
    print(f"bound = {remote['requests']} requests / {CONCURRENCY} x {LATENCY * 1000:.0f} ms + local "
          f"{local['wall']:.3f} s = {bound:.3f} s")
    print(f"zarrow / bound: {remote['wall'] / bound:.2f}x (target <= 1.3x)")
    print(f"zarr-python / zarrow: {python['wall'] / remote['wall']:.2f}x (target >= 5x)")
    print(f"peak memory, 10x store / 1x store: {big_run['rss']:.0f} / {remote['rss']:.0f} MiB "
          f"({big_run['rss'] / remote['rss']:.2f}x)")
    same = (out / "local.arrows").read_bytes() == (out / "remote.arrows").read_bytes()
    print(f"remote output identical to local: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
