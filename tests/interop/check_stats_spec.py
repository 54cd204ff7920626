#!/usr/bin/env python3
"""Run the chunk statistics conformance cases (testdata/stats-conformance/cases.json)
through the independent reader (tests/interop/stats_reader.py, written from
docs/spec/chunk-statistics.md) and check every verdict exactly:

- a valid case's file reads (read_stats), an invalid one raises InvalidStats;
- usable(...) is the case's `usable`;
- for every predicate, prune(...) keeps exactly the `keep` chunks and skips exactly
  the `skip` chunks (for an invalid or unusable case, every chunk is kept).

Also checks local_versions / prune_local on a real local Zarr v3 array written with
zarr-python (when importable), with the statistics file written here from the rows
the spec prescribes, and that rewriting a chunk makes its row stale.

Usage: .venv/bin/python tests/interop/check_stats_spec.py [-k SUBSTRING] [-v]
Exit 1 on any failure; the last line is "N passed, M failed".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in tests/ or testdata/
sys.path.insert(0, HERE)

import stats_reader as sr  # noqa: E402

CASES = os.path.join(ROOT, "testdata", "stats-conformance")


class Checks:
    def __init__(self, verbose: bool):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def ok(self, name: str) -> None:
        self.passed += 1
        if self.verbose:
            print(f"ok    {name}")

    def fail(self, name: str, why: str) -> None:
        self.failed += 1
        print(f"FAIL  {name}: {why}")

    def check(self, name: str, cond: bool, why: str = "") -> None:
        if cond:
            self.ok(name)
        else:
            self.fail(name, why)


def run_case(case: dict, c: Checks) -> None:
    name = case["name"]
    with open(os.path.join(CASES, case["file"]), "rb") as f:
        data = f.read()
    zj = case["zarr_json"]
    versions = case["versions"]
    decode_cf = case.get("decode_cf", True)
    categories = case.get("categories")
    try:
        stats = sr.read_stats(data)
        err = None
    except sr.InvalidStats as e:
        stats, err = None, e
    if case["valid"]:
        if err is not None:
            c.fail(f"{name}: reads", f"InvalidStats: {err}")
            return
        c.ok(f"{name}: reads")
        got = sr.usable(stats, zj, decode_cf)
        c.check(f"{name}: usable", got == case["usable"], f"usable() is {got}, the case says {case['usable']}")
    else:
        c.check(f"{name}: refused", err is not None, "read_stats accepted an invalid file")
    for i, p in enumerate(case["predicates"]):
        label = f"{name}: predicate {i} {json.dumps(p['where'], ensure_ascii=False)[:100]}"
        try:
            keep = sr.prune(stats, zj, versions, p["where"], decode_cf=decode_cf, categories=categories)
        except Exception as e:  # a bug in the reader, reported as a failure
            c.fail(label, f"{type(e).__name__}: {e}")
            continue
        n = len(p["keep"]) + len(p["skip"])
        kept = {j for j, k in enumerate(keep) if k}
        skipped = {j for j, k in enumerate(keep) if not k}
        problems = []
        if len(keep) != n:
            problems.append(f"{len(keep)} chunks, the case has {n}")
        if missing := sorted(set(p["keep"]) - kept):
            problems.append(f"skips {missing}, which must be kept")
        if extra := sorted(set(p["skip"]) - skipped):
            problems.append(f"keeps {extra}, which a reader following every rule skips")
        c.check(label, not problems, "; ".join(problems))


def check_local(c: Checks) -> None:
    """A real local Zarr v3 array: tokens in the spec's format, prune_local, staleness."""
    try:
        import numpy as np
        import zarr
    except ImportError:
        print("skip  local array checks (zarr-python not importable)")
        return
    sys.path.insert(0, CASES)
    import generate as gen  # the writer rules, to write a file for the real array

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "a.zarr")
        arr = zarr.create_array(path, shape=(10,), chunks=(4,), dtype="int32", fill_value=0)
        arr[:] = np.array([1, 5, 3, 2, 100, 100, 2000, 1500, -5, 7], dtype="int32")
        versions = sr.local_versions(path)
        chunk_keys = sorted(k for k in versions if k.startswith("c/"))
        c.check("local: chunk keys", chunk_keys == ["c/0", "c/1", "c/2"], f"{chunk_keys}")
        tok = versions.get("c/0", "")
        parts = tok.split(":")
        st = os.lstat(os.path.join(path, "c", "0"))
        well_formed = (
            len(parts) == 4
            and parts[0] == str(st.st_size)
            and parts[2] == str(st.st_ino)
            and all(len(x.split(".")) == 2 and len(x.split(".")[1]) == 9 for x in (parts[1], parts[3]))
            and int(parts[1].replace(".", "")) == st.st_mtime_ns
            and int(parts[3].replace(".", "")) == st.st_ctime_ns
        )
        c.check("local: token format", well_formed, tok)
        with open(os.path.join(path, "zarr.json"), "rb") as f:
            zj = json.load(f)
        rows = []
        values = [[1, 5, 3, 2], [100, 100, 2000, 1500], [-5, 7]]
        for i, vals in enumerate(values):
            s = gen.chunk_stats(vals, "int")
            s["chunk"] = i
            s["version"] = versions[f"c/{i}"]
            rows.append(s)
        import pyarrow as pa

        data = gen.stats_file(rows, pa.int32(), gen.header_text(4, 10, zj))
        with open(os.path.join(path, sr.STATS_KEY), "wb") as f:
            f.write(data)
        got = sr.prune_local(path, {"op": "eq", "value": 4})
        c.check("local: prune_local eq 4", got == [False, False, True], f"{got}")
        got = sr.prune_local(path, {"op": "eq", "value": 4}, decode_cf=False)
        c.check("local: no CF attributes, raw read uses the file", got == [False, False, True], f"{got}")
        # zarr-python can read the array beside the file (it is not a chunk key).
        back = zarr.open_array(path, mode="r")[:]
        c.check("local: zarr-python reads the array", list(back) == sum(values, []), f"{list(back)}")
        # Store chunk 0 again (same size): its row goes stale.
        time.sleep(0.01)
        arr = zarr.open_array(path, mode="r+")
        arr[0:4] = np.array([4, 4, 4, 4], dtype="int32")
        got = sr.prune_local(path, {"op": "eq", "value": 4})
        c.check("local: a chunk stored again is read", got == [True, False, True], f"{got}")
        # A resize (metadata only) makes the last chunk's row stale.
        arr.resize((9,))
        got = sr.prune_local(path, {"op": "gt", "value": 1000})
        # chunk 0 stale (rewritten), chunk 1 fresh (has 2000, 1500), chunk 2: 1 row now, 2 recorded
        c.check("local: resize makes the last row stale", got == [True, True, True], f"{got}")
        got = sr.prune_local(path, {"op": "lt", "value": 0})
        c.check("local: chunk 1 still prunes after the resize", got == [True, False, True], f"{got}")
        # A changed fill value (zarr.json rewritten): nothing used.
        meta = dict(sr.read_metadata(path))
        meta["fill_value"] = 9
        with open(os.path.join(path, "zarr.json"), "w") as f:
            json.dump(meta, f)
        got = sr.prune_local(path, {"op": "lt", "value": 0})
        c.check("local: a changed fill value uses nothing", got == [True, True, True], f"{got}")
        # A hostile file: every chunk read, nothing raised.
        with open(os.path.join(path, sr.STATS_KEY), "wb") as f:
            f.write(data[: len(data) // 3])
        got = sr.prune_local(path, {"op": "lt", "value": 0})
        c.check("local: a broken file keeps every chunk", got == [True, True, True], f"{got}")
        # Zarr v2: .zarray / .zattrs, chunk key "0".
        p2 = os.path.join(tmp, "v2.zarr")
        a2 = zarr.create_array(p2, shape=(8,), chunks=(4,), dtype="int32", fill_value=0, zarr_format=2)
        a2[:] = np.arange(8, dtype="int32")
        meta2 = sr.read_metadata(p2)
        v2 = sr.local_versions(p2)
        rows2 = []
        for i in range(2):
            s = gen.chunk_stats(list(range(4 * i, 4 * i + 4)), "int")
            s["chunk"] = i
            s["version"] = v2[str(i)]
            rows2.append(s)
        text2 = json.dumps(
            {
                "version": "2",
                "chunk_len": 4,
                "array_len": 8,
                "decode_cf": True,
                "array": {"data_type": meta2["dtype"], "fill_value": meta2["fill_value"], "attributes": meta2["attributes"]},
            }
        )
        with open(os.path.join(p2, sr.STATS_KEY), "wb") as f:
            f.write(gen.stats_file(rows2, pa.int32(), text2))
        got = sr.prune_local(p2, {"op": "ge", "value": 5})
        c.check("local v2: prune_local", got == [False, True], f"{got}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print every check")
    args = ap.parse_args()
    with open(os.path.join(CASES, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    c = Checks(args.v)
    names = set()
    for case in cases:
        c.check(f"{case['name']}: unique name", case["name"] not in names, "duplicate")
        names.add(case["name"])
        if args.k in case["name"]:
            run_case(case, c)
    if not args.k:
        check_local(c)
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
