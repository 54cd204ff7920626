"""pyarrow table -> zarrow.write -> the same values read by zarr-python (or, for
zarrs' own encoding, by zarrs through zarrista)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import zarr

import zarrow


def table(n: int = 1000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "name": [f"cell-{i}-{'é' * (i % 5)}" for i in range(n)],
        "blob": [bytes(rng.integers(0, 256, i % 9, dtype=np.uint8)) for i in range(n)],
        "count": pa.array(rng.integers(-1000, 1000, n), pa.int64()),
        "score": pa.array(rng.random(n), pa.float64()),
        "small": pa.array(rng.integers(0, 100, n), pa.uint8()),
        "flag": pa.array(rng.random(n) < 0.5),
    })


def zarr_python_reads(path) -> dict[str, list]:
    group = zarr.open_group(str(path), mode="r")
    out = {}
    for name, arr in group.arrays():
        values = np.asarray(arr[:]).tolist()
        out[name] = [bytes(v) if isinstance(v, (bytes, np.bytes_)) else v for v in values]
    return out


@pytest.mark.parametrize("zarr_format,compressor,chunk_len,shard_len", [
    (3, "zstd", None, None),
    (3, "gzip", 97, None),
    (3, "blosc", 128, None),
    (3, "none", 64, 256),
    (2, "zstd", 100, None),
    (2, "gzip", None, None),
    (2, "none", 333, None),
])
def test_round_trip_through_zarr_python(tmp_path, zarr_format, compressor, chunk_len, shard_len):
    t = table()
    path = tmp_path / "out.zarr"
    rows = zarrow.write(t, path, zarr_format=zarr_format, compressor=compressor,
                        chunk_len=chunk_len, shard_len=shard_len)
    assert rows == t.num_rows
    got = zarr_python_reads(path)
    assert sorted(got) == sorted(t.column_names)
    for name in t.column_names:
        assert got[name] == t.column(name).to_pylist(), name
    assert zarr.open_group(str(path), mode="r").metadata.zarr_format == zarr_format


def test_zarrs_vlen_read_by_zarrs(tmp_path):
    zarrista = pytest.importorskip("zarrista")
    t = table(500)
    path = tmp_path / "out.zarr"
    zarrow.write(t.select(["name"]), path, encoding="zarrs-vlen", chunk_len=60)
    arr = zarrista.Array.open(zarrista.store.FilesystemStore(str(path)), "/name")
    got = arr.retrieve_array_subset((slice(None),)).to_numpy().tolist()
    assert got == t.column("name").to_pylist()


def test_inputs_with_the_stream_or_array_protocol(tmp_path):
    t = table(200)
    # A record batch (__arrow_c_array__).
    zarrow.write(t.to_batches()[0], tmp_path / "batch.zarr")
    # A Polars DataFrame (__arrow_c_stream__).
    zarrow.write(pl.from_arrow(t.select(["name", "count"])), tmp_path / "polars.zarr")
    # A stream of many batches, written as they come.
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=17))
    zarrow.write(reader, tmp_path / "stream.zarr", chunk_len=50)
    for name, cols in [("batch", t.column_names), ("polars", ["name", "count"]), ("stream", t.column_names)]:
        got = zarr_python_reads(tmp_path / f"{name}.zarr")
        for col in cols:
            assert got[col] == t.column(col).to_pylist(), (name, col)
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        zarrow.write([1, 2, 3], tmp_path / "list.zarr")


def test_zarrow_to_zarrow(tmp_path):
    # A zarrow.Reader is itself a stream: convert a store by streaming it through.
    src = tmp_path / "a.zarr"
    t = table(300)
    zarrow.write(t, src, chunk_len=40)
    zarrow.write(zarrow.read(src, batch_size=25), tmp_path / "b.zarr", zarr_format=2)
    got = zarr_python_reads(tmp_path / "b.zarr")
    for col in t.column_names:
        assert got[col] == t.column(col).to_pylist(), col


def test_nulls(tmp_path):
    t = pa.table({"s": pa.array(["a", None, "c"]), "i": pa.array([1, None, 3], pa.int32())})
    with pytest.raises(zarrow.ZarrowError, match="null"):
        zarrow.write(t, tmp_path / "refused.zarr")
    zarrow.write(t, tmp_path / "filled.zarr", nulls="fill")
    got = zarr_python_reads(tmp_path / "filled.zarr")
    assert got["s"] == ["a", "", "c"]
    assert got["i"] == [1, 0, 3]


def test_overwrite(tmp_path):
    path = tmp_path / "out.zarr"
    zarrow.write(table(10), path)
    with pytest.raises(zarrow.ZarrowError, match="exists"):
        zarrow.write(table(10), path)
    zarrow.write(table(20), path, overwrite=True)
    assert len(zarr_python_reads(path)["name"]) == 20
    # As `zarrow convert`: only a Zarr store is replaced, and a failed write leaves
    # the old store whole.
    other = tmp_path / "not_zarr"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(zarrow.ZarrowError, match="not a Zarr store"):
        zarrow.write(table(10), other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"
    bad = pa.table({"name": pa.array(["a", None])})
    with pytest.raises(zarrow.ZarrowError, match="null"):
        zarrow.write(bad, path, overwrite=True)
    assert len(zarr_python_reads(path)["name"]) == 20


def test_bad_options(tmp_path):
    for kwargs, word in [({"encoding": "utf16"}, "encoding"), ({"compressor": "brotli"}, "compressor"),
                         ({"nulls": "drop"}, "null"), ({"layout": "h5"}, "layout")]:
        with pytest.raises(zarrow.ZarrowError, match=word):
            zarrow.write(table(3), tmp_path / "x.zarr", **kwargs)


def test_two_threads_writing_one_path_leave_one_whole_store(tmp_path):
    # Each write is whole or not at all, even from two threads of one process at
    # once (the GIL is released while they write): the store read back by
    # zarr-python is one of the two tables, never a mix.
    import threading

    import zarr

    path = tmp_path / "same.zarr"
    tables = [pa.table({"s": pa.array([f"{k}-{i}" for i in range(20000)])}) for k in ("a", "b")]
    errors = []

    def write(t):
        try:
            zarrow.write(t, path, chunk_len=1000, overwrite=True)
        except zarrow.ZarrowError as e:  # the other thread's store replaced first
            errors.append(e)

    threads = [threading.Thread(target=write, args=(t,)) for t in tables]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) < 2, errors
    got = zarr.open_group(str(path), mode="r")["s"][:].tolist()
    assert got in [t.column("s").to_pylist() for t in tables]
