"""Every corrupt store in testdata/bad raises zarrow.ZarrowError with zarrow's
message, in this interpreter (a crash would take pytest down with it); a consumer
pulling the stream (pyarrow) gets an error too, never a crash or a short table."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import zarrow
from conftest import BAD, STORES

EXPECTED = json.loads((BAD / "expected.json").read_text())


def read_everything(path, string_type):
    reader = zarrow.read(path, string_type=string_type)
    for _ in reader:
        pass


def test_the_corpus_is_listed():
    assert sorted(p.name.removesuffix(".zarr") for p in BAD.glob("*.zarr")) == sorted(EXPECTED)


@pytest.mark.parametrize("string_type", ["utf8", "large-utf8", "utf8-view"])
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_corrupt_store_raises_zarrow_error(case, string_type):
    path = BAD / f"{case}.zarr"
    with pytest.raises(zarrow.ZarrowError) as err:
        read_everything(path, string_type)
    message = str(err.value)
    kind = EXPECTED[case]
    if kind.startswith("Chunk:"):
        assert "chunk" in message, message
    # A consumer of the C stream sees the failure as its own exception type, with
    # zarrow's message.
    try:
        reader = zarrow.read(path, string_type=string_type)
    except zarrow.ZarrowError:
        return  # refused before any batch
    with pytest.raises((pa.ArrowException, zarrow.ZarrowError)) as err:
        pa.table(reader)
    assert message.split(":")[0] in str(err.value) or "chunk" in str(err.value)


# The class each variant of testdata/bad/expected.json (the Rust error variant
# make_bad.py records for the store) raises in Python: zarrow's documented
# hierarchy, written out here rather than taken from the package.
CLASS_OF_VARIANT = {
    "Metadata": "InvalidMetadataError",
    "Json": "InvalidMetadataError",
    "NodeNotFound": "NotFoundError",
    "UnsupportedCodec": "UnsupportedError",
    "UnsupportedDataType": "UnsupportedError",
    "NoColumns": "UnsupportedError",
    "LengthsDiffer": "UnsupportedError",
    "InvalidKey": "InvalidArgumentError",
    "Chunk:TooLarge": "LimitError",
}


def expected_class(variant: str) -> type:
    name = CLASS_OF_VARIANT.get(variant)
    if name is None and variant.startswith("Chunk:"):
        name = "InvalidStoreError"
    assert name is not None, f"no class written down for {variant}"
    return getattr(zarrow, name)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_corrupt_store_raises_the_class_of_its_error(case):
    """Through zarrow's own calls (read, then its batches) the error's class is
    the one of its kind, also when the failure comes out of the stream."""
    with pytest.raises(zarrow.ZarrowError) as err:
        read_everything(BAD / f"{case}.zarr", "utf8")
    assert type(err.value) is expected_class(EXPECTED[case]), f"{case}: {type(err.value).__name__}: {err.value}"


def test_every_class_is_a_zarrow_error_and_a_value_error():
    classes = [
        zarrow.NotFoundError,
        zarrow.InvalidStoreError,
        zarrow.InvalidMetadataError,
        zarrow.UnsupportedError,
        zarrow.InvalidArgumentError,
        zarrow.OptionError,
        zarrow.ConflictError,
        zarrow.BusyError,
        zarrow.ZarrowIOError,
        zarrow.QueryError,
        zarrow.LimitError,
    ]
    for cls in classes:
        assert issubclass(cls, zarrow.ZarrowError) and issubclass(cls, ValueError), cls
        assert cls.__name__ in zarrow.__all__, cls
    assert issubclass(zarrow.NotFoundError, FileNotFoundError)
    assert issubclass(zarrow.ZarrowIOError, OSError)
    assert issubclass(zarrow.InvalidMetadataError, zarrow.InvalidStoreError)
    assert issubclass(zarrow.OptionError, zarrow.InvalidArgumentError)
    assert issubclass(zarrow.BusyError, zarrow.ConflictError)


def small_table() -> pa.Table:
    return pa.table({"n": pa.array([1, 2, 3], pa.int64())})


def test_not_found(tmp_path):
    """A directory with no Zarr metadata: no node there."""
    with pytest.raises(zarrow.NotFoundError) as err:
        zarrow.read(tmp_path)
    assert isinstance(err.value, FileNotFoundError)
    assert "no Zarr array or group" in str(err.value)


def test_invalid_store():
    with pytest.raises(zarrow.InvalidStoreError, match="crc32c mismatch"):
        read_everything(BAD / "crc32c_mismatch.zarr", "utf8")


def test_invalid_metadata():
    with pytest.raises(zarrow.InvalidMetadataError, match="not valid JSON"):
        zarrow.read(BAD / "meta_not_json.zarr")


def test_unsupported():
    with pytest.raises(zarrow.UnsupportedError, match="unsupported codec"):
        zarrow.read(BAD / "meta_unknown_codec.zarr")


def test_option(tmp_path):
    with pytest.raises(zarrow.OptionError, match="compressor") as err:
        zarrow.write(small_table(), tmp_path / "t.zarr", compressor="bogus")
    assert isinstance(err.value, ValueError)
    assert not (tmp_path / "t.zarr").exists()


def test_invalid_argument():
    """Rows past the end of obs.zarr's 1000."""
    with pytest.raises(zarrow.InvalidArgumentError, match="outside") as err:
        zarrow.read(STORES / "obs.zarr", columns=["n_genes"], rows=(990, 1010))
    assert not isinstance(err.value, zarrow.OptionError)


def test_conflict(tmp_path):
    path = tmp_path / "t.zarr"
    zarrow.write(small_table(), path)
    with pytest.raises(zarrow.ConflictError, match="exists"):
        zarrow.write(small_table(), path, mode="create")
    # Rows of other columns than the table's.
    with pytest.raises(zarrow.ConflictError, match="missing"):
        zarrow.write(pa.table({"m": [1]}), path, mode="append")


def test_busy(tmp_path):
    """Another writer's lock (the OS's advisory lock beside the store, held here
    as another process would hold it)."""
    import fcntl

    path = tmp_path / "t.zarr"
    zarrow.write(small_table(), path)
    with open(tmp_path / ".t.zarr.zarrow-lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(zarrow.BusyError, match="another writer"):
            zarrow.write(small_table(), path, mode="append", lock_timeout=0.2)


def test_io(tmp_path):
    """An output under a file, which no directory can be made in."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(zarrow.ZarrowIOError) as err:
        zarrow.write(small_table(), blocker / "t.zarr")
    assert isinstance(err.value, OSError)


def test_query():
    with pytest.raises(zarrow.QueryError):
        zarrow.sql("SELEC 1")


def test_limit(tmp_path):
    with pytest.raises(zarrow.LimitError, match="over the limit of 10"):
        zarrow.convert(STORES / "obs.zarr", tmp_path / "o.parquet", max_rows=10)
    assert not (tmp_path / "o.parquet").exists()


# Typed context on the exception: each test writes one corruption and checks the
# attributes against what it wrote.


def v3_array(**changes) -> dict:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    doc.update(changes)
    return doc


def write_array(root, doc: dict):
    """An array store at `root` whose `zarr.json` is `doc`."""
    root.mkdir()
    (root / "zarr.json").write_text(json.dumps(doc))


def test_a_metadata_error_carries_the_document_the_field_and_the_values(tmp_path):
    store = tmp_path / "s.zarr"
    write_array(store, v3_array(node_type="tree"))
    with pytest.raises(zarrow.InvalidMetadataError) as err:
        zarrow.read(store)
    e = err.value
    assert e.kind == "InvalidMetadata"
    assert e.key == "zarr.json"
    assert e.field == "node_type"
    assert e.found == '"tree"'
    assert '"array"' in e.expected
    assert e.codec is None
    assert e.path is None and e.location is None


def test_a_missing_field_names_its_path(tmp_path):
    store = tmp_path / "s.zarr"
    doc = v3_array()
    doc["chunk_grid"]["configuration"] = {"shape": [2]}
    write_array(store, doc)
    with pytest.raises(zarrow.InvalidMetadataError) as err:
        zarrow.read(store)
    assert err.value.key == "zarr.json"
    assert err.value.field == "chunk_grid.configuration.chunk_shape"
    assert err.value.found is None


def test_a_codec_configuration_error_is_typed(tmp_path):
    store = tmp_path / "s.zarr"
    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": "high"}},
    ]
    write_array(store, v3_array(codecs=codecs))
    with pytest.raises(zarrow.InvalidMetadataError) as err:
        zarrow.read(store)
    e = err.value
    assert e.kind == "InvalidMetadata"
    assert e.key == "zarr.json"
    assert e.codec == "zstd"
    assert e.field == "configuration.level"
    assert "high" in e.found


def test_other_kinds_carry_their_context(tmp_path):
    """Not found: the kind and the node's path; an error raised without typed
    context still has every attribute."""
    with pytest.raises(zarrow.NotFoundError) as err:
        zarrow.read(tmp_path)
    assert err.value.kind == "NotFound"
    assert err.value.path is not None and str(tmp_path) in err.value.path
    assert err.value.key is None and err.value.field is None
    with pytest.raises(zarrow.UnsupportedError) as err:
        zarrow.read(BAD / "meta_unknown_codec.zarr")
    assert err.value.kind == "Unsupported"
    assert err.value.key == "zarr.json"
    assert err.value.codec is not None
    assert zarrow.ZarrowError("x").kind == "Other" and zarrow.ZarrowError("x").key is None


def test_a_linear_format_error_is_typed(tmp_path):
    """A linear-format document that breaks the RFC: the field (a path into the
    document), what was expected there and what was found, as attributes."""
    doc = tmp_path / "bad.json"
    doc.write_text(
        '["version","1.0.0","ndarray","shape",2,"strides",1,"offset",0,"order","row-major",'
        '"dtype","int8","length",2,"capacity",2,"data",1,300]'
    )
    with pytest.raises(zarrow.InvalidStoreError) as err:
        zarrow.convert(doc, tmp_path / "out.zarr")
    e = err.value
    assert e.kind == "InvalidData"
    assert e.field == "data[1]"
    assert e.expected == "a value of dtype int8"
    assert e.found == "300"
    assert not (tmp_path / "out.zarr").exists()
