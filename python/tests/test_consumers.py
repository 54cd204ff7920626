"""The stream as pyarrow, Polars and DuckDB consume it; selections; info."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import zarr

import zarrow
from conftest import STORES

OBS = STORES / "obs.zarr"


def zarr_obs() -> dict[str, list]:
    group = zarr.open_group(str(OBS), mode="r")
    return {name: np.asarray(arr[:]).tolist() for name, arr in group.arrays() if arr.ndim == 1}


def test_polars_reads_the_stream():
    want = zarr_obs()
    df = pl.DataFrame(zarrow.read(OBS))
    assert sorted(df.columns) == sorted(want)
    for name, values in want.items():
        assert df[name].to_list() == values, name
    # pl.from_arrow takes any Arrow PyCapsule stream too; Polars 2 makes it a
    # Series of structs, one field per column.
    series = pl.from_arrow(zarrow.read(OBS, columns=["cell_type", "n_genes"]))
    unnested = series.struct.unnest()
    assert unnested.columns == ["cell_type", "n_genes"]
    assert unnested["cell_type"].to_list() == want["cell_type"]


def test_duckdb_reads_the_stream():
    want = zarr_obs()
    reader = zarrow.read(OBS, columns=["cell_type"])
    rel = duckdb.from_arrow(reader)
    rows = rel.aggregate("cell_type, count(*) AS n", "cell_type").order("cell_type").fetchall()
    counts = {}
    for v in want["cell_type"]:
        counts[v] = counts.get(v, 0) + 1
    assert rows == sorted(counts.items())


def test_record_batch_reader_from_stream_streams_batches():
    want = zarr_obs()
    n = len(next(iter(want.values())))
    reader = pa.RecordBatchReader.from_stream(zarrow.read(OBS, batch_size=7))
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == n
    assert max(sizes) <= 7 and len(sizes) == -(-n // 7)


def test_iteration_yields_pyarrow_batches():
    want = zarr_obs()
    batches = list(zarrow.read(OBS, columns=["cell_type"], batch_size=10))
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert pa.Table.from_batches(batches).column("cell_type").to_pylist() == want["cell_type"]


def test_columns_and_rows_select():
    want = zarr_obs()
    names = sorted(want)[:2][::-1]
    t = pa.table(zarrow.read(OBS, columns=names, rows=(3, 17)))
    assert t.column_names == names
    for name in names:
        assert t.column(name).to_pylist() == want[name][3:17]
    t = pa.table(zarrow.read(OBS, columns=names[:1], rows=range(5, 9), limit=2))
    assert t.column(names[0]).to_pylist() == want[names[0]][5:7]


def test_string_types():
    for string_type, arrow in [("utf8", pa.string()), ("large-utf8", pa.large_string()),
                               ("utf8-view", pa.string_view())]:
        r = zarrow.read(OBS, columns=["cell_type"], string_type=string_type)
        assert r.schema.field("cell_type").type == arrow
        assert pa.table(r).column("cell_type").type == arrow


def test_schema_capsule_and_reader_properties():
    r = zarrow.read(OBS)
    schema = pa.schema(r)  # through __arrow_c_schema__
    assert schema == r.schema
    want = zarr_obs()
    assert r.total_rows == len(next(iter(want.values())))
    assert "rows" in repr(r)


def test_a_reader_is_read_once():
    r = zarrow.read(OBS)
    pa.table(r)
    with pytest.raises(zarrow.ZarrowError, match="consumed"):
        pa.table(r)


def test_an_array_store_is_one_column():
    store = STORES / "v3_string.zarr"
    arr = zarr.open_array(str(store), mode="r")
    t = pa.table(zarrow.read(store))
    assert t.column_names == ["v3_string"]
    assert t.column(0).to_pylist() == np.asarray(arr[:]).tolist()


def test_info_matches_zarr_python():
    arr = zarr.open_array(str(STORES / "v3_string_sharded.zarr"), mode="r")
    info = zarrow.info(STORES / "v3_string_sharded.zarr")
    assert info["node"] == "array"
    assert info["zarr_format"] == arr.metadata.zarr_format
    assert tuple(info["shape"]) == arr.shape
    assert info["arrow_type"] == "Utf8"
    assert "sharding_indexed" in info["codecs"]
    group = zarr.open_group(str(OBS), mode="r")
    info = zarrow.info(OBS)
    assert info["node"] == "group"
    assert sorted(c["name"] for c in info["children"]) == sorted(name for name, _ in group.members())
    one_d = sorted(name for name, a in group.arrays() if a.ndim == 1)
    assert sorted(c["name"] for c in info["columns"]) == one_d
    assert info["attributes"] == dict(group.attrs)


def test_bad_arguments_raise_zarrow_error():
    with pytest.raises(zarrow.ZarrowError, match="string_type"):
        zarrow.read(OBS, string_type="utf16")
    with pytest.raises(zarrow.ZarrowError, match="column selection"):
        zarrow.read(STORES / "v3_string.zarr", columns=["a"])
    with pytest.raises(zarrow.ZarrowError):
        zarrow.read(OBS, columns=["no_such_column"])
    with pytest.raises(zarrow.ZarrowError, match="not a Zarr array or group directory"):
        zarrow.read(STORES / "missing.zarr")
    assert issubclass(zarrow.ZarrowError, ValueError)
    assert issubclass(zarrow.ZarrowIOError, OSError) and issubclass(zarrow.ZarrowIOError, zarrow.ZarrowError)
