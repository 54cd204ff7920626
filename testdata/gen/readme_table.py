#!/usr/bin/env python3
"""Rewrite the case table in testdata/README.md from the stores and expected/*.json.

The table sits between the markers ``<!-- cases:begin -->`` and ``<!-- cases:end -->``;
regen.sh runs this last so the table always matches the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # testdata/
README = ROOT / "README.md"
BEGIN, END = "<!-- cases:begin -->", "<!-- cases:end -->"


def short_codec(c) -> str:
    if isinstance(c, str):
        return c
    name, conf = c.get("name") or c.get("id"), c.get("configuration") or {}
    if name == "zarrs.vlen":
        inner = lambda cs: "+".join(short_codec(x) for x in cs)  # noqa: E731
        loc = conf.get("index_location", "(0.0: none)")
        return (f"zarrs.vlen({conf['index_data_type']}, {loc}, index=[{inner(conf['index_codecs'])}], "
                f"data=[{inner(conf['data_codecs'])}])")
    if name == "blosc":
        return f"blosc({conf.get('cname', c.get('cname'))})"
    if name == "bytes" and conf.get("endian") == "big":
        return "bytes(big)"
    return name


def v2_codecs(meta: dict) -> list[str]:
    out = [f["id"] for f in meta.get("filters") or []]
    comp = meta.get("compressor")
    out.append(short_codec({"id": comp["id"], "cname": comp.get("cname")}) if comp else "no compressor")
    return out


def describe_array(path: Path) -> str:
    if (path / "zarr.json").exists():
        meta = json.loads((path / "zarr.json").read_text())
        dt = meta["data_type"]
        config = dt.get("configuration", {}) if isinstance(dt, dict) else {}
        dt = dt if isinstance(dt, str) else (
            f"{dt['name']}[{config['length_bytes']}]" if "length_bytes" in config else
            f"{dt['name']}[{config['unit']}]" if "unit" in config else json.dumps(dt))
        codecs = " + ".join(short_codec(c) for c in meta["codecs"]) or "codecs []"
        shape = meta["shape"]
        chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
        cke = meta["chunk_key_encoding"]
        key = "" if cke == {"name": "default", "configuration": {"separator": "/"}} else (
            f", keys {cke['name']} '{cke.get('configuration', {}).get('separator', '/')}'")
        return f"v3 `{dt}`; {codecs}; shape {shape} chunks {chunks}{key}"
    meta = json.loads((path / ".zarray").read_text())
    return (f"v2 `{meta['dtype']}`; {' + '.join(v2_codecs(meta))}; shape {meta['shape']} chunks {meta['chunks']}, "
            f"sep '{meta.get('dimension_separator', '.')}'")


def describe(store: Path) -> str:
    if (store / "zarr.json").exists() and json.loads((store / "zarr.json").read_text())["node_type"] == "group" \
            or (store / ".zgroup").exists():
        fmt = "v2" if (store / ".zgroup").exists() else "v3"
        children = sorted(p.name for p in store.iterdir() if p.is_dir())
        return f"{fmt} group: " + ", ".join(f"`{c}`" for c in children)
    return describe_array(store)


def main() -> int:
    rows = ["| store | writer | encoding | exercises |", "|---|---|---|---|"]
    for exp in sorted((ROOT / "expected").glob("*.json")):
        case = exp.stem
        meta = json.loads(exp.read_text())
        store = ROOT / "stores" / f"{case}.zarr"
        notes = meta["notes"].replace("|", "\\|")
        enc = describe(store).replace("|", "\\|")
        rows.append(f"| `{case}.zarr` | {meta['writer']} | {enc} | {notes} |")
    text = README.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)
    print(f"readme: {len(rows) - 2} cases in testdata/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
