"""Chunk statistics (zarrow.stats): what zarr-python, anndata and xarray see of a
store that has them, and what filtered queries answer over them, against
pyarrow's answers on the same data."""

import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zarr

import zarrow


def table(n=20_000):
    rng = np.random.default_rng(7)
    sample = np.repeat([f"S{i:04}" for i in range(40)], n // 40)
    day = np.arange(n) // 37
    score = rng.random(n)
    score[::997] = np.nan
    return pa.table({
        "sample": pa.array(sample),
        "day": pa.array(day, pa.int64()),
        "n_genes": pa.array(rng.integers(0, 5000, n), pa.int32()),
        "score": pa.array(score),
    })


def answer(query, path):
    return pa.table(zarrow.sql(query, {"t": path}))


def test_zarr_python_xarray_and_anndata_see_no_extra_member(tmp_path):
    t = table()
    with_stats, without = tmp_path / "with.zarr", tmp_path / "without.zarr"
    zarrow.write(t, with_stats, chunk_len=1000)
    zarrow.write(t, without, chunk_len=1000, stats=False)
    assert (with_stats / "sample" / "zarrow.stats").is_file()
    assert not (without / "sample" / "zarrow.stats").exists()
    members = lambda p: sorted(name for name, _ in zarr.open_group(str(p), mode="r").members())
    assert members(with_stats) == members(without) == sorted(t.column_names)
    xr = pytest.importorskip("xarray")
    a, b = xr.open_zarr(with_stats), xr.open_zarr(without)
    assert sorted(a.variables) == sorted(b.variables)
    assert a.identical(b)
    ad = pytest.importorskip("anndata")
    frame = pa.table({"cell_type": pa.array(["B cell", "T cell"] * 500).dictionary_encode(),
                      "n": pa.array(range(1000))})
    zarrow.write(frame, tmp_path / "a.zarr", layout="anndata", chunk_len=100)
    zarrow.write(frame, tmp_path / "b.zarr", layout="anndata", chunk_len=100, stats=False)
    read = lambda p: ad.io.read_elem(zarr.open_group(str(p), mode="r"))
    assert read(tmp_path / "a.zarr").equals(read(tmp_path / "b.zarr"))


@pytest.mark.parametrize("where", [
    "sample = 'S0017'",
    "sample IN ('S0003', 'S0031')",
    "day BETWEEN 100 AND 110",
    "n_genes = 4321 AND score < 0.5",
    "score > 0.99",
    "score <> 0.5",
    "score IS NULL",
    "NOT (day < 500)",
])
def test_filtered_queries_answer_as_pyarrow(tmp_path, where):
    t = table()
    path = tmp_path / "t.zarr"
    zarrow.write(t, path, chunk_len=1000)
    got = answer(f"SELECT sample, day, n_genes, score FROM t WHERE {where} ORDER BY day, n_genes, score", path)
    # The same query without statistics, and pyarrow's filter of the data.
    ignored = pa.table(zarrow.sql(f"SELECT sample, day, n_genes, score FROM t WHERE {where} ORDER BY day, n_genes, score",
                                  {"t": path}, use_stats=False))
    assert got.to_pandas().equals(ignored.to_pandas())  # NaN equal to NaN
    import duckdb  # an independent SQL engine over the same Arrow table
    expected = duckdb.sql(
        f"SELECT sample, day, n_genes, score FROM t WHERE {where} ORDER BY day, n_genes, score"
    ).fetch_arrow_table()
    assert got.num_rows == expected.num_rows
    assert got.column("day").to_pylist() == expected.column("day").to_pylist()


def test_nans_and_fill_values_of_a_cf_float_column(tmp_path):
    """A float array zarr-python wrote, with NaNs and a CF _FillValue (which
    zarrow, as xarray, reads as NaN), given statistics by build_stats: x > k,
    x != k and IS NULL answer as pyarrow does on the decoded values."""
    path = tmp_path / "cf.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = np.arange(4000, dtype="f8") / 10
    x[5::411] = np.nan
    x[7::613] = -9999.0
    array = group.create_array("x", shape=x.shape, chunks=(500,), dtype="f8", dimension_names=["row"])
    array[:] = x
    array.attrs["_FillValue"] = -9999.0
    assert zarrow.build_stats(path) == {"arrays": 1}
    decoded = pa.table(zarrow.read(path)).column("x")
    assert decoded.null_count == 0
    assert pc.sum(pc.is_nan(decoded)).as_py() == np.count_nonzero(np.isnan(x) | (x == -9999.0))
    nan = pc.is_nan(decoded)
    for where, mask in [
        # In SQL (DataFusion, DuckDB), NaN is greater than every number.
        ("x > 350", pc.or_(pc.greater(decoded, 350), nan)),
        ("x <> 5", pc.not_equal(decoded, 5)),
        ("x IS NULL", pc.is_null(decoded)),
        ("x IS NOT NULL", pc.is_valid(decoded)),
    ]:
        n = answer(f"SELECT count(*) AS n FROM t WHERE {where}", path).column("n")[0].as_py()
        expected = pc.sum(pc.fill_null(mask, False)).as_py() or 0
        assert n == expected, where


def test_a_chunk_rewritten_by_zarr_python_is_read(tmp_path):
    t = table()
    path = tmp_path / "t.zarr"
    zarrow.write(t, path, chunk_len=1000)
    day = zarr.open_array(str(path / "day"), mode="r+")
    # Chunk 3 (rows 3000..4000) now holds day 999999: its statistics say
    # otherwise, and are stale.
    day[3000:4000] = 999_999
    n = answer("SELECT count(*) AS n FROM t WHERE day = 999999", path).column("n")[0].as_py()
    assert n == 1000
    info = zarrow.info(path / "day")
    assert info["stats_stale"] == [3]


def test_build_stats_on_an_anndata_obs_prunes_its_categoricals(tmp_path):
    ad = pytest.importorskip("anndata")
    import pandas as pd
    n = 6000
    obs = pd.DataFrame({
        "cell_type": pd.Categorical(np.repeat(["B cell", "NK", "T cell"], n // 3)),
        "n_genes": np.arange(n),
    }, index=[f"c{i}" for i in range(n)])
    ad.io.write_elem(zarr.open_group(str(tmp_path / "adata.zarr"), mode="w"), "obs", obs)
    path = tmp_path / "adata.zarr" / "obs"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", zarrow.ZarrowWarning)
        described = zarrow.build_stats(path)["arrays"]
    assert described >= 3  # codes, categories, n_genes, _index
    got = answer("SELECT n_genes FROM t WHERE cell_type = 'NK' ORDER BY n_genes", path)
    assert got.column("n_genes").to_pylist() == list(range(n // 3, 2 * n // 3))


def test_build_stats_refuses_a_read_only_store():
    with pytest.raises(zarrow.UnsupportedError, match="read-only"):
        zarrow.build_stats("http://127.0.0.1:9/x.zarr")


def test_datafusion_python_prunes_through_the_table_provider(tmp_path):
    """Over the FFI provider (datafusion-python), the scan fetches only the
    chunks whose statistics may match: counted in EXPLAIN ANALYZE against
    the chunks that hold the sample, computed from the data."""
    import re
    datafusion = pytest.importorskip("datafusion")
    t = table()
    path = tmp_path / "t.zarr"
    zarrow.write(t, path, chunk_len=1000)
    ctx = datafusion.SessionContext()
    ctx.register_table("t", zarrow.table(path))
    query = "SELECT n_genes FROM t WHERE sample = 'S0017'"
    got = ctx.sql(query).to_arrow_table()
    rows = np.flatnonzero(np.asarray(t.column("sample").to_pylist()) == "S0017")
    assert sorted(got.column("n_genes").to_pylist()) == sorted(t.column("n_genes").to_numpy()[rows].tolist())
    plan = "\n".join(ctx.sql("EXPLAIN ANALYZE " + query).to_arrow_table().column(1).to_pylist())
    requests = int(re.search(r"requests=(\d+)", plan).group(1))
    holding = set(rows // 1000)
    assert requests == 2 * len(holding), plan  # `sample` and `n_genes`, those chunks only


# The three ways pruning once changed an answer (issue 49), each against the
# same query without statistics and against the true count from the data.

def count(path, where, **options):
    query = f"SELECT count(*) AS n FROM t WHERE {where}"
    return pa.table(zarrow.sql(query, {"t": str(path)}, **options))["n"][0].as_py()


@pytest.mark.parametrize("values, where, true", [
    ([2, 10, 2, 10], "k = 2", 2),
    ([2, 10, 2, 10], "k > 9", 2),
    ([0.5, 10.0, 2.25, 0.5], "k > 9.5", 1),
    ([0.5, 10.0, 2.25, 0.5], "k < 1", 2),
])
def test_number_categories_prune_in_their_own_order(tmp_path, values, where, true):
    ad = pytest.importorskip("anndata")
    import pandas as pd
    obs = pd.DataFrame({"k": pd.Categorical(values)}, index=list("abcd"))
    ad.io.write_elem(zarr.open_group(str(tmp_path / "a.zarr"), mode="w"), "obs", obs)
    zarrow.build_stats(str(tmp_path / "a.zarr" / "obs"))
    path = tmp_path / "a.zarr" / "obs"
    assert count(path, where) == count(path, where, use_stats=False) == true


def test_a_metadata_only_resize_makes_the_resized_chunks_stale(tmp_path):
    g = zarr.open_group(str(tmp_path / "t.zarr"), mode="w", zarr_format=3)
    a = g.create_array("x", shape=(3,), chunks=(4,), dtype="int32", fill_value=0)
    a[:] = [5, 6, 7]
    zarrow.build_stats(str(tmp_path / "t.zarr"))
    a.resize((4,))
    path = tmp_path / "t.zarr"
    assert count(path, "x = 0") == count(path, "x = 0", use_stats=False) == 1
    # Shorter too: the rows the statistics counted are gone.
    a.resize((2,))
    assert count(path, "x = 7") == 0
    assert count(path, "x >= 5") == 2


def test_a_negative_nan_is_never_pruned_away(tmp_path):
    x = np.array([1.0, 2.0, -np.nan])
    assert np.signbit(x[2])
    path = tmp_path / "n.zarr"
    zarrow.write(pa.table({"x": x}), path)
    for where in ["x < 0", "x > 5", "x = 1.0", "x <> 1.0"]:
        expected = count(path, where, use_stats=False)
        assert count(path, where) == expected, where
