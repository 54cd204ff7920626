"""Zarr arrays and groups to and from Apache Arrow.

>>> import tempfile, zarrow, pyarrow as pa, polars as pl
>>> obs = "testdata/stores/obs.zarr"  # the sample data, from the repository's root
>>> t = pa.table(zarrow.read(obs, columns=["barcode", "cell_type"], rows=(0, 100)))
>>> t.num_rows, t.column_names
(100, ['barcode', 'cell_type'])
>>> pl.DataFrame(zarrow.read(obs, columns=["n_genes"])).height
1000
>>> zarrow.write(t, f"{tempfile.mkdtemp()}/out.zarr", encoding="zarrs-vlen")
100

``read`` returns a :class:`Reader`, a stream of record batches in the Arrow
PyCapsule protocol (``__arrow_c_stream__``): pyarrow, Polars, DuckDB and any other
consumer take it, batch by batch, and the buffers zarrow decodes are handed over,
not copied. ``write`` takes anything with ``__arrow_c_stream__`` or
``__arrow_c_array__``. The GIL is released while zarrow reads, decodes and writes;
Ctrl-C stops a long read between batches.

Errors raise a subclass of :class:`ZarrowError` (a ``ValueError``) with zarrow's
message, one class per kind of failure, so that ``except ZarrowError`` (or
``except ValueError``) still catches them all::

    ZarrowError (ValueError)
    ├── NotFoundError (also FileNotFoundError)  no store, node, file or key there
    ├── InvalidStoreError                        corrupt data: a chunk, a store value,
    │   │                                        a linear-format or Parquet file
    │   └── InvalidMetadataError                 metadata that is not valid JSON / Zarr
    ├── UnsupportedError                         sound, but not what zarrow does: a
    │                                            codec, data type, Arrow type, a
    │                                            conversion, a CF calendar, a group
    │                                            that is no table
    ├── InvalidArgumentError                     rows outside the table, a node of the
    │   │                                        other kind, a name or shape Zarr
    │   │                                        cannot hold, nulls, a location
    │   └── OptionError                          an unknown option, a value it does
    │                                            not take, options that conflict
    ├── ConflictError                            the output is in the way: it exists
    │   │                                        (mode='create'), is not a Zarr store,
    │   │                                        or has other columns than an append
    │   └── BusyError                            another writer holds its lock
    ├── ZarrowIOError (also OSError)             a file or object store request failed
    ├── QueryError                               SQL: planning or running a query
    └── LimitError                               a limit in force (max_rows, max_bytes,
                                                 max_chunk_bytes, a memory budget)

A failure inside a stream that a consumer pulls (pyarrow, Polars, DuckDB) reaches
you as that consumer's exception, with zarrow's message; through zarrow's own
calls it is the class above.

``sql`` answers a SQL query (DataFusion's) over Zarr stores and Parquet, Arrow IPC
or CSV files, as the same kind of stream.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union


class ZarrowError(ValueError):
    """zarrow refused the input or an argument: a corrupt or unsupported store, a
    value that does not fit, an unknown option. The message is zarrow's.

    The error's typed context is on the exception, so a caller acts on it without
    reading the message:

    - ``kind``: the kind of failure, ``"NotFound"``, ``"InvalidData"``,
      ``"InvalidMetadata"``, ``"Unsupported"``, ``"InvalidArgument"``,
      ``"Option"``, ``"Conflict"``, ``"Busy"``, ``"Io"``, ``"Query"``, ``"Limit"``
      or ``"Other"``;
    - ``location``: the URL or location of the store involved;
    - ``path``: the node path or file involved;
    - ``key``: the store key involved (a metadata document, ``"obs/zarr.json"``; a
      chunk);
    - ``field``: the field at fault, a path into the document (``"shape"``,
      ``"chunk_grid.configuration.chunk_shape"``; for a codec, into its entry:
      ``"configuration.level"``), or the option;
    - ``codec``: the codec at fault, as the metadata names it;
    - ``expected``: what was expected there;
    - ``found``: what was there instead (cut to 200 characters).

    Each is ``None`` when the error has no such field. Some errors carry others
    (``name``, ``column``, ``row``, ``size``, ``limit``, ``feature``...)."""

    kind: str = "Other"
    location: Optional[str] = None
    path: Optional[str] = None
    key: Optional[str] = None
    field: Optional[str] = None
    codec: Optional[str] = None
    expected: Optional[str] = None
    found: Optional[str] = None


class ZarrowIOError(ZarrowError, OSError):
    """An I/O failure: a file, directory or object store request that failed, an
    output that could not be written. Catch it as ``ZarrowError`` or ``OSError``."""


class NotFoundError(ZarrowError, FileNotFoundError):
    """No store, node, file or key where one was asked for. Also a
    ``FileNotFoundError``, as Python's own file functions raise."""


class InvalidStoreError(ZarrowError):
    """Stored data that is corrupt or invalid: a chunk that does not decode, a
    store value out of bounds, a linear-format document that breaks the format."""


class InvalidMetadataError(InvalidStoreError):
    """Metadata (``zarr.json``, ``.zarray``, ``.zattrs``...) that is not valid JSON
    or not valid Zarr metadata."""


class UnsupportedError(ZarrowError):
    """Something sound that zarrow does not do: a codec, a data type, an Arrow
    type, a conversion, a convention's feature (a CF calendar), a group whose
    arrays are no table."""


class InvalidArgumentError(ZarrowError):
    """An argument that does not fit: rows outside the table, a node of the other
    kind, a name or shape Zarr cannot hold, nulls where Zarr has none."""


class OptionError(InvalidArgumentError):
    """An option: an unknown key, a value it does not take, options that conflict
    or do not apply."""


class ConflictError(ZarrowError):
    """The output is in the way: it exists (``mode='create'``), holds something
    other than a Zarr store, or has other columns or types than the rows
    appended."""


class BusyError(ConflictError):
    """Another writer holds the store's lock, still after ``lock_timeout``."""


class QueryError(ZarrowError):
    """A SQL query failed: planning it or running it."""


class LimitError(ZarrowError):
    """A limit in force was exceeded: ``max_rows``, ``max_bytes``,
    ``max_chunk_bytes``, a memory budget."""


class ZarrowWarning(UserWarning):
    """Something zarrow did not carry over or changed, named rather than dropped in
    silence: a child of a group that is not a column, Parquet's re-encoding of
    dictionaries."""


from ._zarrow import Reader, Table, TableFactory  # noqa: E402
from . import _zarrow  # noqa: E402
from ._polars import scan  # noqa: E402
from ._kept import Dataset  # noqa: E402

__all__ = [
    "BusyError",
    "ConflictError",
    "Dataset",
    "InvalidArgumentError",
    "InvalidMetadataError",
    "InvalidStoreError",
    "LimitError",
    "NotFoundError",
    "OptionError",
    "QueryError",
    "Reader",
    "Table",
    "TableFactory",
    "UnsupportedError",
    "ZarrowError",
    "ZarrowIOError",
    "ZarrowWarning",
    "build_stats",
    "convert",
    "dataset",
    "info",
    "read",
    "register",
    "scan",
    "sql",
    "table",
    "write",
]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


def _rows(rows: Any) -> Optional[Tuple[int, int]]:
    if rows is None:
        return None
    if isinstance(rows, range):
        if rows.step != 1:
            raise ZarrowError(f"rows {rows!r}: only a contiguous range (step 1) is read")
        return (rows.start, rows.stop)
    if isinstance(rows, slice):
        if rows.step not in (None, 1) or rows.start is None or rows.stop is None:
            raise ZarrowError(f"rows {rows!r}: give a slice with a start and a stop, step 1")
        return (rows.start, rows.stop)
    start, end = rows
    return (int(start), int(end))


def _columns(columns: Optional[Iterable[str]]) -> Optional[list]:
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def read(
    path_or_url: PathLike,
    columns: Optional[Sequence[str]] = None,
    rows: Union[Tuple[int, int], range, slice, None] = None,
    string_type: Optional[str] = None,
    batch_size: Optional[int] = None,
    *,
    limit: Optional[int] = None,
    long: bool = False,
    decode_cf: bool = True,
    categorical_values: bool = False,
    anonymous: bool = False,
    **options: Any,
) -> Reader:
    """Read a Zarr group (one column per 1-D array) or array as a stream of record
    batches.

    path_or_url: a directory or a URL (s3://, gs://, az://, abfs://, http(s)://;
        credentials, region and endpoint from the environment), or an obstore
        store (``obstore.store.S3Store(bucket, prefix="atlas.zarr/obs", ...)``:
        its own configuration and credentials apply). Wherever a location is
        taken (``info``, ``scan``, ``table``, ``dataset``), so is a store.
    columns: of a group, these columns in this order (default: every 1-D array).
    rows: only rows ``(start, end)`` (or ``range(start, end)``): only the chunks
        they lie in are read.
    string_type: the Arrow layout of strings and bytes: "utf8", "large-utf8" or
        "utf8-view" (default: as zarrow's writer recorded it, else utf8).
    batch_size: rows per batch (default: the chunk length, at most 65536).
    limit: at most this many rows (after ``rows``).
    long: read a gridded dataset (xarray's N-d variables) as a long table, one
        row per grid point, like ``Dataset.to_dataframe()``.
    decode_cf: decode CF attributes (scale_factor, add_offset, _FillValue, time
        units) into the values xarray gives.
    categorical_values: read anndata categoricals as their categories' values,
        one per row, instead of dictionaries (as "utf8-view" unless
        ``string_type`` says otherwise: each a view of its category, no string
        copied).
    anonymous: do not sign object store requests (a public bucket).
    **options: any other option of the read, by its key as ``zarrow convert``'s
        flag without the dashes (``max_chunk_bytes="64M"``, ``concurrency=8``,
        ``retries=3``, ``timeout=10.0``...): the library declares them once.

    The reader is consumed once: ``pa.table(r)``, ``pl.DataFrame(r)``,
    ``duckdb.from_arrow(r)``, or ``for batch in r``. Children of a group that are
    not columns are named in ``r.skipped`` and in a ``ZarrowWarning``.
    """
    reader = _open(
        path_or_url,
        columns,
        rows,
        string_type,
        batch_size,
        limit=limit,
        long=long,
        decode_cf=decode_cf,
        categorical_values=categorical_values,
        anonymous=anonymous,
        **options,
    )
    _warn_skipped(reader, stacklevel=2)
    return reader


def _location(path_or_url: Any) -> Any:
    """A path or URL as a string; anything else (an obstore store) as it is,
    for the native module to take or refuse."""
    return os.fspath(path_or_url) if isinstance(path_or_url, (str, os.PathLike)) else path_or_url


def _open(
    path_or_url: PathLike,
    columns: Optional[Sequence[str]] = None,
    rows: Any = None,
    string_type: Optional[str] = None,
    batch_size: Optional[int] = None,
    *,
    limit: Optional[int] = None,
    long: bool = False,
    decode_cf: bool = True,
    categorical_values: bool = False,
    anonymous: bool = False,
    keep: Optional[list] = None,
    gather: Optional[int] = None,
    **more: Any,
) -> Reader:
    """``read`` without its warnings (the engines' scans warn once, when opened);
    ``keep``: ``[(column, [category, ...])]``, only rows whose categorical
    columns hold one of these (a prefilter the scan narrows with); ``gather``:
    the reader's batches (chunk-aligned when ``batch_size`` is not given)
    gathered into growing ones of up to that many rows, the first handed on at
    once (a query that stops early reads little more than it uses)."""
    options = {
        **more,
        "columns": _columns(columns),
        "rows": _rows(rows),
        "limit": limit,
        "string_type": string_type,
        "batch_size": batch_size,
        "long": long,
        "decode_cf": decode_cf,
        "categorical_values": categorical_values,
        "anonymous": anonymous,
    }
    return _zarrow.read(_location(path_or_url), options, keep, gather)


def _probe(path: Any, columns: Optional[Sequence[str]], options: dict) -> Tuple[Reader, bool]:
    """A reader of no row (the metadata alone gives its schema), and whether
    the node is an N-d array, which reads as its elements in C order with no
    row selection (then the reader is the whole read's: take its schema with
    ``_schema_only()``, which reads nothing)."""
    if options.get("long"):
        # A long table takes no row selection: its reader (metadata only
        # until read) is the probe.
        return _open(path, columns, **options), False
    try:
        return _open(path, columns, limit=0, **options), False
    except ZarrowError:
        node = info(path, anonymous=options.get("anonymous", False))
        if node.get("node") != "array" or len(node.get("shape", ())) < 2:
            raise
        return _open(path, columns, **options), True


def _warn_skipped(reader: Reader, stacklevel: int) -> None:
    for skipped in reader.skipped:
        warnings.warn(f"not read: {skipped}", ZarrowWarning, stacklevel=stacklevel + 1)


def info(
    path: PathLike, string_type: Optional[str] = None, *, anonymous: bool = False, **options: Any
) -> dict:
    """Describe a Zarr array or group, in Zarr and in Arrow terms.

    An array: ``{"node": "array", "zarr_format", "shape", "chunk_shape",
    "data_type", "fill_value", "chunk_key_encoding", "codecs", "arrow_type",
    "chunks", "chunks_present", "chunks_unlisted", "attributes"}``
    (``chunks_present`` is ``None``, and ``chunks_unlisted`` says why, when the
    store cannot be listed: a plain HTTP server). A group: ``{"node": "group",
    "zarr_format", "anndata", "attributes", "children": [{"name", "node", ...}],
    "columns": [{"name", "arrow_type", "rows"}], "not_columns": [reason, ...]}``.
    """
    options = {**options, "string_type": string_type, "anonymous": anonymous}
    return json.loads(_zarrow.info(_location(path), options))


def write(
    data: Any,
    path: PathLike,
    zarr_format: int = 3,
    encoding: str = "default",
    compressor: str = "default",
    chunk_len: Optional[int] = None,
    nulls: str = "error",
    overwrite: bool = False,
    *,
    level: Optional[int] = None,
    shard_len: Optional[int] = None,
    layout: str = "plain",
    anonymous: bool = False,
    mode: Optional[str] = None,
    lock_timeout: float = 60.0,
    **options: Any,
) -> int:
    """Write a table as a Zarr group, one 1-D array per column; returns the rows
    written.

    data: anything with ``__arrow_c_stream__`` (a pyarrow Table or
        RecordBatchReader, a Polars DataFrame, a zarrow Reader...) or
        ``__arrow_c_array__`` (a pyarrow RecordBatch). Streams are written batch
        by batch.
    path: a directory, a URL or an obstore store (written at its prefix).
    zarr_format: 3 (the default) or 2.
    encoding: strings and bytes as "default" (vlen-utf8 / vlen-bytes, as
        zarr-python writes), "zarrs-vlen" or "zep0007" (experimental draft).
    compressor: "default" (zstd for strings, bytes and one-byte values; blosc
        with lz4 after a byte shuffle for wider numbers), "zstd" (every
        array), "gzip", "blosc" or "none" (``level``: its level).
    chunk_len: elements per chunk (default: about 4 MiB of values); with
        ``shard_len``, per inner chunk of sharding_indexed shards (Zarr v3).
    nulls: "error" (the default) refuses a column with nulls; "fill" writes each
        null as the fill value ("" / 0 / NaN / false), so the nulls are lost.
    overwrite: replace an existing Zarr node at ``path`` (``mode="overwrite"``;
        a ``mode`` given must agree with it).
    layout: "plain" (the default) or "anndata" (an anndata dataframe).
    mode: "create" (the default: an existing node is an error), "overwrite", or
        "append": the rows are added to the group at ``path`` (made when
        absent), whose columns must be the table's by names and types; the
        group's own format, codecs and chunks apply (``zarr_format``,
        ``encoding``, ``compressor``, ``level``, ``chunk_len`` and
        ``shard_len`` only shape a group the append makes). A reader sees
        the old rows or all of them. A second writer appending at once waits
        for the first, up to ``lock_timeout`` seconds (default 60; only for an
        append), then raises ``BusyError``.
    """
    options = {
        **options,
        "zarr_format": zarr_format,
        "encoding": encoding,
        "compressor": compressor,
        "level": level,
        "chunk_len": chunk_len,
        "shard_len": shard_len,
        "nulls": nulls,
        "layout": layout,
        "overwrite": overwrite,
        "anonymous": anonymous,
        "mode": mode,
        "lock_timeout": lock_timeout,
    }
    return _zarrow.write(data, _location(path), options)


def convert(src: PathLike, dst: PathLike, **options: Any) -> dict:
    """Convert as ``zarrow convert SRC DST`` does, with the same options, named as
    its flags without the dashes (``zarr_format=2``, ``string_type="utf8-view"``,
    ``rows=(0, 1000)``, ``compression="zstd(3)"``, ``overwrite=True``...).

    SRC: a Zarr directory or URL, a .parquet / .arrow / .ipc / .feather / .arrows
    file, or a linear-format .json / .csv; DST's extension picks the format (a
    table file, .json / .csv, else a Zarr directory or URL). Either end may be an
    obstore store, the Zarr side of the conversion. The output appears whole or
    not at all (a URL's or store's with every node's metadata after its chunks).
    ``append=True`` adds the rows to the Zarr group at DST instead, as
    ``write(..., mode="append")`` does (``lock_timeout``: seconds to wait for
    another writer). Returns ``{"rows": n}`` (or ``{"arrays": n}`` for a
    linear-format output); notes (a child not converted) are ``ZarrowWarning``s.
    """
    if "rows" in options:
        options["rows"] = _rows(options["rows"])
    if "columns" in options:
        options["columns"] = _columns(options["columns"])
    what, n, notes = _zarrow.convert(_location(src), _location(dst), options)
    for note in notes:
        warnings.warn(note, ZarrowWarning, stacklevel=2)
    return {what: n}


def build_stats(location: PathLike, **options: Any) -> dict:
    """Record chunk statistics for every 1-D array at ``location`` (a Zarr array
    or group: a directory, a URL or an obstore store) that something else wrote
    (anndata, xarray, zarr-python), as ``zarrow stats`` does: one pass, chunk
    by chunk, under the writer lock. Filters then skip the chunks that cannot
    match (``zarrow.sql``, ``scan``, ``dataset``). zarrow's own writes record
    them already; a plain HTTP store is read-only (``ZarrowError``). The URL
    options (``anonymous``, ``concurrency``...) apply. Returns
    ``{"arrays": n}``; an array without statistics (N-d, or a type zarrow
    records none for) is a ``ZarrowWarning``.
    """
    n, notes = _zarrow.build_stats(_location(location), options)
    for note in notes:
        warnings.warn(note, ZarrowWarning, stacklevel=2)
    return {"arrays": n}


def sql(
    query: str,
    tables: Optional[Mapping[str, PathLike]] = None,
    *,
    string_type: Optional[str] = None,
    partitions: Optional[int] = None,
    decode_cf: bool = True,
    categorical_values: bool = True,
    anonymous: bool = False,
    **options: Any,
) -> Reader:
    """Answer a SQL query (DataFusion's dialect) as a stream of record batches, as
    ``zarrow sql`` does.

    tables: ``{name: location}``: a Zarr group or array (a directory, a URL,
        an obstore store or a ``zarrow.Dataset``), or a .parquet, .arrow /
        .ipc / .feather or .csv file. A query may also open one itself:
        ``CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '...'``.
    string_type: the Arrow layout of the Zarr tables' strings and bytes (as
        ``read``).
    partitions: the partitions a scan is split into (default: one per core).
    decode_cf: decode CF attributes, as ``read`` does.
    categorical_values: anndata categoricals as their categories' values (the
        default: each a view of its category, as DataFusion reads a
        dictionary-encoded Parquet column), or, with False, as dictionaries.
    anonymous: do not sign object store requests (a public bucket).

    ``pa.table(zarrow.sql("SELECT s, count(*) FROM t GROUP BY s", {"t": "t.zarr"}))``.
    The query runs while the stream is read. Children of a Zarr table that are not
    columns are named in ``r.skipped`` and in a ``ZarrowWarning``.
    """
    from ._kept import Dataset

    options = {
        **options,
        "string_type": string_type,
        "decode_cf": decode_cf,
        "categorical_values": categorical_values,
        "anonymous": anonymous,
    }
    pairs, kept = [], []
    for name, location in (tables or {}).items():
        if isinstance(location, Dataset):
            # Its table kept open for these options (a table's, not a URL's).
            table = {k: v for k, v in options.items() if k not in ("anonymous",)}
            kept.append((str(name), location._kept_table(table)))
        else:
            pairs.append((str(name), _location(location)))
    reader = _zarrow.sql(query, pairs, partitions, options, kept)
    for skipped in reader.skipped:
        warnings.warn(f"not read: {skipped}", ZarrowWarning, stacklevel=2)
    return reader


def table(
    path_or_url: PathLike,
    *,
    columns: Optional[Sequence[str]] = None,
    string_type: Optional[str] = None,
    sorted: Optional[Sequence[str]] = None,
    decode_cf: bool = True,
    categorical_values: bool = True,
    anonymous: bool = False,
    **options: Any,
) -> Table:
    """A Zarr group or array (a directory, a URL, an obstore store or a
    ``zarrow.Dataset``) as a datafusion-python (55) table, its metadata read
    now (a ``zarrow.Dataset``'s kept table, brought up to date):
    ``ctx.register_table("obs", zarrow.table("atlas.zarr/obs"))``. Queries
    push their projection, ``LIMIT`` and filters into it, as in Rust: chunk
    statistics skip chunks no row can match, and the filter's columns are read
    first, the others only where rows match; it runs on zarrow's runtime,
    polled by DataFusion's.

    columns: of a group, only these columns, in this order.
    string_type: as ``read`` (default: as zarrow's writer recorded it, else
        utf8; categoricals' values as utf8-view).
    sorted: columns whose values never decrease: each partition is declared
        sorted by them, so ``ORDER BY`` one needs no sort.
    decode_cf, categorical_values, anonymous: as ``sql``.

    A datafusion-python of another major version than zarrow's DataFusion is a
    ``ZarrowError`` when the table is registered (their FFI differs).

    >>> from datafusion import SessionContext
    >>> ctx = SessionContext()
    >>> ctx.register_table("obs", zarrow.table("testdata/stores/obs.zarr", columns=["cell_type", "n_genes"]))
    >>> ctx.sql("SELECT count(*) AS n FROM obs WHERE n_genes > 2000").to_pydict()
    {'n': [628]}
    """
    from ._kept import Dataset

    options = {
        **options,
        "columns": _columns(columns),
        "string_type": string_type,
        "sorted": _columns(sorted),
        "decode_cf": decode_cf,
        "categorical_values": categorical_values,
    }
    if isinstance(path_or_url, Dataset):
        # Its table kept open for these options, brought up to date.
        return path_or_url._kept_table(options).table()
    return _zarrow.table(_location(path_or_url), dict(options, anonymous=anonymous))


def register(ctx: Any) -> None:
    """Make ``CREATE EXTERNAL TABLE t STORED AS ZARR LOCATION '...' [OPTIONS
    (...)]`` work in a datafusion-python (55) ``SessionContext``, with
    ``CREATE EXTERNAL TABLE``'s options as in ``zarrow sql``.

    >>> from datafusion import SessionContext
    >>> ctx = SessionContext()
    >>> zarrow.register(ctx)
    >>> _ = ctx.sql("CREATE EXTERNAL TABLE obs STORED AS ZARR "
    ...             "LOCATION 'testdata/stores/obs.zarr' OPTIONS ('columns' 'cell_type')")
    >>> ctx.sql("SELECT count(DISTINCT cell_type) AS k FROM obs").to_pydict()
    {'k': [10]}
    """
    ctx.register_table_factory("ZARR", TableFactory())


def dataset(path_or_url: PathLike, **options: Any) -> Any:
    """See :func:`zarrow._dataset.dataset` (imported on first use: it needs
    pyarrow)."""
    from ._dataset import dataset as make

    return make(path_or_url, **options)
