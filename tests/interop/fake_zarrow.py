#!/usr/bin/env python3
"""A stand-in for the zarrow CLI, built on zarr-python + pyarrow, to test check_read.py.

Usage: fake_zarrow.py convert SRC DST [--string-type utf8|large-utf8|utf8-view]

Implements the same output contract as ``zarrow convert`` (DST extension .parquet,
.arrow/.ipc/.feather = IPC file, .arrows = IPC stream). It is not a reference for zarrow:
it only lets ``check_read.py`` be exercised before the Rust binary exists, e.g.

    .venv/bin/python tests/interop/check_read.py tests/interop/fake_zarrow.py

Set FAKE_ZARROW_BREAK=1 to corrupt one value per string column (the checker must fail).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zarr

warnings.filterwarnings("ignore")

STRING_TYPES = {"utf8": pa.string(), "large-utf8": pa.large_string(), "utf8-view": pa.string_view()}


def column(arr: zarr.Array, string_type: pa.DataType) -> pa.Array:
    values = np.asarray(arr[...]).ravel(order="C")
    kind = type(arr.metadata.dtype).__name__
    if kind in ("VariableLengthUTF8", "FixedLengthUTF32"):
        out = [str(v) for v in values.tolist()]
        if os.environ.get("FAKE_ZARROW_BREAK") and out:
            out[-1] += "!"
        return pa.array(out, type=string_type)
    if kind in ("VariableLengthBytes", "NullTerminatedBytes"):
        return pa.array([bytes(v) for v in values.tolist()], type=pa.binary())
    native = values.astype(values.dtype.newbyteorder("="))
    return pa.array(native, type=pa.from_numpy_dtype(native.dtype))


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    conv = sub.add_parser("convert")
    conv.add_argument("src", type=Path)
    conv.add_argument("dst", type=Path)
    conv.add_argument("--string-type", default="utf8", choices=sorted(STRING_TYPES))
    args = ap.parse_args()
    st = STRING_TYPES[args.string_type]
    node = zarr.open(store=str(args.src), mode="r")
    if isinstance(node, zarr.Array):
        table = pa.table({args.src.name.removesuffix(".zarr"): column(node, st)})
    else:
        table = pa.table({n: column(a, st) for n, a in sorted(node.arrays(), key=lambda kv: kv[0]) if a.ndim == 1})
    ext = args.dst.suffix
    if ext == ".parquet":
        pq.write_table(table, args.dst)
    elif ext in (".arrow", ".ipc", ".feather"):
        with pa.ipc.new_file(str(args.dst), table.schema) as w:
            w.write_table(table)
    elif ext == ".arrows":
        with pa.ipc.new_stream(str(args.dst), table.schema) as w:
            w.write_table(table)
    else:
        print(f"unknown output extension {ext}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
