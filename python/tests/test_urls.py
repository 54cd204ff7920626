"""URLs from Python: zarrow.read, zarrow.write and zarrow.sql over an S3 server (moto)
and a ranged HTTP server, both on 127.0.0.1 and started here (the servers of
tests/interop/check_remote.py). Expectations: zarr-python reading the local store, or
the objects zarrow wrote downloaded with boto3 and read by zarr-python."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zarr

import zarrow
from conftest import STORES
from remote_servers import http_server, moto_server

BUCKET = "zarrow-py"


@pytest.fixture(scope="module")
def s3():
    import boto3

    with moto_server() as endpoint:
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield endpoint, client


@pytest.fixture
def s3_env(s3, monkeypatch):
    endpoint, client = s3
    for key, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    return client


def table() -> pa.Table:
    return pa.table(
        {
            "name": pa.array([f"cell {i}" if i % 7 else "" for i in range(5000)]),
            "kind": pa.array([["a", "bb", "ccc"][i % 3] for i in range(5000)]),
            "n": pa.array(np.arange(5000, dtype=np.int64)),
        }
    )


def download(client, prefix: str, into) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            path = into / obj["Key"]
            path.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET, obj["Key"], str(path))


def test_write_to_s3_is_read_by_zarr_python(s3_env, tmp_path):
    want = table()
    assert zarrow.write(want, f"s3://{BUCKET}/w.zarr", chunk_len=1000) == want.num_rows
    download(s3_env, "w.zarr/", tmp_path)
    group = zarr.open_group(str(tmp_path / "w.zarr"), mode="r")
    for name in want.column_names:
        assert np.asarray(group[name][:]).tolist() == want.column(name).to_pylist(), name


def test_read_and_sql_from_s3(s3_env):
    want = table()
    zarrow.write(want, f"s3://{BUCKET}/r.zarr", chunk_len=700, overwrite=True)
    got = pa.table(zarrow.read(f"s3://{BUCKET}/r.zarr", columns=["kind", "n"], rows=(100, 2100)))
    assert got.column("kind").to_pylist() == want.column("kind").to_pylist()[100:2100]
    assert got.column("n").to_pylist() == want.column("n").to_pylist()[100:2100]
    counts = pa.table(
        zarrow.sql(
            "SELECT kind, count(*) AS c, sum(n) AS s FROM t WHERE name <> '' GROUP BY kind ORDER BY kind",
            {"t": f"s3://{BUCKET}/r.zarr"},
        )
    )
    kept = want.filter(pc.not_equal(want.column("name"), ""))
    expected = kept.group_by("kind").aggregate([("kind", "count"), ("n", "sum")]).sort_by("kind")
    assert counts.column("kind").to_pylist() == expected.column("kind").to_pylist()
    assert counts.column("c").to_pylist() == expected.column("kind_count").to_pylist()
    assert counts.column("s").to_pylist() == expected.column("n_sum").to_pylist()


def test_read_over_http_equals_zarr_python():
    store = STORES / "v3_string_sharded.zarr"
    want = np.asarray(zarr.open_array(str(store), mode="r")[:]).tolist()
    with http_server(STORES) as web:
        got = pa.table(zarrow.read(f"{web}/{store.name}"))
    assert got.column_names == ["v3_string_sharded"]
    assert got.column(0).to_pylist() == want


def test_sql_over_http_group(tmp_path):
    # A group over plain HTTP is found through its consolidated metadata, which
    # zarrow.write writes (there is no listing over HTTP).
    want = table()
    zarrow.write(want, tmp_path / "g.zarr", chunk_len=1000)
    with http_server(tmp_path) as web:
        got = pa.table(zarrow.sql("SELECT max(name) AS m, count(*) AS c FROM g", {"g": f"{web}/g.zarr"}))
    assert got.column("m").to_pylist() == [pc.max(want.column("name")).as_py()]
    assert got.column("c").to_pylist() == [want.num_rows]


def test_a_missing_bucket_raises_zarrow_error(s3_env):
    with pytest.raises(zarrow.ZarrowError):
        pa.table(zarrow.read("s3://no-such-bucket/x.zarr"))
