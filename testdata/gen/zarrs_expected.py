#!/usr/bin/env python3
"""Turn the zarrs generator's read-back dumps into expected files, after cross-checking them.

Usage: ``zarrs_expected.py DUMPS_DIR``  (regen.sh passes testdata/gen-zarrs/target/dumps)

For each ``DUMPS_DIR/<case>.json`` written by ``testdata/gen-zarrs`` (values as zarrs
0.23.14 reads them back, base64 per element) this writes

* ``testdata/expected/<case>.arrow`` -- Arrow IPC file, same contract as generate.py
  (array -> one column named after the store; group -> its 1-D children sorted by name;
  ``string`` -> ``pa.string()``, ``bytes`` -> ``pa.binary()``, ``int32`` -> ``pa.int32()``);
* ``testdata/expected/<case>.json`` -- ``{"kind", "writer", "notes", ...}``.

Before writing, every chunk on disk is decoded a second time by the small independent
decoder below, written from FORMATS.md's byte layouts (zarrs.vlen start/end with nested
codec chains, zarrs.vlen_v2, vlen-utf8, vlen-bytes; bytes->bytes zstd and crc32c; absent
chunks -> fill; edge chunks trimmed), and the result must equal zarrs' own read-back. The
vlen-utf8 chunks zarrs writes are also compared byte for byte with numcodecs' VLenUTF8.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from pathlib import Path

import google_crc32c
import numcodecs
import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]  # testdata/
STORES = ROOT / "stores"
EXPECTED = ROOT / "expected"


# ------------------------------------------------------------------ independent decoder


def bytes_to_bytes_decode(codecs: list[dict], buf: bytes) -> bytes:
    for codec in reversed(codecs):
        name = codec["name"]
        if name == "zstd":
            buf = bytes(numcodecs.Zstd().decode(buf))
        elif name == "crc32c":
            body, crc = buf[:-4], struct.unpack("<I", buf[-4:])[0]
            assert google_crc32c.value(body) == crc, "crc32c mismatch"
            buf = body
        else:
            raise ValueError(f"unexpected bytes->bytes codec {name}")
    return buf


def split_chain(codecs: list[dict]) -> tuple[dict, list[dict]]:
    """(array->bytes codec, bytes->bytes codecs); no array->array codecs are used here."""
    assert codecs[0]["name"] in ("bytes", "zarrs.vlen", "zarrs.vlen_v2", "vlen-utf8", "vlen-bytes"), codecs
    return codecs[0], codecs[1:]


def decode_interleaved(buf: bytes, n: int) -> list[bytes]:
    """vlen-utf8 / vlen-bytes / zarrs.vlen_v2: u32 count, then (u32 len, bytes) per element."""
    (count,) = struct.unpack_from("<I", buf, 0)
    assert count == n, (count, n)
    pos, out = 4, []
    for _ in range(n):
        (length,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        out.append(buf[pos:pos + length])
        pos += length
    assert pos == len(buf), "trailing bytes"
    return out


def decode_zarrs_vlen(conf: dict, buf: bytes, n: int) -> list[bytes]:
    location = conf.get("index_location", "start")  # draft 0.0 has no index_location
    if location == "start":
        (index_len,) = struct.unpack_from("<Q", buf, 0)
        index_enc, data_enc = buf[8:8 + index_len], buf[8 + index_len:]
    else:
        (index_len,) = struct.unpack_from("<Q", buf, len(buf) - 8)
        index_enc = buf[len(buf) - 8 - index_len:len(buf) - 8]
        data_enc = buf[:len(buf) - 8 - index_len]
    idx_a2b, idx_b2b = split_chain(conf["index_codecs"])
    assert idx_a2b["name"] == "bytes" and idx_a2b.get("configuration", {}).get("endian", "little") == "little"
    index_raw = bytes_to_bytes_decode(idx_b2b, index_enc)
    dtype = {"uint32": "<u4", "uint64": "<u8"}[conf["index_data_type"]]
    offsets = np.frombuffer(index_raw, dtype=dtype)
    assert len(offsets) == n + 1
    data_a2b, data_b2b = split_chain(conf["data_codecs"])
    assert data_a2b["name"] == "bytes"
    # an empty data section is stored as zero bytes and its codecs are not run
    data = bytes_to_bytes_decode(data_b2b, data_enc) if offsets[-1] > 0 else b""
    assert data_enc or offsets[-1] == 0
    assert np.all(np.diff(offsets.astype(np.int64)) >= 0) and int(offsets[-1]) == len(data)
    return [data[int(offsets[i]):int(offsets[i + 1])] for i in range(n)]


def decode_chunk(meta: dict, buf: bytes, n: int):
    a2b, b2b = split_chain(meta["codecs"])
    raw = bytes_to_bytes_decode(b2b, buf)
    name = a2b["name"]
    if name in ("vlen-utf8", "vlen-bytes", "zarrs.vlen_v2"):
        return decode_interleaved(raw, n)
    if name == "zarrs.vlen":
        return decode_zarrs_vlen(a2b["configuration"], raw, n)
    if name == "bytes":
        assert meta["data_type"] == "int32"
        endian = a2b.get("configuration", {}).get("endian", "little")
        return np.frombuffer(raw, dtype="<i4" if endian == "little" else ">i4").tolist()
    raise ValueError(name)


def fill_of(meta: dict):
    fv, dt = meta["fill_value"], meta["data_type"]
    if dt == "string":
        return fv.encode()
    if dt == "bytes":
        return bytes(fv) if isinstance(fv, list) else base64.b64decode(fv)
    return fv


def decode_array(path: Path, meta: dict) -> list:
    shape, chunks = meta["shape"], meta["chunk_grid"]["configuration"]["chunk_shape"]
    assert meta["chunk_key_encoding"] == {"name": "default", "configuration": {"separator": "/"}}
    out = np.empty(shape, dtype=object)
    grid = [-(-s // c) for s, c in zip(shape, chunks)]
    csize = int(np.prod(chunks))
    for idx in np.ndindex(*grid):
        key = path / ("c/" + "/".join(map(str, idx)))
        sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, shape))
        if not key.exists():
            out[sl] = fill_of(meta)
            continue
        block = np.empty(csize, dtype=object)
        block[:] = decode_chunk(meta, key.read_bytes(), csize)
        block = block.reshape(chunks)
        out[sl] = block[tuple(slice(0, s.stop - s.start) for s in sl)]
    return out.ravel(order="C").tolist()


def check_vlen_utf8_bytes(path: Path, meta: dict) -> int:
    """zarrs' vlen-utf8 chunk bytes == numcodecs VLenUTF8 of the same (padded) chunk."""
    if meta["codecs"] != [{"name": "vlen-utf8"}]:
        return 0
    chunks = meta["chunk_grid"]["configuration"]["chunk_shape"]
    n = 0
    for key in sorted((path / "c").rglob("*")):
        if key.is_file():
            buf = key.read_bytes()
            values = [b.decode() for b in decode_interleaved(buf, int(np.prod(chunks)))]
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
            assert bytes(numcodecs.VLenUTF8().encode(arr)) == buf, key
            n += 1
    return n


# ------------------------------------------------------------------ expected files


def column(dump: dict) -> pa.Array:
    dt = dump["data_type"]
    if dt == "string":
        return pa.array([base64.b64decode(v).decode("utf-8") for v in dump["values_b64"]], type=pa.string())
    if dt == "bytes":
        return pa.array([base64.b64decode(v) for v in dump["values_b64"]], type=pa.binary())
    if dt == "int32":
        return pa.array(dump["values_int"], type=pa.int32())
    raise TypeError(dt)


def main(dumps_dir: str) -> int:
    dumps = sorted(Path(dumps_dir).glob("*.json"))
    assert dumps, f"no dumps in {dumps_dir}"
    print("zarrs expected")
    for dump_path in dumps:
        dump = json.loads(dump_path.read_text())
        case = dump["case"]
        store = STORES / f"{case}.zarr"
        cols, byte_checked = {}, 0
        for child, arr in sorted(dump["arrays"].items()):
            path = store / child if child else store
            meta = json.loads((path / "zarr.json").read_text())
            assert meta == arr["metadata"]
            ours = decode_array(path, meta)
            theirs = [base64.b64decode(v) for v in arr["values_b64"]] if arr["values_b64"] is not None \
                else arr["values_int"]
            assert ours == theirs, f"{case}/{child}: independent decode differs from zarrs read-back"
            byte_checked += check_vlen_utf8_bytes(path, meta)
            if dump["kind"] == "array":
                cols[case] = column(arr)
            elif len(arr["shape"]) == 1:
                cols[child] = column(arr)
        table = pa.table(dict(sorted(cols.items())))
        with pa.OSFile(str(EXPECTED / f"{case}.arrow"), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
        meta_out = {"kind": dump["kind"], "writer": dump["writer"] + (" + hand edit" if dump["hand_edited"] else ""),
                    "notes": dump["notes"]}
        if dump["hand_edited"]:
            meta_out["hand_edited"] = True
        (EXPECTED / f"{case}.json").write_text(json.dumps(meta_out, indent=2, ensure_ascii=False) + "\n")
        extra = f" (vlen-utf8 bytes == numcodecs for {byte_checked} chunks)" if byte_checked else ""
        print(f"  {case:32s} {dump['kind']:5s} rows={table.num_rows:5d} cols={table.column_names}{extra}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
