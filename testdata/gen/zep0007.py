#!/usr/bin/env python3
"""Write ZEP0007 draft-layout stores ("string and variable-length binary data types").

Nobody else implements the draft, so these stores are written here, byte by byte,
following the draft literally (see /work/shared/seeds/zep0007-strings.md and
FORMATS.md "ZEP0007 arrow layout"):

* ``zarr.json`` has ``"data_type": {"name": "string"}`` / ``{"name": "binary"}``
  (int32 offsets) or, from the draft's "potential additions", ``{"name": "large_string"}`` /
  ``{"name": "large_binary"}`` (int64 offsets); regular chunk grid; ``default`` chunk keys;
  ``codecs`` holds only bytes->bytes codecs (``[]`` or ``zstd``): the draft names no
  array->bytes codec, the data type *is* the chunk layout.
* each chunk, after the bytes->bytes codecs, is
  ``(n+1)`` little-endian offsets | zero padding up to the next multiple of 64 bytes | data,
  where ``n`` is the full chunk size (edge chunks are padded with the fill value).
* ``fill_value``: a JSON string for string types (``""``); for binary types a base64
  string (``""`` = empty bytes), the same convention zarr-python uses for
  ``variable_length_bytes``.

Expected values follow the same contract as generate.py: one column per array
(``pa.string()`` for string/large_string, ``pa.binary()`` for binary/large_binary).
"""

from __future__ import annotations

import base64
import json
import shutil
import sys
from pathlib import Path

import numcodecs
import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]  # testdata/
STORES = ROOT / "stores"
EXPECTED = ROOT / "expected"
WRITER = "testdata/gen/zep0007.py (hand-rolled, ZEP0007 draft layout)"

OFFSET_DTYPE = {"string": "<i4", "binary": "<i4", "large_string": "<i8", "large_binary": "<i8"}
IS_STRING = {"string": True, "binary": False, "large_string": True, "large_binary": False}


def round_up(x: int, base: int = 64) -> int:
    return -(-x // base) * base


def encode_chunk(values: list, offset_dtype: str) -> bytes:
    """The draft's "Writing from numpy" recipe: offsets, zero pad to 64, data."""
    raw = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    offsets = np.zeros(len(raw) + 1, dtype=offset_dtype)
    offsets[1:] = np.cumsum([len(x) for x in raw])
    offset_bytes = offsets.tobytes()
    data_start = round_up(len(offset_bytes))
    return offset_bytes + b"\x00" * (data_start - len(offset_bytes)) + b"".join(raw)


def decode_chunk(buf: bytes, n: int, offset_dtype: str) -> list[bytes]:
    """The draft's "How to decode a chunk" recipe (used to self-check every chunk written)."""
    width = np.dtype(offset_dtype).itemsize
    end = (n + 1) * width
    offsets = np.frombuffer(buf[:end], dtype=offset_dtype)
    data = buf[round_up(end):]
    assert offsets[0] == 0 and np.all(np.diff(offsets) >= 0) and offsets[-1] == len(data)
    return [data[offsets[i]:offsets[i + 1]] for i in range(n)]


ZSTD_JSON = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}


def write_array(path: Path, dtype_name: str, values, shape, chunks, *, codecs=(), missing=(), fill=None,
                attributes=None):
    """Write one ZEP0007 array. ``values`` is a list in C order of the whole array.

    ``missing``: chunk grid indices whose chunk file is not written (reads as fill).
    Returns the expected flat list (C order) with fill for missing chunks.
    """
    is_str = IS_STRING[dtype_name]
    if fill is None:
        fill = "" if is_str else b""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    arr = arr.reshape(shape)
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    expected = arr.copy()

    path.mkdir(parents=True)
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": {"name": dtype_name},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill if is_str else base64.b64encode(fill).decode("ascii"),
        "codecs": [c for c in codecs],
        "attributes": attributes or {},
        "storage_transformers": [],
    }
    (path / "zarr.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")

    for idx in np.ndindex(*grid):
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
        if idx in missing:
            expected[sl] = fill
            continue
        # full chunk shape, edge elements padded with the fill value
        block = np.empty(chunks, dtype=object)
        block[...] = fill
        part = arr[sl]
        block[tuple(slice(0, n) for n in part.shape)] = part
        flat = block.ravel(order="C").tolist()
        buf = encode_chunk(flat, OFFSET_DTYPE[dtype_name])
        got = decode_chunk(buf, len(flat), OFFSET_DTYPE[dtype_name])
        assert got == [v.encode() if is_str else v for v in flat]
        for codec in codecs:
            assert codec["name"] == "zstd", codec
            buf = numcodecs.Zstd(level=codec["configuration"]["level"]).encode(buf)
        key = path / ("c/" + "/".join(str(i) for i in idx))
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(bytes(buf))
    flat_expected = expected.ravel(order="C").tolist()
    return pa.array(flat_expected, type=pa.string() if is_str else pa.binary())


def save_expected(case: str, table: pa.Table, kind: str, notes: str, **extra) -> None:
    with pa.OSFile(str(EXPECTED / f"{case}.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    meta = {"kind": kind, "writer": WRITER, "notes": notes, "zarr_python_readable": False, **extra}
    (EXPECTED / f"{case}.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    print(f"  {case:32s} {kind:5s} rows={table.num_rows:5d} cols={table.column_names}")


def fresh(case: str) -> Path:
    path = STORES / f"{case}.zarr"
    if path.exists():
        shutil.rmtree(path)
    return path


STRINGS = ["the", "", "ünïcödé", "日本語", "🦀", "", "", "", "quick", "brown fox", "a\x00b", "end"]
BINARY = [b"", b"\x00", b"\xff\xfe", b"abc", b"", b"", b"", b"", b"\x00\x01\x02", b"z" * 70, b"\x80"]


def main() -> int:
    STORES.mkdir(parents=True, exist_ok=True)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    print("zep0007")

    # string: int32 offsets, codecs [], chunk 4: offsets 20 bytes -> padded to 64
    case = "zep0007_string"
    vals = ["the", "", "ünïcödé", "日本語", "", "", "", "", "", "", "", "", "🦀", "a\x00b"]
    col = write_array(fresh(case), "string", vals, (14,), (4,), missing={(2,)})
    save_expected(case, pa.table({case: col}), "array",
                  "ZEP0007 {'name':'string'}, int32 offsets, codecs []; length 14, chunk 4: chunk c/1 is all '' "
                  "(data buffer empty, chunk = 64 bytes of offsets+padding); chunk c/2 absent -> ''; edge chunk c/3 "
                  "holds 2 values padded with '' to 4; non-ASCII, emoji, empty strings.")

    # binary: int32 offsets + zstd
    case = "zep0007_binary"
    col = write_array(fresh(case), "binary", BINARY, (11,), (4,), codecs=[ZSTD_JSON], missing={(1,)})
    save_expected(case, pa.table({case: col}), "array",
                  "ZEP0007 {'name':'binary'}, int32 offsets, codecs [zstd level 3]; fill_value base64 ''; "
                  "length 11, chunk 4: chunk c/1 absent -> b''; edge chunk c/2 holds 3 values; NULs, invalid UTF-8.")

    # large_string: int64 offsets; chunk 7 -> (7+1)*8 = 64 bytes of offsets, no padding at all
    case = "zep0007_large_string"
    col = write_array(fresh(case), "large_string", STRINGS + ["ß", "ç", "last"], (15,), (7,),
                      codecs=[ZSTD_JSON], missing={(1,)})
    save_expected(case, pa.table({case: col}), "array",
                  "ZEP0007 {'name':'large_string'} (draft 'potential addition'), int64 offsets, codecs [zstd]; "
                  "length 15, chunk 7: offsets are exactly 64 bytes so there is NO padding; chunk c/1 absent -> ''; "
                  "edge chunk c/2 holds 1 value padded to 7.")

    # large_binary: int64 offsets, codecs []
    case = "zep0007_large_binary"
    col = write_array(fresh(case), "large_binary", BINARY, (11,), (3,), missing={(2,)})
    save_expected(case, pa.table({case: col}), "array",
                  "ZEP0007 {'name':'large_binary'}, int64 offsets (32 bytes -> padded to 64), codecs []; "
                  "length 11, chunk 3: chunk c/2 absent -> b''; edge chunk c/3 holds 2 values.")

    # 2-D string
    case = "zep0007_string_2d"
    vals = [f"{r},{c}" + "é" * ((r + c) % 3) for r in range(5) for c in range(3)]
    vals[4] = ""
    col = write_array(fresh(case), "string", vals, (5, 3), (2, 2), codecs=[ZSTD_JSON], missing={(1, 1)})
    save_expected(case, pa.table({case: col}), "array",
                  "ZEP0007 string 2-D shape (5,3) chunks (2,2), codecs [zstd]; chunk c/1/1 absent -> ''; edge "
                  "chunks padded to (2,2) in C order; expected = C-order flattening.")

    # group of ZEP0007 arrays (different types and chunk lengths), plus a 2-D child to ignore
    case = "zep0007_group"
    path = fresh(case)
    path.mkdir(parents=True)
    (path / "zarr.json").write_text(json.dumps(
        {"zarr_format": 3, "node_type": "group", "attributes": {}}, indent=2) + "\n")
    n = 9
    names = [f"item-{i}" if i % 4 else "" for i in range(n)]
    payload = [bytes(range(i)) for i in range(n)]
    cols = {
        "name": write_array(path / "name", "string", names, (n,), (4,)),
        "payload": write_array(path / "payload", "large_binary", payload, (n,), (5,), codecs=[ZSTD_JSON]),
    }
    write_array(path / "grid", "string", [str(i) for i in range(n * 2)], (n, 2), (4, 2))  # 2-D: ignored
    save_expected(case, pa.table(dict(sorted(cols.items()))), "group",
                  "v3 group of ZEP0007 arrays: name (string, chunk 4, codecs []), payload (large_binary, chunk 5, "
                  "zstd); ignored: grid (2-D string).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
