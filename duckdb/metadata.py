#!/usr/bin/env python3
"""Make a built shared library a DuckDB extension: append DuckDB's metadata footer.

    python3 duckdb/metadata.py LIBRARY OUT --platform linux_amd64 --duckdb-version v2.0.0 \
        --extension-version 0.1.0

The footer (534 bytes) is what DuckDB reads at LOAD, written from the format
its loader parses (src/main/extension/extension_load.cpp, ParsedExtensionMetaData):

- a WebAssembly custom section header named `duckdb_signature` (22 bytes), so
  that the file stays a valid module where it is one;
- 8 fields of 32 bytes, NUL-padded, read by DuckDB from the last to the first:
  the metadata format ("4"), the platform (`PRAGMA platform`), the DuckDB
  version the extension is built for, the extension's version, the ABI type,
  and three reserved empty fields;
- 256 bytes of signature: zeros for an unsigned extension (DuckDB then needs
  `allow_unsigned_extensions`; a repository's signing key replaces them).

zarrow's extension uses DuckDB 2.0's v2 C API, whose ABI type is
`C_STRUCT_UNSTABLE`: DuckDB then checks the version field against its own
version exactly.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

FIELD = 32
SIGNATURE = 256
NAME = b"duckdb_signature"


def field(text: str) -> bytes:
    raw = text.encode("ascii")
    if len(raw) > FIELD:
        raise SystemExit(f"metadata field longer than {FIELD} bytes: {text!r}")
    return raw.ljust(FIELD, b"\0")


def leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def footer(platform: str, duckdb_version: str, extension_version: str, abi: str) -> bytes:
    fields = ["", "", "", abi, extension_version, duckdb_version, platform, "4"]
    payload_len = 8 * FIELD + SIGNATURE
    # Custom section (id 0): its size covers the name's length byte, the name,
    # and the payload's own length prefix and bytes.
    body = leb128(len(NAME)) + NAME + leb128(payload_len)
    header = b"\0" + leb128(len(body) + payload_len) + body
    out = header + b"".join(field(f) for f in fields) + b"\0" * SIGNATURE
    assert len(out) == 534, len(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--platform", required=True)
    parser.add_argument("--duckdb-version", default="v2.0.0")
    parser.add_argument("--extension-version", required=True)
    parser.add_argument("--abi", default="C_STRUCT_UNSTABLE")
    args = parser.parse_args()
    partial = args.out.with_name(args.out.name + ".partial")
    shutil.copyfile(args.library, partial)
    with open(partial, "ab") as f:
        f.write(footer(args.platform, args.duckdb_version, args.extension_version, args.abi))
    partial.replace(args.out)


if __name__ == "__main__":
    main()
