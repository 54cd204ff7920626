"""Batches stream: reading a ~1 GB store keeps memory near zarrow's read-ahead, far
below the store (measured in a subprocess); Ctrl-C stops a long read between
batches; batches cross into pyarrow without a copy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest
import zarr

import zarrow
from conftest import BIG_BATCHES, BIG_ROWS, BIG_WIDTH, STORES, big_batch

BIG_BYTES = BIG_BATCHES * BIG_ROWS * BIG_WIDTH  # the strings' bytes: 1,006,632,960
# zarrow keeps up to READ_AHEAD_BYTES (zarrow::read::READ_AHEAD_BYTES, 256 MiB) of
# chunks in flight; the batch being consumed and the allocator's slack come on top.
READ_AHEAD = 256 << 20


def run_child(code: str, *args: str, timeout: float = 300) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_big_store_holds_what_was_written(big_store):
    # zarr-python reads the same values at a few places (not all: 1 GB of Python
    # strings would take minutes).
    arr = zarr.open_group(str(big_store), mode="r")["s"]
    assert arr.shape == (BIG_BATCHES * BIG_ROWS,)
    want = big_batch().column("s").to_pylist()
    for start in [0, BIG_ROWS - 3, 17 * BIG_ROWS + 5000, BIG_BATCHES * BIG_ROWS - 10]:
        got = pa.table(zarrow.read(big_store, rows=(start, start + 10))).column("s").to_pylist()
        assert got == np.asarray(arr[start:start + 10]).tolist()
        assert got == [want[(start + i) % BIG_ROWS] for i in range(10)]


# The peak resident set of the child itself: /proc's VmHWM, which exec resets
# (ru_maxrss keeps the forking parent's peak, here pytest's, across exec on Linux).
PEAK = """
    import json, sys
    import pyarrow as pa
    import zarrow
    rows = nbytes = 0
    for batch in pa.RecordBatchReader.from_stream(zarrow.read(sys.argv[1])):
        rows += batch.num_rows
        nbytes += batch.column(0).buffers()[2].size
    with open("/proc/self/status") as f:
        peak = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
    print(json.dumps({"rows": rows, "bytes": nbytes, "peak": peak}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_reading_1gb_streams_in_bounded_memory(big_store):
    small = run_child(PEAK, str(STORES / "v3_string.zarr"))  # the interpreter, pyarrow, zarrow
    big = run_child(PEAK, str(big_store))
    assert big["rows"] == BIG_BATCHES * BIG_ROWS
    assert big["bytes"] >= BIG_BYTES  # every string's bytes went through
    grew = big["peak"] - small["peak"]
    print(f"peak RSS: {small['peak'] >> 20} MiB baseline, +{grew >> 20} MiB reading {big['bytes'] >> 20} MiB")
    assert grew < READ_AHEAD + (96 << 20), f"reading grew the peak RSS by {grew >> 20} MiB"
    assert grew < big["bytes"] / 3


INTERRUPT = """
    import json, os, signal, sys, threading, time
    import pyarrow as pa
    import zarrow
    path, how = sys.argv[1], sys.argv[2]

    def consume(reader):
        if how == "pyarrow":
            return pa.table(reader).num_rows  # pyarrow pulls every batch in C++
        return sum(b.num_rows for b in reader)  # zarrow.Reader.__next__

    consume(zarrow.read(path, batch_size=4096))  # the page cache warmed
    start = time.perf_counter()
    rows = consume(zarrow.read(path, batch_size=4096))
    full = time.perf_counter() - start
    # Ctrl-C a fifth of the way into the same read.
    threading.Timer(full / 5, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.perf_counter()
    try:
        try:
            consume(zarrow.read(path, batch_size=4096))
            outcome = "completed"
        except KeyboardInterrupt:
            outcome = "KeyboardInterrupt"
        except Exception as e:
            # A consumer (pyarrow) reports the stream's failure as its own
            # error; the KeyboardInterrupt must follow before any more Python
            # code runs (a loop of bytecode checks for it at every jump).
            for _ in range(1000):
                pass
            outcome = "only the consumer's error: " + repr(e)
    except KeyboardInterrupt as e:
        outcome = "KeyboardInterrupt"
    stopped = time.perf_counter() - start
    print(json.dumps({"rows": rows, "full": full, "stopped": stopped, "outcome": outcome}))
"""


@pytest.mark.parametrize("how", ["pyarrow", "iteration"])
def test_ctrl_c_interrupts_a_long_read(big_store, how):
    got = run_child(INTERRUPT, str(big_store), how)
    assert got["rows"] == BIG_BATCHES * BIG_ROWS
    assert got["outcome"] == "KeyboardInterrupt", got
    # Stopped soon after the signal, not at the end of the read.
    assert got["stopped"] < got["full"] * 0.6, got


def test_batches_cross_without_a_copy(tmp_path):
    # pyarrow counts every byte its memory pool allocates: a copy of the batches into
    # pyarrow would count at least their size. zarrow's buffers are handed over.
    path = tmp_path / "t.zarr"
    n = 2_000_000
    zarrow.write(pa.table({"s": pa.array([f"value-{i:012d}" for i in range(n)]),
                           "x": pa.array(np.arange(n, dtype=np.float64))}), path)
    before = pa.total_allocated_bytes()
    table = pa.table(zarrow.read(path))
    imported = pa.total_allocated_bytes() - before
    assert table.nbytes > 50_000_000
    assert imported < table.nbytes / 100, (imported, table.nbytes)
    # The measure sees copies: one made by pyarrow itself counts in full.
    before = pa.total_allocated_bytes()
    combined = table.combine_chunks()
    assert pa.total_allocated_bytes() - before >= table.nbytes * 0.9
    assert combined.num_rows == n
