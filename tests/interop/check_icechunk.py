#!/usr/bin/env python3
"""zarrow against Icechunk: repositories written by icechunk-python 2.3.0 (with
zarr-python 3.1.6 and anndata 0.12.19) read by zarrow, and zarrow's commits read by
icechunk-python. Runs in a Python >= 3.12 venv holding icechunk and the zarrow package
(CI's .venv-icechunk); the S3 cases start moto (5.2.5, in server mode) on a free
127.0.0.1 port with the interpreter given by --moto-python (the main venv's).

Usage: check_icechunk.py ZARROW_BIN --moto-python PY [-k SUBSTRING]

* a repository icechunk-python wrote (an anndata dataframe, a plain group) read by
  the zarrow binary and package at a branch, a tag, a snapshot and another branch:
  the values anndata and zarr-python read at that version;
* zarrow's writes (convert, --append with --message, COPY, INSERT, zarrow.write) are
  one commit each, read back by icechunk-python: values, messages, no extra member;
* a tag and a snapshot are read-only, a Zarr v2 output is refused; nothing changes;
* kill -9 before the commit and between chunks leaves the branch where it was;
* a virtual-chunk repository reads only with its container authorized;
* on S3 (moto): a repository icechunk-python wrote read by zarrow, zarrow's
  appends read by icechunk-python, unsigned requests with --anonymous, and two
  appenders racing for several rounds each: every round that returned success is
  present exactly once, and no other row.

Prints one line per case, then "N passed, M failed"; exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import anndata as ad
import icechunk
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from remote_servers import FaultProxy, free_port, server_process  # noqa: E402

warnings.filterwarnings("ignore")
# icechunk-python's own warnings (its local storage is not for concurrent commits...).
icechunk.set_logs_filter("error")

BUCKET = "zarrow-icechunk"


def run(zarrow: str, *args: str, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([zarrow, *args], capture_output=True, text=True, timeout=300,
                          env=env if env is not None else os.environ)
    if ok and proc.returncode != 0:
        raise AssertionError(f"zarrow {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc


def plain(table: pa.Table) -> dict:
    """A table's columns as Python lists, dictionaries decoded."""
    out = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        out[name] = col.to_pylist()
    return out


def metric(plan: str, name: str) -> float:
    """A scan metric of an EXPLAIN ANALYZE plan (`bytes_fetched=11.20 K`), as a number."""
    text = plan.split(f"{name}=")[1].split(",")[0].strip()
    number, _, unit = text.partition(" ")
    return float(number) * {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9}.get(unit[:1], 1)


def frame_lists(df: pd.DataFrame) -> dict:
    out = {}
    for name in df.columns:
        values = df[name]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        out[name] = [None if (isinstance(v, float) and np.isnan(v)) or v is pd.NA else
                     (v.item() if hasattr(v, "item") else v) for v in values]
    return out


def local_repo(path: Path) -> icechunk.Repository:
    return icechunk.Repository.open_or_create(icechunk.local_filesystem_storage(str(path)))


def ancestry(repo: icechunk.Repository, branch: str = "main") -> list:
    return list(repo.ancestry(branch=branch))


def obs_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "cell_type": pd.Categorical(rng.choice(["B", "T", "NK", "mono"], n)),
        "n_genes": rng.integers(0, 5000, n).astype("int64"),
        "score": rng.random(n),
        "barcode": [f"AAC{seed}-{i}" for i in range(n)],
    }, index=[f"cell{i}" for i in range(n)])


def python_repo_cases(zarrow: str, case, tmp: Path) -> None:
    """A repository icechunk-python wrote, read by zarrow at each version."""
    root = tmp / "py_repo"
    repo = local_repo(root)
    s = repo.writable_session("main")
    g = zarr.group(store=s.store)
    first = obs_frame(3000, 1)
    ad.io.write_elem(g, "obs", first)
    plain_g = g.create_group("plain")
    words = np.array([f"w{i % 97}" * (i % 5) for i in range(2500)])
    plain_g.create_array("word", shape=words.shape, chunks=(400,), dtype=str)[:] = words
    ints = np.arange(2500, dtype="int32") * 3
    plain_g.create_array("x", shape=ints.shape, chunks=(300,), shards=(900,), dtype="int32")[:] = ints
    snap1 = s.commit("python: first")
    repo.create_tag("v1", snap1)
    s = repo.writable_session("main")
    second = obs_frame(2000, 2)
    ad.io.write_elem(zarr.open_group(store=s.store), "obs", second)
    s.commit("python: second")
    repo.create_branch("dev", snap1)
    s = repo.writable_session("dev")
    zarr.open_array(store=s.store, path="plain/x")[:10] = -7
    s.commit("python: dev")

    def expect_obs(version: dict) -> dict:
        sess = repo.readonly_session(**version)
        df = ad.io.read_elem(zarr.open_group(store=sess.store, mode="r")["obs"])
        return frame_lists(df)

    def expect_plain(version: dict) -> dict:
        sess = repo.readonly_session(**version)
        g = zarr.open_group(store=sess.store, mode="r")["plain"]
        return {"word": g["word"][:].tolist(), "x": g["x"][:].tolist()}

    url = f"icechunk+file://{root}"
    versions = [("branch main", "", {"branch": "main"}), ("tag v1", "tag=v1&", {"tag": "v1"}),
                ("snapshot", f"snapshot={snap1}&", {"snapshot_id": snap1}),
                ("branch dev", "branch=dev&", {"branch": "dev"})]
    for label, query, version in versions:
        def read_obs(query=query, version=version):
            out = tmp / "obs.parquet"
            run(zarrow, "convert", f"{url}?{query}path=obs", str(out), "--overwrite")
            got = plain(pq.read_table(out))
            want = expect_obs(version)
            got.pop("_index", None)
            for name, values in want.items():
                if got.get(name) != values:
                    raise AssertionError(f"{name}: {got.get(name, 'missing')[:5]} != {values[:5]}")
            return f"{len(want['n_genes'])} rows, as anndata reads them"
        case(f"python repo, obs at {label}", read_obs)

        def read_plain(query=query, version=version):
            out = tmp / "plain.parquet"
            run(zarrow, "convert", f"{url}?{query}path=plain", str(out), "--overwrite")
            got = plain(pq.read_table(out))
            want = expect_plain(version)
            if got != want:
                raise AssertionError(f"{ {k: v[:5] for k, v in got.items()} } != { {k: v[:5] for k, v in want.items()} }")
            return "strings and a sharded array, as zarr-python reads them"
        case(f"python repo, plain group at {label}", read_plain)

    def python_package():
        import zarrow
        t = pa.table(zarrow.read(f"{url}?tag=v1&path=plain"))
        if plain(t) != expect_plain({"tag": "v1"}):
            raise AssertionError("zarrow.read at tag v1 differs")
        got = pa.table(zarrow.sql("SELECT count(*) AS n, sum(x) AS s FROM p WHERE x > 30",
                                  tables={"p": f"{url}?branch=dev&path=plain"}))
        xs = [v for v in expect_plain({"branch": "dev"})["x"] if v > 30]
        if got.to_pylist() != [{"n": len(xs), "s": sum(xs)}]:
            raise AssertionError(f"{got.to_pylist()} != {len(xs)}, {sum(xs)}")
        return "read at a tag, sql at a branch"
    case("python repo, zarrow package read and sql", python_package)

    def session_objects():
        # icechunk-python's read-only Session and IcechunkStore, handed over
        # as they are (their repository's root is read): zarrow reads what
        # they read; a writable session is refused (a write commits, which
        # needs the icechunk+ location).
        import zarrow
        flat = local_repo(tmp / "flat_repo")
        s = flat.writable_session("main")
        g = zarr.group(store=s.store)
        g.create_array("word", shape=words.shape, chunks=(400,), dtype=str)[:] = words
        g.create_array("x", shape=ints.shape, chunks=(300,), dtype="int32")[:] = ints
        first_snap = s.commit("flat")
        s = flat.writable_session("main")
        zarr.open_array(store=s.store, path="x")[:5] = 0
        s.commit("flat, changed")
        want = {"word": words.tolist(), "x": ints.tolist()}
        session = flat.readonly_session(snapshot_id=first_snap)
        for obj in (session, session.store):
            got = plain(pa.table(zarrow.read(obj)))
            if got != want:
                raise AssertionError(f"{type(obj).__name__}: {str(got)[:200]}")
        n = pa.table(zarrow.sql("SELECT count(*) AS n FROM p WHERE x < 10", tables={"p": session}))
        if n.to_pylist() != [{"n": sum(1 for v in ints if v < 10)}]:
            raise AssertionError(n.to_pylist())
        try:
            zarrow.read(flat.writable_session("main"))
            raise AssertionError("a writable session was read")
        except Exception as e:  # noqa: BLE001
            if "writable Icechunk session" not in str(e):
                raise
        try:
            zarrow.write(pa.table({"x": [1]}), session)
            raise AssertionError("a write through a read-only session")
        except Exception as e:  # noqa: BLE001
            if "read-only" not in str(e):
                raise
        return "Session and IcechunkStore read at their snapshot; writable and writes refused"
    case("python repo, icechunk-python Session objects", session_objects)

    def info():
        proc = run(zarrow, "info", f"{url}?path=obs")
        if "x 2000 rows" not in proc.stdout:
            raise AssertionError(proc.stdout[-400:])
        return "2000 rows at main"
    case("python repo, info", info)

    def stats_commit():
        # `zarrow stats` on a branch: one commit holding the statistics, which
        # then prune; the values are unchanged.
        before = [a.id for a in ancestry(repo)]
        run(zarrow, "stats", f"{url}?path=plain")
        after = ancestry(repo)
        if [a.id for a in after[1:]] != before or not after[0].message.startswith("zarrow stats"):
            raise AssertionError([a.message for a in after[:2]])
        proc = run(zarrow, "sql", "EXPLAIN ANALYZE SELECT count(*) FROM p WHERE x = 30",
                   "--table", f"p={url}?path=plain")
        pruned = metric(proc.stdout, "rows_pruned_by_statistics")
        if pruned == 0:
            raise AssertionError(proc.stdout[-500:])
        if expect_plain({"branch": "main"}) != expect_plain({"snapshot_id": before[0]}):
            raise AssertionError("the values changed")
        return f"one commit ({after[0].message!r}); {pruned:,.0f} rows pruned after"
    case("python repo, zarrow stats commits statistics", stats_commit)

    def bad_versions():
        notes = []
        for query, needle in [("tag=nope", "nope"), ("branch=a&tag=b", "at most one"),
                              ("snapshot=XYZ", "not a snapshot id"), ("ref=x", "unknown key")]:
            proc = run(zarrow, "info", f"{url}?{query}", ok=False)
            if proc.returncode == 0 or needle not in proc.stderr:
                raise AssertionError(f"{query}: exit {proc.returncode}: {proc.stderr.strip()}")
            notes.append(query)
        return ", ".join(notes) + " refused"
    case("python repo, bad versions are errors", bad_versions)


def zarrow_commit_cases(zarrow: str, case, tmp: Path) -> None:
    """zarrow's writes, each one commit, read back by icechunk-python."""
    root = tmp / "zarrow_repo"
    url = f"icechunk+file://{root}"
    n = 5000
    table = pa.table({
        "name": pa.array([f"cell {i}" if i % 7 else "" for i in range(n)]),
        "n": pa.array(np.arange(n, dtype=np.int64)),
        "x": pa.array(np.linspace(0, 1, n)),
    })
    src = tmp / "table.parquet"
    pq.write_table(table, src)

    def group_lists(path: str, **version) -> dict:
        sess = local_repo(root).readonly_session(**(version or {"branch": "main"}))
        g = zarr.open_group(store=sess.store, mode="r")[path]
        return {k: g[k][:].tolist() for k in sorted(g.array_keys())}, sorted(g.keys())

    def convert_and_append():
        run(zarrow, "convert", str(src), f"{url}?path=t", "--chunk-len", "500")
        run(zarrow, "convert", str(src), f"{url}?path=t", "--append", "--message", "second batch")
        got, members = group_lists("t")
        want = {k: v + v for k, v in plain(table).items()}
        if got != {k: want[k] for k in got} or members != ["n", "name", "x"]:
            raise AssertionError(f"members {members}; rows {len(got.get('n', []))}")
        messages = [a.message for a in ancestry(local_repo(root))]
        if messages[:2] != ["second batch", f"zarrow write: {n} rows to t"]:
            raise AssertionError(messages)
        return f"{2 * n} rows, messages {messages[:2]}, members {members}"
    case("zarrow commits: convert, then --append --message", convert_and_append)

    def exists_needs_overwrite():
        before = [a.id for a in ancestry(local_repo(root))]
        proc = run(zarrow, "convert", str(src), f"{url}?path=t", ok=False)
        if proc.returncode == 0 or "exists" not in proc.stderr:
            raise AssertionError(proc.stderr)
        run(zarrow, "convert", str(src), f"{url}?path=t", "--overwrite", "--chunk-len", "500")
        got, _ = group_lists("t")
        if got != {k: v for k, v in plain(table).items()}:
            raise AssertionError("overwrite did not replace the rows")
        after = [a.id for a in ancestry(local_repo(root))]
        if after[1:] != before:
            raise AssertionError("the overwrite is not one commit on the old tip")
        return "refused, then replaced in one commit"
    case("zarrow commits: an existing node needs --overwrite", exists_needs_overwrite)

    def sql_copy_insert():
        run(zarrow, "sql", f"COPY (SELECT * FROM src WHERE n < 100) TO '{url}?path=copied' STORED AS ZARR",
            "--table", f"src={src}")
        run(zarrow, "sql", f"CREATE EXTERNAL TABLE c STORED AS ZARR LOCATION '{url}?path=copied'; "
            "INSERT INTO c SELECT * FROM c WHERE n < 10")
        got, _ = group_lists("copied")
        want_n = list(range(100)) + list(range(10))
        if got["n"] != want_n:
            raise AssertionError(got["n"][:20])
        run(zarrow, "sql", f"CREATE EXTERNAL TABLE c STORED AS ZARR LOCATION '{url}?path=copied'; "
            "INSERT OVERWRITE c SELECT * FROM c WHERE n < 5")
        got, _ = group_lists("copied")
        if got["n"] != [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]:
            raise AssertionError(f"INSERT OVERWRITE: {got['n']}")
        messages = [a.message for a in ancestry(local_repo(root))][:3]
        return f"COPY, INSERT, INSERT OVERWRITE; {messages}"
    case("zarrow commits: COPY TO and INSERT INTO", sql_copy_insert)

    def anndata_layout():
        df = obs_frame(1500, 3)
        df.index.name = "obs_names"
        frame = tmp / "obs.parquet"
        pq.write_table(pa.Table.from_pandas(df), frame)
        run(zarrow, "convert", str(frame), f"{url}?path=ad/obs", "--layout", "anndata")
        run(zarrow, "convert", str(frame), f"{url}?path=ad/obs", "--append")
        sess = local_repo(root).readonly_session(branch="main")
        got = ad.io.read_elem(zarr.open_group(store=sess.store, mode="r")["ad/obs"])
        want = pd.concat([df, df])
        if frame_lists(got) != frame_lists(want) or list(got.index) != list(want.index):
            raise AssertionError(f"{got.head()} != {want.head()}")
        return f"{len(got)} rows, as anndata reads them"
    case("zarrow commits: an anndata dataframe, appended", anndata_layout)

    def python_write():
        import zarrow
        zarrow.write(table, f"{url}?path=pw", message="from python")
        zarrow.write(table.slice(0, 10), f"{url}?path=pw", mode="append")
        got, _ = group_lists("pw")
        if got["n"] != list(range(n)) + list(range(10)):
            raise AssertionError(len(got["n"]))
        messages = [a.message for a in ancestry(local_repo(root))][:2]
        if messages[1] != "from python":
            raise AssertionError(messages)
        return f"write(message=) and mode='append': {messages}"
    case("zarrow commits: zarrow.write", python_write)

    def statistics_prune():
        # Chunk statistics live in the commit's properties: a filter that
        # matches one chunk skips the rest (EXPLAIN ANALYZE's metrics).
        proc = run(zarrow, "sql", "EXPLAIN ANALYZE SELECT count(*) FROM t WHERE n = 12",
                   "--table", f"t={url}?path=t")
        text = proc.stdout
        if "rows_pruned_by_statistics=" not in text:
            raise AssertionError(text[-800:])
        pruned = metric(text, "rows_pruned_by_statistics")
        if pruned == 0:
            raise AssertionError(f"nothing pruned: {text[-600:]}")
        props = ancestry(local_repo(root))[0].metadata
        return f"{pruned:,.0f} rows pruned; commit properties hold {sorted(props.get('zarrow', {}).get('stats', {}))[:2]}..."
    case("zarrow commits: statistics in the commit prune", statistics_prune)

    def partial_reads():
        # A sharded array in a repository: the first rows read the shard's
        # index and one inner chunk (ranged reads through get_partial_values),
        # not the shard.
        big = pa.table({"n": pa.array(np.arange(400_000, dtype=np.int64))})
        path = tmp / "big.parquet"
        pq.write_table(big, path)
        run(zarrow, "convert", str(path), f"{url}?path=sharded", "--shard-len", "200000", "--chunk-len", "1000",
            "--compressor", "none")
        proc = run(zarrow, "sql", "EXPLAIN ANALYZE SELECT n FROM t LIMIT 10", "--table", f"t={url}?path=sharded")
        fetched = metric(proc.stdout, "bytes_fetched")
        shard = 200_000 * 8
        if fetched > shard / 20:
            raise AssertionError(f"{fetched} fetched of a {shard}-byte shard")
        return f"{fetched:,.0f} bytes fetched of a {shard:,}-byte shard"
    case("zarrow commits: a sharded array reads its index and one inner chunk", partial_reads)

    def read_only_versions():
        repo = local_repo(root)
        repo.create_tag("fixed", ancestry(repo)[0].id)
        before = [a.id for a in ancestry(local_repo(root))]
        snap = before[0]
        for query in ["tag=fixed", f"snapshot={snap}"]:
            proc = run(zarrow, "convert", str(src), f"{url}?{query}&path=t", "--append", ok=False)
            if proc.returncode == 0 or "read-only" not in proc.stderr:
                raise AssertionError(f"{query}: {proc.stderr}")
        proc = run(zarrow, "convert", str(src), f"{url}?path=v2", "--zarr-format", "2", ok=False)
        if proc.returncode == 0 or "Zarr v3 only" not in proc.stderr:
            raise AssertionError(proc.stderr)
        after = [a.id for a in ancestry(local_repo(root))]
        if after != before:
            raise AssertionError("a refused write changed the branch")
        return "tag, snapshot and --zarr-format 2 refused; branch unchanged"
    case("zarrow commits: tags and snapshots are read-only", read_only_versions)

    def killed():
        notes = []
        for point in ["icechunk-commit:1", "icechunk-chunk:2"]:
            before = [a.id for a in ancestry(local_repo(root))]
            rows_before, _ = group_lists("t")
            env = {**os.environ, "ZARROW_KILL_AT": point}
            proc = run(zarrow, "convert", str(src), f"{url}?path=t", "--append", env=env, ok=False)
            if proc.returncode != -9:
                raise AssertionError(f"{point}: exit {proc.returncode}: {proc.stderr.strip()}")
            after = [a.id for a in ancestry(local_repo(root))]
            rows_after, _ = group_lists("t")
            if after != before or rows_after != rows_before:
                raise AssertionError(f"{point}: the branch moved")
            notes.append(point)
        run(zarrow, "convert", str(src), f"{url}?path=t", "--append")
        got, _ = group_lists("t")
        if got["n"] != rows_before["n"] + list(range(n)):
            raise AssertionError("the append after the kills")
        return f"killed at {', '.join(notes)}: branch unchanged; the next append whole"
    case("zarrow commits: kill -9 leaves the old snapshot", killed)

    def killed_anywhere():
        # kill -9 at random moments of an append of 200,000 rows, the commit
        # included: the branch is at the old snapshot or the new one, whole.
        import random
        rnd = random.Random(41)
        m = 200_000
        rows = tmp / "rows.parquet"
        pq.write_table(pa.table({"n": pa.array(np.arange(m, dtype=np.int64))}), rows)
        run(zarrow, "convert", str(rows), f"{url}?path=k", "--chunk-len", "10000")
        outcomes = {"old": 0, "new": 0}
        start = time.monotonic()
        run(zarrow, "convert", str(rows), f"{url}?path=k", "--append")
        took = time.monotonic() - start
        for _ in range(10):
            before = [a.id for a in ancestry(local_repo(root))]
            have, _ = group_lists("k")
            proc = subprocess.Popen([zarrow, "convert", str(rows), f"{url}?path=k", "--append"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rnd.uniform(0, took * 1.2))
            proc.kill()
            proc.wait()
            after = [a.id for a in ancestry(local_repo(root))]
            now, _ = group_lists("k")
            if after == before and now == have:
                outcomes["old"] += 1
            elif after[1:] == before and now["n"] == have["n"] + list(range(m)):
                outcomes["new"] += 1
            else:
                raise AssertionError(f"{len(now['n'])} rows after a kill (had {len(have['n'])})")
        return f"an append takes {took * 1000:.0f} ms; 10 kills: {outcomes}"
    case("zarrow commits: kill -9 at random moments leaves a whole snapshot", killed_anywhere)


def virtual_cases(zarrow: str, case, tmp: Path) -> None:
    """A repository whose chunks are references into a local file."""
    data = tmp / "virt"
    data.mkdir()
    raw = np.arange(1000, dtype="<i4")
    (data / "chunks.bin").write_bytes(raw.tobytes())
    root = tmp / "virtual_repo"
    prefix = f"file://{data}/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(data))))
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(root)), config=config,
                                      authorize_virtual_chunk_access={prefix: None})
    s = repo.writable_session("main")
    g = zarr.group(store=s.store)
    a = g.create_array("v", shape=(1000,), chunks=(250,), dtype="int32", compressors=None, fill_value=0)
    for i in range(4):
        s.store.set_virtual_ref(f"v/c/{i}", f"{prefix}chunks.bin", offset=i * 1000, length=1000)
    s.commit("virtual")
    url = f"icechunk+file://{root}"

    def unauthorized():
        proc = run(zarrow, "convert", url, str(tmp / "v.parquet"), "--overwrite", ok=False)
        if proc.returncode == 0 or prefix not in proc.stderr:
            raise AssertionError(f"exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stderr.strip().splitlines()[0][:140]
    case("virtual chunks: unauthorized, the error names the container", unauthorized)

    def authorized():
        run(zarrow, "convert", url, str(tmp / "v.parquet"), "--overwrite", "--virtual-chunks", prefix)
        got = plain(pq.read_table(tmp / "v.parquet"))
        if got != {"v": raw.tolist()}:
            raise AssertionError(str(got)[:200])
        return "1000 values from the referenced file"
    case("virtual chunks: read with --virtual-chunks", authorized)


def s3_cases(zarrow: str, case, tmp: Path, moto_python: str) -> None:
    port = free_port()
    with server_process([moto_python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port) as endpoint:
        # The bucket, by boto3 in the interpreter that runs moto (this venv has none).
        subprocess.run([moto_python, "-c", "import boto3, sys; boto3.client('s3', endpoint_url=sys.argv[1], "
                        "aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1')"
                        ".create_bucket(Bucket=sys.argv[2])", endpoint, BUCKET], check=True, timeout=120)
        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test",
               "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}

        def storage(prefix: str, endpoint: str = endpoint):
            return icechunk.s3_storage(bucket=BUCKET, prefix=prefix, endpoint_url=endpoint, allow_http=True,
                                       force_path_style=True, region="us-east-1",
                                       access_key_id="test", secret_access_key="test")

        repo = icechunk.Repository.create(storage("py"))
        s = repo.writable_session("main")
        df = obs_frame(4000, 4)
        ad.io.write_elem(zarr.group(store=s.store), "obs", df)
        s.commit("python on s3")

        def read_python_repo():
            out = tmp / "s3obs.parquet"
            run(zarrow, "convert", f"icechunk+s3://{BUCKET}/py?path=obs", str(out), "--overwrite", env=env)
            got = plain(pq.read_table(out))
            got.pop("_index", None)
            if got != frame_lists(df):
                raise AssertionError("values differ")
            return f"{len(df)} rows over S3, as anndata reads them"
        case("s3: a repository icechunk-python wrote", read_python_repo)

        def anonymous():
            # A public bucket (moto's ACLs, set with boto3): with --anonymous
            # and no credentials, zarrow signs nothing (a recording proxy sees
            # every request).
            subprocess.run([moto_python, "-c", "import boto3, sys; s3 = boto3.client('s3', endpoint_url=sys.argv[1], "
                            "aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1'); "
                            "s3.put_bucket_acl(Bucket=sys.argv[2], ACL='public-read'); "
                            "[s3.put_object_acl(Bucket=sys.argv[2], Key=o['Key'], ACL='public-read') "
                            "for p in s3.get_paginator('list_objects_v2').paginate(Bucket=sys.argv[2], Prefix='py/') "
                            "for o in p.get('Contents', [])]", endpoint, BUCKET], check=True, timeout=120)
            proxy = FaultProxy(endpoint)
            with proxy.serve() as front:
                bare = {k: v for k, v in env.items() if not k.startswith("AWS_")}
                bare["AWS_ENDPOINT_URL"] = front
                out = tmp / "anon.parquet"
                run(zarrow, "convert", f"icechunk+s3://{BUCKET}/py?path=obs", str(out), "--overwrite",
                    "--anonymous", env=bare)
            if not proxy.requests or any(proxy.signed):
                raise AssertionError(f"{len(proxy.requests)} requests, {sum(proxy.signed)} signed")
            return f"{len(proxy.requests)} requests, none signed, over plain HTTP"
        case("s3: --anonymous, plain HTTP endpoint", anonymous)

        def appends_read_by_python():
            t = pa.table({"k": pa.array(np.arange(1000, dtype=np.int64)),
                          "s": pa.array([f"v{i}" for i in range(1000)])})
            src = tmp / "k.parquet"
            pq.write_table(t, src)
            url = f"icechunk+s3://{BUCKET}/zr?path=t"
            run(zarrow, "convert", str(src), url, env=env)
            run(zarrow, "convert", str(src), url, "--append", env=env)
            sess = icechunk.Repository.open(storage("zr")).readonly_session(branch="main")
            g = zarr.open_group(store=sess.store, mode="r")["t"]
            if g["k"][:].tolist() != list(range(1000)) * 2:
                raise AssertionError("rows differ")
            return "2000 rows, as icechunk-python reads them"
        case("s3: zarrow's commits read by icechunk-python", appends_read_by_python)

        def racing_appenders():
            rows, rounds = 300, 10
            url = f"icechunk+s3://{BUCKET}/race?path=t"
            seed = pa.table({"marker": pa.array([-1], pa.int64()), "i": pa.array([0], pa.int64())})
            pq.write_table(seed, tmp / "seed.parquet")
            run(zarrow, "convert", str(tmp / "seed.parquet"), url, env=env)
            done: dict = {}
            errors: list = []

            def writer(w: int) -> None:
                for r in range(rounds):
                    marker = w * 100 + r
                    part = tmp / f"race_{marker}.parquet"
                    pq.write_table(pa.table({"marker": pa.array([marker] * rows, pa.int64()),
                                             "i": pa.array(np.arange(rows, dtype=np.int64))}), part)
                    # A pause before each commit (the failpoints build) makes the
                    # two writers' commits overlap.
                    racing = {**env, "ZARROW_PAUSE_AT": "icechunk-commit:400"}
                    proc = run(zarrow, "convert", str(part), url, "--append", env=racing, ok=False)
                    done[marker] = proc.returncode == 0
                    if proc.returncode != 0:
                        errors.append(proc.stderr.strip()[:200])

            threads = [threading.Thread(target=writer, args=(w,)) for w in (1, 2)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            sess = icechunk.Repository.open(storage("race")).readonly_session(branch="main")
            g = zarr.open_group(store=sess.store, mode="r")["t"]
            markers, idx = g["marker"][:], g["i"][:]
            counts = pd.Series(markers).value_counts().to_dict()
            for marker, ok in done.items():
                want = rows if ok else 0
                if counts.get(marker, 0) != want:
                    raise AssertionError(f"round {marker}: {counts.get(marker, 0)} rows, success={ok}")
                if ok and sorted(idx[markers == marker].tolist()) != list(range(rows)):
                    raise AssertionError(f"round {marker}: rows differ")
            extra = set(counts) - set(done) - {-1}
            if extra:
                raise AssertionError(f"rows of no round: {extra}")
            # A round may fail only as the bounded retries say: a conflict.
            for e in errors:
                if "kept moving under this write" not in e:
                    raise AssertionError(f"a round failed otherwise than by a conflict: {e}")
            history = ancestry(icechunk.Repository.open(storage("race")))
            redone = sum(1 for a in history if a.metadata.get("zarrow", {}).get("attempt", 1) > 1)
            # The check is of redoing a commit: at least one round must have
            # found the branch moved and committed again (a round that failed
            # with a conflict proves no redo).
            if redone == 0:
                raise AssertionError("no commit was redone after the branch moved "
                                     f"({len(errors)} rounds failed): the redo went untested")
            return (f"{sum(done.values())} of {len(done)} rounds committed, each once; "
                    f"{len(history)} commits, {redone} after a redo; failures: {errors[:1]}")
        case("s3: two appenders racing, rounds present exactly once", racing_appenders)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zarrow", metavar="ZARROW_BIN")
    ap.add_argument("--moto-python", required=True)
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

    def section(name: str, fn) -> None:
        nonlocal failed
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            failed += 1

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        section("python repo", lambda: python_repo_cases(zarrow, case, tmp))
        section("zarrow commits", lambda: zarrow_commit_cases(zarrow, case, tmp))
        section("virtual chunks", lambda: virtual_cases(zarrow, case, tmp))
        section("s3", lambda: s3_cases(zarrow, case, tmp, args.moto_python))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
