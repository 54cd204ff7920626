#!/usr/bin/env python3
"""Issue 41's targets: the same store read as plain Zarr and from an Icechunk
repository (local disk and S3 on moto), and an append to each.

    PYTHONPATH=SITE .venv-icechunk/bin/python benches/compare/icechunk_targets.py --moto-python PY [--rounds 11]

Run with the Icechunk venv (icechunk-python copies the store into a repository) and a
release build of the zarrow package (PYTHONPATH naming a directory the release wheel
was installed into with `pip install --target`). Each measure is the
median of interleaved rounds (plain, Icechunk, plain, ...): the machine is shared.

* W1 sharded (10M strings of 0-32 bytes, vlen-utf8 + zstd, shards of 1M = 100 inner
  chunks, as benches/compare/run.py's W7 store, written by zarr-python): read whole
  by `zarrow.read` in this process, from the store's directory and from an Icechunk
  repository holding the same keys' bytes (copied by icechunk-python); then both on
  S3 (moto, --moto-python's interpreter), the plain store uploaded by boto3.
* An append of 1M rows (a string and an integer column) by `zarrow.write(mode=
  "append")`, to a fresh copy of a 1M-row table each round, plain Zarr and
  Icechunk: the difference of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import icechunk
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "interop"))
from remote_servers import free_port, server_process  # noqa: E402

DATA = HERE / "data"
icechunk.set_logs_filter("error")


def short_strings(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 33, n)
    letters = rng.integers(97, 123, int(lengths.sum()), dtype=np.uint8).tobytes().decode()
    out, at = [], 0
    for k in lengths:
        out.append(letters[at:at + k])
        at += k
    return np.array(out, dtype=object)


def w1_sharded(n: int) -> Path:
    """W1's strings sharded as W7's store (written by zarr-python), made once."""
    from zarr.codecs import ZstdCodec
    shard = 1_000_000 if n >= 10_000_000 else n // 10
    path = DATA / f"icechunk_w1_sharded_{n}.zarr"
    if not (path / "zarr.json").exists():
        print(f"generating {n:,} strings, shards of {shard:,} = 100 inner chunks", flush=True)
        values = short_strings(n)
        arr = zarr.create_array(store=str(path), shape=(n,), chunks=(shard // 100,), shards=(shard,),
                                dtype=str, compressors=[ZstdCodec(level=0)], overwrite=True)
        for start in range(0, n, shard):
            arr[start:start + shard] = values[start:start + shard]
    return path


def copy_into(store_dir: Path, storage) -> None:
    """Every key of the store at `store_dir`, its bytes as they are, into a new
    repository's root (one commit)."""
    from zarr.core.buffer import default_buffer_prototype
    repo = icechunk.Repository.create(storage)
    session = repo.writable_session("main")
    proto = default_buffer_prototype()

    async def put_all():
        # Metadata first: Icechunk takes a chunk only inside its array.
        for path in sorted(store_dir.rglob("*"), key=lambda p: (p.name != "zarr.json", str(p))):
            if path.is_file():
                key = path.relative_to(store_dir).as_posix()
                await session.store.set(key, proto.buffer.from_bytes(path.read_bytes()))
    asyncio.run(put_all())
    session.commit("the same store")


def interleaved(cases: list[tuple[str, callable]], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(rounds):
        for name, fn in cases:
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def read_all(location: str, rows: int, **options) -> callable:
    import zarrow

    def go():
        got = pa.table(zarrow.read(location, **options)).num_rows
        if got != rows:
            raise RuntimeError(f"{location}: {got} rows")
    return go


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--moto-python", required=True)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="1M strings")
    ap.add_argument("--only", choices=["reads", "append"], help="one half of the measures")
    args = ap.parse_args()
    n = 1_000_000 if args.quick else 10_000_000
    DATA.mkdir(parents=True, exist_ok=True)
    plain = w1_sharded(n)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if args.only != "append":
            reads(args, plain, n, tmp, results)
        if args.only != "reads":
            append_cost(args, tmp, results)
    print()
    for name, value in results.items():
        print(f"{name}: {value:.3f}")
    return 0


def reads(args, plain: Path, n: int, tmp: Path, results: dict) -> None:
    if True:
        repo = tmp / "w1_repo"
        copy_into(plain, icechunk.local_filesystem_storage(str(repo)))
        local = interleaved([("plain", read_all(str(plain), n)),
                             ("icechunk", read_all(f"icechunk+file://{repo}", n))], args.rounds)
        results["W1 sharded, local: Icechunk / plain"] = local["icechunk"] / local["plain"]
        print(f"local: plain {local['plain']:.3f} s, icechunk {local['icechunk']:.3f} s", flush=True)

        port = free_port()
        with server_process([args.moto_python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            port) as endpoint:
            creds = dict(aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1")
            upload = ("import boto3, sys, pathlib; s3 = boto3.client('s3', endpoint_url=sys.argv[1], "
                      "aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1'); "
                      "s3.create_bucket(Bucket='bench'); root = pathlib.Path(sys.argv[2]); "
                      "[s3.upload_file(str(p), 'bench', 'plain/' + p.relative_to(root).as_posix()) "
                      "for p in root.rglob('*') if p.is_file()]")
            subprocess.run([args.moto_python, "-c", upload, endpoint, str(plain)], check=True, timeout=1200)
            storage = icechunk.s3_storage(bucket="bench", prefix="repo", endpoint_url=endpoint, allow_http=True,
                                          force_path_style=True, region="us-east-1",
                                          access_key_id=creds["aws_access_key_id"],
                                          secret_access_key=creds["aws_secret_access_key"])
            copy_into(plain, storage)
            os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test",
                               "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"})
            s3 = interleaved([("plain", read_all("s3://bench/plain", n)),
                              ("icechunk", read_all("icechunk+s3://bench/repo", n))], max(3, args.rounds // 2))
            results["W1 sharded, S3 (moto): Icechunk / plain"] = s3["icechunk"] / s3["plain"]
            print(f"s3: plain {s3['plain']:.3f} s, icechunk {s3['icechunk']:.3f} s", flush=True)



def append_cost(args, tmp: Path, results: dict) -> None:
    """1M rows appended by `zarrow.write(mode="append")` onto a fresh copy of a
    1M-row table each round, plain Zarr and Icechunk (in this process: the same
    library path as `zarrow convert --append`)."""
    import zarrow
    m = 1_000_000
    table = pa.table({"s": pa.array(short_strings(m, 2).tolist()), "k": pa.array(np.arange(m))})
    base_plain, base_repo = tmp / "base.zarr", tmp / "base_repo"
    zarrow.write(table, str(base_plain))
    zarrow.write(table, f"icechunk+file://{base_repo}?path=t")
    work_plain, work_repo = tmp / "work.zarr", tmp / "work_repo"

    def append(dst: str, base: Path, work: Path):
        def go() -> float:
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)
            t = time.perf_counter()
            if zarrow.write(table, dst, mode="append") != m:
                raise RuntimeError("rows")
            return time.perf_counter() - t
        return go

    cases = [("plain", append(str(work_plain), base_plain, work_plain)),
             ("icechunk", append(f"icechunk+file://{work_repo}?path=t", base_repo, work_repo))]
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(args.rounds):
        for name, fn in cases:
            times[name].append(fn())
    med = {k: statistics.median(v) for k, v in times.items()}
    results["append 1M rows: Icechunk - plain (ms)"] = (med["icechunk"] - med["plain"]) * 1000
    print(f"append: plain {med['plain']:.3f} s, icechunk {med['icechunk']:.3f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
