#!/usr/bin/env python3
"""zarrow on a Ballista cluster of separate processes, on loopback: `zarrow cluster
scheduler`, two `zarrow cluster executor`s, and `zarrow sql --cluster` as the client.

Usage: check_cluster.py ZARROW_BIN [-k SUBSTRING]

Tables on S3 (moto 5.2.5) and over HTTP (a ranged static server behind a proxy that
records requests), written by zarr-python; a Parquet file written by pyarrow. Each
query's rows equal both local DataFusion's (`zarrow sql` without --cluster) and
pyarrow's over the data zarr-python reads:

- group by (over a Zarr store and over an Icechunk repository), a join of two Zarr tables, a Zarr table joined with a Parquet file,
  LIMIT (the first rows) and ORDER BY ... LIMIT;
- both executors ran tasks (their RUST_LOG=info lines), and the chunks the query
  needs were each fetched once across the cluster, the metadata by the client alone;
- COPY ... STORED AS ZARR (with OPTIONS) run on the cluster, read back by zarr-python;
  COPY and INSERT into an Icechunk repository on S3, one commit each;
- with an executor killed mid-query (SIGKILL), the answer is the right rows (its
  tasks run again elsewhere) or a clean error, never wrong rows.

Prints one line per case, then "N passed, M failed"; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import zarr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_sql import OBS, plain, rows, same_rows, write_lineage, write_weights, zarr_table  # noqa: E402
from remote_servers import (  # noqa: E402
    SERVER_LIFETIME, FaultProxy, free_port, http_server, moto_server, stop_groups, wait_for,
)

warnings.filterwarnings("ignore")

BUCKET = "zarrow-cluster"
# Rows and chunk length of the `events` table: 24 chunks.
EVENTS_ROWS = 600_000
EVENTS_CHUNK = 25_000
CELL_TYPES = ["B cell", "CD4 T cell", "CD8 T cell", "NK cell", "Monocyte", "Dendritic cell", "Platelet"]
TASK_LINE = re.compile(r"Execute task\s*: \[TID (\S+?)/")


class Cluster:
    """A scheduler and executors, each a process of its own on free loopback ports,
    logging to files; stopped at the end."""

    def __init__(self, zarrow: str, tmp: Path, env: dict):
        self.zarrow, self.tmp, self.env = zarrow, tmp, env
        self.port = free_port()
        self.url = f"df://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.executors: list[tuple[subprocess.Popen, Path]] = []

    def start(self, args: list[str], log: Path) -> subprocess.Popen:
        with open(log, "w") as out:
            # A working directory of their own: a client's relative path
            # means nothing there.
            cwd = self.tmp / "processes"
            cwd.mkdir(exist_ok=True)
            proc = subprocess.Popen(["timeout", "-k", "5", str(SERVER_LIFETIME), self.zarrow, "cluster", *args],
                                    stdout=out, stderr=subprocess.STDOUT, env={**self.env, "RUST_LOG": "info"},
                                    start_new_session=True, cwd=cwd)
        self.procs.append(proc)
        return proc

    def scheduler(self) -> None:
        # An executor silent for 5 s is lost: its tasks run again elsewhere.
        self.start(["scheduler", "--bind", f"127.0.0.1:{self.port}", "--executor-timeout", "5"],
                   self.tmp / "scheduler.log")
        wait_for(self.port)

    def executor(self, name: str) -> None:
        flight, grpc = free_port(), free_port()
        log = self.tmp / f"{name}.log"
        proc = self.start(["executor", "--scheduler", f"127.0.0.1:{self.port}", "--bind", f"127.0.0.1:{flight}",
                           "--grpc-port", str(grpc), "--concurrent-tasks", "2", "--heartbeat", "1"], log)
        deadline = time.monotonic() + 60
        while "registration succeed" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"executor {name} did not register: {log.read_text()[-500:]}")
            time.sleep(0.1)
        self.executors.append((proc, log))

    def tasks(self) -> list[Counter]:
        """Per executor, its tasks by job id so far."""
        return [Counter(TASK_LINE.findall(log.read_text())) for _, log in self.executors]

    def stop(self) -> None:
        stop_groups(self.procs)


def sql(zarrow: str, query: str, tables: dict[str, str], out: Path, env: dict, cluster: str | None,
        *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    args = [zarrow, "sql", query, "--output", str(out), "--overwrite", *extra]
    for name, location in tables.items():
        args += ["--table", f"{name}={location}"]
    if cluster:
        args += ["--cluster", cluster]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def answer(zarrow: str, query: str, tables: dict[str, str], out: Path, env: dict, cluster: str | None,
           *extra: str) -> pa.Table:
    done = sql(zarrow, query, tables, out, env, cluster, *extra)
    if done.returncode != 0:
        where = "on the cluster" if cluster else "locally"
        raise AssertionError(f"zarrow sql {where} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return pq.read_table(out)


def write_events(path: Path) -> pa.Table:
    """A bigger group (zarr-python, consolidated metadata): 24 chunks per array."""
    rng = np.random.default_rng(7)
    kinds = rng.integers(0, len(CELL_TYPES), EVENTS_ROWS)
    cell_type = np.array(CELL_TYPES, dtype=object)[kinds]
    value = rng.normal(100.0, 15.0, EVENTS_ROWS)
    ident = np.arange(EVENTS_ROWS, dtype=np.int64)
    group = zarr.open_group(str(path), mode="w")
    for name, values, dtype in [("cell_type", cell_type, str), ("value", value, "f8"), ("id", ident, "i8")]:
        arr = group.create_array(name, shape=(EVENTS_ROWS,), chunks=(EVENTS_CHUNK,), dtype=dtype)
        arr[:] = values
    zarr.consolidate_metadata(str(path))
    return zarr_table(path, ["cell_type", "value", "id"])


def upload(s3, root: Path, prefix: str) -> None:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(root).as_posix()}")


def grouped(table: pa.Table, key: str, aggs: list) -> pa.Table:
    return table.group_by(key).aggregate(aggs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zarrow", metavar="ZARROW_BIN")
    ap.add_argument("-k", dest="filter", default="")
    args = ap.parse_args()
    zarrow = str(Path(args.zarrow).resolve())
    passed = failed = 0

    def case(name: str, fn) -> None:
        nonlocal passed, failed
        if args.filter not in name:
            return
        try:
            note = fn()
            print(f"ok   {name}" + (f": {note}" if note else ""), flush=True)
            passed += 1
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            failed += 1

    with tempfile.TemporaryDirectory() as tmp_s, moto_server() as endpoint:
        tmp = Path(tmp_s)
        web_root = tmp / "web"
        web_root.mkdir()
        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test",
               "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)

        # The data, and what pyarrow makes of it.
        obs = zarr_table(OBS, ["cell_type", "n_genes", "total_counts"])
        cell_types = obs.column("cell_type").to_pylist()
        lineage = write_lineage(web_root / "lineage.zarr", cell_types)
        zarr.consolidate_metadata(str(web_root / "lineage.zarr"))
        weights_path = tmp / "weights.parquet"
        weights = write_weights(weights_path, cell_types)
        events = write_events(web_root / "events.zarr")
        upload(s3, OBS, "obs.zarr")
        upload(s3, web_root / "events.zarr", "events.zarr")

        proxy = FaultProxy("", "pass")
        with http_server(web_root) as web, contextlib.ExitStack() as stack:
            proxy.upstream = web
            http = stack.enter_context(proxy.serve())
            cluster = Cluster(zarrow, tmp, env)
            stack.callback(cluster.stop)
            cluster.scheduler()
            cluster.executor("executor-1")
            cluster.executor("executor-2")

            def both(query: str, tables: dict[str, str], want: pa.Table, *extra: str, ordered: bool = False) -> str:
                local = answer(zarrow, query, tables, tmp / "local.parquet", env, None, *extra)
                remote = answer(zarrow, query, tables, tmp / "cluster.parquet", env, cluster.url, *extra)
                same_rows(remote, want)
                same_rows(local, want)
                if ordered:
                    assert plain(remote).to_pylist() == plain(want).to_pylist(), "the order differs"
                return f"{remote.num_rows} rows"

            s3_obs = f"s3://{BUCKET}/obs.zarr"

            def group_by():
                want = grouped(obs.filter(pc.greater(obs["total_counts"], 5000)), "cell_type",
                               [([], "count_all"), ("n_genes", "sum")])
                want = want.rename_columns(["cell_type", "n", "s"]).select(["cell_type", "n", "s"])
                return both("SELECT cell_type, count(*) AS n, sum(n_genes) AS s FROM obs "
                            "WHERE total_counts > 5000 GROUP BY cell_type", {"obs": s3_obs}, want,
                            "--partitions", "4")
            case("group by over S3", group_by)

            def icechunk_table():
                # An Icechunk repository on S3, written by zarrow (one commit):
                # the plan carries the snapshot the client resolved.
                src = tmp / "obs_icechunk.parquet"
                pq.write_table(obs, src)
                url = f"icechunk+s3://{BUCKET}/icechunk?path=obs"
                made = subprocess.run([zarrow, "convert", str(src), url, "--chunk-len", "1000"], env=env,
                                      capture_output=True, text=True, timeout=300)
                assert made.returncode == 0, made.stderr
                want = grouped(obs, "cell_type", [([], "count_all"), ("n_genes", "sum")])
                want = want.rename_columns(["cell_type", "n", "s"]).select(["cell_type", "n", "s"])
                return both("SELECT cell_type, count(*) AS n, sum(n_genes) AS s FROM obs GROUP BY cell_type",
                            {"obs": url}, want, "--partitions", "4")
            case("group by over an Icechunk repository on S3", icechunk_table)

            def zarr_join():
                joined = obs.join(lineage, "cell_type", join_type="inner")
                want = grouped(joined, "lineage", [([], "count_all"), ("total_counts", "sum")])
                want = want.rename_columns(["lineage", "n", "t"]).select(["lineage", "n", "t"])
                return both("SELECT l.lineage, count(*) AS n, sum(o.total_counts) AS t FROM obs o "
                            "JOIN lineage l ON o.cell_type = l.cell_type GROUP BY l.lineage",
                            {"obs": s3_obs, "lineage": f"{http}/lineage.zarr"}, want, "--partitions", "4")
            case("join of two Zarr tables (S3 and HTTP)", zarr_join)

            def parquet_join():
                joined = events.join(weights, "cell_type", join_type="inner")
                joined = joined.append_column("w", pc.multiply(joined["value"], joined["weight"]))
                want = grouped(joined, "cell_type", [([], "count_all"), ("w", "sum")])
                want = want.rename_columns(["cell_type", "n", "w"]).select(["cell_type", "n", "w"])
                return both("SELECT e.cell_type, count(*) AS n, sum(e.value * w.weight) AS w FROM events e "
                            "JOIN weights w ON e.cell_type = w.cell_type GROUP BY e.cell_type",
                            {"events": f"s3://{BUCKET}/events.zarr", "weights": str(weights_path)}, want,
                            "--partitions", "6")
            case("a Zarr table (S3) joined with a Parquet file", parquet_join)

            def limit():
                want = obs.select(["cell_type", "n_genes"]).slice(0, 10)
                return both("SELECT cell_type, n_genes FROM obs LIMIT 10", {"obs": s3_obs}, want,
                            "--partitions", "4", ordered=True)
            case("LIMIT: the first rows", limit)

            def top():
                idx = pc.sort_indices(events, [("value", "descending"), ("id", "ascending")])[:10]
                want = events.take(idx).select(["id", "value"])
                return both("SELECT id, value FROM events ORDER BY value DESC, id LIMIT 10",
                            {"events": f"{http}/events.zarr"}, want, "--partitions", "6", ordered=True)
            case("ORDER BY ... LIMIT over HTTP", top)

            def union_all():
                # Two Zarr scans under one UNION ALL: Ballista hands each branch
                # its own slice of the partitions (some tasks none of a branch).
                query = ("SELECT cell_type, count(*) AS n, sum(id) AS s FROM "
                         "(SELECT cell_type, id FROM events WHERE id < 300000 UNION ALL "
                         "SELECT cell_type, id FROM events2 WHERE id >= 300000) GROUP BY cell_type")
                want = grouped(events, "cell_type", [([], "count_all"), ("id", "sum")])
                want = want.rename_columns(["cell_type", "n", "s"]).select(["cell_type", "n", "s"])
                return both(query, {"events": f"s3://{BUCKET}/events.zarr", "events2": f"{http}/events.zarr"},
                            want, "--partitions", "5")
            case("UNION ALL of two Zarr scans", union_all)

            def spread():
                # A scan of the HTTP table in 8 tasks: both executors run some, each
                # chunk is fetched once across the cluster, and no executor reads
                # metadata (the plan carries it): the metadata requests are the
                # client's, as many as a local query makes.
                query = "SELECT cell_type, count(*) AS n, avg(value) AS v FROM events GROUP BY cell_type"
                want = grouped(events, "cell_type", [([], "count_all"), ("value", "mean")])
                want = want.rename_columns(["cell_type", "n", "v"]).select(["cell_type", "n", "v"])
                tables = {"events": f"{http}/events.zarr"}
                proxy.requests.clear()
                same_rows(answer(zarrow, query, tables, tmp / "local.parquet", env, None, "--partitions", "8"),
                          want)
                local_meta = [r for r in proxy.requests if r[1].endswith("zarr.json")]
                before = cluster.tasks()
                proxy.requests.clear()
                same_rows(answer(zarrow, query, tables, tmp / "cluster.parquet", env, cluster.url,
                                 "--partitions", "8"), want)
                after = cluster.tasks()
                ran = [sum((a - b).values()) for a, b in zip(after, before)]
                assert all(n > 0 for n in ran), f"tasks per executor: {ran}"
                meta = [r for r in proxy.requests if r[1].endswith("zarr.json")]
                assert len(meta) == len(local_meta), f"metadata requests: {len(meta)}, locally {len(local_meta)}"
                chunks = Counter(r[1] for r in proxy.requests if "/c/" in r[1] and r[0] == "GET")
                assert len(chunks) == 2 * (EVENTS_ROWS // EVENTS_CHUNK), f"{len(chunks)} chunks fetched"
                twice = {k: n for k, n in chunks.items() if n > 1}
                assert not twice, f"fetched more than once: {sorted(twice)[:5]}"
                return f"tasks per executor {ran}; {len(chunks)} chunks, each fetched once; {len(meta)} metadata requests"
            case("tasks spread over both executors, disjoint reads", spread)

            def relative_paths():
                # The client's relative paths (a Zarr table, a Parquet table, a
                # COPY target) are its working directory's, not the executors'.
                query = ("COPY (SELECT e.cell_type, count(*) AS n FROM events e JOIN weights w "
                         "ON e.cell_type = w.cell_type GROUP BY e.cell_type) TO 'counts.zarr' STORED AS ZARR")
                shutil.copy(weights_path, tmp / "w.parquet")
                done = subprocess.run([zarrow, "sql", query, "--table", "events=web/events.zarr",
                                       "--table", "weights=w.parquet", "--cluster", cluster.url,
                                       "--partitions", "4"], capture_output=True, text=True, timeout=300,
                                      env=env, cwd=tmp)
                if done.returncode != 0:
                    raise AssertionError(f"failed: {done.stderr.strip()[-800:]}")
                got = zarr_table(tmp / "counts.zarr", ["cell_type", "n"])
                joined = events.join(weights, "cell_type", join_type="inner")
                want = grouped(joined, "cell_type", [([], "count_all")]).rename_columns(["cell_type", "n"])
                same_rows(got, want.select(["cell_type", "n"]))
                return f"{got.num_rows} rows written to the client's counts.zarr"
            case("relative paths are the client's", relative_paths)

            def copy_to_s3():
                # COPY run on the cluster to S3, its OPTIONS kept (they travel in
                # the format), then an append: read back by zarr-python.
                target = f"s3://{BUCKET}/copied.zarr"
                # Ordered (by id descending): the sink's input is sorted, and the
                # sort's requirement stays on the scheduler.
                query = ("COPY (SELECT cell_type, value, id FROM events WHERE id % 7 = 0 ORDER BY id DESC) "
                         "TO '{t}' STORED AS ZARR OPTIONS ({o})")
                tables = {"events": f"s3://{BUCKET}/events.zarr"}
                for options in ("zarr_format 2, chunk_len 5000", "append true"):
                    done = sql(zarrow, query.format(t=target, o=options), tables, tmp / "copy.parquet", env,
                               cluster.url, "--partitions", "6")
                    if done.returncode != 0:
                        raise AssertionError(f"COPY ({options}) failed: {done.stderr.strip()[-800:]}")
                local = tmp / "copied.zarr"
                pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="copied.zarr/")
                for key in [o["Key"] for page in pages for o in page.get("Contents", [])]:
                    dest = tmp / key
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
                group = zarr.open_group(str(local), mode="r")
                assert group.metadata.zarr_format == 2, group.metadata.zarr_format
                assert group["id"].chunks == (5000,), group["id"].chunks
                got = zarr_table(local, ["cell_type", "value", "id"])
                once = events.filter(pc.equal(pc.subtract(events["id"], pc.multiply(pc.divide(events["id"], 7), 7)), 0))
                once = once.sort_by([("id", "descending")])
                want = pa.concat_tables([once, once])
                assert got.column("id").to_pylist() == want.column("id").to_pylist(), "not in the query's order"
                same_rows(got, want)
                return f"{got.num_rows} rows (twice {once.num_rows}), zarr_format 2, chunks of 5000"
            case("COPY ... STORED AS ZARR on the cluster (OPTIONS, then an append) to S3", copy_to_s3)

            def insert_then_select():
                # INSERT INTO a local Zarr table on the cluster (an executor
                # writes), then a SELECT in the same run sees the rows.
                table = tmp / "inserted.zarr"
                first = ("COPY (SELECT cell_type, id FROM events WHERE id < 1000) TO '{t}' STORED AS ZARR; "
                         "INSERT INTO t SELECT cell_type, id FROM events WHERE id >= 599000; "
                         "SELECT count(*) AS n, sum(id) AS s FROM t")
                args = [zarrow, "sql", first.format(t=table), "--output", str(tmp / "ins.parquet"), "--overwrite",
                        "--table", f"events={tmp / 'web' / 'events.zarr'}", "--cluster", cluster.url,
                        "--partitions", "4"]
                # `t` is registered after the COPY made it: a second run.
                done = subprocess.run(args[:2] + [first.split("; ")[0].format(t=table)] + args[3:],
                                      capture_output=True, text=True, timeout=300, env=env)
                if done.returncode != 0:
                    raise AssertionError(f"COPY failed: {done.stderr.strip()[-800:]}")
                rest = "; ".join(first.split("; ")[1:])
                done = subprocess.run(args[:2] + [rest] + args[3:] + ["--table", f"t={table}"],
                                      capture_output=True, text=True, timeout=300, env=env)
                if done.returncode != 0:
                    raise AssertionError(f"INSERT failed: {done.stderr.strip()[-800:]}")
                got = pq.read_table(tmp / "ins.parquet").to_pylist()
                ids = list(range(1000)) + list(range(599_000, EVENTS_ROWS))
                assert got == [{"n": len(ids), "s": sum(ids)}], got
                back = zarr_table(table, ["id"]).column("id").to_pylist()
                assert sorted(back) == ids, "zarr-python reads other rows"
                return f"{len(ids)} rows after the INSERT, seen by the next statement and by zarr-python"
            case("INSERT INTO a Zarr table on the cluster, then SELECT", insert_then_select)

            def insert_into_s3():
                # The same on S3: the executor appends through the store it opens
                # from the location and its own environment.
                target = f"s3://{BUCKET}/inserted.zarr"
                tables = {"events": f"s3://{BUCKET}/events.zarr"}
                done = sql(zarrow, f"COPY (SELECT cell_type, id FROM events WHERE id < 500) TO '{target}' "
                           "STORED AS ZARR", tables, tmp / "c.parquet", env, cluster.url, "--partitions", "3")
                if done.returncode != 0:
                    raise AssertionError(f"COPY failed: {done.stderr.strip()[-800:]}")
                got = answer(zarrow, "INSERT INTO t SELECT cell_type, id FROM events WHERE id >= 599500; "
                             "SELECT count(*) AS n, sum(id) AS s FROM t", {**tables, "t": target},
                             tmp / "i.parquet", env, cluster.url, "--partitions", "3").to_pylist()
                ids = list(range(500)) + list(range(599_500, EVENTS_ROWS))
                assert got == [{"n": len(ids), "s": sum(ids)}], got
                return f"{len(ids)} rows"
            case("INSERT INTO a Zarr table on S3 on the cluster, then SELECT", insert_into_s3)

            def icechunk_writes():
                # COPY and INSERT into an Icechunk repository on the cluster:
                # the sink is one task, so each statement is one commit (the
                # repository's snapshot objects: the first, then one each).
                target = f"icechunk+s3://{BUCKET}/ic-writes?path=t"
                tables = {"events": f"s3://{BUCKET}/events.zarr"}
                done = sql(zarrow, f"COPY (SELECT cell_type, id FROM events WHERE id < 700) TO '{target}' "
                           "STORED AS ZARR OPTIONS (message 'from the cluster')", tables, tmp / "c.parquet",
                           env, cluster.url, "--partitions", "3")
                if done.returncode != 0:
                    raise AssertionError(f"COPY failed: {done.stderr.strip()[-800:]}")
                got = answer(zarrow, "INSERT INTO t SELECT cell_type, id FROM events WHERE id >= 599300; "
                             "SELECT count(*) AS n, sum(id) AS s FROM t", {**tables, "t": target},
                             tmp / "i.parquet", env, cluster.url, "--partitions", "3").to_pylist()
                ids = list(range(700)) + list(range(599_300, EVENTS_ROWS))
                assert got == [{"n": len(ids), "s": sum(ids)}], got
                snapshots = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
                    Bucket=BUCKET, Prefix="ic-writes/snapshots/") for o in page.get("Contents", [])]
                assert len(snapshots) == 3, f"{len(snapshots)} snapshots: {snapshots}"
                return f"{len(ids)} rows; {len(snapshots)} snapshots (the repository's first, COPY, INSERT)"
            case("COPY and INSERT into an Icechunk repository on the cluster: one commit each", icechunk_writes)

            def killed():
                # 24 tasks over S3; executor-2 is killed once it runs one of them.
                query = "SELECT cell_type, count(*) AS n, sum(id) AS s FROM events GROUP BY cell_type"
                want = grouped(events, "cell_type", [([], "count_all"), ("id", "sum")])
                want = want.rename_columns(["cell_type", "n", "s"]).select(["cell_type", "n", "s"])
                out = tmp / "killed.parquet"
                before = cluster.tasks()[1]
                args = [zarrow, "sql", query, "--output", str(out), "--overwrite", "--partitions", "24",
                        "--table", f"events=s3://{BUCKET}/events.zarr", "--cluster", cluster.url]
                client = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                victim = cluster.executors[1][0]
                deadline = time.monotonic() + 120
                while cluster.tasks()[1] == before:
                    if client.poll() is not None or time.monotonic() > deadline:
                        client.kill()
                        client.wait()
                        raise AssertionError("executor-2 ran no task of the query before it ended")
                    time.sleep(0.02)
                os.killpg(victim.pid, signal.SIGKILL)
                # The kill landed while the query ran.
                assert client.poll() is None, "the query had ended before the kill"
                try:
                    stdout, stderr = client.communicate(timeout=180)
                except subprocess.TimeoutExpired:
                    client.kill()
                    raise AssertionError("the query hung after an executor died") from None
                assert "panicked" not in stderr, stderr[-800:]
                if client.returncode == 0:
                    same_rows(pq.read_table(out), want)
                    return "the right rows (the lost tasks ran again)"
                assert "zarrow: error:" in stderr, stderr[-800:]
                assert not out.exists(), "a failed query left its output"
                return f"a clean error: {stderr.strip().splitlines()[-1][:200]}"
            case("an executor killed mid-query", killed)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
