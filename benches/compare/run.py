#!/usr/bin/env python3
"""Side-by-side benchmark of Zarr string reading and writing (issue 5).

Run through `bash benches/compare/run.sh [--quick]`, which builds the zarrow and zarrs
programs first. Generates the workloads with the real writers (zarr-python for
vlen-utf8, zarrs for zarrs.vlen, the ZEP0007 draft's procedure for ZEP0007, pyarrow for
Parquet and IPC), times every peer on the same files in one run (median of RUNS,
warm page cache for all), prints the table with ratios, and writes
benches/RESULTS.md with the machine it ran on. A peer that fails a workload is shown
as failing, not left out.

W7 (issue 11) reads the first 10 rows of a sharded copy of W1 and also counts the
bytes and requests each reader fetches. `--only W7` runs that section alone (it needs
neither the zarrs program nor the other workloads) and writes its results to
benches/compare/data/RESULTS-only.md, never over benches/RESULTS.md. ZARROW_COMPARE
and ZARRS_BENCH name other builds of the two programs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benches" / "compare" / "data"
ZARROW = Path(os.environ.get("ZARROW_COMPARE", REPO / "target" / "release" / "examples" / "zarrow_compare"))
ZARRS = Path(os.environ.get("ZARRS_BENCH", REPO / "target" / "gen-zarrs" / "release" / "zarrs-bench"))
# W7: rows read from the head of the sharded store; runs (each takes milliseconds).
HEAD_ROWS = 10
W7_RUNS = 21


# ---------------------------------------------------------------- workloads

def random_strings(n: int, lo: int, hi: int, seed: int) -> pa.Array:
    """n ASCII strings of lo..=hi bytes, built without Python objects."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(lo, hi + 1, n, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(pa.string())


def short_strings(n: int, seed: int = 1) -> pa.Array:
    return random_strings(n, 0, 32, seed)


def long_strings(n: int, seed: int = 2) -> pa.Array:
    return random_strings(n, 1000, 10_000, seed)


def write_zarr_python(path: Path, values: pa.Array, chunk: int, compressors, shard: int | None = None) -> None:
    """`shard`: shards of that many elements, each of inner chunks of `chunk`."""
    arr = zarr.create_array(store=str(path), shape=(len(values),), chunks=(chunk,), shards=(shard,) if shard else None,
                            dtype=str, compressors=compressors, overwrite=True)
    step = shard or chunk * 4  # whole shards: no read-modify-write of a partial one
    for start in range(0, len(values), step):
        arr[start:start + step] = np.array(values.slice(start, step).to_pylist(), dtype=object)


def write_zep0007(path: Path, values: pa.Array, chunk: int) -> None:
    """The draft's own procedure: int32 offsets, zero padding to 64 bytes, data."""
    if path.exists():
        shutil.rmtree(path)
    (path / "c").mkdir(parents=True)
    n = len(values)
    meta = {"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": {"name": "string"},
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "", "codecs": [], "attributes": {}}
    for i, start in enumerate(range(0, n, chunk)):
        part = values.slice(start, chunk)
        offsets = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset:part.offset + len(part) + 1]
        offsets = offsets - offsets[0]
        if len(part) < chunk:  # edge chunk: pad with empty strings
            offsets = np.concatenate([offsets, np.full(chunk - len(part), offsets[-1], dtype=np.int32)])
        head = offsets.astype("<i4").tobytes()
        head += b"\0" * (-len(head) % 64)
        data = np.frombuffer(part.buffers()[2], dtype=np.uint8)
        first = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset]
        body = data[first:first + offsets[-1]].tobytes()
        (path / "c" / str(i)).write_bytes(head + body)
    (path / "zarr.json").write_text(json.dumps(meta))


def generate(n: int, long_n: int) -> dict:
    DATA.mkdir(parents=True, exist_ok=True)
    stamp = DATA / f"ready-{n}-{long_n}"
    paths = {name: DATA / name for name in [
        "w1.zarr", "w1_gzip.zarr", "w1_blosc.zarr", "w1.parquet", "w1.arrow", "w2_none.zarr", "w2_zstd.zarr",
        "w3.zarr", "w4.zarr", "w4.parquet", "w5_small.zarr", "w5_large.zarr", "w5_huge.zarr"]}
    if stamp.exists():
        return paths
    for p in DATA.iterdir():
        if not (p.name.startswith("ready-w7-") or p.name == "w7_sharded.zarr"):  # generate_w7's own
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec
    chunk = w1_chunk(n)
    print(f"generating: {n:,} short strings, chunks of {chunk:,}", flush=True)
    s = short_strings(n)
    write_zarr_python(paths["w1.zarr"], s, chunk, [ZstdCodec(level=0)])
    write_zarr_python(paths["w1_gzip.zarr"], s, chunk, [GzipCodec(level=5)])
    write_zarr_python(paths["w1_blosc.zarr"], s, chunk, [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")])
    table = pa.table({"s": s})
    pq.write_table(table, paths["w1.parquet"], compression="zstd")
    with pa.ipc.new_file(paths["w1.arrow"], table.schema) as w:  # uncompressed
        w.write_table(table, max_chunksize=chunk)
    for mode in ["none", "zstd"]:
        run([str(ZARRS), "write-vlen", str(paths["w1.zarr"]), str(paths[f"w2_{mode}.zarr"]), mode])
    write_zep0007(paths["w3.zarr"], s, chunk)
    print(f"generating: {long_n:,} long strings", flush=True)
    ls = long_strings(long_n)
    write_zarr_python(paths["w4.zarr"], ls, max(long_n // 10, 1), [ZstdCodec(level=0)])
    pq.write_table(pa.table({"s": ls}), paths["w4.parquet"], compression="zstd")
    # W5 memory growth: the same chunk size (100k), arrays 10x apart.
    small = min(n // 10, 1_000_000)
    write_zarr_python(paths["w5_small.zarr"], s.slice(0, small), small // 10, [ZstdCodec(level=0)])
    write_zarr_python(paths["w5_large.zarr"], short_strings(small * 10, seed=3), small // 10, [ZstdCodec(level=0)])
    link_repeated(paths["w5_large.zarr"], paths["w5_huge.zarr"], 10)
    stamp.touch()
    return paths


def w1_chunk(n: int) -> int:
    return 1_000_000 if n >= 10_000_000 else n // 10


def w7_layout(n: int) -> tuple[int, int]:
    """(shard, inner chunk) of W7's store: shards as long as W1's chunks, each of 100
    inner chunks (so 10 rows need 1/100 of a shard)."""
    shard = w1_chunk(n)
    return shard, shard // 100


def generate_w7(n: int) -> Path:
    """W1's strings, sharded by zarr-python (vlen-utf8 + zstd inside each shard, as
    W1). Kept apart from `generate`'s stamp: it is made whenever it is missing."""
    DATA.mkdir(parents=True, exist_ok=True)
    shard, inner = w7_layout(n)
    path = DATA / "w7_sharded.zarr"
    stamp = DATA / f"ready-w7-{n}-{shard}-{inner}"
    if not stamp.exists():
        from zarr.codecs import ZstdCodec
        for old in DATA.glob("ready-w7-*"):
            old.unlink()
        print(f"generating: {n:,} short strings, sharded: shards of {shard:,} = 100 inner chunks of {inner:,}", flush=True)
        write_zarr_python(path, short_strings(n), inner, [ZstdCodec(level=0)], shard=shard)
        stamp.touch()
    return path


def link_repeated(src: Path, dst: Path, times: int) -> None:
    """`src` repeated `times` over: the same metadata with the shape multiplied, and
    chunk files hard-linked from zarr-python's (chunk `i` is `src`'s `i % n`). It
    gives an array 10x longer at the same chunk size without writing it again."""
    meta = json.loads((src / "zarr.json").read_text())
    meta["shape"] = [meta["shape"][0] * times]
    (dst / "c").mkdir(parents=True)
    (dst / "zarr.json").write_text(json.dumps(meta))
    chunks = sorted((src / "c").iterdir(), key=lambda p: int(p.name))
    for i in range(len(chunks) * times):
        os.link(chunks[i % len(chunks)], dst / "c" / str(i))


# ---------------------------------------------------------------- peers

def run(cmd: list[str], env: dict | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-300:] or f"exit {proc.returncode}")
    return proc.stdout


def timed_program(cmd: list[str], env: dict | None = None) -> float:
    """A Rust program that prints its own job's seconds first."""
    return float(run(cmd, env).split()[0])


def counted_program(cmd: list[str], counts: dict, label: str) -> float:
    """A zarrow `head` job: prints `SECONDS ROWS BYTES REQUESTS`; keeps the counts."""
    seconds, rows, fetched, requests = run(cmd).split()[:4]
    if int(rows) != HEAD_ROWS:
        raise RuntimeError(f"read {rows} rows, not {HEAD_ROWS}")
    counts[label] = {"bytes": int(fetched), "requests": int(requests), "misses": None}
    return float(seconds)


def peak_rss_mib(cmd: list[str]) -> float:
    wrapper = "import resource, subprocess, sys\np = subprocess.run(sys.argv[1:], capture_output=True)\n" \
              "sys.exit(p.returncode) if p.returncode else print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    return int(run([sys.executable, "-c", wrapper, *cmd])) / 1024


def python_timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def zarr_python_read(path: Path):
    return lambda: zarr.open_array(str(path), mode="r")[:]


def zarr_python_head(path: Path, rows: int):
    return lambda: zarr.open_array(str(path), mode="r")[:rows]


def zarr_python_head_counted(path: Path, rows: int, expected: list[str]) -> dict:
    """zarr-python's `[:rows]` through a store wrapper that counts what it reads
    (untimed: the timed run opens the path itself). Checks the values too."""
    from zarr.storage import LocalStore, WrapperStore

    log: list[int | None] = []

    class Counting(WrapperStore):
        async def get(self, key, prototype, byte_range=None):
            got = await self._store.get(key, prototype, byte_range)
            log.append(None if got is None else len(got))
            return got

        async def get_partial_values(self, prototype, key_ranges):
            key_ranges = list(key_ranges)
            got = await self._store.get_partial_values(prototype, key_ranges)
            log.extend(None if b is None else len(b) for b in got)
            return got

    values = zarr.open_array(Counting(LocalStore(str(path), read_only=True)), mode="r")[:rows]
    if list(values) != expected:
        raise RuntimeError(f"zarr-python read other values: {list(values)[:3]}...")
    return {"bytes": sum(b or 0 for b in log), "requests": len(log), "misses": sum(b is None for b in log)}


def pyarrow_parquet(path: Path):
    return lambda: pq.read_table(path)


def pyarrow_ipc(path: Path, mmap: bool = False):
    def go():
        source = pa.memory_map(str(path)) if mmap else pa.OSFile(str(path))
        with pa.ipc.open_file(source) as f:
            return f.read_all()
    return go


def python_zarr_to_parquet(src: Path, dst: Path):
    def go():
        values = zarr.open_array(str(src), mode="r")[:]
        pq.write_table(pa.table({"s": pa.array(values, pa.string())}), dst, compression="zstd")
    return go


def python_parquet_to_zarr(src: Path, dst: Path, chunk: int):
    def go():
        column = pq.read_table(src).column("s").to_numpy()
        arr = zarr.create_array(store=str(dst), shape=(len(column),), chunks=(chunk,), dtype=str, overwrite=True)
        arr[:] = column
    return go


# ---------------------------------------------------------------- the run

def seconds(t: float) -> str:
    return f"{t:.3f} s"


def millis(t: float) -> str:
    return f"{t * 1000:.2f} ms"


def measure(label: str, runs: int, fn, show=seconds) -> dict:
    times, error = [], None
    for _ in range(runs):
        try:
            times.append(fn())
        except Exception as e:  # noqa: BLE001 - a failing peer is reported, not dropped
            error = f"{type(e).__name__}: {str(e)[:200]}"
            break
    result = {"label": label, "median": statistics.median(times) if times and not error else None, "error": error}
    shown = show(result["median"]) if result["median"] is not None else f"FAILED ({error})"
    print(f"  {label:<58} {shown}", flush=True)
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1M strings, 3 runs")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--only", choices=["W7"], help="run this section alone (results to benches/compare/data/RESULTS-only.md)")
    ap.add_argument("--out", type=Path, help="where to write the results (default benches/RESULTS.md)")
    args = ap.parse_args()
    n, long_n = (1_000_000, 10_000) if args.quick else (10_000_000, 100_000)
    runs = args.runs or (3 if args.quick else 5)
    out_md = args.out or (DATA / "RESULTS-only.md" if args.only else REPO / "benches" / "RESULTS.md")
    z = lambda *a: [str(ZARROW), *map(str, a)]  # noqa: E731
    one = {"RAYON_NUM_THREADS": "1"}
    results: dict[str, list[dict]] = {}
    counts: dict[str, dict] = {}  # W7: bytes and requests per label
    w7_store: dict = {}  # W7: the store's layout and the runs

    def section(name: str, items: list[tuple[str, object]], runs: int = runs, show=seconds) -> None:
        print(name, flush=True)
        results[name] = [measure(label, runs, fn, show) for label, fn in items]

    w7_runs = args.runs or W7_RUNS

    def w7(w1: Path | None) -> None:
        sharded = generate_w7(n)
        shard, inner = w7_layout(n)
        expected = short_strings(n).slice(0, HEAD_ROWS).to_pylist()
        head = lambda path, label: (label, lambda: counted_program(z("head", path, HEAD_ROWS), counts, label))  # noqa: E731
        items = [
            head(sharded, "zarrow read_range(0..10)"),
            ("zarr-python arr[:10]", lambda: python_timed(zarr_python_head(sharded, HEAD_ROWS))),
        ]
        if w1 is not None:  # context: the same rows from W1 itself, which holds them in one big chunk
            items += [head(w1, "zarrow read_range(0..10), unsharded W1"),
                      ("zarr-python arr[:10], unsharded W1", lambda: python_timed(zarr_python_head(w1, HEAD_ROWS)))]
        section(f"W7: first {HEAD_ROWS} rows of W1 sharded by zarr-python (shards of {shard:,} = 100 inner chunks of {inner:,}; vlen-utf8 + zstd)",
                items, w7_runs, millis)
        for label, path in [("zarr-python arr[:10]", sharded), ("zarr-python arr[:10], unsharded W1", w1)]:
            if path is not None:
                try:
                    counts[label] = zarr_python_head_counted(path, HEAD_ROWS, expected)
                except Exception as e:  # noqa: BLE001 - reported as n/a
                    print(f"  {label}: counting failed: {type(e).__name__}: {e}", flush=True)
        for label, c in counts.items():
            misses = f" ({c['misses']} of them for absent keys)" if c["misses"] else ""
            print(f"  {label:<58} {c['bytes']:,} bytes in {c['requests']} requests{misses}", flush=True)
        w7_store.update(shard_bytes=max(f.stat().st_size for f in (sharded / "c").iterdir()), shard=shard, inner=inner,
                        runs=w7_runs)

    if args.only == "W7":
        w7(None)
        write_results(results, {}, n, long_n, runs, (w7_store, counts), out_md, partial=args.only)
        return 0
    paths = generate(n, long_n)

    section(f"W1: {n:,} short strings, vlen-utf8 + zstd (zarr-python), read all", [
        ("bound: read + zstd-decompress every chunk (all cores)", lambda: timed_program(z("bound", paths["w1.zarr"]))),
        ("bound: same, one thread", lambda: timed_program(z("bound", paths["w1.zarr"]), one)),
        ("zarrow -> Utf8View", lambda: timed_program(z("read", paths["w1.zarr"], "utf8-view"))),
        ("zarrow -> Utf8", lambda: timed_program(z("read", paths["w1.zarr"], "utf8"))),
        ("zarrow -> Utf8View, one thread", lambda: timed_program(z("read", paths["w1.zarr"], "utf8-view"), one)),
        ("zarrow -> Utf8, one thread", lambda: timed_program(z("read", paths["w1.zarr"], "utf8"), one)),
        ("zarr-python arr[:]", lambda: python_timed(zarr_python_read(paths["w1.zarr"]))),
        ("zarrs -> ArrayBytes", lambda: timed_program([str(ZARRS), "read", str(paths["w1.zarr"]), "bytes"])),
        ("zarrs -> Vec<String>", lambda: timed_program([str(ZARRS), "read", str(paths["w1.zarr"]), "strings"])),
        ("pyarrow: the same strings from zstd Parquet", lambda: python_timed(pyarrow_parquet(paths["w1.parquet"]))),
        ("pyarrow: the same strings from uncompressed IPC", lambda: python_timed(pyarrow_ipc(paths["w1.arrow"]))),
    ])
    section("W1 with other compressors", [
        ("bound: gzip decompress only", lambda: timed_program(z("bound", paths["w1_gzip.zarr"]))),
        ("zarrow gzip -> Utf8", lambda: timed_program(z("read", paths["w1_gzip.zarr"], "utf8"))),
        ("bound: blosc decompress only", lambda: timed_program(z("bound", paths["w1_blosc.zarr"]))),
        ("zarrow blosc -> Utf8", lambda: timed_program(z("read", paths["w1_blosc.zarr"], "utf8"))),
    ])
    section("W2: the same strings as zarrs.vlen (uint32 index at start, written by zarrs)", [
        ("zarrow uncompressed -> Utf8", lambda: timed_program(z("read", paths["w2_none.zarr"], "utf8"))),
        ("zarrow uncompressed, memory-mapped store -> Utf8", lambda: timed_program(z("read", paths["w2_none.zarr"], "utf8", "mmap"))),
        ("zarrow uncompressed -> Utf8, warm (as pyarrow is timed)", lambda: timed_program(z("read", paths["w2_none.zarr"], "utf8", "warm"))),
        ("zarrs uncompressed -> ArrayBytes", lambda: timed_program([str(ZARRS), "read", str(paths["w2_none.zarr"]), "bytes"])),
        ("bound: zstd data decompress only", lambda: timed_program(z("bound", paths["w2_zstd.zarr"]))),
        ("zarrow zstd -> Utf8", lambda: timed_program(z("read", paths["w2_zstd.zarr"], "utf8"))),
        ("zarrs zstd -> ArrayBytes", lambda: timed_program([str(ZARRS), "read", str(paths["w2_zstd.zarr"]), "bytes"])),
        ("pyarrow: uncompressed IPC file", lambda: python_timed(pyarrow_ipc(paths["w1.arrow"]))),
        ("pyarrow: uncompressed IPC file, memory_map", lambda: python_timed(pyarrow_ipc(paths["w1.arrow"], mmap=True))),
    ])
    section("W3: the same strings in the ZEP0007 layout, uncompressed", [
        ("zarrow -> Utf8", lambda: timed_program(z("read", paths["w3.zarr"], "utf8"))),
        ("zarrow, memory-mapped store -> Utf8", lambda: timed_program(z("read", paths["w3.zarr"], "utf8", "mmap"))),
        ("zarrow -> Utf8, warm (as pyarrow is timed)", lambda: timed_program(z("read", paths["w3.zarr"], "utf8", "warm"))),
        ("pyarrow: uncompressed IPC file", lambda: python_timed(pyarrow_ipc(paths["w1.arrow"]))),
        ("pyarrow: uncompressed IPC file, memory_map", lambda: python_timed(pyarrow_ipc(paths["w1.arrow"], mmap=True))),
    ])
    section(f"W4: {long_n:,} long strings (1-10 KB), vlen-utf8 + zstd", [
        ("bound: read + zstd-decompress every chunk", lambda: timed_program(z("bound", paths["w4.zarr"]))),
        ("zarrow -> Utf8View", lambda: timed_program(z("read", paths["w4.zarr"], "utf8-view"))),
        ("zarrow -> Utf8", lambda: timed_program(z("read", paths["w4.zarr"], "utf8"))),
        ("zarr-python arr[:]", lambda: python_timed(zarr_python_read(paths["w4.zarr"]))),
        ("zarrs -> ArrayBytes", lambda: timed_program([str(ZARRS), "read", str(paths["w4.zarr"]), "bytes"])),
        ("pyarrow: the same strings from zstd Parquet", lambda: python_timed(pyarrow_parquet(paths["w4.parquet"]))),
    ])
    out = DATA / "out"
    out.mkdir(exist_ok=True)
    section("W5: Zarr (W1) -> Parquet, end to end", [
        ("zarrow", lambda: timed_program(z("to-parquet", paths["w1.zarr"], out / "w5.parquet"))),
        ("zarr-python arr[:] + pyarrow write", lambda: python_timed(python_zarr_to_parquet(paths["w1.zarr"], out / "w5_py.parquet"))),
    ])
    chunk = 1_000_000 if n >= 10_000_000 else n // 10
    section("W6: Parquet -> Zarr, end to end", [
        ("zarrow, default encoding (vlen-utf8 + zstd)", lambda: timed_program(z("from-parquet", paths["w1.parquet"], out / "w6.zarr", "default"))),
        ("zarrow, zarrs-vlen encoding (+ zstd)", lambda: timed_program(z("from-parquet", paths["w1.parquet"], out / "w6v.zarr", "zarrs-vlen"))),
        ("pyarrow read + zarr-python write", lambda: python_timed(python_parquet_to_zarr(paths["w1.parquet"], out / "w6_py.zarr", chunk))),
        ("bound: zstd-compress the vlen-utf8 chunks only (all cores)", lambda: timed_program(z("compress-bound", paths["w1.parquet"], "default"))),
        ("bound: zstd-compress the zarrs.vlen chunks only (all cores)", lambda: timed_program(z("compress-bound", paths["w1.parquet"], "zarrs-vlen"))),
        ("arrow-rs: read the Parquet file only (one thread)", lambda: timed_program(z("parquet-read", paths["w1.parquet"]))),
    ])
    print("W5 peak memory (zarrow to-parquet, chunks of equal size)", flush=True)
    memory = {}
    for name in ["w5_small.zarr", "w5_large.zarr", "w5_huge.zarr"]:
        elements = zarr.open_array(str(paths[name]), mode="r").shape[0]
        chunk_bytes = max(f.stat().st_size for f in (paths[name] / "c").iterdir())
        (out / f"{name}.parquet").unlink(missing_ok=True)
        peak = peak_rss_mib(z("to-parquet", paths[name], out / f"{name}.parquet"))
        memory[name] = {"elements": elements, "peak_mib": peak}
        print(f"  {name}: {elements:,} elements, peak RSS {peak:.0f} MiB (largest encoded chunk {chunk_bytes / 2**20:.1f} MiB)")
    w7(paths["w1.zarr"])
    write_results(results, memory, n, long_n, runs, (w7_store, counts), out_md)
    return 0


def get(results: dict, section_prefix: str, label: str) -> float | None:
    for name, rows in results.items():
        if name.startswith(section_prefix):
            for r in rows:
                if r["label"] == label:
                    return r["median"]
    return None


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM; Python {platform.python_version()}, zarr {zarr.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}"


def w7_lines(results: dict, store: dict, counts: dict) -> list[str]:
    """W7's own section: time and bytes fetched, zarrow against zarr-python."""
    rows = next((rows for name, rows in results.items() if name.startswith("W7:")), None)
    if not store or rows is None:
        return []
    zarrow_time = get(results, "W7:", "zarrow read_range(0..10)")

    def fetched(label: str) -> tuple[str, str]:
        c = counts.get(label)
        if c is None:
            return "n/a", "n/a"
        misses = f" ({c['misses']} for absent keys)" if c["misses"] else ""
        return f"{c['bytes']:,}", f"{c['requests']}{misses}"

    lines = ["", f"## W7: first {HEAD_ROWS} rows of a sharded W1 store (issue 11)", "",
             f"W1's strings written by zarr-python in shards of {store['shard']:,} rows (W1's chunk length),"
             f" each of 100 inner chunks of {store['inner']:,} rows (vlen-utf8 + zstd inside; largest shard"
             f" {store['shard_bytes'] / 2**20:.2f} MiB). Each reader opens the array and reads rows 0..{HEAD_ROWS};"
             f" medians of {store['runs']} runs."
             " Bytes and requests are counted by a store wrapper on each side (zarrow: a `Store` wrapper in"
             " zarrow_compare.rs, requests as one per `get`/`get_range`, length queries not counted; zarr-python:"
             " a `WrapperStore` counting what `get`/`get_partial_values` return, in a separate untimed run),"
             " metadata included. zarrow is timed in a fresh process, zarr-python in the harness's process.",
             "", "| peer | median | bytes fetched | requests | time vs. zarrow |", "|---|---|---|---|---|"]
    for r in rows:
        shown = f"{r['median'] * 1000:.2f} ms" if r["median"] is not None else f"FAILED: {r['error']}"
        b, q = fetched(r["label"])
        lines.append(f"| {r['label']} | {shown} | {b} | {q} | {ratio(r['median'], zarrow_time)} |")
    return lines


def write_results(results: dict, memory: dict, n: int, long_n: int, runs: int, w7: tuple[dict, dict], out: Path,
                  partial: str | None = None) -> None:
    """`w7`: W7's store layout and its bytes fetched per label. `partial`: the
    section `--only` ran (no targets, no memory rows)."""
    g = lambda s, l: get(results, s, l)  # noqa: E731
    bound = g("W1:", "bound: read + zstd-decompress every chunk (all cores)")
    view, utf8 = g("W1:", "zarrow -> Utf8View"), g("W1:", "zarrow -> Utf8")
    at_most = lambda limit: lambda r: r <= limit  # noqa: E731
    at_least = lambda limit: lambda r: r >= limit  # noqa: E731

    def target(label: str, num, den, ok=None) -> tuple:
        """A target row: num / den, and whether `ok` holds for it (None: informational)."""
        return (label, ratio(num, den), ok and num and den and ok(num / den))

    pq_zstd = g("W1:", "pyarrow: the same strings from zstd Parquet")
    ipc = {w: g(f"{w}:", "pyarrow: uncompressed IPC file") for w in ["W2", "W3"]}
    w6_default, w6_vlen = g("W6:", "zarrow, default encoding (vlen-utf8 + zstd)"), g("W6:", "zarrow, zarrs-vlen encoding (+ zstd)")
    w6_python = g("W6:", "pyarrow read + zarr-python write")
    w6_bound = g("W6:", "bound: zstd-compress the vlen-utf8 chunks only (all cores)")
    targets = [
        target("W1 Utf8View <= 1.15x the bound", view, bound, at_most(1.15)),
        target("W1 Utf8 <= 1.3x the bound", utf8, bound, at_most(1.3)),
        target("W1 zarr-python / zarrow Utf8View (about 10x)", g("W1:", "zarr-python arr[:]"), view),
        target("W1 zarrs ArrayBytes / zarrow Utf8View (about 3x)", g("W1:", "zarrs -> ArrayBytes"), view),
        target("W1 zarrow Utf8View / pyarrow zstd Parquet (parity: <= 1.0x)", view, pq_zstd, at_most(1.0)),
        target("W1 parallel speedup, Utf8View, 1 -> all cores (>= 1.7x)", g("W1:", "zarrow -> Utf8View, one thread"), view, at_least(1.7)),
        target("gzip: read / decompress alone (<= 1.25x)", g("W1 with", "zarrow gzip -> Utf8"), g("W1 with", "bound: gzip decompress only"), at_most(1.25)),
        target("blosc: read / decompress alone (<= 1.25x)", g("W1 with", "zarrow blosc -> Utf8"), g("W1 with", "bound: blosc decompress only"), at_most(1.25)),
        target("zarrs.vlen + zstd: read / decompress alone (<= 1.25x)", g("W2:", "zarrow zstd -> Utf8"), g("W2:", "bound: zstd data decompress only"), at_most(1.25)),
        target("W2 uncompressed / pyarrow IPC, both warm (<= 1.5x)", g("W2:", "zarrow uncompressed -> Utf8, warm (as pyarrow is timed)"), ipc["W2"], at_most(1.5)),
        target("W3 uncompressed / pyarrow IPC, both warm (<= 1.5x)", g("W3:", "zarrow -> Utf8, warm (as pyarrow is timed)"), ipc["W3"], at_most(1.5)),
        target("W2 uncompressed, zarrow in a fresh process / pyarrow IPC (warm)", g("W2:", "zarrow uncompressed -> Utf8"), ipc["W2"]),
        target("W3 uncompressed, zarrow in a fresh process / pyarrow IPC (warm)", g("W3:", "zarrow -> Utf8"), ipc["W3"]),
        target("W2 uncompressed, memory-mapped store / pyarrow IPC (<= 1.5x)", g("W2:", "zarrow uncompressed, memory-mapped store -> Utf8"), ipc["W2"], at_most(1.5)),
        target("W3 uncompressed, memory-mapped store / pyarrow IPC (<= 1.5x)", g("W3:", "zarrow, memory-mapped store -> Utf8"), ipc["W3"], at_most(1.5)),
        target("W6 python / zarrow default (>= 10x)", w6_python, w6_default, at_least(10)),
        target("W6 zarrow default / zarrs-vlen (>= 3x)", w6_default, w6_vlen, at_least(3)),
        target("W6 ceiling: python / compress-only bound, vlen-utf8", w6_python, w6_bound),
        target("W6 ceiling: vlen-utf8 bound / zarrs.vlen bound", w6_bound, g("W6:", "bound: zstd-compress the zarrs.vlen chunks only (all cores)")),
        target("W6 zarrow default / its compress-only bound", w6_default, w6_bound),
    ]
    sizes = [memory[name] for name in ["w5_small.zarr", "w5_large.zarr", "w5_huge.zarr"] if name in memory]
    for small, large in zip(sizes, sizes[1:]):
        growth = large["peak_mib"] / small["peak_mib"] - 1
        targets.append((f"W5 peak memory growth, {small['elements']:,} -> {large['elements']:,} elements (< 10%)",
                        f"{growth * 100:+.0f}% ({small['peak_mib']:.0f} -> {large['peak_mib']:.0f} MiB)", growth < 0.10))
    lines = [
        "# Side-by-side benchmark results",
        "",
        f"Produced by `bash benches/compare/run.sh{'' if n >= 10_000_000 else ' --quick'}{' --only ' + partial if partial else ''}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
        f"Machine: {machine()}. Medians of {runs} runs, warm page cache, every peer on the same files in the same run.",
        "The Python peers run inside the harness's process, so from their second run on their allocator hands back memory it already holds;"
        " zarrow and zarrs run as fresh processes that fault in every page they allocate, except in the rows marked warm"
        " (the job run once untimed, then timed, in one process).",
        f"Workloads: {n:,} strings of 0-32 ASCII bytes in chunks of {1_000_000 if n >= 10_000_000 else n // 10:,} (W1-W3, W5, W6); {long_n:,} strings of 1-10 KB (W4).",
        "",
        "| workload | peer | median | vs. first row |",
        "|---|---|---|---|",
    ]
    if partial:  # the one section's own table below
        lines = lines[:-4]
    for name, rows in results.items():
        if name.startswith("W7:"):  # its own section below (milliseconds, bytes fetched)
            continue
        base = rows[0]["median"]
        for i, r in enumerate(rows):
            shown = f"{r['median']:.3f} s" if r["median"] is not None else f"FAILED: {r['error']}"
            lines.append(f"| {name if i == 0 else ''} | {r['label']} | {shown} | {ratio(r['median'], base) if i else ''} |")
    if not partial:
        lines += ["", "## Targets (issue 5)", "", "| target | measured | met |", "|---|---|---|"]
        for label, value, ok in targets:
            lines.append(f"| {label} | {value} | {'yes' if ok else ('-' if ok is None else 'no')} |")
    lines += w7_lines(results, *w7)
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print("\n" + text)
    print(f"written to {out}")


if __name__ == "__main__":
    sys.exit(main())
