#!/usr/bin/env python3
"""Build the bad-input corpus: every store here must make zarrow return a typed
error (never panic, hang or allocate without bound).

Each case is handcrafted from the byte layouts in shared/FORMATS.md, not written
by zarrow. `expected.json` names the error each case must give, as
"Variant" or "Chunk:ChunkErrorVariant"; the Rust test fails when a store has no
entry (and when an entry has no store).

Run with the project venv (numcodecs is used only to make valid frames that are
then corrupted):  .venv/bin/python testdata/bad/make_bad.py
"""
import json
import os
import shutil
import struct
from pathlib import Path

import numcodecs

HERE = Path(__file__).resolve().parent
EXPECTED = {}


def v3_array(name, data_type, shape, chunks, codecs, fill="", chunk_files=None, expect=None, extra=None):
    d = HERE / f"{name}.zarr"
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs, "attributes": {},
    }
    meta.update(extra or {})
    write(d, "zarr.json", json.dumps(meta).encode())
    for key, data in (chunk_files or {}).items():
        write(d, key, data)
    EXPECTED[name] = expect
    return d


def write(d, key, data):
    p = d / key
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def raw_store(name, files, expect):
    d = HERE / f"{name}.zarr"
    for key, data in files.items():
        write(d, key, data if isinstance(data, bytes) else data.encode())
    EXPECTED[name] = expect


def vlen(values, count=None):
    out = struct.pack("<I", len(values) if count is None else count)
    for v in values:
        out += struct.pack("<I", len(v)) + v
    return out


def zep(values, offsets=None, large=False):
    fmt = "<q" if large else "<i"
    if offsets is None:
        offsets = [0]
        for v in values:
            offsets.append(offsets[-1] + len(v))
    head = b"".join(struct.pack(fmt, o) for o in offsets)
    pad = (-len(head)) % 64
    return head + b"\0" * pad + b"".join(values)


def zarrs_vlen(offsets, data, width="<I", location="start", index_len=None):
    index = b"".join(struct.pack(width, o) for o in offsets)
    n = len(index) if index_len is None else index_len
    if location == "start":
        return struct.pack("<Q", n) + index + data
    return data + index + struct.pack("<Q", n)


VLEN = [{"name": "vlen-utf8", "configuration": {}}]
VLEN_B = [{"name": "vlen-bytes", "configuration": {}}]
ZV = lambda loc="start", t="uint32": [{"name": "zarrs.vlen", "configuration": {
    "data_codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "index_data_type": t, "index_location": loc}}]
I32 = [{"name": "bytes", "configuration": {"endian": "little"}}]


def sharding(inner_shape, index=None):
    return [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner_shape, "codecs": I32,
        "index_codecs": index or (I32 + [{"name": "crc32c"}]), "index_location": "end"}}]


def crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


def main():
    for p in HERE.glob("*.zarr"):
        if p.is_symlink() or p.is_file():
            p.unlink()
        else:
            shutil.rmtree(p)
    good = vlen([b"the", b"quick", b"brown", b"fox"])

    # --- vlen-utf8 / vlen-bytes layout ---
    v3_array("vlen_truncated_chunk", "string", [4], [4], VLEN, chunk_files={"c/0": good[:-2]}, expect="Chunk:Truncated")
    v3_array("vlen_count_past_chunk", "string", [4], [4], VLEN, chunk_files={"c/0": struct.pack("<I", 5) + good[4:]}, expect="Chunk:CountMismatch")
    v3_array("vlen_count_huge", "string", [4], [4], VLEN, chunk_files={"c/0": struct.pack("<I", 0xFFFFFFFF) + good[4:]}, expect="Chunk:CountMismatch")
    v3_array("vlen_chunk_shape_huge", "string", [4], [2**26], VLEN, chunk_files={"c/0": struct.pack("<I", 2**26) + good[4:]}, expect="Chunk:Truncated")
    bad_len = bytearray(good)
    struct.pack_into("<I", bad_len, 4, 1000)
    v3_array("vlen_length_past_end", "string", [4], [4], VLEN, chunk_files={"c/0": bytes(bad_len)}, expect="Chunk:Truncated")
    v3_array("vlen_length_huge", "string", [4], [4], VLEN, chunk_files={"c/0": good[:4] + struct.pack("<I", 0xFFFFFFFF) + good[8:]}, expect="Chunk:Truncated")
    v3_array("vlen_trailing_bytes", "string", [4], [4], VLEN, chunk_files={"c/0": good + b"junk"}, expect="Chunk:TrailingBytes")
    v3_array("vlen_empty_chunk_file", "string", [4], [4], VLEN, chunk_files={"c/0": b""}, expect="Chunk:Truncated")
    v3_array("vlen_invalid_utf8", "string", [4], [4], VLEN, chunk_files={"c/0": vlen([b"ok", b"\xff\xfe", b"", b"x"])}, expect="Chunk:InvalidUtf8")
    v3_array("vlen_invalid_utf8_overlong", "string", [2], [2], VLEN, chunk_files={"c/0": vlen([b"\xc0\xaf", b""])}, expect="Chunk:InvalidUtf8")

    # --- ZEP0007 layout ---
    zs = {"name": "string"}
    v3_array("zep_decreasing_offsets", zs, [3], [3], [], chunk_files={"c/0": zep([b"abc", b"de", b"f"], offsets=[0, 3, 2, 6])}, expect="Chunk:OffsetsDecrease")
    v3_array("zep_offset_out_of_range", zs, [3], [3], [], chunk_files={"c/0": zep([b"abc", b"de", b"f"], offsets=[0, 3, 5, 99])}, expect="Chunk:OffsetOutOfBounds")
    v3_array("zep_negative_offset", zs, [3], [3], [], chunk_files={"c/0": zep([b"abc", b"de", b"f"], offsets=[-4, 3, 5, 6])}, expect="Chunk:OffsetOutOfBounds")
    v3_array("zep_truncated_offsets", zs, [3], [3], [], chunk_files={"c/0": struct.pack("<iii", 0, 1, 2)}, expect="Chunk:Truncated")
    v3_array("zep_utf8_split_across_elements", zs, [2], [2], [], chunk_files={"c/0": zep([], offsets=[0, 1, 2]) + "é".encode()}, expect="Chunk:InvalidUtf8")
    v3_array("zep_large_offset_past_i64", {"name": "large_string"}, [1], [1], [], chunk_files={"c/0": zep([], offsets=[0, -1], large=True) + b"x"}, expect="Chunk:OffsetOutOfBounds")

    # --- zarrs.vlen ---
    v3_array("zarrs_vlen_index_past_end", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 1, 2], b"ab", index_len=1000)}, expect="Chunk:Truncated")
    v3_array("zarrs_vlen_index_len_huge", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 1, 2], b"ab", index_len=2**64 - 1)}, expect="Chunk:Truncated")
    v3_array("zarrs_vlen_end_index_past_start", "string", [2], [2], ZV("end"), chunk_files={"c/0": zarrs_vlen([0, 1, 2], b"ab", location="end", index_len=50)}, expect="Chunk:Truncated")
    v3_array("zarrs_vlen_decreasing", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 2, 1], b"ab")}, expect="Chunk:OffsetsDecrease")
    v3_array("zarrs_vlen_out_of_range", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 1, 3], b"ab")}, expect="Chunk:OffsetOutOfBounds")
    v3_array("zarrs_vlen_wrong_index_count", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 2], b"ab")}, expect="Chunk:Truncated")
    v3_array("zarrs_vlen_u64_offset_past_i64", "string", [1], [1], ZV(t="uint64"), chunk_files={"c/0": zarrs_vlen([0, 2**64 - 1], b"ab", width="<Q")}, expect="Chunk:OffsetOutOfBounds")
    v3_array("zarrs_vlen_invalid_utf8", "string", [2], [2], ZV(), chunk_files={"c/0": zarrs_vlen([0, 1, 2], b"a\x80")}, expect="Chunk:InvalidUtf8")
    v3_array("zarrs_vlen_too_short", "string", [2], [2], ZV(), chunk_files={"c/0": b"\x01\x02"}, expect="Chunk:Truncated")

    # --- compressors and checksums ---
    zstd = numcodecs.Zstd(level=1).encode(good)
    v3_array("zstd_garbage", "string", [4], [4], VLEN + [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}], chunk_files={"c/0": b"this is not a zstd frame"}, expect="Chunk:Decompress")
    v3_array("zstd_truncated", "string", [4], [4], VLEN + [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}], chunk_files={"c/0": zstd[:-6]}, expect="Chunk:Decompress")
    gz = numcodecs.GZip(level=5).encode(good)
    v3_array("gzip_truncated", "string", [4], [4], VLEN + [{"name": "gzip", "configuration": {"level": 5}}], chunk_files={"c/0": gz[:-9]}, expect="Chunk:Decompress")
    v3_array("gzip_garbage", "string", [4], [4], VLEN + [{"name": "gzip", "configuration": {"level": 5}}], chunk_files={"c/0": b"\x1f\x8b\x08\x00garbage garbage"}, expect="Chunk:Decompress")
    bl = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1).encode(good)
    blosc_cfg = [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 1, "blocksize": 0}}]
    v3_array("blosc_truncated", "string", [4], [4], VLEN + blosc_cfg, chunk_files={"c/0": bl[:-3]}, expect="Chunk:Decompress")
    huge = bytearray(bl)
    struct.pack_into("<I", huge, 4, 0x7FFFFFF0)  # claimed uncompressed size
    v3_array("blosc_header_claims_2gb", "string", [4], [4], VLEN + blosc_cfg, chunk_files={"c/0": bytes(huge)}, expect="Chunk:Decompress")
    v3_array("blosc_garbage", "string", [4], [4], VLEN + blosc_cfg, chunk_files={"c/0": b"\x02\x01\x21\x01" + b"\xff" * 12 + b"data"}, expect="Chunk:Decompress")
    crc = good + struct.pack("<I", 0xDEADBEEF)
    v3_array("crc32c_mismatch", "string", [4], [4], VLEN + [{"name": "crc32c"}], chunk_files={"c/0": crc}, expect="Chunk:Checksum")
    v3_array("crc32c_too_short", "string", [4], [4], VLEN + [{"name": "crc32c"}], chunk_files={"c/0": b"\x01\x02"}, expect="Chunk:Truncated")
    ints = struct.pack("<4i", 1, 2, 3, 4) * 4  # 64 bytes where 16 are expected
    v3_array("zstd_decodes_past_fixed_size", "int32", [4], [4], I32 + [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}], fill=0,
             chunk_files={"c/0": numcodecs.Zstd(level=1).encode(ints)}, expect="Chunk:TooLarge")

    # --- sharding_indexed: a 1-D int32 shard of two inner chunks of 2 ---
    inner = [struct.pack("<2i", 1, 2), struct.pack("<2i", 3, 4)]
    def shard(entries, body=b"".join(inner), crc=None):
        index = b"".join(struct.pack("<QQ", o, n) for o, n in entries)
        return body + index + struct.pack("<I", crc32c(index) if crc is None else crc)
    ok_entries = [(0, 8), (8, 8)]
    v3_array("shard_index_truncated", "int32", [4], [4], sharding([2]), fill=0, chunk_files={"c/0": shard(ok_entries)[-20:]}, expect="Chunk:Truncated")
    v3_array("shard_index_crc_mismatch", "int32", [4], [4], sharding([2]), fill=0, chunk_files={"c/0": shard(ok_entries, crc=0)}, expect="Chunk:Checksum")
    v3_array("shard_inner_past_end", "int32", [4], [4], sharding([2]), fill=0, chunk_files={"c/0": shard([(0, 8), (8, 4000)])}, expect="Chunk:OffsetOutOfBounds")
    v3_array("shard_inner_offset_overflow", "int32", [4], [4], sharding([2]), fill=0, chunk_files={"c/0": shard([(0, 8), (2**64 - 2, 8)])}, expect="Chunk:OffsetOutOfBounds")
    v3_array("shard_inner_wrong_size", "int32", [4], [4], sharding([2]), fill=0, chunk_files={"c/0": shard([(0, 8), (8, 4)])}, expect="Chunk:SizeMismatch")
    v3_array("shard_inner_chunks_huge_count", "int32", [2**26], [2**26], sharding([1]), fill=0, chunk_files={"c/0": shard(ok_entries)}, expect="Chunk:Truncated")

    # --- fixed-width ---
    v3_array("int32_wrong_size", "int32", [4], [4], I32, fill=0, chunk_files={"c/0": struct.pack("<3i", 1, 2, 3)}, expect="Chunk:SizeMismatch")
    v3_array("utf32_surrogate", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}, [1], [1], I32,
             chunk_files={"c/0": struct.pack("<2I", 0x41, 0xD800)}, expect="Chunk:InvalidCodePoint")
    v3_array("utf32_past_unicode", {"name": "fixed_length_utf32", "configuration": {"length_bytes": 4}}, [1], [1], I32,
             chunk_files={"c/0": struct.pack("<I", 0x110000)}, expect="Chunk:InvalidCodePoint")

    # --- metadata ---
    raw_store("meta_not_json", {"zarr.json": "{\"zarr_format\": 3, "}, "Json")
    raw_store("meta_not_object", {"zarr.json": "[1, 2]"}, "Metadata")
    raw_store("meta_wrong_format", {"zarr.json": json.dumps({"zarr_format": 4, "node_type": "array"})}, "Metadata")
    raw_store("meta_no_node_type", {"zarr.json": json.dumps({"zarr_format": 3})}, "Metadata")
    raw_store("meta_empty_dir", {"README": "no metadata here"}, "NodeNotFound")
    v3_array("meta_rank_mismatch", "string", [4, 4], [4], VLEN, expect="Metadata")
    v3_array("meta_zero_chunk", "string", [4], [0], VLEN, expect="Metadata")
    v3_array("meta_chunk_elements_overflow", "string", [4, 4], [2**40, 2**40], VLEN, expect="Metadata")
    v3_array("meta_negative_shape", "string", [-4], [4], VLEN, expect="Metadata")
    v3_array("meta_unknown_data_type", "complex128", [4], [4], I32, expect="UnsupportedDataType")
    v3_array("meta_unknown_codec", "string", [4], [4], VLEN + [{"name": "numcodecs.zfpy", "configuration": {}}], expect="UnsupportedCodec")
    v3_array("meta_sharding_no_config", "int32", [4], [4], [{"name": "sharding_indexed", "configuration": {}}], fill=0, expect="Metadata")
    v3_array("meta_sharding_inner_not_dividing", "int32", [4], [4], sharding([3]), fill=0, expect="Metadata")
    v3_array("meta_sharding_variable_index", "int32", [4], [4], sharding([2], index=I32 + [{"name": "zstd", "configuration": {"level": 0}}]), fill=0, expect="Metadata")
    v3_array("meta_transpose_not_permutation", "int32", [2, 2], [2, 2], [{"name": "transpose", "configuration": {"order": [0, 0]}}] + I32, fill=0, expect="Metadata")
    v3_array("meta_transpose_wrong_rank", "int32", [2, 2], [2, 2], [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}] + I32, fill=0, expect="Metadata")
    v3_array("meta_transpose_after_bytes", "int32", [2, 2], [2, 2], I32 + [{"name": "transpose", "configuration": {"order": [1, 0]}}], fill=0, expect="Metadata")
    v3_array("meta_no_array_to_bytes", "string", [4], [4], [{"name": "zstd", "configuration": {"level": 0}}], expect="Metadata")
    v3_array("meta_two_array_to_bytes", "string", [4], [4], VLEN + VLEN, expect="Metadata")
    v3_array("meta_bytes_codec_for_strings", "string", [4], [4], I32, expect="Metadata")
    v3_array("meta_vlen_codec_for_ints", "int32", [4], [4], VLEN, fill=0, expect="Metadata")
    v3_array("meta_zep_large_with_codec", {"name": "large_string"}, [4], [4], VLEN, expect="Metadata")
    v3_array("meta_huge_fixed_width", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2**63}}, [2], [2], I32, fill="", expect="Metadata")
    v3_array("meta_fill_longer_than_width", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2}}, [2], [2], I32, fill="YWJj", expect="Metadata")
    v3_array("meta_dimension_names_wrong_len", "string", [4], [4], VLEN, extra={"dimension_names": ["x", "y"]}, expect="Metadata")
    v3_array("meta_unknown_required_field", "string", [4], [4], VLEN, extra={"future_extension": {"must_understand": True}}, expect="Metadata")
    v3_array("slab_too_large", "uint8", [1, 2**40], [1, 2**20], I32, fill=0, expect="Chunk:TooLarge")
    v3_array("chunk_shape_over_budget", "uint8", [2**32 - 1], [2**32 - 1], I32, fill=0, chunk_files={"c/0": b"\0" * 16}, expect="Chunk:TooLarge")
    v3_array("shard_missing_inner_over_budget", "uint8", [2**32 - 1], [2**32 - 1], sharding([2**32 - 1], index=I32), fill=0,
             chunk_files={"c/0": b"\xff" * 16}, expect="Chunk:TooLarge")
    v3_array("meta_fill_wrong_type", "int8", [4], [4], I32, fill="abc", expect="Metadata")
    v3_array("meta_fill_out_of_range", "uint8", [4], [4], I32, fill=300, expect="Metadata")
    v3_array("meta_fill_bad_base64", "variable_length_bytes", [4], [4], VLEN_B, fill="***", expect="Metadata")
    v3_array("meta_irregular_grid", "string", [4], [4], VLEN, extra={"chunk_grid": {"name": "rectilinear", "configuration": {}}}, expect="Metadata")
    v3_array("meta_bad_separator", "string", [4], [4], VLEN, extra={"chunk_key_encoding": {"name": "default", "configuration": {"separator": "../"}}}, expect="Metadata")
    v3_array("meta_storage_transformer", "string", [4], [4], VLEN, extra={"storage_transformers": [{"name": "x"}]}, expect="Metadata")
    base_v2 = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|O", "fill_value": "", "order": "C",
               "filters": [{"id": "vlen-utf8"}], "compressor": None}
    raw_store("v2_object_without_filter", {".zarray": json.dumps({**base_v2, "filters": None})}, "Metadata")
    raw_store("v2_unknown_dtype", {".zarray": json.dumps({**base_v2, "dtype": "<c16", "filters": None})}, "UnsupportedDataType")
    raw_store("v2_structured_dtype", {".zarray": json.dumps({**base_v2, "dtype": [["a", "<i4"]], "filters": None})}, "UnsupportedDataType")
    raw_store("v2_unknown_compressor", {".zarray": json.dumps({**base_v2, "compressor": {"id": "zfpy"}})}, "UnsupportedCodec")
    raw_store("v2_nonascii_dtype", {".zarray": json.dumps({**base_v2, "dtype": "\u2039\u00e9", "filters": None})}, "UnsupportedDataType")
    raw_store("v2_huge_fixed_width", {".zarray": json.dumps({**base_v2, "dtype": "|S9223372036854775808", "filters": None})}, "Metadata")
    raw_store("v2_order_not_string", {".zarray": json.dumps({**base_v2, "order": 1})}, "Metadata")
    raw_store("v2_unknown_filter", {".zarray": json.dumps({**base_v2, "filters": [{"id": "delta"}]})}, "UnsupportedCodec")
    raw_store("v2_bad_zattrs", {".zarray": json.dumps(base_v2), ".zattrs": "{oops"}, "Json")

    # --- groups ---
    raw_store("group_unequal_lengths", {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}),
        "a/zarr.json": (HERE / "vlen_truncated_chunk.zarr" / "zarr.json").read_text(),
        "b/zarr.json": json.dumps({"zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "int32",
                                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}},
                                   "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": I32}),
    }, "Table")
    raw_store("group_bad_child", {
        "zarr.json": json.dumps({"zarr_format": 3, "node_type": "group"}),
        "a/zarr.json": "not json",
    }, "Table")  # the child is skipped, named with the reason; nothing is left to read

    # --- a chunk that is a symlink leaving the store root ---
    d = v3_array("symlink_escape", "string", [4], [4], VLEN, expect="InvalidKey")
    (d / "c").mkdir()
    os.symlink("../../make_bad.py", d / "c" / "0")

    (HERE / "expected.json").write_text(json.dumps(EXPECTED, indent=1, sort_keys=True) + "\n")
    print(f"{len(EXPECTED)} bad cases")


if __name__ == "__main__":
    main()
