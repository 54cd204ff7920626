#!/usr/bin/env python3
"""Write the conformance data of zarrow's chunk statistics, version "2"
(docs/spec/chunk-statistics.md): cases.json and one NAME.stats Arrow IPC file per case.

    .venv/bin/python testdata/stats-conformance/generate.py

pyarrow + json only; independent of zarrow (nothing here reads or runs zarrow). The
files are computed from each case's values by the spec's writer rules, implemented
here; some are then spoiled on purpose (a stale token, a changed fill value, a bad
file). The keep/skip verdicts are written by hand from the spec's rules, and this
script checks them against the values: no `skip` chunk may hold a row that satisfies
the predicate under any engine semantics the spec names (for floats: IEEE 754, the
total order, NaN greatest, and DataFusion's IEEE operators with IN lists matching by
bits; for float32, the literal also rounded to float32), and a `keep` chunk must hold
such a row unless the case says why the statistics cannot tell (`cant_tell`) or the
rows are not usable. Two runs give the same bytes.

cases.json: a list of
  {"name", "note", "file": "NAME.stats", "zarr_json": {...}, "versions": {key: token} | null,
   "valid": bool, "usable": bool, "decode_cf": bool (optional, default true: how the
   reader decodes), "categories": [V, ...] (optional: the array holds a categorical's
   codes and predicates are over its values), "values": [[V|null, ...] per statistic
   chunk] (informative: the values the file was computed from, as read when recorded),
   "predicates": [{"where": P, "keep": [...], "skip": [...]}]}
Statistic chunks are numbered 0..ceil(shape[0] / L)-1, L the file's chunk_len when the
file is valid and usable, else the array's chunk length; keep and skip partition them.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys

import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = 64
MAX_SET_VALUE = 2046

NAN = struct.unpack("<d", bytes.fromhex("000000000000f87f"))[0]
NEG_NAN = struct.unpack("<d", bytes.fromhex("000000000000f8ff"))[0]


# ---------------------------------------------------------------------------------------
# Values in the cases' JSON (V).


def enc(v):
    """A value as V in JSON."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "-nan" if math.copysign(1.0, v) < 0 else "nan"}
        if math.isinf(v):
            return {"float": "inf" if v > 0 else "-inf"}
        return v
    raise TypeError(v)


def dec(v):
    if isinstance(v, dict) and "float" in v:
        return {"nan": NAN, "-nan": NEG_NAN, "inf": math.inf, "-inf": -math.inf}[v["float"]]
    if isinstance(v, dict) and "hex" in v:
        return bytes.fromhex(v["hex"])
    return v


# ---------------------------------------------------------------------------------------
# The writer rules (spec, "Writer rules" and "Bounds").


def floor_boundary(s: str, limit: int) -> str:
    out, n = [], 0
    for ch in s:
        w = len(ch.encode("utf-8"))
        if n + w > limit:
            break
        out.append(ch)
        n += w
    return "".join(out)


def raise_char(c: str) -> str | None:
    cp = ord(c) + 1
    if 0xD800 <= cp <= 0xDFFF:
        cp = 0xE000
    return chr(cp) if cp <= 0x10FFFF else None


def string_max(s: str) -> str | None:
    if len(s.encode("utf-8")) <= PREFIX:
        return s
    chars = list(floor_boundary(s, PREFIX))
    while chars:
        nxt = raise_char(chars.pop())
        if nxt is not None:
            return "".join(chars) + nxt
    return None


def bytes_max(b: bytes) -> bytes | None:
    if len(b) <= PREFIX:
        return b
    p = bytearray(b[:PREFIX])
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)


def is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


# The least positive subnormal of each float type: zero bounds are widened to it.
LEAST_SUBNORMAL = {pa.float16(): 2.0**-24, pa.float32(): 2.0**-149, pa.float64(): 2.0**-1074}


def chunk_stats(values: list, kind: str, bound: pa.DataType | None = None) -> dict:
    """kind: int, float, bool, time, utf8, binary. bound: the bound type (for floats,
    default float64)."""
    present = [v for v in values if v is not None]
    nans = sum(1 for v in present if is_nan(v))
    numbers = [v for v in present if not is_nan(v)]
    lo = hi = None
    bits = None
    if numbers:
        if kind == "utf8":
            lo_v = min(numbers, key=lambda s: s.encode("utf-8"))
            hi_v = max(numbers, key=lambda s: s.encode("utf-8"))
            lo, hi = floor_boundary(lo_v, PREFIX), string_max(hi_v)
        elif kind == "binary":
            lo, hi = min(numbers)[:PREFIX], bytes_max(max(numbers))
        else:
            lo, hi = min(numbers), max(numbers)
            if kind == "float":
                # Zero bounds are widened past both zeros: no zero bounds a zero for
                # every engine (IEEE operators vs IN lists matching by bits).
                tiny = LEAST_SUBNORMAL[bound or pa.float64()]
                if lo == 0:
                    lo = -tiny
                if hi == 0:
                    hi = tiny
        if kind == "int" and -1 <= lo and hi <= MAX_SET_VALUE:
            arr = bytearray(-(-(hi + 2) // 8))
            for v in numbers:
                arr[(v + 1) // 8] |= 1 << ((v + 1) % 8)
            bits = bytes(arr)
    return {
        "rows": len(values),
        "nulls": len(values) - len(present),
        "nans": nans,
        "min": lo,
        "max": hi,
        "set": bits,
    }


# ---------------------------------------------------------------------------------------
# Files.

FIELDS = ["chunk", "rows", "nulls", "nans", "min", "max", "set", "version"]


def header_text(chunk_len, array_len, zj, decode_cf=True, version="2") -> str:
    obj = {
        "version": version,
        "chunk_len": chunk_len,
        "array_len": array_len,
        "decode_cf": decode_cf,
        "array": {
            "data_type": zj["data_type"],
            "fill_value": zj["fill_value"],
            "attributes": zj.get("attributes", {}),
        },
    }
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def stats_file(
    rows: list[dict],
    bound: pa.DataType,
    meta_text: str | None,
    *,
    batches: list[int] | None = None,
    compression=None,
    types: dict | None = None,
    drop: str | None = None,
    nullable_chunk: bool = False,
    stream: bool = False,
    dictionary_version: bool = False,
) -> bytes:
    """rows: dicts with chunk, rows, nulls, nans, min, max, set, version."""
    types = dict(types or {})
    t = {
        "chunk": pa.uint64(), "rows": pa.uint64(), "nulls": pa.uint64(), "nans": pa.uint64(),
        "min": bound, "max": bound, "set": pa.binary(), "version": pa.utf8(),
    }  # fmt: skip
    t.update(types)
    if dictionary_version:
        t["version"] = pa.dictionary(pa.int8(), pa.utf8())
    names = [n for n in FIELDS if n != drop]
    nullable = {"chunk": nullable_chunk, "rows": False, "nulls": False, "nans": False}
    schema = pa.schema(
        [pa.field(n, t[n], nullable=nullable.get(n, True)) for n in names],
        metadata=None if meta_text is None else {"zarrow.stats": meta_text},
    )

    def column(name, part):
        vals = [r[name] for r in part]
        if name == "version" and dictionary_version:
            return pa.array(vals, type=pa.utf8()).dictionary_encode().cast(t[name])
        if pa.types.is_timestamp(t[name]):
            return pa.array(vals, type=pa.int64()).cast(t[name])
        return pa.array(vals, type=t[name])

    cuts = batches or [len(rows)]
    parts, at = [], 0
    for n in cuts:
        parts.append(rows[at : at + n])
        at += n
    assert at == len(rows)
    sink = pa.BufferOutputStream()
    options = ipc.IpcWriteOptions(compression=compression)
    opener = ipc.new_stream if stream else ipc.new_file
    with opener(sink, schema, options=options) as w:
        for part in parts:
            w.write_batch(pa.record_batch([column(n, part) for n in names], schema=schema))
    return sink.getvalue().to_pybytes()


# ---------------------------------------------------------------------------------------
# Arrays.

BYTES_CODEC = [{"name": "bytes", "configuration": {"endian": "little"}}]


def zarr_json(data_type, length, grid_len, fill_value, attributes=None, codecs=None, inner=None):
    if codecs is None:
        if data_type == "string":
            codecs = [{"name": "vlen-utf8", "configuration": {}}]
        elif data_type == "variable_length_bytes":
            codecs = [{"name": "vlen-bytes", "configuration": {}}]
        else:
            codecs = BYTES_CODEC
    if inner is not None:
        codecs = [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [inner],
                    "codecs": codecs,
                    "index_codecs": BYTES_CODEC + [{"name": "crc32c", "configuration": {}}],
                    "index_location": "end",
                },
            }
        ]
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [length],
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [grid_len]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "attributes": attributes if attributes is not None else {},
    }


def token(size: int, seconds: int, inode: int, ns: int = 123) -> str:
    return f"{size}:{seconds}.{ns:09d}:{inode}:{seconds}.{ns:09d}"


def tokens(n_objects: int, size: int, seconds: int = 1732550000) -> dict:
    return {f"c/{i}": token(size, seconds + i, 4456 + i) for i in range(n_objects)}


# ---------------------------------------------------------------------------------------
# Concrete evaluation, for checking the hand verdicts against the values.


def total_key(x: float) -> int:
    (b,) = struct.unpack("<q", struct.pack("<d", x))
    return b ^ 0x7FFFFFFFFFFFFFFF if b < 0 else b


def cmp_sem(sem):
    def ieee(a, b):
        if is_nan(a) or is_nan(b):
            return None
        return (a > b) - (a < b)

    def greatest(a, b):
        if is_nan(a) or is_nan(b):
            return 0 if is_nan(a) and is_nan(b) else (1 if is_nan(a) else -1)
        return (a > b) - (a < b)

    def total(a, b):
        ka, kb = total_key(float(a)), total_key(float(b))
        return (ka > kb) - (ka < kb)

    def plain(a, b):
        return (a > b) - (a < b)

    return {"ieee": ieee, "greatest": greatest, "total": total, "plain": plain, "datafusion": ieee}[sem]


def float_bits(x) -> int:
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def list_cmp_sem(sem):
    """The comparison an engine uses to match a value against an IN / NOT IN list:
    DataFusion matches floats by bits (0.0 NOT IN (-0.0) is true there, while its
    operators say 0.0 = -0.0); every other engine as its operators."""
    if sem == "datafusion":
        return lambda a, b: 0 if float_bits(a) == float_bits(b) else 1
    return cmp_sem(sem)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def evaluate(p, v, sem, kind, narrow):
    """SQL three-valued truth ('T', 'F', 'N') of p for the value v (None = null)."""
    op = p["op"]
    if op == "not":
        return {"T": "F", "F": "T", "N": "N"}[evaluate(p["arg"], v, sem, kind, narrow)]
    if op in ("and", "or"):
        rs = [evaluate(a, v, sem, kind, narrow) for a in p["args"]]
        if op == "and":
            return "F" if "F" in rs else ("N" if "N" in rs else "T")
        return "T" if "T" in rs else ("N" if "N" in rs else "F")
    if op == "is_null":
        return "T" if v is None else "F"
    if op == "is_not_null":
        return "F" if v is None else "T"
    if v is None:
        return "N"
    cmp = cmp_sem(sem)

    def lit(x):
        x = dec(x)
        if kind == "utf8":
            return x.encode("utf-8")
        if narrow and isinstance(x, float) and not is_nan(x):
            return f32(x)
        return x

    val = v.encode("utf-8") if kind == "utf8" else v

    def truth(o, c):
        if c is None:
            return "T" if o == "ne" else "F"
        return "T" if {"eq": c == 0, "ne": c != 0, "lt": c < 0, "le": c <= 0, "gt": c > 0, "ge": c >= 0}[o] else "F"

    if op in ("eq", "ne", "lt", "le", "gt", "ge"):
        return truth(op, cmp(val, lit(p["value"])))
    if op == "between":
        a = truth("ge", cmp(val, lit(p["low"])))
        b = truth("le", cmp(val, lit(p["high"])))
        return "T" if a == b == "T" else "F"
    if op in ("in", "not_in"):
        in_cmp = list_cmp_sem(sem)
        hit = any(truth("eq", in_cmp(val, lit(x))) == "T" for x in p["values"])
        return "T" if hit == (op == "in") else "F"
    if op == "starts_with":
        return "T" if val.startswith(lit(p["value"])) else "F"
    raise ValueError(op)


def matches(p, values, kind, float32=False) -> bool:
    sems = ["ieee", "greatest", "total", "datafusion"] if kind == "float" else ["plain"]
    narrows = [False, True] if float32 else [False]
    return any(evaluate(p, v, s, kind, nr) == "T" for v in values for s in sems for nr in narrows)


# ---------------------------------------------------------------------------------------
# Predicates (P), shorthand.


def cmp_(op, v):
    return {"op": op, "value": enc(v)}


def eq(v):
    return cmp_("eq", v)


def ne(v):
    return cmp_("ne", v)


def lt(v):
    return cmp_("lt", v)


def le(v):
    return cmp_("le", v)


def gt(v):
    return cmp_("gt", v)


def ge(v):
    return cmp_("ge", v)


def between(a, b):
    return {"op": "between", "low": enc(a), "high": enc(b)}


def in_(*vs):
    return {"op": "in", "values": [enc(v) for v in vs]}


def not_in(*vs):
    return {"op": "not_in", "values": [enc(v) for v in vs]}


def starts_with(v):
    return {"op": "starts_with", "value": enc(v)}


def not_(p):
    return {"op": "not", "arg": p}


def and_(*ps):
    return {"op": "and", "args": list(ps)}


def or_(*ps):
    return {"op": "or", "args": list(ps)}


IS_NULL = {"op": "is_null"}
IS_NOT_NULL = {"op": "is_not_null"}


def pred(where, keep, skip, cant_tell=()):
    """cant_tell: keep chunks without a matching row, that the statistics cannot rule
    out (checked against the values: every other keep chunk must hold a match)."""
    return {"where": where, "keep": sorted(keep), "skip": sorted(skip), "_cant_tell": set(cant_tell)}


# ---------------------------------------------------------------------------------------
# The cases.

CASES: list[dict] = []
FILES: dict[str, bytes] = {}


def add(
    name,
    note,
    zj,
    chunks,
    kind,
    bound,
    predicates,
    *,
    versions="auto",
    valid=True,
    is_usable=True,
    chunk_len=None,
    data=None,
    edit_rows=None,
    now_chunks=None,
    stale=(),
    decode_cf=None,
    categories=None,
    file_kw=None,
    meta_text=None,
    float32=False,
):
    """chunks: the values per statistic chunk when recorded. now_chunks: the values as
    the array reads now, by statistic chunk (default: the same). stale: chunks whose
    rows are not usable (the check allows them in keep without a match)."""
    length = zj["shape"][0]
    grid_len = zj["chunk_grid"]["configuration"]["chunk_shape"][0]
    chunk_len = chunk_len or grid_len
    per_object = grid_len // chunk_len if grid_len % chunk_len == 0 else 1
    if versions == "auto":
        n_obj = -(-length // grid_len)
        versions = tokens(n_obj, 4 * grid_len)
    if data is None:
        recorded = versions or tokens(-(-length // grid_len), 4 * grid_len)
        rows = []
        for i, vals in enumerate(chunks):
            s = chunk_stats(vals, kind, bound)
            s["chunk"] = i
            s["version"] = recorded.get(f"c/{i // per_object}")
            rows.append(s)
        if edit_rows:
            edit_rows(rows)
        text = meta_text if meta_text is not None else header_text(chunk_len, sum(map(len, chunks)), zj)
        data = stats_file(rows, bound, text, **(file_kw or {}))
    fname = f"{name}.stats"
    FILES[fname] = data
    n = -(-length // (chunk_len if valid and is_usable else grid_len))
    now = now_chunks if now_chunks is not None else chunks
    out_preds = []
    for p in predicates:
        keep, skip = set(p["keep"]), set(p["skip"])
        assert keep.isdisjoint(skip) and keep | skip == set(range(n)), (name, p["where"], n)
        if not (valid and is_usable):
            assert not skip, (name, "an unusable file skips nothing")
        for i in range(n):
            has = i < len(now) and matches(p["where"], now[i], kind if categories is None else ckind(categories), float32)
            if i in skip:
                assert not has, (name, p["where"], i, "skip drops a matching row")
            elif not has:
                ok = (not (valid and is_usable)) or i in stale or i in p["_cant_tell"]
                assert ok, (name, p["where"], i, "kept without a match: say why (cant_tell)")
        out_preds.append({"where": p["where"], "keep": p["keep"], "skip": p["skip"]})
    case = {
        "name": name,
        "note": note,
        "file": fname,
        "zarr_json": zj,
        "versions": versions,
        "valid": valid,
        "usable": is_usable,
    }
    if decode_cf is not None:
        case["decode_cf"] = decode_cf
    if categories is not None:
        case["categories"] = [enc(c) for c in categories]
    case["values"] = [[enc(v) for v in c] for c in chunks]
    case["predicates"] = out_preds
    CASES.append(case)


def ckind(categories):
    if all(isinstance(c, str) for c in categories):
        return "utf8"
    if any(isinstance(c, float) for c in categories):
        return "float"
    return "int"


def cat_values(codes_chunks, categories):
    return [[None if c == -1 else categories[c] for c in ch] for ch in codes_chunks]


# --- int32: bounds, sets (eq / IN / NOT IN), and/or/not -------------------------------

I32 = [[1, 5, 3, 2], [100, 100, 2000, 1500], [-5, 7]]
add(
    "int32_sets",
    "int32, chunk_len 4, 10 rows. Chunk 0 and 1 have sets (values in -1..=2046; chunk 1's "
    "set is 251 bytes); chunk 2 holds -5, so no set. eq 4 skips chunk 0 by its set though "
    "4 is inside its bounds; NOT IN skips a chunk whose every value is listed.",
    zarr_json("int32", 10, 4, 0),
    I32,
    "int",
    pa.int32(),
    [
        pred(eq(3), [0, 2], [1], cant_tell=[2]),
        pred(eq(4), [2], [0, 1], cant_tell=[2]),
        pred(lt(0), [2], [0, 1]),
        pred(ge(1500), [1], [0, 2]),
        pred(between(6, 99), [2], [0, 1]),
        pred(in_(4, 6, 1999), [2], [0, 1], cant_tell=[2]),
        pred(not_in(1, 2, 3, 5), [1, 2], [0]),
        pred(not_in(100, 1500, 2000), [0, 2], [1]),
        pred(ne(100), [0, 1, 2], []),
        pred(not_(ge(0)), [2], [0, 1]),
        pred(and_(ge(2), le(4)), [0, 2], [1], cant_tell=[2]),
        pred(or_(eq(4), eq(1500)), [1, 2], [0], cant_tell=[2]),
        pred(IS_NULL, [], [0, 1, 2]),
        pred(IS_NOT_NULL, [0, 1, 2], []),
    ],
)

# --- uint64 above i64::MAX -------------------------------------------------------------

U = [[0, 1, 2046], [2**63, 2**64 - 1, 2**63 + 5]]
add(
    "uint64_high",
    "uint64 beyond i64::MAX (a reader reading them as int64 gets every verdict wrong); "
    "chunk 0's set is the longest allowed, 256 bytes (2046 present).",
    zarr_json("uint64", 6, 3, 0),
    U,
    "int",
    pa.uint64(),
    [
        pred(gt(2**63 - 1), [1], [0]),
        pred(lt(2**63), [0], [1]),
        pred(eq(2**64 - 1), [1], [0]),
        pred(eq(2**63 + 1), [1], [0], cant_tell=[1]),
        pred(in_(2045, 3), [], [0, 1]),
        pred(eq(2046), [0], [1]),
        pred(le(2**63), [0, 1], []),
    ],
)

# --- float64: NaN (both signs), infinity; two record batches -----------------------------

F64 = [[1.5, -2.0, 3.0, 0.5], [1.0, NAN, 2.0, NEG_NAN], [NAN, NAN, NEG_NAN, NAN], [10.0, math.inf, 20.0, 11.0]]
add(
    "float64_nan",
    "float64, chunk_len 4. Chunk 1 holds NaN and -NaN beside 1.0 and 2.0 (recorded bounds "
    "1.0..2.0, which a reader must not use: nans > 0); chunk 2 is all NaN (min/max null); "
    "chunk 3 reaches +inf. NaN matches x > 5 where NaN is greatest, -NaN matches x < 0 "
    "in the total order. Written as two record batches.",
    zarr_json("float64", 16, 4, "NaN"),
    F64,
    "float",
    pa.float64(),
    [
        pred(gt(5.0), [1, 2, 3], [0]),
        pred(lt(0.0), [0, 1, 2], [3]),
        pred(le(-3.0), [1, 2], [0, 3]),
        pred(eq(NAN), [1, 2], [0, 3]),
        # No row is above the canonical NaN, but the file does not record NaN payloads.
        pred(gt(NAN), [1, 2], [0, 3], cant_tell=[1, 2]),
        pred(ge(math.inf), [1, 2, 3], [0]),
        pred(lt(-5.0), [1, 2], [0, 3]),
        pred(IS_NOT_NULL, [0, 1, 2, 3], []),
        # Where NaN is greatest (its sign ignored), every number is below -NaN; in the
        # total order every number is above it.
        pred(lt(NEG_NAN), [0, 1, 2, 3], [], cant_tell=[2]),  # payloads are not recorded
        pred(gt(NEG_NAN), [0, 1, 2, 3], []),
        pred(le(NAN), [0, 1, 2, 3], []),
    ],
    file_kw={"batches": [1, 3]},
)

# --- float64: signed zeros ---------------------------------------------------------------

Z = [[-0.0, -0.0], [0.0, 0.0], [-1.0, -0.0], [0.0, 1.0]]
TINY = 2.0**-1074  # float64's least subnormal, bits 0x0000000000000001


def _draft_zeros(rows):
    """The earlier draft's zero bounds: -0.0 for a zero minimum, +0.0 for a zero maximum."""
    for r in rows:
        if r["min"] == -TINY:
            r["min"] = -0.0
        if r["max"] == TINY:
            r["max"] = 0.0


# Verdicts on the widened bounds: chunks 0 and 1 [-TINY, TINY], chunk 2 [-1.0, TINY],
# chunk 3 [-TINY, 1.0]. Bounds that touch zero keep the chunk for any comparison with a
# zero literal; only literals beyond the least subnormal prune.
ZERO_PREDICATES = [
    pred(lt(0.0), [0, 1, 2, 3], [], cant_tell=[1, 3]),
    pred(gt(0.0), [0, 1, 2, 3], [], cant_tell=[0, 1, 2]),
    pred(lt(-0.0), [0, 1, 2, 3], [], cant_tell=[0, 1, 3]),
    pred(eq(-0.0), [0, 1, 2, 3], []),
    pred(eq(0.5), [3], [0, 1, 2], cant_tell=[3]),
    pred(le(-1.0), [2], [0, 1, 3]),
    pred(gt(-0.0), [0, 1, 2, 3], [], cant_tell=[0, 2]),
    pred(ne(0.0), [0, 1, 2, 3], [], cant_tell=[1]),
    # Chunk 1 holds only 0.0: 0.0 NOT IN (-0.0) in DataFusion (bits), 0.0 <> -0.0 in
    # the total order.
    pred(not_in(-0.0), [0, 1, 2, 3], [], cant_tell=[0]),
    pred(ne(-0.0), [0, 1, 2, 3], [], cant_tell=[0]),
    # True for 0.0 only in DataFusion (IN by bits, = by IEEE): each leaf's semantics apart.
    pred(and_(not_in(-0.0), eq(-0.0)), [0, 1, 2, 3], [], cant_tell=[0, 2]),
    # The widening is to the least subnormal, no further.
    pred(gt(TINY), [3], [0, 1, 2]),
    pred(lt(-TINY), [2], [0, 1, 3]),
]
add(
    "float64_zeros",
    "Signed zeros, in a file of the earlier draft: zero minima recorded as -0.0 and zero "
    "maxima as +0.0, which a reader widens to -2^-1074 and +2^-1074 (the bounds a writer "
    "now records, see float64_zeros_widened; same verdicts). No zero bounds a zero for "
    "every engine: x > 0.0 must keep chunk 0 (only -0.0) as its bounds touch zero; "
    "chunk 1 holds only 0.0, which satisfies x NOT IN (-0.0) in DataFusion (IN lists "
    "match floats by bits) and x <> -0.0 in the total order.",
    zarr_json("float64", 8, 2, 0.0),
    Z,
    "float",
    pa.float64(),
    ZERO_PREDICATES,
    edit_rows=_draft_zeros,
)
add(
    "float64_zeros_widened",
    "The values of float64_zeros as a writer now records them: a zero minimum (either "
    "sign) as -2^-1074 (bits 0x8000000000000001), a zero maximum as +2^-1074. Chunk 0 "
    "[-2^-1074, 2^-1074], chunk 1 the same, chunk 2 [-1.0, 2^-1074], chunk 3 "
    "[-2^-1074, 1.0]; x > 2^-1074 and x < -2^-1074 still prune.",
    zarr_json("float64", 8, 2, 0.0),
    Z,
    "float",
    pa.float64(),
    ZERO_PREDICATES,
)

# --- float32: literal rounding ----------------------------------------------------------

P1 = f32(0.1)  # 0.100000001490116...
ABOVE = math.nextafter(P1, math.inf)  # a float64 above it that rounds to it in float32
assert f32(ABOVE) == P1 and ABOVE > P1
F32 = [[P1, f32(0.05)], [f32(0.5), f32(0.75)], [f32(0.01), f32(0.02)]]
add(
    "float32_literal",
    "float32: engines that round a literal to the column's type (numpy 2, polars) find "
    f"x >= {ABOVE!r} true for the float32 0.1 ({P1!r}), which is below the literal as a "
    "float64: chunk 0 must be kept.",
    zarr_json("float32", 6, 2, 0.0),
    F32,
    "float",
    pa.float32(),
    [
        pred(ge(ABOVE), [0, 1], [2]),
        pred(eq(ABOVE), [0], [1, 2]),
        pred(gt(0.3), [1], [0, 2]),
    ],
    float32=True,
)

# --- strings: truncation at 64 bytes -----------------------------------------------------

E = "x" * 61 + "\ud7ff" + "y"  # 65 bytes; the cut's last char U+D7FF raises to U+E000
A = "a" * 63 + "é" + "zz"  # 67 bytes; 64 falls inside é: the minimum is "a" * 63
B = "a" * 62 + "\u07ff" + "q"  # 65 bytes; U+07FF raises to U+0800 (3 bytes): a 65-byte max
C = "b" * 60 + "\U0010ffff" + "c"  # U+10FFFF cannot be raised: dropped, the b before raised
TOP = "\U0010ffff" * 17  # no upper bound at all
S = [["apple", "banana", E], [A, B, B], [C, "b" * 10, C], [TOP, "zz", "zz"]]
RAISED_E = "x" * 61 + "\ue000"
add(
    "strings_truncated",
    "Strings cut at 64 bytes: minimum prefixes at a character boundary; maximum prefixes "
    "with the last character raised (U+D7FF -> U+E000 skipping surrogates; U+07FF -> U+0800, "
    "a 65-byte bound; U+10FFFF dropped and the character before raised); chunk 3's "
    "maximum is null (no upper bound).",
    zarr_json("string", 12, 3, ""),
    S,
    "utf8",
    pa.utf8(),
    [
        pred(gt("y"), [3], [0, 1, 2]),
        pred(eq("aa"), [], [0, 1, 2, 3]),
        pred(eq(B), [1], [0, 2, 3]),
        pred(starts_with("a" * 63), [1], [0, 2, 3]),
        pred(starts_with("b"), [0, 2], [1, 3]),
        pred(lt("ab"), [1], [0, 2, 3]),
        pred(ge(RAISED_E), [0, 3], [1, 2], cant_tell=[0]),
        pred(gt(RAISED_E), [3], [0, 1, 2]),
        pred(starts_with("\U0010ffff"), [3], [0, 1, 2]),
        pred(in_("cherry", "zz"), [0, 3], [1, 2], cant_tell=[0]),
        pred(in_("banana", "zz"), [0, 3], [1, 2]),
        pred(IS_NULL, [], [0, 1, 2, 3]),
        pred(lt("b" * 59 + "c"), [0, 1, 2], [3]),
        pred(gt("b" * 59 + "c"), [0, 3], [1, 2]),
    ],
)

# --- bytes: 0xFF tails ----------------------------------------------------------------

BY = [[b"\x00\x01", b"\x10"], [b"\x20" * 10, b"\x20" * 63 + b"\xff" * 3], [b"\xff" * 70, b"\xfe"]]
add(
    "bytes_ff",
    "Bytes cut at 64: chunk 1's maximum drops the 0xFF byte at the cut and raises the "
    "0x20 before it (63 bytes); chunk 2's maximum is all 0xFF, so null.",
    zarr_json("variable_length_bytes", 6, 2, ""),
    BY,
    "binary",
    pa.binary(),
    [
        pred(gt(b"\x20" * 63), [1, 2], [0]),
        pred(lt(b"\x20\x21"), [0, 1], [2]),
        pred(ge(b"\x20\x21"), [2], [0, 1]),
        pred(eq(b"\xff" * 70), [2], [0, 1]),
        pred(starts_with(b"\xff\xff"), [2], [0, 1]),
        pred(eq(b"\xfe"), [2], [0, 1]),
    ],
)

# --- booleans ---------------------------------------------------------------------------

BO = [[False] * 4, [True] * 4, [False, True, False, True]]
add(
    "bool",
    "Booleans, false < true.",
    zarr_json("bool", 12, 4, False),
    BO,
    "bool",
    pa.bool_(),
    [
        pred(eq(True), [1, 2], [0]),
        pred(eq(False), [0, 2], [1]),
        pred(ne(True), [0, 2], [1]),
        pred(not_(eq(False)), [1, 2], [0]),
        pred(gt(False), [1, 2], [0]),
        pred(IS_NULL, [], [0, 1, 2]),
    ],
)

# --- timestamp with a time zone; an all-null chunk ---------------------------------------

TS = [[1700000000000, 1700000001000, None], [None, None, None], [1800000000000, 1700000000500, 1750000000000]]
add(
    "timestamp_tz",
    "numpy.datetime64[ms] read as timestamp(ms, Europe/Paris) (zarrow's timezone "
    "attribute); values are integers in the unit (UTC instants); NaT reads as null. "
    "Chunk 1 is all null: its bounds are null and only IS NULL can match it.",
    zarr_json(
        {"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 1}},
        9,
        3,
        "NaT",
        attributes={"zarrow": {"arrow_type": 'Timestamp(Millisecond, Some("Europe/Paris"))', "timezone": "Europe/Paris"}},
    ),
    TS,
    "time",
    pa.timestamp("ms", tz="Europe/Paris"),
    [
        pred(IS_NULL, [0, 1], [2]),
        pred(IS_NOT_NULL, [0, 2], [1]),
        pred(gt(1700000002000), [2], [0, 1]),
        pred(not_(gt(1700000002000)), [0, 2], [1]),
        pred(ne(1700000000000), [0, 2], [1]),
        pred(lt(1700000000000), [], [0, 1, 2]),
        pred(or_(IS_NULL, gt(1790000000000)), [0, 1, 2], []),
        pred(not_(IS_NULL), [0, 2], [1]),
    ],
)

# --- freshness: a stale token, a null token, a missing object -------------------------

FR = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]
fr_versions = tokens(4, 16)
del fr_versions["c/3"]  # the chunk object is gone (reads as the fill value)


def _stale(rows):
    rows[1]["version"] = token(16, 1732540000, 9999)  # stored again since
    rows[2]["version"] = None  # recorded without a version
    rows[3]["version"] = token(16, 1732550003, 4459)


add(
    "stale_versions",
    "Row 1's token is not the object's current one (stored again since), row 2 has no "
    "token, chunk 3's object is absent: only row 0 is used.",
    zarr_json("int32", 16, 4, 0),
    FR,
    "int",
    pa.int32(),
    [
        pred(eq(100), [1, 2, 3], [0]),
        pred(gt(4), [1, 2, 3], [0]),
        pred(lt(5), [0, 1, 2, 3], []),
    ],
    versions=fr_versions,
    edit_rows=_stale,
    stale={1, 2, 3},
    now_chunks=[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [0, 0, 0, 0]],
)

# --- a store that cannot list versions (plain HTTP) -----------------------------------

add(
    "no_listing",
    "versions null: the store cannot list versions (plain HTTP) and the reader trusts the "
    "rows, as the spec allows (a MAY; zarrow does). Row 1 has a null token, trusted too.",
    zarr_json("int32", 8, 4, 0),
    FR[:2],
    "int",
    pa.int32(),
    [pred(eq(6), [1], [0]), pred(gt(8), [], [0, 1])],
    versions=None,
    edit_rows=lambda rows: rows[1].__setitem__("version", None),
)

# --- resized arrays ------------------------------------------------------------------

RZ = [[1, 2, 3, 4], [5, 6, 7, 8], [50, 60]]
rz_versions = tokens(3, 16)
rz_file = stats_file(
    [dict(chunk_stats(v, "int"), chunk=i, version=rz_versions[f"c/{i}"]) for i, v in enumerate(RZ)],
    pa.int32(),
    header_text(4, 10, zarr_json("int32", 10, 4, 0)),
)
add(
    "resized_shrunk",
    "Recorded at 10 rows, the array now has 9 (zarr-python's resize rewrites only "
    "zarr.json): chunk 2 has 1 row, not the 2 recorded, so its row is not used.",
    zarr_json("int32", 9, 4, 0),
    RZ,
    "int",
    pa.int32(),
    [pred(eq(50), [2], [0, 1]), pred(gt(10), [2], [0, 1]), pred(eq(60), [2], [0, 1], cant_tell=[2])],
    versions=rz_versions,
    data=rz_file,
    stale={2},
    now_chunks=[[1, 2, 3, 4], [5, 6, 7, 8], [50]],
)
add(
    "resized_grown",
    "Recorded at 10 rows, the array now has 12: chunk 2 has 4 rows, not 2 (rows 10 and 11 "
    "read whatever the chunk object holds there); its row is not used.",
    zarr_json("int32", 12, 4, 0),
    RZ,
    "int",
    pa.int32(),
    [pred(gt(100), [2], [0, 1], cant_tell=[2]), pred(eq(0), [2], [0, 1])],
    versions=rz_versions,
    data=rz_file,
    stale={2},
    now_chunks=[[1, 2, 3, 4], [5, 6, 7, 8], [50, 60, 0, 0]],
)

# --- changed metadata, another version, CF, sharding --------------------------------

add(
    "fill_value_changed",
    "The file records fill_value 0; zarr.json now says 7: the array member differs, so "
    "no row is used.",
    zarr_json("int32", 8, 4, 7),
    FR[:2],
    "int",
    pa.int32(),
    [pred(eq(100), [0, 1], []), pred(lt(0), [0, 1], [])],
    is_usable=False,
    meta_text=header_text(4, 8, zarr_json("int32", 8, 4, 0)),
)
add(
    "attributes_changed",
    "An attribute was added since the file was written (attributes are compared whole).",
    zarr_json("int32", 8, 4, 0, attributes={"long_name": "counts"}),
    FR[:2],
    "int",
    pa.int32(),
    [pred(eq(100), [0, 1], [])],
    is_usable=False,
    meta_text=header_text(4, 8, zarr_json("int32", 8, 4, 0)),
)


def _v1_text():
    zj = zarr_json("int32", 8, 4, 0)
    array = json.dumps({"data_type": "int32", "fill_value": "0", "fill_value_unset": False, "attributes": {}})
    return json.dumps({"array": array, "array_len": 8, "chunk_len": 4, "decode_cf": True, "version": "1"}, separators=(",", ":"))


add(
    "version_1",
    "A version 1 file (its array member is JSON text): well formed, ignored, not an error.",
    zarr_json("int32", 8, 4, 0),
    FR[:2],
    "int",
    pa.int32(),
    [pred(eq(100), [0, 1], [])],
    is_usable=False,
    meta_text=_v1_text(),
)

CF_ATTRS = {"add_offset": 100.0}
CF_RAW = [[1.0, 2.0], [3.0, 4.0]]
CF_DEC = [[101.0, 102.0], [103.0, 104.0]]
cf_zj = zarr_json("float64", 4, 2, 0.0, attributes=CF_ATTRS)
add(
    "cf_decoded",
    "float64 with add_offset 100: the file holds the CF-decoded values (decode_cf true), "
    "as a reader that decodes sees them.",
    cf_zj,
    CF_DEC,
    "float",
    pa.float64(),
    [pred(gt(102.5), [1], [0]), pred(lt(101.0), [], [0, 1]), pred(lt(50.0), [], [0, 1])],
)
add(
    "cf_read_raw",
    "The same file and array read raw (decode_cf false): the bound type is the same "
    "(float64) but the values differ from those recorded, so the file is not used "
    "(x < 50 matches every raw value).",
    cf_zj,
    CF_DEC,
    "float",
    pa.float64(),
    [pred(lt(50.0), [0, 1], []), pred(gt(102.5), [0, 1], [])],
    is_usable=False,
    decode_cf=False,
    data=FILES["cf_decoded.stats"],
    now_chunks=CF_RAW,
)

SH = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]
sh_versions = tokens(2, 80)
sh_now = dict(sh_versions)
sh_now["c/1"] = token(80, 1732560000, 7777)  # the second shard stored again
add(
    "sharded_inner",
    "Shards of 8 rows, inner chunks of 4: chunk_len 4, statistics per inner chunk; "
    "chunks 0 and 1 live in object c/0, chunks 2 and 3 in c/1, which was stored again.",
    zarr_json("int32", 16, 8, 0, inner=4),
    SH,
    "int",
    pa.int32(),
    [pred(eq(6), [1, 2, 3], [0]), pred(lt(3), [0, 2, 3], [1])],
    chunk_len=4,
    versions=sh_now,
    data=stats_file(
        [dict(chunk_stats(v, "int"), chunk=i, version=sh_versions[f"c/{i // 2}"]) for i, v in enumerate(SH)],
        pa.int32(),
        header_text(4, 16, zarr_json("int32", 16, 8, 0, inner=4)),
    ),
    stale={2, 3},
)
add(
    "chunk_len_not_dividing",
    "chunk_len 4 does not divide the array's chunk length 6: not used.",
    zarr_json("int32", 12, 6, 0),
    [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],
    "int",
    pa.int32(),
    [pred(eq(100), [0, 1], [])],
    is_usable=False,
    chunk_len=4,
)

# --- categoricals --------------------------------------------------------------------

CATS = ["T cell", "B cell", "NK", "mono"]
CODES = [[0, 0, 1, -1], [2, 2, 2, 2], [3, 1, 3, 1]]
add(
    "categorical_strings",
    "An anndata categorical's codes (int8; -1 = null) with categories "
    '["T cell", "B cell", "NK", "mono"]: predicates are over the categorical\'s values. '
    "Each chunk's categories come from its set of codes; bounds order the strings bytewise "
    "(not by code).",
    zarr_json("int8", 12, 4, 0),
    CODES,
    "int",
    pa.int8(),
    [
        pred(eq("NK"), [1], [0, 2]),
        pred(eq("B cell"), [0, 2], [1]),
        pred(lt("C"), [0, 2], [1]),
        pred(ge("m"), [2], [0, 1]),
        pred(IS_NULL, [0], [1, 2]),
        pred(IS_NOT_NULL, [0, 1, 2], []),
        pred(in_("NK", "mono"), [1, 2], [0]),
        pred(not_in("T cell", "B cell"), [1, 2], [0]),
        pred(ne("NK"), [0, 2], [1]),
        pred(eq("no such category"), [], [0, 1, 2]),
    ],
    categories=CATS,
    now_chunks=cat_values(CODES, CATS),
)
NCATS = [10, 9, 100]
NCODES = [[0, 1, 1], [2, 0, 2]]
add(
    "categorical_numbers",
    "Integer categories [10, 9, 100]: bounds in number order (as text, '9' > '50').",
    zarr_json("int8", 6, 3, 0),
    NCODES,
    "int",
    pa.int8(),
    [pred(gt(50), [1], [0]), pred(lt(9.5), [0], [1]), pred(eq(100), [1], [0])],
    categories=NCATS,
    now_chunks=cat_values(NCODES, NCATS),
)

# --- invalid files -----------------------------------------------------------------------

INV_ZJ = zarr_json("int32", 8, 4, 0)
INV = [[1, 2, 3, 4], [5, 6, 7, 8]]
INV_ROWS = [dict(chunk_stats(v, "int"), chunk=i, version=tokens(2, 16)[f"c/{i}"]) for i, v in enumerate(INV)]
INV_TEXT = header_text(4, 8, INV_ZJ)


def invalid(name, note, data):
    add(
        name,
        note,
        INV_ZJ,
        INV,
        "int",
        pa.int32(),
        [pred(eq(100), [0, 1], []), pred(lt(0), [0, 1], [])],
        valid=False,
        is_usable=False,
        data=data,
    )


def rows_with(**changes):
    rows = [dict(r) for r in INV_ROWS]
    for k, v in changes.items():
        i, col = k.split("_", 1)
        rows[int(i[1:])][col] = v
    return rows


GOOD = stats_file(INV_ROWS, pa.int32(), INV_TEXT)
invalid("invalid_set_300", "A set of 300 bytes (at most 256).", stats_file(rows_with(r0_set=b"\x01" * 300), pa.int32(), INV_TEXT))
invalid(
    "invalid_chunks_order",
    "Chunk numbers 1, 0: not strictly increasing.",
    stats_file(rows_with(r0_chunk=1, r1_chunk=0), pa.int32(), INV_TEXT),
)
invalid("invalid_missing_column", "No set column.", stats_file(INV_ROWS, pa.int32(), INV_TEXT, drop="set"))
invalid(
    "invalid_wrong_type",
    "rows is int64, not uint64.",
    stats_file(INV_ROWS, pa.int32(), INV_TEXT, types={"rows": pa.int64()}),
)
invalid(
    "invalid_bound_types",
    "min is int32 but max is int64.",
    stats_file(INV_ROWS, pa.int32(), INV_TEXT, types={"max": pa.int64()}),
)
invalid("invalid_json", "The metadata is not JSON.", stats_file(INV_ROWS, pa.int32(), INV_TEXT[:-7]))
invalid("invalid_no_metadata", "No zarrow.stats schema metadata.", stats_file(INV_ROWS, pa.int32(), None))
invalid(
    "invalid_chunk_len_0",
    "chunk_len 0.",
    stats_file(INV_ROWS, pa.int32(), INV_TEXT.replace('"chunk_len":4', '"chunk_len":0')),
)
invalid(
    "invalid_compressed",
    "Record batches compressed with zstd (a reader refuses before decompressing).",
    stats_file(INV_ROWS, pa.int32(), INV_TEXT, compression="zstd"),
)
invalid("invalid_truncated", "The first half of a valid file.", GOOD[: len(GOOD) // 2])
invalid("invalid_stream", "An Arrow IPC stream, not a file.", stats_file(INV_ROWS, pa.int32(), INV_TEXT, stream=True))
invalid(
    "invalid_dictionary",
    "The version column is dictionary-encoded (a statistics file has no dictionaries).",
    stats_file(INV_ROWS, pa.int32(), INV_TEXT, dictionary_version=True),
)
invalid(
    "invalid_null_chunk",
    "A null chunk number.",
    stats_file(rows_with(r1_chunk=None), pa.int32(), INV_TEXT, nullable_chunk=True),
)


def main() -> int:
    for name in os.listdir(HERE):
        if name.endswith(".stats"):
            os.remove(os.path.join(HERE, name))
    for name, data in FILES.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    with open(os.path.join(HERE, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(CASES, f, indent=1, ensure_ascii=False)
        f.write("\n")
    total = sum(len(d) for d in FILES.values()) + os.path.getsize(os.path.join(HERE, "cases.json"))
    print(f"{len(CASES)} cases, {len(FILES)} files, {total} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
