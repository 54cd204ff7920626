#!/usr/bin/env python3
"""Check zarrow's conversions against zarr-python reading the same stores live.

Usage: check_read.py ZARROW_BIN [--stores DIR] [-k SUBSTRING] [-x SUBSTRING ...]

For every store in testdata/stores/ that zarr-python can read, run

    ZARROW_BIN convert <store> <tmp>/<case>.parquet
    ZARROW_BIN convert <store> <tmp>/<case>.arrow      (IPC file)
    ZARROW_BIN convert <store> <tmp>/<case>.arrows     (IPC stream)
    ZARROW_BIN convert <store> <tmp>/<case>.{arrow,arrows,parquet} --string-type utf8-view
    ZARROW_BIN convert <store> <tmp>/<case>.{arrow,arrows,parquet} --string-type large-utf8

read each output with pyarrow and compare every column with what zarr-python reads
directly from the store (not the expected files):

* array store X.zarr -> one column X = arr[...].ravel(order="C");
  group store -> one column per 1-D child array, sorted by name (not 2-D children,
  not subgroups), or for an anndata dataframe in anndata's order (`_index`, then
  `column-order`);
* string data (string, v2 |O vlen-utf8, fixed_length_utf32 / <U n) -> pa.string() by
  default, pa.string_view() with --string-type utf8-view, pa.large_string() with
  large-utf8; bytes data -> pa.binary(), pa.binary_view(), pa.large_binary() likewise;
  fixed width compares after numpy's trailing-NUL stripping;
  numbers and bool -> the matching Arrow primitive type (float16 -> halffloat), NaN
  equals NaN; no nulls, except that numpy datetime64 / timedelta64 -> the Arrow type
  pyarrow gives them (timestamp / duration of the unit, date32 for datetime64[D]),
  NaT -> null, compared as their integer counts.

Stores zarr-python cannot read (ZEP0007 draft data types, zarrs.* codecs, zarrs-style
int-array fill values for bytes) are detected from their metadata and skipped with the
reason printed. Prints one line per case, then a line "N passed, M failed"; exits 1 if
any case failed. ZARROW_BIN may be a .py file (run with this python), e.g.
tests/interop/fake_zarrow.py, which is how this script's zarr-python half is tested.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

warnings.filterwarnings("ignore")

REPO = Path(__file__).resolve().parents[2]
FORMATS = ("parquet", "arrow", "arrows")
STRING_TYPES = {
    None: pa.string(),
    "utf8-view": pa.string_view(),
    "large-utf8": pa.large_string(),
}
# Bytes columns follow --string-type: binary, binary_view, large_binary.
BINARY_TYPES = {
    None: pa.binary(),
    "utf8-view": pa.binary_view(),
    "large-utf8": pa.large_binary(),
}
ZEP0007_TYPES = {"string", "binary", "large_string", "large_binary"}
BYTES_TYPES = {"bytes", "binary", "variable_length_bytes"}


# ------------------------------------------------------------------------- detection


def codec_names(codecs) -> list[str]:
    """All codec names in a v3 codec list, including nested chains (zarrs.vlen, sharding)."""
    out = []
    for codec in codecs or []:
        if isinstance(codec, str):
            out.append(codec)
            continue
        out.append(codec.get("name", ""))
        for value in (codec.get("configuration") or {}).values():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "name" in value[0]:
                out.extend(codec_names(value))
    return out


def unreadable_reason(store: Path) -> str | None:
    """Why zarr-python cannot read this store, from its metadata alone; None if it can."""
    for meta_path in sorted(store.rglob("zarr.json")):
        meta = json.loads(meta_path.read_text())
        if meta.get("node_type") != "array":
            continue
        where = meta_path.parent.relative_to(store).as_posix()
        where = "" if where == "." else f" ({where})"
        dt = meta.get("data_type")
        if isinstance(dt, dict) and dt.get("name") in ZEP0007_TYPES:
            return f"ZEP0007 draft data type {json.dumps(dt)}{where}"
        zarrs = [n for n in codec_names(meta.get("codecs")) if n.startswith(("zarrs.", "https://codec.zarrs.dev/"))]
        if zarrs:
            return f"zarrs codec {zarrs[0]!r}{where}"
        if isinstance(dt, str) and dt in BYTES_TYPES and isinstance(meta.get("fill_value"), list):
            return f"{dt!r} fill_value as an int array (zarrs style){where}"
    return None


# ------------------------------------------------------------------------- zarr-python side


class Column:
    def __init__(self, kind: str, arrow_type: pa.DataType | None, values: list):
        self.kind = kind  # "string" | "binary" | "primitive" | "time"
        self.arrow_type = arrow_type  # for primitives
        self.values = values


def zarr_column(arr: zarr.Array) -> Column:
    values = np.asarray(arr[...]).ravel(order="C")
    zdtype = type(arr.metadata.dtype).__name__
    if zdtype in ("VariableLengthUTF8", "FixedLengthUTF32"):
        return Column("string", None, [str(v) for v in values.tolist()])
    if zdtype in ("VariableLengthBytes", "NullTerminatedBytes"):
        return Column("binary", None, [bytes(v) for v in values.tolist()])
    if values.dtype.kind in "biuf":
        native = values.astype(values.dtype.newbyteorder("="))
        return Column("primitive", pa.from_numpy_dtype(native.dtype), [float(v) if native.dtype.kind == "f" else v
                                                                        for v in native.tolist()])
    if values.dtype.kind in "Mm":
        # pyarrow's own conversion: timestamp / duration / date32, NaT -> null.
        arrow = pa.array(values.astype(values.dtype.newbyteorder("=")))
        return Column("time", arrow.type, time_counts(arrow))
    raise TypeError(f"unsupported zarr data type {arr.metadata.dtype!r}")


def zarr_columns(store: Path) -> dict[str, Column]:
    node = zarr.open(store=str(store), mode="r")
    if isinstance(node, zarr.Array):
        return {store.name.removesuffix(".zarr"): zarr_column(node)}
    cols = {name: zarr_column(child) for name, child in node.arrays() if child.ndim == 1}
    return {name: cols[name] for name in table_order(node.attrs, cols)}


def table_order(attrs, names) -> list[str]:
    """A group's column order: anndata's for a dataframe (its spec: the `_index` element,
    then `column-order`, then any other column by name), else by name."""
    names = sorted(names)
    if attrs.get("encoding-type") != "dataframe":
        return names
    first = [attrs.get("_index"), *attrs.get("column-order", [])]
    first = [n for n in first if n in names]
    return first + [n for n in names if n not in first]


# ------------------------------------------------------------------------- zarrow side


def run_zarrow(zarrow: str, src: Path, dst: Path, string_type: str | None) -> None:
    cmd = [zarrow, "convert", str(src), str(dst)]
    if zarrow.endswith(".py"):
        cmd = [sys.executable, *cmd]
    if string_type:
        cmd += ["--string-type", string_type]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise AssertionError(f"`{' '.join(cmd)}` exited {proc.returncode}: " + " | ".join(tail))
    if not dst.exists():
        raise AssertionError(f"zarrow exited 0 but wrote no {dst.name}")


def read_output(path: Path) -> pa.Table:
    ext = path.suffix
    if ext == ".parquet":
        return pq.read_table(path)
    if ext == ".arrow":
        with pa.OSFile(str(path), "rb") as f:
            return pa.ipc.open_file(f).read_all()
    if ext == ".arrows":
        with pa.OSFile(str(path), "rb") as f:
            return pa.ipc.open_stream(f).read_all()
    raise ValueError(ext)


def time_counts(array) -> list:
    """A timestamp / duration / date column as its integer counts, nulls as None."""
    width = pa.int32() if pa.types.is_date32(array.type) else pa.int64()
    return array.cast(width).to_pylist()


def same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return type(a) is type(b) and a == b


def parquet_seconds(got: pa.DataType, want: pa.DataType, fmt: str) -> bool:
    """Parquet has no seconds unit: arrow-rs writes timestamp[s] as a bare INT64 (no
    logical type), which pyarrow reads as int64; pyarrow's own writer coerces it to
    milliseconds. The counts (in seconds) are still compared."""
    return fmt == "parquet" and want == pa.timestamp("s") and got in (pa.int64(), pa.timestamp("ms"))


def compare(table: pa.Table, expected: dict[str, Column], string_type: str | None, fmt: str = "") -> None:
    names = list(expected)
    if table.column_names != names:
        raise AssertionError(f"columns {table.column_names} != expected {names}")
    for name, col in expected.items():
        got = table.column(name)
        if got.null_count and col.kind != "time":
            raise AssertionError(f"{name}: {got.null_count} nulls")
        if len(got) != len(col.values):
            raise AssertionError(f"{name}: {len(got)} rows != {len(col.values)}")
        if col.kind == "string":
            want_type = STRING_TYPES[string_type]
            if got.type != want_type:
                raise AssertionError(f"{name}: type {got.type} != {want_type}")
        elif col.kind == "binary":
            want_type = BINARY_TYPES[string_type]
            if got.type != want_type:
                raise AssertionError(f"{name}: type {got.type} != {want_type}")
        elif got.type != col.arrow_type and not parquet_seconds(got.type, col.arrow_type, fmt):
            raise AssertionError(f"{name}: type {got.type} != {col.arrow_type}")
        if col.kind == "time" and pa.types.is_integer(got.type):
            values = got.to_pylist()
        elif col.kind == "time":
            values = time_counts(got.cast(col.arrow_type))
        elif pa.types.is_floating(got.type):
            values = [None if v is None else float(v) for v in got.to_pylist()]
        else:
            values = got.to_pylist()
        for i, (g, w) in enumerate(zip(values, col.values)):
            if not same_value(g, w):
                raise AssertionError(f"{name}[{i}]: {g!r} != zarr-python {w!r}")


def check_case(zarrow: str, store: Path, tmp: Path) -> str:
    expected = zarr_columns(store)  # live, straight from zarr-python
    case = store.name.removesuffix(".zarr")
    done = 0
    for string_type in STRING_TYPES:
        for ext in FORMATS:
            suffix = "" if string_type is None else "." + string_type
            out = tmp / f"{case}{suffix}.{ext}"
            run_zarrow(zarrow, store, out, string_type)
            try:
                compare(read_output(out), expected, string_type, ext)
            except AssertionError as err:
                raise AssertionError(f"{out.name}: {err}") from None
            done += 1
    rows = len(next(iter(expected.values())).values) if expected else 0
    return f"{len(expected)} col(s) x {rows} rows, {done} outputs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zarrow", metavar="ZARROW_BIN")
    ap.add_argument("--stores", type=Path, default=REPO / "testdata" / "stores")
    ap.add_argument("-k", dest="filter", default="", help="only cases whose name contains this")
    ap.add_argument("-x", "--exclude", action="append", default=[], metavar="SUBSTRING",
                    help="skip cases whose name contains this (repeatable; printed as SKIP)")
    args = ap.parse_args()

    stores = sorted(p for p in args.stores.glob("*.zarr") if p.is_dir() and args.filter in p.name)
    if not stores:
        print(f"no stores in {args.stores}")
        print("0 passed, 1 failed")
        return 1
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory(prefix="zarrow-interop-") as tmp:
        for store in stores:
            case = store.name.removesuffix(".zarr")
            excluded = [x for x in args.exclude if x in case]
            if excluded:
                skipped += 1
                print(f"SKIP {case}: excluded by -x {excluded[0]!r}")
                continue
            try:
                reason = unreadable_reason(store)
            except Exception as err:  # noqa: BLE001 - unparsable metadata is a failure of the fixture
                failed += 1
                print(f"FAIL {case}: cannot inspect metadata: {type(err).__name__}: {err}")
                continue
            if reason:
                skipped += 1
                print(f"SKIP {case}: zarr-python cannot read it: {reason}")
                continue
            try:
                summary = check_case(args.zarrow, store, Path(tmp))
            except Exception as err:  # noqa: BLE001 - report every kind of failure per case
                failed += 1
                print(f"FAIL {case}: {type(err).__name__}: {err}")
            else:
                passed += 1
                print(f"ok   {case}: {summary}")
    print(f"{skipped} skipped (not readable by zarr-python, or excluded)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
