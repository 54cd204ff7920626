"""URLs from Python: zarrow.read, zarrow.write and zarrow.sql over an S3 server (moto)
and a ranged HTTP server, both on 127.0.0.1 and started here (the servers of
tests/interop/check_remote.py). Expectations: zarr-python reading the local store, or
the objects zarrow wrote downloaded with boto3 and read by zarr-python."""

from __future__ import annotations

import shutil

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


# ------------------------------------------------ obstore stores as locations


def test_an_obstore_s3_store_is_read_with_its_own_credentials(s3, tmp_path):
    """The store's credentials and endpoint come from obstore alone: no AWS_*
    variable is set (the s3_env fixture is not used)."""
    import duckdb
    import polars as pl
    from obstore.store import S3Store

    endpoint, client = s3
    want = table()
    zarrow.write(want, tmp_path / "o.zarr", chunk_len=700)
    for path in (tmp_path / "o.zarr").rglob("*"):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"ob/{path.relative_to(tmp_path)}")
    store = S3Store(
        BUCKET,
        prefix="ob/o.zarr",
        endpoint=endpoint,
        access_key_id="test",
        secret_access_key="test",
        region="us-east-1",
        client_options={"allow_http": True},
    )
    local = zarr.open_group(str(tmp_path / "o.zarr"), mode="r")
    expected = {name: np.asarray(local[name][:]).tolist() for name in want.column_names}

    got = pa.table(zarrow.read(store, columns=["kind", "n"], rows=(100, 2100)))
    assert got.column("kind").to_pylist() == expected["kind"][100:2100]
    assert got.column("n").to_pylist() == expected["n"][100:2100]
    assert zarrow.info(store)["node"] == "group"

    frame = pl.DataFrame(expected)
    lazy = zarrow.scan(store).filter(pl.col("kind") == "bb").select("name", "n").collect()
    assert lazy.equals(frame.filter(pl.col("kind") == "bb").select("name", "n"))

    ds = zarrow.dataset(store)  # noqa: F841
    assert duckdb.sql("SELECT count(*) FROM ds WHERE n >= 4000").fetchall() == [(1000,)]

    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(store))
    got = ctx.sql("SELECT kind, count(*) AS c FROM t WHERE n < 10 GROUP BY kind ORDER BY kind").to_pydict()
    assert got == {"kind": ["a", "bb", "ccc"], "c": [4, 3, 3]}

    with pytest.raises(zarrow.ZarrowError, match="anonymous"):
        zarrow.read(store, anonymous=True)


def obstore_s3(endpoint: str, prefix: str):
    from obstore.store import S3Store

    return S3Store(
        BUCKET,
        prefix=prefix,
        endpoint=endpoint,
        access_key_id="test",
        secret_access_key="test",
        region="us-east-1",
        client_options={"allow_http": True},
    )


def keys(client, prefix: str) -> dict:
    """Every object under ``prefix``, by key, with its bytes."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
    return out


def test_write_convert_and_sql_through_an_obstore_s3_store(s3, tmp_path):
    """write, convert (both ways) and sql take an obstore store where they take a
    URL, with the store's own credentials (no AWS_* variable is set). What was
    written is downloaded with boto3 and read by zarr-python; what was converted
    out is read by pyarrow; the query's answer is pyarrow's."""
    endpoint, client = s3
    want = table()

    # write: the objects zarr-python reads as the table; again without
    # overwrite: refused, and the store is as it was.
    store = obstore_s3(endpoint, "obw/w.zarr")
    assert zarrow.write(want, store, chunk_len=1000) == want.num_rows
    download(client, "obw/w.zarr/", tmp_path)
    group = zarr.open_group(str(tmp_path / "obw" / "w.zarr"), mode="r")
    for name in want.column_names:
        assert np.asarray(group[name][:]).tolist() == want.column(name).to_pylist(), name
    before = keys(client, "obw/w.zarr/")
    with pytest.raises(zarrow.ZarrowError, match="exists"):
        zarrow.write(want.slice(0, 10), store)
    assert keys(client, "obw/w.zarr/") == before

    # convert a Parquet file into a store, then that store out to Parquet.
    import pyarrow.parquet as pq

    pq.write_table(want, tmp_path / "in.parquet")
    into = obstore_s3(endpoint, "obw/c.zarr")
    assert zarrow.convert(tmp_path / "in.parquet", into, zarr_format=2, chunk_len=600) == {"rows": want.num_rows}
    download(client, "obw/c.zarr/", tmp_path)
    converted = zarr.open_group(str(tmp_path / "obw" / "c.zarr"), mode="r")
    assert converted.metadata.zarr_format == 2
    assert np.asarray(converted["name"][:]).tolist() == want.column("name").to_pylist()
    assert zarrow.convert(into, tmp_path / "out.parquet", columns=["kind", "n"]) == {"rows": want.num_rows}
    assert pq.read_table(tmp_path / "out.parquet").to_pydict() == want.select(["kind", "n"]).to_pydict()
    with pytest.raises(zarrow.ZarrowError, match="both Zarr stores"):
        zarrow.convert(into, store)

    # sql: a store's table beside a local Parquet file.
    got = pa.table(
        zarrow.sql(
            "SELECT t.kind, count(*) AS c FROM t JOIN p ON t.n = p.n WHERE t.n % 2 = 0 GROUP BY t.kind ORDER BY t.kind",
            {"t": store, "p": tmp_path / "in.parquet"},
        )
    )
    even = want.filter(pc.equal(pc.bit_wise_and(want.column("n"), 1), 0))
    expected = even.group_by("kind").aggregate([("kind", "count")]).sort_by("kind")
    assert got.column("kind").to_pylist() == expected.column("kind").to_pylist()
    assert got.column("c").to_pylist() == expected.column("kind_count").to_pylist()

    # sql: INSERT INTO the store's table appends through the obstore store;
    # zarr-python reads the rows before and after.
    insert = "INSERT INTO t SELECT name, kind, n FROM p WHERE n < 3"
    pa.table(zarrow.sql(insert, {"t": store, "p": tmp_path / "in.parquet"}))
    shutil.rmtree(tmp_path / "obw" / "w.zarr")
    download(client, "obw/w.zarr/", tmp_path)
    group = zarr.open_group(str(tmp_path / "obw" / "w.zarr"), mode="r")
    grown = pa.concat_tables([want, want.slice(0, 3)])
    for name in want.column_names:
        assert np.asarray(group[name][:]).tolist() == grown.column(name).to_pylist(), name


def test_an_obstore_local_store_names_a_root_array_by_its_prefix():
    from obstore.store import LocalStore

    path = STORES / "v2_string_zstd.zarr"
    got = pa.table(zarrow.read(LocalStore(prefix=str(path))))
    assert got.column_names == ["v2_string_zstd"]
    assert got.column(0).to_pylist() == np.asarray(zarr.open_array(str(path), mode="r")[:]).tolist()


def test_a_location_that_is_no_store_is_a_type_error():
    from obstore.store import MemoryStore

    with pytest.raises(TypeError, match="path, a URL or an obstore store"):
        zarrow.read(42)
    # obstore's memory store lives in obstore's own module: it cannot be shared.
    with pytest.raises((TypeError, ValueError)):
        zarrow.read(MemoryStore())
