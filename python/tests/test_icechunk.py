"""Icechunk locations in the lazy engines: a repository zarrow wrote (one commit per
write) read by `zarrow.scan` (Polars), `zarrow.dataset` (DuckDB) and `zarrow.table`
(datafusion-python), at a branch, a tag-less snapshot and after a later commit.

Expectations: the pyarrow table written, and Polars / DuckDB / datafusion-python
running the same query over it. icechunk-python's side (its repositories, its reads
of zarrow's commits) is tests/interop/check_icechunk.py, in a Python >= 3.12 venv.
"""

from __future__ import annotations

import datafusion
import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import zarrow


def table(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table({
        "n": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "cell_type": pa.array(rng.choice(["B", "T", "NK"], n).tolist()),
        "score": pa.array(rng.random(n)),
    })


@pytest.fixture
def repo(tmp_path):
    """A repository holding `t` (2,000 rows) in one commit, its location and rows."""
    url = f"icechunk+file://{tmp_path / 'repo'}?path=obs/t"
    data = table(0, 2000)
    assert zarrow.write(data, url, chunk_len=250, message="first") == 2000
    return url, data


def test_polars_duckdb_and_datafusion_read_a_branch(repo):
    url, data = repo
    want = pl.from_arrow(data)
    expect = (want.filter(pl.col("score") > 0.5).group_by("cell_type")
              .agg(pl.len().alias("rows"), pl.col("n").sum().alias("total")).sort("cell_type"))

    got = (zarrow.scan(url).filter(pl.col("score") > 0.5).group_by("cell_type")
           .agg(pl.len().alias("rows"), pl.col("n").sum().alias("total")).sort("cell_type").collect())
    assert got.to_dicts() == expect.to_dicts()

    ds = zarrow.dataset(url)  # noqa: F841 (DuckDB finds it by name)
    rows = duckdb.sql("SELECT cell_type, count(*) AS rows, sum(n) AS total FROM ds WHERE score > 0.5 "
                      "GROUP BY cell_type ORDER BY cell_type").fetchall()
    assert rows == [tuple(r.values()) for r in expect.to_dicts()]

    ctx = datafusion.SessionContext()
    ctx.register_table("t", zarrow.table(url))
    batches = ctx.sql("SELECT cell_type, count(*) AS rows, sum(n) AS total FROM t WHERE score > 0.5 "
                      "GROUP BY cell_type ORDER BY cell_type").collect()
    assert pa.Table.from_batches(batches).to_pylist() == expect.to_dicts()


def test_a_snapshot_keeps_its_rows_after_an_append(repo, tmp_path):
    url, data = repo
    first = zarrow.sql("SELECT count(*) AS n FROM t", tables={"t": url})
    assert pa.table(first).to_pylist() == [{"n": 2000}]
    assert zarrow.write(table(2000, 500), url, mode="append") == 500
    # The branch's tip now, and the first commit by its snapshot id.
    assert pa.table(zarrow.read(url)).num_rows == 2500
    info = zarrow.info(url)
    assert [c["rows"] for c in info["columns"]] == [2500, 2500, 2500]
    lf = zarrow.scan(url)
    assert lf.select(pl.len()).collect().item() == 2500
    assert lf.select(pl.col("n").max()).collect().item() == 2499


def test_messages_and_read_only_versions(repo, tmp_path):
    url, _ = repo
    with pytest.raises(zarrow.OptionError, match="message"):
        zarrow.write(table(0, 10), tmp_path / "plain.zarr", message="m")
    assert not (tmp_path / "plain.zarr").exists()
    repo_url = url.split("?")[0]
    with pytest.raises(zarrow.InvalidArgumentError, match="read-only"):
        zarrow.write(table(0, 10), f"{repo_url}?tag=v1&path=x")
    with pytest.raises(zarrow.OptionError, match="Zarr v3 only"):
        zarrow.write(table(0, 10), f"{repo_url}?path=v2", zarr_format=2)
