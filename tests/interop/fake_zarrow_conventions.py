#!/usr/bin/env python3
"""A stand-in for `zarrow convert` on anndata / xarray stores, to test check_conventions.py.

Usage:
  fake_zarrow_conventions.py convert STORE[/node] OUT.{parquet,arrow,arrows} [--long] [--columns a,b] [--no-cf]
  fake_zarrow_conventions.py convert TABLE.{parquet,arrow} OUT.zarr [--layout anndata] [--zarr-format 2|3]

Built on anndata 0.12.19 / xarray 2026.9.0 / pyarrow, following the contract that
check_conventions.py checks (see its docstring). It is not a reference for zarrow: it
only lets the checker's own logic be exercised before the Rust binary has the feature:

    .venv/bin/python tests/interop/check_conventions.py tests/interop/fake_zarrow_conventions.py

FAKE_ZARROW_BREAK=1 makes it wrong in several small ways (ordered flag dropped, one
value off, dimension_names missing, nulls written as values); the checker must then fail.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import xarray as xr
import zarr

warnings.filterwarnings("ignore")
BREAK = bool(os.environ.get("FAKE_ZARROW_BREAK"))
TABLE_ENCODINGS = {"categorical", "nullable-integer", "nullable-boolean", "nullable-string-array", "string-array",
                   "array"}


def nan_not_null(table: pa.Table, df: pd.DataFrame) -> pa.Table:
    """Keep float NaN as NaN (pa.Table.from_pandas would make it null)."""
    for name in df.columns:
        if df[name].dtype.kind == "f":
            i = table.schema.get_field_index(str(name))
            field = table.schema.field(i)
            table = table.set_column(i, field, pa.array(df[name].to_numpy(), type=field.type, from_pandas=False))
    return table


def index_first(table: pa.Table, index_name: str) -> pa.Table:
    meta = json.loads(table.schema.metadata[b"pandas"])
    (old,) = meta["index_columns"]
    for col in meta["columns"]:
        if col["field_name"] == old:
            col["field_name"] = index_name
    meta["index_columns"] = [index_name]
    names = [index_name if n == old else n for n in table.column_names]
    table = table.rename_columns(names).select([index_name] + [n for n in names if n != index_name])
    return table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()})


def read_anndata(node, name: str) -> pa.Table:
    enc = node.attrs.get("encoding-type")
    if enc == "dataframe":
        df = ad.io.read_elem(node)
        if BREAK and len(df.columns):
            col = df.columns[-1]
            if df[col].dtype.kind == "f":
                df[col] = df[col] + 1
        table = index_first(nan_not_null(pa.Table.from_pandas(df), df), node.attrs["_index"])
        if BREAK:
            fields = [pa.field(f.name, pa.dictionary(f.type.index_type, f.type.value_type, False))
                      if pa.types.is_dictionary(f.type) else f for f in table.schema]
            table = table.cast(pa.schema(fields, metadata=table.schema.metadata))
        return table
    if enc in TABLE_ENCODINGS:
        values = ad.io.read_elem(node)
        if isinstance(node, zarr.Array) and node.ndim != 1:
            raise SystemExit(f"error: {name} is a {node.ndim}-D array, not a column")
        df = pd.DataFrame({name: values})
        return nan_not_null(pa.Table.from_pandas(df, preserve_index=False), df)
    raise SystemExit(f"error: cannot convert anndata element {name!r} with encoding-type {enc!r}")


def long_dim_order(ds: xr.Dataset, columns: list[str] | None) -> list[str]:
    """--long row order: the dims of the highest-rank selected data variable (ties: first by
    name). xarray's own default (list(ds.dims)) follows the store listing, not stable for v3."""
    names = sorted(columns or ds.data_vars)
    best = min(names, key=lambda n: (-ds[n].ndim, n))
    dims = list(ds[best].dims)
    extra = sorted({d for n in names for d in ds[n].dims} - set(dims))
    return dims + extra


def read_xarray(path: Path, long: bool, columns: list[str] | None, decode_cf: bool) -> pa.Table:
    try:
        ds = xr.open_zarr(str(path), decode_cf=decode_cf)
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    if long:
        sub = ds[columns] if columns else ds
        df = sub.to_dataframe(dim_order=long_dim_order(ds, columns))
        df = df[sorted(df.columns)]
        table = nan_not_null(pa.Table.from_pandas(df), df)
        index = json.loads(table.schema.metadata[b"pandas"])["index_columns"]
        return table.select(index + sorted(n for n in table.column_names if n not in index))
    fields, arrays = [], []
    for name in sorted(ds.variables):
        if columns and name not in columns:
            continue
        var = ds[name]
        if var.ndim != 1:
            continue
        arr = pa.array(np.asarray(var.values))
        md = None if BREAK else {"dimension_names": json.dumps(list(var.dims))}
        fields.append(pa.field(name, arr.type, metadata=md))
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def write_table(table: pa.Table, dst: Path) -> None:
    ext = dst.suffix
    if ext == ".parquet":
        pq.write_table(table, dst)
    elif ext in (".arrow", ".ipc", ".feather"):
        with pa.ipc.new_file(str(dst), table.schema) as w:
            w.write_table(table)
    elif ext == ".arrows":
        with pa.ipc.new_stream(str(dst), table.schema) as w:
            w.write_table(table)
    else:
        raise SystemExit(f"error: unknown output extension {ext}")


def read_input(src: Path) -> pa.Table:
    if src.suffix == ".parquet":
        return pq.read_table(src)
    with pa.OSFile(str(src), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def write_zarr(src: Path, dst: Path, layout: str | None, zarr_format: int) -> None:
    df = read_input(src).to_pandas()
    if layout == "anndata":
        ad.settings.zarr_write_format = zarr_format
        if BREAK:
            df = df.astype({c: "float64" for c in df.columns if str(df[c].dtype) == "Int64"})
        with ad.settings.override(allow_write_nullable_strings=True):
            ad.io.write_elem(zarr.open_group(str(dst), mode="w", zarr_format=zarr_format), "/", df)
        return
    # plain: 1-D arrays over one dimension; nulls -> CF _FillValue (xarray does this itself)
    ds = xr.Dataset.from_dataframe(df if df.index.name else df.reset_index(drop=True))
    if not df.index.name:
        ds = ds.rename_dims({"index": "row"}).drop_vars("index")
    for name, var in list(ds.data_vars.items()):
        vals = var.values
        if var.dtype == object and any(isinstance(v, bool) for v in vals):
            # bool with nulls: float 1/0/NaN, which xarray reads as missing
            ds[name] = (var.dims, np.array([np.nan if v is None else float(v) for v in vals]))
        elif var.dtype == object:
            # strings with nulls: xarray cannot mask strings, '' is what it writes itself
            ds[name] = (var.dims, np.array(["" if not isinstance(v, str) else v for v in vals], dtype=object))
        elif BREAK and var.dtype.kind == "f":
            ds[name] = (var.dims, np.nan_to_num(vals, nan=-1.0))
    ds.to_zarr(str(dst), mode="w", zarr_format=zarr_format, consolidated=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    conv = sub.add_parser("convert")
    conv.add_argument("src", type=Path)
    conv.add_argument("dst", type=Path)
    conv.add_argument("--long", action="store_true")
    conv.add_argument("--columns")
    conv.add_argument("--no-cf", action="store_true")
    conv.add_argument("--layout", choices=["anndata"])
    conv.add_argument("--zarr-format", type=int, choices=[2, 3], default=3)
    args = ap.parse_args()

    if args.dst.suffix == ".zarr":
        write_zarr(args.src, args.dst, args.layout, args.zarr_format)
        return 0
    columns = args.columns.split(",") if args.columns else None
    node = zarr.open(store=str(args.src), mode="r")
    if "encoding-type" in node.attrs and node.attrs["encoding-type"] != "anndata":
        table = read_anndata(node, args.src.name)
    elif isinstance(node, zarr.Group):
        table = read_xarray(args.src, args.long, columns, not args.no_cf)
    else:
        raise SystemExit("error: a bare array is out of this fake's scope")
    write_table(table, args.dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
