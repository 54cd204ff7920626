import os
from typing import Any, Iterator, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union

__version__: str

PathLike = Union[str, os.PathLike[str]]
# A path, a URL (an Icechunk location too: "icechunk+s3://bucket/repo?path=obs"), an
# obstore store (obstore.store.S3Store, GCSStore, AzureStore, HTTPStore, LocalStore),
# or, to read, an icechunk-python read-only Session or IcechunkStore.
Location = Union[str, os.PathLike[str], Any]
StringType = Literal["utf8", "large-utf8", "large_utf8", "utf8-view", "utf8_view"]
Rows = Union[Tuple[int, int], range, slice]

class ZarrowError(ValueError):
    # The error's typed context (None where the error has no such field).
    kind: str
    location: Optional[str]
    path: Optional[str]
    key: Optional[str]
    field: Optional[str]
    codec: Optional[str]
    expected: Optional[str]
    found: Optional[str]

class ZarrowIOError(ZarrowError, OSError): ...
class ZarrowWarning(UserWarning): ...

class Reader:
    """A stream of record batches read from a Zarr array or group (Arrow PyCapsule
    protocol); consumed once."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    @property
    def schema(self) -> Any:
        """The schema, as a ``pyarrow.Schema`` (needs pyarrow)."""
    @property
    def total_rows(self) -> Optional[int]:
        """The rows the stream yields; ``None`` for a query's answer."""
    @property
    def skipped(self) -> list[str]:
        """The children of the group that are not columns, each with the reason."""
    def __iter__(self) -> Iterator[Any]: ...
    def to_polars(self) -> Any:
        """The whole stream as a ``polars.DataFrame`` (needs polars)."""
    def __next__(self) -> Any:
        """The next batch, as a ``pyarrow.RecordBatch`` (needs pyarrow)."""

class Table:
    """A Zarr table for datafusion-python 55: ``ctx.register_table(name, t)``."""

    def __datafusion_table_provider__(self, session: Any) -> object: ...
    @property
    def schema(self) -> Any: ...
    @property
    def sorted_columns(self) -> list[str]: ...

class TableFactory:
    """``STORED AS ZARR`` for datafusion-python 55 (see ``register``)."""

    def __init__(self) -> None: ...
    def __datafusion_table_provider_factory__(self, codec: Any) -> object: ...

class ArrayInfo(TypedDict):
    node: Literal["array"]
    zarr_format: int
    shape: list[int]
    chunk_shape: list[int]
    data_type: str
    fill_value: str
    chunk_key_encoding: str
    codecs: str
    arrow_type: str
    chunks: int
    chunks_present: int
    attributes: dict[str, Any]

class ColumnInfo(TypedDict):
    name: str
    arrow_type: str
    rows: int

class GroupInfo(TypedDict):
    node: Literal["group"]
    zarr_format: int
    anndata: Optional[str]
    attributes: dict[str, Any]
    children: list[dict[str, Any]]
    columns: list[ColumnInfo]
    not_columns: list[str]

def read(
    path_or_url: Location,
    columns: Optional[Sequence[str]] = None,
    rows: Optional[Rows] = None,
    string_type: Optional[StringType] = None,
    batch_size: Optional[int] = None,
    *,
    limit: Optional[int] = None,
    long: bool = False,
    decode_cf: bool = True,
    categorical_values: bool = False,
    anonymous: bool = False,
    **options: Any,
) -> Reader: ...
def info(
    path: Location,
    string_type: Optional[StringType] = None,
    *,
    anonymous: bool = False,
    **options: Any,
) -> Union[ArrayInfo, GroupInfo]: ...
def write(
    data: Any,
    path: Location,
    zarr_format: Optional[Literal[2, 3]] = None,
    encoding: Optional[Literal["default", "zarrs-vlen", "zep0007"]] = None,
    compressor: Optional[Literal["zstd", "gzip", "blosc", "none"]] = None,
    chunk_len: Optional[int] = None,
    nulls: Optional[Literal["error", "fill"]] = None,
    overwrite: bool = False,
    *,
    level: Optional[int] = None,
    shard_len: Optional[int] = None,
    layout: Optional[Literal["plain", "anndata"]] = None,
    anonymous: bool = False,
    mode: Optional[Literal["create", "overwrite", "append"]] = None,
    lock_timeout: Optional[float] = None,
    **options: Any,
) -> int: ...
def convert(src: Location, dst: Location, **options: Any) -> dict[str, int]: ...
def build_stats(location: Location, **options: Any) -> dict[str, int]: ...
def sql(
    query: str,
    tables: Optional[Mapping[str, Location]] = None,
    *,
    string_type: Optional[StringType] = None,
    partitions: Optional[int] = None,
    decode_cf: bool = True,
    categorical_values: Optional[bool] = None,
    anonymous: bool = False,
    **options: Any,
) -> Reader: ...
def scan(
    path_or_url: Location,
    *,
    columns: Optional[Sequence[str]] = None,
    string_type: Optional[StringType] = None,
    sorted: Optional[Sequence[str]] = None,
    anonymous: bool = False,
    **options: Any,
) -> Any: ...
def table(
    path_or_url: Location,
    *,
    columns: Optional[Sequence[str]] = None,
    string_type: Optional[StringType] = None,
    sorted: Optional[Sequence[str]] = None,
    decode_cf: bool = True,
    categorical_values: Optional[bool] = None,
    anonymous: bool = False,
    **options: Any,
) -> Table: ...
def register(ctx: Any) -> None: ...
def dataset(
    path_or_url: Location,
    *,
    anonymous: bool = False,
    sorted: Optional[Sequence[str]] = None,
    **options: Any,
) -> Any: ...
