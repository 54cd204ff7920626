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
    # Categoricals keep their categories (an ordered one is an Enum of them,
    # in pandas' order); nullable columns their nulls.
    pandas = anndata.io.read_elem(zarr.open_group(str(ANNDATA), mode="r")["obs"])
    for name in want.columns:
        if want[name].dtype == pl.Categorical:
            dtype = pandas[name].dtype
            expected = pl.Enum(list(dtype.categories)) if dtype.ordered else pl.Categorical
            assert got[name].dtype == expected, name
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


@pytest.mark.parametrize(
    "predicate, kept",
    [
        (pl.col("cell_type") == "B", [("cell_type", ["B"])]),
        (pl.lit("B") == pl.col("cell_type"), [("cell_type", ["B"])]),
        (pl.col("cell_type").is_in(["B", "T", "not a category"]), [("cell_type", ["B", "T", "not a category"])]),
        ((pl.col("cell_type") == "nothing") | pl.col("n_genes").is_null(), None),  # an `|`: not narrowed
        (
            (pl.col("cell_type").is_in(["B", "T"])) & (pl.col("cell_type") == "T") & (pl.col("n_genes") > 0),
            [("cell_type", ["T"])],
        ),
        (pl.col("cell_type") == "not a category", [("cell_type", ["not a category"])]),
        # An ordered categorical (an Enum: Polars casts the list to it first).
        (pl.col("stage").is_in(["early", "late"]), [("stage", ["early", "late"])]),
        (pl.col("stage") == "mid", [("stage", ["mid"])]),
    ],
)
def test_scan_compares_categories_once_and_filters_exactly(predicate, kept, monkeypatch):
    """The result is the filter over anndata's frame, pushed into zarrow's
    DataFusion scan (no plain read); where a scan is not pushed (a long
    table), its read is narrowed by the categories the filter allows (the
    prefilter's `keep`)."""
    opened = []
    real = zarrow._open

    def spy(*args, **kwargs):
        opened.append(kwargs.get("keep"))
        return real(*args, **kwargs)

    monkeypatch.setattr(zarrow, "_open", spy)
    want = anndata_obs().filter(predicate)
    lf = zarrow.scan(OBS)
    opened.clear()  # the scan's schema
    got = lf.filter(predicate).collect()
    same_frames(got.select(want.columns), want)
    # Pushed, but for an `|` with a categorical: read and filtered as before.
    assert opened == ([] if kept is not None else [None])
    schema = zarrow.scan(OBS).collect_schema()
    assert zarrow._polars._kept_categories(predicate, schema) == kept


def test_the_categorical_prefilter_keeps_exactly_the_rows_with_those_categories():
    """What the scan's prefilter hands Polars: every row whose categories are
    among those listed (nulls never are), in order."""
    want = anndata_obs().filter(pl.col("cell_type").cast(pl.String).is_in(["B", "T"]))
    reader = zarrow._open(OBS, ["cell_id", "cell_type"], keep=[("cell_type", ["B", "T", "absent"])])
    got = reader.to_polars()
    assert got["cell_id"].to_list() == want["cell_id"].to_list()
    assert values(got["cell_type"]) == values(want["cell_type"])
    with pytest.raises(zarrow.ZarrowError, match="not a dictionary"):
        zarrow._open(OBS, ["cell_id"], keep=[("cell_id", ["x"])])


@pytest.mark.parametrize("n_categories", [3, 300, 40_000])
def test_the_prefilter_reads_codes_of_each_width_and_their_nulls(tmp_path, n_categories):
    """anndata stores 3 categories' codes as int8, 300 as int16, 40,000 as
    int32; missing values (code -1) are never kept. The kept rows are the
    ones pandas' filter keeps, over 1,000 rows (more than 64, and not a
    multiple of 64)."""
    import pandas as pd

    rng = np.random.default_rng(n_categories)
    names = [f"c{i}" for i in range(n_categories)]
    picked = rng.integers(-1, min(n_categories, 500), 1000)
    cats = pd.Categorical.from_codes(picked, categories=names)
    obs = pd.DataFrame({"kind": cats, "n": np.arange(1000)}, index=[f"r{i}" for i in range(1000)])
    anndata.AnnData(obs=obs).write_zarr(tmp_path / "a.zarr")
    wanted = [names[1], names[-1], names[min(n_categories, 500) - 1], "absent"]
    codes = zarr.open_group(str(tmp_path / "a.zarr" / "obs"), mode="r")["kind"]["codes"]
    assert codes.dtype == {3: np.int8, 300: np.int16, 40_000: np.int32}[n_categories]
    reader = zarrow._open(tmp_path / "a.zarr" / "obs", ["n", "kind"], keep=[("kind", wanted)])
    got = reader.to_polars()
    assert got["n"].to_list() == obs["n"][obs["kind"].isin(wanted)].tolist()


def test_the_prefilter_never_keeps_a_missing_code_whatever_its_bits_name(tmp_path):
    """int8 codes into 300 categories (a store anndata would give int16
    codes; zarr-python writes it as asked): a missing value's code, -1, has
    the bits of 255, and category 255 exists. Wanting it keeps no missing row."""
    n = 1000
    codes = np.random.default_rng(3).integers(-1, 128, n).astype(np.int8)
    group = zarr.open_group(str(tmp_path / "b.zarr"), mode="w", zarr_format=2)
    group.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index",
                        "column-order": ["kind"]})
    index = group.create_array("_index", shape=(n,), dtype=str, chunks=(300,))
    index[:] = np.array([f"r{i}" for i in range(n)])
    index.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})
    kind = group.create_group("kind")
    kind.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0", "ordered": False})
    categories = kind.create_array("categories", shape=(300,), dtype=str, chunks=(300,))
    categories[:] = np.array([f"c{i}" for i in range(300)])
    categories.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})
    stored = kind.create_array("codes", shape=(n,), dtype=np.int8, chunks=(300,))
    stored[:] = codes
    stored.attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
    want = anndata.io.read_elem(zarr.open_group(str(tmp_path / "b.zarr"), mode="r"))
    assert want["kind"].isna().sum() > 0
    wanted = ["c255", "c1"]
    got = zarrow._open(tmp_path / "b.zarr", ["_index", "kind"], keep=[("kind", wanted)]).to_polars()
    assert got["_index"].to_list() == want.index[want["kind"].isin(wanted)].tolist()


def test_the_prefilter_gathers_the_kept_rows_of_small_batches():
    """Read in batches of 4 rows, the kept rows of several batches cross as one
    batch, growing: the first as soon as it has a row, each later one once it
    holds as many rows as crossed before, up to 4 (the last may hold fewer),
    with their nulls and categories: the rows anndata reads, in order."""
    want = anndata_obs().filter(pl.col("cell_type").cast(pl.String).is_in(["B", "T"]))
    columns = ["cell_id", "cell_type", "batch", "n_umis", "pct_mito"]
    reader = zarrow._open(OBS, columns, batch_size=4, keep=[("cell_type", ["B", "T"])])
    frames = [pl.DataFrame(batch) for batch in iter(reader._next_stream, None)]
    heights = [frame.height for frame in frames]
    assert len(frames) > 2 and heights[0] >= 1
    assert all(h >= min(4, sum(heights[:i])) for i, h in enumerate(heights[:-1]) if i), heights
    got = pl.concat(frames)
    same_frames(got, want.select(columns))
    # Without categories to keep, `gather` grows the reader's own batches the
    # same way (chunk-aligned ones when no batch size is given).
    reader = zarrow._open(OBS, columns, batch_size=1, gather=8)
    heights = [pl.DataFrame(batch).height for batch in iter(reader._next_stream, None)]
    assert heights[:4] == [1, 1, 2, 4] and sum(heights) == anndata_obs().height, heights
    assert max(heights) == 8 and reader.total_rows == anndata_obs().height


def test_long_batches_cross_as_the_reader_made_them(tmp_path):
    """Gathering is for short batches: the reader's own batches (chunks of
    100,000 rows split at its 65,536), each at least a quarter of the batch
    size asked for (100,000, Polars' own), cross as they are, not copied into
    larger ones; the rows are the table's, in order."""
    n = 300_000
    table = pa.table({"v": np.arange(n, dtype=np.int64)})
    path = tmp_path / "t.zarr"
    zarrow.write(table, path, chunk_len=100_000)
    own = [pl.DataFrame(b).height for b in iter(zarrow._open(path)._next_stream, None)]
    assert own == [65_536, 34_464] * 3
    reader = zarrow._open(path, gather=100_000)
    frames = [pl.DataFrame(b) for b in iter(reader._next_stream, None)]
    assert [f.height for f in frames] == own
    assert pl.concat(frames)["v"].to_list() == list(range(n))


def test_an_ordered_categorical_is_an_enum_ordered_as_pandas_orders_it(tmp_path):
    """anndata's ordered categorical arrives as ``pl.Enum`` of its categories in
    the scan's schema, its frames and ``Reader.to_polars``: sorting and order
    comparisons follow the categories' order, as pandas' do (a Categorical
    would sort "hi" < "lo" < "mid"). An unordered one stays Categorical."""
    import pandas as pd

    order = ["lo", "mid", "hi"]
    levels = pd.Categorical(["mid", "hi", "lo", None, "hi", "lo", "mid"], categories=order, ordered=True)
    kinds = pd.Categorical(["b", "a", "b", "a", "b", "a", "b"])
    # A second ordered column, named as a Polars pattern would be.
    columns = {"level": levels, "kind": kinds, "n": np.arange(7), "^l.*$": levels}
    obs = pd.DataFrame(columns, index=[f"r{i}" for i in range(7)])
    anndata.AnnData(obs=obs).write_zarr(tmp_path / "a.zarr")
    path = tmp_path / "a.zarr" / "obs"

    lf = zarrow.scan(path)
    assert lf.collect_schema()["level"] == pl.Enum(order)
    assert lf.collect_schema()["kind"] == pl.Categorical
    got = lf.collect()
    assert got["level"].dtype == pl.Enum(order)
    assert got["level"].to_list() == [None if pd.isna(v) else v for v in obs["level"]]
    by_level = lf.sort("level", "n", nulls_last=True).collect()["n"].to_list()
    assert by_level == obs.sort_values(["level", "n"], na_position="last")["n"].tolist()
    below = lf.filter(pl.col("level") < "hi").collect()["n"].to_list()
    assert below == obs[obs["level"] < "hi"]["n"].tolist()
    # With the categorical prefilter too (== is evaluated on the categories).
    assert lf.filter(pl.col("level") == "mid").collect()["n"].to_list() == obs[obs["level"] == "mid"]["n"].tolist()

    assert got["^l.*$"].dtype == pl.Enum(order) and got["n"].dtype == pl.Int64

    eager = zarrow.read(path).to_polars()
    assert eager["level"].dtype == pl.Enum(order)
    assert eager["kind"].dtype == pl.Categorical
    assert eager.sort("level", "n", nulls_last=True)["n"].to_list() == by_level
    # A read of no row types it the same (the categories are read as such).
    assert zarrow.read(path, rows=(3, 3)).to_polars()["level"].dtype == pl.Enum(order)
    assert zarrow.scan(path).head(0).collect()["level"].dtype == pl.Enum(order)

    # Categories an Enum cannot hold (one twice) are zarrow's error.
    zarr.open_group(str(path), mode="r+")["level"]["categories"][:] = np.array(["lo", "hi", "hi"], dtype=object)
    with pytest.raises(zarrow.ZarrowError, match='"hi" twice'):
        zarrow.scan(path)
    with pytest.raises(zarrow.ZarrowError, match='"hi" twice'):
        zarrow.read(path).to_polars()
    # pyarrow takes the dictionary as it is: only Polars' Enum needs them distinct.
    assert pa.table(zarrow.read(path)).num_rows == 7


def test_reader_to_polars_is_the_eager_frame():
    want = anndata_obs()
    reader = zarrow.read(OBS)
    got = reader.to_polars()
    assert isinstance(got, pl.DataFrame)
    same_frames(got.select(want.columns), want)
    assert got["cell_type"].dtype == pl.Categorical
    with pytest.raises(zarrow.ZarrowError, match="consumed"):
        reader.to_polars()


@pytest.mark.parametrize("store", ["v2_string_2d.zarr", "v3_int32_transpose.zarr"])
def test_scan_of_an_nd_array_is_its_elements_in_c_order(store):
    want = np.asarray(zarr.open_array(str(STORES / store), mode="r")[:]).ravel().tolist()
    lf = zarrow.scan(STORES / store)
    name = lf.collect_schema().names()[0]
    assert lf.collect()[name].to_list() == want
    assert lf.head(4).collect()[name].to_list() == want[:4]
    kept = [v for v in want[:7] if v != want[0]]
    assert lf.head(7).filter(pl.col(name) != want[0]).collect()[name].to_list() == kept


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


def test_datafusion_python_filters_call_the_functions_the_session_has_now():
    """A pushed filter's functions cross the FFI by name: built-ins, a Python
    UDF registered after the table, and a UDF that replaces a built-in's name
    all evaluate as the session planned them (the scan evaluates them itself)."""
    from datafusion import SessionContext, udf

    ctx = SessionContext()
    ctx.register_table("obs", zarrow.table(OBS))
    obs = anndata_obs()

    def ids(sql: str) -> list:
        return sorted(ctx.sql(sql).to_arrow_table().column("cell_id").to_pylist())

    def want(expr: pl.Expr) -> list:
        return sorted(obs.filter(expr)["cell_id"].to_list())

    assert ids("SELECT cell_id FROM obs WHERE abs(n_genes - 500) < 100") == want((pl.col("n_genes") - 500).abs() < 100)
    ctx.register_udf(udf(lambda a: pc.multiply(a, 3), [pa.int64()], pa.int64(), "immutable", name="triple"))
    assert ids("SELECT cell_id FROM obs WHERE triple(n_genes) > 1500") == want(pl.col("n_genes") * 3 > 1500)
    # A UDF under a built-in's name: the session's, not DataFusion's `abs`.
    ctx.register_udf(udf(lambda a: pc.negate(a), [pa.int64()], pa.int64(), "immutable", name="abs"))
    assert ids("SELECT cell_id FROM obs WHERE abs(n_genes) < -500") == want(pl.col("n_genes") > 500)


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
    with pytest.raises(zarrow.ZarrowError, match=r"DataFusion 55\.\d+\.\d+.*datafusion-python is 54\.1\.0"):
        SessionContext().register_table("obs", zarrow.table(OBS))
    with pytest.raises(zarrow.ZarrowError, match=r"DataFusion 55\.\d+\.\d+.*54\.1\.0"):
        zarrow.register(SessionContext())


def test_scan_over_an_obstore_store_filters_by_category():
    """A category filter over an obstore store (the async reader) equals the
    same filter over anndata's frame; so does the prefilter's own stream."""
    from obstore.store import LocalStore

    want = anndata_obs()
    store = LocalStore(prefix=str(OBS))
    for predicate in (pl.col("cell_type") == "B", pl.col("cell_type").is_in(["B", "T"])):
        got = zarrow.scan(store).filter(predicate).select("cell_id", "n_genes").collect()
        assert got.equals(want.filter(predicate).select("cell_id", "n_genes")), predicate
    kept = zarrow._open(store, ["cell_id", "cell_type"], keep=[("cell_type", ["B"])]).to_polars()
    assert kept["cell_id"].to_list() == want.filter(pl.col("cell_type") == "B")["cell_id"].to_list()


STREAM_AFTER_ITS_END = """
import sys, pyarrow as pa, zarrow
from obstore.store import LocalStore
store = LocalStore(prefix=sys.argv[1])
for name, reader in [
    ("read", lambda: zarrow.read(store)),
    ("prefilter", lambda: zarrow._open(store, ["cell_type"], keep=[("cell_type", ["B"])])),
    ("sql", lambda: zarrow.sql("SELECT cell_type FROM t", {"t": store})),
]:
    stream = pa.RecordBatchReader.from_stream(reader())
    rows = stream.read_all().num_rows
    for _ in range(2):
        try:
            stream.read_next_batch()
            raise SystemExit(name + ": a batch after the end")
        except StopIteration:
            pass
    print(name, rows)
"""


def test_a_stream_pulled_again_after_its_end_stays_ended():
    """pyarrow pulls an ended stream again (`read_next_batch` after
    `read_all`): the async reader, the prefilter and a query answer end again
    (it aborted the interpreter: a stream polled after its end). In a child
    process, so that a crash fails this test alone."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", STREAM_AFTER_ITS_END, str(OBS)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = anndata_obs().height
    kept = anndata_obs().filter(pl.col("cell_type") == "B").height
    assert run.stdout.split() == ["read", str(rows), "prefilter", str(kept), "sql", str(rows)]


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


def test_dataset_opened_with_columns_yields_those_columns_unfiltered():
    """A dataset opened with `columns` yields those columns in every scan,
    with a filter or without (it used to read every column when a scan asked
    for all of the dataset's)."""
    want = anndata_obs().select("n_genes", "cell_id")
    ds = zarrow.dataset(OBS, columns=["n_genes", "cell_id"])
    assert ds.schema.names == ["n_genes", "cell_id"]
    table = ds.to_table()
    assert table.column_names == ["n_genes", "cell_id"]
    assert pl.from_arrow(table).equals(want)
    assert ds.head(3).column_names == ["n_genes", "cell_id"]
    assert duckdb.sql("SELECT * FROM ds LIMIT 3").fetchall() == list(want.head(3).iter_rows())
    assert duckdb.sql("SELECT count(*) FROM ds").fetchall() == [(want.height,)]
    assert pl.scan_pyarrow_dataset(ds).collect().equals(want)


@pytest.mark.parametrize("store", ["v2_string_2d.zarr", "v3_int32_transpose.zarr"])
def test_dataset_of_an_nd_array_is_its_elements_in_c_order(store):
    want = np.asarray(zarr.open_array(str(STORES / store), mode="r")[:]).ravel().tolist()
    ds = zarrow.dataset(STORES / store)
    (name,) = ds.schema.names
    assert ds.count_rows() == len(want)
    assert ds.to_table().column(name).to_pylist() == want
    assert ds.head(3).column(name).to_pylist() == want[:3]
    counts = duckdb.sql(f'SELECT count(*), count(DISTINCT "{name}") FROM ds').fetchall()
    assert counts == [(len(want), len(set(want)))]


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
    with counting(proxy) as fetched:
        got = ctx.sql("SELECT i FROM t WHERE f > 0.5").to_arrow_table()
    # (In no particular order: DataFusion's partitions answer as they finish.)
    assert sorted(got.column("i").to_pylist()) == sorted(table.filter(pc.field("f") > 0.5).column("i").to_pylist())
    assert set(fetched) == {"i", "f"}

    ds = zarrow.dataset(url)  # noqa: F841
    with counting(proxy) as fetched:
        rows = duckdb.sql("SELECT s, count(*) FROM ds WHERE i > 0 GROUP BY s ORDER BY s").fetchall()
    kept = table.filter(pc.field("i") > 0).group_by("s").aggregate([("s", "count")]).sort_by("s")
    assert rows == list(zip(kept.column("s").to_pylist(), kept.column("s_count").to_pylist()))
    assert set(fetched) == {"s", "i"}
    with counting(proxy) as fetched:
        head = ds.head(10)
    assert head.column("f").to_pylist() == table.column("f").to_pylist()[:10]
    assert fetched == {"s": {"c/0"}, "i": {"c/0"}, "f": {"c/0"}}
    # A scan of no column counts the rows the metadata gives (DuckDB's
    # count(*) asks for one column, and reads it).
    with counting(proxy) as fetched:
        assert ds.to_table(columns=[]).num_rows == table.num_rows
        assert ds.head(7, columns=[]).num_rows == 7
        assert ds.count_rows() == table.num_rows
    assert fetched == {}


@pytest.fixture(scope="module")
def served_long(tmp_path_factory):
    """Two columns, 4,000 rows in chunks of 10 (400 chunks each), served
    over HTTP through a proxy that records every request."""
    root = tmp_path_factory.mktemp("served_long")
    rng = np.random.default_rng(11)
    table = pa.table({"i": pa.array(rng.integers(-50, 50, 4_000), pa.int64()), "f": pa.array(rng.random(4_000))})
    zarrow.write(table, root / "t.zarr", chunk_len=10)
    with http_server(root) as web:
        proxy = FaultProxy(web)
        with proxy.serve() as url:
            yield f"{url}/t.zarr", proxy, pl.from_arrow(table)


def test_a_scan_that_stops_early_reads_little_more_than_it_uses(served_long):
    """`filter(...).head(3)`: Polars stops pulling once it has 3 rows; the scan
    hands on its first rows at once (batches then grow), so only the chunks
    read ahead are fetched beyond the first, not the 400 of each column (it
    read them all: Polars' batch-size hint, 100,000 rows, made the first batch)."""
    url, proxy, table = served_long
    query = lambda lf: lf.filter(pl.col("i") > 0).head(3)  # noqa: E731
    with counting(proxy) as fetched:
        got = query(zarrow.scan(url)).collect()
    assert got.equals(query(table.lazy()).collect())
    assert 1 <= len(fetched["i"]) <= 100, len(fetched["i"])


@pytest.fixture(scope="module")
def served_sorted(tmp_path_factory):
    """Two columns, 100 rows in chunks of 10 (`t` = 0..99 sorted, `v` random),
    served over HTTP through a proxy that records every request."""
    root = tmp_path_factory.mktemp("served_sorted")
    rng = np.random.default_rng(8)
    table = pa.table({"t": pa.array(np.arange(100), pa.int64()), "v": pa.array(rng.random(100))})
    zarrow.write(table, root / "t.zarr", chunk_len=10)
    with http_server(root) as web:
        proxy = FaultProxy(web)
        with proxy.serve() as url:
            yield f"{url}/t.zarr", proxy, pl.from_arrow(table)


@pytest.mark.parametrize(
    "predicate, chunks, bounds",
    [
        # Rows 35..51 lie in chunks 3, 4 and 5; the conjunct on `v` narrows nothing.
        ((pl.col("t") >= 35) & (pl.col("t") < 52) & (pl.col("v") > 0.5), {"c/3", "c/4", "c/5"}, (35, 51, 0.5)),
        (pl.col("t").is_between(95, 1000), {"c/9"}, (95, 1000, None)),
        (pl.col("t") == 1000, set(), (1000, 1000, None)),  # no match: no chunk of `v` at all
    ],
)
def test_scan_reads_only_the_rows_a_sorted_column_filter_matches(served_sorted, predicate, chunks, bounds):
    url, proxy, table = served_sorted
    with counting(proxy) as fetched:
        got = zarrow.scan(url, sorted=["t"]).filter(predicate).select("v", "t").collect()
    assert got.equals(table.filter(predicate).select("v", "t"))
    assert fetched.get("v", set()) == chunks
    # An `|` with another column narrows no row range; the chunk statistics
    # (zarrow.write records them) still skip the chunks where neither side can
    # hold a row, as each chunk's bounds (computed here) say.
    either = predicate | (pl.col("v") < 0.05)
    with counting(proxy) as fetched:
        got = zarrow.scan(url, sorted=["t"]).filter(either).collect()
    assert got.equals(table.filter(either))
    lo, hi, v_above = bounds
    per_chunk = table.group_by(pl.int_range(pl.len()).alias("chunk") // 10).agg(
        t0=pl.col("t").min(), t1=pl.col("t").max(), v0=pl.col("v").min(), v1=pl.col("v").max()
    )
    can = {
        f"c/{c['chunk']}"
        for c in per_chunk.iter_rows(named=True)
        if c["v0"] < 0.05 or (c["t0"] <= hi and c["t1"] >= lo and (v_above is None or c["v1"] > v_above))
    }
    assert fetched.get("v", set()) == can


def test_datafusion_python_reads_only_the_rows_a_sorted_column_filter_matches(served_sorted):
    """The same pruning through datafusion-python's table (`sorted`, as
    `CREATE EXTERNAL TABLE`'s option)."""
    from datafusion import SessionContext

    url, proxy, table = served_sorted
    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(url, sorted=["t"]))
    with counting(proxy) as fetched:
        got = ctx.sql("SELECT t, v FROM t WHERE t >= 35 AND t < 52 ORDER BY t").to_arrow_table()
    want = table.filter((pl.col("t") >= 35) & (pl.col("t") < 52))
    assert got.column("v").to_pylist() == want["v"].to_list()
    assert fetched["v"] == {"c/3", "c/4", "c/5"}


def test_scan_narrows_by_an_xarray_dimension_coordinate(tmp_path):
    import xarray as xr

    rng = np.random.default_rng(9)
    time = np.arange(50, dtype="int64") * 10
    xr.Dataset(
        {"temp": ("time", rng.random(50)), "site": ("time", [f"s{k % 4}" for k in range(50)])},
        coords={"time": time},
    ).to_zarr(tmp_path / "x.zarr", zarr_format=3, encoding={"temp": {"chunks": (5,)}, "time": {"chunks": (5,)}})
    want = xr.open_zarr(tmp_path / "x.zarr").to_dataframe().reset_index()
    predicate = (pl.col("time") > 120) & (pl.col("time") <= 200) & (pl.col("site") != "s1")
    got = zarrow.scan(tmp_path / "x.zarr").filter(predicate).select("time", "temp", "site").collect()
    expected = pl.from_pandas(want).filter(predicate).select("time", "temp", "site")
    assert got["time"].to_list() == expected["time"].to_list()
    assert got["temp"].to_list() == expected["temp"].to_list()
    assert got["site"].to_list() == expected["site"].to_list()


@pytest.mark.parametrize("string_type, dtype", [("utf8-view", pl.String), ("utf8", pl.String), ("large-utf8", pl.String)])
def test_scan_every_string_type_equals_zarr_python(string_type, dtype):
    store = STORES / "v3_fixed_utf32.zarr"
    lf = zarrow.scan(store, string_type=string_type)
    assert lf.collect_schema().dtypes() == [dtype]
    want = np.asarray(zarr.open_array(str(store), mode="r")[:]).tolist()
    assert lf.collect().to_series().to_list() == want
    assert lf.filter(pl.col(lf.collect_schema().names()[0]) == want[1]).collect().height == want.count(want[1])


@pytest.fixture(scope="module")
def big_strings(tmp_path_factory):
    """2,000,000 strings in one chunk: one decode long enough to time."""
    path = tmp_path_factory.mktemp("big") / "big.zarr"
    n = 2_000_000
    zarrow.write(pa.table({"s": pa.array([f"value-{i}" for i in range(n)])}), path, chunk_len=n)
    return path


def run_scan(path: Path) -> int:
    return zarrow.scan(path).select(pl.col("s").str.len_bytes().sum()).collect().item()


def run_datafusion(path: Path) -> int:
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(path))
    return ctx.sql("SELECT sum(length(s)) FROM t").to_arrow_table().column(0)[0].as_py()


def run_duckdb(path: Path) -> int:
    ds = zarrow.dataset(path)  # noqa: F841
    return duckdb.sql("SELECT sum(strlen(s)) FROM ds").fetchall()[0][0]


@pytest.mark.parametrize("engine", [run_scan, run_datafusion, run_duckdb])
def test_each_engine_releases_the_gil_while_it_decodes(big_strings, engine):
    """A second Python thread keeps running while an engine decodes: its longest
    stall is a small part of the query's time (were the GIL held through the
    decode, the stall would be the decode's whole length)."""
    import threading
    import time

    worst, done = [0.0], threading.Event()

    def count():
        last = time.perf_counter()
        while not done.is_set():
            now = time.perf_counter()
            worst[0], last = max(worst[0], now - last), now

    thread = threading.Thread(target=count)
    thread.start()
    try:
        start = time.perf_counter()
        total = engine(big_strings)
        took = time.perf_counter() - start
    finally:
        done.set()
        thread.join()
    assert total == sum(len(f"value-{i}") for i in range(2_000_000))
    assert took > 0.05, f"the query took {took:.3f} s: too short to tell"
    assert worst[0] < took / 2, f"the other thread stalled {worst[0]:.3f} s of {took:.3f} s"


# ------------------------------------------------------------------ errors


def corrupt_store(tmp_path: Path) -> Path:
    """A copy of a string store whose first chunk is garbage."""
    import shutil

    store = tmp_path / "corrupt.zarr"
    shutil.copytree(STORES / "v2_string_zstd.zarr", store)
    chunk = store / "0"  # Zarr v2: the first chunk's key
    chunk.write_bytes(b"\x28\xb5\x2f\xfd garbage, not a zstd frame")
    return store


ZARROWS_MESSAGE = "chunk 0: zstd decompression failed"


@pytest.mark.parametrize("over", ["path", "obstore"])
def test_a_corrupt_store_raises_zarrows_error_in_every_engine(tmp_path, over):
    """Each engine's query over a store whose first chunk is corrupt raises
    with zarrow's message (the column exists: the query gets as far as the
    chunk), through a local path and an obstore store (the async reader)."""
    from datafusion import SessionContext
    from obstore.store import LocalStore

    path = corrupt_store(tmp_path)
    store = path if over == "path" else LocalStore(prefix=str(path))
    (column,) = zarrow.scan(store).collect_schema().names()
    with pytest.raises(zarrow.ZarrowError, match=ZARROWS_MESSAGE):
        zarrow.scan(store).collect()
    with pytest.raises(Exception, match=ZARROWS_MESSAGE):
        zarrow.read(store).to_polars()
    with pytest.raises(Exception, match=ZARROWS_MESSAGE):
        pa.table(zarrow.read(store))
    ctx = SessionContext()
    ctx.register_table("t", zarrow.table(store))
    with pytest.raises(Exception, match=ZARROWS_MESSAGE):
        ctx.sql(f'SELECT count(*) FROM t WHERE length("{column}") > 0').collect()
    ds = zarrow.dataset(store)  # noqa: F841
    with pytest.raises(Exception, match=ZARROWS_MESSAGE):
        duckdb.sql(f"SELECT count(*) FROM ds WHERE \"{column}\" <> ''").fetchall()


def test_datafusion_reads_the_other_columns_only_where_rows_match(served):
    """Late materialization over HTTP, counted at the proxy: the filter's
    columns are fetched in the chunks their statistics cannot exclude, `s`
    only in the chunks holding a matching row, and no more GETs than those
    plus one (the issue's bound); the rows are pyarrow's."""
    url, proxy, table = served
    k = table.column("i")[37].as_py()
    query = f"SELECT s FROM t WHERE i = {k} AND f < 0.5"
    with counting(proxy) as fetched:
        got = pa.table(zarrow.sql(query, {"t": url}))
    mask = pc.and_(pc.equal(table.column("i"), k), pc.less(table.column("f"), 0.5))
    want = table.filter(mask).column("s").to_pylist()
    assert sorted(got.column("s").to_pylist()) == sorted(want)
    i, f = table.column("i").to_numpy(), table.column("f").to_numpy()
    # Chunks of 10: those whose bounds admit both conjuncts, and those
    # holding a match.
    unexcluded = {c for c in range(10) if i[c * 10:(c + 1) * 10].min() <= k <= i[c * 10:(c + 1) * 10].max()
                  and f[c * 10:(c + 1) * 10].min() < 0.5}
    holding = {r // 10 for r in np.flatnonzero(mask.to_numpy(zero_copy_only=False))}
    assert holding and holding <= unexcluded
    assert fetched.get("s", set()) == {f"c/{c}" for c in holding}
    gets = sum(len(v) for v in fetched.values())
    assert gets <= 2 * len(unexcluded) + len(holding) + 1, fetched
