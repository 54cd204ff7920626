#!/usr/bin/env python3
"""Check zarrow's anndata / xarray (CF) conversions against anndata and xarray reading live.

Usage: check_conventions.py ZARROW_BIN [--root DIR] [-k SUBSTRING]

CI runs it against the zarrow binary (.ci/run). The checker's own logic is also tested
with tests/interop/fake_zarrow_conventions.py (a stand-in built on anndata/xarray/
pyarrow), which passes every case, and with FAKE_ZARROW_BREAK=1, which must make cases
fail:

    .venv/bin/python tests/interop/check_conventions.py tests/interop/fake_zarrow_conventions.py

The cases come from testdata/conventions/cases.json (testdata/gen/conventions.py writes
it, with the stores and inputs). Expected values are NOT taken from expected/*.arrow:
every comparison is against what anndata 0.12.19 / xarray 2026.9.0 read from the store
right now (or, for the write direction, what pandas reads from the input table).

Read direction, per case (outputs .parquet and .arrow; the contract being checked):

  anndata-dataframe  `zarrow convert STORE/obs out`: to_pandas() equals
                     anndata.io.read_elem(group) (assert_frame_equal, dtypes included:
                     category, Int64/Int32, boolean, string, object, float, int, bool;
                     index values and name). Arrow: first column is named after the
                     `_index` attribute and is the pandas-metadata index column; categorical
                     -> dictionary (signed int indices, same value type, same ordered flag,
                     code -1 -> null); nullable-* -> nulls exactly where `mask` is true;
                     pandas metadata numpy_type "Int64"/"Int32"/"boolean"/"string".
                     Parquet only: int (non-string) categories may come back dense, because
                     pyarrow's Parquet reader restores dictionaries only for string values;
                     their values are compared instead (the .arrow output must be a dictionary).
  anndata-element    `zarrow convert STORE/obs/<col> out`: one column named <col>, same checks.
  xarray-1d          `zarrow convert STORE out [--no-cf]`: one column per 1-D variable of
                     xr.open_zarr(STORE[, decode_cf=False]), sorted by name (the group
                     contract of check_read.py); values equal; CF time -> timestamp with
                     xarray's unit (ns), no time zone; field metadata
                     dimension_names == JSON list of the variable's dims. A float missing
                     value may be NaN or null; an integer variable that xarray masks to
                     float (int + _FillValue, no scale) may instead stay an integer type with
                     nulls at the same places (the line says which zarrow chose).
  xarray-long        `zarrow convert STORE out --long [--columns a,b] [--no-cf]`:
                     to_pandas() equals ds[cols].to_dataframe(dim_order=D) (MultiIndex of
                     the dimension coordinates), D = the dims of the highest-rank selected
                     variable (ties: first by name) then any other dims by name (xarray's
                     default, list(ds.dims), follows the store listing and is not stable);
                     Arrow: the dimension columns come first, in order D, and are the pandas-metadata index_columns; then the data
                     variables sorted by name (xarray's own order follows the store listing,
                     which is not stable for unconsolidated v3 stores).
  refuse             zarrow exits non-zero, its message names the thing it refuses
                     (e.g. the calendar "noleap", the encoding "csr_matrix"), and no output
                     file is left behind.

Write direction:

  write-anndata      `zarrow convert in.parquet out.zarr --layout anndata --zarr-format N`:
                     out is Zarr vN with an `encoding-type: dataframe` root group and
                     anndata.io.read_elem(zarr.open_group(out)) equals pq.read_table(in).to_pandas()
                     (index name and values, categorical categories/ordered, nullable dtypes);
                     on disk: categorical / nullable-integer / nullable-boolean /
                     nullable-string-array groups where the input has them.
  write-plain        `zarrow convert in.parquet out.zarr --zarr-format N`: every array
                     carries dimension names (v3 `dimension_names`, v2 `_ARRAY_DIMENSIONS`),
                     xr.open_zarr(out) opens it and each input column is a 1-D variable with
                     the same values (null -> NaN / NaT / None in xarray's decoded values);
                     zarr-python reads every array with the table's row count.

One line per case, then "N passed, M failed"; exits 1 if any case failed. ZARROW_BIN may
be a .py file (run with this python).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import xarray as xr
import zarr
from pandas.testing import assert_frame_equal

warnings.filterwarnings("ignore")

REPO = Path(__file__).resolve().parents[2]
READ_FORMATS = ("parquet", "arrow")
NULLABLE_NUMPY_TYPE = {"nullable-boolean": {"boolean"}, "nullable-string-array": {"string"}}


# ------------------------------------------------------------------------- running zarrow


def run_zarrow(zarrow: str, src: Path, dst: Path, args: list[str]) -> subprocess.CompletedProcess:
    cmd = [zarrow, "convert", str(src), str(dst), *args]
    if zarrow.endswith(".py"):
        cmd = [sys.executable, *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def convert_ok(zarrow: str, src: Path, dst: Path, args: list[str]) -> None:
    proc = run_zarrow(zarrow, src, dst, args)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise AssertionError(f"`convert {src.name} {dst.name} {' '.join(args)}` exited {proc.returncode}: "
                             + " | ".join(tail))
    if not dst.exists():
        raise AssertionError(f"zarrow exited 0 but wrote no {dst.name}")


def read_output(path: Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    with pa.OSFile(str(path), "rb") as f:
        if path.suffix == ".arrows":
            return pa.ipc.open_stream(f).read_all()
        return pa.ipc.open_file(f).read_all()


def pandas_meta(table: pa.Table) -> dict:
    meta = table.schema.pandas_metadata
    if meta is None:
        raise AssertionError("no pandas metadata in the schema")
    return meta


# ------------------------------------------------------------------------- anndata


def check_dictionary(name: str, col: pa.ChunkedArray, series: pd.Series, parquet: bool) -> bool:
    """True if the column is a dense copy of non-string categories read back from Parquet."""
    cat = series.dtype
    if parquet and not pa.types.is_dictionary(col.type) and not pd.api.types.is_string_dtype(cat.categories):
        # pyarrow's Parquet reader restores dictionaries only for string/binary values
        # (read_dictionary); int categories come back dense. Compare the values instead.
        want = [None if pd.isna(v) else v for v in series.astype(object)]
        if col.to_pylist() != want:
            raise AssertionError(f"{name}: dense categorical values differ from anndata's")
        return True
    if not pa.types.is_dictionary(col.type):
        raise AssertionError(f"{name}: categorical read as {col.type}, not a dictionary")
    if not pa.types.is_signed_integer(col.type.index_type):
        raise AssertionError(f"{name}: dictionary indices {col.type.index_type} are not signed")
    if col.type.ordered != bool(cat.ordered):
        raise AssertionError(f"{name}: dictionary ordered={col.type.ordered}, anndata ordered={cat.ordered}")
    want_values = pa.array(np.asarray(cat.categories)).type
    got_values = col.type.value_type
    if pa.types.is_string(want_values):
        ok = pa.types.is_string(got_values) or pa.types.is_large_string(got_values) or \
            pa.types.is_string_view(got_values)
    else:
        ok = got_values == want_values
    if not ok:
        raise AssertionError(f"{name}: dictionary values {got_values} != categories {want_values}")
    want_nulls = int(series.isna().sum())
    if col.null_count != want_nulls:
        raise AssertionError(f"{name}: {col.null_count} nulls, anndata has {want_nulls} codes -1")
    return False


def parquet_categories(got: pd.DataFrame, want: pd.DataFrame) -> pd.DataFrame:
    """arrow-rs' Parquet writer re-encodes a dictionary in order of appearance: the
    order of the categories (and unused ones) is not kept in .parquet (zarrow says so
    on stderr; .arrow keeps both). Put got's categories in anndata's order, after
    checking they are anndata's (less any unused)."""
    got = got.copy()
    for name in want.columns:
        if isinstance(want[name].dtype, pd.CategoricalDtype) and isinstance(got[name].dtype, pd.CategoricalDtype):
            have, full = set(got[name].cat.categories), set(want[name].cat.categories)
            if not have <= full:
                raise AssertionError(f"{name}: categories {sorted(have - full)} are not anndata's")
            got[name] = got[name].cat.set_categories(want[name].cat.categories, ordered=want[name].cat.ordered)
    return got


def check_nullable(name: str, col: pa.ChunkedArray, group: zarr.Group, meta_col: dict | None) -> None:
    enc = group.attrs["encoding-type"]
    mask = np.asarray(group["mask"][...], dtype=bool)
    got = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if not np.array_equal(got, mask):
        raise AssertionError(f"{name}: nulls at {np.flatnonzero(got).tolist()}, mask true at "
                             f"{np.flatnonzero(mask).tolist()}")
    values = group["values"]
    if enc == "nullable-integer":
        want = pa.from_numpy_dtype(values.dtype)
        if col.type != want:
            raise AssertionError(f"{name}: type {col.type}, values are {values.dtype} -> {want}")
        numpy_types = {pd.api.types.pandas_dtype(values.dtype.name.capitalize().replace("Ui", "UI")).name}
    elif enc == "nullable-boolean":
        if col.type != pa.bool_():
            raise AssertionError(f"{name}: type {col.type}, not bool")
        numpy_types = NULLABLE_NUMPY_TYPE[enc]
    else:
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                or pa.types.is_string_view(col.type)):
            raise AssertionError(f"{name}: type {col.type}, not a string type")
        numpy_types = NULLABLE_NUMPY_TYPE[enc]
    if meta_col is not None and meta_col.get("numpy_type") not in numpy_types:
        raise AssertionError(f"{name}: pandas metadata numpy_type {meta_col.get('numpy_type')!r}, "
                             f"want one of {sorted(numpy_types)}")


def check_anndata_columns(table: pa.Table, group: zarr.Group, names: list[str], df: pd.DataFrame,
                          with_meta: bool, parquet: bool) -> list[str]:
    """Arrow-level checks; returns one note per column ("dict", "nullable", "dense")."""
    notes = []
    meta_cols = {}
    if with_meta:
        meta_cols = {c["field_name"]: c for c in pandas_meta(table)["columns"]}
    for name in names:
        node = group[name]
        col = table.column(name)
        enc = node.attrs.get("encoding-type")
        if enc == "categorical":
            notes.append("dense" if check_dictionary(name, col, df[name], parquet) else "dict")
        elif enc in ("nullable-integer", "nullable-boolean", "nullable-string-array"):
            check_nullable(name, col, node, meta_cols.get(name) if with_meta else None)
            notes.append("nullable")
        elif col.null_count:
            raise AssertionError(f"{name}: {col.null_count} nulls in a {enc} column")
    return notes


def check_anndata_dataframe(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    store = root / case["store"]
    group = zarr.open_group(str(store), mode="r")[case["node"]]
    want = ad.io.read_elem(group)  # live
    index_name = group.attrs["_index"]
    columns = list(group.attrs["column-order"])
    kinds = []
    for ext in READ_FORMATS:
        out = tmp / f"{case['case']}.{ext}"
        convert_ok(zarrow, store / case["node"], out, case["args"])
        table = read_output(out)
        try:
            if table.column_names != [index_name, *columns]:
                raise AssertionError(f"columns {table.column_names} != [{index_name!r}] + column-order {columns}")
            meta = pandas_meta(table)
            if meta["index_columns"] != [index_name]:
                raise AssertionError(f"pandas index_columns {meta['index_columns']} != [{index_name!r}]")
            kinds = check_anndata_columns(table, group, columns, want, with_meta=True, parquet=ext == "parquet")
            if table.column(index_name).null_count:
                raise AssertionError("nulls in the index column")
            dense = [c for c, k in zip(columns, kinds) if k == "dense"]
            got = table.to_pandas()
            if ext == "parquet":
                got = parquet_categories(got, want)
            assert_frame_equal(got.drop(columns=dense), want.drop(columns=dense), check_exact=True)
        except AssertionError as err:
            raise AssertionError(f"{out.name}: {err}") from None
    dense = f", parquet: {kinds.count('dense')} int-category col(s) dense" if "dense" in kinds else ""
    values = check_categorical_values(zarrow, store / case["node"], group, columns, want, case, tmp)
    return (f"{len(columns)} cols + index {index_name!r} x {len(want)} rows "
            f"({kinds.count('dict') + kinds.count('dense')} dictionary, {kinds.count('nullable')} nullable"
            f"{dense}), {len(READ_FORMATS)} outputs{values}")


def check_categorical_values(zarrow: str, node: Path, group: zarr.Group, columns: list[str], want: pd.DataFrame,
                             case: dict, tmp: Path) -> str:
    """`--categorical-values`: each categorical column holds anndata's values, one per
    row (None where pandas has NaN), in the categories' type: strings as views (the
    default when no --string-type is given)."""
    names = [c for c in columns if group[c].attrs.get("encoding-type") == "categorical"]
    if not names:
        return ""
    out = tmp / f"{case['case']}.values.arrow"
    convert_ok(zarrow, node, out, [*case["args"], "--categorical-values"])
    table = read_output(out)
    for name in names:
        col = table.column(name)
        categories = want[name].cat.categories
        if pd.api.types.is_string_dtype(categories) or categories.dtype == object:
            if col.type != pa.string_view():
                raise AssertionError(f"{out.name}: {name} read as {col.type}, not string_view")
        elif pa.types.is_dictionary(col.type):
            raise AssertionError(f"{out.name}: {name} is still a dictionary")
        expected = [None if pd.isna(v) else v for v in want[name].astype(object)]
        if col.to_pylist() != expected:
            raise AssertionError(f"{out.name}: {name} values differ from anndata's")
    return f", {len(names)} categorical col(s) as values"



def check_anndata_element(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    store = root / case["store"]
    parent_path, name = case["node"].rsplit("/", 1)
    parent = zarr.open_group(str(store), mode="r")[parent_path]
    want = pd.DataFrame({name: ad.io.read_elem(parent[name])})
    for ext in READ_FORMATS:
        out = tmp / f"{case['case']}.{ext}"
        convert_ok(zarrow, store / case["node"], out, case["args"])
        table = read_output(out)
        try:
            if table.column_names != [name]:
                raise AssertionError(f"columns {table.column_names} != [{name!r}]")
            kinds = check_anndata_columns(table, parent, [name], want, parquet=ext == "parquet",
                                          with_meta=table.schema.pandas_metadata is not None)
            if kinds != ["dense"]:
                got = table.to_pandas()
                if not isinstance(got.index, pd.RangeIndex):
                    got = got.reset_index(drop=True)
                if ext == "parquet":
                    got = parquet_categories(got, want)
                assert_frame_equal(got, want, check_exact=True)
        except AssertionError as err:
            raise AssertionError(f"{out.name}: {err}") from None
    return f"{parent[name].attrs.get('encoding-type')} -> {table.column(name).type}, {len(want)} rows"


# ------------------------------------------------------------------------- xarray


def int_masked_to_float(ds_raw: xr.Dataset, name: str) -> bool:
    """xarray turns this integer variable into floats only because of its _FillValue."""
    var = ds_raw[name]
    attrs = var.attrs
    return (var.dtype.kind in "iu" and "_FillValue" in attrs and "scale_factor" not in attrs
            and "add_offset" not in attrs and "units" not in attrs)


def check_xarray_1d(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    store = root / case["store"]
    decode = case.get("decode_cf", True)
    ds = xr.open_zarr(str(store), decode_cf=decode)
    raw = xr.open_zarr(str(store), decode_cf=False)
    names = sorted(n for n in ds.variables if ds[n].ndim == 1)
    notes = set()
    for ext in READ_FORMATS:
        out = tmp / f"{case['case']}.{ext}"
        convert_ok(zarrow, store, out, case["args"])
        table = read_output(out)
        try:
            if table.column_names != names:
                raise AssertionError(f"columns {table.column_names} != 1-D variables {names}")
            for name in names:
                notes |= check_xarray_column(name, table, ds[name], int_masked_to_float(raw, name) and decode)
        except AssertionError as err:
            raise AssertionError(f"{out.name}: {err}") from None
    return f"{len(names)} cols x {ds.sizes[ds[names[0]].dims[0]]} rows{', ' + ', '.join(sorted(notes)) if notes else ''}"


def check_xarray_column(name: str, table: pa.Table, var: xr.DataArray, int_or_float: bool) -> set[str]:
    notes = set()
    col = table.column(name)
    field = table.schema.field(name)
    md = field.metadata or {}
    dims = md.get(b"dimension_names")
    if dims is None or json.loads(dims) != list(var.dims):
        raise AssertionError(f"{name}: field metadata dimension_names={dims!r}, want {json.dumps(list(var.dims))}")
    want = np.asarray(var.values)
    if want.dtype.kind == "M":
        unit = np.datetime_data(want.dtype)[0]
        if not pa.types.is_timestamp(col.type) or col.type.unit != unit or col.type.tz is not None:
            raise AssertionError(f"{name}: type {col.type}, xarray gives timestamp[{unit}] (no tz)")
        got = col.to_numpy(zero_copy_only=False).astype(want.dtype)
        missing_w, missing_g = np.isnat(want), np.isnat(got)
        if not np.array_equal(missing_w, missing_g) or not np.array_equal(got[~missing_g], want[~missing_w]):
            raise AssertionError(f"{name}: timestamps differ from xarray at "
                                 f"{np.flatnonzero((got != want) & ~(missing_w & missing_g)).tolist()[:5]}")
        return notes
    if want.dtype.kind == "f":
        if pa.types.is_floating(col.type):
            if col.type != pa.from_numpy_dtype(want.dtype):
                raise AssertionError(f"{name}: type {col.type}, xarray gives {want.dtype}")
            if col.null_count:
                notes.add("float missing as null")
        elif int_or_float and pa.types.is_integer(col.type):
            notes.add(f"{name}: int + nulls (xarray: {want.dtype} NaN)")
        else:
            raise AssertionError(f"{name}: type {col.type}, xarray gives {want.dtype}")
        got = np.asarray(col.to_pandas(), dtype="float64")
        w = want.astype("float64")
        if not np.array_equal(np.isnan(got), np.isnan(w)):
            raise AssertionError(f"{name}: missing at {np.flatnonzero(np.isnan(got)).tolist()}, xarray at "
                                 f"{np.flatnonzero(np.isnan(w)).tolist()}")
        ok = np.isnan(w) | (got == w)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise AssertionError(f"{name}[{i}]: {got[i]!r} != xarray {w[i]!r}")
        return notes
    if want.dtype.kind in "iub":
        if col.type != pa.from_numpy_dtype(want.dtype):
            raise AssertionError(f"{name}: type {col.type}, xarray gives {want.dtype}")
        if col.null_count:
            raise AssertionError(f"{name}: {col.null_count} nulls")
        got = col.to_numpy(zero_copy_only=False)
        if not np.array_equal(got, want):
            i = int(np.flatnonzero(got != want)[0])
            raise AssertionError(f"{name}[{i}]: {got[i]!r} != xarray {want[i]!r}")
        return notes
    got = col.to_pylist()
    if got != want.tolist():
        raise AssertionError(f"{name}: values differ from xarray")
    return notes


def long_dim_order(ds: xr.Dataset, columns: list[str] | None) -> list[str]:
    """--long row order: the dims of the highest-rank selected data variable (ties: first by
    name). xarray's own default (list(ds.dims)) follows the store listing, not stable for v3."""
    names = sorted(columns or ds.data_vars)
    best = min(names, key=lambda n: (-ds[n].ndim, n))
    dims = list(ds[best].dims)
    extra = sorted({d for n in names for d in ds[n].dims} - set(dims))
    return dims + extra


def check_xarray_long(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    store = root / case["store"]
    ds = xr.open_zarr(str(store), decode_cf=case.get("decode_cf", True))
    cols = case.get("columns")
    want = (ds[cols] if cols else ds).to_dataframe(dim_order=long_dim_order(ds, cols))
    want = want[sorted(want.columns)]  # xarray's own order follows the store listing (varies, v3)
    dims = list(want.index.names)
    for ext in READ_FORMATS:
        out = tmp / f"{case['case']}.{ext}"
        convert_ok(zarrow, store, out, case["args"])
        table = read_output(out)
        try:
            if table.column_names != dims + list(want.columns):
                raise AssertionError(f"columns {table.column_names} != dims {dims} + {list(want.columns)}")
            if pandas_meta(table)["index_columns"] != dims:
                raise AssertionError(f"pandas index_columns {pandas_meta(table)['index_columns']} != {dims}")
            for name in dims:
                col = table.column(name)
                if col.null_count:
                    raise AssertionError(f"{name}: nulls in a dimension coordinate")
                if pa.types.is_timestamp(col.type):
                    unit = np.datetime_data(ds[name].dtype)[0]
                    if col.type.unit != unit or col.type.tz is not None:
                        raise AssertionError(f"{name}: {col.type}, xarray gives datetime64[{unit}]")
            got = table.to_pandas()
            assert_frame_equal(got, want, check_exact=False, rtol=1e-12, atol=0)
        except AssertionError as err:
            raise AssertionError(f"{out.name}: {err}") from None
    return f"{len(dims)} index + {len(want.columns)} cols x {len(want)} rows"


# ------------------------------------------------------------------------- refusal


def check_refuse(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    store = root / case["store"]
    src = store / case["node"] if case["node"] else store
    word = case["error_contains"]
    why = library_refusal(src, word)  # the case must really be one the libraries cannot read as a table
    for ext in READ_FORMATS:
        out = tmp / f"{case['case']}.{ext}"
        proc = run_zarrow(zarrow, src, out, case["args"])
        msg = (proc.stderr + proc.stdout).strip()
        if proc.returncode == 0:
            raise AssertionError(f"{out.name}: exited 0, expected a refusal naming {word!r}")
        if word.lower() not in msg.lower():
            raise AssertionError(f"{out.name}: exit {proc.returncode} but the message does not name {word!r}: "
                                 f"{msg.splitlines()[-1] if msg else '(empty)'}")
        if out.exists():
            raise AssertionError(f"{out.name}: refused but left an output file behind")
    last = msg.splitlines()[-1] if msg else ""
    return f"refused (exit {proc.returncode}): {last[:100]} [{why}]"


def library_refusal(src: Path, word: str) -> str:
    """Confirm from the store itself that `word` is what makes it unreadable as a table."""
    if not src.exists():
        raise AssertionError(f"{src} does not exist (regenerate testdata/conventions)")
    node = zarr.open(store=str(src), mode="r")
    enc = node.attrs.get("encoding-type")
    if enc is not None:
        if enc != word:
            raise AssertionError(f"fixture: {src.name} has encoding-type {enc!r}, not {word!r}")
        return f"anndata encoding-type {enc!r}"
    try:
        xr.open_zarr(str(src))
    except ValueError as err:
        if word not in str(err):
            raise AssertionError(f"fixture: xarray refuses for another reason: {err}") from None
        return "xarray refuses too"
    raise AssertionError(f"fixture: xarray opens {src.name} (cftime installed?), nothing to refuse")


# ------------------------------------------------------------------------- write direction


def normalize_strings(df: pd.DataFrame) -> pd.DataFrame:
    """StringDtype('pyarrow') and StringDtype('python') hold the same values."""
    out = df.copy()
    for c in out.columns:
        if isinstance(out[c].dtype, pd.StringDtype):
            out[c] = out[c].astype("string[python]")
    return out


def read_input(path: Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    with pa.OSFile(str(path), "rb") as f:
        return pa.ipc.open_file(f).read_all()


def zarr_format_of(path: Path) -> int:
    return 3 if (path / "zarr.json").exists() else 2 if (path / ".zgroup").exists() else 0


def check_write_anndata(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    src = root / case["input"]
    want = read_input(src).to_pandas()
    out = tmp / f"{case['case']}.zarr"
    shutil.rmtree(out, ignore_errors=True)
    convert_ok(zarrow, src, out, case["args"])
    fmt = zarr_format_of(out)
    if fmt != case["zarr_format"]:
        raise AssertionError(f"wrote Zarr v{fmt}, asked for v{case['zarr_format']}")
    group = zarr.open_group(str(out), mode="r")
    if group.attrs.get("encoding-type") != "dataframe":
        raise AssertionError(f"root encoding-type {group.attrs.get('encoding-type')!r}, not 'dataframe'")
    if list(group.attrs.get("column-order", [])) != list(want.columns):
        raise AssertionError(f"column-order {group.attrs.get('column-order')} != {list(want.columns)}")
    expect_enc = {}
    for c in want.columns:
        dt = want[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            expect_enc[c] = "categorical"
        elif isinstance(dt, pd.BooleanDtype):
            expect_enc[c] = "nullable-boolean"
        elif isinstance(dt, pd.StringDtype):
            expect_enc[c] = "nullable-string-array"
        elif pd.api.types.is_extension_array_dtype(dt) and pd.api.types.is_integer_dtype(dt):
            expect_enc[c] = "nullable-integer"
    for c, enc in expect_enc.items():
        got_enc = group[c].attrs.get("encoding-type")
        if got_enc != enc:
            raise AssertionError(f"{c}: encoding-type {got_enc!r}, want {enc!r}")
        if enc == "categorical" and bool(group[c].attrs.get("ordered")) != bool(want[c].dtype.ordered):
            raise AssertionError(f"{c}: ordered={group[c].attrs.get('ordered')}, input ordered={want[c].cat.ordered}")
    got = ad.io.read_elem(group)
    if want.index.name is None and isinstance(want.index, pd.RangeIndex):
        # no pandas index in the input: whatever index zarrow makes, compare the columns
        got, want = got.reset_index(drop=True), want.reset_index(drop=True)
    assert_frame_equal(normalize_strings(got), normalize_strings(want), check_exact=True)
    return f"v{fmt}, {len(want.columns)} cols x {len(want)} rows, index {want.index.name!r}, " \
           f"{len(expect_enc)} categorical/nullable"


def check_write_plain(zarrow: str, root: Path, case: dict, tmp: Path) -> str:
    src = root / case["input"]
    table = read_input(src)
    meta = table.schema.pandas_metadata or {}
    index_cols = [c for c in meta.get("index_columns", []) if isinstance(c, str)]
    out = tmp / f"{case['case']}.zarr"
    shutil.rmtree(out, ignore_errors=True)
    convert_ok(zarrow, src, out, case["args"])
    fmt = zarr_format_of(out)
    if fmt != case["zarr_format"]:
        raise AssertionError(f"wrote Zarr v{fmt}, asked for v{case['zarr_format']}")
    group = zarr.open_group(str(out), mode="r")
    n = table.num_rows
    for name, arr in group.arrays():
        if arr.shape != (n,):
            raise AssertionError(f"zarr-python: {name} has shape {arr.shape}, want ({n},)")
        if fmt == 3:
            dims = arr.metadata.dimension_names
        else:
            dims = arr.attrs.get("_ARRAY_DIMENSIONS")
        if not dims or len(dims) != 1 or not dims[0]:
            raise AssertionError(f"{name}: no dimension name ({'dimension_names' if fmt == 3 else '_ARRAY_DIMENSIONS'})")
        arr[...]  # zarr-python decodes it
    ds = xr.open_zarr(str(out), consolidated=None)
    data_cols = [c for c in table.column_names if c not in index_cols]
    dims_seen, notes = set(), set()
    for c in data_cols:
        if c not in ds.variables:
            raise AssertionError(f"xr.open_zarr: no variable {c!r} (has {sorted(ds.variables)})")
        var = ds[c]
        if var.ndim != 1 or var.shape != (n,):
            raise AssertionError(f"{c}: xarray shape {var.shape}, want ({n},)")
        dims_seen.add(var.dims[0])
        compare_plain(c, table.column(c), np.asarray(var.values), notes,
                      filled="--nulls" in case["args"] and "fill" in case["args"])
    if len(dims_seen) != 1:
        raise AssertionError(f"columns do not share one dimension: {sorted(dims_seen)}")
    note = ""
    for c in index_cols:
        if c in ds.variables:
            compare_plain(c, table.column(c), np.asarray(ds[c].values))
            note = f", index {c!r} written and equal"
        else:
            note = f", index {c!r} not written"
    nulls = sum(table.column(c).null_count for c in data_cols)
    extra = f" ({'; '.join(sorted(notes))})" if notes else ""
    return f"v{fmt}, {len(data_cols)} cols x {n} rows over dim {dims_seen.pop()!r}, {nulls} nulls{note}{extra}"


def is_missing(v) -> bool:
    if v is None:
        return True
    if isinstance(v, float | np.floating):
        return math.isnan(v)
    if isinstance(v, np.datetime64):
        return np.isnat(v)
    return v is pd.NaT or v is pd.NA


def compare_plain(name: str, col: pa.ChunkedArray, got: np.ndarray, notes: set | None = None,
                  filled: bool = False) -> None:
    """`filled`: written with --nulls fill, so a null int, bool or string may read as its
    fill value (0, false, ''); null floats and times must still read as missing."""
    notes = set() if notes is None else notes
    want = col.to_pylist()
    valid = [v is not None for v in want]
    if pa.types.is_timestamp(col.type):
        if got.dtype.kind != "M":
            raise AssertionError(f"{name}: xarray gives {got.dtype}, not datetime64 (CF time not written?)")
        w = col.cast(pa.int64()).to_pylist()
        unit = col.type.unit
        g = got.astype(f"datetime64[{unit}]").astype("int64")
        for i, (ok, wv) in enumerate(zip(valid, w)):
            if ok and g[i] != wv or not ok and not np.isnat(got[i]):
                raise AssertionError(f"{name}[{i}]: xarray {got[i]!r} != input {want[i]!r}")
        return
    for i, (ok, wv) in enumerate(zip(valid, want)):
        gv = got[i]
        if not ok:
            if is_missing(gv):
                continue
            fill = {"i": 0, "u": 0, "b": False}.get(np.asarray(got).dtype.kind, "")
            if filled and not pa.types.is_floating(col.type) and gv == fill:
                notes.add(f"{name}: null -> {fill!r} (--nulls fill)")
                continue
            if gv == "" and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
                # xarray cannot mask strings: in v3 it cannot even encode a string _FillValue
                # (FillValueCoder: "Unsupported dtype object"); '' is the best a writer can do
                notes.add(f"{name}: null -> ''")
                continue
            raise AssertionError(f"{name}[{i}]: input null, xarray reads {gv!r} (not missing)")
        if isinstance(wv, float) and math.isnan(wv):
            if not (isinstance(gv, float | np.floating) and math.isnan(gv)):
                raise AssertionError(f"{name}[{i}]: input NaN, xarray reads {gv!r}")
            continue
        gv = gv.item() if hasattr(gv, "item") else gv
        if gv != wv or (isinstance(wv, str) and not isinstance(gv, str)):
            raise AssertionError(f"{name}[{i}]: xarray reads {gv!r} != input {wv!r}")


# ------------------------------------------------------------------------- main


CHECKS = {
    "anndata-dataframe": check_anndata_dataframe,
    "anndata-element": check_anndata_element,
    "xarray-1d": check_xarray_1d,
    "xarray-long": check_xarray_long,
    "refuse": check_refuse,
    "write-anndata": check_write_anndata,
    "write-plain": check_write_plain,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zarrow", metavar="ZARROW_BIN")
    ap.add_argument("--root", type=Path, default=REPO / "testdata" / "conventions",
                    help="directory holding cases.json, stores/ and inputs/")
    ap.add_argument("-k", dest="filter", default="", help="only cases whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print a traceback for failures")
    args = ap.parse_args()

    manifest_path = args.root / "cases.json"
    if not manifest_path.exists():
        print(f"no {manifest_path} (run testdata/gen/conventions.py)")
        print("0 passed, 1 failed")
        return 1
    cases = [c for c in json.loads(manifest_path.read_text())["cases"] if args.filter in c["case"]]
    if not cases:
        print(f"no case matches -k {args.filter!r}")
        print("0 passed, 1 failed")
        return 1
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="zarrow-conventions-") as tmp:
        for case in cases:
            try:
                summary = CHECKS[case["kind"]](args.zarrow, args.root, case, Path(tmp))
            except Exception as err:  # noqa: BLE001 - report every kind of failure per case
                failed += 1
                first = str(err).strip().splitlines()
                print(f"FAIL {case['case']}: {type(err).__name__}: {' | '.join(first[:6])}")
                if args.verbose:
                    traceback.print_exc()
            else:
                passed += 1
                print(f"ok   {case['case']}: {summary}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
