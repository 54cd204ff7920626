"""Every store in testdata/stores read through zarrow.read into pyarrow equals what
zarr-python reads from it (check_read.py's expectations, live); the stores
zarr-python cannot read (zarrs codecs, ZEP0007) equal the values their writer read
back (testdata/expected, written by zarrs or by the ZEP0007 generator's own decode)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import zarrow
from check_read import STRING_TYPES, compare, unreadable_reason, zarr_columns
from conftest import EXPECTED, STORES

CASES = sorted(p for p in STORES.glob("*.zarr") if p.is_dir())
ZARR_PYTHON_CASES = [p for p in CASES if unreadable_reason(p) is None]


@pytest.mark.parametrize("string_type", list(STRING_TYPES), ids=lambda s: s or "default")
@pytest.mark.parametrize("store", ZARR_PYTHON_CASES, ids=lambda p: p.name.removesuffix(".zarr"))
def test_store_equals_zarr_python(store, string_type):
    expected = zarr_columns(store)
    table = pa.table(zarrow.read(store, string_type=string_type))
    compare(table, expected, string_type)


WRITER_CASES = [p for p in CASES if unreadable_reason(p)]


@pytest.mark.parametrize("store", WRITER_CASES, ids=lambda p: p.name.removesuffix(".zarr"))
def test_store_equals_its_writer(store):
    case = store.name.removesuffix(".zarr")
    meta = json.loads((EXPECTED / f"{case}.json").read_text())
    if "zarrow" in meta.get("writer", ""):
        pytest.skip("expected values written by zarrow itself")
    with pa.OSFile(str(EXPECTED / f"{case}.arrow"), "rb") as f:
        want = pa.ipc.open_file(f).read_all()
    got = pa.table(zarrow.read(store))
    assert got.column_names == want.column_names
    for name in want.column_names:
        g, w = got.column(name), want.column(name)
        assert g.type == w.type, name
        assert g.to_pylist() == w.to_pylist(), name


def test_every_store_is_checked():
    # A new store is covered by one of the two tests above.
    assert len(CASES) > 90
    assert len(ZARR_PYTHON_CASES) + len(WRITER_CASES) == len(CASES)
