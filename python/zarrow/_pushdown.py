"""Filters pushed into zarrow: the engines' predicates as pyarrow expressions,
sent to the native module pickled (``Expression.__reduce__``: an Arrow IPC
file), where ``src/expression.rs`` reads them as DataFusion expressions and a
DataFusion plan over the Zarr table filters: the table's scan skips the chunks
whose statistics (or a sorted column) rule out every row, and DataFusion keeps
exactly the matching rows (``src/pushdown.rs``).

- DuckDB hands ``zarrow.dataset`` a pyarrow expression: pushed whole, or not
  at all (then the dataset filters as before).
- Polars hands ``zarrow.scan`` a ``pl.Expr``: each top-level ``&`` part is
  turned into a pyarrow expression by Polars' own converter (the one its Delta
  and Iceberg scans use), or, for a categorical's ``==`` and ``is_in``, by
  zarrow (a categorical's order comparisons follow its categories, not its
  strings: Polars applies them); the
  parts so turned are pushed (a row failing one fails the whole predicate),
  and Polars' own predicate is applied to what comes back when any part was
  not.

What cannot be pushed (a long table, an N-d array read flat, a filter that
``expression.rs`` or DataFusion does not take: a cast, another function) is
read and filtered as without pushdown.
"""

from __future__ import annotations

import functools
import math
import operator
import threading
from collections import OrderedDict
from typing import Any, Optional, Sequence, Tuple

# Read options that are not a table's: a long table and an N-d array are never
# pushed into; rows, limit and batch size are the plain reader's.
_READER_ONLY = ("long", "rows", "limit", "batch_size")


def pickled(expression: Any) -> bytes:
    """`expression` as pyarrow pickles it (``Expression.__reduce__``: an
    Arrow IPC file holding its literals, its tree in the schema's metadata),
    what the native module reads."""
    _rebuild, (buffer,) = expression.__reduce__()
    return buffer.to_pybytes()


def refusal(expression: Any) -> Optional[str]:
    """Why `expression` cannot be pushed (``None``: it can, as far as its
    form goes)."""
    from . import _zarrow

    return _zarrow.refusal(pickled(expression))


def filtered(
    path: Any,
    options: dict,
    columns: Optional[Sequence[str]],
    sorted: Optional[Sequence[str]],
    filter: bytes,
    output: Sequence[str],
    batch_size: Optional[int] = None,
    kept: Any = None,
) -> Tuple[Any, Optional[str]]:
    """The rows of `output` (columns, in order) of the node at `path` (read with
    `options`, the dataset's or scan's read options, and its `columns`) where
    the pickled pyarrow expression `filter` holds (``pickled``), as a
    ``zarrow.Reader``; or ``(None, why)``
    when the filter cannot be taken. `sorted`: columns whose values never
    decrease, as ``zarrow.table``; `kept`: the ``zarrow.Dataset`` `path`
    is, whose table kept open is filtered."""
    from . import _columns, _location, _zarrow

    table = {k: v for k, v in options.items() if k not in _READER_ONLY}
    table["columns"] = _columns(columns)
    table["sorted"] = _columns(sorted)
    # A reader's default (dictionaries), not a SQL table's (values).
    table["categorical_values"] = bool(options.get("categorical_values"))
    if kept is not None:
        return kept._kept_table(table).filtered(filter, list(output), batch_size)
    return _zarrow.filtered(_location(path), table, filter, list(output), batch_size)


# The pushed forms of the Polars predicates converted last (a notebook's or a
# dashboard's repeated query is converted once), by the predicate's serialized
# form and the scan's schema.
_CONVERTED: "OrderedDict[tuple, Tuple[Optional[bytes], bool]]" = OrderedDict()
_CONVERTED_LOCK = threading.Lock()
_CONVERTED_KEPT = 256


def polars_pushed(predicate: Any, schema: Any) -> Tuple[Optional[bytes], bool]:
    """`polars_predicate`'s expression pickled (``None``: no part can be
    pushed), and whether it is all of the predicate; kept for the predicates
    converted last."""
    try:
        key: Optional[tuple] = (predicate.meta.serialize(format="binary"), str(schema))
    except Exception:  # an expression Polars cannot serialize: converted each time
        key = None
    if key is not None:
        with _CONVERTED_LOCK:
            found = _CONVERTED.get(key)
            if found is not None:
                _CONVERTED.move_to_end(key)
                return found
    expression, complete = polars_predicate(predicate, schema)
    pushed = (None if expression is None else pickled(expression), complete)
    if key is not None:
        with _CONVERTED_LOCK:
            _CONVERTED[key] = pushed
            if len(_CONVERTED) > _CONVERTED_KEPT:
                _CONVERTED.popitem(last=False)
    return pushed


def polars_predicate(predicate: Any, schema: Any) -> Tuple[Optional[Any], bool]:
    """`predicate` (a ``pl.Expr``) as a pyarrow expression of the parts of it
    that can be turned into one, and whether that is all of it. ``None``: no
    part can. `schema`: the scan's Polars schema."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401  (`pa.compute`: a submodule pyarrow does not import)

    from ._polars import _compared_strings, _conjuncts

    import polars as pl

    categorical = {n for n, t in schema.items() if t == pl.Categorical or isinstance(t, pl.Enum)}
    pushed, complete = [], True
    for part in _conjuncts(predicate):
        # A categorical compared by order follows its categories' order in
        # Polars (an Enum), not its strings': only `==` and `is_in` on one
        # are pushed, as the set of strings they allow.
        if categorical & set(part.meta.root_names()):
            found = _compared_strings(part, categorical)
            converted = None
            if found is not None:
                column, values = found
                converted = pa.compute.field(column).isin(sorted(values))
        else:
            converted = _converted(part, schema)
        # A part zarrow does not take (a cast, another function) stays
        # Polars'.
        if converted is not None and refusal(converted) is not None:
            converted = None
        if converted is None:
            complete = False
        else:
            pushed.append(converted)
    if not pushed:
        return None, False
    return functools.reduce(operator.and_, pushed), complete


def _converted(part: Any, schema: Any) -> Optional[Any]:
    """`part` as a pyarrow expression by Polars' own converter
    (``to_pyarrow_predicate``, the one its Delta and Iceberg scans use, which
    renders the expression as Python source of ``pa.compute`` calls, refusing
    string literals and names it cannot quote: it is evaluated in the
    namespace Polars' Delta scan gives it, with the builtins pyarrow itself
    imports through). ``None``: Polars cannot."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401  (`pa.compute` in the source)

    try:
        source = part._pyexpr.to_pyarrow_predicate(schema)
    except Exception:  # an internal API: a change of it is "cannot"
        return None
    if source is None:
        return None
    from polars._utils.convert import to_py_date, to_py_datetime, to_py_time, to_py_timedelta
    from polars.datatypes import Date, Datetime, Duration

    namespace = {
        "pa": pa,
        "Date": Date,
        "Datetime": Datetime,
        "Duration": Duration,
        "to_py_date": to_py_date,
        "to_py_datetime": to_py_datetime,
        "to_py_time": to_py_time,
        "to_py_timedelta": to_py_timedelta,
        # Float literals as Rust prints them.
        "NaN": math.nan,
        "inf": math.inf,
    }
    try:
        expression = eval(source, namespace)  # noqa: S307 (Polars' rendering of our own predicate)
    except Exception:
        return None
    return expression if isinstance(expression, pa.compute.Expression) else None
