"""zarrow.sql: DataFusion over Zarr tables, answers checked against pyarrow computing
the same query over what zarr-python reads (tables and helpers of check_sql.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import zarrow
from check_sql import OBS, STRING_TYPES, write_lineage, write_weights, zarr_table


@pytest.mark.parametrize("string_type", sorted(STRING_TYPES))
def test_group_by_equals_pyarrow(string_type):
    obs = zarr_table(OBS, ["cell_type", "n_genes"])
    want = (
        obs.group_by("cell_type")
        .aggregate([("cell_type", "count"), ("n_genes", "sum")])
        .sort_by("cell_type")
    )
    reader = zarrow.sql(
        "SELECT cell_type, count(*) AS n, sum(n_genes) AS g FROM obs GROUP BY cell_type ORDER BY cell_type",
        {"obs": OBS},
        string_type=string_type,
    )
    assert reader.total_rows is None
    got = pa.table(reader)
    assert got.schema.field("cell_type").type == STRING_TYPES[string_type]
    assert got.column("cell_type").cast(pa.string()).to_pylist() == want.column("cell_type").to_pylist()
    assert got.column("n").to_pylist() == want.column("cell_type_count").to_pylist()
    assert got.column("g").to_pylist() == want.column("n_genes_sum").to_pylist()


def test_filter_and_projection_of_a_string_column():
    obs = zarr_table(OBS, ["cell_type", "n_genes"])
    want = obs.filter(pc.greater(obs.column("n_genes"), 1000)).column("cell_type").to_pylist()
    got = pa.table(zarrow.sql("SELECT cell_type FROM obs WHERE n_genes > 1000", {"obs": OBS}))
    assert got.column_names == ["cell_type"]
    assert got.column("cell_type").to_pylist() == want


def test_join_of_two_zarr_tables_and_parquet_into_polars(tmp_path):
    obs = zarr_table(OBS, ["cell_type"])
    cell_types = obs.column("cell_type").to_pylist()
    lineage = write_lineage(tmp_path / "lineage.zarr", cell_types)
    weights = write_weights(tmp_path / "weights.parquet", cell_types)
    want = (
        obs.join(lineage, "cell_type")
        .join(weights, "cell_type")
        .group_by("lineage")
        .aggregate([("weight", "sum")])
        .sort_by("lineage")
    )
    df = pl.DataFrame(
        zarrow.sql(
            "SELECT l.lineage, sum(w.weight) AS w FROM obs o "
            "JOIN lineage l ON o.cell_type = l.cell_type "
            "JOIN weights w ON o.cell_type = w.cell_type GROUP BY l.lineage ORDER BY l.lineage",
            {"obs": OBS, "lineage": tmp_path / "lineage.zarr", "weights": tmp_path / "weights.parquet"},
        )
    )
    assert df["lineage"].to_list() == want.column("lineage").to_pylist()
    assert df["w"].to_list() == pytest.approx(want.column("weight_sum").to_pylist())


def test_limit_gives_the_first_rows():
    want = zarr_table(OBS, ["cell_type"]).column("cell_type").to_pylist()[:5]
    got = pa.table(zarrow.sql("SELECT cell_type FROM obs LIMIT 5", {"obs": OBS}, partitions=1))
    assert got.column("cell_type").to_pylist() == want


def test_children_that_are_not_columns_are_named():
    with pytest.warns(zarrow.ZarrowWarning, match="obs: .*X_umap"):
        reader = zarrow.sql("SELECT count(*) AS n FROM obs", {"obs": OBS})
    assert any("X_umap" in s for s in reader.skipped)
    assert pa.table(reader).column("n").to_pylist() == [len(zarr_table(OBS, ["cell_type"]))]


def test_a_parquet_only_query(tmp_path):
    table = pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]})
    pq.write_table(table, tmp_path / "t.parquet")
    got = pa.table(zarrow.sql("SELECT k, sum(v) AS v FROM t GROUP BY k ORDER BY k", {"t": tmp_path / "t.parquet"}))
    assert got.to_pydict() == {"k": ["a", "b"], "v": [4, 2]}


@pytest.mark.parametrize(
    "query, tables, message",
    [
        ("SELECT * FROM nowhere", {}, "nowhere"),
        ("SELEC 1", {}, "SELEC"),
        ("SELECT 1", {"t": "/nonexistent/t.zarr"}, "/nonexistent/t.zarr"),
    ],
)
def test_errors_raise_zarrow_error(query, tables, message):
    with pytest.raises(zarrow.ZarrowError, match=message):
        zarrow.sql(query, tables)


def test_unknown_string_type_is_refused():
    with pytest.raises(zarrow.ZarrowError, match="string_type"):
        zarrow.sql("SELECT 1", {"obs": OBS}, string_type="utf16")


def test_categorical_values_equal_anndatas(tmp_path):
    # anndata wrote the store; anndata reads the expected values.
    anndata = pytest.importorskip("anndata")
    import zarr

    store = Path(__file__).resolve().parents[2] / "testdata" / "conventions" / "stores" / "anndata_v3.zarr"
    obs = anndata.io.read_elem(zarr.open_group(str(store), mode="r")["obs"])
    want = [None if v != v else v for v in obs["cell_type"].astype(object)]
    read = pa.table(zarrow.read(store / "obs", columns=["cell_type"], categorical_values=True,
                                string_type="utf8-view"))
    assert read.schema.field("cell_type").type == pa.string_view()
    assert read.column("cell_type").to_pylist() == want
    counts = {}
    for v in want:
        counts[v] = counts.get(v, 0) + 1
    query = "SELECT cell_type, count(*) AS n FROM obs GROUP BY cell_type"
    # SQL's default: the categories' values, as views, which is also how DataFusion
    # reads the same column from Parquet (pyarrow writes it dictionary-encoded).
    pq.write_table(pa.table({"cell_type": pa.array(want, pa.string())}), tmp_path / "obs.parquet")
    from_parquet = pa.table(zarrow.sql(query, {"obs": tmp_path / "obs.parquet"}, partitions=1))
    for options in ({}, {"categorical_values": True, "string_type": "utf8-view"}):
        got = pa.table(zarrow.sql(query, {"obs": store / "obs"}, partitions=1, **options))
        assert got.schema.field("cell_type").type == pa.string_view(), options
        assert got.schema.field("cell_type").type == from_parquet.schema.field("cell_type").type
        assert dict(zip(got.column("cell_type").to_pylist(), got.column("n").to_pylist())) == counts
    # categorical_values=False: anndata's categories as a dictionary.
    got = pa.table(zarrow.sql(query, {"obs": store / "obs"}, partitions=1, categorical_values=False))
    assert pa.types.is_dictionary(got.schema.field("cell_type").type), got.schema
    assert got.schema.field("cell_type").type.value_type == pa.string()
    assert dict(zip(got.column("cell_type").to_pylist(), got.column("n").to_pylist())) == counts
