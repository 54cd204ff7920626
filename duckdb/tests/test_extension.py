"""zarrow's DuckDB extension (duckdb/, built by duckdb/build.sh) loaded into
DuckDB 2.0.0 from PyPI, as any client loads it.

Expectations come from elsewhere: DuckDB's own read_parquet over the same data
written by pyarrow, zarr-python's and anndata's reads, pyarrow's filters, and
the chunks an HTTP server was asked for against the chunks that can hold a
matching row (computed from the data).

    ZARROW_DUCKDB_EXTENSION=$(bash duckdb/build.sh | tail -1) \
        .venv/bin/python -m pytest duckdb/tests
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zarr

REPO = Path(__file__).resolve().parents[2]
STORES = REPO / "testdata" / "stores"
BAD = REPO / "testdata" / "bad"
sys.path.insert(0, str(REPO / "tests" / "interop"))

import check_read  # noqa: E402
from remote_servers import FaultProxy, http_server, moto_server  # noqa: E402

EXTENSION = os.environ.get("ZARROW_DUCKDB_EXTENSION")
pytestmark = pytest.mark.skipif(
    not EXTENSION, reason="ZARROW_DUCKDB_EXTENSION names no built extension (bash duckdb/build.sh)"
)

ROWS = 20_000
CHUNK = 500


def connect(**config) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", **config})
    con.execute(f"LOAD '{EXTENSION}'")
    return con


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = connect()
    yield c
    c.close()


def exact(value):
    """A value compared exactly: a float by its repr (NaN equals NaN, -0.0
    is not 0.0)."""
    return repr(value) if isinstance(value, float) else value


def rows(con, query: str, *params) -> list[tuple]:
    return [tuple(exact(v) for v in row) for row in con.execute(query, list(params)).fetchall()]


# ------------------------------------------------------------- reading


def test_obs_as_zarr_python_reads_it(con):
    """The sample obs (zarr-python's group of 1-D arrays): every column,
    against zarr-python's arrays; the 2-D array and the group it holds are
    named on stderr, not read."""
    path = STORES / "obs.zarr"
    group = zarr.open_group(str(path), mode="r")
    got = con.sql(f"SELECT * FROM read_zarr('{path}')").to_arrow_table()
    assert got.num_rows == 1000
    assert set(got.column_names) == {"barcode", "cell_type", "n_genes", "total_counts", "is_doublet", "raw"}
    for name in ["barcode", "cell_type", "n_genes", "total_counts", "is_doublet"]:
        want = np.asarray(group[name][:]).tolist()
        assert got.column(name).to_pylist() == want, name
    assert got.column("raw").to_pylist() == [bytes(b) for b in group["raw"][:]]
    types = dict(rows(con, f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_zarr('{path}'))"))
    assert types == {"barcode": "VARCHAR", "cell_type": "VARCHAR", "n_genes": "INTEGER",
                     "total_counts": "DOUBLE", "is_doublet": "BOOLEAN", "raw": "BLOB"}


STORE_CASES = sorted(p for p in STORES.glob("*.zarr") if p.is_dir())
# A duration DuckDB's INTERVAL cannot hold (+-2**62 ms): DuckDB's own conversion error.
BEYOND_DUCKDB = {"v3_timedelta64_ms"}


def duckdb_values(column: pa.ChunkedArray, want) -> list:
    """A column DuckDB exported, as check_read.py's expectations hold values."""
    if want.kind == "time":
        if pa.types.is_interval(column.type):
            unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[want.arrow_type.unit]
            return [None if v is None else (v.days * 86_400 * 10**9 + v.nanoseconds) // unit
                    for v in column.to_pylist()]
        return check_read.time_counts(column.cast(want.arrow_type))
    if pa.types.is_floating(column.type):
        return [None if v is None else float(v) for v in column.to_pylist()]
    return column.to_pylist()


@pytest.mark.parametrize("store", STORE_CASES, ids=lambda p: p.name.removesuffix(".zarr"))
def test_every_store_as_zarr_python_reads_it(store, con):
    """testdata/stores through read_zarr: each column's values as zarr-python
    reads them (check_read.py's expectations), or the writer's read-back for
    the stores zarr-python cannot read."""
    case = store.name.removesuffix(".zarr")
    query = f"SELECT * FROM read_zarr('{store}')"
    if case in BEYOND_DUCKDB:
        with pytest.raises(duckdb.ConversionException):
            con.sql(query).fetchall()
        return
    got = con.sql(query).to_arrow_table()
    if check_read.unreadable_reason(store) is None:
        expected = check_read.zarr_columns(store)
        assert got.column_names == list(expected)
        for name, want in expected.items():
            values = duckdb_values(got.column(name), want)
            assert len(values) == len(want.values), name
            for i, (g, w) in enumerate(zip(values, want.values)):
                assert check_read.same_value(g, w) or (g is None and w is None), (name, i, g, w)
    else:
        meta = json.loads((REPO / "testdata" / "expected" / f"{case}.json").read_text())
        if "zarrow" in meta.get("writer", ""):
            pytest.skip("expected values written by zarrow itself")
        with pa.OSFile(str(REPO / "testdata" / "expected" / f"{case}.arrow"), "rb") as f:
            want = pa.ipc.open_file(f).read_all()
        assert got.column_names == want.column_names
        for name in want.column_names:
            w = want.column(name)
            if pa.types.is_string_view(w.type) or pa.types.is_large_string(w.type):
                w = w.cast(pa.string())
            if pa.types.is_binary_view(w.type) or pa.types.is_large_binary(w.type):
                w = w.cast(pa.binary())
            assert got.column(name).to_pylist() == w.to_pylist(), name


def obs() -> pa.Table:
    """An obs-like table (as python/tests/test_pushdown.py's): samples one
    after another, a sorted day, a categorical, floats with NaN and -0.0,
    a nullable integer, a unique barcode."""
    rng = np.random.default_rng(11)
    sample = np.repeat([f"S{i:03}" for i in range(40)], ROWS // 40)
    cell_type = rng.choice(["B cell", "NK", "T cell", "Monocyte"], ROWS, p=[0.05, 0.05, 0.6, 0.3])
    cell_type[ROWS // 4:][cell_type[ROWS // 4:] == "NK"] = "T cell"
    score = rng.random(ROWS)
    score[::997] = np.nan
    score[5::1009] = -0.0
    score[7::1013] = 0.0
    mask = np.zeros(ROWS, bool)
    mask[5::1201] = True
    mask[ROWS // 2:] = False
    return pa.table({
        "barcode": pa.array([f"{i:08x}-1" for i in range(ROWS)]),
        "sample": pa.array(sample),
        "cell_type": pa.array(cell_type).dictionary_encode(),
        "day": pa.array(np.arange(ROWS) // 37, pa.int64()),
        "n_genes": pa.array(rng.integers(0, 5000, ROWS), pa.int32()),
        "score": pa.array(score),
        "umi": pa.array(rng.integers(0, 100, ROWS), pa.int32(), mask=mask),
        "flag": pa.array(rng.random(ROWS) < 0.1),
    })


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The table as an anndata obs written by zarrow (with statistics), and
    as Parquet written by pyarrow."""
    zarrow = pytest.importorskip("zarrow")
    root = tmp_path_factory.mktemp("ext")
    t = obs()
    zarrow.write(t, root / "obs.zarr", layout="anndata", chunk_len=CHUNK)
    pq.write_table(t, root / "obs.parquet")
    return root / "obs.zarr", root / "obs.parquet", t


# Conditions: pushed exactly, pushed as a superset (BETWEEN), not pushed
# (floats, functions), and mixtures.
CONDITIONS = [
    "sample = 'S017'",
    "cell_type = 'NK'",
    "cell_type IN ('NK', 'B cell')",
    "cell_type NOT IN ('T cell')",
    "day BETWEEN 100 AND 110",
    "day >= 100 AND day < 110",
    "100 < day",
    "score > 0.9",
    "score <> 0.5",
    "score = 0",
    "score >= 0.0",
    "score IS NULL OR score < 0.01",
    "umi IS NULL",
    "umi IS NOT NULL AND umi > 97",
    "sample = 'S003' OR day > 500",
    "NOT (day < 500)",
    "n_genes < 100 AND sample <> 'S001'",
    "flag AND n_genes > 4000",
    "flag = false AND day = 3",
    "sample LIKE 'S01%' AND day < 300",
    "lower(sample) = 's002' OR cell_type = 'B cell'",
    "day = 10 AND sample = 'S999'",
]


@pytest.mark.parametrize("condition", CONDITIONS)
@pytest.mark.parametrize("threads", [1, 2])
def test_filters_answer_as_read_parquet(stores, condition, threads):
    zarr_path, parquet, _ = stores
    con = connect(threads=threads)
    query = ("SELECT barcode, sample, cell_type::VARCHAR, day, n_genes, score, umi, flag FROM {} WHERE "
             + condition + " ORDER BY barcode")
    got = rows(con, query.format(f"read_zarr('{zarr_path}')"))
    want = rows(con, query.format(f"read_parquet('{parquet}')"))
    assert got == want
    count = f"SELECT count(*) FROM {{}} WHERE {condition}"
    assert rows(con, count.format(f"read_zarr('{zarr_path}')")) == [(len(want),)]


ENUM_CONDITIONS = [c for c in CONDITIONS if "cell_type" in c] + [
    "cell_type < 'NK'",
    "cell_type >= 'Monocyte' AND day < 300",
    "cell_type BETWEEN 'B cell' AND 'NK'",
    "cell_type IS NULL OR cell_type = 'B cell'",
]


@pytest.mark.parametrize("condition", ENUM_CONDITIONS)
def test_filters_on_an_enum_answer_as_read_parquet(stores, condition):
    """The categorical as an ENUM (categorical_values := false): DuckDB
    compares it with a string as the string (the same rows as read_parquet
    gives), and the comparisons pushed down are the exact ones."""
    zarr_path, parquet, _ = stores
    con = connect(threads=2)
    query = ("SELECT barcode, cell_type::VARCHAR, day FROM {} WHERE " + condition + " ORDER BY barcode")
    got = rows(con, query.format(f"read_zarr('{zarr_path}', categorical_values := false)"))
    want = rows(con, query.format(f"read_parquet('{parquet}')"))
    assert got == want


def test_nan_is_found_as_pyarrow_finds_it(stores, con):
    """`isnan` (not pushed: a function) over the floats, against pyarrow
    (DuckDB's read_parquet finds none: its statistics hold no NaN)."""
    zarr_path, _, t = stores
    want = pc.sum(pc.is_nan(t.column("score"))).as_py()
    assert want > 0
    assert rows(con, f"SELECT count(*) FROM read_zarr('{zarr_path}') WHERE isnan(score)") == [(want,)]
    assert rows(con, f"SELECT count(*) FROM read_zarr('{zarr_path}') WHERE score > 2") == [(want,)]


def test_random_filters_answer_as_read_parquet(stores):
    """Random conjunctions and disjunctions of random comparisons, with random
    constants (inside and outside each column's values), against Parquet."""
    zarr_path, parquet, t = stores
    con = connect(threads=2)
    rng = np.random.default_rng(2026)
    samples = t.column("sample").to_pylist()

    def comparison() -> str:
        column = rng.choice(["sample", "day", "n_genes", "umi", "cell_type"])
        op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "IN", "BETWEEN", "IS NULL"])
        if column in ("sample", "cell_type"):
            pool = samples if column == "sample" else ["NK", "B cell", "T cell", "Monocyte", "X"]
            value = lambda: "'" + str(rng.choice(pool + ["S", "S0405", ""])) + "'"  # noqa: E731
        else:
            value = lambda: str(int(rng.integers(-10, 5100 if column == "n_genes" else 600)))  # noqa: E731
        if op == "IN":
            return f"{column} IN ({', '.join(value() for _ in range(3))})"
        if op == "BETWEEN":
            return f"{column} BETWEEN {value()} AND {value()}"
        if op == "IS NULL":
            return f"{column} IS {'NOT ' if rng.random() < 0.5 else ''}NULL"
        return f"{column} {op} {value()}"

    for _ in range(60):
        parts = [comparison() for _ in range(int(rng.integers(1, 4)))]
        joiner = " AND " if rng.random() < 0.6 else " OR "
        condition = joiner.join(parts)
        if rng.random() < 0.2:
            condition = f"NOT ({condition})"
        query = f"SELECT barcode, umi FROM {{}} WHERE {condition} ORDER BY barcode"
        got = rows(con, query.format(f"read_zarr('{zarr_path}')"))
        want = rows(con, query.format(f"read_parquet('{parquet}')"))
        assert got == want, condition


def test_group_by_answers_as_read_parquet(stores):
    zarr_path, parquet, _ = stores
    con = connect(threads=2)
    query = ("SELECT cell_type::VARCHAR AS c, count(*), sum(n_genes), avg(day) FROM {} "
             "WHERE day > 50 GROUP BY c ORDER BY c")
    assert rows(con, query.format(f"read_zarr('{zarr_path}')")) == rows(
        con, query.format(f"read_parquet('{parquet}')")
    )
    assert rows(con, f"SELECT count(*) FROM read_zarr('{zarr_path}')") == [(ROWS,)]


def test_plain_select_keeps_the_table_order(stores, tmp_path):
    """Read by several threads (ranges side by side), the rows still come in
    the table's order: each chunk's batch index orders them."""
    zarrow = pytest.importorskip("zarrow")
    n = 300_000
    zarrow.write(pa.table({"i": pa.array(np.arange(n))}), tmp_path / "big.zarr", chunk_len=3_000)
    con = connect(threads=4)
    got = [i for (i,) in rows(con, f"SELECT i FROM read_zarr('{tmp_path / 'big.zarr'}')")]
    assert got == list(range(n))
    zarr_path, _, t = stores
    con = connect(threads=2)
    got = rows(con, f"SELECT barcode FROM read_zarr('{zarr_path}')")
    assert [b for (b,) in got] == t.column("barcode").to_pylist()
    limited = rows(con, f"SELECT barcode FROM read_zarr('{zarr_path}') LIMIT 7")
    assert [b for (b,) in limited] == t.column("barcode").to_pylist()[:7]


def test_named_options_come_from_the_declaration(stores, con):
    zarr_path, _, _ = stores
    got = con.execute(f"SELECT * FROM read_zarr('{zarr_path}', columns := ['day', 'sample']) LIMIT 1")
    assert [d[0] for d in got.description] == ["day", "sample"]
    got = con.execute(f"SELECT * FROM read_zarr('{zarr_path}', columns := 'umi,day') LIMIT 1")
    assert [d[0] for d in got.description] == ["umi", "day"]
    with pytest.raises(duckdb.Error, match='no column named "nope"'):
        con.execute(f"SELECT * FROM read_zarr('{zarr_path}', columns := ['nope'])")
    with pytest.raises(duckdb.Error, match="concurrency"):
        con.execute(f"SELECT * FROM read_zarr('{zarr_path}', concurrency := 'many')")


def test_the_replacement_scan(stores, con):
    zarr_path, parquet, _ = stores
    got = rows(con, f"SELECT count(*), min(day) FROM '{zarr_path}' WHERE sample = 'S002'")
    assert got == rows(con, f"SELECT count(*), min(day) FROM '{parquet}' WHERE sample = 'S002'")
    # A name that is no Zarr location stays DuckDB's.
    with pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM no_such_table")


def test_anndata_obs_written_by_anndata(tmp_path, con):
    ad = pytest.importorskip("anndata")
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 3000
    frame = pd.DataFrame({
        "cell_type": pd.Categorical(rng.choice(["B", "NK", "T"], n)),
        "n_genes": rng.integers(0, 1000, n).astype("int32"),
        "score": rng.random(n),
        "nullable": pd.array([None if i % 7 == 0 else i for i in range(n)], dtype="Int64"),
        "ok": rng.random(n) < 0.5,
    }, index=[f"cell{i}" for i in range(n)])
    group = zarr.open_group(str(tmp_path / "a.zarr"), mode="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ad.io.write_elem(group, "obs", frame, dataset_kwargs={"chunks": (700,)})
    obs = tmp_path / "a.zarr" / "obs"
    got = con.sql(f"SELECT * FROM read_zarr('{obs}') WHERE cell_type = 'NK' AND nullable IS NULL").to_arrow_table()
    want = frame[(frame["cell_type"] == "NK") & frame["nullable"].isna()]
    assert got.num_rows == len(want) > 0
    assert pc.cast(got.column("cell_type"), pa.string()).to_pylist() == want["cell_type"].astype(str).tolist()
    assert got.column("n_genes").to_pylist() == want["n_genes"].tolist()
    assert got.column("nullable").null_count == len(want)
    total = rows(con, f"SELECT count(*), count(nullable), sum(nullable) FROM '{obs}'")
    assert total == [(n, int(frame["nullable"].notna().sum()), int(frame["nullable"].sum()))]


def test_categoricals_as_enums_as_pandas_orders_them(tmp_path, con):
    """categorical_values := false: each anndata categorical with string
    categories is an ENUM of them in anndata's order, so DuckDB sorts,
    groups and takes min/max by category as pandas does; integer categories
    stay their values' type; nulls stay NULL."""
    ad = pytest.importorskip("anndata")
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 5000
    # Categories in an order that is not the strings' order.
    stage = pd.Categorical(rng.choice(["late", "early", "mid"], n), categories=["early", "mid", "late"],
                           ordered=True)
    stage[::11] = np.nan
    frame = pd.DataFrame({
        "stage": stage,
        "cell_type": pd.Categorical(rng.choice(["T", "NK", "B"], n), categories=["T", "NK", "B"]),
        "batch": pd.Categorical(rng.choice([3, 1, 2], n)),
        # More than 255 categories: DuckDB stores the ENUM in two bytes a row.
        "gene": pd.Categorical(rng.choice([f"g{i:03}" for i in range(300)], n)),
        "i": np.arange(n),
    }, index=[f"c{i}" for i in range(n)])
    group = zarr.open_group(str(tmp_path / "a.zarr"), mode="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ad.io.write_elem(group, "obs", frame, dataset_kwargs={"chunks": (700,)})
    obs = f"read_zarr('{tmp_path / 'a.zarr' / 'obs'}', categorical_values := false)"
    types = dict(rows(con, f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {obs})"))
    assert types["stage"] == "ENUM('early', 'mid', 'late')"
    assert types["cell_type"] == "ENUM('T', 'NK', 'B')"
    assert types["batch"] == "BIGINT"
    got = con.sql(f"SELECT i, stage::VARCHAR AS stage, cell_type::VARCHAR AS cell_type, batch FROM {obs} ORDER BY i").df()
    assert got["stage"].tolist() == [None if pd.isna(v) else v for v in frame["stage"].astype(object)]
    assert got["cell_type"].tolist() == frame["cell_type"].astype(str).tolist()
    assert got["batch"].tolist() == frame["batch"].astype(int).tolist()
    genes = rows(con, f"SELECT gene::VARCHAR FROM {obs} ORDER BY i")
    assert [g for (g,) in genes] == frame["gene"].astype(str).tolist()
    assert types["gene"].startswith("ENUM('g000', 'g001'")
    # Sorted by category (pandas sorts a categorical so; NULLs last in both).
    order = rows(con, f"SELECT stage::VARCHAR FROM {obs} ORDER BY stage, i")
    want = frame.sort_values(["stage", "i"], na_position="last")["stage"].astype(object)
    assert [v for (v,) in order] == [None if pd.isna(v) else v for v in want]
    assert rows(con, f"SELECT min(stage)::VARCHAR, max(stage)::VARCHAR FROM {obs}") == [
        (frame["stage"].min(), frame["stage"].max())]
    counts = rows(con, f"SELECT cell_type::VARCHAR, count(*) FROM {obs} GROUP BY cell_type ORDER BY cell_type")
    assert counts == [(c, int((frame["cell_type"] == c).sum())) for c in frame["cell_type"].cat.categories]
    # The same answers as the values (VARCHAR), the default.
    values = f"read_zarr('{tmp_path / 'a.zarr' / 'obs'}')"
    for condition in ["cell_type = 'NK'", "stage > 'late'", "stage IN ('mid', 'early') AND i < 3000"]:
        query = "SELECT i FROM {} WHERE " + condition + " ORDER BY i"
        assert rows(con, query.format(obs)) == rows(con, query.format(values)), condition
    # Every column and row through all threads, several vectors a chunk.
    assert rows(con, f"SELECT count(*), count(stage), count(DISTINCT cell_type) FROM {obs}") == [
        (n, int(frame["stage"].notna().sum()), 3)]
    # COPY keeps an ENUM a categorical of the same categories, in order.
    out = tmp_path / "copy.zarr"
    con.execute(f"COPY (SELECT stage, cell_type, i FROM {obs}) TO '{out}' (FORMAT zarr, layout 'anndata')")
    back = ad.io.read_elem(zarr.open_group(str(out), mode="r"))
    for name in ["stage", "cell_type"]:
        assert list(back[name].cat.categories) == list(frame[name].cat.categories), name
        assert back[name].astype(object).tolist() == frame[name].astype(object).tolist(), name


def test_categories_that_cannot_be_an_enum_stay_strings(tmp_path, con):
    """Categories with a repeated string (a hostile store) are no ENUM: the
    column is each row's category, as with categorical_values := true."""
    group = zarr.open_group(str(tmp_path / "d.zarr"), mode="w", zarr_format=3)
    group.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0",
                        "column-order": ["c"], "_index": "_index"})
    group.create_array("_index", shape=(4,), dtype=str)[:] = np.array(["a", "b", "c", "d"], dtype=object)
    c = group.create_group("c")
    c.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0", "ordered": False})
    c.create_array("categories", shape=(3,), dtype=str)[:] = np.array(["x", "y", "x"], dtype=object)
    c.create_array("codes", data=np.array([0, 1, 2, -1], dtype="int8"))
    store = tmp_path / "d.zarr"
    types = dict(rows(con, f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "
                           f"read_zarr('{store}', categorical_values := false))"))
    assert types["c"] == "VARCHAR"
    got = rows(con, f"SELECT c FROM read_zarr('{store}', categorical_values := false)")
    assert got == [("x",), ("y",), ("x",), (None,)]


def test_an_enum_whose_categories_change_after_binding_is_an_error(tmp_path, con):
    """A prepared query bound to the categories [a, b]; the store is then
    rewritten with categories [b, a] (the same count, so every code still
    fits): the query gives the new rows or an error, never the old
    categories' strings for the new codes."""
    zarrow = pytest.importorskip("zarrow")
    store = tmp_path / "s.zarr"

    def write(categories, codes):
        t = pa.table({"k": pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), pa.array(categories))})
        zarrow.write(t, store, layout="anndata", mode="overwrite")

    write(["a", "b"], [0, 0, 1])
    con.execute(f"PREPARE q AS SELECT k::VARCHAR FROM read_zarr('{store}', categorical_values := false)")
    assert rows(con, "EXECUTE q") == [("a",), ("a",), ("b",)]
    write(["b", "a"], [0, 0, 1])
    try:
        got = rows(con, "EXECUTE q")
    except duckdb.Error as e:
        assert "changed since the query was planned" in str(e)
    else:
        assert got == [("b",), ("b",), ("a",)]


def test_a_table_read_again_sees_what_was_written_since(tmp_path, con):
    """The extension keeps the tables it bound (a second query reads no
    metadata while the store is unchanged): each query still answers from
    the store as it is, with rows appended, a statistics file rewritten, and
    other columns written since, against pyarrow's rows."""
    zarrow = pytest.importorskip("zarrow")
    store = tmp_path / "k.zarr"
    first = pa.table({"n": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{i % 7}" for i in range(1000)])})
    zarrow.write(first, store, chunk_len=100)
    query = f"SELECT count(*), sum(n) FROM read_zarr('{store}') WHERE n >= 900"
    for _ in range(2):
        assert rows(con, query) == [(100, sum(range(900, 1000)))]
    more = pa.table({"n": pa.array(range(1000, 1250), pa.int64()), "s": pa.array(["w"] * 250)})
    zarrow.write(more, store, mode="append")
    assert rows(con, query) == [(350, sum(range(900, 1250)))]
    assert rows(con, f"SELECT count(*) FROM read_zarr('{store}') WHERE s = 'w'") == [(250,)]
    other = pa.table({"n": pa.array([5, 950, 2000], pa.int64())})
    zarrow.write(other, store, mode="overwrite")
    assert rows(con, query) == [(2, 950 + 2000)]
    assert rows(con, f"SELECT * FROM read_zarr('{store}') ORDER BY n") == [(5,), (950,), (2000,)]


def test_xarray_cf_decoding_as_xarray_reads_it(tmp_path, con):
    """A 1-D dataset written by xarray (CF-encoded times, a scaled and offset
    float packed as int16, a fill value): read_zarr decodes it as xarray's
    own to_dataframe does; decode_cf := false gives the stored values."""
    xr = pytest.importorskip("xarray")
    import pandas as pd

    n = 1000
    times = pd.date_range("2020-01-01", periods=n, freq="h")
    temp = np.round(np.linspace(-5.0, 30.0, n), 1)
    temp[::97] = np.nan
    ds = xr.Dataset(
        {"temp": ("time", temp), "station": ("time", np.array([f"st{i % 7}" for i in range(n)]))},
        coords={"time": times},
    )
    ds["temp"].encoding = {"dtype": "int16", "scale_factor": 0.1, "add_offset": 10.0, "_FillValue": -32768}
    ds.to_zarr(tmp_path / "x.zarr", zarr_format=3, consolidated=False)
    want = xr.open_zarr(tmp_path / "x.zarr", consolidated=False).to_dataframe().reset_index()
    got = con.sql(f"SELECT time, temp, station FROM read_zarr('{tmp_path / 'x.zarr'}') ORDER BY time").df()
    assert [t.to_datetime64() for t in got["time"]] == list(want["time"].to_numpy())
    assert np.allclose(got["temp"].to_numpy(dtype=float), want["temp"].to_numpy(), equal_nan=True)
    assert got["station"].tolist() == want["station"].tolist()
    raw = rows(con, f"SELECT min(temp), max(temp) FROM read_zarr('{tmp_path / 'x.zarr'}', decode_cf := false)")
    stored = np.asarray(zarr.open_array(str(tmp_path / "x.zarr" / "temp"), mode="r")[:])
    assert raw == [(int(stored.min()), int(stored.max()))]


def test_a_long_table_is_xarrays_frame(tmp_path):
    """long := true: a gridded dataset written by xarray, one row per grid
    point, as xarray's to_dataframe() gives it (row order kept across two
    threads), and a filter and a projection DuckDB applies over it."""
    xr = pytest.importorskip("xarray")
    import pandas as pd

    rng = np.random.default_rng(2)
    time_, lat, lon = 30, 40, 50
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), rng.normal(280, 5, (time_, lat, lon)).astype("float32")),
            "orog": (("lat", "lon"), rng.random((lat, lon)) * 1000),
        },
        coords={
            "time": pd.date_range("2021-01-01", periods=time_, freq="D"),
            "lat": np.linspace(-60, 60, lat),
            "lon": np.arange(lon, dtype="float32") * 7.2,
        },
    )
    ds.to_zarr(tmp_path / "g.zarr", zarr_format=3, consolidated=False,
               encoding={"t2m": {"chunks": (7, 40, 50)}})
    # xarray orders a frame's dimensions as they first appear over the
    # variables in the order the store lists them, which a directory's listing
    # leaves to the file system; zarrow's rule (the variable with the most
    # dimensions first) is xarray's frame in that variable's order.
    opened = xr.open_zarr(tmp_path / "g.zarr", consolidated=False)
    want = opened.to_dataframe(dim_order=list(opened["t2m"].dims)).reset_index()
    con = connect(threads=2)
    table = f"read_zarr('{tmp_path / 'g.zarr'}', long := true)"
    got = con.sql(f"SELECT * FROM {table}").df()
    # The dimensions first, in order; then the data variables (by name: a
    # store without consolidated metadata gives xarray its listing's order).
    assert list(got.columns[:3]) == list(want.columns[:3]) == ["time", "lat", "lon"]
    assert sorted(got.columns[3:]) == sorted(want.columns[3:])
    assert len(got) == time_ * lat * lon
    assert [t.to_datetime64() for t in got["time"]] == list(want["time"].to_numpy())
    for name in ["lat", "lon", "t2m", "orog"]:
        assert got[name].to_numpy().tolist() == want[name].to_numpy().tolist(), name
    hot = want[(want["t2m"] > 290) & (want["lat"] > 0)]
    [(count, total)] = con.execute(f"SELECT count(*), sum(orog) FROM {table} WHERE t2m > 290 AND lat > 0").fetchall()
    assert count == len(hot) > 0
    assert np.isclose(total, hot["orog"].sum(), rtol=1e-12)
    only = rows(con, f"SELECT count(*) FROM read_zarr('{tmp_path / 'g.zarr'}', long := true, columns := 'orog')")
    assert only == [(lat * lon,)]


# ------------------------------------------------- what a filter fetches


def chunk_gets(proxy: FaultProxy) -> dict[str, set[int]]:
    fetched: dict[str, set[int]] = {}
    for method, path, _ in proxy.requests:
        match = re.search(r"/obs\.zarr/([^/]+)/c/([0-9]+)$", path)
        if method == "GET" and match:
            fetched.setdefault(match.group(1), set()).add(int(match.group(2)))
    return fetched


@pytest.mark.parametrize("threads", [1, 2])
def test_a_filter_fetches_only_the_chunks_that_can_match(tmp_path, threads):
    """Over HTTP: the filter column's chunks that statistics cannot exclude,
    and the projected column's chunks holding a matching row, no others."""
    zarrow = pytest.importorskip("zarrow")
    t = obs().select(["barcode", "sample", "day", "n_genes", "score"])
    zarrow.write(t, tmp_path / "obs.zarr", chunk_len=CHUNK)
    sample = np.asarray(t.column("sample").to_pylist())
    holding = set((np.flatnonzero(sample == "S017") // CHUNK).tolist())
    with http_server(tmp_path) as web:
        proxy = FaultProxy(web)
        with proxy.serve() as url:
            con = connect(threads=threads)
            proxy.requests.clear()
            got = rows(con, f"SELECT n_genes FROM read_zarr('{url}/obs.zarr') WHERE sample = 'S017'")
            fetched = chunk_gets(proxy)
    want = np.asarray(t.column("n_genes"))[sample == "S017"].tolist()
    assert sorted(v for (v,) in got) == sorted(want)
    assert set(fetched) <= {"sample", "n_genes"}, fetched
    assert fetched.get("sample", set()) <= holding, fetched
    assert fetched.get("n_genes", set()) <= holding, fetched
    assert 0 < len(holding) < ROWS // CHUNK


def test_s3_on_moto(tmp_path):
    """s3:// through the environment's credentials and endpoint, as the
    command line reads it."""
    zarrow = pytest.importorskip("zarrow")
    import boto3

    t = obs().select(["sample", "day", "n_genes"])
    zarrow.write(t, tmp_path / "obs.zarr", chunk_len=CHUNK)
    pq.write_table(t, tmp_path / "obs.parquet")
    with moto_server() as endpoint:
        env = {
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
            s3.create_bucket(Bucket="zarrow-test")
            for f in (tmp_path / "obs.zarr").rglob("*"):
                if f.is_file():
                    s3.upload_file(str(f), "zarrow-test", "obs.zarr/" + f.relative_to(tmp_path / "obs.zarr").as_posix())
            con = connect(threads=2)
            query = "SELECT sample, count(*), sum(n_genes) FROM {} WHERE day BETWEEN 40 AND 90 GROUP BY sample ORDER BY sample"
            got = rows(con, query.format("'s3://zarrow-test/obs.zarr'"))
            want = rows(con, query.format(f"read_parquet('{tmp_path / 'obs.parquet'}')"))
            assert got == want and len(got) > 0
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def test_the_docs_first_example_runs():
    """docs/duckdb.md's first SQL block, run as written (the LOAD path is the
    built extension's), against zarr-python's values."""
    text = (REPO / "docs" / "duckdb.md").read_text()
    block = text.split("```sql\n", 1)[1].split("```", 1)[0]
    statements = [s.strip() for s in re.sub(r"--[^\n]*", "", block).split(";") if s.strip()]
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    results = []
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        for statement in statements:
            if statement.startswith("LOAD "):
                statement = f"LOAD '{EXTENSION}'"
            results.append(con.execute(statement).fetchall())
    finally:
        os.chdir(cwd)
    group = zarr.open_group(str(STORES / "obs.zarr"), mode="r")
    types = np.asarray(group["cell_type"][:]).tolist()
    genes = np.asarray(group["n_genes"][:])
    counts = sorted(((t, types.count(t)) for t in set(types)), key=lambda c: (-c[1], c[0]))
    assert results[1] == counts[:3]
    assert results[2] == [(sum(1 for t, g in zip(types, genes) if t == "B cell" and g > 1000),)]


# ------------------------------------------------------------- Icechunk

# icechunk-python needs Python >= 3.12: its own venv (tests/interop/icechunk_venv.sh),
# named by ZARROW_ICECHUNK_PYTHON; .ci/run sets it.
ICECHUNK_PYTHON = os.environ.get("ZARROW_ICECHUNK_PYTHON")

MAKE_REPO = """
import sys, numpy as np, zarr, icechunk
repo = icechunk.Repository.create(icechunk.local_filesystem_storage(sys.argv[1]))
s = repo.writable_session("main")
g = zarr.group(store=s.store)
g.create_array("x", shape=(5000,), chunks=(1000,), dtype="int64")[:] = np.arange(5000)
g.create_array("w", shape=(5000,), chunks=(1000,), dtype=str)[:] = np.array([f"w{i % 13}" for i in range(5000)])
snap = s.commit("first")
repo.create_tag("v1", snap)
s = repo.writable_session("main")
zarr.open_array(store=s.store, path="x")[:10] = -1
s.commit("second")
print(snap)
"""

READ_REPO = """
import json, sys, numpy as np, zarr, icechunk
repo = icechunk.Repository.open(icechunk.local_filesystem_storage(sys.argv[1]))
messages = [c.message for c in repo.ancestry(branch="main")]
g = zarr.open_group(store=repo.readonly_session(branch="main").store, mode="r")["copied"]
print(json.dumps({"messages": messages, "k": np.asarray(g["k"][:]).tolist()}))
"""


@pytest.mark.skipif(not ICECHUNK_PYTHON, reason="ZARROW_ICECHUNK_PYTHON names no icechunk-python venv")
def test_icechunk_at_a_tag_a_snapshot_and_a_branch_and_copy_as_one_commit(tmp_path, con):
    import subprocess

    root = tmp_path / "repo"
    made = subprocess.run([ICECHUNK_PYTHON, "-c", MAKE_REPO, str(root)], capture_output=True, text=True,
                          timeout=300, check=True)
    snapshot = made.stdout.strip().splitlines()[-1]
    url = f"icechunk+file://{root}"
    first = (5000, sum(range(5000)))
    second = (5000, sum(range(10, 5000)) - 10)
    query = "SELECT count(*), sum(x) FROM read_zarr('{}')"
    assert rows(con, query.format(f"{url}?tag=v1")) == [first]
    assert rows(con, query.format(f"{url}?snapshot={snapshot}")) == [first]
    assert rows(con, query.format(f"{url}?branch=main")) == [second]
    assert rows(con, f"SELECT count(*) FROM '{url}?tag=v1' WHERE w = 'w3'") == [(len(range(3, 5000, 13)),)]
    con.execute(f"COPY (SELECT i AS k FROM range(100) t(i)) TO '{url}?branch=main&path=copied' "
                "(FORMAT zarr, message 'from duckdb')")
    read = subprocess.run([ICECHUNK_PYTHON, "-c", READ_REPO, str(root)], capture_output=True, text=True,
                          timeout=300, check=True)
    got = json.loads(read.stdout)
    assert got["k"] == list(range(100))
    assert got["messages"][:3] == ["from duckdb", "second", "first"]


# ------------------------------------------------------------- writing


def test_copy_to_zarr_is_read_back_by_zarr_python_with_statistics(tmp_path, con):
    """COPY (query) TO 'x.zarr' (FORMAT zarr): zarr-python reads DuckDB's rows;
    the independent statistics reader (written from the spec) prunes by the
    statistics the write recorded."""
    import stats_reader

    out = tmp_path / "out.zarr"
    query = ("SELECT i, 'v' || (i % 7) AS s, i / 4 AS f, i % 3 = 0 AS b FROM range(50000) t(i)")
    con.execute(f"COPY ({query}) TO '{out}' (FORMAT zarr, chunk_len 5000)")
    want = con.sql(query).fetchall()
    group = zarr.open_group(str(out), mode="r")
    got = list(zip(*(np.asarray(group[name][:]).tolist() for name in ["i", "s", "f", "b"])))
    assert got == want
    keep = stats_reader.prune_local(str(out / "i"), {"op": "lt", "value": 7000})
    assert keep == [True, True] + [False] * 8
    # Read back by the extension too, pruned.
    assert rows(con, f"SELECT count(*), sum(i) FROM '{out}' WHERE i < 7000") == [(7000, sum(range(7000)))]


def test_copy_replaces_a_store_as_copy_replaces_a_file(tmp_path, con):
    out = tmp_path / "out.zarr"
    con.execute(f"COPY (SELECT 1 AS x) TO '{out}' (FORMAT zarr)")
    con.execute(f"COPY (SELECT 2 AS y) TO '{out}' (FORMAT zarr)")
    assert rows(con, f"SELECT * FROM '{out}'") == [(2,)]
    with pytest.raises(duckdb.Error, match="exists"):
        con.execute(f"COPY (SELECT 3 AS y) TO '{out}' (FORMAT zarr, mode 'create')")
    # A directory that is no Zarr store is never replaced.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine")
    with pytest.raises(duckdb.Error, match="zarrow"):
        con.execute(f"COPY (SELECT 1 AS x) TO '{tmp_path / 'mine'}' (FORMAT zarr)")
    assert (tmp_path / "mine" / "keep.txt").read_text() == "mine"


def test_a_failed_copy_writes_nothing(tmp_path, con):
    out = tmp_path / "out.zarr"
    failing = "SELECT i, CASE WHEN i = 90000 THEN error('boom') ELSE i END AS j FROM range(100000) t(i)"
    with pytest.raises(duckdb.Error, match="boom"):
        con.execute(f"COPY ({failing}) TO '{out}' (FORMAT zarr, chunk_len 1000)")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # Nulls in a plain layout: zarrow's typed error, nothing written; the
    # anndata layout keeps them (its nullable arrays), read back as NULLs.
    nulls = "SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE i END AS n FROM range(1000) t(i)"
    with pytest.raises(duckdb.Error, match="null"):
        con.execute(f"COPY ({nulls}) TO '{out}' (FORMAT zarr)")
    assert not out.exists()
    con.execute(f"COPY ({nulls}) TO '{out}' (FORMAT zarr, layout 'anndata')")
    assert rows(con, f"SELECT count(*), count(n), sum(n) FROM '{out}'") == rows(
        con, f"SELECT count(*), count(n), sum(n) FROM ({nulls})")
    with pytest.raises(duckdb.Error, match="no option"):
        con.execute(f"COPY (SELECT 1 AS x) TO '{tmp_path / 'o.zarr'}' (FORMAT zarr, bogus 3)")


# ----------------------------------------------------- host stays up


def test_a_bad_location_is_an_error_and_the_database_goes_on(con):
    with pytest.raises(duckdb.Error, match="zarrow"):
        con.execute("SELECT * FROM read_zarr('/no/such/store.zarr')")
    with pytest.raises(duckdb.Error, match="zarrow"):
        con.execute("SELECT * FROM read_zarr('nope://x')")
    assert rows(con, f"SELECT count(*) FROM read_zarr('{STORES / 'obs.zarr'}')") == [(1000,)]


def test_every_bad_store_is_an_error_not_a_crash(con):
    """testdata/bad (hostile and malformed stores): each read fails with
    zarrow's error, or reads; the process and the database survive them all."""
    expected = json.loads((BAD / "expected.json").read_text())
    failed = 0
    for name in sorted(expected):
        path = BAD / f"{name}.zarr"
        if not path.exists():
            continue
        try:
            con.execute(f"SELECT * FROM read_zarr('{path}')").fetchall()
        except duckdb.Error as e:
            assert "zarrow" in str(e), (name, str(e))
            assert not isinstance(e, duckdb.FatalException), (name, str(e))
            failed += 1
    assert failed >= len(expected) // 2
    assert rows(con, "SELECT 42") == [(42,)]


FUZZ = REPO / "fuzz"


def corpus(target: str) -> list[Path]:
    """A fuzz target's corpus and its regressions (files that once crashed a
    decoder): hostile bytes."""
    files = sorted((FUZZ / "corpus" / target).glob("*")) + sorted((FUZZ / "regressions" / target).glob("*"))
    return [f for f in files if f.is_file() and f.name != "README.md"]


@pytest.mark.parametrize("target,name", [("metadata_v3", "zarr.json"), ("metadata_v2", ".zarray")])
def test_hostile_metadata_is_an_error_not_a_crash(tmp_path, con, target, name):
    """Every metadata document of the fuzz corpora as a store's one array,
    read through read_zarr: rows or zarrow's error, never a crash; the
    database answers after them all."""
    files = corpus(target)
    assert len(files) > 500
    for i, f in enumerate(files):
        store = tmp_path / f"{i}.zarr"
        store.mkdir()
        (store / name).write_bytes(f.read_bytes())
        try:
            con.execute(f"SELECT * FROM read_zarr('{store}') LIMIT 10").fetchall()
        except duckdb.Error as e:
            assert not isinstance(e, (duckdb.FatalException, duckdb.InternalException)), (f.name, str(e))
    assert rows(con, "SELECT 42") == [(42,)]


def test_hostile_statistics_never_change_an_answer(tmp_path, con):
    """Every statistics file of the fuzz corpora in place of a real one: a
    filtered query answers as with the statistics ignored (`use_stats :=
    false`), or fails with zarrow's error; never a crash, never fewer rows."""
    zarrow = pytest.importorskip("zarrow")
    store = tmp_path / "s.zarr"
    zarrow.write(pa.table({"x": pa.array(np.arange(4000) % 1000, pa.int64())}), store, chunk_len=500)
    stats = store / "x" / "zarrow.stats"
    assert stats.exists()
    query = "SELECT count(*), sum(x) FROM read_zarr('{}'{}) WHERE x BETWEEN 100 AND 130"
    want = rows(con, query.format(store, ", use_stats := false"))
    files = corpus("stats")
    assert len(files) > 100
    for f in files:
        stats.write_bytes(f.read_bytes())
        try:
            got = rows(con, query.format(store, ""))
        except duckdb.Error as e:
            assert not isinstance(e, (duckdb.FatalException, duckdb.InternalException)), (f.name, str(e))
            continue
        assert got == want, f.name


def test_an_interrupted_query_stops(tmp_path):
    zarrow = pytest.importorskip("zarrow")
    n = 2_000_000
    t = pa.table({"s": pa.array([f"row-{i}" for i in range(n)]), "i": pa.array(np.arange(n))})
    zarrow.write(t, tmp_path / "big.zarr", chunk_len=50_000)
    con = connect(threads=2)
    timer = threading.Timer(0.3, con.interrupt)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(duckdb.InterruptException):
            con.execute(f"SELECT s, i FROM read_zarr('{tmp_path / 'big.zarr'}') ORDER BY s DESC").fetchall()
    finally:
        timer.cancel()
    assert time.monotonic() - started < 60
    assert rows(con, f"SELECT count(*) FROM read_zarr('{tmp_path / 'big.zarr'}') WHERE i < 10") == [(10,)]


def test_filters_with_a_null_in_a_set_answer_as_duckdbs_own_table(tmp_path, con):
    """Filters that fold to constants once their NULL is seen (`NOT (i IN (7,
    NULL))` holds for no row) keep the rows DuckDB keeps over the same table
    in memory, with and without a limit: the scan drops no filter it is given."""
    zarrow = pytest.importorskip("zarrow")
    t = pa.table({"i": pa.array([1, 7, 3, 7, 2, 3], pa.int64()), "row": pa.array(range(6), pa.int64())})
    zarrow.write(t, tmp_path / "t.zarr", chunk_len=2)
    con.register("m", t)
    for where in ["NOT (i IN (7, NULL))", "i NOT IN (3, NULL)", "i NOT IN (3, NULL) OR i = 7",
                  "i IN (7, NULL)", "NOT (i IN (7, NULL)) OR row < 2"]:
        for limit in ["", " LIMIT 1"]:
            query = f"SELECT row FROM {{}} WHERE {where} ORDER BY row{limit}"
            got = rows(con, query.format(f"read_zarr('{tmp_path / 't.zarr'}')"))
            assert got == rows(con, query.format("m")), (where, limit)
