"""``zarrow.Dataset``: a table kept open across scans. Its answers against
Polars' (and pyarrow's, DuckDB's, datafusion-python's) over the same rows in
memory, across scans and appends; what a second scan fetches, counted over
HTTP in front of an S3 server (moto)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import zarrow
from remote_servers import FaultProxy
from test_urls import BUCKET, s3, s3_env  # noqa: F401 (the S3 server, started once per module, and its environment)


def rows(start: int, n: int, seed: int) -> pa.Table:
    """Atlas-like rows: samples one after another, a sorted day, random
    scores and counts."""
    rng = np.random.default_rng(seed)
    i = np.arange(start, start + n)
    return pa.table(
        {
            "sample": pa.array([f"S{v // 400:04d}" for v in i]),
            "day": pa.array(i // 10, pa.int64()),
            "n_genes": pa.array(rng.integers(0, 5000, n), pa.int32()),
            "score": pa.array(rng.random(n)),
        }
    )


PREDICATES = [
    pl.col("sample") == "S0003",
    pl.col("day").is_between(120, 135),
    (pl.col("n_genes") > 4000) & (pl.col("score") < 0.2),
    pl.col("sample").is_in(["S0001", "S0007", "nowhere"]),
    pl.col("day") > 10**9,
    (pl.col("day") < 20) | (pl.col("score") > 0.99),
]


def check_scans(ds: zarrow.Dataset, expected: pa.Table) -> None:
    frame = pl.from_arrow(expected)
    for predicate in PREDICATES:
        got = zarrow.scan(ds).filter(predicate).select("sample", "day", "score").collect()
        want = frame.filter(predicate).select("sample", "day", "score")
        assert got.equals(want), str(predicate)


def test_a_dataset_answers_as_polars_across_scans_and_appends(tmp_path):
    path = tmp_path / "t.zarr"
    first = rows(0, 3000, 1)
    zarrow.write(first, path, chunk_len=250)
    ds = zarrow.Dataset(path)
    check_scans(ds, first)
    # Again: the same answers from the table kept open.
    check_scans(ds, first)
    more = rows(3000, 1700, 2)
    zarrow.write(more, path, mode="append")
    both = pa.concat_tables([first, more])
    check_scans(ds, both)

    # DuckDB through zarrow.dataset over the same Dataset.
    import duckdb

    d = zarrow.dataset(ds)
    got = duckdb.sql("SELECT count(*), sum(n_genes) FROM d WHERE day >= 300 AND score < 0.5").fetchall()[0]
    mask = pc.and_(pc.greater_equal(both["day"], 300), pc.less(both["score"], 0.5))
    kept = both.filter(mask)
    assert got == (kept.num_rows, pc.sum(kept["n_genes"]).as_py())

    # datafusion-python and zarrow.sql.
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(ds))
    got = ctx.sql("SELECT count(*) AS n FROM t WHERE sample = 'S0010'").to_pydict()
    assert got == {"n": [pc.sum(pc.equal(both["sample"], "S0010")).as_py()]}
    answer = pa.table(zarrow.sql("SELECT max(day) AS d FROM t", {"t": ds}))
    assert answer.column("d").to_pylist() == [pc.max(both["day"]).as_py()]

    # Rewritten with other columns: the next scan has them.
    other = pa.table({"day": pa.array([5, 6, 7], pa.int64())})
    zarrow.write(other, path, overwrite=True)
    got = zarrow.scan(ds).filter(pl.col("day") > 5).collect()
    assert got.to_dict(as_series=False) == {"day": [6, 7]}


def test_a_dataset_over_something_that_is_no_table_fails_when_made(tmp_path):
    with pytest.raises(zarrow.ZarrowError):
        zarrow.Dataset(tmp_path / "missing.zarr")


def fetched(proxy: FaultProxy) -> list[str]:
    """The objects GET since the proxy was last cleared (not listings)."""
    out = []
    for method, path, _ in proxy.requests:
        if method == "GET" and "list-type" not in path:
            out.append(re.sub(r"^/[^/]+/", "", path.split("?")[0]))
    return out


def test_a_second_scan_of_an_unchanged_dataset_fetches_no_metadata_or_statistics(s3, s3_env, monkeypatch):
    endpoint, _client = s3
    url = f"s3://{BUCKET}/kept/t.zarr"
    first = rows(0, 2000, 3)
    zarrow.write(first, url, chunk_len=250)
    proxy = FaultProxy(endpoint)
    with proxy.serve() as through:
        monkeypatch.setenv("AWS_ENDPOINT_URL", through)
        ds = zarrow.Dataset(url)
        none = pl.col("day") > 10**6
        few = pl.col("day").is_between(20, 30)
        assert zarrow.scan(ds).filter(none).collect().height == 0
        proxy.requests.clear()
        assert zarrow.scan(ds).filter(none).collect().height == 0
        assert fetched(proxy) == [], "nothing fetched: no metadata, no statistics, no chunk"
        got = zarrow.scan(ds).filter(few).select("day").collect()
        assert got["day"].to_list() == [d for d in first["day"].to_pylist() if 20 <= d <= 30]
        proxy.requests.clear()
        zarrow.scan(ds).filter(few).select("day").collect()
        gets = fetched(proxy)
        assert gets and all("/c/" in key for key in gets), gets
        # A location, not a dataset, reads the metadata again every time.
        zarrow.scan(url).filter(none).collect()
        proxy.requests.clear()
        zarrow.scan(url).filter(none).collect()
        assert any(key.endswith("zarr.json") for key in fetched(proxy))
        # Rows appended (straight to the server): the dataset has them.
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        more = rows(2000, 500, 4)
        zarrow.write(more, url, mode="append")
        monkeypatch.setenv("AWS_ENDPOINT_URL", through)
        late = pl.col("day") >= 200
        got = zarrow.scan(ds).filter(late).select("day").collect()
        assert got["day"].to_list() == [d for d in more["day"].to_pylist() if d >= 200]


def test_a_repeated_scan_checks_the_statistics_again_after_another_writer(tmp_path):
    """The dataset keeps a filtered scan's plan, and each run of it reads the
    chunk statistics and checks their freshness again: zarr-python rewrites a
    chunk in place (no metadata changes, zarrow's statistics of that chunk go
    stale), and the same query finds the rows it now holds."""
    import zarr

    path = tmp_path / "t.zarr"
    table = rows(0, 3000, 3)
    zarrow.write(table, path, chunk_len=250)
    ds = zarrow.Dataset(path)
    queries = [pl.col("day") > 10**9, (pl.col("day") > 10**9) & (pl.col("score") >= 0.0)]
    for predicate in queries:
        # Twice: the second scan runs the plan the first made.
        for _ in range(2):
            assert zarrow.scan(ds).filter(predicate).select("day").collect().height == 0
    day = zarr.open_array(str(path / "day"), mode="r+")
    day[1234] = 10**10
    day[2999] = 10**10 + 1
    changed = table.set_column(1, "day", pa.array(day[:], pa.int64()))
    assert changed.column("day").to_pylist()[1234] == 10**10  # read back by zarr-python
    frame = pl.from_arrow(changed)
    for predicate in queries:
        for _ in range(2):
            got = zarrow.scan(ds).filter(predicate).select("day", "score").collect()
            assert got.equals(frame.filter(predicate).select("day", "score")), str(predicate)
            assert got.height == 2


def test_a_kept_dataset_answers_as_zarr_python_reads_after_random_rewrites(tmp_path):
    """Random in-place rewrites by zarr-python between the scans of one
    Dataset (a few values, or a whole chunk, often far outside the bounds
    zarrow's statistics recorded): each scan, and the same scan again,
    answers as Polars over the values zarr-python reads then (statistics
    gone stale never prune a chunk; those unchanged still do)."""
    import zarr

    path = tmp_path / "t.zarr"
    zarrow.write(rows(0, 3000, 5), path, chunk_len=250)
    ds = zarrow.Dataset(path)
    rng = np.random.default_rng(11)
    arrays = {name: zarr.open_array(str(path / name), mode="r+") for name in ("day", "n_genes")}
    for step in range(16):
        # Another writer changes some values of one column.
        target = arrays[("day", "n_genes")[int(rng.integers(2))]]
        if rng.random() < 0.5:
            for at in rng.integers(0, 3000, int(rng.integers(1, 4))):
                target[int(at)] = int(rng.integers(-(10**6), 10**6))
        else:
            chunk = int(rng.integers(0, 12))
            target[chunk * 250 : (chunk + 1) * 250] = rng.integers(-(10**6), 10**6, 250)
        frame = pl.DataFrame(
            {"day": arrays["day"][:].astype(np.int64), "n_genes": arrays["n_genes"][:].astype(np.int32)}
        )
        low = int(rng.integers(-(10**6), 10**6))
        some = int(frame["n_genes"][int(rng.integers(3000))])
        predicates = [
            pl.col("day") > low,
            pl.col("n_genes") < low,
            pl.col("day").is_between(low, low + 5000),
            pl.col("n_genes") == some,
            pl.col("day") > 10**9,
        ]
        for predicate in predicates:
            want = frame.filter(predicate)
            for _ in range(2):
                got = zarrow.scan(ds).filter(predicate).select("day", "n_genes").collect()
                assert got.equals(want), (step, str(predicate))
