"""The package's keywords are the library's options, declared once
(zarrow::options): every named keyword is a declared option, and every declared
option is taken by name, as ``zarrow convert``'s flag without the dashes."""

from __future__ import annotations

import inspect

import pyarrow as pa
import pytest

import zarrow
from zarrow import _zarrow
from conftest import STORES

OBS = STORES / "obs.zarr"


def keys(*groups: str) -> set:
    return {key for group in groups for key, _, _ in _zarrow.options(group)}


# Each function, the option groups its keywords set, and its own parameters
# (not options).
FUNCTIONS = [
    (zarrow.read, ("url", "read", "table"), {"path_or_url"}),
    (zarrow.info, ("url", "read"), {"path"}),
    (zarrow.write, ("url", "write"), {"data", "path", "mode"}),
    (zarrow.convert, ("url", "convert"), {"src", "dst"}),
    (zarrow.sql, ("url", "read"), {"query", "tables", "partitions"}),
    (zarrow.table, ("url", "ZARR table"), {"path_or_url"}),
]


@pytest.mark.parametrize("function, groups, own", FUNCTIONS, ids=lambda f: getattr(f, "__name__", ""))
def test_named_keywords_are_declared_options(function, groups, own):
    params = {
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    }
    assert params - own <= keys(*groups), params - own - keys(*groups)


def test_the_groups_compose():
    assert keys("convert") >= keys("read", "table", "write") - {"overwrite"}
    assert not keys("convert") & keys("url")
    assert "decode_cf" in keys("ZARR table") and "sorted" in keys("ZARR table")
    # Documented, with what each takes.
    for key, kind, doc in _zarrow.options("convert"):
        assert doc.strip(), key
        assert kind in ("Flag", "Value", "List"), (key, kind)


def test_an_option_not_named_in_the_signature_reaches_the_reader():
    # zarr-python's obs.zarr: its chunks decode to more than 16 bytes.
    assert pa.table(zarrow.read(OBS, columns=["cell_type"])).num_rows > 0
    with pytest.raises(zarrow.ZarrowError, match="exceeds the limit of 16 bytes"):
        list(zarrow.read(OBS, columns=["cell_type"], max_chunk_bytes=16))
    with pytest.raises(zarrow.ZarrowError, match="exceeds the limit of 16 bytes"):
        list(zarrow.sql("SELECT count(cell_type) FROM t", {"t": OBS}, max_chunk_bytes=16))


def test_lists_and_sizes_by_keyword(tmp_path):
    table = pa.table({"s": ["a", "b", "c"]})
    # chunk_shape shapes N-d arrays only: refused by name for a table.
    with pytest.raises(zarrow.OptionError, match="chunk_shape"):
        zarrow.write(table, tmp_path / "t.zarr", chunk_shape=[2, 2])
    assert zarrow.write(table, tmp_path / "t.zarr", chunk_len=2) == 3
    got = pa.table(zarrow.read(tmp_path / "t.zarr", rows=(1, 3), max_chunk_bytes="1K"))
    assert got.column("s").to_pylist() == ["b", "c"]


def test_unknown_and_bad_options_are_refused():
    with pytest.raises(TypeError, match="max_chunk_byte"):
        zarrow.read(OBS, max_chunk_byte=16)
    with pytest.raises(zarrow.OptionError, match="max_chunk_bytes"):
        zarrow.read(OBS, max_chunk_bytes="16X")
    with pytest.raises(zarrow.OptionError, match="concurrency"):
        zarrow.table(OBS, concurrency="many")
