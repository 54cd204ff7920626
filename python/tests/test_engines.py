"""Zarr in the lazy engines: a Polars scan (`zarrow.scan`), a datafusion-python
table (`zarrow.table`, `zarrow.register`) and a pyarrow Dataset for DuckDB and
`pl.scan_pyarrow_dataset` (`zarrow.dataset`).

Expectations: anndata's `read_elem` (the obs table, its categoricals and nullable
columns), the same query run by Polars or pyarrow on that independent table, and
the requests a counting proxy sees (which arrays' chunks a query fetches).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import anndata
import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zarr

import zarrow
from conftest import REPO, STORES
from remote_servers import FaultProxy, http_server

ANNDATA = REPO / "testdata" / "conventions" / "stores" / "anndata_v3.zarr"
OBS = ANNDATA / "obs"


def anndata_obs() -> pl.DataFrame:
    """The obs table as anndata reads it, index as a column, in Polars."""
    df = anndata.io.read_elem(zarr.open_group(str(ANNDATA), mode="r")["obs"])
    index = zarr.open_group(str(OBS), mode="r").attrs["_index"]
    return pl.from_pandas(df.reset_index(names=index), nan_to_null=False)


def values(series: pl.Series) -> list:
    """Values for comparison: categoricals and enums as their strings."""
    if series.dtype in (pl.Categorical,) or isinstance(series.dtype, pl.Enum):
        series = series.cast(pl.String)
    return series.to_list()


def same_frames(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Equal columns, values (NaN equal to NaN, nulls where nulls are) and
    order; categoricals compared by their strings."""
    from polars.testing import assert_series_equal

    assert got.columns == want.columns
    for name in want.columns:
        assert_series_equal(pl.Series(name, values(got[name])), pl.Series(name, values(want[name])))


# ------------------------------------------------------------------- Polars


def test_scan_reads_what_anndata_reads():
    want = anndata_obs()
    got = zarrow.scan(OBS).collect()
    assert sorted(got.columns) == sorted(want.columns)
    same_frames(got.select(want.columns), want)
    # Categoricals keep their categories; nullable columns their nulls.
    for name in want.columns:
        if want[name].dtype == pl.Categorical:
            assert got[name].dtype == pl.Categorical, name
        if want[name].null_count():
            assert got[name].null_count() == want[name].null_count(), name


@pytest.mark.parametrize(
    "query",
    [
        lambda lf: lf.filter(pl.col("n_genes") > 1000).select("cell_type", "n_genes"),
        lambda lf: lf.filter(pl.col("cell_type") == "B").group_by("batch").agg(pl.len(), pl.col("n_umis").mean()),
        lambda lf: lf.head(7).filter(pl.col("n_genes") > 1000),  # the first 7 rows, then filtered
        lambda lf: lf.filter(pl.col("is_doublet").is_null() | pl.col("n_genes").is_between(500, 2500)).head(3),
        lambda lf: lf.select("cell_id").tail(2),
    ],
)
def test_scan_queries_equal_polars_over_anndata(query):
    want = query(anndata_obs().lazy()).collect()
    got = query(zarrow.scan(OBS)).collect()
    if "batch" in want.columns and "len" in want.columns:  # group_by: any order
        want, got = want.sort("batch"), got.sort("batch")
    same_frames(got, want)


def test_scan_of_an_array():
    lf = zarrow.scan(STORES / "v2_string_zstd.zarr")
    assert lf.collect_schema().dtypes() == [pl.String]
    want = np.asarray(zarr.open_array(str(STORES / "v2_string_zstd.zarr"), mode="r")[:]).tolist()
    assert lf.collect().to_series().to_list() == want


# ------------------------------------------------------- datafusion-python


def test_datafusion_python_table_equals_anndata():
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("obs", zarrow.table(OBS))
    got = ctx.sql(
        "SELECT cell_type, count(*) AS n, sum(n_genes) AS g FROM obs WHERE n_umis > 100 "
        "GROUP BY cell_type ORDER BY cell_type"
    ).to_arrow_table()
    want = (
        anndata_obs()
        .filter(pl.col("n_umis") > 100)
        .group_by(pl.col("cell_type").cast(pl.String))
        .agg(pl.len().alias("n"), pl.col("n_genes").sum().alias("g"))
        .sort("cell_type", nulls_last=True)
    )
    assert got.column("cell_type").cast(pa.string()).to_pylist() == want["cell_type"].to_list()
    assert got.column("n").to_pylist() == want["n"].to_list()
    assert got.column("g").to_pylist() == want["g"].to_list()


def test_datafusion_python_create_external_table():
    from datafusion import SessionContext

    ctx = SessionContext()
    zarrow.register(ctx)
    ctx.sql(f"CREATE EXTERNAL TABLE obs STORED AS ZARR LOCATION '{OBS}' OPTIONS ('columns' 'cell_id,n_genes')")
    got = ctx.sql("SELECT cell_id, n_genes FROM obs ORDER BY n_genes DESC, cell_id LIMIT 5").to_arrow_table()
    want = anndata_obs().select("cell_id", "n_genes").sort(["n_genes", "cell_id"], descending=[True, False]).head(5)
    assert got.column("cell_id").to_pylist() == want["cell_id"].to_list()
    assert got.column("n_genes").to_pylist() == want["n_genes"].to_list()


def test_datafusion_python_major_version_mismatch_is_a_clear_error(monkeypatch):
    import importlib.metadata

    from datafusion import SessionContext

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "54.1.0" if name == "datafusion" else real(name))
    with pytest.raises(Exception, match=r"DataFusion 55\.\d+\.\d+.*datafusion-python is 54\.1\.0"):
        SessionContext().register_table("obs", zarrow.table(OBS))
    with pytest.raises(Exception, match="54.1.0"):
        zarrow.register(SessionContext())


# -------------------------------------------------------- pyarrow Dataset


def test_duckdb_over_dataset_applies_its_filter_exactly():
    ds = zarrow.dataset(OBS)  # noqa: F841 (DuckDB finds it by name)
    got = duckdb.sql(
        "SELECT cell_type, count(*) AS n FROM ds WHERE n_genes > 1000 GROUP BY cell_type ORDER BY cell_type"
    ).fetchall()
    want = (
        anndata_obs()
        .filter(pl.col("n_genes") > 1000)
        .group_by(pl.col("cell_type").cast(pl.String))
        .agg(pl.len())
        .sort("cell_type", nulls_last=True)
    )
    assert got == list(want.iter_rows())


def test_dataset_protocol_and_polars_scan_pyarrow_dataset():
    want = anndata_obs()
    ds = zarrow.dataset(OBS)
    assert ds.count_rows() == want.height
    assert set(ds.schema.names) == set(want.columns)
    t = ds.to_table(columns=["cell_id", "n_genes"], filter=pc.field("n_genes") > 1000)
    expected = want.filter(pl.col("n_genes") > 1000).select("cell_id", "n_genes")
    assert t.column_names == ["cell_id", "n_genes"]
    assert t.column("cell_id").to_pylist() == expected["cell_id"].to_list()
    assert ds.count_rows(filter=pc.field("n_genes") > 1000) == expected.height
    assert ds.head(3, columns=["cell_id"]).column("cell_id").to_pylist() == want["cell_id"].head(3).to_list()
    lazy = pl.scan_pyarrow_dataset(ds).filter(pl.col("n_genes") > 1000).select("cell_id")
    assert lazy.collect()["cell_id"].to_list() == expected["cell_id"].to_list()


# ------------------------------------------ what each engine fetches (HTTP)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A group of three columns, 100 rows in chunks of 10, served over HTTP
    through a proxy that records every request."""
    root = tmp_path_factory.mktemp("served")
    rng = np.random.default_rng(7)
    table = pa.table(
        {
            "s": pa.array([f"s{v}" for v in rng.integers(0, 5, 100)]),
            "i": pa.array(rng.integers(-50, 50, 100), pa.int64()),
            "f": pa.array(rng.random(100)),
        }
    )
    zarrow.write(table, root / "t.zarr", chunk_len=10)
    with http_server(root) as web:
        proxy = FaultProxy(web)
        with proxy.serve() as url:
            yield f"{url}/t.zarr", proxy, table


def chunks_fetched(proxy: FaultProxy) -> dict[str, set[str]]:
    """Per array, the chunk keys fetched since the proxy was last cleared."""
    fetched: dict[str, set[str]] = {}
    for method, path, _ in proxy.requests:
        match = re.search(r"/t\.zarr/([^/]+)/(c/.+)$", path)
        if method == "GET" and match:
            fetched.setdefault(match.group(1), set()).add(match.group(2))
    return fetched


@contextlib.contextmanager
def counting(proxy: FaultProxy):
    proxy.requests.clear()
    fetched: dict[str, set[str]] = {}
    yield fetched
    fetched.update(chunks_fetched(proxy))


def test_each_engine_fetches_only_what_the_query_needs(served):
    url, proxy, table = served
    with counting(proxy) as fetched:
        schema = zarrow.scan(url).collect_schema()
    assert schema.names() == ["s", "i", "f"] and fetched == {}
    with counting(proxy) as fetched:
        got = zarrow.scan(url).select("s").collect()
    assert got["s"].to_list() == table.column("s").to_pylist()
    assert set(fetched) == {"s"}
    with counting(proxy) as fetched:
        got = zarrow.scan(url).head(10).collect()
    assert got["i"].to_list() == table.column("i").to_pylist()[:10]
    assert fetched == {"s": {"c/0"}, "i": {"c/0"}, "f": {"c/0"}}

    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(url))
    with counting(proxy) as fetched:
        got = ctx.sql("SELECT * FROM t LIMIT 10").to_arrow_table()
    assert got.column("f").to_pylist() == table.column("f").to_pylist()[:10]
    assert fetched == {"s": {"c/0"}, "i": {"c/0"}, "f": {"c/0"}}

    ds = zarrow.dataset(url)  # noqa: F841
    with counting(proxy) as fetched:
        rows = duckdb.sql("SELECT s, count(*) FROM ds WHERE i > 0 GROUP BY s ORDER BY s").fetchall()
    kept = table.filter(pc.field("i") > 0).group_by("s").aggregate([("s", "count")]).sort_by("s")
    assert rows == list(zip(kept.column("s").to_pylist(), kept.column("s_count").to_pylist()))
    assert set(fetched) == {"s", "i"}


# ------------------------------------------------------------------ errors


def corrupt_store(tmp_path: Path) -> Path:
    """A copy of a string store whose first chunk is garbage."""
    import shutil

    store = tmp_path / "corrupt.zarr"
    shutil.copytree(STORES / "v2_string_zstd.zarr", store)
    chunk = store / "0"  # Zarr v2: the first chunk's key
    chunk.write_bytes(b"\x28\xb5\x2f\xfd garbage, not a zstd frame")
    return store


def test_a_corrupt_store_raises_zarrows_error_in_every_engine(tmp_path):
    store = corrupt_store(tmp_path)
    with pytest.raises(Exception, match="zstd|chunk"):
        zarrow.scan(store).collect()
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(store))
    with pytest.raises(Exception, match="zstd|chunk"):
        ctx.sql("SELECT count(*) FROM t WHERE length(v2_string_zstd) > 0").collect()
    ds = zarrow.dataset(store)  # noqa: F841
    with pytest.raises(Exception, match="zstd|chunk"):
        duckdb.sql("SELECT count(*) FROM ds WHERE v2_string_zstd <> ''").fetchall()
