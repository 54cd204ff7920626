"""``zarrow.Dataset``: a Zarr table kept open across scans.

Every engine entry (``scan``, ``dataset``, ``table``, ``sql``) takes it where
it takes a location. What it keeps, per set of read options:

- the table opened for filtered scans (``_zarrow.kept_table``): its metadata,
  and the chunk statistics read so far (by their file's version);
- the reader of no row a scan takes its schema from.

Each use asks the store whether the metadata they were opened on has changed
(a version per metadata document: a file's status, an object listing; no
document read), and opens them again only then. Chunks are always read from
the store; chunk statistics are checked at each scan against the listing of
their array, and read again only when their file has changed.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple


def _key(options: dict) -> tuple:
    """`options` as a hashable key (lists as tuples)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))


class Dataset:
    """A Zarr group or array kept open across scans: pass it to
    ``zarrow.scan``, ``zarrow.dataset``, ``zarrow.table`` or ``zarrow.sql``
    (as a table's location) in place of a path or URL.

    The metadata is read once, here; each scan then asks the store only
    whether it has changed (a version per metadata document, no document
    read) and opens it again only when it has, so it sees rows appended
    since. Chunk statistics are read once and read again only when their
    file changes. A plain HTTP server or an Icechunk repository cannot tell
    versions: there every scan opens the table again, as a location would.

    path_or_url: a directory, a URL or an obstore store.
    anonymous, options: the URL's options, as ``read``'s (``anonymous``,
        ``concurrency``...), for every scan of it.

    >>> import polars as pl, zarrow
    >>> obs = zarrow.Dataset("testdata/stores/obs.zarr")
    >>> zarrow.scan(obs).filter(pl.col("n_genes") > 2000).select(pl.len()).collect().item()
    628
    >>> zarrow.scan(obs).filter(pl.col("n_genes") > 4000).select(pl.len()).collect().item()
    222
    """

    def __init__(self, path_or_url: Any, *, anonymous: bool = False, **options: Any) -> None:
        from . import _location

        self._path = _location(path_or_url)
        self._url = dict(options, anonymous=anonymous)
        self._kept: dict = {}
        self._probes: dict = {}
        # Opened now: a location that is no table fails here.
        self._primary = self._kept_table({})

    def __repr__(self) -> str:
        return f"zarrow.Dataset({self._path!r})"

    @property
    def location(self) -> Any:
        """The path, URL or store it reads."""
        return self._path

    def _options(self, options: dict) -> dict:
        """An engine's `options` with the dataset's URL options."""
        return {**options, **self._url}

    def _kept_table(self, table: dict) -> Any:
        """The table kept for `table` (``zarrow.table``'s options), opened
        the first time it is asked for."""
        from . import _zarrow

        table = self._options(table)
        key = _key(table)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = _zarrow.kept_table(self._path, table)
        return kept

    def _probe(self, columns: Optional[Sequence[str]], options: dict) -> Tuple[Any, bool]:
        """``zarrow._probe`` of the table, kept until its metadata changes."""
        from . import _probe

        if self._primary.refresh():
            self._probes.clear()
        options = self._options(options)
        key = (None if columns is None else tuple(columns), _key(options))
        probe = self._probes.get(key)
        if probe is None:
            probe = self._probes[key] = _probe(self._path, columns, options)
        return probe


def located(path_or_url: Any) -> Tuple[Any, Optional[Dataset]]:
    """The location to read (`path_or_url`'s, or a ``Dataset``'s) and the
    dataset, when it is one."""
    from . import _location

    if isinstance(path_or_url, Dataset):
        return path_or_url._path, path_or_url
    return _location(path_or_url), None
