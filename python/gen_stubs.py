"""Generate the option parts of the package's stub and docs from the option
declarations (``zarrow._zarrow.declarations``, the library's ``options!``):

- ``python/zarrow/__init__.pyi``: the public functions' signatures, each option
  keyword typed from what its declaration takes, with the declared default;
- ``docs/python.md``: a table of the options each function takes by keyword.

Each is written between its marker comments; the rest of the file is left as
it is. Run from anywhere, with the built package importable::

    python python/gen_stubs.py           # rewrite the generated parts
    python python/gen_stubs.py --check   # exit 1 if a file differs

``python/tests/test_options.py`` fails when a checked-in file differs from
what this writes.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

# The installed package, with its native module: not the source tree beside
# this script, which `python python/gen_stubs.py` puts first on the path.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import zarrow  # noqa: E402
import zarrow._dataset  # noqa: E402
from zarrow import _zarrow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STUB = REPO / "python" / "zarrow" / "__init__.pyi"
DOCS = REPO / "docs" / "python.md"

# The public functions, in the stub's order: each with the native function
# whose declarations give its options' defaults (``None``: it names none).
# ``scan`` and ``dataset`` open ``table``'s options (the engines' pushed
# filters read through a ZARR table).
FUNCTIONS: list[tuple[str, Callable[..., Any], str | None]] = [
    ("read", zarrow.read, "read"),
    ("info", zarrow.info, "info"),
    ("write", zarrow.write, "write"),
    ("convert", zarrow.convert, "convert"),
    ("build_stats", zarrow.build_stats, "build_stats"),
    ("sql", zarrow.sql, "sql"),
    ("scan", zarrow.scan, "table"),
    ("table", zarrow.table, "table"),
    ("register", zarrow.register, None),
    ("dataset", zarrow._dataset.dataset, "table"),
]

# What the stub says of parameters that are no option, and of results, where
# the source's annotation is not what a caller should see.
LOCATION_PARAMETERS = {"path_or_url", "path", "src", "dst", "location"}
RESULTS = {
    "info": "Union[ArrayInfo, GroupInfo]",
    "convert": "dict[str, int]",
    "build_stats": "dict[str, int]",
    "dataset": "Any",
}

WIDTH = 100


def declarations(native: str | None) -> dict[str, dict]:
    """The options a native function takes, by key."""
    if native is None:
        return {}
    return {d["key"]: d for d in _zarrow.declarations(native)}


def _choices(takes: str) -> list[str] | None:
    """The values of a phrase ``a, b or c`` when each is a plain word."""
    words = re.split(r", | or ", takes)
    if len(words) > 1 and all(re.fullmatch(r"[A-Za-z0-9_-]+", w) for w in words):
        return words
    return None


def python_type(declared: dict) -> str:
    """The Python type of an option, from what its declaration takes."""
    kind, takes = declared["kind"], declared["takes"]
    if kind == "Flag":
        return "bool"
    if kind == "List":
        return "Sequence[str]"
    if takes.startswith(("a number", "an integer")) and "seconds" not in takes:
        return "int"
    if takes.startswith("a number of seconds"):
        return "float"
    if takes.startswith("a byte count"):
        return "Union[int, str]"
    if takes.startswith("START..END"):
        return "Rows"
    if takes == "a text":
        return "str"
    choices = _choices(takes)
    if choices is not None:
        if all(c.isdigit() for c in choices):
            return f"Literal[{', '.join(choices)}]"
        return "Literal[{}]".format(", ".join(f'"{c}"' for c in choices))
    if kind == "Value":
        return "str"
    raise ValueError(f"{declared['key']}: no Python type for {takes!r}")


def source(value: Any) -> str:
    """A default as Python source, strings in double quotes."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(source(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner},)"
    return repr(value)


def python_default(declared: dict) -> str:
    """The declared default as Python source."""
    value = declared["default"]
    if python_type(declared) == "float" and isinstance(value, int):
        value = float(value)
    return source(value)


def _parameter(name: str, p: inspect.Parameter, declared: dict[str, dict]) -> str:
    if p.kind is inspect.Parameter.VAR_KEYWORD:
        return f"**{name}: Any"
    if name in declared:
        d = declared[name]
        annotation = python_type(d)
        if d["default"] is None:
            annotation = f"Optional[{annotation}]"
        return f"{name}: {annotation} = {python_default(d)}"
    annotation = "Location" if name in LOCATION_PARAMETERS else str(p.annotation)
    annotation = annotation.replace("PathLike", "Location")
    if p.default is inspect.Parameter.empty:
        return f"{name}: {annotation}"
    return f"{name}: {annotation} = {source(p.default)}"


def signature(name: str, function: Callable[..., Any], native: str | None) -> str:
    """A function's stub: its parameters as the source has them, each option
    typed and defaulted by its declaration."""
    declared = declarations(native)
    sig = inspect.signature(function)
    parts: list[str] = []
    star = False
    for pname, p in sig.parameters.items():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(_parameter(pname, p, declared))
    result = RESULTS.get(name, str(sig.return_annotation))
    one_line = f"def {name}({', '.join(parts)}) -> {result}: ..."
    if len(one_line) <= WIDTH:
        return one_line
    body = "".join(f"    {part},\n" for part in parts)
    return f"def {name}(\n{body}) -> {result}: ..."


def _replace(text: str, begin: str, end: str, body: str, path: Path) -> str:
    """``text`` with what lies between the lines ``begin`` and ``end`` replaced."""
    pattern = re.compile(rf"(^{re.escape(begin)}\n).*?(^{re.escape(end)}$)", re.S | re.M)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{path}: the markers {begin!r} ... {end!r} must appear once")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


STUB_BEGIN = "# <generated by python/gen_stubs.py from the option declarations>"
STUB_END = "# </generated>"


def stub(text: str) -> str:
    """The stub ``text`` with its signatures generated."""
    body = "".join(signature(*f) + "\n" for f in FUNCTIONS)
    return _replace(text, STUB_BEGIN, STUB_END, body, STUB)


DOCS_BEGIN = "<!-- generated by python/gen_stubs.py from the option declarations -->"
DOCS_END = "<!-- end of generated -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _doc(declared: dict) -> str:
    """The first paragraph of an option's doc, on one line, without the
    command line's direction tag (``[to Zarr]``)."""
    first = declared["doc"].split("\n\n")[0]
    first = " ".join(first.split())
    return re.sub(r"^\[[^\]]*\]\s*", "", first)


def _table(title: str, rows: Iterable[dict]) -> str:
    lines = [title, "", "| keyword | default | takes | what it does |", "|---|---|---|---|"]
    for d in rows:
        default = "" if d["default"] is None else f"`{python_default(d)}`"
        lines.append(
            f"| `{d['key']}` | {default} | {_cell(d['takes'])} | {_cell(_doc(d))} |"
        )
    return "\n".join(lines) + "\n"


def docs_tables() -> str:
    """The docs' tables: the options of each group and where a function
    takes them, then the defaults a function sets otherwise."""
    url = declarations("build_stats")
    info = declarations("info")
    read = declarations("read")
    write = declarations("write")
    convert = declarations("convert")
    table = declarations("table")

    def only(these: dict, *others: dict) -> list[dict]:
        return [d for k, d in these.items() if not any(k in o for o in others)]

    sections = [
        _table("Object stores and URLs (every function):", url.values()),
        _table(
            "Reading Zarr (`read`, `info`, `sql`, `table`, `scan`, `dataset`, `convert`):",
            only(info, url),
        ),
        _table("What of a node is read as a table (`read`, `convert`):", only(read, info)),
        _table("Writing Zarr (`write`, `convert`):", only(write, url)),
        _table("`convert` also takes:", only(convert, url, read, write)),
        _table("`table`, `scan` and `dataset` also take:", only(table, url, info)),
    ]
    # A default a function sets otherwise than the group declaring the key.
    base = {**write, **read}
    lines = ["Defaults a function sets otherwise:", "", "| function | keyword | default |", "|---|---|---|"]
    for native in dict.fromkeys(native for _, _, native in FUNCTIONS if native):
        for key, d in declarations(native).items():
            if key in base and d["default"] != base[key]["default"]:
                lines.append(f"| `{native}` | `{key}` | `{python_default(d)}` |")
    sections.append("\n".join(lines) + "\n")
    return "\n".join(sections)


def docs(text: str) -> str:
    """The docs ``text`` with its option tables generated."""
    return _replace(text, DOCS_BEGIN, DOCS_END, docs_tables(), DOCS)


def outputs() -> list[tuple[Path, str]]:
    """Each generated file with the text it should hold."""
    return [(STUB, stub(STUB.read_text())), (DOCS, docs(DOCS.read_text()))]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    stale = []
    for path, text in outputs():
        if path.read_text() != text:
            stale.append(path)
            if not check:
                path.write_text(text)
    for path in stale:
        verb = "differs from" if check else "rewritten from"
        print(f"{path.relative_to(REPO)} {verb} the option declarations", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
