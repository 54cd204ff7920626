"""Shared fixtures of the Python package's tests.

Expectations come from other libraries (zarr-python, zarrs' expected files, pyarrow),
never from zarrow's own output. The zarr-python side of the store checks is the one
tests/interop/check_read.py uses for the CLI, imported from there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
STORES = REPO / "testdata" / "stores"
BAD = REPO / "testdata" / "bad"
EXPECTED = REPO / "testdata" / "expected"
sys.path.insert(0, str(REPO / "tests" / "interop"))

def pytest_configure(config):
    # Reading obs.zarr names its non-column children (X_umap, uns) in a
    # ZarrowWarning every time; tests that expect one use pytest.warns.
    config.addinivalue_line("filterwarnings", "ignore::zarrow.ZarrowWarning")


# The 1 GB store of the streaming tests: 64 batches of 131072 strings of 120 bytes.
BIG_BATCHES = 64
BIG_ROWS = 131072
BIG_WIDTH = 120


def big_batch() -> pa.RecordBatch:
    """One batch of the big store: distinct strings, BIG_WIDTH bytes each."""
    head = pa.array([f"{i:010d}" for i in range(BIG_ROWS)])
    pad = "x" * (BIG_WIDTH - 10)
    import pyarrow.compute as pc

    return pa.record_batch({"s": pc.binary_join_element_wise(head, pad, "")})


@pytest.fixture(scope="session")
def big_store(tmp_path_factory) -> Path:
    """A ~1 GB uncompressed Zarr group (one string column of 8,388,608 strings of
    120 bytes, chunks of 32,768), written by zarrow.write batch by batch (zarr-python
    would hold it all in memory); test_streaming.py checks it against zarr-python."""
    import zarrow

    path = tmp_path_factory.mktemp("big") / "big.zarr"
    batch = big_batch()
    reader = pa.RecordBatchReader.from_batches(batch.schema, (batch for _ in range(BIG_BATCHES)))
    zarrow.write(reader, path, compressor="none", chunk_len=BIG_ROWS // 4)
    return path
