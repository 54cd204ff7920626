#!/usr/bin/env python3
"""Write zarrow's golden stores with zarr-python (the real writer) and their expected values.

For every case this writes

* ``testdata/stores/<case>.zarr``   -- written by zarr-python 3.1.6 (some hand-edited, see below)
* ``testdata/expected/<case>.arrow`` -- Arrow IPC *file* with the values zarr-python reads back
* ``testdata/expected/<case>.json``  -- ``{"kind", "writer", "notes", ...}``

Expected-file contract (the Rust tests compare to it exactly):

* an array store ``X.zarr`` -> one column named ``X``, values ``arr[...].ravel(order="C")``;
* a group store -> one column per 1-D child array, sorted by name; children that are
  not 1-D, and subgroups, are not columns;
* strings (``string``, v2 ``|O`` + vlen-utf8, ``fixed_length_utf32`` / ``<U``n) -> ``pa.string()``;
  bytes (``variable_length_bytes``, ``bytes``, v2 vlen-bytes, ``null_terminated_bytes`` /
  ``|S``n) -> ``pa.binary()`` (numpy semantics: trailing NULs stripped for fixed width);
  numbers and bool -> the matching pyarrow primitive type (native endian); no nulls.

Run from anywhere with the project venv: ``.venv/bin/python testdata/gen/generate.py``.
Idempotent: each store directory is deleted and rewritten.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pyarrow as pa
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec, ZstdCodec
from zarr.dtype import VariableLengthBytes

# zarr-python warns that fixed_length_utf32 / variable_length_bytes / ... have no
# ratified v3 spec. That is exactly what we want to exercise.
warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")

# numcodecs' GZip (used by zarr-python's gzip codec) writes the current time into the gzip
# header (bytes 4..8, MTIME), so every regeneration would change the gzip chunk files.
# Pin MTIME to 0 so regen.sh is byte-for-byte idempotent; the files are otherwise exactly
# what numcodecs writes (readers must ignore MTIME anyway).
_GzipFile = gzip.GzipFile


class _GzipFileMtime0(_GzipFile):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("mtime", 0)
        super().__init__(*args, **kwargs)


gzip.GzipFile = _GzipFileMtime0

ROOT = Path(__file__).resolve().parents[1]  # testdata/
STORES = ROOT / "stores"
EXPECTED = ROOT / "expected"
WRITER = f"zarr-python {zarr.__version__}"
assert zarr.__version__ == "3.1.6", zarr.__version__
assert numcodecs.__version__ == "0.16.6", numcodecs.__version__

# --------------------------------------------------------------------------------------
# expected values: what zarr-python reads back, mapped onto the Arrow contract
# --------------------------------------------------------------------------------------

STRING_ZDTYPES = {"VariableLengthUTF8", "FixedLengthUTF32"}
BINARY_ZDTYPES = {"VariableLengthBytes", "NullTerminatedBytes"}


def zdtype_name(arr: zarr.Array) -> str:
    return type(arr.metadata.dtype).__name__


def column_from_array(arr: zarr.Array) -> pa.Array:
    """The expected Arrow column for one zarr array, from zarr-python's own read."""
    values = np.asarray(arr[...]).ravel(order="C")
    kind = zdtype_name(arr)
    if kind in STRING_ZDTYPES:
        # StringDType / <U n: .tolist() gives python str, <U trailing NULs already stripped
        return pa.array([str(v) for v in values.tolist()], type=pa.string())
    if kind in BINARY_ZDTYPES:
        # object array of bytes, or |S n (tolist() strips trailing NULs like numpy does)
        return pa.array([bytes(v) for v in values.tolist()], type=pa.binary())
    if values.dtype.kind in "biuf":
        native = values.astype(values.dtype.newbyteorder("="))
        return pa.array(native, type=pa.from_numpy_dtype(native.dtype))
    if values.dtype.kind in "Mm":
        # numpy datetime64 / timedelta64: pyarrow's timestamp / duration (date32 for
        # datetime64[D]), NaT -> null.
        native = values.astype(values.dtype.newbyteorder("="))
        return pa.array(native)
    raise TypeError(f"no Arrow mapping for zarr dtype {arr.metadata.dtype!r} / numpy {values.dtype}")


def table_from_store(path: Path) -> tuple[pa.Table, str]:
    node = zarr.open(store=str(path), mode="r")
    if isinstance(node, zarr.Array):
        name = path.name.removesuffix(".zarr")
        return pa.table({name: column_from_array(node)}), "array"
    cols = {}
    for name, child in sorted(node.arrays(), key=lambda kv: kv[0]):
        if child.ndim == 1:
            cols[name] = column_from_array(child)
    return pa.table({name: cols[name] for name in table_order(node.attrs, cols)}), "group"


def table_order(attrs, names) -> list[str]:
    """A group's column order: anndata's for a dataframe (the `_index` element, then
    `column-order`, then any other column by name), else by name."""
    names = sorted(names)
    if attrs.get("encoding-type") != "dataframe":
        return names
    first = [attrs.get("_index"), *attrs.get("column-order", [])]
    first = [n for n in first if n in names]
    return first + [n for n in names if n not in first]


def write_expected(case: str, notes: str, writer: str = WRITER, **extra) -> None:
    table, kind = table_from_store(STORES / f"{case}.zarr")
    EXPECTED.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(EXPECTED / f"{case}.arrow"), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    meta = {"kind": kind, "writer": writer, "notes": notes, **extra}
    (EXPECTED / f"{case}.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    print(f"  {case:32s} {kind:5s} rows={table.num_rows:5d} cols={table.column_names}")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def fresh(case: str) -> Path:
    path = STORES / f"{case}.zarr"
    if path.exists():
        shutil.rmtree(path)
    return path


def array_case(case: str, data: np.ndarray, notes: str, *, chunks, dtype=None, write=None, **kw):
    """Create ``case`` with zarr-python, write ``data`` (or call ``write(arr)``), and record expected."""
    path = fresh(case)
    dtype = data.dtype if dtype is None else dtype
    arr = zarr.create_array(store=str(path), shape=data.shape, chunks=chunks, dtype=dtype, **kw)
    if write is None:
        arr[...] = data
    else:
        write(arr)
    return path, arr


def remove_chunk(path: Path, key: str) -> None:
    """Delete a chunk so that it is really absent (zarr-python must read the fill value there)."""
    p = path / key
    if p.exists():
        p.unlink()
    assert not p.exists()


def chunk_keys(path: Path) -> list[str]:
    return sorted(
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs", ".zgroup")
    )


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------

STR10 = ["alpha", "", "ünïcödé", "日本語", "🦀 crab", "a\x00b", "the", "quick brown fox", "x" * 40, "end"]
STR12 = ["the", "quick", "brown", "fox", "", "jumps", "över", "the", "lazy", "dög", "日本", "🦀"]
STR15 = [f"r{i // 3}c{i % 3}" + ("é" * (i % 4)) for i in range(15)]
STR15[4] = ""
BYTES9 = [b"", b"abc", b"\x00", b"\x00a\x00b\x00", b"\xff\xfe", b"\x80\x81\x82", b"plain", b"", b"\x00\x00"]


def v3_string_cases():
    print("v3 string")
    case = "v3_string"
    path, _ = array_case(case, obj(STR10), "", chunks=(4,), dtype=str)
    write_expected(case, "v3 string, default codecs (vlen-utf8 + zstd level 0); length 10, chunk 4, "
                   "edge chunk of 2 padded to 4 with ''; '', non-ASCII, emoji, embedded NUL 'a\\x00b'.")

    case = "v3_string_fill_missing"

    def write(arr):
        arr[0:4] = np.array(STR12[0:4], dtype=object)  # chunk 0 full
        arr[8:10] = np.array(STR12[8:10], dtype=object)  # chunk 2 partial: rest of chunk is fill
        # chunk 1 (4..8) never written; chunk 3 (12..14, edge) never written

    path, _ = array_case(case, obj(["NA"] * 14), "", chunks=(4,), dtype=str, fill_value="NA", write=write)
    for key in ("c/1", "c/3"):
        remove_chunk(path, key)
    assert chunk_keys(path) == ["c/0", "c/2"], chunk_keys(path)
    write_expected(case, "v3 string, fill_value 'NA', length 14, chunk 4; chunks c/1 and c/3 (edge) are "
                   "absent and read as 'NA'; chunk c/2 was partially written (rest is 'NA' inside the chunk).")

    comps = {
        "v3_string_gzip": ([GzipCodec(level=5)], "gzip level 5"),
        "v3_string_blosc_zstd": ([BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")], "blosc zstd clevel 5 shuffle (typesize 1)"),
        "v3_string_blosc_lz4": ([BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")], "blosc lz4 clevel 5 shuffle (typesize 1)"),
        "v3_string_nocomp": (None, "no bytes->bytes codec: the chunk file is the raw vlen-utf8 layout"),
        "v3_string_zstd_crc32c": ([ZstdCodec(level=3), Crc32cCodec()], "zstd level 3 then crc32c (4-byte LE CRC32C appended)"),
    }
    for case, (compressors, what) in comps.items():
        array_case(case, obj(STR12), "", chunks=(5,), dtype=str, compressors=compressors)
        write_expected(case, f"v3 string, vlen-utf8 + {what}; length 12, chunk 5 (edge chunk of 2).")

    case = "v3_string_2d"
    data = obj(STR15).reshape(5, 3)
    array_case(case, data, "", chunks=(2, 2), dtype=str)
    write_expected(case, "v3 string 2-D shape (5,3), chunks (2,2): edge chunks in both dimensions; "
                   "expected column is the C-order flattening.")

    # Extra (beyond the vlen basics): sharding_indexed around vlen-utf8. Inner chunk 1 of
    # shard 0 is all fill, so the shard index marks it absent (offset = nbytes = 2^64-1).
    case = "v3_string_sharded"
    vals = [f"v{i}-ü" for i in range(14)]
    vals[3:6] = ["", "", ""]
    path, _ = array_case(case, obj(vals), "", chunks=(3,), shards=(6,), dtype=str)
    assert chunk_keys(path) == ["c/0", "c/1", "c/2"], chunk_keys(path)
    write_expected(case, "EXTRA: v3 string with sharding_indexed: shards (6,), inner chunks (3,), inner codecs "
                   "vlen-utf8 + zstd, index_codecs bytes + crc32c at the end; length 14: shard c/0 has its "
                   "inner chunk 1 all '' (absent in the index: offset = nbytes = 0xFFFF_FFFF_FFFF_FFFF); "
                   "shard c/2 is the edge shard (inner chunks past the array end are not written).")


    # N-d sharding: shards (4, 6) of inner chunks (2, 3). Rows 4..6 x columns 0..3 are all
    # '' (the fill value), so that inner chunk of shard c/1/0 is absent from its index;
    # shard c/2/0 is the edge shard (its second row of inner chunks lies past the end).
    case = "v3_string_sharded_2d"
    vals = [f"r{i // 6}c{i % 6}-\u00e9" for i in range(60)]
    for r in range(4, 6):
        for c in range(3):
            vals[r * 6 + c] = ""
    path, _ = array_case(case, obj(vals).reshape(10, 6), "", chunks=(2, 3), shards=(4, 6), dtype=str)
    assert chunk_keys(path) == ["c/0/0", "c/1/0", "c/2/0"], chunk_keys(path)
    write_expected(case, "EXTRA: v3 string 2-D with sharding_indexed: shape (10, 6), shards (4, 6), inner "
                   "chunks (2, 3), inner codecs vlen-utf8 + zstd, index bytes + crc32c at the end; inner "
                   "chunk (0, 0) of shard c/1/0 is all '' (absent in the index); shard c/2/0 is the edge "
                   "shard; expected column is the C-order flattening.")

def v3_bytes_cases():
    print("v3 bytes / fixed width")
    case = "v3_vlen_bytes"
    array_case(case, obj(BYTES9), "", chunks=(4,), dtype=VariableLengthBytes())
    write_expected(case, "v3 variable_length_bytes (vlen-bytes + zstd), fill_value base64 ''; b'', NULs, "
                   "invalid UTF-8; length 9, chunk 4.")

    case = "v3_fixed_utf32"
    data = np.array(["abcde", "ab", "", "ünïcö", "日本", "x", "🦀🦀🦀🦀🦀", "zz"], dtype="<U5")
    array_case(case, data, "", chunks=(3,), dtype="<U5")
    write_expected(case, "v3 fixed_length_utf32 length_bytes 20 (<U5), bytes codec little + zstd; "
                   "full-length and shorter values (NUL padded); length 8, chunk 3.")

    case = "v3_fixed_utf32_fill"

    def write(arr):
        arr[0:3] = np.array(["abcde", "a", ""], dtype="<U5")

    array_case(case, np.array(["zz"] * 7, dtype="<U5"), "", chunks=(3,), dtype="<U5", fill_value="zz", write=write)
    remove_chunk(STORES / f"{case}.zarr", "c/1")
    remove_chunk(STORES / f"{case}.zarr", "c/2")
    write_expected(case, "v3 fixed_length_utf32 (<U5) with fill_value 'zz' (JSON string); chunks c/1 "
                   "and c/2 (edge) absent -> 'zz'.")

    case = "v3_null_terminated_bytes"
    data = np.array([b"abcde", b"ab", b"", b"\x00\x01", b"a\x00b", b"\xff\xfe\xfd\xfc\xfb", b"x"], dtype="S5")
    array_case(case, data, "", chunks=(3,), dtype="S5")
    write_expected(case, "v3 null_terminated_bytes length_bytes 5 (S5), bytes codec + zstd; full-length "
                   "(no terminator) and shorter values; interior NUL kept, trailing NULs stripped "
                   "(b'\\x00\\x01' keeps its leading NUL); length 7, chunk 3.")

    case = "v3_null_terminated_bytes_fill"

    def write(arr):
        arr[0:3] = np.array([b"abcde", b"a", b""], dtype="S5")

    array_case(case, np.array([b"ab"] * 5, dtype="S5"), "", chunks=(3,), dtype="S5", fill_value=b"ab", write=write)
    remove_chunk(STORES / f"{case}.zarr", "c/1")
    write_expected(case, "v3 null_terminated_bytes (S5) with fill_value b'ab', which zarr-python writes "
                   "as base64 'YWI='; chunk c/1 (edge) absent -> b'ab'.")


def numeric_values(dt: np.dtype, n: int) -> np.ndarray:
    if dt.kind == "b":
        return np.array([(i * 7) % 3 == 0 for i in range(n)], dtype=dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        head = [info.min, info.max, 0, 1]
        if dt.kind == "i":
            head += [-1, info.min + 1, info.max - 1]
        else:
            head += [info.max - 1, 2, 3]
        body = [(i * 37) % 100 for i in range(n - len(head))]
        return np.array(head + body, dtype=dt)
    info = np.finfo(dt)
    head = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, float(info.max), float(info.min), float(info.tiny)]
    body = [i / 3 for i in range(n - len(head))]
    return np.array(head + body, dtype=dt)


NUMERIC_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "float32", "float64", "bool"]


def v3_numeric_cases():
    print("v3 numeric")
    for name in NUMERIC_DTYPES:
        case = f"v3_{name}"
        data = numeric_values(np.dtype(name), 11)
        array_case(case, data, "", chunks=(4,))
        extra = "; NaN, +-inf, -0.0, max, min, tiny" if name.startswith("float") else (
            "; min and max" if name != "bool" else "")
        write_expected(case, f"v3 {name}, bytes codec (little) + zstd; length 11, chunk 4 (edge chunk of 3){extra}.")

    case = "v3_int32_big_endian"
    data = np.array([1, -1, 0x01020304, np.iinfo(np.int32).min, np.iinfo(np.int32).max, 7, 8], dtype="<i4")
    array_case(case, data, "", chunks=(3,), serializer=BytesCodec(endian="big"), compressors=None)
    write_expected(case, "v3 int32 with bytes codec endian 'big', no compressor (raw big-endian chunks); "
                   "length 7, chunk 3.")

    case = "v3_float64_big_endian"
    data = np.array([1.0, -0.5, np.nan, np.inf, 1e-300], dtype="f8")
    array_case(case, data, "", chunks=(2,), serializer=BytesCodec(endian="big"))
    write_expected(case, "v3 float64 with bytes codec endian 'big' + zstd; length 5, chunk 2.")

    # Extra: a transpose (array->array) codec. Only numeric: zarr-python 3.1.6 does not
    # transpose vlen-utf8 chunks on write but does on read, so a string array with a
    # transpose codec does not even round-trip in zarr-python (not a usable fixture).
    case = "v3_int32_transpose"
    data = np.arange(15, dtype="<i4").reshape(5, 3) * 10 - 70
    array_case(case, data, "", chunks=(2, 2), filters=[TransposeCodec(order=(1, 0))], compressors=None)
    write_expected(case, "EXTRA: v3 int32 2-D (5,3) chunks (2,2) with a transpose codec order [1,0] before "
                   "bytes, no compressor: each chunk is stored in F order (chunk c/0/0 = "
                   "[-70, -40, -60, -30]); expected = C-order flattening of the array.")

    case = "v3_float64_nan_fill_missing"
    data = np.array([1.0, 2.0, 3.0, 4.0, np.nan, np.nan, np.nan, np.nan, 9.0, 10.0], dtype="f8")
    path, _ = array_case(case, data, "", chunks=(4,), fill_value=np.nan)
    remove_chunk(path, "c/1")
    assert chunk_keys(path) == ["c/0", "c/2"], chunk_keys(path)
    write_expected(case, "v3 float64 fill_value NaN (JSON \"NaN\"); chunk c/1 absent -> NaN x4.")


def v3_key_encoding_cases():
    print("v3 chunk key encodings")
    data = obj(STR15).reshape(5, 3)
    cases = {
        "v3_key_default_dot": ({"name": "default", "separator": "."}, "default encoding, separator '.': keys c.0.0 ..."),
        "v3_key_v2_dot": ({"name": "v2", "separator": "."}, "v2 encoding, separator '.': keys 0.0 ..."),
        "v3_key_v2_slash": ({"name": "v2", "separator": "/"}, "v2 encoding, separator '/': keys 0/0 ..."),
    }
    for case, (cke, what) in cases.items():
        path, _ = array_case(case, data, "", chunks=(2, 2), dtype=str, chunk_key_encoding=cke)
        write_expected(case, f"v3 string 2-D (5,3) chunks (2,2), chunk_key_encoding {what}",
                       chunk_keys=chunk_keys(path))

    case = "v3_int16_key_default_dot"
    path, _ = array_case(case, np.arange(10, dtype="i2") - 5, "", chunks=(4,),
                         chunk_key_encoding={"name": "default", "separator": "."})
    write_expected(case, "v3 int16 1-D, default encoding separator '.': keys c.0 c.1 c.2",
                   chunk_keys=chunk_keys(path))


def v2_cases():
    print("v2")
    case = "v2_string_dot"
    array_case(case, obj(STR10), "", chunks=(4,), dtype=str, zarr_format=2)
    write_expected(case, "v2 |O + vlen-utf8 filter, zstd compressor (zarr-python default), "
                   "dimension_separator '.'; length 10, chunk 4.")

    case = "v2_string_2d"
    data = obj(STR15).reshape(5, 3)
    path, _ = array_case(case, data, "", chunks=(2, 2), dtype=str, zarr_format=2)
    write_expected(case, "v2 |O vlen-utf8 2-D (5,3) chunks (2,2), dimension_separator '.': keys 0.0 ...",
                   chunk_keys=chunk_keys(path))

    case = "v2_string_slash"
    path, _ = array_case(case, data, "", chunks=(2, 2), dtype=str, zarr_format=2,
                         chunk_key_encoding={"name": "v2", "separator": "/"})
    write_expected(case, "v2 |O vlen-utf8 2-D (5,3) chunks (2,2), dimension_separator '/': keys 0/0 ...",
                   chunk_keys=chunk_keys(path))

    # Extra: v2 "order": "F" -- elements inside each chunk are stored in Fortran order.
    case = "v2_string_order_f"
    array_case(case, data, "", chunks=(2, 2), dtype=str, zarr_format=2, order="F")
    write_expected(case, "EXTRA: v2 |O vlen-utf8 2-D (5,3) chunks (2,2) with \"order\": \"F\": the vlen-utf8 "
                   "elements of each chunk are in F order (chunk 0.0 holds elements [0,0], [1,0], [0,1], [1,1] in that order); expected = "
                   "C-order flattening of the array.")

    case = "v2_vlen_bytes"
    array_case(case, obj(BYTES9), "", chunks=(4,), dtype=VariableLengthBytes(), zarr_format=2)
    write_expected(case, "v2 |O + vlen-bytes filter, zstd; NULs, invalid UTF-8, b''.")

    case = "v2_U5"
    data = np.array(["abcde", "ab", "", "ünïcö", "🦀🦀🦀🦀🦀", "z"], dtype="<U5")
    array_case(case, data, "", chunks=(4,), zarr_format=2)
    write_expected(case, "v2 <U5 (UTF-32LE, 20 bytes/element), zstd.")

    case = "v2_S5"
    data = np.array([b"abcde", b"ab", b"", b"\x00\x01", b"\xff\xfe\xfd\xfc\xfb", b"z"], dtype="S5")
    array_case(case, data, "", chunks=(4,), zarr_format=2)
    write_expected(case, "v2 |S5, zstd; fill_value written as base64 ''.")

    for case, dt in (("v2_i8", "<i8"), ("v2_f8", "<f8"), ("v2_b1", "|b1")):
        data = numeric_values(np.dtype(dt), 11)
        array_case(case, data, "", chunks=(4,), zarr_format=2)
        write_expected(case, f"v2 {dt}, zstd; length 11, chunk 4.")

    case = "v2_i4_big_endian"
    data = np.array([1, -1, 0x01020304, np.iinfo(np.int32).min, np.iinfo(np.int32).max, 7, 8], dtype=">i4")
    array_case(case, data, "", chunks=(3,), zarr_format=2, compressors=None)
    write_expected(case, "v2 >i4 (big-endian), no compressor: raw big-endian chunks.")

    comps = {
        "v2_string_blosc": (numcodecs.Blosc(), "blosc default (lz4, clevel 5, shuffle 1, blocksize 0)"),
        "v2_string_zstd": (numcodecs.Zstd(level=3), "zstd level 3"),
        "v2_string_gzip": (numcodecs.GZip(level=5), "gzip level 5"),
        "v2_string_zlib": (numcodecs.Zlib(level=5), "zlib level 5"),
        "v2_string_nocomp": (None, "null"),
    }
    for case, (comp, what) in comps.items():
        array_case(case, obj(STR12), "", chunks=(5,), dtype=str, zarr_format=2, compressors=comp)
        write_expected(case, f"v2 |O vlen-utf8, compressor {what}; length 12, chunk 5.")

    case = "v2_string_fill_missing"

    def write(arr):
        arr[0:4] = np.array(STR12[0:4], dtype=object)
        arr[8:10] = np.array(STR12[8:10], dtype=object)

    path, _ = array_case(case, obj(["NA"] * 10), "", chunks=(4,), dtype=str, zarr_format=2,
                         fill_value="NA", write=write)
    remove_chunk(path, "1")
    assert chunk_keys(path) == ["0", "2"], chunk_keys(path)
    write_expected(case, "v2 |O vlen-utf8 fill_value 'NA'; length 10, chunk 4; chunk '1' absent -> 'NA'; edge chunk '2' written.")

    # Hand-edited variants: zarr-python 3.1.6 always writes a string fill_value for |O
    # strings, but v2 stores in the wild (zarr-python 2.x, other writers) carry
    # fill_value null or 0. We copy the written store and edit .zarray; the expected values
    # are whatever zarr-python 3.1.6 reads from the edited store (0 turns into "0").
    for fill in (None, 0):
        case = "v2_string_fill_null" if fill is None else "v2_string_fill_zero"
        src = STORES / "v2_string_fill_missing.zarr"
        dst = fresh(case)
        shutil.copytree(src, dst)
        edit_json(dst / ".zarray", lambda d, fill=fill: d.__setitem__("fill_value", fill))
        write_expected(case, f"HAND-EDITED copy of v2_string_fill_missing with .zarray fill_value {json.dumps(fill)} "
                       "(zarr-python 3 cannot write it); chunk '1' absent; expected = what zarr-python 3.1.6 "
                       "reads from the edited store.", writer=f"{WRITER} + hand edit", hand_edited=True)

    # v2 group
    case = "v2_group"
    path = fresh(case)
    g = zarr.open_group(store=str(path), mode="w", zarr_format=2)
    g.attrs["title"] = "small v2 group"
    a = g.create_array("name", shape=(7,), chunks=(3,), dtype=str)
    a[:] = obj(["a", "", "ñ", "日本", "e", "ff", "g"])
    a = g.create_array("value", shape=(7,), chunks=(4,), dtype="<f8")
    a[:] = np.array([0.5, np.nan, -1, 2, 3, np.inf, 7], dtype="<f8")
    a = g.create_array("flag", shape=(7,), chunks=(7,), dtype="|b1")
    a[:] = np.array([True, False, True, True, False, False, True])
    a = g.create_array("blob", shape=(7,), chunks=(2,), dtype=VariableLengthBytes())
    a[:] = obj([b"", b"\x00", b"\xff", b"ab", b"c", b"", b"zz"])
    a = g.create_array("matrix", shape=(7, 2), chunks=(4, 2), dtype="<i4")  # 2-D: not a column
    a[:] = np.arange(14, dtype="<i4").reshape(7, 2)
    sub = g.create_group("sub")  # subgroup: not a column
    a = sub.create_array("hidden", shape=(7,), chunks=(7,), dtype="<i4")
    a[:] = np.arange(7, dtype="<i4")
    write_expected(case, "v2 group (.zgroup): 1-D children name (|O vlen-utf8, chunk 3), value (<f8, chunk 4), "
                   "flag (|b1, chunk 7), blob (|O vlen-bytes, chunk 2); ignored: matrix (2-D), sub/hidden (subgroup).")


def obs_group():
    """A realistic anndata-like obs table; the README's first command converts it."""
    print("obs group")
    case = "obs"
    path = fresh(case)
    rng = np.random.default_rng(20240607)
    n = 1000
    cell_types = np.array(["B cell", "CD4 T cell", "CD8 T cell", "NK cell", "CD14 Monocyte",
                           "FCGR3A Monocyte", "Dendritic cell", "Megakaryocyte", "Plasma cell", "γδ T cell"])
    cell_type = cell_types[rng.integers(0, len(cell_types), n)]
    bases = np.array(list("ACGT"))
    barcode = ["".join(rng.choice(bases, 16)) + "-1" for _ in range(n)]
    n_genes = rng.integers(200, 5000, n).astype(np.int32)
    total_counts = np.round(n_genes * rng.lognormal(0.8, 0.3, n), 1).astype(np.float64)
    is_doublet = rng.random(n) < 0.07
    raw = obj([bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in rng.integers(0, 6, n)])
    umap = np.round(rng.normal(0, 5, (n, 2)), 1).astype(np.float32)

    g = zarr.open_group(store=str(path), mode="w", zarr_format=3)
    g.attrs.update({
        "_index": "barcode",
        "column-order": ["cell_type", "n_genes", "total_counts", "is_doublet", "raw"],
        "encoding-type": "dataframe",
        "encoding-version": "0.2.0",
    })
    specs = [
        ("barcode", obj(barcode), 300, str),
        ("cell_type", obj(cell_type.tolist()), 128, str),
        ("n_genes", n_genes, 256, None),
        ("total_counts", total_counts, 1000, None),
        ("is_doublet", is_doublet, 77, None),
        ("raw", raw, 50, VariableLengthBytes()),
    ]
    for name, data, chunk, dtype in specs:
        a = g.create_array(name, shape=(n,), chunks=(chunk,), dtype=data.dtype if dtype is None else dtype)
        a[:] = data
    a = g.create_array("X_umap", shape=(n, 2), chunks=(500, 2), dtype="float32")  # 2-D: ignored
    a[:] = umap
    uns = g.create_group("uns")  # subgroup: ignored
    a = uns.create_array("cell_type_colors", shape=(len(cell_types),), chunks=(len(cell_types),), dtype=str)
    a[:] = obj([f"#{i * 0x151515 % 0xFFFFFF:06x}" for i in range(len(cell_types))])
    write_expected(case, "v3 group shaped like an anndata obs table, 1000 rows, seed 20240607: barcode "
                   "(string, chunk 300), cell_type (string, chunk 128), n_genes (int32, chunk 256), "
                   "total_counts (float64, chunk 1000), is_doublet (bool, chunk 77), raw "
                   "(variable_length_bytes, chunk 50); ignored: X_umap (2-D float32) and uns/ (subgroup).")


def numcodecs_compressor_cases():
    """numcodecs' LZ4, BZ2 and LZMA, as v2 compressors and as zarr-python 3's
    `numcodecs.*` v3 codecs (issue 12)."""
    print("numcodecs compressors")
    from zarr.codecs.numcodecs import BZ2, LZ4, LZMA

    v2 = {
        "v2_string_lz4": (numcodecs.LZ4(), "numcodecs LZ4 (acceleration 1)"),
        "v2_string_bz2": (numcodecs.BZ2(level=9), "numcodecs BZ2 level 9"),
        "v2_string_lzma": (numcodecs.LZMA(), "numcodecs LZMA (xz, preset 6)"),
        "v2_string_lzma_alone": (numcodecs.LZMA(format=2, preset=1), "numcodecs LZMA format 2 (.lzma), preset 1"),
    }
    for case, (comp, what) in v2.items():
        array_case(case, obj(STR12), "", chunks=(5,), dtype=str, zarr_format=2, compressors=comp)
        write_expected(case, f"v2 |O vlen-utf8, compressor {what}; length 12, chunk 5.")
    v3 = {
        "v3_string_numcodecs_lz4": (LZ4(), "numcodecs.lz4"),
        "v3_string_numcodecs_bz2": (BZ2(level=3), "numcodecs.bz2 level 3"),
        "v3_string_numcodecs_lzma": (LZMA(), "numcodecs.lzma (xz)"),
    }
    for case, (comp, what) in v3.items():
        array_case(case, obj(STR12), "", chunks=(5,), dtype=str, compressors=[comp])
        write_expected(case, f"v3 string, vlen-utf8 + {what}; length 12, chunk 5 (edge chunk of 2).")
    case = "v3_int32_numcodecs_lz4"
    data = np.arange(-500, 500, 7, dtype="<i4")
    array_case(case, data, "", chunks=(40,), compressors=[LZ4()])
    write_expected(case, "v3 int32, bytes + numcodecs.lz4; length 143, chunk 40.")


def numpy_time_and_float16_cases():
    """numpy datetime64 / timedelta64 (zarr-python's numpy.datetime64 /
    numpy.timedelta64 v3 data types, v2 M8 / m8 dtypes), float16, and numcodecs'
    delta filter."""
    print("numpy times, float16, delta")
    from zarr.codecs.numcodecs import Delta

    nat = np.datetime64("NaT")
    ns = np.array(["2020-01-01T12:34:56.789012345", "NaT", "1970-01-01", "1677-09-21T00:12:43.145224193",
                   "2262-04-11T23:47:16.854775807", "NaT", "1969-12-31T23:59:59.999999999", "2000-02-29",
                   "NaT", "NaT", "2024-06-07T08:09:10"], dtype="M8[ns]")
    case = "v3_datetime64_ns_nat"
    path, _ = array_case(case, ns, "", chunks=(3,), fill_value=nat)
    remove_chunk(path, "c/3")  # NaT, NaT, 2024-06-07...: absent -> NaT x3
    write_expected(case, "v3 numpy.datetime64 unit ns, fill_value NaT (-2^63); NaT elements; the int64 "
                   "extremes; length 11, chunk 3; chunk c/3 absent -> NaT.")

    case = "v3_datetime64_s"
    data = np.array(["2020-01-01T00:00:01", "1900-01-01", "NaT", "9999-12-31T23:59:59", "1970-01-01"], dtype="M8[s]")
    array_case(case, data, "", chunks=(2,), fill_value=0)
    write_expected(case, "v3 numpy.datetime64 unit s, fill_value 0; one NaT; length 5, chunk 2.")

    case = "v3_timedelta64_ms"
    data = np.array([0, -1, 86_400_000, "NaT", 2**62, -(2**62)], dtype="m8[ms]")
    array_case(case, data, "", chunks=(4,))
    write_expected(case, "v3 numpy.timedelta64 unit ms (default fill NaT); one NaT; length 6, chunk 4.")

    case = "v2_datetime64_ns"
    array_case(case, ns[:7], "", chunks=(3,), zarr_format=2, fill_value=nat)
    write_expected(case, "v2 dtype <M8[ns], fill_value NaT (-2^63); NaT elements; length 7, chunk 3.")

    case = "v2_timedelta64_us"
    data = np.array([1, "NaT", -5_000_000, 10**15], dtype="<m8[us]")
    array_case(case, data, "", chunks=(3,), zarr_format=2)
    write_expected(case, "v2 dtype <m8[us]; one NaT; length 4, chunk 3.")

    case = "v2_datetime64_D"
    data = np.array(["2020-02-29", "NaT", "1970-01-01", "1066-10-14", "2999-12-31"], dtype="M8[D]")
    array_case(case, data, "", chunks=(2,), zarr_format=2)
    write_expected(case, "v2 dtype <M8[D] (-> Arrow date32); one NaT; length 5, chunk 2.")

    case = "v2_datetime64_ms_big_endian"
    data = np.array(["2001-09-09T01:46:40.123", "NaT", "1960-01-01"], dtype=">M8[ms]")
    array_case(case, data, "", chunks=(2,), zarr_format=2, compressors=None)
    write_expected(case, "v2 dtype >M8[ms] (big-endian), no compressor; one NaT; length 3, chunk 2.")

    f16 = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, 65504.0, -65504.0, 6e-08, 0.1, 1 / 3], dtype="f2")
    case = "v3_float16"
    path, _ = array_case(case, np.concatenate([f16, np.full(4, np.nan, "f2")]), "", chunks=(5,), fill_value=np.nan)
    remove_chunk(path, "c/2")
    write_expected(case, "v3 float16, fill_value NaN; NaN, +-inf, -0.0, max, min, subnormal; length 15, "
                   "chunk 5; chunk c/2 absent -> NaN x5 (its last 4 elements were NaN too).")

    case = "v2_float16"
    array_case(case, f16, "", chunks=(4,), zarr_format=2, fill_value=1.0)
    write_expected(case, "v2 dtype <f2, fill_value 1.0; length 11, chunk 4.")

    case = "v2_int32_delta"
    data = np.array([10, 12, 11, 20, 2**31 - 1, -(2**31), 0, 5, -7, 100], dtype="<i4")
    array_case(case, data, "", chunks=(4,), zarr_format=2, filters=[numcodecs.Delta(dtype="<i4")])
    write_expected(case, "v2 <i4 with filter numcodecs delta (dtype = astype = <i4), zstd; differences "
                   "wrap (max -> min); length 10, chunk 4.")

    case = "v3_int64_numcodecs_delta"
    data = np.array([0, 1, 3, 6, -(2**63), 2**63 - 1, 42, 42, 41], dtype="<i8")
    array_case(case, data, "", chunks=(4,), filters=[Delta(dtype="<i8")])
    write_expected(case, "v3 int64 with numcodecs.delta (dtype <i8) before bytes + zstd; differences "
                   "wrap; length 9, chunk 4.")


def main() -> int:
    STORES.mkdir(parents=True, exist_ok=True)
    EXPECTED.mkdir(parents=True, exist_ok=True)
    v3_string_cases()
    v3_bytes_cases()
    v3_numeric_cases()
    v3_key_encoding_cases()
    v2_cases()
    numcodecs_compressor_cases()
    numpy_time_and_float16_cases()
    obs_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
