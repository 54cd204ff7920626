#!/usr/bin/env python3
"""Pruning by chunk statistics never changes an answer: a seeded, bounded,
differential test over real stores and every engine.

Usage: check_stats_differential.py ZARROW_BIN [--cases N] [--seed S]
           [--engines cli,polars,duckdb,datafusion] [--case I] [--keep DIR]
           [--reference] [--time-limit SECONDS] [--jobs J] [--no-reader] [-v]

Each case (case I of seed S is the same whatever --cases says):

1. A random table of 1-3 columns of the types zarrow records statistics for
   (int8..uint64 with their extremes, float32/float64 with +-0.0, NaNs of both
   signs and other payloads, +-inf, subnormals; strings and bytes around the
   64 bytes the bounds are cut at, multibyte characters across byte 64,
   values that are prefixes of others; booleans; timestamps of every unit with
   and without a time zone; anndata categoricals of strings, integers, floats
   and booleans, ordered or not, with missing values; nulls, all-null chunks,
   empty tables), written by zarrow.write (Zarr v2 / v3, sharded or not,
   plain or anndata layout), by zarr-python or by anndata (then
   ``zarrow.build_stats``).
2. Random changes after the statistics were taken: a chunk rewritten by
   zarr-python, the arrays resized longer or shorter (metadata only), a fill
   value or attributes rewritten, rows appended by zarrow and by zarr-python,
   a categorical's categories rewritten, statistics built again.
3. Random filters (=, <>, <, <=, >, >=, BETWEEN, IN, NOT IN, IS [NOT] NULL,
   LIKE 'prefix%', isnan, NOT, AND, OR, CASTs, arithmetic on the column) with
   literals drawn from the data, from near the bounds and at random, as
   ``SELECT count(*)`` and as the rows; each runs through every engine twice,
   with statistics and without (``--ignore-stats`` / ``use_stats=False``):
   the `zarrow sql` command line, Polars (``zarrow.scan``), DuckDB
   (``zarrow.dataset``) and datafusion-python (``zarrow.table``). The two
   answers must be equal (rows as sorted multisets, NaN equal to NaN, -0.0
   and 0.0 apart: both answers come from one engine). An engine that fails
   in both modes with the same kind of error is a skip; a failure in one
   mode only is a failure.

Each failure prints a self-contained reproduction: the seed and case, the
Python that makes the store, the query as the engine ran it, and both
answers. The last line is "N passed, M failed" (N: compared answers); the
exit status is 1 on any failure. ``--reference`` also compares each engine's
answer without statistics with the same engine over the table read whole
into memory (differences there are pushdown bugs, not pruning bugs: printed
and counted apart, they do not fail the run).

4. The independent reader (tests/interop/stats_reader.py, written from
   docs/spec/chunk-statistics.md) on the same store: every statistics file
   zarrow wrote reads as valid, the reader finds fresh the chunks `zarrow
   stats --show` counts, and for each filter on one column it never skips a
   chunk where DataFusion or DuckDB, over the table in memory, match a row
   (--no-reader leaves it out).

``--jobs J`` runs the cases in J processes; the answers are the same.
.ci/run runs a bounded number of cases; docs/testing.md says how many a change
to statistics runs before it lands.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ENGINES = ("cli", "polars", "duckdb", "datafusion")
MODES = ("stats", "nostats")

# ---------------------------------------------------------------------------
# The recipe: Python source, run here and printed in a reproduction.

PREAMBLE = r'''
import datetime, json, os, struct, warnings
import numpy as np, pandas as pd, pyarrow as pa, zarr, zarrow
warnings.simplefilter("ignore")
inf = float("inf")


def bits64(b):
    """A float from its bits (a NaN's sign and payload kept)."""
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def f64(bits):
    return np.array(bits, dtype=np.uint64).view(np.float64)


def f32(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def floats(bits, nulls=(), width=64):
    """An Arrow float array from the values' bits (NaN payloads kept)."""
    values = f64(bits) if width == 64 else f32(bits)
    mask = np.zeros(len(values), dtype=bool)
    mask[list(nulls)] = True
    return pa.array(values, mask=mask if len(nulls) else None)


def times(ints, unit, tz=None):
    return pa.array(ints, pa.int64()).cast(pa.timestamp(unit, tz))


def np_times(ints, unit):
    return np.array([np.iinfo(np.int64).min if v is None else v for v in ints], dtype=np.int64).view(f"datetime64[{unit}]")


def row_arrays(table):
    """The table's 1-D arrays of rows, by path: plain columns, a categorical's
    codes, a nullable element's values and mask, anndata's _index."""
    found = []

    def walk(group, prefix):
        for name, node in sorted(group.members(), key=lambda m: m[0]):
            if isinstance(node, zarr.Array):
                if node.ndim == 1 and name != "categories":
                    found.append(prefix + name)
            else:
                walk(node, prefix + name + "/")

    walk(zarr.open_group(table, mode="r", use_consolidated=False), "")
    return found


def resolve(table, path, part="main"):
    """A column's array: itself, a categorical's codes, or a nullable
    element's values (part="mask": its mask)."""
    node = os.path.join(table, path)
    for sub in (["mask"] if part == "mask" else []) + ["codes", "values"]:
        if os.path.isdir(os.path.join(node, sub)):
            return os.path.join(path, sub)
    return path


def open_rw(table, path):
    return zarr.open_array(os.path.join(table, path), mode="r+", use_consolidated=False)


def resize_all(table, n):
    """Every row array resized to n rows by zarr-python (metadata only)."""
    for p in row_arrays(table):
        open_rw(table, p).resize((n,))


def append_all(table, k, shift):
    """k rows appended to every row array by zarr-python: the array's own
    values from row `shift` on, cyclically (its fill value when empty)."""
    for p in row_arrays(table):
        a = open_rw(table, p)
        old = a[:]
        if len(old) == 0:
            fill = a.fill_value
            if fill is None:
                fill = "" if old.dtype.kind in "OTU" else np.zeros((), dtype=old.dtype)[()]
            new = np.full(k, fill, dtype=old.dtype)
        else:
            new = np.resize(np.roll(old, -shift), k)
        a.append(new)


def rewrite(table, path, i, j, how, part="main"):
    """Rows i..j of one column's array stored again by zarr-python."""
    a = open_rw(table, resolve(table, path, part))
    i, j = min(i, a.shape[0]), min(j, a.shape[0])
    if i >= j:
        return
    whole = a[:]
    if how == "fill":
        fill = a.fill_value
        if fill is None:
            fill = "" if whole.dtype.kind in "OTU" else np.zeros((), dtype=whole.dtype)[()]
        new = np.full(j - i, fill, dtype=whole.dtype)
    elif how == "reverse":
        new = whole[::-1][i:j]
    else:  # roll
        new = np.roll(whole, j - i)[i:j]
    a[i:j] = new


def metadata(table, path):
    node = os.path.join(table, path)
    v3 = os.path.join(node, "zarr.json")
    return (v3, "fill_value") if os.path.exists(v3) else (os.path.join(node, ".zarray"), "fill_value")


def edit(file, change):
    """A metadata document rewritten as another tool would."""
    with open(file) as f:
        doc = json.load(f)
    change(doc)
    with open(file, "w") as f:
        json.dump(doc, f, indent=2)


FILLS = {
    "i": [1, -1, 7, "max", "min"],
    "u": [1, 7, "max"],
    "f": ["NaN", -0.0, 1.5, "-Infinity", "Infinity", 0.0],
    "b": [True],
    "O": ["zz", "a" * 63 + "\u00e9"],
    "U": ["zz"],
    "T": ["zz", "a" * 63 + "\u00e9"],
    "M": [0, 86400000000000, "NaT"],
}


def set_fill(table, path, choice):
    """The array's fill value rewritten in its metadata document."""
    path = resolve(table, path)
    file, key = metadata(table, path)
    a = zarr.open_array(os.path.join(table, path), mode="r", use_consolidated=False)
    kind = a.dtype.kind if hasattr(a.dtype, "kind") else "O"
    options = FILLS.get(kind)
    if not options:
        return
    value = options[choice % len(options)]
    if value in ("max", "min"):
        info = np.iinfo(a.dtype)
        value = int(info.max if value == "max" else info.min)
    if kind == "M" and value == "NaT" and file.endswith(".zarray"):
        value = int(np.iinfo(np.int64).min)
    if kind in "OT" and "bytes" in open(file).read():
        return
    edit(file, lambda doc: doc.__setitem__(key, value))


def set_attrs(table, path, attrs):
    """Attributes merged into the column array's (zarr.json's or .zattrs)."""
    node = os.path.join(table, resolve(table, path))
    v3 = os.path.join(node, "zarr.json")
    if os.path.exists(v3):
        edit(v3, lambda doc: doc.setdefault("attributes", {}).update(attrs))
    else:
        file = os.path.join(node, ".zattrs")
        if not os.path.exists(file):
            with open(file, "w") as f:
                f.write("{}")
        edit(file, lambda doc: doc.update(attrs))


def rewrite_categories(table, column, how):
    """A categorical's categories stored again by zarr-python."""
    a = open_rw(table, column + "/categories")
    old = a[:]
    a[:] = old[::-1] if how == "reverse" else np.roll(old, 1)


def consolidate(store):
    zarr.consolidate_metadata(store)
'''


def _fresh_namespace() -> dict:
    namespace: dict = {"__name__": "recipe"}
    exec(compile(PREAMBLE, "<preamble>", "exec"), namespace)
    return namespace


# ---------------------------------------------------------------------------
# Values

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
INT_KINDS = tuple(INT_RANGES)
FLOAT_KINDS = ("float32", "float64")

F64_SPECIAL = [
    0x0000000000000000,  # 0.0
    0x8000000000000000,  # -0.0
    0x7FF8000000000000,  # NaN
    0xFFF8000000000000,  # -NaN
    0x7FF8000000000001,  # NaN, payload 1
    0xFFF0000000000001,  # -NaN (signalling)
    0x7FF4000000000000,  # NaN (signalling)
    0x7FF0000000000000,  # inf
    0xFFF0000000000000,  # -inf
    0x0000000000000001,  # least subnormal
    0x8000000000000001,  # -least subnormal
    0x000FFFFFFFFFFFFF,  # greatest subnormal
    0x0010000000000000,  # least normal
    0x7FEFFFFFFFFFFFFF,  # greatest finite
    0xFFEFFFFFFFFFFFFF,  # least finite
    0x3FF0000000000000,  # 1.0
    0xBFF0000000000000,  # -1.0
    0x3FE0000000000000,  # 0.5
]
F32_SPECIAL = [
    0x00000000, 0x80000000, 0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFF800001, 0x7FA00000,
    0x7F800000, 0xFF800000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
    0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000,
]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def bits_f64(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


# Strings around the 64 bytes bounds are cut at: shared prefixes that end
# before, at and after byte 64, multibyte characters across it, characters
# that cannot be raised (U+10FFFF) or whose successor skips the surrogates.
STRING_PIECES = ["a", "b", "z", "\u00e9", "\u20ac", "\U0001F600", "\U0010FFFF", "\uFFFF", "\uD7FF", "~", "\x7f", " ", "A"]
STRING_PREFIXES = [
    "",
    "a" * 60,
    "a" * 62,
    "a" * 63,
    "a" * 64,
    "a" * 65,
    "\u00e9" * 31 + "a",  # 63 bytes
    "\u00e9" * 32,  # 64
    "a" * 62 + "\u20ac",  # bytes 62..65
    "a" * 61 + "\U0001F600",  # bytes 61..65
    "a" * 63 + "\U0010FFFF",
    "\U0010FFFF" * 16,  # 64 bytes that cannot be raised
    "b" * 63 + "\uD7FF",
    "z" * 63 + "\x7f",
]
SHORT_STRINGS = ["", "a", "b", "ab", "\u00e9", "A", "\U0010FFFF", "aa"]

BYTES_PREFIXES = [b"", b"a" * 63, b"a" * 64, b"\xff" * 63, b"\xff" * 64, b"\xff" * 65, b"\x00" * 64, b"a" * 63 + b"\xff"]
BYTES_PIECES = [b"\x00", b"\x01", b"a", b"\xfe", b"\xff", b"\x80"]
SHORT_BYTES = [b"", b"\x00", b"a", b"\xff", b"\x00\x00", b"ab"]

TIME_UNITS = ("s", "ms", "us", "ns")
TIME_ZONES = (None, None, "UTC", "Europe/Paris", "+05:30")
PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@dataclass
class Column:
    name: str
    kind: str  # an INT_KINDS or FLOAT_KINDS name, "string", "binary", "bool", "ts", "cat"
    unit: Optional[str] = None  # ts
    tz: Optional[str] = None  # ts
    cat_kind: Optional[str] = None  # cat: "str", "int", "float", "bool"
    ordered: bool = False  # cat
    categories: list = field(default_factory=list)  # cat
    pool: list = field(default_factory=list)  # values most rows take


def special_values(col: Column) -> list:
    k = col.kind
    if k in INT_RANGES:
        lo, hi = INT_RANGES[k]
        out = {lo, lo + 1, hi - 1, hi, 0, 1, 2, 5}
        if lo < 0:
            out |= {-1, -2}
        if k == "uint64":
            out |= {2**63 - 1, 2**63, 2**63 + 1}
        if k == "int64":
            out |= {-(2**53) - 1, 2**53 + 1}
        return sorted(out)
    if k == "float64":
        return list(F64_SPECIAL)
    if k == "float32":
        return list(F32_SPECIAL)
    if k == "string":
        return SHORT_STRINGS[:4] + STRING_PREFIXES[1:5]
    if k == "binary":
        return SHORT_BYTES + BYTES_PREFIXES[1:4]
    if k == "bool":
        return [False, True]
    if k == "ts":
        p = PER_SECOND[col.unit]
        return [0, 1, -1, I64_MAX, I64_MIN, I64_MIN + 1, 86400 * p, -86400 * p, 1_600_000_000 * p]
    if k == "cat":
        return list(range(len(col.categories)))
    raise AssertionError(k)


def random_value(rng: random.Random, col: Column) -> Any:
    k = col.kind
    r = rng.random()
    if k in INT_RANGES:
        lo, hi = INT_RANGES[k]
        if r < 0.3:
            return rng.choice(special_values(col))
        if r < 0.75:
            return rng.randint(max(lo, -6), min(hi, 12))
        return rng.randint(lo, hi)
    if k in FLOAT_KINDS:
        wide = k == "float64"
        to_bits = f64_bits if wide else f32_bits
        if r < 0.35:
            return rng.choice(F64_SPECIAL if wide else F32_SPECIAL)
        if r < 0.7:
            return to_bits(float(rng.randint(-4, 8)) / rng.choice([1, 2, 4]))
        if r < 0.85:
            return to_bits(rng.uniform(-1e6, 1e6))
        return to_bits(rng.choice([-1, 1]) * 10 ** rng.uniform(-320, 308) if wide else rng.choice([-1, 1]) * 10 ** rng.uniform(-44, 38))
    if k == "string":
        if r < 0.2:
            return rng.choice(SHORT_STRINGS)
        tail = "".join(rng.choice(STRING_PIECES) for _ in range(rng.randint(0, 4)))
        return rng.choice(STRING_PREFIXES) + tail
    if k == "binary":
        if r < 0.2:
            return rng.choice(SHORT_BYTES)
        tail = b"".join(rng.choice(BYTES_PIECES) for _ in range(rng.randint(0, 3)))
        return rng.choice(BYTES_PREFIXES) + tail
    if k == "bool":
        return rng.random() < 0.5
    if k == "ts":
        p = PER_SECOND[col.unit]
        if r < 0.25:
            return rng.choice(special_values(col))
        if r < 0.85:
            return rng.randint(-2_000_000_000, 4_000_000_000) * p + rng.randint(0, p - 1)
        return rng.randint(I64_MIN + 1, I64_MAX)
    if k == "cat":
        return rng.randrange(len(col.categories)) if col.categories else None
    raise AssertionError(k)


def value_of(rng: random.Random, col: Column) -> Any:
    if col.pool and rng.random() < 0.6:
        return rng.choice(col.pool)
    return random_value(rng, col)


def gen_values(rng: random.Random, col: Column, n: int, chunk: int, nulls: bool) -> list:
    """n values, chunk by chunk in one of several shapes (all null, one
    value, sorted, NaNs, mixed), so that chunks differ in their bounds."""
    out: list = []
    null_rate = rng.choice([0.0, 0.1, 0.3]) if nulls else 0.0
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        shapes = ["mixed", "mixed", "one", "sorted", "special"]
        if nulls:
            shapes.append("null")
        if col.kind in FLOAT_KINDS:
            shapes += ["nan", "numbers+nan", "numbers+nan"]
        shape = rng.choice(shapes)
        if shape == "null":
            out += [None] * m
            continue
        if shape == "one":
            v = value_of(rng, col)
            out += [v] * m
        elif shape == "nan":
            nans = F64_SPECIAL[2:7] if col.kind == "float64" else F32_SPECIAL[2:7]
            out += [rng.choice(nans) for _ in range(m)]
        elif shape == "numbers+nan":
            # Numbers, and one NaN of either sign among them.
            nans = F64_SPECIAL[2:7] if col.kind == "float64" else F32_SPECIAL[2:7]
            values = [value_of(rng, col) for _ in range(m)]
            values[rng.randrange(m)] = rng.choice(nans)
            out += values
        elif shape == "special":
            out += [rng.choice(special_values(col)) for _ in range(m)]
        else:
            values = [value_of(rng, col) for _ in range(m)]
            if shape == "sorted" and col.kind not in FLOAT_KINDS:
                values.sort(key=lambda v: (v is None, v))
            out += values
        for i in range(start, start + m):
            if rng.random() < null_rate:
                out[i] = None
    return out


def make_categories(rng: random.Random, cat_kind: str) -> list:
    if cat_kind == "str":
        pool = SHORT_STRINGS[1:] + [p + rng.choice(STRING_PIECES) for p in STRING_PREFIXES[1:]] + ["B cell", "T cell", "NK"]
        pool = list(dict.fromkeys(pool))
        return rng.sample(pool, rng.randint(1, 5))
    if cat_kind == "int":
        pool = [2, 10, 0, 1, -1, 3, 100, -5, 2**40, 9]
        return rng.sample(pool, rng.randint(1, 5))
    if cat_kind == "float":
        pool = [0.5, 10.0, 2.25, -1.5, 0.0, 3.0, 1e300, -0.25, 100.0, float("inf")]
        return rng.sample(pool, rng.randint(1, 5))
    return rng.sample([True, False], rng.randint(1, 2))


# ---------------------------------------------------------------------------
# Rendering values as Python source


def py_floats(bits: list, kind: str) -> str:
    width = 64 if kind == "float64" else 32
    digits = 16 if width == 64 else 8
    nulls = [i for i, b in enumerate(bits) if b is None]
    listed = ", ".join(f"0x{(0 if b is None else b):0{digits}x}" for b in bits)
    extra = f", nulls={nulls}" if nulls else ""
    return f"floats([{listed}]{extra}, width={width})"


def float_comment(bits: list, kind: str) -> str:
    width = 64 if kind == "float64" else 32
    return ", ".join("None" if b is None else repr(bits_f64(b) if width == 64 else bits_f32(b)) for b in bits)


def np_floats(bits: list, kind: str) -> str:
    nan = 0x7FF8000000000000 if kind == "float64" else 0x7FC00000
    digits = 16 if kind == "float64" else 8
    fn = "f64" if kind == "float64" else "f32"
    listed = ", ".join(f"0x{(nan if b is None else b):0{digits}x}" for b in bits)
    return f"{fn}([{listed}])"


def arrow_expr(col: Column, values: list) -> str:
    """A pyarrow array of the column's values, as Python source."""
    k = col.kind
    if k in INT_RANGES:
        return f"pa.array({values!r}, pa.{k}())"
    if k in FLOAT_KINDS:
        return py_floats(values, k)
    if k == "string":
        return f"pa.array({values!r}, pa.string())"
    if k == "binary":
        return f"pa.array({values!r}, pa.binary())"
    if k == "bool":
        return f"pa.array({values!r}, pa.bool_())"
    if k == "ts":
        return f"times({values!r}, {col.unit!r}, {col.tz!r})"
    if k == "cat":
        value_type = {"str": "pa.string()", "int": "pa.int64()", "float": "pa.float64()", "bool": "pa.bool_()"}[col.cat_kind]
        return (
            f"pa.DictionaryArray.from_arrays(pa.array({values!r}, pa.int8()), "
            f"pa.array({col.categories!r}, {value_type}), ordered={col.ordered})"
        )
    raise AssertionError(k)


def numpy_expr(col: Column, values: list) -> str:
    """A numpy array of the column's values for zarr-python (no nulls but NaT)."""
    k = col.kind
    if k in INT_RANGES:
        return f"np.array({values!r}, dtype={k!r})"
    if k in FLOAT_KINDS:
        return np_floats(values, k)
    if k in ("string", "binary"):
        return f"np.array({values!r}, dtype=object)"
    if k == "bool":
        return f"np.array({values!r}, dtype=bool)"
    if k == "ts":
        return f"np_times({values!r}, {col.unit!r})"
    raise AssertionError(k)


PANDAS_NULLABLE = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64", "uint8": "UInt8",
                   "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def pandas_expr(col: Column, values: list) -> str:
    """A pandas column for anndata's writer."""
    k = col.kind
    has_null = any(v is None for v in values)
    if k == "cat":
        codes = [-1 if v is None else v for v in values]
        return f"pd.Categorical.from_codes({codes!r}, categories={col.categories!r}, ordered={col.ordered})"
    if k in INT_RANGES:
        return f"pd.array({values!r}, dtype={PANDAS_NULLABLE[k]!r})" if has_null else f"np.array({values!r}, dtype={k!r})"
    if k in FLOAT_KINDS:
        return np_floats(values, k)
    if k == "string":
        return f"pd.array({values!r}, dtype='string')" if has_null else f"np.array({values!r}, dtype=object)"
    if k == "bool":
        return f"pd.array({values!r}, dtype='boolean')" if has_null else f"np.array({values!r}, dtype=bool)"
    raise AssertionError(k)


# ---------------------------------------------------------------------------
# A case's store: its recipe


@dataclass
class Store:
    writer: str  # "zarrow", "zarrow-anndata", "zarr-python", "anndata"
    columns: list
    rows: int
    chunk: int
    steps: list  # (description, Python source)
    table: str  # the table's path relative to the case directory
    dropped: list = field(default_factory=list)  # steps refused: (description, error)
    # Rows the changes after the statistics wrote or exposed: (start, end).
    touched: list = field(default_factory=list)


KIND_WEIGHTS = {
    "int8": 2, "int16": 1, "int32": 2, "int64": 2, "uint8": 1, "uint16": 1, "uint32": 1, "uint64": 2,
    "float32": 2, "float64": 4, "string": 3, "binary": 1, "bool": 1, "ts": 2, "cat": 4,
}
WRITER_KINDS = {
    "zarrow": set(KIND_WEIGHTS),
    "zarrow-anndata": set(KIND_WEIGHTS) - {"binary"},
    "zarr-python": set(KIND_WEIGHTS) - {"cat"},
    "anndata": set(KIND_WEIGHTS) - {"binary", "ts"},
}


def gen_columns(rng: random.Random, writer: str) -> list:
    allowed = [k for k in KIND_WEIGHTS if k in WRITER_KINDS[writer]]
    weights = [KIND_WEIGHTS[k] for k in allowed]
    if writer in ("zarrow-anndata", "anndata"):
        weights = [w * (3 if k == "cat" else 1) for k, w in zip(allowed, weights)]
    cols = []
    for i in range(rng.choice([1, 1, 2, 2, 3])):
        kind = rng.choices(allowed, weights)[0]
        col = Column(f"c{i}", kind)
        if kind == "ts":
            col.unit = rng.choice(TIME_UNITS)
            col.tz = rng.choice(TIME_ZONES) if writer.startswith("zarrow") else None
        if kind == "cat":
            # zarrow writes no boolean categories (an UnsupportedError): anndata does.
            col.cat_kind = rng.choice(["str", "int", "int", "float"] + (["bool"] if writer == "anndata" else []))
            col.ordered = rng.random() < 0.4
            col.categories = make_categories(rng, col.cat_kind)
        col.pool = [random_value(rng, col) for _ in range(rng.randint(1, 4))]
        cols.append(col)
    return cols


def value_comment(c: Column, values: list) -> str:
    if c.kind in FLOAT_KINDS:
        return f"    # {c.name}: [{float_comment(values, c.kind)}]\n"
    return ""


def table_source(columns: list, data: dict, var: str) -> str:
    body = ",\n".join(f"{value_comment(c, data[c.name])}    {c.name!r}: {arrow_expr(c, data[c.name])}" for c in columns)
    return f"{var} = pa.table({{\n{body}\n}})"


def frame_source(columns: list, data: dict, n: int, var: str, start: int = 0) -> str:
    body = ",\n".join(f"{value_comment(c, data[c.name])}    {c.name!r}: {pandas_expr(c, data[c.name])}" for c in columns)
    index = f"[f'r{{i}}' for i in range({start}, {start + n})]"
    return f"{var} = pd.DataFrame({{\n{body}\n}}, index={index})"


def nulls_allowed(writer: str, col: Column) -> bool:
    if writer == "zarr-python":
        return col.kind == "ts"  # NaT; floats get NaNs as values
    if writer == "anndata":
        return col.kind not in FLOAT_KINDS  # a float's null is a NaN there
    return True


def gen_store(rng: random.Random) -> Store:
    writer = rng.choices(["zarrow", "zarrow-anndata", "zarr-python", "anndata"], [4, 3, 3, 3])[0]
    columns = gen_columns(rng, writer)
    n = rng.choice([0, 1, 2, 3, 5, 8, 13, 20, 33, 64, 100, 150]) if rng.random() < 0.95 else rng.randint(200, 700)
    chunk = rng.choice([1, 2, 3, 4, 4, 5, 7, 8, 16, 32]) if n < 200 else rng.choice([16, 50, 64, 128])
    zarr_format = rng.choice([2, 3, 3])

    def data_for(rows: int) -> dict:
        return {c.name: gen_values(rng, c, rows, chunk, nulls_allowed(writer, c)) for c in columns}

    data = data_for(n)
    steps: list = []
    table = "s.zarr"
    if writer in ("zarrow", "zarrow-anndata"):
        opts = [f"zarr_format={zarr_format}", f"chunk_len={chunk}"]
        if zarr_format == 3 and rng.random() < 0.35:
            opts.append(f"shard_len={chunk * rng.choice([1, 2, 3, 4])}")
        if zarr_format == 3 and rng.random() < 0.2 and writer == "zarrow":
            opts.append(f"encoding={rng.choice(['zarrs-vlen', 'zep0007'])!r}")
        if rng.random() < 0.3:
            opts.append(f"compressor={rng.choice(['none', 'gzip', 'blosc', 'zstd'])!r}")
        if writer == "zarrow-anndata":
            opts.append("layout='anndata'")
        else:
            has_nulls = any(v is None for c in columns if c.kind != "ts" for v in data[c.name])
            if has_nulls:
                opts.append("nulls='fill'")
        src = table_source(columns, data, "t") + f"\nzarrow.write(t, store, {', '.join(opts)})"
        steps.append((f"written by zarrow.write ({writer})", src))
    elif writer == "zarr-python":
        lines = [f"g = zarr.open_group(store, mode='w', zarr_format={zarr_format})"]
        shards = zarr_format == 3 and rng.random() < 0.3
        empty = rng.random() < 0.5
        for c in columns:
            dtype = {"string": "str", "binary": "zarr.dtype.VariableLengthBytes()", "bool": "bool",
                     "ts": f"'datetime64[{c.unit}]'"}.get(c.kind, repr(c.kind))
            extra = ""
            if shards:
                extra += f", shards=({chunk * rng.choice([2, 3, 4])},)"
            if rng.random() < 0.4:
                fill = random_value(rng, c)
                if c.kind in FLOAT_KINDS:
                    fill = f"{np_floats([fill], c.kind)}[0]"
                elif c.kind == "ts":
                    fill = f"np.datetime64({fill}, {c.unit!r})" if fill != I64_MIN else "np.datetime64('NaT')"
                elif c.kind == "binary":
                    fill = None
                else:
                    fill = repr(fill)
                if fill is not None:
                    extra += f", fill_value={fill}"
            if zarr_format == 3:
                extra += ", dimension_names=['row']"
            lines.append(
                f"a = g.create_array({c.name!r}, shape=({n},), chunks=({chunk},){extra}, dtype={dtype}, "
                f"config={{'write_empty_chunks': {empty}}})"
            )
            lines.append(f"a[:] = {numpy_expr(c, data[c.name])}")
        lines.append("zarrow.build_stats(store)")
        steps.append(("written by zarr-python, then build_stats", "\n".join(lines)))
    else:
        table = "s.zarr/obs"
        kwargs = f"{{'chunks': ({chunk},)}}"
        src = (
            "import anndata as ad\n"
            f"ad.settings.zarr_write_format = {zarr_format}\n"
            "ad.settings.allow_write_nullable_strings = True\n"
            + frame_source(columns, data, n, "df")
            + f"\nad.io.write_elem(zarr.open_group(store, mode='w'), 'obs', df, dataset_kwargs={kwargs})"
            + "\nzarrow.build_stats(table)"
        )
        steps.append(("written by anndata, then build_stats", src))

    store = Store(writer, columns, n, chunk, steps, table)
    add_changes(rng, store, data_for)
    return store


def add_changes(rng: random.Random, store: Store, data_for: Callable[[int], dict]) -> None:
    """Random changes after the statistics were taken."""
    n = store.rows
    changes = rng.choices([0, 1, 2, 3], [3, 4, 3, 2])[0]
    cats = [c for c in store.columns if c.kind == "cat"]
    for _ in range(changes):
        what = rng.choices(
            ["rewrite", "resize", "fill", "attrs", "append-zarrow", "append-zarr", "categories", "restats"],
            [4, 6, 3, 2, 2, 2, 2 if cats else 0, 1],
        )[0]
        col = rng.choice(store.columns)
        target = col.name
        if what == "rewrite":
            c = store.chunk
            if rng.random() < 0.6 and n:
                first = rng.randrange(max(1, (n + c - 1) // c)) * c
                i, j = first, first + c
            else:
                i = rng.randint(0, max(0, n))
                j = i + rng.randint(1, 2 * c)
            how = rng.choice(["roll", "reverse", "fill"])
            part = ", part='mask'" if rng.random() < 0.2 else ""
            store.touched.append((i, j))
            store.steps.append((f"rows {i}..{j} of {target} stored again by zarr-python ({how})",
                                f"rewrite(table, {target!r}, {i}, {j}, {how!r}{part})"))
        elif what == "resize":
            room = -n % store.chunk  # rows the last chunk has room for
            if room and rng.random() < 0.4:
                m = n + rng.randint(1, room)  # within the last chunk
            elif rng.random() < 0.6:
                m = n + rng.randint(1, 2 * store.chunk + 1)
            else:
                m = rng.randint(0, max(0, n - 1))
            src = f"resize_all(table, {m})"
            desc = f"every row array resized to {m} by zarr-python"
            if rng.random() < 0.3:
                back = m + rng.randint(1, store.chunk + 1) if m < n else n
                src += f"\nresize_all(table, {back})"
                desc += f", then to {back}"
                m = back
            if m > n:
                store.touched.append((n, m))
            elif src.count("resize_all") == 2:
                store.touched.append((int(src.split("(table, ")[1].split(")")[0]), m))
            n = m
            store.steps.append((desc, src))
        elif what == "fill":
            choice = rng.randrange(6)
            store.steps.append((f"fill value of {target} rewritten", f"set_fill(table, {target!r}, {choice})"))
        elif what == "attrs":
            options = [{"note": "changed"}]
            if col.kind in INT_KINDS or col.kind in FLOAT_KINDS:
                value = 0 if col.kind in INT_KINDS else 0.5
                options += [{"_FillValue": value}, {"scale_factor": 2.0}, {"add_offset": -1}]
            if col.kind in INT_KINDS and col.kind != "uint64":
                options.append({"units": "days since 2000-01-01"})
            attrs = rng.choice(options)
            store.steps.append((f"attributes of {target} rewritten", f"set_attrs(table, {target!r}, {attrs!r})"))
        elif what == "append-zarrow":
            k = rng.randint(1, 2 * store.chunk + 2)
            data = data_for(k)
            if store.writer == "anndata":
                src = frame_source(store.columns, data, k, "more", start=n) + (
                    "\nzarrow.write(pa.Table.from_pandas(more), table, mode='append')")
            else:
                src = table_source(store.columns, data, "more") + "\nzarrow.write(more, table, mode='append')"
                if store.writer == "zarrow" and any(v is None for c in store.columns if c.kind != "ts" for v in data[c.name]):
                    src = src.replace("mode='append')", "mode='append', nulls='fill')")
            store.touched.append((n, n + k))
            n += k
            store.steps.append((f"{k} rows appended by zarrow.write(mode='append')", src))
        elif what == "append-zarr":
            k = rng.randint(1, 2 * store.chunk + 2)
            shift = rng.randint(0, 5)
            store.touched.append((n, n + k))
            n += k
            store.steps.append((f"{k} rows appended to every row array by zarr-python",
                                f"append_all(table, {k}, {shift})"))
        elif what == "categories":
            c = rng.choice(cats)
            how = rng.choice(["reverse", "roll"])
            store.steps.append((f"categories of {c.name} stored again by zarr-python ({how})",
                                f"rewrite_categories(table, {c.name!r}, {how!r})"))
        else:
            store.steps.append(("statistics built again", "zarrow.build_stats(table)"))
        # zarrow's own writes consolidate the metadata, which readers then
        # use: a change of an array's metadata shows there once consolidated.
        if what in ("resize", "fill", "attrs", "append-zarr", "categories") and \
                rng.random() < (0.85 if store.writer.startswith("zarrow") else 0.4):
            store.steps[-1] = (store.steps[-1][0] + "; metadata consolidated",
                               store.steps[-1][1] + "\nconsolidate(store)")


def recipe_source(store: Store, steps: Optional[list] = None) -> str:
    lines = [f"store = {'s.zarr'!r}  # in an empty directory", f"table = {store.table!r}"]
    for desc, src in steps if steps is not None else store.steps:
        lines.append(f"# {desc}")
        lines.append(src)
    return "\n".join(lines)


def build(store: Store, directory: Path) -> Optional[str]:
    """Make the store in `directory` (emptied first). A change that raises
    is dropped (and the store made again without it); a first write that
    raises returns its error."""
    while True:
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        namespace = _fresh_namespace()
        namespace["store"] = str(directory / "s.zarr")
        namespace["table"] = str(directory / store.table)
        failed = None
        for index, (desc, src) in enumerate(store.steps):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(compile(src, f"<step {index}>", "exec"), namespace)
            except BaseException as e:  # noqa: BLE001 (any refusal drops the step)
                if isinstance(e, KeyboardInterrupt):
                    raise
                failed = (index, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                break
        if failed is None:
            return None
        index, error = failed
        if index == 0:
            return error
        store.dropped.append((store.steps[index][0], error))
        del store.steps[index]


# ---------------------------------------------------------------------------
# Queries: a filter as a small tree, rendered for each engine


@dataclass
class Lit:
    kind: str  # "int", "float", "str", "bytes", "bool", "ts", "date", "null"
    value: Any  # float: its bits (float64)
    unit: Optional[str] = None  # ts
    tz: Optional[str] = None  # ts


@dataclass
class ColInfo:
    name: str
    arrow: Any  # the value type (a categorical's categories' type)
    kind: str  # "int", "float", "str", "bytes", "bool", "ts", "other"
    values: list  # non-null values as Lit values
    nulls: bool
    categorical: bool
    int_type: Optional[str] = None
    float_type: Optional[str] = None
    unit: Optional[str] = None
    tz: Optional[str] = None
    # Each chunk's least and greatest value (floats: NaN apart), as values
    # are: literals at a chunk's bounds test the pruning's edges.
    bounds: list = field(default_factory=list)
    distinct: list = field(default_factory=list)
    # Values of the rows changed after the statistics were taken.
    touched: list = field(default_factory=list)


def plain_column(column: Any) -> Any:
    """A column with a dictionary's values, and strings and bytes as `string`
    and `binary` (not views or large)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = column.type
    if pa.types.is_dictionary(t):
        column = pc.cast(column, t.value_type) if column.num_chunks else pa.chunked_array([], t.value_type)
        t = t.value_type
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        column = pc.cast(column, pa.string())
    elif pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        column = pc.cast(column, pa.binary())
    return column


def col_info(name: str, column: Any, chunk: int = 0, touched: tuple = ()) -> ColInfo:
    import pyarrow as pa
    import pyarrow.compute as pc

    categorical = pa.types.is_dictionary(column.type)
    column = plain_column(column)
    t = column.type
    nulls = column.null_count > 0
    info = ColInfo(name, t, "other", [], nulls, categorical)
    values = column.drop_null()
    if pa.types.is_integer(t):
        info.kind, info.int_type = "int", str(t)
        info.values = values.to_pylist()
    elif pa.types.is_floating(t):
        info.kind, info.float_type = "float", str(t)
        info.values = [f64_bits(float(v)) for v in values.to_numpy(zero_copy_only=False).astype("float64")]
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        info.kind = "str"
        info.values = pc.cast(values, pa.string()).to_pylist()
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        info.kind = "bytes"
        info.values = pc.cast(values, pa.binary()).to_pylist()
    elif pa.types.is_boolean(t):
        info.kind = "bool"
        info.values = values.to_pylist()
    elif pa.types.is_timestamp(t):
        info.kind, info.unit, info.tz = "ts", t.unit, t.tz
        info.values = pc.cast(values, pa.int64()).to_pylist()
    if info.kind == "other":
        return info
    info.distinct = sorted(set(info.values), key=repr)
    if chunk > 0:
        if info.kind == "float":
            rows = [None if v is None else f64_bits(float(v)) for v in column.to_pylist()]
        elif info.kind == "ts":
            rows = pc.cast(column, pa.int64()).to_pylist()
        else:
            rows = column.to_pylist()
        changed = {i for start, end in touched for i in range(start, min(end, len(rows)))}
        info.touched = sorted({rows[i] for i in changed if rows[i] is not None}, key=repr)
        for start in range(0, len(rows), chunk):
            part = [v for v in rows[start:start + chunk] if v is not None]
            if info.kind == "float":
                part = [v for v in part if not math.isnan(bits_f64(v))]
                if part:
                    lo = min(part, key=lambda b: (bits_f64(b), not b >> 63))
                    hi = max(part, key=lambda b: (bits_f64(b), not b >> 63))
                    info.bounds.append((lo, hi))
            elif part:
                info.bounds.append((min(part), max(part)))
    return info


def near(rng: random.Random, info: ColInfo, v: Any) -> Any:
    """A value beside v: the next one up or down, a prefix, a raised prefix."""
    k = info.kind
    if k == "int":
        return v + rng.choice([-1, 1])
    if k == "float":
        x = bits_f64(v)
        if math.isnan(x) or math.isinf(x):
            return v ^ 0x8000000000000000
        y = math.nextafter(x, rng.choice([-math.inf, math.inf]))
        if info.float_type == "float":  # float32: its own neighbour, widened
            b = f32_bits(x) + rng.choice([-1, 1])
            y = bits_f32(b & 0xFFFFFFFF)
        return f64_bits(y)
    if k == "str":
        choice = rng.randrange(5)
        if choice == 0:
            return v.encode()[:64].decode(errors="ignore")
        if choice == 1 and v:
            return v[:-1] + chr(min(ord(v[-1]) + 1, 0x10FFFF)) if not 0xD7FF <= ord(v[-1]) < 0xE000 else v + "a"
        if choice == 2:
            return v[: rng.randint(0, len(v))]
        if choice == 3:
            return v + rng.choice(STRING_PIECES)
        return v.encode()[:rng.choice([63, 64, 65])].decode(errors="ignore")
    if k == "bytes":
        choice = rng.randrange(4)
        if choice == 0:
            return v[:64]
        if choice == 1:
            return v[: rng.randint(0, len(v))]
        if choice == 2:
            return v + rng.choice(BYTES_PIECES)
        return v[:-1] + bytes([min(v[-1] + 1, 255)]) if v else b"\x00"
    if k == "ts":
        return v + rng.choice([-1, 1])
    return v


def pick_value(rng: random.Random, info: ColInfo, fresh: bool = False) -> Any:
    """A literal's value for the column: from the data, beside it, a special
    value of the type, or random."""
    k = info.kind
    r = rng.random()
    # Values of the rows changed since the statistics were taken (where
    # they may be stale), of any row, of a chunk's bounds, beside them.
    if info.touched and rng.random() < 0.35:
        return rng.choice(info.touched)
    if info.distinct and r < 0.25:
        return rng.choice(info.distinct)
    # A chunk's bounds; the last chunks' often (appends and resizes act there).
    def bound() -> Any:
        chunks = info.bounds[-3:] if rng.random() < 0.4 else info.bounds
        return rng.choice(rng.choice(chunks))

    if info.bounds and r < 0.45:
        return bound()
    if info.bounds and r < 0.6:
        return near(rng, info, bound())
    if info.values and r < 0.7:
        return near(rng, info, rng.choice(info.values))
    if r < 0.78:
        zero = {"int": 0, "float": 0, "str": "", "bytes": b"", "bool": False, "ts": 0}
        if k in zero:
            return zero[k]
    if k == "int":
        kind = info.int_type if info.int_type in INT_RANGES else "int64"
        return rng.choice(special_values(Column("x", kind)) + [0, 0, 1, 2, 10, 300, -129])
    if k == "float":
        if rng.random() < 0.6:
            return rng.choice(F64_SPECIAL)
        return f64_bits(rng.choice([0.0, 1.0, -1.0, 0.5, 2.0, 10.0, 1e-310, 3.4028235677973366e38, 0.1]))
    if k == "str":
        return rng.choice(SHORT_STRINGS + STRING_PREFIXES)
    if k == "bytes":
        return rng.choice(SHORT_BYTES + BYTES_PREFIXES)
    if k == "bool":
        return rng.random() < 0.5
    if k == "ts":
        p = PER_SECOND[info.unit]
        return rng.choice([0, -1, 1, 86400 * p, 1_600_000_000 * p, I64_MIN + 1, I64_MAX])
    return None


def lit_for(info: ColInfo, value: Any) -> Lit:
    if info.kind == "ts":
        return Lit("ts", value, info.unit, info.tz)
    return Lit(info.kind, value)


# Expressions: ("col", name, kind, info) and the derived forms below; a
# predicate: ("cmp", e, op, lit, typed), ("between", e, lo, hi, negated),
# ("in", e, [lit], negated), ("null", e, negated), ("like", e, prefix,
# negated), ("isnan", e), ("bool", e), ("not", p), ("and", p, q), ("or", p, q).


def gen_colexpr(rng: random.Random, info: ColInfo) -> tuple:
    """The column, or a CAST or arithmetic of it, with the kind it yields."""
    k = info.kind
    r = rng.random()
    if r < 0.78 or k in ("bytes", "other"):
        return ("col", info.name, k, info)
    if k in ("int", "float") and r < 0.88:
        if k == "int" and info.int_type in ("int64", "uint64"):
            return ("arith", info.name, "f+", 1.0, "float", info)
        op, operand = rng.choice([("+", 1), ("*", 2), ("-", 3)]) if k == "int" else rng.choice([("+", 1.0), ("*", -1.0), ("*", 2.0)])
        return ("arith", info.name, op, operand, k, info)
    if k == "int":
        target = rng.choice(["f64", "i64", "str"]) if info.int_type != "uint64" else rng.choice(["f64", "str"])
    elif k == "float":
        target = rng.choice(["f64", "i64"])
    elif k == "ts":
        target = "date"
    elif k == "bool":
        target = rng.choice(["i64", "str"])
    else:  # str
        return ("col", info.name, k, info)
    kind = {"f64": "float", "i64": "int", "str": "str", "date": "date"}[target]
    return ("cast", info.name, target, kind, info)


def derived_values(e: tuple, values: Optional[list] = None) -> list:
    """The values the expression takes over the data (for literals), or
    over `values` of the column."""
    info = e[-1]
    if values is None:
        values = info.values
    if e[0] == "col":
        return values
    if e[0] == "arith":
        _, _, op, operand, kind, _ = e
        out = []
        for v in values[:50]:
            x = bits_f64(v) if info.kind == "float" else v
            if op == "f+":
                y = float(x) + operand
            elif op == "+":
                y = x + operand
            elif op == "-":
                y = x - operand
            else:
                y = x * operand
            out.append(f64_bits(float(y)) if kind == "float" else y)
        return out
    _, _, target, kind, _ = e
    out = []
    for v in values[:50]:
        if target == "f64":
            out.append(f64_bits(float(v)) if info.kind != "float" else v)
        elif target == "i64":
            x = bits_f64(v) if info.kind == "float" else v
            if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
                continue
            out.append(int(x))
        elif target == "str":
            out.append(str(v).lower() if isinstance(v, bool) else str(v))
        elif target == "date":
            try:
                out.append(datetime.date(1970, 1, 1) + datetime.timedelta(days=v // (86400 * PER_SECOND[info.unit])))
            except OverflowError:
                pass
    return out


def pick_for(rng: random.Random, e: tuple) -> Lit:
    info = e[-1]
    kind = e[2] if e[0] == "col" else e[4] if e[0] == "arith" else e[3]
    if e[0] == "col":
        return lit_for(info, pick_value(rng, info))
    values = derived_values(e)
    sub = ColInfo("x", None, kind, values, False, False,
                  int_type="int64", float_type="double", distinct=sorted(set(values), key=repr),
                  touched=sorted(set(derived_values(e, info.touched)), key=repr))
    if kind == "date":
        if values and rng.random() < 0.7:
            d = rng.choice(values)
            return Lit("date", d + datetime.timedelta(days=rng.choice([-1, 0, 0, 1])))
        return Lit("date", rng.choice([datetime.date(1970, 1, 1), datetime.date(2020, 9, 13), datetime.date(1969, 12, 31)]))
    return Lit(kind, pick_value(rng, sub))


def gen_atom(rng: random.Random, infos: list) -> tuple:
    info = rng.choice(infos)
    e = gen_colexpr(rng, info)
    kind = e[2] if e[0] == "col" else e[4] if e[0] == "arith" else e[3]
    choices = ["cmp"] * 6 + ["between", "in", "in", "null", "null"]
    if kind == "str":
        choices += ["like", "like"]
    if kind == "float":
        choices += ["isnan"]
    if kind == "bool" and e[0] == "col":
        choices += ["bool", "bool"]
    what = rng.choice(choices)
    if what == "cmp":
        return ("cmp", e, rng.choice(["=", "<>", "<", "<=", ">", ">="]), pick_for(rng, e), rng.random() < 0.3)
    if what == "between":
        a, b = pick_for(rng, e), pick_for(rng, e)
        return ("between", e, a, b, rng.random() < 0.25)
    if what == "in":
        lits = [pick_for(rng, e) for _ in range(rng.randint(1, 4))]
        return ("in", e, lits, rng.random() < 0.35)
    if what == "null":
        return ("null", e, rng.random() < 0.5)
    if what == "like":
        source = derived_values(e) or [""]
        v = rng.choice(source)
        prefix = v[: rng.choice([0, 1, 2, 10, 60, 63, 64, 65, len(v)])] if rng.random() < 0.8 else near(rng, ColInfo("x", None, "str", [], False, False), v)
        prefix = prefix.replace("%", "").replace("_", "").replace("\\", "")
        return ("like", e, prefix, rng.random() < 0.25)
    if what == "isnan":
        return ("isnan", e)
    return ("bool", e)


def gen_predicate(rng: random.Random, infos: list, depth: int = 0) -> tuple:
    r = rng.random()
    if depth >= 2 or r < 0.55:
        return gen_atom(rng, infos)
    if r < 0.65:
        return ("not", gen_predicate(rng, infos, depth + 1))
    return (rng.choice(["and", "or"]), gen_predicate(rng, infos, depth + 1), gen_predicate(rng, infos, depth + 1))


# --- SQL (DataFusion: the command line and datafusion-python; DuckDB)

DF_INT_TYPES = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT", "uint8": "TINYINT UNSIGNED",
                "uint16": "SMALLINT UNSIGNED", "uint32": "INT UNSIGNED", "uint64": "BIGINT UNSIGNED"}
DUCK_INT_TYPES = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT", "uint8": "UTINYINT",
                  "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT"}
DF_UNITS = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}


def sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def float_text(x: float) -> Optional[str]:
    """A float as a SQL number, or None for NaN, infinities and -0.0."""
    if math.isnan(x) or math.isinf(x) or (x == 0 and math.copysign(1, x) < 0):
        return None
    text = repr(x)
    return text if ("e" in text or "." in text) else text + ".0"


def float_name(x: float) -> str:
    if math.isnan(x):
        return "-NaN" if math.copysign(1, x) < 0 else "NaN"
    if math.isinf(x):
        return "-Infinity" if x < 0 else "Infinity"
    return "-0.0"


def sql_lit(lit: Lit, dialect: str, typed: Optional[str] = None) -> str:
    duck = dialect == "duckdb"
    k, v = lit.kind, lit.value
    if k == "int":
        if typed:
            return f"CAST({sql_string(str(v)) if abs(v) >= 2**62 else v} AS {typed})"
        if v >= 2**62 or v <= -(2**62):
            return f"CAST({sql_string(str(v))} AS {'HUGEINT' if duck else 'DECIMAL(20, 0)'})"
        return str(v) if v >= 0 else f"({v})"
    if k == "float":
        x = bits_f64(v)
        text = float_text(x)
        target = typed or "DOUBLE"
        if text is None:
            return f"CAST({sql_string(float_name(x))} AS {target})"
        if typed or duck:
            return f"CAST({text} AS {target})"
        return text if x >= 0 else f"({text})"
    if k == "str":
        return sql_string(v)
    if k == "bytes":
        if duck:
            return "'" + "".join(f"\\x{b:02X}" for b in v) + "'::BLOB"
        return f"X'{v.hex()}'"
    if k == "bool":
        return "TRUE" if v else "FALSE"
    if k == "date":
        return f"DATE '{v.isoformat()}'"
    if k == "ts":
        if duck:
            micros = v * 10**6 // PER_SECOND[lit.unit] if lit.unit != "us" else v
            if lit.tz:
                return f"CAST(make_timestamp(CAST({micros} AS BIGINT)) AS TIMESTAMPTZ)"
            if lit.unit == "ns":
                return f"make_timestamp_ns(CAST({v} AS BIGINT))"
            return f"CAST(make_timestamp(CAST({micros} AS BIGINT)) AS {'TIMESTAMP_S' if lit.unit == 's' else 'TIMESTAMP_MS' if lit.unit == 'ms' else 'TIMESTAMP'})"
        tz = f'Some("{lit.tz}")' if lit.tz else "None"
        return f"arrow_cast({v}, 'Timestamp({DF_UNITS[lit.unit]}, {tz})')"
    raise AssertionError(k)


def sql_expr(e: tuple, dialect: str) -> str:
    name = f'"{e[1]}"'
    if e[0] == "col":
        return name
    if e[0] == "arith":
        _, _, op, operand, _, _ = e
        if op == "f+":
            return f"(CAST({name} AS DOUBLE) + 1.0)"
        if isinstance(operand, float):
            text = f"CAST({operand!r} AS DOUBLE)" if dialect == "duckdb" else (repr(operand) if operand >= 0 else f"({operand!r})")
            return f"({name} {op} {text})"
        return f"({name} {op} {operand})"
    _, _, target, _, info = e
    if target == "f64":
        return f"CAST({name} AS DOUBLE)"
    if target == "i64":
        return f"TRY_CAST({name} AS BIGINT)"
    if target == "str":
        return f"CAST({name} AS VARCHAR)"
    return f"CAST({name} AS DATE)"


def typed_for(e: tuple, lit: Lit, dialect: str, rng_bit: bool) -> Optional[str]:
    """A CAST of the literal to the column's own type (half of the time)."""
    if not rng_bit or e[0] != "col":
        return None
    info = e[-1]
    if lit.kind == "int" and info.int_type in INT_RANGES:
        lo, hi = INT_RANGES[info.int_type]
        if lo <= lit.value <= hi:
            return (DUCK_INT_TYPES if dialect == "duckdb" else DF_INT_TYPES)[info.int_type]
    if lit.kind == "float" and info.float_type == "float":
        return "FLOAT"
    return None


def sql_pred(p: tuple, dialect: str) -> str:
    k = p[0]
    if k == "cmp":
        _, e, op, lit, typed = p
        typed = typed_for(e, lit, dialect, typed)
        return f"{sql_expr(e, dialect)} {op} {sql_lit(lit, dialect, typed)}"
    if k == "between":
        _, e, a, b, neg = p
        return f"{sql_expr(e, dialect)} {'NOT ' if neg else ''}BETWEEN {sql_lit(a, dialect)} AND {sql_lit(b, dialect)}"
    if k == "in":
        _, e, lits, neg = p
        return f"{sql_expr(e, dialect)} {'NOT ' if neg else ''}IN ({', '.join(sql_lit(l, dialect) for l in lits)})"
    if k == "null":
        return f"{sql_expr(p[1], dialect)} IS {'NOT ' if p[2] else ''}NULL"
    if k == "like":
        _, e, prefix, neg = p
        return f"{sql_expr(e, dialect)} {'NOT ' if neg else ''}LIKE {sql_string(prefix + '%')}"
    if k == "isnan":
        return f"isnan({sql_expr(p[1], dialect)})"
    if k == "bool":
        return sql_expr(p[1], dialect)
    if k == "not":
        return f"NOT ({sql_pred(p[1], dialect)})"
    return f"({sql_pred(p[1], dialect)}) {k.upper()} ({sql_pred(p[2], dialect)})"


# --- Polars (source text, evaluated with `pl` and `bits64` in scope)

def polars_lit(lit: Lit, dtype: Any = None) -> str:
    k, v = lit.kind, lit.value
    if k == "int":
        return f"pl.lit({v})"
    if k == "float":
        x = bits_f64(v)
        text = f"bits64(0x{v:016x})" if float_text(x) is None else repr(x)
        return f"pl.lit({text})"
    if k in ("str", "bytes", "bool"):
        return f"pl.lit({v!r})"
    if k == "date":
        return f"pl.lit(datetime.date({v.year}, {v.month}, {v.day}))"
    if k == "ts":
        unit, tz = lit.unit, lit.tz
        pl_unit = getattr(dtype, "time_unit", None) or ("ms" if unit == "s" else unit)
        value = v * PER_SECOND[pl_unit] // PER_SECOND[unit] if PER_SECOND[pl_unit] >= PER_SECOND[unit] else v // (PER_SECOND[unit] // PER_SECOND[pl_unit])
        pl_tz = getattr(dtype, "time_zone", None)
        return f"pl.lit({value}, dtype=pl.Int64).cast(pl.Datetime({pl_unit!r}, {pl_tz!r}))"
    raise AssertionError(k)


def polars_values(lits: list, dtype: Any = None) -> str:
    """A Series of the literals (for is_in), of one type."""
    k = lits[0].kind
    if k == "ts":
        lit = lits[0]
        unit = getattr(dtype, "time_unit", None) or ("ms" if lit.unit == "s" else lit.unit)
        scale = lambda v: v * PER_SECOND[unit] // PER_SECOND[lit.unit] if PER_SECOND[unit] >= PER_SECOND[lit.unit] else v // (PER_SECOND[lit.unit] // PER_SECOND[unit])
        values = [scale(l.value) for l in lits]
        return f"pl.Series({values!r}, dtype=pl.Int64).cast(pl.Datetime({unit!r}, {getattr(dtype, 'time_zone', None)!r}))"
    if k == "float":
        texts = [f"bits64(0x{l.value:016x})" if float_text(bits_f64(l.value)) is None else repr(bits_f64(l.value)) for l in lits]
        return f"pl.Series([{', '.join(texts)}], dtype=pl.Float64)"
    if k == "date":
        return "pl.Series([" + ", ".join(f"datetime.date({l.value.year}, {l.value.month}, {l.value.day})" for l in lits) + "])"
    if k == "int":
        values = [l.value for l in lits]
        if all(-(2**63) <= v < 2**63 for v in values):
            return f"pl.Series({values!r}, dtype=pl.Int64)"
        if all(0 <= v < 2**64 for v in values):
            return f"pl.Series({values!r}, dtype=pl.UInt64)"
        return f"pl.Series({values!r}, dtype=pl.Int128)"
    return f"pl.Series({[l.value for l in lits]!r})"


def polars_expr(e: tuple) -> str:
    name = f"pl.col({e[1]!r})"
    if e[0] == "col":
        return name
    if e[0] == "arith":
        _, _, op, operand, _, _ = e
        if op == "f+":
            return f"({name}.cast(pl.Float64) + 1.0)"
        return f"({name} {op} {operand!r})"
    _, _, target, _, _ = e
    return {
        "f64": f"{name}.cast(pl.Float64)",
        "i64": f"{name}.cast(pl.Int64, strict=False)",
        "str": f"{name}.cast(pl.String)",
        "date": f"{name}.cast(pl.Date)",
    }[target]


def polars_pred(p: tuple, schema: dict) -> str:
    k = p[0]

    def dtype(e: tuple) -> Any:
        return schema.get(e[1]) if e[0] == "col" else None

    if k == "cmp":
        _, e, op, lit, _ = p
        op = {"=": "==", "<>": "!="}.get(op, op)
        return f"({polars_expr(e)} {op} {polars_lit(lit, dtype(e))})"
    if k == "between":
        _, e, a, b, neg = p
        inner = f"{polars_expr(e)}.is_between({polars_lit(a, dtype(e))}, {polars_lit(b, dtype(e))})"
        return f"~({inner})" if neg else inner
    if k == "in":
        _, e, lits, neg = p
        inner = f"{polars_expr(e)}.is_in({polars_values(lits, dtype(e))})"
        return f"~({inner})" if neg else inner
    if k == "null":
        return f"{polars_expr(p[1])}.{'is_not_null' if p[2] else 'is_null'}()"
    if k == "like":
        _, e, prefix, neg = p
        inner = f"{polars_expr(e)}.cast(pl.String).str.starts_with({prefix!r})"
        return f"~({inner})" if neg else inner
    if k == "isnan":
        return f"{polars_expr(p[1])}.is_nan()"
    if k == "bool":
        return polars_expr(p[1])
    if k == "not":
        return f"~({polars_pred(p[1], schema)})"
    return f"({polars_pred(p[1], schema)}) {'&' if k == 'and' else '|'} ({polars_pred(p[2], schema)})"


# ---------------------------------------------------------------------------
# Answers


def canon(table: Any) -> list:
    """A table's rows as a sorted list of tuples: times as integers,
    dictionaries as their values, floats by their bits (every NaN one
    value; -0.0 and 0.0 apart)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        t = column.type
        if pa.types.is_dictionary(t):
            column = column.dictionary_decode()
            t = column.type
        if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
            column = pc.cast(column, pa.int64())
        elif pa.types.is_string_view(t) or pa.types.is_large_string(t):
            column = pc.cast(column, pa.string())
        elif pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
            column = pc.cast(column, pa.binary())
        if pa.types.is_floating(column.type):
            valid = column.is_valid().to_pylist()
            values = column.to_numpy(zero_copy_only=False).astype("float64")
            out = []
            for ok, x in zip(valid, values):
                if not ok:
                    out.append(None)
                elif math.isnan(x):
                    out.append(("nan",))
                else:
                    out.append(("f", f64_bits(float(x))))
            columns.append(out)
        else:
            columns.append(column.to_pylist())
    rows = list(zip(*columns)) if columns else [()] * table.num_rows
    return sorted(rows, key=repr)


def short(answer: Any, limit: int = 12) -> str:
    if answer[0] == "error":
        return f"error {answer[1]}: {answer[2]}"
    value = answer[1]
    if isinstance(value, list):
        head = ", ".join(repr(r) for r in value[:limit])
        more = f", ... ({len(value)} rows)" if len(value) > limit else ""
        return f"{len(value)} rows: [{head}{more}]"
    return repr(value)


def error_answer(e: BaseException) -> tuple:
    if isinstance(e, (KeyboardInterrupt, SystemExit)):
        raise e
    text = str(e).strip().splitlines()
    return ("error", type(e).__name__, text[0][:300] if text else "")


# ---------------------------------------------------------------------------
# Engines


@dataclass
class Query:
    index: int
    pred: tuple
    form: str  # "count" or "rows"
    columns: list


def sql_text(q: Query, dialect: str) -> str:
    where = sql_pred(q.pred, dialect)
    if q.form == "count":
        return f"SELECT count(*) AS n FROM t WHERE {where}"
    cols = ", ".join(f'"{c}"' for c in q.columns)
    return f"SELECT {cols} FROM t WHERE {where}"


def result(table: Any, q: Query) -> tuple:
    if q.form == "count":
        return ("ok", int(table.column(0)[0].as_py()))
    return ("ok", canon(table))


class CliEngine:
    """`zarrow sql`, the queries of a case and mode in one process: each a
    `COPY (...) TO 'i.arrow'`; a statement that fails ends the process, and
    the rest run after it."""

    name = "cli"

    def __init__(self, binary: str):
        self.binary = binary

    def command(self, sql: str, table: str, mode: str) -> list:
        cmd = [self.binary, "sql", sql, "--table", f"t={table}"]
        if mode == "nostats":
            cmd.append("--ignore-stats")
        return cmd

    def run_all(self, queries: list, table: str, mode: str, work: Path) -> dict:
        import pyarrow.ipc as ipc

        answers: dict = {}
        pending = list(queries)
        while pending:
            out = work / f"cli-{mode}"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            statements = [
                f"COPY ({sql_text(q, 'datafusion')}) TO '{out}/{i}.arrow' STORED AS ARROW"
                for i, q in enumerate(pending)
            ]
            proc = subprocess.run(self.command(";\n".join(statements), table, mode), capture_output=True, text=True,
                                  timeout=300)
            written = 0
            while written < len(pending) and (out / f"{written}.arrow").exists():
                written += 1
            # When the process failed, the last file written may be the
            # failed statement's (COPY leaves an empty file behind): that
            # statement runs again alone (--output, whole or nothing).
            done = written if proc.returncode == 0 else max(0, written - 1)
            for i, q in enumerate(pending[:done]):
                try:
                    with ipc.open_file(out / f"{i}.arrow") as f:
                        answers[(q.index, q.form)] = result(f.read_all(), q)
                except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                    answers[(q.index, q.form)] = error_answer(e)
            if done == len(pending):
                break
            q = pending[done]
            if proc.returncode != 0 and written == 0:
                answers[(q.index, q.form)] = ("error", "cli", cli_error(proc.stderr))
            else:
                answers[(q.index, q.form)] = self.single(q, table, mode, work)
            pending = pending[done + 1:]
        return answers

    def single(self, q: Query, table: str, mode: str, work: Path) -> tuple:
        import pyarrow.ipc as ipc

        file = work / f"single-{mode}.arrow"
        file.unlink(missing_ok=True)
        cmd = self.command(sql_text(q, "datafusion"), table, mode) + ["--output", str(file)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return ("error", "cli", cli_error(proc.stderr))
        try:
            with ipc.open_file(file) as f:
                return result(f.read_all(), q)
        except BaseException as e:  # noqa: BLE001
            return error_answer(e)


def shell_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def cli_error(stderr: str) -> str:
    lines = [l for l in stderr.strip().splitlines() if "error" in l.lower()]
    return (lines[-1] if lines else stderr.strip()[-300:])[:300]


def error_kind(answer: tuple) -> str:
    """The class of an error, for 'the same error in both modes': the
    exception's class (the command line's: its message without numbers)."""
    if answer[1] == "cli":
        return re.sub(r"\d+", "N", answer[2])[:60]
    return answer[1]


class PolarsEngine:
    name = "polars"

    def run_all(self, queries: list, table: str, mode: str, work: Path) -> dict:
        import polars as pl
        import zarrow

        answers: dict = {}
        try:
            lf = zarrow.scan(table, use_stats=(mode == "stats"))
            schema = dict(lf.collect_schema())
        except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
            return {(q.index, q.form): error_answer(e) for q in queries}
        namespace = {"pl": pl, "bits64": bits_f64, "datetime": datetime}
        for q in queries:
            try:
                expr = eval(polars_pred(q.pred, schema), namespace)  # noqa: S307 (our own source)
                filtered = lf.filter(expr)
                if q.form == "count":
                    answers[(q.index, q.form)] = ("ok", int(filtered.select(pl.len()).collect().item()))
                else:
                    answers[(q.index, q.form)] = ("ok", canon(filtered.select(q.columns).collect().to_arrow()))
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                answers[(q.index, q.form)] = error_answer(e)
        return answers

    def text(self, q: Query, schema: Optional[dict] = None) -> str:
        pred = polars_pred(q.pred, schema or {})
        tail = ".select(pl.len()).collect().item()" if q.form == "count" else f".select({q.columns!r}).collect()"
        return f".filter({pred}){tail}"


class DuckEngine:
    name = "duckdb"

    def run_all(self, queries: list, table: str, mode: str, work: Path) -> dict:
        import duckdb
        import zarrow

        answers: dict = {}
        con = duckdb.connect()
        try:
            con.execute("SET TimeZone = 'UTC'")
            try:
                ds = zarrow.dataset(table, use_stats=(mode == "stats"))
                con.register("t", ds)
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                return {(q.index, q.form): error_answer(e) for q in queries}
            for q in queries:
                try:
                    answers[(q.index, q.form)] = result(con.sql(sql_text(q, "duckdb")).fetch_arrow_table(), q)
                except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                    answers[(q.index, q.form)] = error_answer(e)
        finally:
            con.close()
        return answers


class DataFusionEngine:
    name = "datafusion"

    def __init__(self) -> None:
        # For each count query with statistics: the rows they pruned (EXPLAIN
        # ANALYZE's rows_pruned_by_statistics), to see that pruning happens.
        self.pruned: dict = {}

    def run_all(self, queries: list, table: str, mode: str, work: Path) -> dict:
        import zarrow
        from datafusion import SessionContext

        answers: dict = {}
        ctx = SessionContext()
        try:
            ctx.register_table("t", zarrow.table(table, use_stats=(mode == "stats")))
        except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
            return {(q.index, q.form): error_answer(e) for q in queries}
        for q in queries:
            try:
                answers[(q.index, q.form)] = result(ctx.sql(sql_text(q, "datafusion")).to_arrow_table(), q)
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                answers[(q.index, q.form)] = error_answer(e)
                continue
            if mode == "stats" and q.form == "count":
                try:
                    plan = ctx.sql("EXPLAIN ANALYZE " + sql_text(q, "datafusion")).to_arrow_table()
                    text = "\n".join(str(v) for v in plan.column(plan.num_columns - 1).to_pylist())
                    self.pruned[q.index] = sum(int(n) for n in re.findall(r"rows_pruned_by_statistics=(\d+)", text))
                except Exception:  # noqa: BLE001
                    pass
        return answers


def reference_answers(engine: str, queries: list, table: str) -> dict:
    """The engine's answers over the table read whole into memory (no zarrow
    scan, pushdown or statistics)."""
    import pyarrow as pa
    import zarrow

    answers: dict = {}
    if engine in ("cli", "datafusion"):
        from datafusion import SessionContext

        data = pa.table(zarrow.read(table, categorical_values=True, use_stats=False))
        ctx = SessionContext()
        ctx.register_record_batches("t", [data.to_batches()] if data.num_rows else [[pa.record_batch([pa.array([], f.type) for f in data.schema], schema=data.schema)]])
        for q in queries:
            try:
                answers[(q.index, q.form)] = result(ctx.sql(sql_text(q, "datafusion")).to_arrow_table(), q)
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                answers[(q.index, q.form)] = error_answer(e)
    elif engine == "duckdb":
        import duckdb

        data = pa.table(zarrow.read(table, string_type="utf8", use_stats=False))
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.register("t", data)
        for q in queries:
            try:
                answers[(q.index, q.form)] = result(con.sql(sql_text(q, "duckdb")).fetch_arrow_table(), q)
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                answers[(q.index, q.form)] = error_answer(e)
        con.close()
    else:
        import polars as pl

        lf0 = zarrow.scan(table, use_stats=False)
        schema = dict(lf0.collect_schema())
        frame = lf0.collect()  # no filter: nothing pushed
        namespace = {"pl": pl, "bits64": bits_f64, "datetime": datetime}
        for q in queries:
            try:
                expr = eval(polars_pred(q.pred, schema), namespace)  # noqa: S307
                filtered = frame.filter(expr)
                if q.form == "count":
                    answers[(q.index, q.form)] = ("ok", filtered.height)
                else:
                    answers[(q.index, q.form)] = ("ok", canon(filtered.select(q.columns).to_arrow()))
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                answers[(q.index, q.form)] = error_answer(e)
    return answers


# ---------------------------------------------------------------------------
# The independent reader (tests/interop/stats_reader.py, written from
# docs/spec/chunk-statistics.md) on the same stores: it reads every
# statistics file zarrow wrote, finds the same chunks fresh as `zarrow stats
# --show`, and never skips a chunk where DataFusion or DuckDB, over the table
# in memory, match a row of a filter on one column.


def reader_value(lit: Lit) -> Any:
    """A literal in the conformance mini-language (docs/spec/chunk-statistics.md)."""
    if lit.kind == "float":
        x = bits_f64(lit.value)
        if math.isnan(x):
            return {"float": "-nan" if lit.value >> 63 else "nan"}
        if math.isinf(x):
            return {"float": "-inf" if x < 0 else "inf"}
        return x
    if lit.kind == "bytes":
        return {"hex": lit.value.hex()}
    if lit.kind in ("int", "str", "bool", "ts"):
        return lit.value
    return None


def reader_pred(p: tuple, column: Optional[str] = None) -> Optional[tuple]:
    """(column, predicate) for a filter on one column itself (no CAST or
    arithmetic), in the mini-language; None for any other filter."""
    k = p[0]
    if k in ("not", "and", "or"):
        parts = [reader_pred(x, column) for x in p[1:]]
        if any(x is None for x in parts) or len({c for c, _ in parts}) != 1:
            return None
        name = parts[0][0]
        if k == "not":
            return name, {"op": "not", "arg": parts[0][1]}
        return name, {"op": k, "args": [x[1] for x in parts]}
    if k not in ("cmp", "between", "in", "null", "like") or p[1][0] != "col":
        return None
    name = p[1][1]
    if column is not None and name != column:
        return None
    if k == "null":
        return name, {"op": "is_not_null" if p[2] else "is_null"}
    if k == "like":
        pred = {"op": "starts_with", "value": p[2]}
        return name, ({"op": "not", "arg": pred} if p[3] else pred)
    lits = [p[3]] if k == "cmp" else [p[2], p[3]] if k == "between" else p[2]
    values = [reader_value(lit) for lit in lits]
    if any(v is None for v in values):
        return None
    if k == "cmp":
        op = {"=": "eq", "<>": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[p[2]]
        return name, {"op": op, "value": values[0]}
    if k == "between":
        pred = {"op": "between", "low": values[0], "high": values[1]}
        return name, ({"op": "not", "arg": pred} if p[4] else pred)
    return name, {"op": "not_in" if p[3] else "in", "values": values}


def stats_lines(binary: str, table: str) -> dict:
    """`zarrow stats --show TABLE`: {array path: (fresh, chunks)} or the
    line's text when the array's statistics are not counted."""
    proc = subprocess.run([binary, "stats", "--show", table], capture_output=True, text=True, timeout=120)
    out = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^(.*?): (\d+) of (\d+) chunks", line)
        if m:
            out[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        elif ": " in line:
            path, rest = line.split(": ", 1)
            out[path] = rest
    return out


def literals(p: Any) -> list:
    """Every literal in a filter."""
    if isinstance(p, Lit):
        return [p]
    if isinstance(p, (tuple, list)):
        return [lit for x in p for lit in literals(x)]
    return []


def duck_exact(p: tuple) -> bool:
    """Whether DuckDB's rendering of the filter keeps each literal's value: a
    nanosecond timestamp with a time zone becomes a TIMESTAMPTZ of microseconds."""
    return not any(lit.kind == "ts" and lit.unit == "ns" and lit.tz for lit in literals(p))


def matching_rows(data: Any, where: dict) -> dict:
    """{engine: set of row numbers matching each SQL filter}: DataFusion and
    DuckDB over the table in memory (an engine that cannot run a filter is
    left out)."""
    import duckdb
    import pyarrow as pa
    from datafusion import SessionContext

    indexed = data.append_column("__row", pa.array(range(data.num_rows), pa.int64()))
    ctx = SessionContext()
    batches = indexed.to_batches() or [pa.record_batch([pa.array([], f.type) for f in indexed.schema], schema=indexed.schema)]
    ctx.register_record_batches("t", [batches])
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    duck = pa.table({name: plain_column(col) for name, col in zip(indexed.column_names, indexed.columns)})
    con.register("t", duck)
    out: dict = {}
    for key, q in where.items():
        rows = {}
        for engine, run in (("datafusion", lambda s: ctx.sql(s).to_arrow_table()),
                            ("duckdb", lambda s: con.sql(s).fetch_arrow_table())):
            if engine == "duckdb" and not duck_exact(q):
                continue
            try:
                t = run(f"SELECT __row FROM t WHERE {sql_pred(q, engine)}")
                rows[engine] = set(t.column(0).to_pylist())
            except Exception:  # noqa: BLE001 (an engine refusing the filter)
                pass
        out[key] = rows
    con.close()
    return out


def consolidated_metadata(table: str, rel: str) -> Optional[dict]:
    """The array's metadata as consolidated metadata at the table's root holds
    it (what zarrow reads the chunks with, and so what freshness (b) compares:
    the spec), in read_metadata's form; None without consolidated metadata."""
    root = Path(table)
    v2 = root / ".zmetadata"
    if v2.is_file():
        entries = json.loads(v2.read_text()).get("metadata", {})
        meta = entries.get(f"{rel}/.zarray")
        if meta is None:
            return None
        meta = dict(meta, zarr_format=2, attributes=entries.get(f"{rel}/.zattrs", {}))
        return meta
    v3 = root / "zarr.json"
    if v3.is_file():
        doc = json.loads(v3.read_text())
        consolidated = doc.get("consolidated_metadata") or {}
        meta = (consolidated.get("metadata") or {}).get(rel)
        return dict(meta) if meta is not None else None
    return None


def reader_check(case: int, binary: Optional[str], table: str, data: Any, queries: list, outcome: "Outcome",
                 out: Callable[[str], None]) -> None:
    import numpy as np
    import zarr

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import stats_reader as sr

    def fail(what: str) -> None:
        outcome.reader_failed += 1
        report = f"READER FAILED: case {case}: {what}"
        outcome.failures.append(report)
        out(report)

    shown = stats_lines(binary, table) if binary else {}
    arrays = {}
    for path in sorted(Path(table).rglob(sr.STATS_KEY)):
        directory = path.parent
        rel = directory.relative_to(table).as_posix()
        meta = consolidated_metadata(table, rel) or sr.read_metadata(str(directory))
        try:
            stats = sr.read_stats(path.read_bytes())
        except sr.InvalidStats as e:
            fail(f"{rel}/{sr.STATS_KEY}, written by zarrow, is not valid by the specification: {e}")
            continue
        versions = sr.local_versions(str(directory))
        outcome.reader_files += 1
        if rel in shown:
            if isinstance(shown[rel], tuple):
                fresh, chunks = shown[rel]
                mine = len(sr.fresh_rows(stats, meta, versions)) if sr.usable(stats, meta) else None
                if mine != fresh or sr.statistic_chunks(stats, meta) != chunks:
                    fail(f"{rel}: zarrow stats --show says {fresh} of {chunks} chunks fresh; the reader: "
                         f"{'not usable' if mine is None else mine} of {sr.statistic_chunks(stats, meta)}")
                else:
                    outcome.reader_agreed += 1
            elif sr.usable(stats, meta):
                fail(f"{rel}: zarrow stats --show says {shown[rel]!r}; the reader finds the file usable")
            else:
                outcome.reader_agreed += 1
        column, _, part = rel.partition("/")
        categories = None
        if part == "codes":
            try:
                raw = zarr.open_array(str(Path(table) / column / "categories"), mode="r")[:]
                categories = [float(v) if isinstance(v, np.floating) else v.item() if hasattr(v, "item") else v
                              for v in raw]
            except Exception:  # noqa: BLE001 (no categories: not checked)
                continue
        elif part:
            continue  # a nullable element's values or mask: not a column's values alone
        if column in data.column_names:
            arrays[column] = (stats, meta, versions, categories)
    where = {}
    for q in queries:
        if q.form != "count":
            continue
        translated = reader_pred(q.pred)
        if translated is not None and translated[0] in arrays:
            where[q.index] = q.pred
    if not where:
        return
    truth = matching_rows(data, where)
    for q in queries:
        if q.index not in where or q.form != "count":
            continue
        column, pred = reader_pred(q.pred)
        stats, meta, versions, categories = arrays[column]
        try:
            keep = sr.prune(stats, meta, versions, pred, categories=categories)
        except Exception as e:  # noqa: BLE001
            fail(f"the reader cannot prune {column} by {json.dumps(pred)}: {type(e).__name__}: {e}")
            continue
        outcome.reader_predicates += 1
        length = stats.chunk_len if sr.usable(stats, meta) else None
        for engine, rows in truth[q.index].items():
            for i, kept in enumerate(keep):
                if kept or length is None:
                    continue
                hits = sorted(r for r in rows if i * length <= r < (i + 1) * length)
                if hits:
                    fail(f"the reader skips chunk {i} of {column} for {json.dumps(pred)}, where {engine} "
                         f"matches rows {hits[:5]}: WHERE {sql_pred(q.pred, engine)}")
                    break
        outcome.reader_skipped += sum(1 for k in keep if not k)


# ---------------------------------------------------------------------------
# Running


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    skipped: int = 0  # both modes failed alike
    skip_reasons: dict = field(default_factory=dict)  # (engine, error kind) -> count
    refused: int = 0  # cases whose first write was refused
    unreadable: int = 0  # cases whose store zarrow could not read
    reference_diffs: int = 0
    failures: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    engine_seconds: dict = field(default_factory=dict)
    engine_cases: dict = field(default_factory=dict)
    engine_passed: dict = field(default_factory=dict)  # engine -> answers equal in both modes
    first_failure_case: dict = field(default_factory=dict)  # class -> case index
    minimized: set = field(default_factory=set)  # cases whose first failure was minimized
    cases: int = 0
    build_seconds: float = 0.0
    pruning_queries: int = 0  # datafusion's count queries with statistics
    pruned_queries: int = 0  # of which pruned rows
    # The independent reader (reader_check).
    reader_files: int = 0  # statistics files it read
    reader_agreed: int = 0  # of which `zarrow stats --show` counts the same fresh chunks
    reader_predicates: int = 0  # filters it pruned by
    reader_skipped: int = 0  # chunks it skipped
    reader_failed: int = 0

    def merge(self, other: "Outcome") -> None:
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(self, name, mine + value)
            elif isinstance(value, list):
                mine.extend(value)
            elif isinstance(value, set):
                mine.update(value)
            elif isinstance(value, dict):
                for k, v in value.items():
                    if name == "first_failure_case":
                        mine[k] = min(mine.get(k, v), v)
                    else:
                        mine[k] = mine.get(k, 0) + v


def case_rng(seed: int, case: int) -> random.Random:
    return random.Random(f"zarrow-stats:{seed}:{case}")


def make_queries(rng: random.Random, infos: list, count: int) -> list:
    queries = []
    names = [i.name for i in infos]
    changed = [i for i in infos if i.touched]
    for index in range(count):
        # Half of them one comparison (where a wrong pruning shows most
        # plainly), half a random tree of them; the first, where rows were
        # changed after the statistics were taken, looks for their values.
        if index == 0 and changed:
            info = rng.choice(changed)
            e = ("col", info.name, info.kind, info)
            lit = lit_for(info, rng.choice(info.touched))
            op = rng.choice(["=", "=", "<=", ">=", "in"])
            pred = ("in", e, [lit], False) if op == "in" else ("cmp", e, op, lit, rng.random() < 0.3)
        else:
            pred = gen_atom(rng, infos) if index % 2 == 0 else gen_predicate(rng, infos)
        queries.append(Query(index, pred, "count", names))
        queries.append(Query(index, pred, "rows", names))
    return queries


def pred_columns(p: Any) -> set:
    """The names of the columns a predicate reads."""
    if isinstance(p, ColInfo):
        return {p.name}
    if isinstance(p, tuple):
        return set().union(*(pred_columns(x) for x in p)) if p else set()
    if isinstance(p, list):
        return set().union(*(pred_columns(x) for x in p)) if p else set()
    return set()


def classify(store: Store, infos: list, q: Query) -> str:
    """A failure's features (for counting the cases until each kind is
    found): what the filtered columns are, how the store was made and
    changed."""
    names = pred_columns(q.pred)
    features = []
    for c in store.columns:
        if c.name not in names:
            continue
        if c.kind == "cat":
            features.append(f"categorical of {c.cat_kind} ({store.writer})")
        else:
            features.append(c.kind)
    for info in infos:
        if info.name in names and info.kind == "float":
            if any(math.isnan(bits_f64(v)) and v >> 63 for v in info.values):
                features.append("a NaN with the sign bit")
    changes = [d for d, _ in store.steps[1:]]
    for d in changes:
        if "resized" in d:
            features.append("resized by zarr-python")
        elif "appended" in d:
            features.append("appended")
        elif "stored again" in d:
            features.append("chunk stored again")
        elif "fill value" in d:
            features.append("fill value rewritten")
        elif "attributes" in d:
            features.append("attributes rewritten")
    return "; ".join(dict.fromkeys(features))


def describe_pred(q: Query, engine: str, schema: Optional[dict], table: str = "TABLE") -> str:
    """The query as the engine ran it, as code (USE_STATS: True, then False)."""
    if engine == "polars":
        return "import polars as pl\nlf = zarrow.scan(table, use_stats=USE_STATS)\nlf" + PolarsEngine().text(q, schema)
    if engine == "duckdb":
        return ("import duckdb\ncon = duckdb.connect(); con.execute(\"SET TimeZone = 'UTC'\")\n"
                "con.register('t', zarrow.dataset(table, use_stats=USE_STATS))\n"
                f"con.sql({sql_text(q, 'duckdb')!r}).fetch_arrow_table()")
    if engine == "datafusion":
        return ("import datafusion\nctx = datafusion.SessionContext()\n"
                "ctx.register_table('t', zarrow.table(table, use_stats=USE_STATS))\n"
                f"ctx.sql({sql_text(q, 'datafusion')!r}).to_arrow_table()")
    return (f"ZARROW sql {shell_quote(sql_text(q, 'datafusion'))} --table t={table}            # with statistics\n"
            f"ZARROW sql {shell_quote(sql_text(q, 'datafusion'))} --table t={table} --ignore-stats")


def run_case(seed: int, case: int, engines: list, binary: Optional[str], work: Path, outcome: Outcome,
             reference: bool, out: Callable[[str], None], verbose: bool, queries_per_case: int,
             minimize_first: bool = True, reader: bool = True) -> None:
    import pyarrow as pa
    import zarrow

    rng = case_rng(seed, case)
    store = gen_store(rng)
    directory = work / f"case{case}"
    started = time.perf_counter()
    error = build(store, directory)
    outcome.build_seconds += time.perf_counter() - started
    outcome.cases += 1
    for desc, why in store.dropped:
        outcome.notes.append(f"case {case}: step refused, dropped: {desc}: {why}")
    if error is not None:
        outcome.refused += 1
        outcome.notes.append(f"case {case}: the first write was refused: {error}")
        if verbose:
            out(f"case {case}: refused: {error}")
        return
    table = str(directory / store.table)
    try:
        data = pa.table(zarrow.read(table, categorical_values=True, use_stats=False))
    except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        outcome.unreadable += 1
        outcome.notes.append(f"case {case}: zarrow.read failed: {type(e).__name__}: {str(e)[:200]}")
        if verbose:
            out(f"case {case}: unreadable: {e}")
        return
    wanted = [c.name for c in store.columns if c.name in data.column_names]
    if not wanted:
        outcome.unreadable += 1
        return
    infos = [col_info(name, data.column(name), store.chunk, tuple(store.touched)) for name in wanted]
    queries = make_queries(rng, infos, queries_per_case)
    if reader:
        reader_check(case, binary, table, data, queries, outcome, out)
    schema = None
    for engine in engines:
        runner = make_runner(engine, binary)
        started = time.perf_counter()
        answers = {mode: runner.run_all(queries, table, mode, directory) for mode in MODES}
        outcome.engine_seconds[engine] = outcome.engine_seconds.get(engine, 0.0) + time.perf_counter() - started
        outcome.engine_cases[engine] = outcome.engine_cases.get(engine, 0) + 1
        if engine == "datafusion":
            outcome.pruning_queries += len(runner.pruned)
            outcome.pruned_queries += sum(1 for n in runner.pruned.values() if n > 0)
        if engine == "polars" and schema is None:
            try:
                schema = dict(zarrow.scan(table).collect_schema())
            except BaseException as e:  # noqa: BLE001 (pyo3's PanicException too)
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                schema = {}
        refs = None
        if reference:
            try:
                refs = reference_answers(engine, queries, table)
            except Exception as e:  # noqa: BLE001
                outcome.notes.append(f"case {case}: {engine} reference failed: {e}")
        for q in queries:
            key = (q.index, q.form)
            a, b = answers["stats"][key], answers["nostats"][key]
            if a[0] == "error" and b[0] == "error" and error_kind(a) == error_kind(b):
                outcome.skipped += 1
                reason = (engine, f"{a[1]}: {re.sub(r'[0-9]+', 'N', a[2])[:110]}")
                outcome.skip_reasons[reason] = outcome.skip_reasons.get(reason, 0) + 1
                outcome.notes.append(f"case {case}: {engine} skipped (the same error in both modes): "
                                     f"{describe_pred(q, engine, schema).splitlines()[-1]}: {a[1]}: {a[2][:300]}")
                continue
            if a == b:
                outcome.passed += 1
                outcome.engine_passed[engine] = outcome.engine_passed.get(engine, 0) + 1
            else:
                outcome.failed += 1
                if not outcome.failures:
                    out("Every reproduction below runs after these helpers (PREAMBLE):\n" + PREAMBLE)
                report = failure_report(seed, case, store, engine, q, a, b, schema)
                outcome.failures.append(report)
                out(report)
                if minimize_first and case not in outcome.minimized:
                    outcome.minimized.add(case)
                    small = minimize(store, engine, q, binary, work / f"case{case}-min")
                    if small is not None:
                        small_store, small_q, sa, sb = small
                        out("MINIMAL (the failure above, with fewer changes and a smaller filter):\n"
                            + failure_report(seed, case, small_store, engine, small_q, sa, sb, schema))
                        outcome.first_failure_case.setdefault(classify(small_store, infos, small_q), case)
                    else:
                        outcome.first_failure_case.setdefault(classify(store, infos, q), case)
            if refs is not None and key in refs and b[0] == "ok" and refs[key] != b:
                outcome.reference_diffs += 1
                outcome.notes.append(
                    f"case {case}: {engine} without statistics differs from the same engine over the table in memory\n"
                    + indent(recipe_source(store)) + "\n  query: " + describe_pred(q, engine, schema, store.table).replace("\n", "\n    ")
                    + f"\n  zarrow scan (no stats): {short(b)}\n  in memory:              {short(refs[key])}")


def make_runner(engine: str, binary: Optional[str]) -> Any:
    return {"cli": lambda: CliEngine(binary), "polars": PolarsEngine, "duckdb": DuckEngine,
            "datafusion": DataFusionEngine}[engine]()


def is_failure(a: tuple, b: tuple) -> bool:
    return not (a == b or (a[0] == b[0] == "error" and error_kind(a) == error_kind(b)))


def minimize(store: Store, engine: str, q: Query, binary: Optional[str], work: Path) -> Optional[tuple]:
    """The failure with fewer changes to the store and a smaller filter:
    each change left out, and the filter replaced by a part of it, while
    the answers still differ. Returns (store, query, stats answer, no-stats
    answer), or None when the failure does not come back."""
    import dataclasses

    directory = work / "minimize"

    def answers(steps: list, pred: tuple) -> Optional[tuple]:
        trial = dataclasses.replace(store, steps=list(steps), dropped=[])
        if build(trial, directory) is not None or trial.dropped:
            return None
        query = dataclasses.replace(q, pred=pred)
        table = str(directory / store.table)
        got = {mode: make_runner(engine, binary).run_all([query], table, mode, directory)[(q.index, q.form)]
               for mode in MODES}
        return (trial, query, got["stats"], got["nostats"]) if is_failure(got["stats"], got["nostats"]) else None

    steps, pred = list(store.steps), q.pred
    found = answers(steps, pred)
    if found is None:
        return None
    i = 1
    while i < len(steps):
        removed = steps[:i] + steps[i + 1:]
        if (again := answers(removed, pred)) is not None:
            steps, found = removed, again
            continue
        desc, src = steps[i]
        if "\nconsolidate(store)" in src:
            lighter = steps[:i] + [(desc.replace("; metadata consolidated", ""),
                                    src.replace("\nconsolidate(store)", ""))] + steps[i + 1:]
            if (again := answers(lighter, pred)) is not None:
                steps, found = lighter, again
        i += 1
    shrinking = True
    while shrinking:
        shrinking = False
        parts = [pred[1]] if pred[0] == "not" else [pred[1], pred[2]] if pred[0] in ("and", "or") else []
        for part in parts:
            if (again := answers(steps, part)) is not None:
                pred, found, shrinking = part, again, True
                break
    shutil.rmtree(directory, ignore_errors=True)
    return found


def indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line for line in text.splitlines())


def failure_report(seed: int, case: int, store: Store, engine: str, q: Query, a: tuple, b: tuple,
                   schema: Optional[dict]) -> str:
    lines = [
        f"FAILED: seed {seed} case {case}, engine {engine}: with statistics != without",
        f"  rerun: check_stats_differential.py ZARROW --seed {seed} --case {case} --engines {engine}",
        "  store (Python, run in an empty directory after the PREAMBLE printed above):",
        indent(recipe_source(store)),
        "  query (USE_STATS = True, then False):" if engine != "cli" else "  query:",
        indent(describe_pred(q, engine, schema, store.table)),
        f"  with statistics:    {short(a)}",
        f"  without statistics: {short(b)}",
    ]
    if a[0] == b[0] == "ok" and isinstance(a[1], list) and isinstance(b[1], list):
        from collections import Counter

        ca, cb = Counter(map(repr, a[1])), Counter(map(repr, b[1]))
        only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
        lines.append(f"  rows only with statistics ({len(only_a)}): {', '.join(only_a[:6])}")
        lines.append(f"  rows only without ({len(only_b)}): {', '.join(only_b[:6])}")
    if store.dropped:
        lines.append("  (steps refused and left out: " + "; ".join(f"{d}: {e}" for d, e in store.dropped) + ")")
    return "\n".join(lines)


def run(cases: int = 20, seed: int = 0, engines: Optional[list] = None, binary: Optional[str] = None,
        only: Optional[int] = None, keep: Optional[str] = None, reference: bool = False,
        time_limit: Optional[float] = None, out: Callable[[str], None] = print, verbose: bool = False,
        queries_per_case: int = 6, minimize_first: bool = True, jobs: int = 1, reader: bool = True) -> Outcome:
    """Run `cases` cases of `seed` (or only case `only`) through `engines`
    (default: all four; "cli" needs `binary`). Returns the Outcome; prints
    failures with `out` as they are found. `time_limit`: stop starting cases
    after that many seconds. `jobs`: cases run in that many processes at
    once (each case's answers are the same). `reader`: also run the
    independent reader on each store (reader_check)."""
    warnings.simplefilter("ignore")
    engines = list(engines or ENGINES)
    if "cli" in engines and not binary:
        raise ValueError("the cli engine needs the zarrow binary")
    outcome = Outcome()
    base = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="zarrow-stats-"))
    base.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if jobs > 1 and only is None:
        try:
            run_parallel(cases, seed, engines, binary, base, reference, out, verbose, queries_per_case,
                         minimize_first, reader, jobs, time_limit, bool(keep), outcome)
        finally:
            if not keep:
                shutil.rmtree(base, ignore_errors=True)
        outcome.elapsed = time.perf_counter() - started  # type: ignore[attr-defined]
        return outcome
    try:
        indices = [only] if only is not None else range(cases)
        for case in indices:
            if time_limit is not None and time.perf_counter() - started > time_limit:
                outcome.notes.append(f"time limit reached after {outcome.cases} cases")
                break
            guarded_case(seed, case, engines, binary, base, outcome, reference, out, verbose, queries_per_case,
                         minimize_first, reader, bool(keep))
            if verbose:
                out(f"case {case}: {outcome.passed} passed, {outcome.failed} failed, {outcome.skipped} skipped so far")
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    outcome.elapsed = time.perf_counter() - started  # type: ignore[attr-defined]
    return outcome


def remove_case(base: Path, case: int) -> None:
    shutil.rmtree(base / f"case{case}", ignore_errors=True)
    shutil.rmtree(base / f"case{case}-min", ignore_errors=True)


def guarded_case(seed: int, case: int, engines: list, binary: Optional[str], base: Path, outcome: Outcome,
                 reference: bool, out: Callable[[str], None], verbose: bool, queries_per_case: int,
                 minimize_first: bool, reader: bool, keep: bool) -> None:
    """run_case, where the harness raising is a failure, and the case's
    directories removed after unless `keep`."""
    try:
        run_case(seed, case, engines, binary, base, outcome, reference, out, verbose, queries_per_case,
                 minimize_first, reader)
    except BaseException as e:  # noqa: BLE001 (the harness itself: a failure)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        outcome.failed += 1
        report = f"FAILED: seed {seed} case {case}: the harness raised\n{indent(traceback.format_exc())}"
        outcome.failures.append(report)
        out(report)
    if not keep:
        remove_case(base, case)


def _one_case(task: tuple) -> tuple:
    """A worker's case (run_parallel): its Outcome and what it printed."""
    (seed, case, engines, binary, base, reference, verbose, queries_per_case, minimize_first, reader,
     deadline, keep) = task
    warnings.simplefilter("ignore")
    outcome = Outcome()
    lines: list = []
    if deadline is not None and time.time() > deadline:
        outcome.notes.append(f"time limit reached: case {case} not run")
        return outcome, lines, False
    guarded_case(seed, case, engines, binary, Path(base), outcome, reference, lines.append, verbose,
                 queries_per_case, minimize_first, reader, keep)
    return outcome, lines, True


def run_parallel(cases: int, seed: int, engines: list, binary: Optional[str], base: Path, reference: bool,
                 out: Callable[[str], None], verbose: bool, queries_per_case: int, minimize_first: bool,
                 reader: bool, jobs: int, time_limit: Optional[float], keep: bool, outcome: Outcome) -> None:
    """The cases in `jobs` worker processes (spawned: no runtime or engine
    state crosses a fork), merged into `outcome` as they finish. At most
    `jobs` cases are in flight, so that when a worker dies (an abort in an
    engine), the cases it may have run are known: each runs again alone, and
    the one whose process dies again is a failure."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    deadline = time.time() + time_limit if time_limit is not None else None
    ctx = multiprocessing.get_context("spawn")

    def task(case: int) -> tuple:
        return (seed, case, engines, binary, str(base), reference, verbose, queries_per_case, minimize_first,
                reader, deadline, keep)

    def take(part: Outcome, lines: list, ran: bool) -> None:
        if not outcome.failures and part.failures:
            out("Every reproduction below runs after these helpers (PREAMBLE):\n" + PREAMBLE)
        for line in lines:
            out(line)
        if ran:
            outcome.merge(part)
        if verbose:
            out(f"{outcome.cases} cases: {outcome.passed} passed, {outcome.failed} failed so far")

    def alone(case: int) -> None:
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            try:
                take(*pool.submit(_one_case, task(case)).result())
            except BrokenProcessPool:
                outcome.cases += 1
                outcome.failed += 1
                report = (f"FAILED: seed {seed} case {case}: the process running it died (an engine aborted); "
                          f"rerun: check_stats_differential.py ZARROW --seed {seed} --case {case}")
                outcome.failures.append(report)
                out(report)
        if not keep:
            remove_case(base, case)

    queue = list(range(cases))
    while queue:
        suspects: list = []
        with ProcessPoolExecutor(jobs, mp_context=ctx, max_tasks_per_child=200) as pool:
            flight: dict = {}
            while queue or flight:
                while queue and len(flight) < jobs:
                    case = queue.pop(0)
                    flight[pool.submit(_one_case, task(case))] = case
                done, _ = wait(flight, return_when=FIRST_COMPLETED)
                broken = False
                for f in done:
                    case = flight.pop(f)
                    try:
                        take(*f.result())
                    except BrokenProcessPool:
                        suspects.append(case)
                        broken = True
                if broken:
                    suspects.extend(flight.values())
                    break
        for case in sorted(suspects):
            alone(case)
    if deadline is not None and outcome.cases < cases:
        outcome.notes.append(f"time limit reached after {outcome.cases} cases")


def summary(outcome: Outcome) -> list:
    lines = []
    elapsed = getattr(outcome, "elapsed", 0.0)
    lines.append(f"cases: {outcome.cases} in {elapsed:.1f} s (building stores {outcome.build_seconds:.1f} s); "
                 f"first writes refused: {outcome.refused}; unreadable: {outcome.unreadable}; "
                 f"skipped answers (an error in both modes): {outcome.skipped}")
    for engine, seconds in outcome.engine_seconds.items():
        n = outcome.engine_cases.get(engine, 0)
        lines.append(f"  {engine}: {n} cases in {seconds:.1f} s ({n / seconds if seconds else 0:.2f} cases/s, both modes); "
                     f"{outcome.engine_passed.get(engine, 0)} answers the same with and without statistics")
    if outcome.first_failure_case:
        lines.append("first case failing, by features (the filtered columns; the changes):")
        for klass, case in sorted(outcome.first_failure_case.items(), key=lambda kv: kv[1]):
            lines.append(f"  case {case}: {klass}")
    if outcome.pruning_queries:
        lines.append(f"pruning happened (datafusion, EXPLAIN ANALYZE): {outcome.pruned_queries} of "
                     f"{outcome.pruning_queries} count queries skipped rows by statistics")
    if outcome.skip_reasons:
        lines.append("skipped (the same error in both modes), by engine and error:")
        for (engine, reason), count in sorted(outcome.skip_reasons.items(), key=lambda kv: -kv[1])[:15]:
            lines.append(f"  {count} x {engine}: {reason}")
    if outcome.reader_files:
        lines.append(f"independent reader: {outcome.reader_files} statistics files read, {outcome.reader_agreed} "
                     f"with the fresh chunks zarrow stats --show counts; {outcome.reader_predicates} filters pruned, "
                     f"{outcome.reader_skipped} chunks skipped; {outcome.reader_failed} disagreements")
    if outcome.reference_diffs:
        lines.append(f"differences from the in-memory reference (not pruning; not counted as failures): {outcome.reference_diffs}")
    return lines


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zarrow", help="the zarrow binary (for the cli engine)")
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--case", type=int, help="run only this case (of --seed)")
    parser.add_argument("--keep", help="keep the stores in this directory")
    parser.add_argument("--queries", type=int, default=6, help="filters per case (each as count and as rows)")
    parser.add_argument("--reference", action="store_true", help="also compare with each engine over the table in memory")
    parser.add_argument("--time-limit", type=float, help="start no case after this many seconds")
    parser.add_argument("--recipe", action="store_true", help="print the store recipe of --case (and PREAMBLE) and exit")
    parser.add_argument("--no-minimize", action="store_true", help="do not minimize each case's first failure")
    parser.add_argument("--show-notes", action="store_true", help="print refused steps and other notes")
    parser.add_argument("--jobs", type=int, default=1, help="run cases in this many processes")
    parser.add_argument("--no-reader", action="store_true", help="do not run the independent reader on the stores")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engines:
        if e not in ENGINES:
            parser.error(f"unknown engine {e!r} (of {', '.join(ENGINES)})")
    if args.recipe:
        if args.case is None:
            parser.error("--recipe needs --case")
        print(PREAMBLE)
        print(recipe_source(gen_store(case_rng(args.seed, args.case))))
        return 0
    outcome = run(args.cases, args.seed, engines, os.path.abspath(args.zarrow), args.case, args.keep, args.reference,
                  args.time_limit, print, args.verbose, args.queries, not args.no_minimize, args.jobs,
                  not args.no_reader)
    if args.show_notes or args.reference:
        for note in outcome.notes:
            print("note:", note)
    for line in summary(outcome):
        print(line)
    print(f"{outcome.passed} passed, {outcome.failed + outcome.reader_failed} failed")
    return 1 if outcome.failed or outcome.reader_failed else 0


if __name__ == "__main__":
    sys.exit(main())
