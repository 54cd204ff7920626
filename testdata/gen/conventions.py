#!/usr/bin/env python3
"""Golden stores for zarrow's anndata / xarray (CF) support, written by the real libraries.

    .venv/bin/python testdata/gen/conventions.py

Writes, under testdata/conventions/ (deleted and rewritten; idempotent):

  stores/<store>.zarr     anndata 0.12.19 and xarray 2026.9.0 stores on zarr-python 3.1.6,
                          Zarr v2 and v3 (and sharded v3)
  inputs/<name>.parquet   pandas/pyarrow tables for the write direction (zarrow -> Zarr)
  expected/<case>.arrow   Arrow IPC *file*: what the real library reads, as an Arrow table
  cases.json              the case list: store, node, zarrow arguments, kind, expectations

Every expected file is computed by anndata / xarray / pandas / pyarrow, never by zarrow:

  anndata dataframe  pa.Table.from_pandas(anndata.io.read_elem(group)) with the index column
                     moved first and named after the group's `_index` attribute (for an
                     unnamed index that is "_index"; its pandas-metadata `name` stays null so
                     to_pandas() gives index.name None, as anndata does)
  anndata element    one column named after the element (categorical -> dictionary, ...)
  xarray 1-D         one column per 1-D variable of xr.open_zarr(store), sorted by name,
                     decoded (or decode_cf=False for --no-cf), field metadata
                     {"dimension_names": JSON list}
  xarray --long      pa.Table.from_pandas(ds[columns].to_dataframe(dim_order=D)), the index
                     (dimension coordinate) columns first in order D (the dims of the
                     highest-rank selected variable), then the data variables sorted by name

The AnnData stores are written with anndata.io.write_elem(root, "/", adata), not
AnnData.write_zarr: write_zarr first runs strings_to_categoricals(), which turns every
string column with repeated values (also pd.StringDtype ones) into a categorical, so no
`nullable-string-array` would ever reach the disk.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import anndata as ad
import numcodecs
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
import xarray as xr
import zarr

warnings.filterwarnings("ignore")

VERSIONS = {"anndata": "0.12.19", "xarray": "2026.9.0", "zarr": "3.1.6", "numcodecs": "0.16.6",
            "pyarrow": "26.0.1", "pandas": "2.3.3"}
for _mod in (ad, xr, zarr, numcodecs, pa, pd):
    _want = VERSIONS[_mod.__name__]
    assert _mod.__version__ == _want, f"{_mod.__name__} {_mod.__version__} != pinned {_want}"

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "testdata" / "conventions"
STORES = OUT / "stores"
EXPECTED = OUT / "expected"
INPUTS = OUT / "inputs"

CASES: list[dict] = []


# ---------------------------------------------------------------- the data

def make_obs(n: int = 24) -> pd.DataFrame:
    """Every dataframe element encoding anndata 0.12 writes, deterministic."""
    i = np.arange(n)
    cell_type = np.array(["B", "NK", "T", "mono"], dtype=object)[i % 4]
    cell_type[[2, 9, 17]] = None  # -> code -1
    stage = np.array(["early", "mid", "late"], dtype=object)[(i // 2) % 3]
    stage[[5, 20]] = None
    batch = (i % 3 + 1).astype(float)
    batch[7] = np.nan
    n_genes = pd.array([int(100 + 7 * k) if k % 5 != 3 else None for k in i], dtype="Int64")
    n_umis = pd.array([int(1000 * (k + 1)) if k % 6 != 1 else None for k in i], dtype="Int32")
    is_doublet = pd.array([None if k % 7 == 4 else bool(k % 3 == 0) for k in i], dtype="boolean")
    donor_note = pd.array([None if k % 4 == 1 else f"note {k % 3}" for k in i], dtype="string")
    total = 1000.0 + 37.5 * i
    total[[4, 11]] = np.nan
    return pd.DataFrame(
        {
            "cell_type": pd.Categorical(cell_type, categories=["B", "NK", "T", "mono"]),
            "stage": pd.Categorical(stage, categories=["early", "mid", "late"], ordered=True),
            "batch": pd.Categorical(pd.array(batch, dtype="Int64")),  # int64 categories
            "n_genes": n_genes,  # nullable-integer, int64 values
            "n_umis": n_umis,  # nullable-integer, int32 values
            "is_doublet": is_doublet,  # nullable-boolean
            "donor_note": donor_note,  # nullable-string-array
            "barcode": [f"ACGT{k:04d}" for k in i],  # string-array (unique)
            "total_counts": total,  # float64 with NaN
            "pct_mito": (i % 5 / 10).astype("float32"),
            "n_counts": (i * 3).astype("int32"),
            "day": (i // 6).astype("int64"),
            "is_qc": i % 2 == 0,
        },
        index=pd.Index([f"cell_{k:03d}" for k in i], name="cell_id"),
    )


def make_var(m: int = 10) -> pd.DataFrame:
    """Unnamed index (stored as `_index`)."""
    j = np.arange(m)
    return pd.DataFrame(
        {
            "gene_symbol": [f"GENE{k}" for k in j],
            "chrom": pd.Categorical(np.array(["chr1", "chr2", "chrX"], dtype=object)[j % 3]),
            "highly_variable": j % 3 == 0,
            "means": (j / 4).astype("float32"),
            "n_cells": (j * 11).astype("int64"),
        },
        index=pd.Index([f"ENSG{k:05d}" for k in j]),
    )


def make_adata() -> ad.AnnData:
    obs, var = make_obs(), make_var()
    rng = np.random.default_rng(0)
    X = sp.random(len(obs), len(var), density=0.3, format="csr", random_state=rng, dtype=np.float32)
    a = ad.AnnData(X=X, obs=obs, var=var)
    a.obsm["X_pca"] = rng.standard_normal((len(obs), 3)).astype("float32")  # dense 2-D
    a.obsm["X_sparse"] = sp.random(len(obs), 4, density=0.5, format="csr", random_state=rng)
    a.uns["note"] = "zarrow conventions fixture"
    return a


# ---------------------------------------------------------------- anndata stores

def write_anndata(path: Path, zarr_format: int, shard: bool) -> None:
    ad.settings.zarr_write_format = zarr_format
    with ad.settings.override(allow_write_nullable_strings=True, auto_shard_zarr_v3=True if shard else None):
        root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
        ad.io.write_elem(root, "/", make_adata())
        if shard:
            # chunks of 10 rows that don't divide 24; auto_shard_zarr_v3 makes shards of them
            ad.io.write_elem(root, "obs", make_obs(), dataset_kwargs={"chunks": (10,)})
        else:
            # v2 / v3: chunks of 7 rows (24 = 7+7+7+3), so the edge chunk is partial
            ad.io.write_elem(root, "obs", make_obs(), dataset_kwargs={"chunks": (7,)})


def nan_not_null(table: pa.Table, df: pd.DataFrame) -> pa.Table:
    """pa.Table.from_pandas turns float NaN into null; a Zarr float array holds NaN, keep it."""
    for name in df.columns:
        if df[name].dtype.kind == "f":
            i = table.schema.get_field_index(str(name))
            field = table.schema.field(i)
            table = table.set_column(i, field, pa.array(df[name].to_numpy(), type=field.type, from_pandas=False))
    return table


def index_first(table: pa.Table, index_field: str, index_name: str) -> pa.Table:
    """Move pyarrow's index column first, renamed to `index_name` (the `_index` attribute)."""
    meta = json.loads(table.schema.metadata[b"pandas"])
    (old,) = meta["index_columns"]
    for col in meta["columns"]:
        if col["field_name"] == old:
            col["field_name"] = index_name
    meta["index_columns"] = [index_name]
    names = [index_name if n == old else n for n in table.column_names]
    table = table.rename_columns(names)
    order = [index_name] + [n for n in names if n != index_name]
    table = table.select(order)
    md = dict(table.schema.metadata or {})
    md[b"pandas"] = json.dumps(meta).encode()
    return table.replace_schema_metadata(md)


def anndata_frame_table(group: zarr.Group) -> pa.Table:
    df = ad.io.read_elem(group)
    table = nan_not_null(pa.Table.from_pandas(df), df)
    index_attr = group.attrs["_index"]
    index_field = json.loads(table.schema.metadata[b"pandas"])["index_columns"][0]
    return index_first(table, index_field, index_attr)


def anndata_element_table(group_or_array, name: str) -> pa.Table:
    df = pd.DataFrame({name: ad.io.read_elem(group_or_array)})
    return nan_not_null(pa.Table.from_pandas(df, preserve_index=False), df)


# ---------------------------------------------------------------- xarray stores

def ts_dataset(n: int = 20) -> xr.Dataset:
    t = pd.date_range("2020-01-01", periods=n, freq="D")
    temp = np.round(np.linspace(-5.0, 30.0, n), 2)
    temp[[3, 11]] = np.nan  # packed: -> _FillValue -32768
    flag = (np.arange(n) % 4).astype("float64")
    flag[[6, 13]] = np.nan  # int8 with _FillValue -1 (no scale): xarray gives float NaN
    ds = xr.Dataset(
        {
            "temp": ("time", temp),
            "flag": ("time", flag),
            "count": ("time", np.arange(n, dtype="int32") * 2),
            "rain": ("time", np.where(np.arange(n) % 5 == 2, np.nan, np.arange(n) / 8).astype("float32")),
            "obs_time": ("time", t + pd.to_timedelta(np.arange(n) * 3 + 1, unit="h")),
        },
        coords={"time": t},
    )
    ds["time"].encoding = {"units": "days since 2020-01-01", "calendar": "standard", "chunks": (7,)}
    ds["obs_time"].encoding = {"units": "hours since 2020-01-01 00:00:00", "calendar": "proleptic_gregorian",
                               "dtype": "int64", "chunks": (7,)}
    ds["temp"].encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 10.0, "_FillValue": -32768,
                           "chunks": (7,)}
    ds["flag"].encoding = {"dtype": "int8", "_FillValue": -1, "chunks": (7,)}
    ds["count"].encoding = {"chunks": (7,)}
    ds["rain"].encoding = {"chunks": (7,)}
    ds["temp"].attrs = {"units": "degC", "long_name": "air temperature"}
    return ds


def grid_dataset() -> xr.Dataset:
    nt, ny, nx = 5, 3, 4
    k = np.arange(nt * ny * nx, dtype="float32").reshape(nt, ny, nx)
    t2m = 270.0 + k / 2
    t2m[1, 2, 3] = np.nan
    pr = (k % 7 / 10).astype("float64")
    pr[4, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t2m.astype("float32")),
            "pr": (("time", "lat", "lon"), pr),
            "orog": (("lat", "lon"), np.arange(ny * nx, dtype="float64").reshape(ny, nx) * 10),
        },
        coords={
            "time": pd.date_range("2021-03-01", periods=nt, freq="6h"),
            "lat": np.array([-10.0, 0.0, 10.0]),
            "lon": np.array([0.0, 90.0, 180.0, 270.0], dtype="float32"),
        },
    )
    ds["time"].encoding = {"units": "hours since 2021-03-01", "calendar": "standard"}
    for v in ("t2m", "pr"):
        ds[v].encoding = {"chunks": (2, 2, 3)}  # 5x3x4 is not divisible by 2x2x3
    ds["orog"].encoding = {"chunks": (2, 3)}
    return ds


def noleap_dataset() -> xr.Dataset:
    # cftime is not installed, so write the raw day numbers with CF attributes
    return xr.Dataset(
        {"tas": ("time", np.linspace(270, 280, 6).astype("float32"))},
        coords={"time": ("time", np.arange(6, dtype="int64") * 30,
                         {"units": "days since 2000-01-01", "calendar": "noleap"})},
    )


def shard_encoding(ds: xr.Dataset) -> dict:
    """Double every chunk along the first dimension into a shard (v3 only)."""
    enc = {}
    for name, var in ds.variables.items():
        chunks = var.encoding.get("chunks") or var.shape
        shards = tuple(min(c * 2, s) if i == 0 else s for i, (c, s) in enumerate(zip(chunks, var.shape)))
        shards = tuple(-(-s // c) * c for s, c in zip(shards, chunks))  # whole inner chunks
        enc[name] = {"chunks": tuple(chunks), "shards": shards}
    return enc


def xr_1d_table(ds: xr.Dataset) -> pa.Table:
    fields, arrays = [], []
    for name in sorted(ds.variables):
        var = ds[name]
        if var.ndim != 1:
            continue
        arr = pa.array(np.asarray(var.values))
        fields.append(pa.field(name, arr.type, metadata={"dimension_names": json.dumps(list(var.dims))}))
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def long_dim_order(ds: xr.Dataset, columns: list[str] | None) -> list[str]:
    """--long row order: the dims of the highest-rank selected data variable (ties: first by
    name). xarray's own default (list(ds.dims)) follows the store listing, not stable for v3."""
    names = sorted(columns or ds.data_vars)
    best = min(names, key=lambda n: (-ds[n].ndim, n))
    dims = list(ds[best].dims)
    extra = sorted({d for n in names for d in ds[n].dims} - set(dims))
    return dims + extra


def xr_long_table(ds: xr.Dataset, columns: list[str] | None) -> pa.Table:
    sub = ds[columns] if columns else ds
    df = sub.to_dataframe(dim_order=long_dim_order(ds, columns))
    df = df[sorted(df.columns)]
    table = nan_not_null(pa.Table.from_pandas(df), df)
    index = json.loads(table.schema.metadata[b"pandas"])["index_columns"]
    # data variables sorted by name: xarray's order follows the store listing, which is not
    # stable across runs for unconsolidated v3 stores
    return table.select(index + sorted(n for n in table.column_names if n not in index))


# ---------------------------------------------------------------- inputs (write direction)

def frame_anndata() -> pd.DataFrame:
    """What --layout anndata must round-trip; no datetime (anndata 0.12 cannot write one)."""
    n = 15
    i = np.arange(n)
    lab = np.array(["alpha", "beta", "gamma"], dtype=object)[i % 3]
    lab[[1, 8]] = None
    grade = np.array(["low", "high"], dtype=object)[i % 2]
    grade[4] = None
    f = i * 0.25
    f[[2, 9]] = np.nan
    return pd.DataFrame(
        {
            "label": pd.Categorical(lab, categories=["alpha", "beta", "gamma"]),
            "grade": pd.Categorical(grade, categories=["low", "high"], ordered=True),
            "count": pd.array([None if k % 4 == 0 else int(k) for k in i], dtype="Int64"),
            "small": pd.array([None if k % 5 == 2 else int(k) for k in i], dtype="Int32"),
            "flag": pd.array([None if k % 6 == 5 else bool(k % 2) for k in i], dtype="boolean"),
            "comment": pd.array([None if k % 3 == 2 else f"c{k}" for k in i], dtype="string"),
            "name": [f"n{k}" for k in i],
            "score": f,
            "rank": i.astype("int64") * 3,
            "ok": i % 3 != 0,
        },
        index=pd.Index([f"obs{k:02d}" for k in i], name="obs_name"),
    )


def frame_plain() -> pd.DataFrame:
    """No nulls: plain `zarrow convert t.parquet out.zarr` then xr.open_zarr must match exactly."""
    n = 12
    i = np.arange(n)
    f = np.sin(i / 3)
    f[[3, 7]] = np.nan
    return pd.DataFrame(
        {
            "when": pd.date_range("2022-06-01 12:00", periods=n, freq="90min"),
            "value": f,
            "value32": (i / 4).astype("float32"),
            "n": i.astype("int64") - 5,
            "n32": i.astype("int32") * 100,
            "u8": i.astype("uint8"),
            "ok": i % 2 == 0,
            "station": [f"st-{k % 4}" for k in i],
        },
        index=pd.Index(np.arange(100, 100 + n, dtype="int64"), name="row"),
    )


def frame_nulls() -> pa.Table:
    """pyarrow-only table (no pandas metadata) with nulls in every column."""
    return pa.table(
        {
            "i64": pa.array([1, None, 3, 4, None, 6], pa.int64()),
            "f64": pa.array([0.5, None, float("nan"), 2.0, 3.0, None], pa.float64()),
            "b": pa.array([True, None, False, True, None, False], pa.bool_()),
            "s": pa.array(["a", None, "c", "", None, "f"], pa.string()),
            "t": pa.array([0, 3600_000_000, None, 7200_000_000, 1, None], pa.timestamp("us")),
        }
    )


# ---------------------------------------------------------------- output

def write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def add(case: str, kind: str, *, store: str | None = None, node: str = "", args: list[str] | None = None,
        table: pa.Table | None = None, **extra) -> None:
    entry = {"case": case, "kind": kind, "store": f"stores/{store}" if store else None, "node": node,
             "args": args or []}
    entry.update(extra)
    if table is not None:
        write_ipc(table, EXPECTED / f"{case}.arrow")
        entry["expected"] = f"expected/{case}.arrow"
        entry["rows"] = table.num_rows
        entry["columns"] = table.column_names
    CASES.append(entry)


def main() -> None:
    shutil.rmtree(OUT / "stores", ignore_errors=True)
    shutil.rmtree(OUT / "expected", ignore_errors=True)
    shutil.rmtree(OUT / "inputs", ignore_errors=True)
    for d in (STORES, EXPECTED, INPUTS):
        d.mkdir(parents=True)

    # --- anndata
    for store, fmt, shard in (("anndata_v2", 2, False), ("anndata_v3", 3, False), ("anndata_v3_sharded", 3, True)):
        path = STORES / f"{store}.zarr"
        write_anndata(path, fmt, shard)
        root = zarr.open_group(str(path), mode="r")
        writer = f"anndata {ad.__version__} (zarr_write_format={fmt}{', auto_shard_zarr_v3=True' if shard else ''})"
        for elem in ("obs", "var"):
            add(f"{store}__{elem}", "anndata-dataframe", store=f"{store}.zarr", node=elem,
                table=anndata_frame_table(root[elem]), writer=writer, zarr_format=fmt)
        elements = ["cell_type", "stage", "batch", "n_genes", "n_umis", "is_doublet", "donor_note", "barcode"]
        if store != "anndata_v3":
            elements = ["cell_type", "n_genes", "donor_note"]
        for elem in elements:
            add(f"{store}__obs__{elem}", "anndata-element", store=f"{store}.zarr", node=f"obs/{elem}",
                table=anndata_element_table(root[f"obs/{elem}"], elem), writer=writer, zarr_format=fmt)
        add(f"{store}__obsm__X_sparse", "refuse", store=f"{store}.zarr", node="obsm/X_sparse",
            error_contains="csr_matrix", writer=writer, zarr_format=fmt,
            notes="a csr_matrix group is not a table: zarrow must exit non-zero and name the encoding")

    # --- xarray
    ts, grid, noleap = ts_dataset(), grid_dataset(), noleap_dataset()
    xr_writer = f"xarray {xr.__version__}"
    for store, fmt, shard, consolidated in (("xr_ts_v2", 2, False, True), ("xr_ts_v3", 3, False, False),
                                            ("xr_ts_v3_sharded", 3, True, False)):
        path = STORES / f"{store}.zarr"
        ts.to_zarr(str(path), mode="w", zarr_format=fmt, consolidated=consolidated,
                   encoding=shard_encoding(ts) if shard else None)
        w = f"{xr_writer} to_zarr(zarr_format={fmt}, consolidated={consolidated}{', shards' if shard else ''})"
        live = xr.open_zarr(str(path))
        add(store, "xarray-1d", store=f"{store}.zarr", table=xr_1d_table(live), writer=w, zarr_format=fmt)
        raw = xr.open_zarr(str(path), decode_cf=False)
        add(f"{store}__nocf", "xarray-1d", store=f"{store}.zarr", args=["--no-cf"], decode_cf=False,
            table=xr_1d_table(raw), writer=w, zarr_format=fmt)
        if fmt == 3 and not shard:
            add(f"{store}__long", "xarray-long", store=f"{store}.zarr", args=["--long"],
                table=xr_long_table(live, None), writer=w, zarr_format=fmt)
    for store, fmt, shard, consolidated in (("xr_grid_v2", 2, False, True), ("xr_grid_v3", 3, False, True),
                                            ("xr_grid_v3_sharded", 3, True, False)):
        path = STORES / f"{store}.zarr"
        grid.to_zarr(str(path), mode="w", zarr_format=fmt, consolidated=consolidated,
                     encoding=shard_encoding(grid) if shard else None)
        w = f"{xr_writer} to_zarr(zarr_format={fmt}, consolidated={consolidated}{', shards' if shard else ''})"
        live = xr.open_zarr(str(path))
        add(f"{store}__long", "xarray-long", store=f"{store}.zarr", args=["--long"],
            table=xr_long_table(live, None), writer=w, zarr_format=fmt)
        for cols in (["orog"], ["pr", "t2m"]):
            add(f"{store}__long_{'_'.join(cols)}", "xarray-long", store=f"{store}.zarr",
                args=["--long", "--columns", ",".join(cols)], columns=cols,
                table=xr_long_table(live, cols), writer=w, zarr_format=fmt)
        if fmt == 3 and not shard:
            raw = xr.open_zarr(str(path), decode_cf=False)
            add(f"{store}__long_nocf", "xarray-long", store=f"{store}.zarr", args=["--long", "--no-cf"],
                decode_cf=False, table=xr_long_table(raw, None), writer=w, zarr_format=fmt)
    for store, fmt in (("xr_noleap_v2", 2), ("xr_noleap_v3", 3)):
        path = STORES / f"{store}.zarr"
        noleap.to_zarr(str(path), mode="w", zarr_format=fmt, consolidated=False)
        w = f"{xr_writer} to_zarr(zarr_format={fmt})"
        add(store, "refuse", store=f"{store}.zarr", error_contains="noleap", writer=w, zarr_format=fmt,
            notes="xarray without cftime raises ValueError naming calendar 'noleap'; zarrow must refuse too")
        raw = xr.open_zarr(str(path), decode_cf=False, consolidated=False)
        add(f"{store}__nocf", "xarray-1d", store=f"{store}.zarr", args=["--no-cf"], decode_cf=False,
            table=xr_1d_table(raw), writer=w, zarr_format=fmt)

    # --- write direction: inputs + reference stores written by anndata itself
    fa, fp = frame_anndata(), frame_plain()
    pq.write_table(nan_not_null(pa.Table.from_pandas(fa), fa), INPUTS / "frame_anndata.parquet")
    write_ipc(nan_not_null(pa.Table.from_pandas(fa), fa), INPUTS / "frame_anndata.arrow")
    pq.write_table(nan_not_null(pa.Table.from_pandas(fp), fp), INPUTS / "frame_plain.parquet")
    pq.write_table(frame_nulls(), INPUTS / "frame_nulls.parquet")
    for fmt in (2, 3):
        ref = STORES / f"ref_frame_anndata_v{fmt}.zarr"
        ad.settings.zarr_write_format = fmt
        with ad.settings.override(allow_write_nullable_strings=True):
            ad.io.write_elem(zarr.open_group(str(ref), mode="w", zarr_format=fmt), "/",
                             pq.read_table(INPUTS / "frame_anndata.parquet").to_pandas())
        for ext in ("parquet", "arrow"):
            add(f"write_anndata_{ext}_v{fmt}", "write-anndata", input=f"inputs/frame_anndata.{ext}",
                args=["--layout", "anndata", "--zarr-format", str(fmt)], zarr_format=fmt,
                reference_store=f"stores/ref_frame_anndata_v{fmt}.zarr",
                notes="anndata.io.read_elem(zarr.open_group(out)) must equal pq.read_table(input).to_pandas(); "
                      "the reference store is what anndata.io.write_elem writes for the same frame")
        add(f"write_plain_v{fmt}", "write-plain", input="inputs/frame_plain.parquet",
            args=["--zarr-format", str(fmt)], zarr_format=fmt,
            notes="xr.open_zarr(out) must give every column's values exactly (datetime as datetime64)")
        add(f"write_plain_nulls_v{fmt}", "write-plain", input="inputs/frame_nulls.parquet",
            args=["--zarr-format", str(fmt), "--nulls", "fill"], zarr_format=fmt,
            notes="outside the anndata layout nulls are refused unless --nulls fill: then null floats and "
                  "times must read as missing (NaN/NaT) in xr.open_zarr(out), null ints, bools and strings "
                  "as the fill value (0, false, ''); other values exact")

    manifest = {
        "versions": {k: VERSIONS[k] for k in VERSIONS},
        "generator": "testdata/gen/conventions.py",
        "cases": CASES,
    }
    (OUT / "cases.json").write_text(json.dumps(manifest, indent=1) + "\n")
    n_exp = sum(1 for c in CASES if "expected" in c)
    print(f"conventions: {len(CASES)} cases, {n_exp} expected files, "
          f"{len(list(STORES.glob('*.zarr')))} stores -> {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
