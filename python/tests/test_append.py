"""Appending rows to a stored table: zarrow.write(mode="append") and
zarrow.convert(append=True). Expectations: zarr-python reads the grown arrays
(through the consolidated metadata, as it opens a group) as the inputs one after
another, built with pyarrow; the objects on disk are compared byte for byte where
an append must leave the store as it was."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr

import zarrow


def part(start: int, n: int) -> pa.Table:
    rows = range(start, start + n)
    return pa.table({
        "name": pa.array([f"row {i} " + "é" * (i % 4) for i in rows]),
        "blob": pa.array([bytes([i % 251]) * (i % 6) for i in rows], pa.binary()),
        "n": pa.array(list(rows), pa.int64()),
        "x": pa.array([i / 7 for i in rows], pa.float32()),
        "flag": pa.array([i % 3 == 0 for i in rows]),
    })


def zarr_python_reads(path: Path) -> dict[str, list]:
    group = zarr.open_group(str(path), mode="r")
    out = {}
    for name, array in group.arrays():
        values = np.asarray(array[:]).tolist()
        out[name] = [bytes(v) if isinstance(v, (bytes, np.bytes_)) else v for v in values]
    return out


def expected(*parts: pa.Table) -> dict[str, list]:
    whole = pa.concat_tables(parts)
    out = {}
    for name in whole.column_names:
        column = whole.column(name)
        if pa.types.is_floating(column.type):
            out[name] = np.asarray(column, dtype=np.float32).tolist()
        else:
            out[name] = column.to_pylist()
    return out


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("zarr_format,chunk_len,shard_len", [
    (3, 40, None),
    (2, 40, None),
    (3, 16, 48),
])
def test_three_appends_read_by_zarr_python(tmp_path, zarr_format, chunk_len, shard_len):
    """A table written, then two appends through convert and one through write:
    every append starts inside a partly filled chunk (or shard)."""
    path = tmp_path / "t.zarr"
    parts = [part(0, 100), part(100, 7), part(107, 130), part(237, 1)]
    zarrow.write(parts[0], path, zarr_format=zarr_format, chunk_len=chunk_len, shard_len=shard_len)
    for i, p in enumerate(parts[1:3]):
        pq.write_table(p, tmp_path / f"in{i}.parquet")
        assert zarrow.convert(tmp_path / f"in{i}.parquet", path, append=True) == {"rows": p.num_rows}
    assert zarrow.write(parts[3], path, mode="append") == 1

    assert zarr_python_reads(path) == expected(*parts)
    group = zarr.open_group(str(path), mode="r")
    array = group["name"]
    assert array.metadata.zarr_format == zarr_format
    assert array.shape == (238,)
    # One object per chunk (shard) of the grid: none left past the end.
    grid = shard_len or chunk_len
    chunk_dir = path / "name" / "c" if zarr_format == 3 else path / "name"
    # (Beside them: the metadata, and zarrow's chunk statistics.)
    stored = [p for p in chunk_dir.iterdir()
              if p.is_file() and not p.name.startswith(".z") and p.name not in ("zarr.json", "zarrow.stats")]
    assert len(stored) == -(-238 // grid)
    # zarr-python without the consolidated metadata: the arrays' own documents.
    plain = zarr.open_group(str(path), mode="r", use_consolidated=False)
    assert plain["n"].shape == (238,)


def test_append_to_nothing_makes_the_table(tmp_path):
    path = tmp_path / "new.zarr"
    assert zarrow.write(part(0, 10), path, mode="append") == 10
    assert zarrow.write(part(10, 5), path, mode="append") == 5
    assert zarr_python_reads(path) == expected(part(0, 10), part(10, 5))


def test_other_columns_or_types_are_refused_and_nothing_changes(tmp_path):
    path = tmp_path / "t.zarr"
    zarrow.write(part(0, 50), path, chunk_len=32)
    before = files(path)
    with pytest.raises(zarrow.ZarrowError, match=r'missing \["flag"\]'):
        zarrow.write(part(50, 5).drop_columns(["flag"]), path, mode="append")
    with pytest.raises(zarrow.ZarrowError, match=r'not in the table \["extra"\]'):
        zarrow.write(part(50, 5).append_column("extra", pa.array([1] * 5)), path, mode="append")
    wrong = part(50, 5).set_column(2, "n", pa.array([str(i) for i in range(5)]))
    with pytest.raises(zarrow.ZarrowError, match="column \"n\": the table holds int64"):
        zarrow.write(wrong, path, mode="append")
    with pytest.raises(zarrow.ZarrowError, match="compressor"):
        zarrow.write(part(50, 5), path, mode="append", compressor="gzip")
    with pytest.raises(zarrow.ZarrowError, match="contradicts"):
        zarrow.write(part(50, 5), path, mode="append", overwrite=True)
    assert files(path) == before
    # A string column may arrive in another Arrow layout: it is the same Zarr type.
    views = part(50, 5)
    views = views.set_column(0, "name", views.column("name").cast(pa.string_view()))
    assert zarrow.write(views, path, mode="append") == 5
    assert zarr_python_reads(path) == expected(part(0, 50), part(50, 5))


def test_an_array_store_is_no_group_to_append_to(tmp_path):
    path = tmp_path / "a.zarr"
    zarr.create_array(str(path), shape=(3,), dtype="int64")
    with pytest.raises(zarrow.ZarrowError, match="is an array"):
        zarrow.write(pa.table({"a": [1]}), path, mode="append")


def test_a_zarr_python_group_grows(tmp_path):
    """A group zarr-python wrote (its own codecs, no zarrow attributes, v2 with
    '/' chunk keys) takes rows with its codecs and keys."""
    path = tmp_path / "zp.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    group.create_array("a", shape=(10,), chunks=(4,), dtype="int32", chunk_key_encoding={"name": "v2", "separator": "/"}, compressors=None)
    group["a"][:] = np.arange(10, dtype=np.int32)
    group.create_array("s", shape=(10,), chunks=(4,), dtype=str)
    group["s"][:] = np.array([f"s{i}" for i in range(10)], dtype=object)
    zarr.consolidate_metadata(str(path))
    new = pa.table({"a": pa.array([10, 11, 12], pa.int32()), "s": ["s10", "s11", "s12"]})
    assert zarrow.write(new, path, mode="append") == 3
    got = zarr.open_group(str(path), mode="r")
    assert np.asarray(got["a"][:]).tolist() == list(range(13))
    assert np.asarray(got["s"][:]).tolist() == [f"s{i}" for i in range(13)]
    assert got["a"].metadata.compressor is None


def test_a_second_writer_waits_for_the_lock_then_gives_up(tmp_path):
    """The lock is the operating system's advisory lock on the file beside the
    store: held here with fcntl, as another process would hold it."""
    path = tmp_path / "t.zarr"
    zarrow.write(part(0, 20), path, chunk_len=8)
    before = files(path)
    lock = tmp_path / ".t.zarr.zarrow-lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(zarrow.ZarrowError, match="another writer"):
            zarrow.write(part(20, 5), path, mode="append", lock_timeout=0.3)
        with pytest.raises(zarrow.ZarrowError, match="another writer"):
            pq.write_table(part(20, 5), tmp_path / "in.parquet")
            zarrow.convert(tmp_path / "in.parquet", path, append=True, lock_timeout=0.2)
    assert files(path) == before
    assert zarrow.write(part(20, 5), path, mode="append", lock_timeout=0.3) == 5
    # zarrow's appends lock this very file (kept after use).
    assert lock.exists()


WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    import zarrow

    path, writer, rounds, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    wait = float(sys.argv[5]) if len(sys.argv) > 5 else 120.0
    for r in range(rounds):
        tag = writer * 1000 + r
        table = pa.table({
            "tag": pa.array([tag] * rows, pa.int64()),
            "i": pa.array(range(rows), pa.int64()),
            "s": pa.array([f"w{writer} r{r} i{i}" for i in range(rows)]),
        })
        try:
            assert zarrow.write(table, path, mode="append", lock_timeout=wait) == rows
            print(f"won {tag}", flush=True)
        except zarrow.ZarrowError as e:
            print(f"lost {tag}: {e}", flush=True)
""")

@pytest.mark.parametrize("wait", [120.0, 0.0])
def test_two_processes_append_twenty_rounds_each_and_lose_nothing(tmp_path, wait):
    """Two processes append 20 rounds each. Waiting for the lock, every round
    lands; without waiting, a round that finds the store held fails and says
    why. Either way the table holds exactly the rounds that succeeded, whole,
    after the first rows as written."""
    path = tmp_path / "shared.zarr"
    first = pa.table({
        "tag": pa.array([-1] * 5, pa.int64()),
        "i": pa.array(range(5), pa.int64()),
        "s": pa.array([f"first {i}" for i in range(5)]),
    })
    zarrow.write(first, path, chunk_len=16)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rounds, rows = 20, 11
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), str(w), str(rounds), str(rows), str(wait)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in (1, 2)
    ]
    won, lost = [], []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        for line in out.splitlines():
            outcome, rest = line.split(" ", 1)
            if outcome == "won":
                won.append(int(rest))
            else:
                tag, message = rest.split(": ", 1)
                assert "another writer" in message, message
                lost.append(int(tag))
    assert len(won) + len(lost) == 2 * rounds
    if wait:
        assert not lost
    got = zarr.open_group(str(path), mode="r")
    tags = np.asarray(got["tag"][:]).tolist()
    index = np.asarray(got["i"][:]).tolist()
    strings = np.asarray(got["s"][:]).tolist()
    assert len(tags) == 5 + len(won) * rows
    # The first rows are as written, and each append is whole and in order.
    assert strings[:5] == [f"first {i}" for i in range(5)]
    seen = []
    for start in range(5, len(tags), rows):
        tag = tags[start]
        writer, r = divmod(tag, 1000)
        assert tags[start:start + rows] == [tag] * rows
        assert index[start:start + rows] == list(range(rows))
        assert strings[start:start + rows] == [f"w{writer} r{r} i{i}" for i in range(rows)]
        seen.append(tag)
    assert sorted(seen) == sorted(won)
    # Each writer's rounds are in its own order.
    for w in (1, 2):
        assert [t for t in seen if t // 1000 == w] == sorted(t for t in won if t // 1000 == w)


def test_an_anndata_obs_written_by_anndata_gains_rows_and_categories(tmp_path):
    """anndata writes an obs (a categorical, nullable integer and boolean, a
    float, strings, string labels); zarrow appends a pandas frame whose
    categorical has new categories; anndata reads the grown obs as pandas'
    concatenation (the categories united, in order of first appearance)."""
    import anndata
    import pandas as pd

    first = pd.DataFrame(
        {
            "cell_type": pd.Categorical(["B", "T", "B", "NK"], categories=["B", "NK", "T"]),
            "count": pd.array([1, None, 3, 4], dtype="Int64"),
            "ok": pd.array([True, False, None, True], dtype="boolean"),
            "score": [0.5, 1.5, float("nan"), 3.0],
            "donor": ["d1", "d2", "d1", "d3"],
        },
        index=pd.Index([f"cell{i}" for i in range(4)]),
    )
    path = tmp_path / "obs.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    anndata.io.write_elem(group, "obs", first)
    zarr.consolidate_metadata(str(path))
    second = pd.DataFrame(
        {
            "cell_type": pd.Categorical(["Mono", "T", "DC"], categories=["DC", "Mono", "T"]),
            "count": pd.array([None, 7, 8], dtype="Int64"),
            "ok": pd.array([None, True, False], dtype="boolean"),
            "score": [4.0, float("nan"), 6.0],
            "donor": ["d4", "d1", "d5"],
        },
        index=pd.Index([f"cell{i}" for i in range(4, 7)]),
    )
    before = files(path)
    # A frame without the index's labels cannot grow a string index.
    with pytest.raises(zarrow.ZarrowError, match="labels"):
        zarrow.write(pa.Table.from_pandas(second, preserve_index=False), f"{path}/obs", mode="append")
    assert files(path) == before

    assert zarrow.write(pa.Table.from_pandas(second), f"{path}/obs", mode="append") == 3
    got = anndata.io.read_elem(zarr.open_group(str(path), mode="r")["obs"])
    want = pd.concat([first, second])
    # pandas' own union: the stored categories, then the new ones in the
    # appended frame's category order.
    want["cell_type"] = pd.api.types.union_categoricals([first["cell_type"], second["cell_type"]])
    pd.testing.assert_frame_equal(got, want, check_index_type=False)
    # The stored codes keep anndata's type: pandas' smallest.
    codes = zarr.open_group(str(path), mode="r")["obs/cell_type/codes"]
    assert codes.dtype == np.int8


def test_two_processes_append_twenty_rounds_each_on_s3(tmp_path):
    """The same race on S3 (moto on loopback): the writers keep each other out
    with the lease object beside the store, created only if absent."""
    import boto3

    from remote_servers import moto_server

    rounds, rows = 20, 9
    with moto_server() as endpoint:
        env = dict(
            os.environ,
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="test",
            AWS_SECRET_ACCESS_KEY="test",
            AWS_REGION="us-east-1",
            AWS_ALLOW_HTTP="true",
        )
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                              aws_secret_access_key="test", region_name="us-east-1")
        client.create_bucket(Bucket="race")
        url = "s3://race/shared.zarr"
        # A lease that another writer holds (put here with boto3): the append
        # waits, then gives up and writes nothing.
        import json
        import time

        lease = ".shared.zarr.zarrow-lease"
        until = int(time.time() * 1000) + 60_000
        client.put_object(Bucket="race", Key=lease, Body=json.dumps({"owner": "other", "until_ms": until}))
        check = textwrap.dedent('''
            import sys, pyarrow as pa, zarrow
            try:
                zarrow.write(pa.table({"tag": [1]}), sys.argv[1], mode="append", lock_timeout=0.5)
            except zarrow.ZarrowError as e:
                print(e)
        ''')
        said = subprocess.run([sys.executable, "-c", check, url], env=env, capture_output=True,
                              text=True, timeout=120)
        assert "another writer" in said.stdout, said.stdout + said.stderr
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="race").get("Contents", [])]
        assert keys == [lease]
        client.delete_object(Bucket="race", Key=lease)
        procs = [
            subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(rounds), str(rows)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for w in (1, 2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="race").get("Contents", [])]
        # The lease is gone: each writer deleted its own.
        assert ".shared.zarr.zarrow-lease" not in keys
        local = tmp_path
        for key in keys:
            path = local / key
            path.parent.mkdir(parents=True, exist_ok=True)
            client.download_file("race", key, str(path))
    got = zarr.open_group(str(local / "shared.zarr"), mode="r")
    tags = np.asarray(got["tag"][:]).tolist()
    strings = np.asarray(got["s"][:]).tolist()
    assert len(tags) == 2 * rounds * rows
    seen = []
    for start in range(0, len(tags), rows):
        tag = tags[start]
        writer, r = divmod(tag, 1000)
        assert tags[start:start + rows] == [tag] * rows
        assert strings[start:start + rows] == [f"w{writer} r{r} i{i}" for i in range(rows)]
        seen.append(tag)
    assert sorted(seen) == sorted(w * 1000 + r for w in (1, 2) for r in range(rounds))


def test_an_append_never_clears_a_directory_that_is_not_a_table(tmp_path):
    path = tmp_path / "notes"
    path.mkdir()
    (path / "todo.txt").write_text("keep me")
    with pytest.raises(zarrow.ZarrowError, match="no Zarr group"):
        zarrow.write(part(0, 5), path, mode="append")
    assert (path / "todo.txt").read_text() == "keep me"
    assert sorted(p.name for p in path.iterdir()) == ["todo.txt"]
