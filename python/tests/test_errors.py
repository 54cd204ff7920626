"""Every corrupt store in testdata/bad raises zarrow.ZarrowError with zarrow's
message, in this interpreter (a crash would take pytest down with it); a consumer
pulling the stream (pyarrow) gets an error too, never a crash or a short table."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import zarrow
from conftest import BAD

EXPECTED = json.loads((BAD / "expected.json").read_text())


def read_everything(path, string_type):
    reader = zarrow.read(path, string_type=string_type)
    for _ in reader:
        pass


def test_the_corpus_is_listed():
    assert sorted(p.name.removesuffix(".zarr") for p in BAD.glob("*.zarr")) == sorted(EXPECTED)


@pytest.mark.parametrize("string_type", ["utf8", "large-utf8", "utf8-view"])
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_corrupt_store_raises_zarrow_error(case, string_type):
    path = BAD / f"{case}.zarr"
    with pytest.raises(zarrow.ZarrowError) as err:
        read_everything(path, string_type)
    message = str(err.value)
    kind = EXPECTED[case]
    if kind.startswith("Chunk:"):
        assert "chunk" in message, message
    # A consumer of the C stream sees the failure as its own exception type, with
    # zarrow's message.
    try:
        reader = zarrow.read(path, string_type=string_type)
    except zarrow.ZarrowError:
        return  # refused before any batch
    with pytest.raises((pa.ArrowException, zarrow.ZarrowError)) as err:
        pa.table(reader)
    assert message.split(":")[0] in str(err.value) or "chunk" in str(err.value)
