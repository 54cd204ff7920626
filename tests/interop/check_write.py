#!/usr/bin/env python3
"""Check zarrow's Zarr output against the other implementations.

Usage: check_write.py ZARROW_BIN [--zarrs ZARRS_READ_BIN]

Builds one pyarrow table with every column type zarrow writes (strings, large and
view strings, binary in the three layouts, every integer width, floats with NaN and
infinities, bools; empty values, non-ASCII, NUL bytes, invalid UTF-8 in binary),
saves it as Parquet, an Arrow IPC file and an IPC stream, and for each writer
configuration runs `ZARROW_BIN convert SRC OUT.zarr ...`. Then:

* zarr-python (pinned in testdata/gen/requirements.txt) reads every default-encoding
  and Zarr v2 output: each array equals the original column;
* zarrs (ZARRS_READ_BIN = `testdata/gen-zarrs` built, run as `BIN read STORE`) reads
  every default-encoding and zarrs-vlen output: each array equals the column;
* zarrow reads every output back to Arrow IPC: the table equals the original,
  types included (zarrow records the Arrow type and the column order).

Sharded outputs (`--shard-len`) are among the configurations. A second table of
timestamps (each unit, one with a timezone), durations, date32 / date64 and float16,
with nulls, is written as v2 and v3 and read by zarr-python with numpy's dtype
(datetime64[unit], timedelta64[unit], datetime64[D], float16; nulls as NaT) and by
zarrow with the Arrow types (the timezone restored). N-d outputs: linear-
format documents (2-D and 3-D; numbers and strings) converted with `--chunk-shape`
and `--shard-shape` (edge chunks and shards included), read by zarr-python and zarrs
with the same shape and values (C order).

Prints a line per check and ends with "N passed, M failed"; exits 1 on failure.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import struct
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

ROWS = 2500
CONFIGS = [
    # (name, zarrow convert flags, read by zarr-python, read by zarrs)
    ("v3-default", [], True, True),
    ("v3-zstd", ["--compressor", "zstd"], True, True),
    ("v3-default-gzip-chunk333", ["--compressor", "gzip", "--chunk-len", "333"], True, True),
    ("v3-default-blosc", ["--compressor", "blosc", "--level", "3"], True, True),
    ("v3-default-none-chunk97", ["--compressor", "none", "--chunk-len", "97"], True, True),
    ("v2-default", ["--zarr-format", "2"], True, False),
    ("v2-default-blosc-chunk500", ["--zarr-format", "2", "--compressor", "blosc", "--chunk-len", "500"], True, False),
    ("v2-default-none", ["--zarr-format", "2", "--compressor", "none"], True, False),
    ("v3-zarrs-vlen-zstd", ["--encoding", "zarrs-vlen"], False, True),
    ("v3-zarrs-vlen-none-chunk250", ["--encoding", "zarrs-vlen", "--compressor", "none", "--chunk-len", "250"], False, True),
    ("v3-zep0007-none", ["--encoding", "zep0007", "--compressor", "none"], False, False),
    ("v3-zep0007-zstd-chunk400", ["--encoding", "zep0007", "--chunk-len", "400"], False, False),
    ("v3-default-zstd-sharded", ["--chunk-len", "100", "--shard-len", "1000"], True, True),
    ("v3-default-none-sharded-odd", ["--compressor", "none", "--chunk-len", "37", "--shard-len", "300"], True, True),
    ("v3-zarrs-vlen-gzip-sharded", ["--encoding", "zarrs-vlen", "--compressor", "gzip", "--chunk-len", "64", "--shard-len", "640"], False, True),
]

# N-d outputs: (name, shape, dtype, zarrow convert flags).
ND_CASES = [
    ("nd-int32-chunks", (7, 10), "int32", ["--chunk-shape", "3,4"]),
    ("nd-float64-sharded", (9, 11), "float64", ["--chunk-shape", "2,3", "--shard-shape", "4,6"]),
    ("nd-string-3d-sharded", (5, 4, 3), "generic", ["--chunk-shape", "2,2,2", "--shard-shape", "4,2,2"]),
    ("nd-string-3d-chunks-v2", (5, 4, 3), "generic", ["--chunk-shape", "2,3,2", "--zarr-format", "2"]),
    ("nd-int32-default", (6, 5), "int32", []),
]


def table() -> pa.Table:
    rng = np.random.default_rng(7)
    words = ["", "a", "the quick brown fox", "ünïcödé", "日本語", "🦀🐍", "a\x00b", "x" * 40]
    strings = [words[i] for i in rng.integers(0, len(words), ROWS)]
    blobs = [bytes(rng.integers(0, 256, int(n), dtype=np.uint8)) for n in rng.integers(0, 12, ROWS)]
    blobs[:3] = [b"", b"\xff\xfe", b"\x00\x00"]
    cols = {
        "s_utf8": pa.array(strings, pa.string()),
        "s_large": pa.array(strings[::-1], pa.large_string()),
        "s_view": pa.array(strings, pa.string_view()),
        "b_binary": pa.array(blobs, pa.binary()),
        "b_large": pa.array(blobs[::-1], pa.large_binary()),
        "b_view": pa.array(blobs, pa.binary_view()),
        "flag": pa.array(rng.integers(0, 2, ROWS).astype(bool)),
    }
    for t in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
        info = np.iinfo(t)
        v = rng.integers(info.min, info.max, ROWS, dtype=t, endpoint=True)
        v[:2] = [info.min, info.max]
        cols[t] = pa.array(v)
    for t in ["float32", "float64"]:
        v = rng.normal(size=ROWS).astype(t)
        v[:4] = [np.nan, np.inf, -np.inf, -0.0]
        cols[t] = pa.array(v)
    return pa.table(cols)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def compare_values(name: str, got: list, want: list) -> str | None:
    if len(got) != len(want):
        return f"{name}: {len(got)} values, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if not same(g, w):
            return f"{name}[{i}]: {g!r} != {w!r}"
    return None


def python_values(col: pa.ChunkedArray) -> list:
    return col.to_pylist()


def zarr_python_check(store: Path, t: pa.Table) -> str | None:
    g = zarr.open_group(str(store), mode="r")
    for name in t.column_names:
        got = [x.item() if isinstance(x, np.generic) else x for x in g[name][:].tolist()]
        if pa.types.is_floating(t.schema.field(name).type) and t.schema.field(name).type == pa.float32():
            want = [float(np.float32(x)) for x in python_values(t.column(name))]
        else:
            want = python_values(t.column(name))
        if problem := compare_values(f"zarr-python {name}", got, want):
            return problem
    return None


def default_compressor_check(store: Path, t: pa.Table, flags: list[str]) -> str | None:
    """The compressor docs/formats.md names for each array, as zarr-python reads
    the metadata: under `default`, numbers of two bytes or more are blosc with
    lz4 after a byte shuffle, level 5 (numcodecs' `Blosc()`), everything else
    zstd level 0; `--compressor zstd` is zstd for every array."""
    default = "--compressor" not in flags
    g = zarr.open_group(str(store), mode="r")
    for name in t.column_names:
        array = g[name]
        codecs = list(array.compressors)
        if len(codecs) != 1:
            return f"{name}: compressors {codecs}"
        # v2: a numcodecs codec's config; v3: a zarr codec's name and configuration.
        c = codecs[0]
        raw = c.get_config() if hasattr(c, "get_config") else c.to_dict()
        config = {"id": raw.get("id", raw.get("name")), **raw.get("configuration", raw)}
        config["shuffle"] = {1: "shuffle", 0: "noshuffle", 2: "bitshuffle"}.get(config.get("shuffle"), config.get("shuffle"))
        if default and array.dtype.kind in "iufmM" and array.dtype.itemsize > 1:
            want = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": "shuffle"}
        else:
            want = {"id": "zstd", "level": 0}
        if {k: config.get(k) for k in want} != want:
            return f"{name} ({array.dtype}): {raw}, where docs/formats.md says {want}"
    return None


PACK = {
    pa.int8(): "<b", pa.int16(): "<h", pa.int32(): "<i", pa.int64(): "<q",
    pa.uint8(): "<B", pa.uint16(): "<H", pa.uint32(): "<I", pa.uint64(): "<Q",
    pa.float32(): "<f", pa.float64(): "<d", pa.bool_(): "<?",
}


def zarrs_check(zarrs: str, store: Path, t: pa.Table) -> str | None:
    proc = subprocess.run([zarrs, "read", str(store)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return f"zarrs failed: {proc.stderr.strip()[-500:]}"
    arrays = json.loads(proc.stdout)
    if sorted(arrays) != sorted(t.column_names):
        return f"zarrs sees arrays {sorted(arrays)}"
    for name in t.column_names:
        typ = t.schema.field(name).type
        got = [base64.b64decode(v) for v in arrays[name]["values_b64"]]
        if typ in PACK:
            want = [struct.pack(PACK[typ], v) for v in python_values(t.column(name))]
        else:
            want = [v.encode() if isinstance(v, str) else v for v in python_values(t.column(name))]
        if problem := compare_values(f"zarrs {name}", got, want):
            return problem
    return None


def zarrow_back_check(zarrow: str, store: Path, tmp: Path, t: pa.Table) -> str | None:
    back = tmp / (store.name + ".back.arrow")
    run(zarrow, ["convert", str(store), str(back)])
    with pa.ipc.open_file(back) as f:
        got = f.read_all()
    if got.schema.remove_metadata() != t.schema.remove_metadata():
        # zarrow's fields are non-nullable (Zarr has no nulls); compare names and types.
        g = [(f.name, f.type) for f in got.schema]
        w = [(f.name, f.type) for f in t.schema]
        if g != w:
            return f"zarrow read back schema {g} != {w}"
    for name in t.column_names:
        if problem := compare_values(f"zarrow {name}", python_values(got.column(name)), python_values(t.column(name))):
            return problem
    return None


# Times and float16: (name, zarrow convert flags, zarr format).
TIME_CONFIGS = [
    ("times-v3-zstd", [], 3),
    ("times-v2-blosc-chunk77", ["--zarr-format", "2", "--compressor", "blosc", "--chunk-len", "77"], 2),
    ("times-v3-sharded", ["--chunk-len", "50", "--shard-len", "200"], 3),
]
NAT = np.iinfo(np.int64).min


def time_table() -> pa.Table:
    """Timestamps (every unit, one with a timezone), durations, dates and float16,
    with nulls (written as NaT, so not refused)."""
    rng = np.random.default_rng(11)
    n = 500
    counts = rng.integers(-(2**40), 2**40, n)
    valid = rng.random(n) > 0.2
    mask = ~valid
    cols = {}
    for unit in ["s", "ms", "us", "ns"]:
        cols[f"ts_{unit}"] = pa.array(counts, pa.timestamp(unit), mask=mask)
    cols["ts_ms_paris"] = pa.array(counts, pa.timestamp("ms", tz="Europe/Paris"), mask=mask)
    for unit in ["s", "ms", "us", "ns"]:
        cols[f"dur_{unit}"] = pa.array(counts[::-1], pa.duration(unit), mask=mask)
    cols["date32"] = pa.array((counts % 100_000).astype(np.int32), pa.date32(), mask=mask)
    cols["date64"] = pa.array((counts // 1000) * 86_400_000, pa.date64())
    f16 = rng.normal(size=n).astype(np.float16)
    f16[:4] = [np.nan, np.inf, -np.inf, -0.0]
    cols["f16"] = pa.array(f16)
    return pa.table(cols)


NUMPY_DTYPES = {
    **{f"ts_{u}": f"datetime64[{u}]" for u in ["s", "ms", "us", "ns"]},
    "ts_ms_paris": "datetime64[ms]",
    **{f"dur_{u}": f"timedelta64[{u}]" for u in ["s", "ms", "us", "ns"]},
    "date32": "datetime64[D]",
    "date64": "datetime64[ms]",
    "f16": "float16",
}


def time_zarr_python_check(store: Path, t: pa.Table) -> str | None:
    """zarr-python reads each column with the numpy dtype and values (NaT for nulls)."""
    g = zarr.open_group(str(store), mode="r")
    for name in t.column_names:
        arr = g[name][:]
        if arr.dtype != np.dtype(NUMPY_DTYPES[name]):
            return f"zarr-python {name}: dtype {arr.dtype}, expected {NUMPY_DTYPES[name]}"
        col = t.column(name)
        if arr.dtype.kind == "f":
            got, want = [float(x) for x in arr.tolist()], [float(x) for x in col.to_pylist()]
        else:
            got = arr.view(np.int64).tolist()
            ints = col.cast(pa.int32() if pa.types.is_date32(col.type) else pa.int64())
            want = [NAT if v is None else v for v in ints.to_pylist()]
        if problem := compare_values(f"zarr-python {name}", got, want):
            return problem
    return None


def time_zarrow_back_check(zarrow: str, store: Path, tmp: Path, t: pa.Table) -> str | None:
    """zarrow reads the types back (timezone restored; date64 as timestamp[ms], which
    is what numpy's datetime64[ms] is) and the values, nulls included."""
    back = tmp / (store.name + ".back.arrow")
    run(zarrow, ["convert", str(store), str(back)])
    with pa.ipc.open_file(back) as f:
        got = f.read_all()
    for name in t.column_names:
        want = t.column(name)
        if pa.types.is_date64(want.type):
            want = want.cast(pa.timestamp("ms"))
        g = got.column(name)
        if g.type != want.type:
            return f"zarrow {name}: type {g.type} != {want.type}"
        if pa.types.is_floating(g.type):
            gv, wv = [float(x) for x in g.to_pylist()], [float(x) for x in want.to_pylist()]
        else:
            width = pa.int32() if pa.types.is_date32(g.type) else pa.int64()
            gv, wv = g.cast(width).to_pylist(), want.cast(width).to_pylist()
        if problem := compare_values(f"zarrow {name}", gv, wv):
            return problem
    return None


def nd_values(shape: tuple, dtype: str) -> list:
    n = int(np.prod(shape))
    if dtype == "int32":
        return [int(i * 7 - 100) for i in range(n)]
    if dtype == "float64":
        return [float(i) / 8 - 3 for i in range(n)]
    return [f"e{i}-{'ü' * (i % 3)}" for i in range(n)]


def linear_document(shape: tuple, dtype: str, values: list) -> str:
    strides = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
    header = ["version", "1.0.0", "ndarray", "shape", *shape, "strides", *strides, "offset", 0,
              "order", "row-major", "dtype", dtype, "length", len(values), "capacity", len(values), "data"]
    return json.dumps(header + values)


def nd_zarr_python_check(store: Path, shape: tuple, values: list) -> str | None:
    a = zarr.open_array(str(store), mode="r")
    if tuple(a.shape) != shape:
        return f"zarr-python sees shape {a.shape}, not {shape}"
    got = [x.item() if isinstance(x, np.generic) else x for x in a[...].reshape(-1).tolist()]
    return compare_values("zarr-python", got, values)


def nd_zarrs_check(zarrs: str, store: Path, dtype: str, values: list) -> str | None:
    proc = subprocess.run([zarrs, "read", str(store)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return f"zarrs failed: {proc.stderr.strip()[-500:]}"
    arrays = json.loads(proc.stdout)
    if len(arrays) != 1:
        return f"zarrs sees arrays {sorted(arrays)}"
    got = [base64.b64decode(v) for v in next(iter(arrays.values()))["values_b64"]]
    pack = {"int32": "<i", "float64": "<d"}.get(dtype)
    want = [struct.pack(pack, v) if pack else v.encode() for v in values]
    return compare_values("zarrs", got, want)


def dictionary_table() -> pa.Table:
    """Dictionary columns as pandas and Parquet make them: string values under
    int8 / int16 / int32 keys (int32's with nulls), large strings, int64 values;
    each chunk with a dictionary of its own (the Parquet file's row groups differ too)."""
    rng = np.random.default_rng(5)
    n = 3000
    words = np.array([f"w{i}" for i in range(300)])
    cols = {}
    for key in [pa.int8(), pa.int16(), pa.int32()]:
        chunks = []
        for part in np.array_split(rng.integers(0, 100 if key == pa.int8() else 300, n), 3):
            # int32: a null every 17 rows (a categorical's code -1).
            mask = (np.arange(len(part)) % 17 == 3) if key == pa.int32() else None
            chunks.append(pa.array(words[part], mask=mask).dictionary_encode().cast(pa.dictionary(key, pa.string())))
        cols[f"d_{key}"] = pa.chunked_array(chunks)
    cols["d_large"] = pa.array(words[rng.integers(0, 50, n)]).cast(pa.large_string()).dictionary_encode()
    cols["d_int64"] = pa.array(rng.integers(-5, 5, n) * 1_000_000_007).dictionary_encode()
    return pa.table(cols)


DICTIONARY_CONFIGS = [
    ("dict-v3", []),
    ("dict-v2", ["--zarr-format", "2"]),
    ("dict-v3-sharded-chunk100", ["--chunk-len", "100", "--shard-len", "1000"]),
]


def dictionary_checks(zarrow: str, source: Path, store: Path, tmp: Path, t: pa.Table, flags: list[str]) -> list:
    """The plain layout stores a dictionary column as anndata's `categorical`
    element: anndata reads it as a pandas Categorical of the column's values,
    zarr-python reads its codes and categories (categories[codes], -1 a
    missing value); zarrow reads the column back with its dictionary type
    (the key type too), into an IPC file
    (one dictionary that grows: deltas) and an IPC stream, which pyarrow reads as
    the source's type and values, and into Parquet, which pyarrow reads as it
    reads its own Parquet file of the source (pyarrow restores dictionaries of
    strings only, as `string`)."""
    from_parquet = pq.read_table(source)
    checks = []
    g = zarr.open_group(str(store), mode="r")
    from anndata.io import read_elem

    for name in t.column_names:
        want = t.column(name).cast(t.schema.field(name).type.value_type).to_pylist()
        element = g[name]
        categories = element["categories"][:].tolist()
        codes = element["codes"][:].tolist()
        got = [None if c == -1 else categories[c] for c in codes]
        checks.append((f"zarr-python {name}", compare_values(name, got, want)))
        # The categories in one unsharded chunk of their own length (as
        # anndata writes them), or of the chunk length asked for when shorter:
        # not chunks of the table's length, mostly fill values.
        asked = int(flags[flags.index("--chunk-len") + 1]) if "--chunk-len" in flags else None
        shape = element["categories"].shape[0]
        want_chunks = (min(asked, max(shape, 1)) if asked else max(shape, 1),)
        layout = (element["categories"].chunks, element["categories"].shards)
        problem = None if layout == (want_chunks, None) else f"chunks, shards {layout}, not {want_chunks}"
        checks.append((f"categories' chunks {name}", problem))
        categorical = read_elem(element)
        got = [None if v is None or v != v else (v.item() if hasattr(v, "item") else v)
               for v in categorical.astype(object)]
        checks.append((f"anndata {name}", compare_values(name, got, want)))
    for suffix in [".parquet", ".arrow", ".arrows"]:
        back = tmp / (store.name + ".back" + suffix)
        run(zarrow, ["convert", str(store), str(back)])
        if suffix == ".parquet":
            got = pq.read_table(back)
        elif suffix == ".arrow":
            got = pa.ipc.open_file(back).read_all()
        else:
            got = pa.ipc.open_stream(back).read_all()
        for name in t.column_names:
            want = (from_parquet if suffix == ".parquet" else t).column(name)
            col = got.column(name)
            problem = None
            if col.type != want.type:
                problem = f"type {col.type} != {want.type}"
            else:
                problem = compare_values(name, col.to_pylist(), want.to_pylist())
            checks.append((f"zarrow{suffix} {name}", problem))
    return checks


def report(what: str, checks: list, passed: int, failed: int) -> tuple[int, int]:
    """Print a line per (reader, problem) check; the updated pass and fail counts."""
    for reader, problem in checks:
        label = f"{what} read by {reader}"
        if problem is None:
            passed += 1
            print(f"ok   {label}")
        else:
            failed += 1
            print(f"FAIL {label}: {problem}")
    return passed, failed


def run(zarrow: str, args: list[str]) -> None:
    proc = subprocess.run([zarrow, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"zarrow {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("zarrow")
    ap.add_argument("--zarrs", help="the testdata/gen-zarrs binary (`read` mode)")
    args = ap.parse_args()
    t = table()
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="zarrow-write-") as tmp_name:
        tmp = Path(tmp_name)
        sources = {"parquet": tmp / "t.parquet", "arrow": tmp / "t.arrow", "arrows": tmp / "t.arrows"}
        pq.write_table(t, sources["parquet"], row_group_size=700)
        with pa.ipc.new_file(sources["arrow"], t.schema) as w:
            for batch in t.to_batches(max_chunksize=600):
                w.write_batch(batch)
        with pa.ipc.new_stream(sources["arrows"], t.schema) as w:
            for batch in t.to_batches(max_chunksize=900):
                w.write_batch(batch)
        for i, (name, flags, by_zarr_python, by_zarrs) in enumerate(CONFIGS):
            source = list(sources.values())[i % 3]
            store = tmp / f"{name}.zarr"
            checks = []
            try:
                run(args.zarrow, ["convert", str(source), str(store), *flags])
                checks.append(("zarrow", zarrow_back_check(args.zarrow, store, tmp, t)))
                if by_zarr_python:
                    checks.append(("zarr-python", zarr_python_check(store, t)))
                if name in ("v3-default", "v3-zstd", "v2-default"):
                    checks.append(("compressors", default_compressor_check(store, t, flags)))
                if by_zarrs and args.zarrs:
                    checks.append(("zarrs", zarrs_check(args.zarrs, store, t)))
            except Exception as e:  # noqa: BLE001 - report and go on
                checks.append(("convert", f"{type(e).__name__}: {e}"))
            passed, failed = report(f"{name} ({source.suffix})", checks, passed, failed)
        times = time_table()
        time_source = tmp / "times.arrow"
        with pa.ipc.new_file(time_source, times.schema) as w:
            for batch in times.to_batches(max_chunksize=128):
                w.write_batch(batch)
        for name, flags, _ in TIME_CONFIGS:
            store = tmp / f"{name}.zarr"
            checks = []
            try:
                run(args.zarrow, ["convert", str(time_source), str(store), *flags])
                checks.append(("zarrow", time_zarrow_back_check(args.zarrow, store, tmp, times)))
                checks.append(("zarr-python", time_zarr_python_check(store, times)))
            except Exception as e:  # noqa: BLE001 - report and go on
                checks.append(("convert", f"{type(e).__name__}: {e}"))
            passed, failed = report(f"{name} (.arrow)", checks, passed, failed)
        dictionaries = dictionary_table()
        dictionary_source = tmp / "dictionaries.parquet"
        pq.write_table(dictionaries, dictionary_source, row_group_size=1000)
        for name, flags in DICTIONARY_CONFIGS:
            store = tmp / f"{name}.zarr"
            try:
                run(args.zarrow, ["convert", str(dictionary_source), str(store), *flags])
                checks = dictionary_checks(args.zarrow, dictionary_source, store, tmp, dictionaries, flags)
            except Exception as e:  # noqa: BLE001 - report and go on
                checks = [("convert", f"{type(e).__name__}: {e}")]
            passed, failed = report(f"{name} (.parquet)", checks, passed, failed)
        for name, shape, dtype, flags in ND_CASES:
            values = nd_values(shape, dtype)
            source = tmp / f"{name}.json"
            source.write_text(linear_document(shape, dtype, values))
            store = tmp / f"{name}.zarr"
            checks = []
            try:
                run(args.zarrow, ["convert", str(source), str(store), *flags])
                checks.append(("zarr-python", nd_zarr_python_check(store, shape, values)))
                if args.zarrs and "--zarr-format" not in flags:
                    checks.append(("zarrs", nd_zarrs_check(args.zarrs, store, dtype, values)))
            except Exception as e:  # noqa: BLE001 - report and go on
                checks.append(("convert", f"{type(e).__name__}: {e}"))
            passed, failed = report(f"{name} {shape}", checks, passed, failed)
    if not args.zarrs:
        print("note: --zarrs not given, zarrs checks skipped")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
