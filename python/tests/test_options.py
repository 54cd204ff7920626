"""The package's keywords are the library's options, declared once
(zarrow::options): every named keyword is a declared option with its declared
default, every declared option is taken by name, as ``zarrow convert``'s flag
without the dashes, and the stub's signatures and the docs' tables are what
``python/gen_stubs.py`` makes of the declarations."""

from __future__ import annotations

import importlib.util
import inspect

import pyarrow as pa
import pytest

import zarrow
import zarrow._dataset
from zarrow import _zarrow
from conftest import REPO, STORES

OBS = STORES / "obs.zarr"


def keys(*groups: str) -> set:
    return {key for group in groups for key, _, _ in _zarrow.options(group)}


# Each function, the option groups its keywords set, and its own parameters
# (not options).
FUNCTIONS = [
    (zarrow.read, ("url", "read", "table"), {"path_or_url"}),
    (zarrow.info, ("url", "read"), {"path"}),
    (zarrow.write, ("url", "write"), {"data", "path"}),
    (zarrow.convert, ("url", "convert"), {"src", "dst"}),
    (zarrow.sql, ("url", "read"), {"query", "tables", "partitions"}),
    (zarrow.table, ("url", "ZARR table"), {"path_or_url"}),
    (zarrow.build_stats, ("url",), {"location"}),
    (zarrow.scan, ("url", "ZARR table"), {"path_or_url"}),
    (zarrow._dataset.dataset, ("url", "ZARR table"), {"path_or_url"}),
]

# Each function taking options (the private `_open` too: `read`'s engines'
# door), the native function whose declarations give its defaults, and its
# own parameters (not options). `scan` and `dataset` name only options that
# `table` declares as `read` does.
DEFAULTS = [
    (zarrow.read, "read", {"path_or_url"}),
    (zarrow._open, "read", {"path_or_url", "keep", "gather"}),
    (zarrow.info, "info", {"path"}),
    (zarrow.write, "write", {"data", "path"}),
    (zarrow.convert, "convert", {"src", "dst"}),
    (zarrow.build_stats, "build_stats", {"location"}),
    (zarrow.sql, "sql", {"query", "tables", "partitions"}),
    (zarrow.table, "table", {"path_or_url"}),
    (zarrow.scan, "table", {"path_or_url"}),
    (zarrow._dataset.dataset, "table", {"path_or_url"}),
]


def declared(native: str) -> dict:
    return {d["key"]: d for d in _zarrow.declarations(native)}


@pytest.mark.parametrize("function, native, own", DEFAULTS, ids=lambda f: getattr(f, "__name__", ""))
def test_every_python_default_is_its_declaration(function, native, own):
    options = declared(native)
    checked = 0
    for name, p in inspect.signature(function).parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD or name in own:
            continue
        assert name in options, f"{function.__name__}({name}=...) is no option of {native}"
        default, expected = p.default, options[name]["default"]
        # 60.0 for a declared 60 seconds; but True is no 1, nor "3" a 3.
        assert default == expected and isinstance(default, bool) == isinstance(expected, bool), (
            f"{function.__name__}({name}={default!r}): declared {expected!r}"
        )
        assert type(default) in {type(expected), float if type(expected) is int else None}, name
        checked += 1
    # `convert` and `build_stats` name none; the others do.
    assert checked or native in ("convert", "build_stats"), function


def test_declarations_say_what_each_option_takes():
    write, read = declared("write"), declared("read")
    assert write["mode"]["default"] is None and write["mode"]["takes"] == "create, overwrite or append"
    assert write["lock_timeout"]["default"] == 60 and write["zarr_format"]["default"] == 3
    assert write["compressor"]["default"] == "default" and write["overwrite"]["default"] is False
    assert read["batch_size"]["default"] is None and "at least 1" in read["batch_size"]["takes"]
    assert read["max_chunk_bytes"]["default"] == 2 << 30
    # A function's own defaults: SQL tables read categoricals as values.
    assert read["categorical_values"]["default"] is False
    assert declared("sql")["categorical_values"]["default"] is True
    assert declared("table")["categorical_values"]["default"] is True
    assert {d["group"] for d in _zarrow.declarations("read")} == {"url", "read", "table"}
    with pytest.raises(TypeError, match="no function"):
        _zarrow.declarations("nothing")


def test_mode_and_batch_size_are_refused_by_name(tmp_path):
    table = pa.table({"s": ["a", "b", "c"]})
    path = tmp_path / "t.zarr"
    with pytest.raises(zarrow.OptionError, match='mode "replace": use create, overwrite or append'):
        zarrow.write(table, path, mode="replace")
    assert not path.exists()
    for bad in (0, -1, "many"):
        with pytest.raises(zarrow.OptionError, match=f'batch_size "{bad}": use a number, at least 1'):
            zarrow.read(OBS, batch_size=bad)
    with pytest.raises(zarrow.OptionError, match="batch_size"):
        zarrow.convert(OBS, tmp_path / "o.parquet", batch_size=0)
    assert zarrow.write(table, path) == 3
    # The mode and its shorthands agree, or are refused by name.
    with pytest.raises(zarrow.OptionError, match="mode create and overwrite"):
        zarrow.write(table, path, mode="create", overwrite=True)
    with pytest.raises(zarrow.OptionError, match="mode overwrite and append"):
        zarrow.write(table, path, mode="overwrite", append=True)
    with pytest.raises(zarrow.OptionError, match="lock_timeout"):
        zarrow.write(table, path, mode="overwrite", lock_timeout=5)
    with pytest.raises(zarrow.ConflictError):
        zarrow.write(table, path, mode="create")
    assert zarrow.write(table.slice(0, 2), path, mode="overwrite", overwrite=True) == 2
    assert zarrow.write(table, path, mode="append", lock_timeout=5) == 3
    assert pa.table(zarrow.read(path)).column("s").to_pylist() == ["a", "b", "a", "b", "c"]
    # The mode is the library's: `convert` takes it too, for any output.
    out = tmp_path / "o.parquet"
    assert zarrow.convert(path, out) == {"rows": 5}
    with pytest.raises(zarrow.ConflictError):
        zarrow.convert(path, out)
    assert zarrow.convert(path, out, mode="overwrite", rows=(0, 1)) == {"rows": 1}
    assert zarrow.convert(out, path, mode="append") == {"rows": 1}
    assert pa.table(zarrow.read(path)).num_rows == 6


def _generator():
    spec = importlib.util.spec_from_file_location("gen_stubs", REPO / "python" / "gen_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_stub_and_docs_are_up_to_date():
    gen = _generator()
    for path, text in gen.outputs():
        assert path.read_text() == text, (
            f"{path.relative_to(REPO)} differs from the option declarations: "
            "run python python/gen_stubs.py"
        )


def test_the_generator_follows_the_declarations(monkeypatch):
    gen = _generator()
    # A table edited by hand is regenerated...
    docs = (REPO / "docs" / "python.md").read_text()
    assert gen.docs(docs.replace("| `mode` |", "| `mode_` |")) == docs
    stub = (REPO / "python" / "zarrow" / "__init__.pyi").read_text()
    assert 'mode: Optional[Literal["create", "overwrite", "append"]] = None,' in stub
    assert "lock_timeout: float = 60.0," in stub
    # ...and so is a stub's default, from the declaration, not the signature
    # (whose own default the test above compares).
    def write(data, path, compressor: str = "gzip", **options) -> int: ...

    assert 'compressor: Literal["default", "zstd", "gzip", "blosc", "none"] = "default"' in gen.signature(
        "write", write, "write"
    )
    # A phrase the generator cannot type is an error, not a guess.
    with pytest.raises(ValueError, match="no Python type"):
        gen.python_type({"key": "k", "kind": "Other", "takes": "a shape (N, M)"})


@pytest.mark.parametrize("function, groups, own", FUNCTIONS, ids=lambda f: getattr(f, "__name__", ""))
def test_named_keywords_are_declared_options(function, groups, own):
    params = {
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    }
    assert params - own <= keys(*groups), params - own - keys(*groups)


def test_the_groups_compose():
    assert keys("convert") >= keys("read", "table", "write") - {"overwrite"}
    assert not keys("convert") & keys("url")
    assert "decode_cf" in keys("ZARR table") and "sorted" in keys("ZARR table")
    # Documented, with what each takes.
    for key, kind, doc in _zarrow.options("convert"):
        assert doc.strip(), key
        assert kind in ("Flag", "Value", "List"), (key, kind)


def test_an_option_not_named_in_the_signature_reaches_the_reader():
    # zarr-python's obs.zarr: its chunks decode to more than 16 bytes.
    assert pa.table(zarrow.read(OBS, columns=["cell_type"])).num_rows > 0
    with pytest.raises(zarrow.ZarrowError, match="exceeds the limit of 16 bytes"):
        list(zarrow.read(OBS, columns=["cell_type"], max_chunk_bytes=16))
    with pytest.raises(zarrow.ZarrowError, match="exceeds the limit of 16 bytes"):
        list(zarrow.sql("SELECT count(cell_type) FROM t", {"t": OBS}, max_chunk_bytes=16))


def test_lists_and_sizes_by_keyword(tmp_path):
    table = pa.table({"s": ["a", "b", "c"]})
    # chunk_shape shapes N-d arrays only: refused by name for a table.
    with pytest.raises(zarrow.OptionError, match="chunk_shape"):
        zarrow.write(table, tmp_path / "t.zarr", chunk_shape=[2, 2])
    assert zarrow.write(table, tmp_path / "t.zarr", chunk_len=2) == 3
    got = pa.table(zarrow.read(tmp_path / "t.zarr", rows=(1, 3), max_chunk_bytes="1K"))
    assert got.column("s").to_pylist() == ["b", "c"]


def test_unknown_and_bad_options_are_refused():
    with pytest.raises(TypeError, match="max_chunk_byte"):
        zarrow.read(OBS, max_chunk_byte=16)
    with pytest.raises(zarrow.OptionError, match="max_chunk_bytes"):
        zarrow.read(OBS, max_chunk_bytes="16X")
    with pytest.raises(zarrow.OptionError, match="concurrency"):
        zarrow.table(OBS, concurrency="many")
