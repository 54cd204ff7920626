"""Filters pushed into zarrow from Polars (``zarrow.scan``) and DuckDB
(``zarrow.dataset``): their answers against the same engine over the same data
written by pyarrow to Parquet, the requests a pushed filter saves counted on an
HTTP server against the chunks that can hold a matching row (computed from the
data), and the scans that are not pushed (a long table, an N-d array, a filter
zarrow does not take) answering as before."""

from __future__ import annotations

import re
import warnings

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import zarr
from polars.testing import assert_frame_equal

import zarrow
from conftest import STORES
from remote_servers import FaultProxy, http_server

ROWS = 20_000
CHUNK = 500


def obs() -> pa.Table:
    """An obs-like table: samples stored one after another, a sorted day, a
    categorical, a float with NaNs, an integer with nulls (anndata's
    nullable-integer: Zarr floats hold no nulls, a null float is written as
    NaN), a unique barcode."""
    rng = np.random.default_rng(11)
    sample = np.repeat([f"S{i:03}" for i in range(40)], ROWS // 40)
    cell_type = rng.choice(["B cell", "NK", "T cell", "Monocyte"], ROWS, p=[0.05, 0.05, 0.6, 0.3])
    # NK cells only in the first quarter: their codes' chunks can be told apart.
    cell_type[ROWS // 4:][cell_type[ROWS // 4:] == "NK"] = "T cell"
    score = rng.random(ROWS)
    score[::997] = np.nan
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
    })


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The table as an anndata obs written by zarrow (with statistics), and as
    Parquet written by pyarrow."""
    root = tmp_path_factory.mktemp("pushdown")
    t = obs()
    zarrow.write(t, root / "obs.zarr", layout="anndata", chunk_len=CHUNK)
    pq.write_table(t, root / "obs.parquet")
    return root / "obs.zarr", root / "obs.parquet", t


# (Polars predicate, SQL condition): each pushed whole.
FILTERS = [
    (pl.col("sample") == "S017", "sample = 'S017'"),
    (pl.col("cell_type") == "NK", "cell_type = 'NK'"),
    (pl.col("cell_type").is_in(["NK", "B cell"]), "cell_type IN ('NK', 'B cell')"),
    (pl.col("day").is_between(100, 110), "day BETWEEN 100 AND 110"),
    (pl.col("score") > 0.9, "score > 0.9"),
    (pl.col("score") != 0.5, "score <> 0.5"),
    (pl.col("score").is_nan(), None),
    (pl.col("score").is_null() | (pl.col("score") < 0.01), "score IS NULL OR score < 0.01"),
    (pl.col("umi").is_null(), "umi IS NULL"),
    (pl.col("umi").is_not_null() & (pl.col("umi") > 97), "umi IS NOT NULL AND umi > 97"),
    ((pl.col("sample") == "S003") | (pl.col("day") > 500), "sample = 'S003' OR day > 500"),
    (~(pl.col("day") < 500), "NOT (day < 500)"),
    ((pl.col("n_genes") < 100) & (pl.col("sample") != "S001"), "n_genes < 100 AND sample <> 'S001'"),
]
IDS = [sql or str(predicate) for predicate, sql in FILTERS]
# DuckDB's conditions (its `isnan` over Parquet finds no NaN: left out).
SQL = [sql for _, sql in FILTERS if sql is not None]


def as_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """Categoricals as their strings (Parquet's dictionary and anndata's
    categories need not read back as the same Polars type)."""
    return frame.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))


@pytest.mark.parametrize("predicate,sql", FILTERS, ids=IDS)
def test_polars_scan_answers_as_scan_parquet(stores, predicate, sql):
    zarr_path, parquet, _ = stores
    columns = ["barcode", "sample", "cell_type", "day", "score", "umi"]
    got = zarrow.scan(zarr_path).filter(predicate).select(columns).collect()
    want = pl.scan_parquet(parquet).filter(predicate).select(columns).collect()
    assert got.height > 0
    # Rows in the table's order, as Parquet's.
    assert_frame_equal(as_strings(got), as_strings(want))


def test_matches_of_many_blocks_gather_a_categorical_of_many_categories(tmp_path):
    """A pushed filter's matches come from many blocks, each read with its own
    copy of an anndata categorical's 100 categories (8-bit codes): they are
    gathered into larger batches by their codes, not by merging the copies
    (which outgrow the codes: arrow panics), and answer as Polars over the
    frame anndata wrote."""
    ad = pytest.importorskip("anndata")
    import pandas as pd

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({
        "c": pd.Categorical([f"type_{i:03}" for i in rng.integers(0, 100, ROWS)]),
        "s": pd.Categorical([f"S{i:02}" for i in rng.integers(0, 10, ROWS)]),
        "n": rng.integers(0, 1000, ROWS).astype("int32"),
    }, index=[str(i) for i in range(ROWS)])
    group = zarr.open_group(str(tmp_path / "a.zarr"), mode="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zarr's note on sharding
        ad.io.write_elem(group, "obs", frame, dataset_kwargs={"chunks": (CHUNK,)})
    path = tmp_path / "a.zarr" / "obs"
    expected = pl.from_pandas(frame.reset_index(drop=True))
    for predicate in [pl.col("n") < 5, pl.col("c") == "type_007"]:
        for columns in [["s", "n"], ["c", "n"]]:
            got = zarrow.scan(path).filter(predicate).select(columns).collect()
            want = expected.filter(predicate).select(columns)
            assert got.height > 0
            assert_frame_equal(as_strings(got), as_strings(want))
    # The same through DuckDB's scanner.
    got = zarrow.dataset(path).to_table(columns=["c", "n"], filter=pc.field("n") < 5)
    want = expected.filter(pl.col("n") < 5)
    assert pc.cast(got.column("c"), pa.string()).to_pylist() == want["c"].cast(pl.String).to_list()


@pytest.mark.parametrize("sql", SQL)
def test_duckdb_over_the_dataset_answers_as_read_parquet(stores, sql):
    zarr_path, parquet, _ = stores
    t = zarrow.dataset(zarr_path)  # noqa: F841 (named in the query)
    query = "SELECT barcode, sample, cell_type, day, score, umi FROM {} WHERE " + sql + " ORDER BY barcode"
    got = duckdb.sql(query.format("t")).pl()
    want = duckdb.sql(query.format(f"read_parquet('{parquet}')")).pl()
    assert got.height > 0
    assert_frame_equal(as_strings(got), as_strings(want))
    assert duckdb.sql(f"SELECT count(*) FROM t WHERE {sql}").fetchall() == [(want.height,)]


def pa_filter(sql: str) -> ds.Expression:
    """The SQL conditions above as pyarrow expressions, with SQL's NaN (the
    greatest float, equal to itself)."""
    score, nan = ds.field("score"), pc.is_nan(ds.field("score"))
    return {
        "sample = 'S017'": ds.field("sample") == "S017",
        "day BETWEEN 100 AND 110": (ds.field("day") >= 100) & (ds.field("day") <= 110),
        "score > 0.9": (score > 0.9) | nan,
        "umi IS NULL": ds.field("umi").is_null(),
    }[sql]


@pytest.mark.parametrize("sql", ["sample = 'S017'", "day BETWEEN 100 AND 110", "score > 0.9", "umi IS NULL"])
def test_a_dataset_scanner_pushes_its_filter(stores, sql):
    """The scanner DuckDB uses, called as DuckDB calls it: pushed (no reason
    kept), and the rows pyarrow's own filter keeps."""
    zarr_path, _, t = stores
    scanner = zarrow.dataset(zarr_path).scanner(columns=["barcode", "score", "umi"], filter=pa_filter(sql))
    got = scanner.to_table()
    assert scanner.not_pushed is None
    want = t.filter(pa_filter(sql)).select(["barcode", "score", "umi"])
    assert got.schema == scanner.projected_schema
    assert_frame_equal(pl.from_arrow(got), pl.from_arrow(want))
    assert zarrow.dataset(zarr_path).count_rows(filter=pa_filter(sql)) == want.num_rows


def test_a_polars_predicate_pushed_in_part(stores):
    """A part Polars cannot give as a pyarrow expression (`str.ends_with`) is
    applied by Polars to the rows the pushed part keeps."""
    zarr_path, parquet, _ = stores
    predicate = (pl.col("sample") == "S003") & pl.col("barcode").str.ends_with("7-1") & (pl.col("score") > 0.2)
    got = zarrow.scan(zarr_path).filter(predicate).select("barcode", "n_genes").collect()
    want = pl.scan_parquet(parquet).filter(predicate).select("barcode", "n_genes").collect()
    assert got.height > 0
    assert_frame_equal(got, want)


def test_head_before_a_filter_filters_the_first_rows(stores):
    """Polars' n_rows comes before its predicate: the first rows, then
    filtered (not pushed)."""
    zarr_path, parquet, _ = stores
    query = lambda lf: lf.head(3000).filter(pl.col("sample") == "S005").select("barcode")  # noqa: E731
    got, want = query(zarrow.scan(zarr_path)).collect(), query(pl.scan_parquet(parquet)).collect()
    assert got.height == 500
    assert_frame_equal(got, want)


# ------------------------------------------------------- scans not pushed


def test_a_filter_zarrow_does_not_take_falls_back(tmp_path):
    """An unsigned column compared with an int64 literal is pushed (DataFusion
    compares them exactly); a cast is not (a checked cast's errors are
    pyarrow's): the scanner filters it as before, and says why."""
    t = pa.table({"u": pa.array(np.arange(1000) % 300, pa.uint16()), "i": pa.array(np.arange(1000))})
    zarrow.write(t, tmp_path / "u.zarr", chunk_len=100)
    want = [i for i in range(1000) if i % 300 > 250]
    scanner = zarrow.dataset(tmp_path / "u.zarr").scanner(columns=["i"], filter=ds.field("u") > 250)
    assert scanner.to_table().column("i").to_pylist() == want
    assert scanner.not_pushed is None
    cast = ds.field("u").cast(pa.int64()) > 250
    scanner = zarrow.dataset(tmp_path / "u.zarr").scanner(columns=["i"], filter=cast)
    got = scanner.to_table()
    assert "cast" in scanner.not_pushed
    assert got.column("i").to_pylist() == want
    lf = zarrow.scan(tmp_path / "u.zarr").filter(pl.col("u") > 250).select("i")
    assert lf.collect()["i"].to_list() == want


def test_an_nd_array_is_filtered_as_it_is_read():
    """An N-d array reads flat (its elements in C order): not pushed,
    filtered as before, against zarr-python's values."""
    two_d = "v3_string_2d.zarr"
    strings = np.asarray(zarr.open_array(str(STORES / two_d), mode="r")[:]).ravel().tolist()
    dataset = zarrow.dataset(STORES / two_d)
    (column,) = dataset.schema.names
    probe = strings[len(strings) // 2]
    scanner = dataset.scanner(filter=ds.field(column) == probe)
    assert scanner.to_table().column(column).to_pylist() == [s for s in strings if s == probe]
    assert scanner.not_pushed is not None
    got = zarrow.scan(STORES / two_d).filter(pl.col(column) == probe).collect()
    assert got[column].to_list() == [s for s in strings if s == probe]


def test_a_long_table_is_filtered_as_it_is_read(tmp_path):
    """A gridded dataset read long (one row per grid point): the filter is
    applied as before, against xarray's to_dataframe."""
    xr = pytest.importorskip("xarray")
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=3)
    group.create_array("y", shape=(20,), dtype="int64", dimension_names=["y"])[:] = np.arange(20)
    group.create_array("x", shape=(30,), dtype="int64", dimension_names=["x"])[:] = np.arange(30) * 10
    values = np.arange(600, dtype="float64").reshape(20, 30)
    group.create_array("v", shape=(20, 30), chunks=(5, 10), dtype="float64", dimension_names=["y", "x"])[:] = values
    zarr.consolidate_metadata(str(tmp_path / "g.zarr"))
    frame = xr.open_zarr(tmp_path / "g.zarr").to_dataframe().reset_index()
    want = frame[(frame["v"] > 450) & (frame["x"] < 100)]
    scanner = zarrow.dataset(tmp_path / "g.zarr", long=True).scanner(
        columns=["y", "x", "v"], filter=(ds.field("v") > 450) & (ds.field("x") < 100)
    )
    got = scanner.to_table()
    assert scanner.not_pushed is not None
    assert got.column("v").to_pylist() == want["v"].tolist()
    lf = zarrow.scan(tmp_path / "g.zarr", long=True).filter((pl.col("v") > 450) & (pl.col("x") < 100))
    assert lf.select("v").collect()["v"].to_list() == want["v"].tolist()


# ------------------------------------------- what a pushed filter fetches


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The obs's columns of one array each (zarrow's plain layout, with
    statistics) over HTTP, through a proxy that records every request."""
    root = tmp_path_factory.mktemp("served")
    t = obs().select(["barcode", "sample", "day", "n_genes", "score"])
    zarrow.write(t, root / "obs.zarr", chunk_len=CHUNK)
    with http_server(root) as web:
        proxy = FaultProxy(web)
        with proxy.serve() as url:
            yield f"{url}/obs.zarr", proxy, t


def chunk_gets(proxy: FaultProxy) -> dict[str, set[str]]:
    """Per array, the chunk keys fetched."""
    fetched: dict[str, set[str]] = {}
    for method, path, _ in proxy.requests:
        match = re.search(r"/obs\.zarr/([^/]+)/c/([0-9]+)$", path)
        if method == "GET" and match:
            fetched.setdefault(match.group(1), set()).add(match.group(2))
    return fetched


def holding(t: pa.Table, mask: np.ndarray) -> set[int]:
    """The chunks holding a row of `mask`."""
    return set((np.flatnonzero(mask) // CHUNK).tolist())


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_a_pushed_filter_fetches_only_the_chunks_that_can_match(served, engine):
    url, proxy, t = served
    sample = np.asarray(t.column("sample").to_pylist())
    matching = sample == "S017"
    proxy.requests.clear()
    if engine == "polars":
        got = zarrow.scan(url).filter(pl.col("sample") == "S017").select("n_genes").collect()["n_genes"]
    else:
        d = zarrow.dataset(url)  # noqa: F841 (named in the query)
        got = duckdb.sql("SELECT n_genes FROM d WHERE sample = 'S017'").pl()["n_genes"]
    assert sorted(got.to_list()) == sorted(t.column("n_genes").to_numpy()[matching].tolist())
    fetched = chunk_gets(proxy)
    chunks = ROWS // CHUNK
    expected = holding(t, matching)
    assert len(expected) < chunks
    # The filter column's chunks its statistics cannot exclude (those that
    # hold the sample) and the projected column's chunks holding a row.
    keys = {name: {int(key) for key in keys} for name, keys in fetched.items()}
    assert keys.get("sample", set()) <= expected, keys
    assert keys.get("n_genes", set()) <= expected, keys
    assert set(keys) <= {"sample", "n_genes"}, keys
    total = sum(len(v) for v in fetched.values())
    assert total <= 2 * len(expected) < 2 * chunks


# ------------------------------------------- pyarrow's expressions, exactly


def is_in_matching(field, values: pa.Array, behaviour: int):
    """``pc.is_in`` with Arrow's way `behaviour` of matching nulls (0 MATCH,
    1 SKIP, 2 EMIT_NULL, 3 INCONCLUSIVE). pyarrow's Python API sets only the
    first two (`skip_nulls`): the option is rewritten in the expression's
    pickled form (an Arrow IPC file, the options a struct column) and the
    expression rebuilt by pyarrow's own unpickler, so pyarrow evaluates it
    with that behaviour too."""
    rebuild, (buffer,) = pc.is_in(field, value_set=values).__reduce__()
    reader = pa.ipc.open_file(pa.BufferReader(buffer))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, reader.schema) as writer:
        for k in range(reader.num_record_batches):
            columns = []
            for column in reader.get_batch(k).columns:
                if pa.types.is_struct(column.type) and column.type.get_field_index("null_matching_behavior") >= 0:
                    kids = [pa.array([behaviour] * len(column), pa.uint32()) if f.name == "null_matching_behavior"
                            else column.field(f.name) for f in column.type]
                    column = pa.StructArray.from_arrays(kids, fields=list(column.type))
                columns.append(column)
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=reader.schema))
    expression = rebuild(sink.getvalue())
    name = ["MATCH", "SKIP", "EMIT_NULL", "INCONCLUSIVE"][behaviour]
    assert f"null_matching_behavior={name}" in str(expression), str(expression)
    return expression


def random_expression(rng: np.random.Generator, depth: int = 0):
    """A random filter over `i` (int64) and `s` (string), both with nulls:
    comparisons, `is_in` with each of Arrow's four ways of matching nulls
    (its set with a null or not), `is_null`, `is_valid`, and `&`, `|`, `~` of
    those."""
    pick = rng.integers(0, 9 if depth < 3 else 5)
    column = "i" if rng.integers(0, 2) else "s"
    value = lambda: int(rng.integers(0, 20)) if column == "i" else f"v{rng.integers(0, 20):02d}"  # noqa: E731
    field = pc.field(column)
    if pick == 0:
        op = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"][rng.integers(0, 6)]
        return getattr(field, op)(value())
    if pick in (1, 2):
        values = [value() for _ in range(rng.integers(1, 4))]
        if rng.integers(0, 2):
            values.append(None)
        kind = pa.int64() if column == "i" else pa.string()
        return is_in_matching(field, pa.array(values, kind), int(rng.integers(0, 4)))
    if pick == 3:
        return field.is_null()
    if pick == 4:
        return field.is_valid()
    if pick in (5, 6):
        return random_expression(rng, depth + 1) & random_expression(rng, depth + 1)
    if pick == 7:
        return random_expression(rng, depth + 1) | random_expression(rng, depth + 1)
    return ~random_expression(rng, depth + 1)


def test_pushed_pyarrow_expressions_keep_exactly_pyarrows_rows(tmp_path):
    """Random filters, each pushed whole into zarrow (read from pyarrow's
    pickled form into DataFusion's), keep exactly the rows pyarrow's own
    `Table.filter` keeps: its null semantics (Kleene logic, the four ways
    `is_in` matches nulls, under `~` too) included."""
    rng = np.random.default_rng(52)
    n = 3000
    i = rng.integers(0, 20, n).astype(object)
    s = np.array([f"v{v:02d}" for v in rng.integers(0, 20, n)], dtype=object)
    i[rng.random(n) < 0.15] = None
    s[rng.random(n) < 0.15] = None
    t = pa.table({"i": pa.array(list(i), pa.int64()), "s": pa.array(list(s), pa.string()), "row": pa.array(np.arange(n))})
    # Nullable columns as anndata writes them (a mask beside the values).
    zarrow.write(t, tmp_path / "r.zarr", chunk_len=250, layout="anndata")
    dataset = zarrow.dataset(tmp_path / "r.zarr")
    for _ in range(150):
        expression = random_expression(rng)
        scanner = dataset.scanner(columns=["row"], filter=expression)
        got = scanner.to_table().column("row").to_pylist()
        assert scanner.not_pushed is None, (str(expression), scanner.not_pushed)
        want = t.filter(expression).column("row").to_pylist()
        assert got == want, str(expression)


def test_hostile_bytes_as_a_filter_are_refused_not_a_crash():
    """The native reader of pickled expressions takes any bytes: empty,
    garbage, a real pickle cut short or with bytes flipped. Each is refused
    with a reason (or, where the change left a well-formed expression, taken),
    and the process lives on."""
    from zarrow import _pushdown, _zarrow

    real = _pushdown.pickled(pc.is_in(pc.field("s"), value_set=pa.array(["a", None])) & (pc.field("i") > 3))
    assert _zarrow.refusal(real) is None
    assert _zarrow.refusal(b"") is not None
    assert _zarrow.refusal(b"ARROW1" * 3) is not None
    rng = np.random.default_rng(3)
    for cut in range(0, len(real), 7):
        assert _zarrow.refusal(real[:cut]) is not None
    for _ in range(300):
        flipped = bytearray(real)
        for at in rng.integers(0, len(real), 3):
            flipped[at] ^= 1 << int(rng.integers(0, 8))
        reason = _zarrow.refusal(bytes(flipped))
        assert reason is None or isinstance(reason, str)
