#!/usr/bin/env python3
"""An independent reader of zarrow's chunk statistics (`zarrow.stats`, version "2").

Written from docs/spec/chunk-statistics.md only (pyarrow + the standard library; no
zarrow import), so that the specification, not zarrow's code, is what the conformance
data (testdata/stats-conformance/) and zarrow are held to.

    stats = read_stats(data)                      # every check of an untrusted file
    usable(stats, zarr_json, decode_cf=True)      # (a)-(d): may the file be used at all
    fresh_rows(stats, zarr_json, versions)        # (e)-(f): {chunk: row} of the rows usable
    prune(stats, zarr_json, versions, P)          # [keep?] per statistic chunk 0..n-1
    local_versions(array_dir)                     # the version tokens of a local array
    prune_local(array_dir, P)                     # all of it for a local Zarr v3 / v2 array

`zarr_json` is an array's metadata: a Zarr v3 `zarr.json` document, or for Zarr v2
the `.zarray` document with `"zarr_format": 2` and the `.zattrs` object under the
extra member `"attributes"` (what `read_metadata` returns).

Predicates (P) are the mini-language of testdata/stats-conformance (see the spec's
appendix): {"op": "eq"|"ne"|"lt"|"le"|"gt"|"ge", "value": V}, {"op": "between",
"low": V, "high": V}, {"op": "in"|"not_in", "values": [V, ...]}, {"op": "is_null"},
{"op": "is_not_null"}, {"op": "starts_with", "value": V}, {"op": "not", "arg": P},
{"op": "and"|"or", "args": [P, ...]}. V: a JSON number, string or boolean;
{"float": "nan"|"-nan"|"inf"|"-inf"}; {"hex": "..."} for bytes.

Pruning is an abstract evaluation in SQL's three-valued logic: for each chunk, the set
of truth values (T, F, N) the predicate can take on some row, under any of the
comparison semantics engines use (IEEE 754; a total order with -NaN lowest and +NaN
highest and -0.0 < +0.0; "NaN is the greatest value and equals itself"; DataFusion's
IEEE comparison operators with IN / NOT IN lists that match floats by bits, so that
0.0 NOT IN (-0.0) is true while 0.0 <> -0.0 is false; and, for float16/float32
columns, the literal rounded to the column's type first, as numpy 2 and polars do).
Each leaf is evaluated under every semantics and AND / OR / NOT combine every pair of
its outcomes, so an engine mixing them (DataFusion) is covered. Float bounds that are
zero (an earlier draft's -0.0 / +0.0) are widened past both zeros, to minus / plus the
type's least subnormal, as the spec requires. A chunk is skipped only when T is not
among them.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = [
    "InvalidStats",
    "Row",
    "Stats",
    "read_stats",
    "usable",
    "fresh_rows",
    "prune",
    "local_versions",
    "read_metadata",
    "prune_local",
    "MAX_FILE_BYTES",
    "MAX_SET_BYTES",
    "STATS_KEY",
]

STATS_KEY = "zarrow.stats"
METADATA_KEY = "zarrow.stats"
VERSION = "2"
MAX_FILE_BYTES = 64 << 20
MAX_SET_BYTES = 256
U64 = 1 << 64
COLUMNS = ["chunk", "rows", "nulls", "nans", "min", "max", "set", "version"]


class InvalidStats(ValueError):
    """The bytes are not a statistics file that may be used (any failed check)."""


@dataclass
class Row:
    chunk: int
    rows: int
    nulls: int
    nans: int
    min: Any  # Python value: int (integers, times, as integers in their unit), float, bool, str, bytes; None
    max: Any
    set: bytes | None
    version: str | None


@dataclass
class Stats:
    version: str
    # Only for version "2" files (None for a file of another version, which is ignored):
    chunk_len: int | None = None
    array_len: int | None = None
    decode_cf: bool | None = None
    array: dict | None = None
    bound_type: pa.DataType | None = None
    rows: list[Row] = field(default_factory=list)

    @property
    def ignored(self) -> bool:
        return self.version != VERSION


# ---------------------------------------------------------------------------------------
# The file: structural checks before anything is decoded (flatbuffers, by hand).


class _Flat:
    """The little of flatbuffers needed to read an Arrow IPC footer and message headers,
    every read bounds-checked."""

    def __init__(self, buf: bytes):
        self.buf = buf

    def _get(self, fmt: str, pos: int):
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.buf):
            raise InvalidStats("a flatbuffer read past its end")
        return struct.unpack_from(fmt, self.buf, pos)[0]

    def root(self) -> int:
        return self._get("<I", 0)

    def _field_pos(self, table: int, index: int) -> int | None:
        vtable = table - self._get("<i", table)
        vt_size = self._get("<H", vtable)
        if vt_size < 4 or vt_size % 2:
            raise InvalidStats("a bad flatbuffer vtable")
        slot = 4 + 2 * index
        if slot + 2 > vt_size:
            return None
        off = self._get("<H", vtable + slot)
        return table + off if off else None

    def scalar(self, table: int, index: int, fmt: str, default):
        pos = self._field_pos(table, index)
        return default if pos is None else self._get(fmt, pos)

    def table(self, table: int, index: int) -> int | None:
        pos = self._field_pos(table, index)
        return None if pos is None else pos + self._get("<I", pos)

    def vector(self, table: int, index: int) -> tuple[int, int] | None:
        """(start of the elements, length) of a vector field."""
        pos = self._field_pos(table, index)
        if pos is None:
            return None
        vec = pos + self._get("<I", pos)
        n = self._get("<I", vec)
        return vec + 4, n


def _check_structure(data: bytes) -> None:
    """Refuse what pyarrow would otherwise act on blindly: not an IPC file, a footer or
    block outside the file, dictionaries, compressed buffers (a compressed buffer
    declares the length it decompresses to, which a reader would allocate)."""
    n = len(data)
    if n > MAX_FILE_BYTES:
        raise InvalidStats(f"{n} bytes, more than the {MAX_FILE_BYTES} a reader reads")
    if n < 18 or data[:6] != b"ARROW1" or data[-6:] != b"ARROW1":
        raise InvalidStats("not an Arrow IPC file (magic)")
    footer_len = struct.unpack_from("<i", data, n - 10)[0]
    start = n - 10 - footer_len
    if footer_len <= 0 or start < 8:
        raise InvalidStats("a bad footer length")
    fb = _Flat(data[start : n - 10])
    footer = fb.root()
    dicts = fb.vector(footer, 2)
    if dicts is not None and dicts[1] > 0:
        raise InvalidStats("dictionaries (a statistics file has none)")
    schema = fb.table(footer, 1)
    if schema is None:
        raise InvalidStats("a footer without a schema")
    fields = fb.vector(schema, 1)
    if fields is not None:
        first, count = fields
        for i in range(count):
            pos = first + 4 * i
            f = pos + fb._get("<I", pos)
            if fb.table(f, 4) is not None:  # Field.dictionary
                raise InvalidStats("a dictionary-encoded column")
    batches = fb.vector(footer, 3)
    if batches is None:
        return
    first, count = batches
    for i in range(count):
        pos = first + 24 * i  # struct Block { offset: long; metaDataLength: int; bodyLength: long }
        offset = fb._get("<q", pos)
        meta_len = fb._get("<i", pos + 8)
        if offset < 8 or meta_len < 8 or offset + meta_len > start:
            raise InvalidStats("a record batch block outside the file")
        meta = data[offset : offset + meta_len]
        if meta[:4] == b"\xff\xff\xff\xff":
            skip = 8
        else:
            skip = 4
        msg = _Flat(meta[skip:])
        root = msg.root()
        if msg.scalar(root, 1, "<B", 0) != 3:  # Message.header_type == RecordBatch
            raise InvalidStats("a block that is not a record batch")
        header = msg.table(root, 2)
        if header is None:
            raise InvalidStats("a record batch message without its header")
        if msg.table(header, 3) is not None:  # RecordBatch.compression
            raise InvalidStats("compressed buffers (a statistics file has none)")


# ---------------------------------------------------------------------------------------
# The file: its schema and values.


def _allowed_bound_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_date32(t)
        or pa.types.is_date64(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
        or pa.types.is_time32(t)
        or pa.types.is_time64(t)
        or t == pa.utf8()
        or t == pa.binary()
    )


def _strict_json(text: str):
    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise InvalidStats(f"a duplicate JSON member {k!r}")
            out[k] = v
        return out

    def constant(name):
        raise InvalidStats(f"{name} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except InvalidStats:
        raise
    except (ValueError, RecursionError) as e:
        raise InvalidStats(f"metadata is not JSON ({e})") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _values(col: pa.Array) -> list:
    """A column's values as Python values; times as integers in their unit."""
    t = col.type
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        col = col.view(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        col = col.view(pa.int32())
    out = col.to_pylist()
    if pa.types.is_floating(t):
        out = [None if v is None else float(v) for v in out]
    return out


def read_stats(data: bytes) -> Stats:
    """Parse a statistics file, as untrusted input. Raises InvalidStats on any failed
    check. A well-formed file of another convention version is returned with
    `ignored` set (a reader does not use it, and does not fail)."""
    try:
        return _read_stats(bytes(data))
    except InvalidStats:
        raise
    except (pa.ArrowException, OSError, ValueError, IndexError, OverflowError, struct.error) as e:
        # What a decoder says of bytes it cannot make sense of (invalid UTF-8 in a
        # field name, say): the file is not one.
        raise InvalidStats(f"unreadable ({type(e).__name__}: {e})") from None


def _read_stats(data: bytes) -> Stats:
    _check_structure(data)
    try:
        reader = ipc.open_file(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InvalidStats(f"not an Arrow IPC file ({e})") from None
    schema = reader.schema
    meta = schema.metadata or {}
    raw = meta.get(METADATA_KEY.encode())
    if raw is None:
        raise InvalidStats(f"no {METADATA_KEY!r} schema metadata")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidStats("metadata is not UTF-8") from None
    about = _strict_json(text)
    if not isinstance(about, dict):
        raise InvalidStats("metadata is not a JSON object")
    version = about.get("version")
    if not isinstance(version, str):
        raise InvalidStats("no convention version")
    if version != VERSION:
        return Stats(version=version)
    chunk_len = about.get("chunk_len")
    if not _is_int(chunk_len) or not 0 < chunk_len < U64:
        raise InvalidStats(f"chunk_len {chunk_len!r}")
    array_len = about.get("array_len")
    if not _is_int(array_len) or not 0 <= array_len < U64:
        raise InvalidStats(f"array_len {array_len!r}")
    decode_cf = about.get("decode_cf")
    if not isinstance(decode_cf, bool):
        raise InvalidStats("decode_cf is not a boolean")
    array = about.get("array")
    if (
        not isinstance(array, dict)
        or not all(k in array for k in ("data_type", "fill_value", "attributes"))
        or not isinstance(array["attributes"], dict)
    ):
        raise InvalidStats("array is not an object with data_type, fill_value, attributes")
    names = [f.name for f in schema]
    if names != COLUMNS:
        raise InvalidStats(f"columns {names}, not {COLUMNS}")
    types = [f.type for f in schema]
    bound = types[4]
    if (
        any(t != pa.uint64() for t in types[:4])
        or types[5] != bound
        or not _allowed_bound_type(bound)
        or types[6] != pa.binary()
        or types[7] != pa.utf8()
    ):
        raise InvalidStats(f"column types {[str(t) for t in types]}")
    rows: list[Row] = []
    try:
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        for b in batches:
            b.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise InvalidStats(f"unreadable ({e})") from None
    last = -1
    for b in batches:
        cols = [_values(b.column(i)) for i in range(8)]
        for chunk, n, nulls, nans, lo, hi, bits, token in zip(*cols):
            if chunk is None or n is None or nulls is None or nans is None:
                raise InvalidStats("a null in chunk, rows, nulls or nans")
            if chunk <= last:
                raise InvalidStats("chunk numbers not strictly increasing")
            last = chunk
            if bits is not None and len(bits) > MAX_SET_BYTES:
                raise InvalidStats(f"a set of {len(bits)} bytes (at most {MAX_SET_BYTES})")
            rows.append(Row(chunk, n, nulls, nans, lo, hi, bits, token))
    return Stats(
        version=version,
        chunk_len=chunk_len,
        array_len=array_len,
        decode_cf=decode_cf,
        array=array,
        bound_type=bound,
        rows=rows,
    )


# ---------------------------------------------------------------------------------------
# The array: metadata, its members the file records, CF, chunk keys.


def _recorded_members(meta: dict) -> dict:
    if meta.get("zarr_format") == 2:
        return {
            "data_type": meta.get("dtype"),
            "fill_value": meta.get("fill_value"),
            "attributes": meta.get("attributes") or {},
        }
    return {
        "data_type": meta.get("data_type"),
        "fill_value": meta.get("fill_value"),
        "attributes": meta.get("attributes") or {},
    }


def json_equal(a, b) -> bool:
    """Equality of JSON values: same kind (a boolean is not a number), numbers by value,
    objects by members (order ignored), arrays element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        if _is_int(a) and _is_int(b):
            return a == b
        # Exact comparison of an integer and a float (Python compares them exactly).
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


_TIME_UNITS = {
    "days", "day", "d", "hours", "hour", "hr", "h", "minutes", "minute", "min",
    "seconds", "second", "sec", "s", "milliseconds", "millisecond", "msec", "ms",
    "microseconds", "microsecond", "usec", "us", "nanoseconds", "nanosecond", "nsec", "ns",
}  # fmt: skip


def _is_numeric_type(meta: dict) -> bool:
    dt = _recorded_members(meta)["data_type"]
    if isinstance(dt, dict):
        dt = dt.get("name")
    if not isinstance(dt, str):
        return False
    if meta.get("zarr_format") == 2:
        kind = dt[1:2] if dt[:1] in "<>|=" else dt[:1]
        return kind != "" and kind in "iuf"
    return dt in (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64",
    )  # fmt: skip


def has_cf_decoding(meta: dict) -> bool:
    """Whether decoding the array's CF attributes changes the values a reader sees
    (the spec's list): an integer or float array with scale_factor, add_offset, a non-NaN
    _FillValue / missing_value (any for an integer array), units "<unit> since <date>",
    or a Zarr v2 array with _ARRAY_DIMENSIONS and a fill_value (xarray's _FillValue)."""
    if not _is_numeric_type(meta):
        return False
    attrs = _recorded_members(meta)["attributes"]
    if "scale_factor" in attrs or "add_offset" in attrs:
        return True
    units = attrs.get("units")
    if isinstance(units, str) and " since " in units:
        return True
    missing = []
    for key in ("_FillValue", "missing_value"):
        if key in attrs:
            v = attrs[key]
            missing.extend(v if isinstance(v, list) else [v])
    if meta.get("zarr_format") == 2 and "_ARRAY_DIMENSIONS" in attrs and "_FillValue" not in attrs:
        if meta.get("fill_value") is not None:
            missing.append(meta.get("fill_value"))
    is_float = _expected_raw_family(meta) == "float"
    for m in missing:
        if is_float and (m == "NaN" or (isinstance(m, float) and math.isnan(m))):
            continue
        return True
    return False


def _expected_raw_family(meta: dict) -> str | None:
    """The bound type family of the array's values read raw: 'bool', 'int', 'uint',
    'float', 'timestamp', 'duration', 'date32', 'utf8', 'binary', 'text-or-bytes'."""
    dt = _recorded_members(meta)["data_type"]
    if meta.get("zarr_format") == 2:
        if not isinstance(dt, str) or len(dt) < 2:
            return None
        kind = dt[1] if dt[0] in "<>|=" else dt[0]
        return {
            "b": "bool", "i": "int", "u": "uint", "f": "float", "U": "utf8", "S": "binary",
            "O": "text-or-bytes", "M": "date32" if dt.endswith("[D]") else "timestamp",
            "m": "duration",
        }.get(kind)  # fmt: skip
    name = dt.get("name") if isinstance(dt, dict) else dt
    if name == "numpy.datetime64":
        unit = (dt.get("configuration") or {}).get("unit") if isinstance(dt, dict) else None
        return "date32" if unit == "D" else "timestamp"
    return {
        "bool": "bool", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
        "uint8": "uint", "uint16": "uint", "uint32": "uint", "uint64": "uint",
        "float16": "float", "float32": "float", "float64": "float",
        "numpy.timedelta64": "duration", "string": "utf8", "fixed_length_utf32": "utf8",
        "variable_length_bytes": "binary", "bytes": "binary", "null_terminated_bytes": "binary",
    }.get(name)  # fmt: skip


def _family(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_unsigned_integer(t):
        return "uint"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_duration(t):
        return "duration"
    if pa.types.is_date32(t):
        return "date32"
    if t == pa.utf8():
        return "utf8"
    if t == pa.binary():
        return "binary"
    return str(t)


_V3_NUMERIC = {
    "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(),
    "uint64": pa.uint64(), "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
}  # fmt: skip


def _raw_type(meta: dict) -> pa.DataType | None:
    """The exact Arrow type of a numeric array's raw values (None: not numeric, or a
    type this reader does not map exactly)."""
    dt = _recorded_members(meta)["data_type"]
    if meta.get("zarr_format") == 2:
        if not isinstance(dt, str):
            return None
        try:
            import numpy as np

            d = np.dtype(dt)
            if d.kind in "biuf":
                return pa.from_numpy_dtype(d.newbyteorder("="))
        except (TypeError, ValueError, pa.ArrowException):
            return None
        return None
    name = dt.get("name") if isinstance(dt, dict) else dt
    return _V3_NUMERIC.get(name)


def _time_unit(meta: dict) -> str | None:
    dt = _recorded_members(meta)["data_type"]
    if meta.get("zarr_format") == 2:
        if isinstance(dt, str) and dt.endswith("]") and "[" in dt:
            return dt[dt.index("[") + 1 : -1]
        return None
    if isinstance(dt, dict):
        return (dt.get("configuration") or {}).get("unit")
    return None


def _bound_type_fits(stats: Stats, meta: dict, decode_cf: bool) -> bool:
    """The file's bound type is the type this reader reads the column as: the exact
    numeric type, the unit of times (any time zone: bounds are instants), utf8 for
    strings, binary for bytes; with CF decoding, a float (or the raw type) for packed
    data and a timestamp for CF times."""
    t = stats.bound_type
    got = _family(t)
    if decode_cf and has_cf_decoding(meta):
        attrs = _recorded_members(meta)["attributes"]
        units = attrs.get("units")
        if isinstance(units, str) and " since " in units:
            return got == "timestamp"
        return got == "float" or t == _raw_type(meta)
    want = _expected_raw_family(meta)
    if want == "text-or-bytes":
        return got in ("utf8", "binary")
    if want in ("bool", "int", "uint", "float"):
        return t == _raw_type(meta)
    if want in ("timestamp", "duration"):
        return got == want and t.unit == _time_unit(meta)
    return got == want


def _grid_len(meta: dict) -> int | None:
    if meta.get("zarr_format") == 2:
        chunks = meta.get("chunks")
        return chunks[0] if isinstance(chunks, list) and len(chunks) == 1 and _is_int(chunks[0]) else None
    grid = meta.get("chunk_grid") or {}
    if grid.get("name") != "regular":
        return None
    shape = (grid.get("configuration") or {}).get("chunk_shape")
    return shape[0] if isinstance(shape, list) and len(shape) == 1 and _is_int(shape[0]) else None


def _shape(meta: dict) -> list | None:
    shape = meta.get("shape")
    return shape if isinstance(shape, list) else None


def chunk_key(meta: dict, index: int) -> str:
    """The key, relative to the array, of grid chunk `index` of a 1-D array."""
    if meta.get("zarr_format") == 2:
        return str(index)
    enc = meta.get("chunk_key_encoding") or {"name": "default"}
    conf = enc.get("configuration") or {}
    if enc.get("name") == "v2":
        return str(index)
    sep = conf.get("separator", "/")
    return f"c{sep}{index}"


def usable(stats: Stats, zarr_json: dict, decode_cf: bool = True) -> bool:
    """Conditions (a)-(d) of the spec: whether any row of the file may be used for the
    array `zarr_json` describes, read with (`decode_cf=True`) or without CF decoding."""
    if stats.ignored:
        return False  # (a)
    shape = _shape(zarr_json)
    grid_len = _grid_len(zarr_json)
    if shape is None or len(shape) != 1 or not _is_int(shape[0]) or grid_len is None or grid_len <= 0:
        return False  # (d): 1-D, a regular grid
    if not json_equal(stats.array, _recorded_members(zarr_json)):
        return False  # (b)
    if stats.decode_cf != decode_cf and has_cf_decoding(zarr_json):
        return False  # (c)
    if grid_len % stats.chunk_len != 0:
        return False  # (d)
    return _bound_type_fits(stats, zarr_json, decode_cf)


def fresh_rows(stats: Stats, zarr_json: dict, versions: dict | None) -> dict[int, Row]:
    """Conditions (e)-(f): the rows that describe the chunks as stored now, by chunk
    number. `versions`: the store's current version tokens by key relative to the
    array (a missing key: no object); None when the store cannot list (rows are
    trusted, as the spec allows). The caller checks `usable` first."""
    out: dict[int, Row] = {}
    if stats.ignored:
        return out
    length = zarr_json["shape"][0]
    grid_len = _grid_len(zarr_json)
    per_object = grid_len // stats.chunk_len
    for row in stats.rows:
        start = row.chunk * stats.chunk_len
        if start >= U64 or start >= length:
            continue  # overflow, or at/past the end
        if row.rows != min(stats.chunk_len, length - start):
            continue  # (e): resized since
        if row.nulls + row.nans > row.rows:
            continue  # inconsistent counts: not used
        if versions is not None:
            key = chunk_key(zarr_json, row.chunk // per_object)
            if row.version is None or versions.get(key) != row.version:
                continue  # (f): stored again since, or gone
        out[row.chunk] = row
    return out


# ---------------------------------------------------------------------------------------
# Predicates: literals, concrete evaluation under each semantics, abstract domains.

T, F, N = "T", "F", "N"


class _Lit:
    """A decoded literal: kind 'num' (int or float), 'bool', 'str', 'bytes'."""

    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind, self.value = kind, value


def _lit(v) -> _Lit:
    if isinstance(v, bool):
        return _Lit("bool", v)
    if _is_int(v) or isinstance(v, float):
        return _Lit("num", v)
    if isinstance(v, str):
        return _Lit("str", v)
    if isinstance(v, dict) and set(v) == {"float"}:
        name = v["float"]
        table = {
            "nan": struct.unpack("<d", bytes.fromhex("000000000000f87f"))[0],
            "-nan": struct.unpack("<d", bytes.fromhex("000000000000f8ff"))[0],
            "inf": math.inf,
            "-inf": -math.inf,
        }
        if name not in table:
            raise ValueError(f"bad float literal {v!r}")
        return _Lit("num", table[name])
    if isinstance(v, dict) and set(v) == {"hex"}:
        return _Lit("bytes", bytes.fromhex(v["hex"]))
    raise ValueError(f"bad literal {v!r}")


def _is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _total_key(x: float) -> int:
    (b,) = struct.unpack("<q", struct.pack("<d", x))
    return b ^ 0x7FFFFFFFFFFFFFFF if b < 0 else b


def _round_to(x, family_type: pa.DataType | None):
    """x rounded to a float16/float32 column's type (None when not applicable)."""
    if family_type is None or not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    if family_type == pa.float32():
        try:
            return struct.unpack("<f", struct.pack("<f", float(x)))[0]
        except OverflowError:
            return math.copysign(math.inf, float(x))
    if family_type == pa.float16():
        try:
            return struct.unpack("<e", struct.pack("<e", float(x)))[0]
        except OverflowError:
            return math.copysign(math.inf, float(x))
    return None


# Float comparison semantics: each returns -1, 0, 1, or None (unordered).
def _cmp_ieee(a, b):
    if _is_nan(a) or _is_nan(b):
        return None
    return (a > b) - (a < b)


def _cmp_greatest(a, b):
    na, nb = _is_nan(a), _is_nan(b)
    if na or nb:
        return 0 if na and nb else (1 if na else -1)
    return (a > b) - (a < b)


def _cmp_total(a, b):
    ka, kb = _total_key(float(a)), _total_key(float(b))
    return (ka > kb) - (ka < kb)


def _cmp_plain(a, b):
    return (a > b) - (a < b)


def _float_bits(x) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def _cmp_bits(a, b):
    """Equality by bits (0 when equal, else 1): how DataFusion matches a float against
    an IN / NOT IN list (0.0 NOT IN (-0.0) is true there). Used for lists only."""
    return 0 if _float_bits(a) == _float_bits(b) else 1


# A semantics: (comparison of the operators and BETWEEN, comparison of IN / NOT IN lists).
PLAIN = (_cmp_plain, _cmp_plain)
FLOAT_SEMANTICS = (
    (_cmp_ieee, _cmp_ieee),  # IEEE 754: numpy, pandas, Polars
    (_cmp_greatest, _cmp_greatest),  # NaN greatest and equal to NaN (PostgreSQL, DuckDB)
    (_cmp_total, _cmp_total),  # the total order (arrow-rs kernels)
    (_cmp_ieee, _cmp_bits),  # DataFusion: IEEE operators, IN lists by bits
)

# The least positive subnormal of each float type: a zero bound is widened to it.
LEAST_SUBNORMAL = {pa.float16(): 2.0**-24, pa.float32(): 2.0**-149, pa.float64(): 2.0**-1074}


def _truth(op: str, c) -> str:
    if c is None:  # unordered (IEEE NaN): every comparison false but <>
        return T if op == "ne" else F
    return T if {
        "eq": c == 0, "ne": c != 0, "lt": c < 0, "le": c <= 0, "gt": c > 0, "ge": c >= 0,
    }[op] else F  # fmt: skip


def _concrete(p: dict, v, sem: tuple, text: bool) -> str:
    """Truth of leaf p for the non-null value v under semantics sem (T or F)."""
    cmp, list_cmp = sem
    op = p["op"]
    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return _truth(op, cmp(v, p["_k"]))
    if op == "between":
        lo, hi = _truth("ge", cmp(v, p["_lo"])), _truth("le", cmp(v, p["_hi"]))
        return T if lo == T and hi == T else F
    if op in ("in", "not_in"):
        hit = any(_truth("eq", list_cmp(v, k)) == T for k in p["_ks"])
        return T if hit == (op == "in") else F
    if op == "starts_with":
        return T if text and v.startswith(p["_k"]) else F
    raise ValueError(op)


def _literals(p: dict) -> list:
    if p["op"] in ("eq", "ne", "lt", "le", "gt", "ge", "starts_with"):
        return [p["_k"]]
    if p["op"] == "between":
        return [p["_lo"], p["_hi"]]
    return list(p["_ks"])


class _Domain:
    """What the non-null values of one chunk may be.

    kind 'any': any value of the type (NaN included for floats);
    'finite': some of `values` (a set of codes' categories, or a small integer set);
    'interval': values v with lo <= v <= hi (None: unbounded), NaN excluded."""

    def __init__(self, kind, values=None, lo=None, hi=None):
        self.kind, self.values, self.lo, self.hi = kind, values, lo, hi


@dataclass
class _Column:
    family: str  # bool int uint float timestamp duration date32 date64 time utf8 binary
    arrow: pa.DataType | None  # for float rounding
    text: bool  # utf8/binary: bytewise order on UTF-8 / bytes


def _column_of(t: pa.DataType) -> _Column:
    fam = _family(t)
    if pa.types.is_date64(t):
        fam = "date64"
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        fam = "time"
    return _Column(fam, t, fam in ("utf8", "binary"))


def _categorical_column(categories: list) -> _Column:
    kinds = {_lit(c).kind for c in categories}
    if kinds <= {"str"}:
        return _Column("utf8", pa.utf8(), True)
    if kinds <= {"num"}:
        is_float = any(isinstance(_lit(c).value, float) for c in categories)
        return _Column("float" if is_float else "int", pa.float64() if is_float else pa.int64(), False)
    if kinds <= {"bool"}:
        return _Column("bool", pa.bool_(), False)
    return _Column("mixed", None, False)


def _prepare(p: dict, col: _Column) -> dict | None:
    """p with its literals decoded into the column's terms (UTF-8 bytes for strings);
    None when a literal does not fit the column (the leaf is then unknown)."""
    op = p["op"]
    raw = (
        [p["value"]] if op in ("eq", "ne", "lt", "le", "gt", "ge", "starts_with")
        else [p["low"], p["high"]] if op == "between"
        else list(p["values"])
    )  # fmt: skip
    lits = [_lit(v) for v in raw]
    out = []
    for lit in lits:
        if col.family == "utf8" and lit.kind == "str":
            out.append(lit.value.encode("utf-8"))
        elif col.family == "binary" and lit.kind == "bytes":
            out.append(lit.value)
        elif col.family == "bool" and lit.kind == "bool":
            out.append(lit.value)
        elif col.family == "float" and lit.kind == "num":
            out.append(float(lit.value) if not _is_int(lit.value) else lit.value)
        elif col.family in ("int", "uint", "timestamp", "duration", "date32", "date64", "time") and lit.kind == "num":
            if _is_nan(lit.value):
                return None
            out.append(lit.value)
        else:
            return None
    if op == "starts_with" and not col.text:
        return None
    q = dict(p)
    if op in ("eq", "ne", "lt", "le", "gt", "ge", "starts_with"):
        q["_k"] = out[0]
    elif op == "between":
        q["_lo"], q["_hi"] = out
    else:
        q["_ks"] = out
    return q


def _semantics(col: _Column, q: dict) -> list[tuple]:
    """(semantics, leaf) pairs: the engines' ways of evaluating q on this column."""
    if col.family != "float":
        return [(PLAIN, q)]
    out = [(c, q) for c in FLOAT_SEMANTICS]
    narrow = col.arrow if col.arrow in (pa.float16(), pa.float32()) else None
    if narrow is not None:
        r = dict(q)
        for key in ("_k", "_lo", "_hi"):
            if key in r and not _is_nan(r[key]):
                r[key] = _round_to(r[key], narrow)
        if "_ks" in r:
            r["_ks"] = [k if _is_nan(k) else _round_to(k, narrow) for k in r["_ks"]]
        out += [(c, r) for c in FLOAT_SEMANTICS]
    return out


def _float_points(dom: _Domain, q_list: list[dict]) -> list[float]:
    """Representative values of a float interval: on every piece between the
    literals' breakpoints (and the two zeros), one value; every predicate leaf is
    constant on each piece."""
    lo = -math.inf if dom.lo is None else float(dom.lo)
    hi = math.inf if dom.hi is None else float(dom.hi)
    pts = {lo, hi}
    cands = [0.0, -0.0]
    for q in q_list:
        for k in _literals(q):
            if isinstance(k, (int, float)) and not _is_nan(k):
                kf = float(k) if abs(k) < 1.8e308 else math.copysign(math.inf, k)
                cands += [kf, math.nextafter(kf, -math.inf), math.nextafter(kf, math.inf)]
                if _is_int(k) and float(k) != k:  # an integer a float cannot hold exactly
                    cands += [math.nextafter(float(k), -math.inf), math.nextafter(float(k), math.inf)]
    for c in cands:
        if lo <= c <= hi:  # IEEE membership: both zeros when 0 is inside
            pts.add(c)
            if c == 0:
                pts.add(0.0)
                pts.add(-0.0)
    # a set dedups 0.0 and -0.0: keep both explicitly
    out = list(pts)
    if any(x == 0 for x in out):
        out = [x for x in out if x != 0] + ([0.0, -0.0] if lo <= 0 <= hi else [])
    return out


def _ordered_outcomes(q: dict, lo, hi) -> set:
    """Truth values leaf q takes over an interval [lo, hi] (None: unbounded) of a
    totally ordered domain (integers, booleans, times, UTF-8 / bytes)."""
    op = q["op"]
    out = set()
    lo_le = (lambda k: True) if lo is None else (lambda k: lo <= k)
    lo_lt = (lambda k: True) if lo is None else (lambda k: lo < k)
    hi_ge = (lambda k: True) if hi is None else (lambda k: hi >= k)
    hi_gt = (lambda k: True) if hi is None else (lambda k: hi > k)
    single = lo is not None and hi is not None and lo == hi
    if op in ("eq", "ne"):
        k = q["_k"]
        inside = lo_le(k) and hi_ge(k)
        only_k = single and lo == k
        t_eq, f_eq = inside, not only_k
        if op == "eq":
            out |= ({T} if t_eq else set()) | ({F} if f_eq else set())
        else:
            out |= ({T} if f_eq else set()) | ({F} if t_eq else set())
    elif op == "lt":
        k = q["_k"]
        out |= ({T} if lo_lt(k) else set()) | ({F} if hi_ge(k) else set())
    elif op == "le":
        k = q["_k"]
        out |= ({T} if lo_le(k) else set()) | ({F} if hi_gt(k) else set())
    elif op == "gt":
        k = q["_k"]
        out |= ({T} if hi_gt(k) else set()) | ({F} if lo_le(k) else set())
    elif op == "ge":
        k = q["_k"]
        out |= ({T} if hi_ge(k) else set()) | ({F} if lo_lt(k) else set())
    elif op == "between":
        a, b = q["_lo"], q["_hi"]
        if a <= b and lo_le(b) and hi_ge(a):
            out.add(T)
        if a > b or lo_lt(a) or hi_gt(b):
            out.add(F)
    elif op in ("in", "not_in"):
        ks = q["_ks"]
        hit = any(lo_le(k) and hi_ge(k) for k in ks)
        all_in = single and lo in ks
        t_in, f_in = hit, not all_in
        if op == "in":
            out |= ({T} if t_in else set()) | ({F} if f_in else set())
        else:
            out |= ({T} if f_in else set()) | ({F} if t_in else set())
    elif op == "starts_with":
        p = q["_k"]
        # Some v in [lo, hi] starts with p: hi >= p and lo's first len(p) bytes <= p.
        t_ok = hi_ge(p) and (lo is None or lo[: len(p)] <= p)
        both = lo is not None and hi is not None and lo.startswith(p) and hi.startswith(p)
        out |= ({T} if t_ok else set()) | ({F} if not both else set())
    else:
        raise ValueError(op)
    return out


def _leaf_outcomes(p: dict, col: _Column, dom: _Domain | None, nonnull: bool, null: bool) -> set:
    op = p["op"]
    out = {N} if null and op not in ("is_null", "is_not_null") else set()
    if op == "is_null":
        return ({T} if null else set()) | ({F} if nonnull else set())
    if op == "is_not_null":
        return ({F} if null else set()) | ({T} if nonnull else set())
    if not nonnull:
        return out
    q = _prepare(p, col)
    if q is None or dom is None or dom.kind == "any":
        return out | {T, F}
    sems = _semantics(col, q)
    if dom.kind == "finite":
        for v in dom.values:
            for sem, qq in sems:
                out.add(_concrete(qq, v, sem, col.text))
        return out
    # interval
    if col.family == "float":
        for v in _float_points(dom, [qq for _, qq in sems]):
            for sem, qq in sems:
                out.add(_concrete(qq, v, sem, False))
        return out
    return out | _ordered_outcomes(q, dom.lo, dom.hi)


_NOT = {T: F, F: T, N: N}


def _and3(a, b):
    if F in (a, b):
        return F
    if N in (a, b):
        return N
    return T


def _or3(a, b):
    if T in (a, b):
        return T
    if N in (a, b):
        return N
    return F


def _outcomes(p: dict, col: _Column, dom, nonnull: bool, null: bool) -> set:
    op = p.get("op")
    if op == "not":
        return {_NOT[x] for x in _outcomes(p["arg"], col, dom, nonnull, null)}
    if op in ("and", "or"):
        args = p["args"]
        if not args:
            raise ValueError(f"{op} without arguments")
        acc = _outcomes(args[0], col, dom, nonnull, null)
        f = _and3 if op == "and" else _or3
        for a in args[1:]:
            nxt = _outcomes(a, col, dom, nonnull, null)
            acc = {f(x, y) for x in acc for y in nxt}
        return acc
    if op not in ("eq", "ne", "lt", "le", "gt", "ge", "between", "in", "not_in",
                  "is_null", "is_not_null", "starts_with"):  # fmt: skip
        raise ValueError(f"unknown predicate op {op!r}")
    return _leaf_outcomes(p, col, dom, nonnull, null)


def _set_values(bits: bytes) -> list[int]:
    return [b - 1 for b in range(len(bits) * 8) if bits[b // 8] >> (b % 8) & 1]


def _to_column_value(v, col: _Column):
    if v is None:
        return None
    if col.family == "utf8":
        return v.encode("utf-8")
    return v


def _chunk_state(row: Row, col: _Column, t: pa.DataType):
    """(domain, non-null possible, null possible) of a usable row."""
    nonnull_count = row.rows - row.nulls
    nonnull, null = nonnull_count > 0, row.nulls > 0
    lo, hi = _to_column_value(row.min, col), _to_column_value(row.max, col)
    if col.family == "float":
        # No zero bounds a zero for every engine (IEEE operators: -0.0 = +0.0; the total
        # order: -0.0 < +0.0; DataFusion's IN lists: by bits), so a zero bound, as an
        # earlier draft recorded it, is widened past both zeros, as a writer now records
        # it: a zero minimum to minus the type's least subnormal, a zero maximum to plus.
        tiny = LEAST_SUBNORMAL[t]
        if lo is not None and lo == 0:
            lo = -tiny
        if hi is not None and hi == 0:
            hi = tiny
    if row.nans > 0:
        return _Domain("any"), nonnull, null  # bounds unknown: engines order NaN differently
    if lo is None and hi is None:
        return _Domain("any"), nonnull, null
    if lo is not None and hi is not None and lo > hi:
        return _Domain("any"), nonnull, null  # inconsistent: not used
    if pa.types.is_integer(t) and row.set is not None:
        vals = [v for v in _set_values(row.set) if (lo is None or v >= lo) and (hi is None or v <= hi)]
        return _Domain("finite", values=vals), nonnull, null
    return _Domain("interval", lo=lo, hi=hi), nonnull, null


def _categorical_state(row: Row, categories: list, col: _Column):
    """(domain over category values, non-null possible, null possible) from a codes row."""
    n = len(categories)
    codes = None
    if row.nans > 0 or row.nulls > 0:
        return None, True, True
    if row.set is not None:
        codes = _set_values(row.set)
    elif _is_int(row.min) and _is_int(row.max) and row.min <= row.max and row.max - row.min + 1 <= n:
        codes = list(range(row.min, row.max + 1))
    if codes is None:
        return None, True, True
    if any(c < -1 or c >= n for c in codes):
        return None, True, True  # a code that is no category: unknown
    null = -1 in codes
    present = [c for c in codes if c >= 0]
    vals = []
    for c in present:
        v = _lit(categories[c]).value
        vals.append(v.encode("utf-8") if isinstance(v, str) else v)
    return _Domain("finite", values=vals), bool(present), null


def statistic_chunks(stats: Stats | None, zarr_json: dict, decode_cf: bool = True) -> int:
    """How many statistic chunks the array has: ceil(len / L), L the file's chunk_len
    when the file is usable, else the array's chunk length."""
    length = zarr_json["shape"][0]
    if stats is not None and usable(stats, zarr_json, decode_cf):
        L = stats.chunk_len
    else:
        L = _grid_len(zarr_json)
    return -(-length // L)


def prune(
    stats: Stats | None,
    zarr_json: dict,
    versions: dict | None,
    predicate: dict,
    *,
    decode_cf: bool = True,
    categories: list | None = None,
) -> list[bool]:
    """Keep (True) or skip (False) per statistic chunk 0..n-1 for `predicate` over the
    array's column (`categories`: the array holds a categorical's codes, and the
    predicate is over the categorical's values). A chunk is skipped only when no row of
    it can satisfy the predicate under any engine's semantics."""
    n = statistic_chunks(stats, zarr_json, decode_cf)
    if stats is None or not usable(stats, zarr_json, decode_cf):
        _validate(predicate)
        return [True] * n
    rows = fresh_rows(stats, zarr_json, versions)
    t = stats.bound_type
    if categories is not None:
        if not pa.types.is_integer(t):
            return [True] * n
        col = _categorical_column(categories)
    else:
        col = _column_of(t)
    keep = []
    _validate(predicate)
    for i in range(n):
        row = rows.get(i)
        if row is None:
            keep.append(True)
            continue
        if categories is not None:
            dom, nonnull, null = _categorical_state(row, categories, col)
        else:
            dom, nonnull, null = _chunk_state(row, col, t)
        keep.append(T in _outcomes(predicate, col, dom, nonnull, null))
    return keep


def _validate(p) -> None:
    """Refuse a malformed predicate (whatever the statistics)."""
    if not isinstance(p, dict):
        raise ValueError(f"a predicate is an object, not {p!r}")
    op = p.get("op")
    if op == "not":
        _validate(p["arg"])
    elif op in ("and", "or"):
        if not p.get("args"):
            raise ValueError(f"{op} without arguments")
        for a in p["args"]:
            _validate(a)
    elif op in ("eq", "ne", "lt", "le", "gt", "ge", "starts_with"):
        _lit(p["value"])
    elif op == "between":
        _lit(p["low"]), _lit(p["high"])
    elif op in ("in", "not_in"):
        if not isinstance(p.get("values"), list):
            raise ValueError(f"{op} needs a list of values")
        for v in p["values"]:
            _lit(v)
    elif op not in ("is_null", "is_not_null"):
        raise ValueError(f"unknown predicate op {op!r}")


# ---------------------------------------------------------------------------------------
# A local array.


def local_versions(array_dir: str) -> dict[str, str]:
    """Every file below the array's directory, by key relative to it ('/'-separated),
    with its local version token: SIZE:MTIME_S.MTIME_NS9:INODE:CTIME_S.CTIME_NS9
    (lstat; seconds floored, nanoseconds 0..999999999 zero-padded to 9 digits)."""
    out = {}
    root = os.path.abspath(array_dir)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            key = os.path.relpath(path, root).replace(os.sep, "/")
            out[key] = version_token(st)
    return out


def version_token(st: os.stat_result) -> str:
    ms, mns = divmod(st.st_mtime_ns, 10**9)
    cs, cns = divmod(st.st_ctime_ns, 10**9)
    return f"{st.st_size}:{ms}.{mns:09d}:{st.st_ino}:{cs}.{cns:09d}"


def read_metadata(array_dir: str) -> dict:
    """A local array's metadata: zarr.json (v3), else .zarray with .zattrs under
    "attributes" (v2)."""
    v3 = os.path.join(array_dir, "zarr.json")
    if os.path.exists(v3):
        with open(v3, "rb") as f:
            meta = json.load(f)
        if meta.get("node_type") != "array":
            raise ValueError(f"{array_dir} is not an array")
        return meta
    with open(os.path.join(array_dir, ".zarray"), "rb") as f:
        meta = json.load(f)
    meta["zarr_format"] = 2
    attrs = os.path.join(array_dir, ".zattrs")
    if os.path.exists(attrs):
        with open(attrs, "rb") as f:
            meta["attributes"] = json.load(f)
    else:
        meta["attributes"] = {}
    return meta


def prune_local(array_dir: str, predicate: dict, decode_cf: bool = True) -> list[bool] | None:
    """Prune a local 1-D Zarr v3 or v2 array by its zarrow.stats: keep per statistic
    chunk, or None when the array has no statistics file. A file that fails a check
    keeps every chunk (and the InvalidStats is not raised)."""
    meta = read_metadata(array_dir)
    path = os.path.join(array_dir, STATS_KEY)
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return None
    stats = None
    if size <= MAX_FILE_BYTES:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        try:
            stats = read_stats(data)
        except InvalidStats:
            stats = None
    versions = local_versions(array_dir)
    return prune(stats, meta, versions, predicate, decode_cf=decode_cf)
