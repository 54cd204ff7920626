"""``zarrow.scan``: a Zarr group or array as a lazy Polars scan (an IO plugin).

Polars hands the plugin the columns it needs, the rows it wants (``n_rows``) and
a predicate, and applies none of them again: the plugin reads only those columns
and rows, and filters each batch with the predicate exactly.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Sequence



def scan(
    path_or_url: Any,
    *,
    columns: Optional[Sequence[str]] = None,
    string_type: Optional[str] = None,
    anonymous: bool = False,
    **options: Any,
) -> Any:
    """A Zarr group (one column per 1-D array) or array as a ``polars.LazyFrame``.

    The schema comes from the metadata alone (``collect_schema()`` reads no
    chunk). A query reads only the columns it uses and, with ``head(n)`` or
    ``n_rows``, only the chunks those rows lie in; its filter is applied to
    each batch as it arrives.

    columns: of a group, only these columns, in this order.
    string_type: strings as "utf8-view" (the default: Polars' own string
        layout, no conversion), "utf8" or "large-utf8".
    anonymous: do not sign object store requests (a public bucket).
    options: as ``zarrow.read``: ``decode_cf``, ``long``, ``categorical_values``.

    anndata categoricals arrive as ``pl.Categorical`` (their codes and
    categories, unless ``categorical_values=True``), nullable columns with their
    nulls. Children of a group that are not columns are named once, in a
    ``ZarrowWarning``.

    >>> import polars as pl, zarrow
    >>> lf = zarrow.scan(STORES / "v2_string_zstd.zarr")
    >>> lf.filter(pl.col("values").str.starts_with("a")).head(2).collect().height
    2
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    from . import _open, _warn_skipped

    path = os.fspath(path_or_url)
    opened = dict(options, string_type=string_type or "utf8-view", anonymous=anonymous)
    # No row: the metadata alone gives the schema.
    probe = _open(path, columns, limit=0, **opened)
    _warn_skipped(probe, stacklevel=2)
    schema = pl.DataFrame(probe).schema
    names = list(schema.names())

    def source(
        with_columns: Optional[list[str]],
        predicate: Optional[pl.Expr],
        n_rows: Optional[int],
        batch_size: Optional[int],
    ) -> Iterator[pl.DataFrame]:
        wanted = list(with_columns) if with_columns is not None else names
        read_columns = list(wanted)
        if predicate is not None:
            # The predicate's columns are read too, then dropped.
            read_columns += [c for c in predicate.meta.root_names() if c not in read_columns]
        if n_rows == 0:
            return
        # `n_rows` comes before the predicate: the first n rows, then filtered.
        # All of them: no selection (an array's one column has no name to select).
        selection = None if read_columns == names else read_columns
        reader = _open(path, selection, limit=n_rows, batch_size=batch_size, **opened)
        while (batch := reader._next_stream()) is not None:
            frame = pl.DataFrame(batch)
            if predicate is not None:
                frame = frame.filter(predicate)
            if len(read_columns) != len(wanted):
                frame = frame.select(wanted)
            yield frame

    return register_io_source(source, schema=schema, is_pure=True, explain_name="zarrow", explain_detail=path)
