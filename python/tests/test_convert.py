"""zarrow.convert runs `zarrow convert`'s own code: Zarr to Parquet / IPC and back,
checked with zarr-python and pyarrow."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zarr

import zarrow
from conftest import STORES

OBS = STORES / "obs.zarr"


def zarr_obs() -> dict[str, list]:
    group = zarr.open_group(str(OBS), mode="r")
    return {name: np.asarray(arr[:]).tolist() for name, arr in group.arrays() if arr.ndim == 1}


def test_zarr_to_parquet_and_back(tmp_path):
    want = zarr_obs()
    with pytest.warns(zarrow.ZarrowWarning, match="X_umap"):
        got = zarrow.convert(OBS, tmp_path / "obs.parquet", compression="zstd(3)")
    assert got == {"rows": len(want["cell_type"])}
    table = pq.read_table(tmp_path / "obs.parquet")
    for name, values in want.items():
        assert table.column(name).to_pylist() == values, name
    # ... and the Parquet file back to Zarr v2, read by zarr-python.
    got = zarrow.convert(tmp_path / "obs.parquet", tmp_path / "back.zarr", zarr_format=2, chunk_len=100)
    assert got == {"rows": len(want["cell_type"])}
    back = zarr.open_group(str(tmp_path / "back.zarr"), mode="r")
    assert back.metadata.zarr_format == 2
    for name, values in want.items():
        assert np.asarray(back[name][:]).tolist() == values, name


def test_selection_and_string_type(tmp_path):
    want = zarr_obs()
    zarrow.convert(OBS, tmp_path / "part.arrow", columns=["cell_type"], rows=(10, 20),
                   string_type="utf8-view")
    with pa.OSFile(str(tmp_path / "part.arrow"), "rb") as f:
        table = pa.ipc.open_file(f).read_all()
    assert table.column_names == ["cell_type"]
    assert table.column(0).type == pa.string_view()
    assert table.column(0).to_pylist() == want["cell_type"][10:20]


def test_existing_output_and_bad_options(tmp_path):
    out = tmp_path / "obs.parquet"
    zarrow.convert(OBS, out, columns=["n_genes"])
    with pytest.raises(zarrow.ZarrowError, match="exists"):
        zarrow.convert(OBS, out, columns=["n_genes"])
    zarrow.convert(OBS, out, columns=["n_genes"], overwrite=True)
    with pytest.raises(TypeError, match="unexpected option"):
        zarrow.convert(OBS, out, overwite=True)
    with pytest.raises(zarrow.ZarrowError, match="output format"):
        zarrow.convert(OBS, tmp_path / "obs.txt")
    with pytest.raises(zarrow.ZarrowError, match="compressor"):
        zarrow.convert(out, tmp_path / "x.zarr", compressor="brotli")
    assert not (tmp_path / "x.zarr").exists()  # nothing partial left behind


def test_categorical_values_equal_anndatas(tmp_path):
    # anndata wrote the store; anndata reads the expected values.
    anndata = pytest.importorskip("anndata")
    store = STORES.parent / "conventions" / "stores" / "anndata_v3.zarr"
    obs = anndata.io.read_elem(zarr.open_group(str(store), mode="r")["obs"])
    out = tmp_path / "obs.arrow"
    zarrow.convert(store / "obs", out, categorical_values=True, string_type="utf8-view")
    table = pa.ipc.open_file(out).read_all()
    categorical = [name for name in obs.columns if str(obs[name].dtype) == "category"]
    assert categorical
    for name in categorical:
        want = [None if v != v else v for v in obs[name].astype(object)]
        assert not pa.types.is_dictionary(table.schema.field(name).type), name
        assert table.column(name).to_pylist() == want, name
        if obs[name].cat.categories.dtype == object:
            assert table.schema.field(name).type == pa.string_view(), name


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_datetime64_of_every_unit_is_a_parquet_timestamp_for_pyarrow(tmp_path, unit):
    """zarr-python writes datetime64[unit] (with NaT); pyarrow reads zarrow's
    Parquet as a timestamp holding the same instants (seconds are stored in
    milliseconds, as pyarrow itself writes them: Parquet has no seconds)."""
    import numpy as np
    import zarr

    values = np.array(["1970-01-01T00:00:00", "2020-02-29T12:34:56", "NaT", "2262-04-11T00:00:00"],
                      dtype=f"datetime64[{unit}]")
    if unit == "ns":
        values[-1] = np.datetime64("2262-04-11T00:00:00", "ns")
    array = zarr.create_array(str(tmp_path / "t.zarr"), shape=values.shape, dtype=values.dtype, chunks=(2,))
    array[:] = values
    zarrow.convert(tmp_path / "t.zarr", tmp_path / "t.parquet")
    column = pq.read_table(tmp_path / "t.parquet").column(0)
    assert pa.types.is_timestamp(column.type), column.type
    got = column.to_numpy(zero_copy_only=False)
    assert np.array_equal(got.astype(f"datetime64[{unit}]"), values, equal_nan=True)


def test_long_table_of_a_time_variable_with_nat(tmp_path):
    """A 2-D numpy.datetime64 variable holding NaT (zarr-python writes it, with
    dimension names and coordinates, as xarray lays a dataset out); `long=True`
    reads it as xarray's to_dataframe does, NaT a null, where it used to fail
    on a non-nullable field."""
    import xarray as xr

    times = np.array([["2020-01-01", "NaT", "2020-01-03"], ["NaT", "2021-05-05", "2022-12-31"]],
                     dtype="datetime64[ns]")
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=3)
    group.create_array("y", shape=(2,), dtype="int64", dimension_names=["y"])[:] = [10, 20]
    group.create_array("x", shape=(3,), dtype="int64", dimension_names=["x"])[:] = [1, 2, 3]
    group.create_array("t", shape=(2, 3), dtype="datetime64[ns]", dimension_names=["y", "x"])[:] = times
    zarr.consolidate_metadata(str(tmp_path / "g.zarr"))
    zarrow.convert(tmp_path / "g.zarr", tmp_path / "g.parquet", long=True)
    got = pq.read_table(tmp_path / "g.parquet")
    want = xr.open_zarr(tmp_path / "g.zarr").to_dataframe().reset_index()
    assert got.column("y").to_pylist() == want["y"].tolist()
    assert got.column("x").to_pylist() == want["x"].tolist()
    column = got.column("t")
    assert column.null_count == 2
    assert np.array_equal(column.to_numpy(zero_copy_only=False).astype("datetime64[ns]"),
                          want["t"].to_numpy(), equal_nan=True)
