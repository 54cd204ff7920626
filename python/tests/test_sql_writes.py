"""Writing Zarr through DataFusion (zarrow.sql runs `;`-separated statements in
order): COPY ... STORED AS ZARR and INSERT INTO a Zarr table. Expectations:
zarr-python and anndata read what was written, compared with pyarrow (or pandas)
computing the same rows; an error leaves the store's bytes as they were."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zarr

import zarrow


def source(n: int = 3000) -> pa.Table:
    return pa.table({
        "n": pa.array(range(n), pa.int64()),
        "kind": pa.array([["a", "bb", "ccc", "dddd"][i % 4] for i in range(n)]),
        "x": pa.array([i / 8 for i in range(n)], pa.float64()),
        "name": pa.array([f"row {i}" + "é" * (i % 3) for i in range(n)]),
    })


def zarr_python(path: Path) -> dict[str, list]:
    group = zarr.open_group(str(path), mode="r")
    return {name: np.asarray(array[:]).tolist() for name, array in group.arrays()}


def rows(columns: dict[str, list], names: list[str]) -> list[tuple]:
    """The rows, sorted: DataFusion writes the partitions' rows in any order."""
    return sorted(zip(*(columns[n] for n in names)))


def run(reader) -> pa.Table:
    """Every batch of a zarrow.sql answer, read by iterating it (an error is a
    ZarrowError; through pyarrow's C stream it would be pyarrow's)."""
    batches = list(reader)
    return pa.Table.from_batches(batches, schema=reader.schema)


def files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def parquet(tmp_path) -> Path:
    path = tmp_path / "src.parquet"
    pq.write_table(source(), path, row_group_size=700)
    return path


def test_copy_of_a_filter_and_of_a_group_by_read_by_zarr_python(tmp_path, parquet):
    f, g = tmp_path / "f.zarr", tmp_path / "g.zarr"
    answer = run(zarrow.sql(
        f"COPY (SELECT * FROM p WHERE n % 3 = 0 AND kind <> 'a') TO '{f}' STORED AS ZARR "
        "OPTIONS (zarr_format 2, chunk_len 100); "
        f"COPY (SELECT kind, count(*) AS c, sum(x) AS sx FROM p GROUP BY kind) TO '{g}'; "
        "SELECT 42 AS done",
        {"p": parquet},
    ))
    assert answer.column("done").to_pylist() == [42]
    t = source()
    n = np.asarray(t.column("n"))
    kept = t.filter(pa.array((n % 3 == 0) & (np.asarray(t.column("kind")) != "a")))
    names = ["n", "kind", "x", "name"]
    got = zarr_python(f)
    assert zarr.open_group(str(f), mode="r").metadata.zarr_format == 2
    assert zarr.open_group(str(f), mode="r")["n"].chunks == (100,)
    assert rows(got, names) == rows(kept.to_pydict(), names)

    grouped = t.group_by("kind").aggregate([("kind", "count"), ("x", "sum")])
    want = {"kind": grouped.column("kind").to_pylist(), "c": grouped.column("kind_count").to_pylist(),
            "sx": grouped.column("x_sum").to_pylist()}
    assert rows(zarr_python(g), ["kind", "c", "sx"]) == rows(want, ["kind", "c", "sx"])


def test_copy_to_an_existing_store_needs_overwrite_or_append(tmp_path, parquet):
    out = tmp_path / "o.zarr"
    run(zarrow.sql(f"COPY (SELECT n, kind FROM p WHERE n < 10) TO '{out}'", {"p": parquet}))
    before = files(out)
    with pytest.raises(zarrow.ZarrowError, match="overwrite true"):
        run(zarrow.sql(f"COPY (SELECT n, kind FROM p) TO '{out}'", {"p": parquet}))
    with pytest.raises(zarrow.ZarrowError, match="unknown write option \"compresor\""):
        run(zarrow.sql(f"COPY (SELECT n FROM p) TO '{tmp_path}/x.zarr' OPTIONS (compresor 'gzip')", {"p": parquet}))
    assert files(out) == before
    run(zarrow.sql(f"COPY (SELECT n, kind FROM p WHERE n >= 2990) TO '{out}' OPTIONS (append true)", {"p": parquet}))
    assert sorted(zarr_python(out)["n"]) == list(range(10)) + list(range(2990, 3000))
    run(zarrow.sql(f"COPY (SELECT n, kind FROM p WHERE n = 5) TO '{out}' OPTIONS (overwrite true)", {"p": parquet}))
    assert zarr_python(out) == {"n": [5], "kind": ["bb"]}


def test_insert_twice_then_select_sees_every_row(tmp_path, parquet):
    table = tmp_path / "t.zarr"
    zarrow.write(source(100), table, chunk_len=16, shard_len=64)
    answer = run(zarrow.sql(
        f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{table}'; "
        "INSERT INTO t SELECT * FROM p WHERE n >= 2000 AND n < 2500; "
        "INSERT INTO t VALUES (-1, 'zz', 0.5, 'last'), (-2, 'zz', 1.5, 'laster'); "
        "SELECT count(*) AS c, sum(n) AS s, count(DISTINCT kind) AS k FROM t",
        {"p": parquet},
    ))
    assert answer.to_pydict() == {"c": [602], "s": [sum(range(100)) + sum(range(2000, 2500)) - 3], "k": [5]}
    names = ["n", "kind", "x", "name"]
    t = source()
    want = pa.concat_tables([
        source(100), t.slice(2000, 500),
        pa.table({"n": [-1, -2], "kind": ["zz", "zz"], "x": [0.5, 1.5], "name": ["last", "laster"]}, schema=t.schema),
    ])
    assert rows(zarr_python(table), names) == rows(want.to_pydict(), names)
    # The first 100 rows are as written, in place.
    assert zarr_python(table)["n"][:100] == list(range(100))


def test_a_failing_insert_leaves_the_table_as_it_was(tmp_path, parquet):
    """The query fails at row 2900, after the rows before it were written as
    chunks: the table is as it was, and the next append clears those chunks."""
    table = tmp_path / "t.zarr"
    zarrow.write(source(50), table, chunk_len=16)
    chunks = lambda: sorted(p.name for p in (table / "n" / "c").iterdir())  # noqa: E731
    before = chunks()
    with pytest.raises(zarrow.ZarrowError, match="(?i)divide by zero"):
        run(zarrow.sql(
            f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{table}'; "
            "INSERT INTO t SELECT n, kind, CAST(10 / (n - 2900) AS DOUBLE), name FROM p",
            {"p": parquet},
        ))
    assert zarr_python(table) == source(50).to_pydict()
    assert len(chunks()) > len(before)
    zarrow.write(source(60).slice(50), table, mode="append")
    assert zarr_python(table)["n"] == list(range(60))
    assert len(chunks()) == 4


def test_insert_overwrite_replaces_a_table_and_keeps_its_format(tmp_path, parquet):
    table = tmp_path / "t.zarr"
    zarrow.write(source(50), table, zarr_format=2, chunk_len=16)
    run(zarrow.sql(
        f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{table}'; "
        "INSERT OVERWRITE t SELECT * FROM p WHERE n >= 2995",
        {"p": parquet},
    ))
    group = zarr.open_group(str(table), mode="r")
    assert group.metadata.zarr_format == 2
    assert sorted(zarr_python(table)["n"]) == list(range(2995, 3000))


def test_insert_into_an_anndata_obs_read_by_anndata(tmp_path):
    """anndata writes an obs; DataFusion inserts rows of it back (categoricals
    arrive as their values, nullable integers with nulls); anndata reads the
    obs as pandas' concatenation."""
    import anndata
    import pandas as pd

    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(["B", "T", "B", "NK"]),
            "count": pd.array([1, None, 3, 4], dtype="Int64"),
            "score": [0.5, 1.5, 2.5, 3.0],
        },
        index=pd.Index([f"cell{i}" for i in range(4)]),
    )
    path = tmp_path / "obs.zarr"
    anndata.io.write_elem(zarr.open_group(str(path), mode="w"), "/", obs)
    zarr.consolidate_metadata(str(path))
    run(zarrow.sql(
        f"CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION '{path}'; "
        "INSERT INTO obs SELECT concat(_index, '-copy'), cell_type, count, score FROM obs WHERE cell_type <> 'T'",
    ))
    got = anndata.io.read_elem(zarr.open_group(str(path), mode="r"))
    copy = obs[obs["cell_type"] != "T"].copy()
    copy.index = [f"{i}-copy" for i in copy.index]
    want = pd.concat([obs, copy])
    want["cell_type"] = pd.Categorical(want["cell_type"], categories=obs["cell_type"].cat.categories)
    pd.testing.assert_frame_equal(got, want, check_index_type=False)


def test_copy_and_insert_on_s3(tmp_path, parquet, monkeypatch):
    """COPY to an s3:// URL and INSERT INTO a table there (moto on loopback;
    credentials from the environment, as the command line takes them): the
    objects, downloaded with boto3, read by zarr-python as pyarrow's rows."""
    import boto3

    from remote_servers import moto_server

    with moto_server() as endpoint:
        for key, value in {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(key, value)
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                              aws_secret_access_key="test", region_name="us-east-1")
        client.create_bucket(Bucket="sqlw")
        url = "s3://sqlw/copied.zarr"
        answer = run(zarrow.sql(
            f"COPY (SELECT n, kind FROM p WHERE n < 1000) TO '{url}' STORED AS ZARR OPTIONS (chunk_len 300); "
            f"CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '{url}'; "
            "INSERT INTO t SELECT n, kind FROM p WHERE n >= 2900; "
            "SELECT count(*) AS c FROM t",
            {"p": parquet},
        ))
        assert answer.column("c").to_pylist() == [1100]
        with pytest.raises(zarrow.ZarrowError, match="overwrite true"):
            run(zarrow.sql(f"COPY (SELECT n, kind FROM p) TO '{url}'", {"p": parquet}))
        for page in client.get_paginator("list_objects_v2").paginate(Bucket="sqlw"):
            for obj in page.get("Contents", []):
                path = tmp_path / "s3" / obj["Key"]
                path.parent.mkdir(parents=True, exist_ok=True)
                client.download_file("sqlw", obj["Key"], str(path))
    got = zarr_python(tmp_path / "s3" / "copied.zarr")
    t = source()
    want = pa.concat_tables([t.slice(0, 1000), t.slice(2900)]).select(["n", "kind"])
    assert rows(got, ["n", "kind"]) == rows(want.to_pydict(), ["n", "kind"])


def test_insert_into_a_datafusion_python_table(tmp_path):
    """datafusion-python 55 inserts through zarrow.table's provider (the FFI):
    zarr-python reads the rows, and the session's next scan sees them."""
    from datafusion import SessionContext

    path = tmp_path / "t.zarr"
    zarrow.write(source(20), path, chunk_len=8)
    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(path))
    ctx.sql("INSERT INTO t VALUES (100, 'new', 1.0, 'one'), (101, 'new', 2.0, 'two')").collect()
    got = zarr_python(path)
    assert got["n"] == list(range(20)) + [100, 101]
    assert got["name"][-2:] == ["one", "two"]
    count = ctx.sql("SELECT count(*) AS c FROM t WHERE kind = 'new'").to_pydict()
    assert count == {"c": [2]}
