"""``zarrow.dataset``: a Zarr group or array as a ``pyarrow.dataset.Dataset``, for
DuckDB (which pushes its projection and filters into it) and
``pl.scan_pyarrow_dataset``.

Both engines trust a filter they hand over: neither applies it again. The
scanner pushes it into zarrow (``_pushdown``: DataFusion filters the table,
and chunks that no row can match are not read); where it cannot, it reads the
projected columns plus the filter's, and pyarrow's own scanner
(``Scanner.from_batches``) applies the filter exactly and projects.

pyarrow's ``Dataset`` is a C++ object: a Python subclass that leaves its base
uninitialised must override every method a caller may reach (a base method would
dereference nothing). ``ZarrDataset`` overrides them all, and refuses the ones
that have no meaning here.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.dataset as ds


def _referenced(schema: pa.Schema, expression: ds.Expression) -> list[str]:
    """The columns `expression` reads, in the schema's order (pyarrow has no
    public accessor: columns are referenced when binding the expression to the
    schema without them fails). Halves of the columns are tried, then halves
    of those that fail: a few bindings per referenced column, not one per
    column of a wide table."""

    def binds_without(names: list[str]) -> bool:
        dropped = set(names)
        others = pa.schema([f for f in schema if f.name not in dropped])
        try:
            ds.Scanner.from_batches(iter(()), schema=others, filter=expression)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return False
        return True

    def among(names: list[str]) -> list[str]:
        if not names or binds_without(names):
            return []
        if len(names) == 1:
            return names
        half = len(names) // 2
        return among(names[:half]) + among(names[half:])

    return among(list(schema.names))


def _as_schema(stream: pa.RecordBatchReader, schema: pa.Schema) -> pa.RecordBatchReader:
    """`stream`'s batches under `schema`, which differs at most in its fields'
    nullability and metadata (the DataFusion table marks every column
    nullable; the dataset's schema is the reader's): the same arrays,
    relabelled. Another difference is an error."""
    if stream.schema == schema:
        return stream
    if stream.schema.names != schema.names or stream.schema.types != schema.types:
        from . import ZarrowError

        raise ZarrowError(f"zarrow.ZarrDataset: the filtered scan's schema {stream.schema} is not {schema}")
    batches = (pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in stream)
    return pa.RecordBatchReader.from_batches(schema, batches)


class ZarrDataset(ds.Dataset):
    """A Zarr group or array as a ``pyarrow.dataset.Dataset``: ``schema``,
    ``scanner``, ``to_batches``, ``to_table``, ``to_reader``, ``count_rows``,
    ``head``. Each scan reads the store again."""

    def __init__(
        self,
        path: str,
        options: dict,
        schema: pa.Schema,
        rows: int,
        selection: Optional[list[str]],
        flat: bool,
        sorted: Optional[list[str]] = None,
        kept: Any = None,
    ) -> None:
        # The C++ base is left uninitialised on purpose (see the module's doc).
        self._path = path
        self._options = options
        self._schema = schema
        self._rows = rows
        # The columns the dataset was opened with (`None`: the node's all).
        self._selection = selection
        # An N-d array, read as its elements: no row selection applies.
        self._flat = flat
        # Columns whose values never decrease (a pushed filter narrows by them).
        self._sorted = sorted
        # The ``zarrow.Dataset`` it reads, whose table is kept open.
        self._kept = kept

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def __repr__(self) -> str:
        return f"zarrow.ZarrDataset({self._path!r}, {self._rows} rows)"

    def scanner(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[ds.Expression] = None,
        batch_size: Optional[int] = None,
        **_: Any,
    ) -> "ZarrScanner":
        if columns is not None and not isinstance(columns, (list, tuple)):
            raise TypeError("zarrow.ZarrDataset.scanner: columns are a list of names")
        return ZarrScanner(self, None if columns is None else list(columns), filter, batch_size)

    def to_batches(self, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(**kwargs).to_batches()

    def to_table(self, **kwargs: Any) -> pa.Table:
        return self.scanner(**kwargs).to_table()

    def to_reader(self, **kwargs: Any) -> pa.RecordBatchReader:
        return self.scanner(**kwargs).to_reader()

    def count_rows(self, **kwargs: Any) -> int:
        return self.scanner(**kwargs).count_rows()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        return self.scanner(**kwargs).head(num_rows)

    def take(self, *_: Any, **__: Any) -> pa.Table:
        raise NotImplementedError("zarrow.ZarrDataset: take is not supported (scan with a filter)")

    def get_fragments(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset has no fragments")

    def replace_schema(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset: the schema is the store's")

    def filter(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset: pass filter= to scanner()")

    def join(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset: join is not supported")

    def join_asof(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset: join_asof is not supported")

    def sort_by(self, *_: Any, **__: Any) -> Any:
        raise NotImplementedError("zarrow.ZarrDataset: sort_by is not supported")

    @property
    def partition_expression(self) -> ds.Expression:
        return ds.scalar(True)


class ZarrScanner:
    """One scan of a :class:`ZarrDataset`: the columns it yields, in order, and
    the filter it applies exactly."""

    def __init__(
        self,
        dataset: ZarrDataset,
        columns: Optional[list[str]],
        filter: Optional[ds.Expression],
        batch_size: Optional[int],
    ) -> None:
        schema = dataset.schema
        names = schema.names if columns is None else columns
        for name in names:
            if schema.get_field_index(name) < 0:
                raise KeyError(f"zarrow.ZarrDataset: no column named {name!r} (have: {', '.join(schema.names)})")
        read = list(names)
        # The columns the filter reads.
        self._filter_columns = [] if filter is None else _referenced(schema, filter)
        read += [c for c in self._filter_columns if c not in read]
        # Why the filter was not pushed into zarrow (``None``: it was, or
        # there is none).
        self.not_pushed: Optional[str] = None
        self._dataset = dataset
        self._columns = list(names)
        self._read = read
        self._filter = filter
        self._batch_size = batch_size

    @property
    def projected_schema(self) -> pa.Schema:
        return pa.schema([self._dataset.schema.field(n) for n in self._columns])

    def _open(self, limit: Optional[int] = None) -> Any:
        from . import _open

        d = self._dataset
        columns = self._read
        # All of the dataset's: its own selection (an array's one column has no
        # name to select).
        if columns == d.schema.names:
            columns = d._selection
        if d._flat:
            return _open(d._path, columns, **d._options)
        return _open(d._path, columns, limit=limit, batch_size=self._batch_size, **d._options)

    def _rows_only(self, limit: Optional[int] = None) -> pa.RecordBatchReader:
        """Batches of no column (``count(*)``): their rows are the table's,
        known from the metadata, so nothing is read."""
        total = self._dataset._rows if limit is None else min(limit, self._dataset._rows)
        step = 1 << 16

        def batches() -> Iterator[pa.RecordBatch]:
            for start in range(0, total, step):
                rows = pa.nulls(min(step, total - start))
                yield pa.RecordBatch.from_arrays([rows], names=["rows"]).select([])

        return pa.RecordBatchReader.from_batches(pa.schema([]), batches())

    def _pushed(self) -> Optional[pa.RecordBatchReader]:
        """The scan with its filter evaluated in zarrow (see ``_pushdown``):
        chunks that no row of it can match are not read, and only matching
        rows come back. ``None`` where it cannot be pushed (an N-d array read
        flat, a long table, a filter zarrow or DataFusion does not take: a
        cast, another function);
        why is kept in ``not_pushed``."""
        from . import _pushdown

        d = self._dataset
        if self._filter is None:
            return None
        if d._flat or d._options.get("long"):
            self.not_pushed = "a long table or an N-d array is filtered as it is read"
            return None
        blob = _pushdown.pickled(self._filter)
        reader, why = _pushdown.filtered(
            d._path, d._options, d._selection, d._sorted, blob, self._columns, self._batch_size, d._kept
        )
        if reader is None:
            self.not_pushed = why
            return None
        return _as_schema(pa.RecordBatchReader.from_stream(reader), self.projected_schema)

    def to_reader(self) -> pa.RecordBatchReader:
        pushed = self._pushed()
        if pushed is not None:
            return pushed
        stream = self._open() if self._read else self._rows_only()
        if self._filter is None and self._read == self._columns and self._columns:
            return pa.RecordBatchReader.from_stream(stream)
        scanner = ds.Scanner.from_batches(stream, columns=self._columns, filter=self._filter)
        return scanner.to_reader()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return iter(self.to_reader())

    def to_table(self) -> pa.Table:
        return self.to_reader().read_all()

    def count_rows(self) -> int:
        if self._filter is None:
            return self._dataset._rows
        return self.to_table().num_rows

    def head(self, num_rows: int) -> pa.Table:
        if self._filter is None and not self._read:
            return self._rows_only(limit=num_rows).read_all()
        if self._filter is None and not self._dataset._flat:
            # The first rows only: only the chunks they lie in are read.
            stream = self._open(limit=num_rows)
            return pa.table(stream).select(self._columns)
        batches, seen = [], 0
        for batch in self.to_batches():
            batches.append(batch.slice(0, num_rows - seen))
            seen += batches[-1].num_rows
            if seen >= num_rows:
                break
        return pa.Table.from_batches(batches, schema=self.projected_schema)


def dataset(
    path_or_url: Any,
    *,
    anonymous: bool = False,
    sorted: Optional[Sequence[str]] = None,
    **options: Any,
) -> ZarrDataset:
    """A Zarr group (one column per 1-D array) or array as a
    ``pyarrow.dataset.Dataset`` (`path_or_url`: a directory, a URL, an
    obstore store, or a ``zarrow.Dataset``, kept open across scans): DuckDB
    (``duckdb.sql("SELECT ... FROM ds")``) and ``pl.scan_pyarrow_dataset(ds)``
    push their projection and filters into it, and it reads only the columns
    they use.

    A filter (a pyarrow expression: DuckDB's ``WHERE``) is pushed into zarrow
    whole: DataFusion evaluates it over the table (with SQL's floats: NaN the
    greatest value, equal to itself, as DuckDB has them) and only matching
    rows come back. Chunks whose statistics (``zarrow.write`` records them;
    ``zarrow.build_stats`` for a store another tool wrote) rule out every row
    are not read, and the filter's columns are read first, the others only
    where rows match. A filter zarrow does not take (one with a cast, or a
    function other than the comparisons, ``and``, ``or``, ``invert``,
    ``is_null``, ``is_valid``, ``is_nan`` and ``is_in``), a long table and
    an N-d array are read whole and filtered by pyarrow, as the scanner's
    ``not_pushed`` says.

    sorted: columns whose values never decrease, as ``zarrow.table``.
    options: as ``zarrow.read``: ``columns``, ``string_type``, ``decode_cf``,
    ``long``, ``categorical_values``. Strings are "utf8" unless
    ``string_type`` says otherwise: pyarrow cannot filter "utf8-view", and
    DuckDB pushes no filter into a dataset that has such a column.

    >>> import duckdb, zarrow
    >>> ds = zarrow.dataset("testdata/stores/obs.zarr", columns=["cell_type", "n_genes"])
    >>> duckdb.sql("SELECT cell_type, count(*) FROM ds WHERE n_genes > 2000 "
    ...            "GROUP BY cell_type ORDER BY cell_type LIMIT 3").fetchall()
    [('B cell', 69), ('CD14 Monocyte', 74), ('CD4 T cell', 62)]
    """
    from . import _columns, _open, _probe, _warn_skipped
    from ._kept import located

    path, kept = located(path_or_url)
    columns = options.pop("columns", None)
    options = dict(options, string_type=options.get("string_type") or "utf8", anonymous=anonymous)
    if kept is not None:
        options = kept._options(options)
    probe, flat = kept._probe(columns, options) if kept is not None else _probe(path, columns, options)
    _warn_skipped(probe, stacklevel=2)
    schema = probe.schema
    # Opening a reader reads metadata only; its row count is the table's.
    rows = probe.total_rows if flat else _open(path, columns, **options).total_rows
    selection = _columns(columns)
    return ZarrDataset(path, options, schema, rows, selection, flat, _columns(sorted), kept)
