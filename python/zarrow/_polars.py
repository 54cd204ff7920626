"""``zarrow.scan``: a Zarr group or array as a lazy Polars scan (an IO plugin).

Polars hands the plugin the columns it needs, the rows it wants (``n_rows``) and
a predicate, and applies none of them again: the plugin reads only those columns
and rows, and returns only the rows the predicate keeps. The predicate is
pushed into zarrow where it can be (``_pushdown``: chunks are skipped by their
statistics); the rest of it is applied to each batch by Polars.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Optional, Sequence, Tuple



def scan(
    path_or_url: Any,
    *,
    columns: Optional[Sequence[str]] = None,
    string_type: Optional[str] = None,
    sorted: Optional[Sequence[str]] = None,
    anonymous: bool = False,
    **options: Any,
) -> Any:
    """A Zarr group (one column per 1-D array) or array as a ``polars.LazyFrame``.

    path_or_url: a directory, a URL, an obstore store, or a ``zarrow.Dataset``
    (kept open across scans: a filtered scan of it opens nothing again while
    the store is unchanged).

    The schema comes from the metadata alone (no chunk is read, but for an
    ordered categorical's categories, when the scan is made). A query reads
    only the columns it uses and, with ``head(n)`` or ``n_rows``, only the
    chunks those rows lie in.

    A filter is pushed into zarrow: each part of it joined by ``&`` that is a
    comparison of a column with a literal (``==``, ``!=``, ``<``, ``<=``,
    ``>``, ``>=``), ``is_in``, ``is_between``, ``is_null``,
    ``is_not_null``, ``is_nan``, or ``|`` and ``~`` of those, is evaluated
    by DataFusion over the table (as ``zarrow.table`` does): chunks whose
    statistics (``zarrow.write`` records them; ``zarrow.build_stats`` for a
    store written by another tool) rule out every row are not read, the
    filter's columns are read first and the others only where rows match, and
    only matching rows cross to Polars. The parts that cannot be pushed (other expressions, a
    Python int compared with an unsigned column) are applied by Polars to
    what comes back. A long table (``long=True``), an N-d array and
    ``head(n)`` before a filter are read whole and filtered by Polars.

    columns: of a group, only these columns, in this order.
    string_type: strings as "utf8-view" (the default: Polars' own string
        layout, no conversion), "utf8" or "large-utf8".
    sorted: columns whose values never decrease, as ``zarrow.table``.
    anonymous: do not sign object store requests (a public bucket).
    options: as ``zarrow.read``: ``decode_cf``, ``long``, ``categorical_values``.

    anndata categoricals arrive as ``pl.Categorical`` (their codes and
    categories, unless ``categorical_values=True``), ordered ones as a
    ``pl.Enum`` of their categories (read with the schema, for their order),
    nullable columns with their nulls. Where a filter is not pushed (a long
    table), its comparisons of a categorical with strings (``==``,
    ``is_in``) are first evaluated on its categories, once, and rows whose
    codes name none of them never cross to Polars. Children of a group that
    are not columns are named once, in a ``ZarrowWarning``.

    >>> import polars as pl, zarrow
    >>> lf = zarrow.scan("testdata/stores/obs.zarr", columns=["barcode", "cell_type", "n_genes"])
    >>> lf.collect_schema()
    Schema([('barcode', String), ('cell_type', String), ('n_genes', Int32)])
    >>> lf.head(2).collect().rows()
    [('GGATATCCATGCTAAC-1', 'Dendritic cell', 1896), ('CCCTTCAGGTATCCTA-1', 'CD4 T cell', 3601)]
    >>> big = lf.filter(pl.col("n_genes") > 2000).group_by("cell_type").agg(pl.len())
    >>> big.sort("cell_type").head(3).collect().rows()
    [('B cell', 69), ('CD14 Monocyte', 74), ('CD4 T cell', 62)]
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    from . import _open, _probe, _warn_skipped
    from ._kept import located

    path, kept = located(path_or_url)
    opened = dict(options, string_type=string_type or "utf8-view", anonymous=anonymous)
    if kept is not None:
        opened = kept._options(opened)
    probe, flat = kept._probe(columns, opened) if kept is not None else _probe(path, columns, opened)
    _warn_skipped(probe, stacklevel=2)
    # An ordered categorical is an Enum of its categories (the reader read
    # them when it was opened).
    enums = {name: pl.Enum(categories) for name, categories in probe._ordered_categories()}
    imported = pl.DataFrame(probe._schema_only()).schema
    schema = pl.Schema({name: enums.get(name, dtype) for name, dtype in imported.items()})
    names = list(schema.names())

    def frame_of(batch: Any) -> pl.DataFrame:
        frame = pl.DataFrame(batch)
        # By name (`pl.col` would read `^a.*$` as a pattern).
        casts = [frame.get_column(name).cast(dtype) for name, dtype in enums.items() if name in frame.columns]
        return frame.with_columns(casts) if casts else frame

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
        # `n_rows` comes before the predicate (the first n rows, then
        # filtered): such a scan is not pushed.
        if predicate is not None and n_rows is None and not opened.get("long") and not flat:
            pushed = _pushed(predicate, wanted, read_columns, batch_size)
            if pushed is not None:
                yield from pushed
                return
        # All of them: the scan's own selection (an array's one column has no
        # name to select).
        # A long table reads its coordinates whatever the selection (a
        # selected one would come twice): all of it, then selected here.
        long = bool(opened.get("long"))
        selection = columns if read_columns == names or long else read_columns
        # An N-d array and a long table take no row selection: their first
        # n rows are cut here.
        cut = flat or long
        limit = None if cut else n_rows
        keep = _kept_categories(predicate, schema) if predicate is not None and not flat else None
        # Polars' batch size is a hint: the reader's batches stay chunk-aligned
        # (slices of decoded chunks), gathered into growing ones up to it, so
        # that a query that stops early (`filter(...).head(3)`) reads little
        # more than it uses. An N-d array's batches are its chunk rows.
        gather = None if flat else batch_size
        reader = _open(path, selection, limit=limit, keep=keep, gather=gather, **opened)
        left = n_rows if cut else None
        while (batch := reader._next_stream()) is not None:
            frame = frame_of(batch)
            if left is not None:
                frame, left = frame.head(left), left - min(left, frame.height)
            if predicate is not None:
                frame = frame.filter(predicate)
            if frame.columns != wanted:
                frame = frame.select(wanted)
            yield frame
            if left == 0:
                return

    def _pushed(
        predicate: pl.Expr, wanted: list[str], read_columns: list[str], batch_size: Optional[int]
    ) -> Optional[Iterator[pl.DataFrame]]:
        """The scan with the parts of `predicate` that pyarrow expresses
        evaluated in zarrow (see ``_pushdown``), Polars' own predicate applied
        to what comes back where a part is not; ``None``: no part is."""
        try:
            from . import _pushdown
        except ImportError:  # pragma: no cover (pyarrow is needed for it)
            return None
        blob, complete = _pushdown.polars_pushed(predicate, schema)
        if blob is None:
            return None
        output = wanted if complete else read_columns
        reader, _why = _pushdown.filtered(path, opened, columns, sorted, blob, output, batch_size, kept)
        if reader is None:
            return None

        def frames() -> Iterator[pl.DataFrame]:
            while (batch := reader._next_stream()) is not None:
                frame = frame_of(batch)
                if not complete:
                    frame = frame.filter(predicate).select(wanted)
                yield frame

        return frames()

    return register_io_source(source, schema=schema, is_pure=True, explain_name="zarrow", explain_detail=str(path))


def _conjuncts(predicate: Any) -> list:
    """`predicate` split at its top-level ``&``s (Polars' expression tree, read
    through its JSON form: the operator is not otherwise exposed)."""
    tree = json.loads(predicate.meta.serialize(format="json"))
    binary = tree.get("BinaryExpr") if isinstance(tree, dict) else None
    if binary is None or binary.get("op") not in ("And", "LogicalAnd"):
        return [predicate]
    # `meta.pop` gives the inputs last first: the query's order is kept.
    return [part for side in reversed(predicate.meta.pop()) for part in _conjuncts(side)]


def _kept_categories(predicate: Any, schema: Any) -> Optional[list]:
    """For each categorical column a conjunct compares with strings
    (``== "x"``, ``.is_in([...])``), the categories a matching row can hold:
    zarrow compares them with the column's categories once, then keeps only
    the rows whose codes name one (``None``: no such conjunct)."""
    import polars as pl

    categorical = {n for n, t in schema.items() if t == pl.Categorical or isinstance(t, pl.Enum)}
    keep: dict = {}
    for part in _conjuncts(predicate):
        found = _compared_strings(part, categorical)
        if found is not None:
            column, values = found
            keep[column] = keep[column] & values if column in keep else values
    return [(column, sorted(values)) for column, values in keep.items()] or None


def _compared_strings(part: Any, categorical: set) -> Optional[Tuple[str, set]]:
    """``(column, strings)`` when `part` is ``col == "x"`` (either way round) or
    ``col.is_in([...])`` (nulls never equal) with `col` categorical."""
    import polars as pl

    tree = json.loads(part.meta.serialize(format="json"))
    if not isinstance(tree, dict):
        return None
    binary = tree.get("BinaryExpr")
    if binary is not None and binary.get("op") == "Eq":
        for column, literal in ((binary["left"], binary["right"]), (binary["right"], binary["left"])):
            name = column.get("Column") if isinstance(column, dict) else None
            scalar = literal.get("Literal", {}).get("Scalar", {}) if isinstance(literal, dict) else {}
            value = scalar.get("String") if isinstance(scalar, dict) else None
            if name in categorical and isinstance(value, str):
                return name, {value}
        return None
    function = tree.get("Function")
    if function is None or function.get("function") != {"Boolean": {"IsIn": {"nulls_equal": False}}}:
        return None
    inputs = function.get("input", [])
    name = inputs[0].get("Column") if inputs and isinstance(inputs[0], dict) else None
    if name not in categorical or len(inputs) != 2 or "Literal" not in inputs[1]:
        return None
    # The literal's values, evaluated by Polars itself (`meta.pop` gives the
    # inputs last first).
    values = pl.select(part.meta.pop()[0]).to_series()
    if isinstance(values.dtype, pl.List):
        values = values.explode()
    # Polars casts the list to an Enum column's type first: its strings.
    if values.dtype == pl.Categorical or isinstance(values.dtype, pl.Enum):
        values = values.cast(pl.String)
    if values.dtype != pl.String:
        return None
    return name, {v for v in values.to_list() if v is not None}
