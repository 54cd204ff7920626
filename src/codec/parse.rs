//! Codec metadata (v3 `codecs` lists, v2 `filters` + `compressor`) into a [`CodecChain`].

use serde_json::{Map, Value};

use super::{
    ArrayToArray, ArrayToBytes, BloscConfig, BloscShuffle, BytesToBytes, CodecChain, IndexLocation,
    OffsetWidth, Sharding, ZarrsVlen, sharding, transpose,
};
use crate::error::{Error, Result};
use crate::metadata::Endian;

/// One codec entry: its name and configuration object (empty when absent).
fn name_and_config<'a>(item: &'a Value, key: &str) -> Result<(&'a str, Map<String, Value>)> {
    match item {
        // zarrs accepts bare names; zarr-python does not. Reading them is harmless.
        Value::String(name) => Ok((name, Map::new())),
        Value::Object(obj) => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::metadata(key, format!("codec {item} has no \"name\"")))?;
            let config = match obj.get("configuration") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(c)) => c.clone(),
                Some(other) => {
                    return Err(Error::metadata(
                        key,
                        format!("configuration of codec {name:?} is not an object: {other}"),
                    ));
                }
            };
            Ok((name, config))
        }
        other => Err(Error::metadata(
            key,
            format!("codec entry {other} is not an object"),
        )),
    }
}

fn get_u64(
    config: &Map<String, Value>,
    field: &str,
    default: u64,
    codec: &str,
    key: &str,
) -> Result<u64> {
    match config.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().ok_or_else(|| {
            Error::metadata(
                key,
                format!("{codec}: \"{field}\" must be a non-negative integer, got {v}"),
            )
        }),
    }
}

fn get_str<'a>(
    config: &'a Map<String, Value>,
    field: &str,
    codec: &str,
    key: &str,
) -> Result<Option<&'a str>> {
    match config.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(Error::metadata(
            key,
            format!("{codec}: \"{field}\" must be a string, got {v}"),
        )),
    }
}

fn endian(config: &Map<String, Value>, key: &str) -> Result<Endian> {
    match get_str(config, "endian", "bytes", key)? {
        None | Some("little") => Ok(Endian::Little),
        Some("big") => Ok(Endian::Big),
        Some(other) => Err(Error::metadata(
            key,
            format!("bytes: unknown endian {other:?}"),
        )),
    }
}

/// A bytes->bytes codec by v3 name, or `None` when the name is not one.
fn bytes_to_bytes(
    name: &str,
    config: &Map<String, Value>,
    key: &str,
) -> Result<Option<BytesToBytes>> {
    Ok(Some(match name {
        "gzip" | "numcodecs.gzip" => BytesToBytes::Gzip {
            level: get_u64(config, "level", 5, name, key)? as u32,
        },
        "zlib" | "numcodecs.zlib" => BytesToBytes::Zlib {
            level: get_u64(config, "level", 1, name, key)? as u32,
        },
        "zstd" | "numcodecs.zstd" => BytesToBytes::Zstd {
            level: config.get("level").and_then(Value::as_i64).unwrap_or(0) as i32,
            checksum: config
                .get("checksum")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        "blosc" | "numcodecs.blosc" => BytesToBytes::Blosc(blosc_config(config, name, key)?),
        "crc32c" => BytesToBytes::Crc32c,
        _ => return Ok(None),
    }))
}

fn blosc_config(config: &Map<String, Value>, name: &str, key: &str) -> Result<BloscConfig> {
    let shuffle = match config.get("shuffle") {
        None | Some(Value::Null) => BloscShuffle::Shuffle,
        Some(Value::String(s)) => match s.as_str() {
            "noshuffle" => BloscShuffle::NoShuffle,
            "shuffle" => BloscShuffle::Shuffle,
            "bitshuffle" => BloscShuffle::BitShuffle,
            other => {
                return Err(Error::metadata(
                    key,
                    format!("blosc: unknown shuffle {other:?}"),
                ));
            }
        },
        // v2 (numcodecs) integers: 0 none, 1 byte, 2 bit, -1 automatic (read as byte
        // shuffle here; decoding takes the real filter from the frame header).
        Some(Value::Number(n)) => match n.as_i64() {
            Some(0) => BloscShuffle::NoShuffle,
            Some(1) | Some(-1) => BloscShuffle::Shuffle,
            Some(2) => BloscShuffle::BitShuffle,
            _ => return Err(Error::metadata(key, format!("blosc: unknown shuffle {n}"))),
        },
        Some(v) => return Err(Error::metadata(key, format!("blosc: bad shuffle {v}"))),
    };
    Ok(BloscConfig {
        cname: get_str(config, "cname", name, key)?
            .unwrap_or("lz4")
            .to_string(),
        clevel: get_u64(config, "clevel", 5, name, key)?.min(9) as u8,
        shuffle,
        typesize: get_u64(config, "typesize", 1, name, key)? as usize,
        blocksize: get_u64(config, "blocksize", 0, name, key)? as usize,
    })
}

/// Parse a v3 `codecs` list.
///
/// `implicit` is the array->bytes layout a ZEP0007 data type implies; with it the
/// list must hold bytes->bytes codecs only.
pub(crate) fn parse_v3(
    codecs: &Value,
    key: &str,
    implicit: Option<ArrayToBytes>,
) -> Result<CodecChain> {
    let items = match codecs {
        Value::Array(items) => items.as_slice(),
        Value::Null => &[],
        other => {
            return Err(Error::metadata(
                key,
                format!("\"codecs\" is not a list: {other}"),
            ));
        }
    };
    let mut array_to_bytes = implicit.clone();
    let mut a2a = Vec::new();
    let mut b2b = Vec::new();
    for item in items {
        let (name, config) = name_and_config(item, key)?;
        if name == "transpose" {
            if array_to_bytes.is_some() && implicit.is_none() {
                return Err(Error::metadata(
                    key,
                    "transpose must come before the array->bytes codec",
                ));
            }
            a2a.push(transpose_config(&config, key)?);
            continue;
        }
        if let Some(codec) = bytes_to_bytes(name, &config, key)? {
            if array_to_bytes.is_none() {
                return Err(Error::metadata(
                    key,
                    format!("bytes->bytes codec {name:?} comes before the array->bytes codec"),
                ));
            }
            b2b.push(codec);
            continue;
        }
        let codec = match name {
            "bytes" | "endian" => ArrayToBytes::Bytes {
                endian: endian(&config, key)?,
            },
            "vlen-utf8"
            | "vlen-bytes"
            | "zarrs.vlen_v2"
            | "vlen_v2"
            | "https://codec.zarrs.dev/array_to_bytes/vlen_v2" => ArrayToBytes::VlenInterleaved,
            "zarrs.vlen" | "vlen" | "https://codec.zarrs.dev/array_to_bytes/vlen" => {
                ArrayToBytes::ZarrsVlen(Box::new(zarrs_vlen(&config, key)?))
            }
            "sharding_indexed" => ArrayToBytes::Sharding(Box::new(sharding_config(&config, key)?)),
            other => {
                return Err(Error::UnsupportedCodec {
                    name: other.to_string(),
                    key: key.to_string(),
                });
            }
        };
        // `{"name": "string"}` / `{"name": "binary"}` are also the plain types in
        // object form: with an explicit array->bytes codec, that codec lays the
        // chunk out. The `large_*` names exist only in ZEP0007.
        match &implicit {
            Some(ArrayToBytes::Zep0007 { large: false })
                if b2b.is_empty() && array_to_bytes == implicit =>
            {
                array_to_bytes = None;
            }
            Some(_) => {
                return Err(Error::metadata(
                    key,
                    format!(
                        "the ZEP0007 data type fixes the chunk layout, but codec {name:?} sets another"
                    ),
                ));
            }
            None => {}
        }
        if !b2b.is_empty() || array_to_bytes.is_some() {
            return Err(Error::metadata(
                key,
                format!(
                    "array->bytes codec {name:?} must be the only one and come before bytes->bytes codecs"
                ),
            ));
        }
        array_to_bytes = Some(codec);
    }
    let array_to_bytes = array_to_bytes
        .ok_or_else(|| Error::metadata(key, "\"codecs\" has no array->bytes codec"))?;
    Ok(CodecChain {
        array_to_array: a2a,
        array_to_bytes,
        bytes_to_bytes: b2b,
    })
}

/// `transpose` with `order` as a permutation list (metadata validation checks it
/// against the rank).
fn transpose_config(config: &Map<String, Value>, key: &str) -> Result<ArrayToArray> {
    let order = match config.get("order") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_u64().map(|d| d as usize))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                Error::metadata(
                    key,
                    format!("transpose: order {items:?} is not a list of dimensions"),
                )
            })?,
        other => {
            return Err(Error::metadata(
                key,
                format!("transpose: order must be a list, found {other:?}"),
            ));
        }
    };
    if !transpose::is_permutation(&order, order.len()) {
        return Err(Error::metadata(
            key,
            format!("transpose: order {order:?} is not a permutation"),
        ));
    }
    Ok(ArrayToArray::Transpose { order })
}

/// The `sharding_indexed` configuration.
fn sharding_config(config: &Map<String, Value>, key: &str) -> Result<Sharding> {
    let chunk_shape = crate::metadata::u64_list(
        key,
        "sharding_indexed.chunk_shape",
        config.get("chunk_shape"),
    )?;
    let codecs = parse_v3(config.get("codecs").unwrap_or(&Value::Null), key, None)?;
    let default_index = serde_json::json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]);
    let index_codecs = parse_v3(
        config.get("index_codecs").unwrap_or(&default_index),
        key,
        None,
    )?;
    let index_location = match get_str(config, "index_location", "sharding_indexed", key)? {
        None | Some("end") => IndexLocation::End,
        Some("start") => IndexLocation::Start,
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("sharding_indexed: unknown index_location {other:?}"),
            ));
        }
    };
    let sharding = Sharding {
        chunk_shape,
        codecs,
        index_codecs,
        index_location,
    };
    if !matches!(
        sharding.index_codecs.array_to_bytes,
        ArrayToBytes::Bytes { .. }
    ) || !sharding.index_codecs.array_to_array.is_empty()
        || sharding::index_size(&sharding, 1).is_none()
    {
        return Err(Error::metadata(
            key,
            "sharding_indexed: index_codecs must be bytes, optionally followed by crc32c",
        ));
    }
    Ok(sharding)
}

/// The `zarrs.vlen` configuration, drafts 0.0 and 0.1.
fn zarrs_vlen(config: &Map<String, Value>, key: &str) -> Result<ZarrsVlen> {
    let index_data_type = match get_str(config, "index_data_type", "zarrs.vlen", key)? {
        None | Some("uint64") => OffsetWidth::U64,
        Some("uint32") => OffsetWidth::U32,
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("zarrs.vlen: unsupported index_data_type {other:?}"),
            ));
        }
    };
    let index_location = match get_str(config, "index_location", "zarrs.vlen", key)? {
        None | Some("start") => IndexLocation::Start,
        Some("end") => IndexLocation::End,
        Some(other) => {
            return Err(Error::metadata(
                key,
                format!("zarrs.vlen: unknown index_location {other:?}"),
            ));
        }
    };
    let default_chain = Value::Array(vec![serde_json::json!({"name": "bytes"})]);
    let chain = |field: &str| -> Result<CodecChain> {
        let inner = parse_v3(config.get(field).unwrap_or(&default_chain), key, None)?;
        if !matches!(inner.array_to_bytes, ArrayToBytes::Bytes { .. })
            || !inner.array_to_array.is_empty()
        {
            return Err(Error::metadata(
                key,
                format!("zarrs.vlen: {field} must use the bytes codec"),
            ));
        }
        Ok(inner)
    };
    Ok(ZarrsVlen {
        index_data_type,
        index_location,
        index_codecs: chain("index_codecs")?,
        data_codecs: chain("data_codecs")?,
    })
}

/// Parse a v2 `compressor` (object or null) into a bytes->bytes codec.
pub(crate) fn parse_v2_compressor(compressor: &Value, key: &str) -> Result<Option<BytesToBytes>> {
    let obj = match compressor {
        Value::Null => return Ok(None),
        Value::Object(obj) => obj,
        other => {
            return Err(Error::metadata(
                key,
                format!("\"compressor\" is not an object: {other}"),
            ));
        }
    };
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::metadata(key, "\"compressor\" has no \"id\""))?;
    bytes_to_bytes(id, obj, key)?
        .map(Some)
        .ok_or_else(|| Error::UnsupportedCodec {
            name: id.to_string(),
            key: key.to_string(),
        })
}

/// The v2 `filters` list: returns whether a vlen filter (`vlen-utf8` / `vlen-bytes`)
/// is present, which is the only filter zarrow reads.
pub(crate) fn parse_v2_filters(filters: &Value, key: &str) -> Result<Option<&'static str>> {
    let items = match filters {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => {
            return Err(Error::metadata(
                key,
                format!("\"filters\" is not a list: {other}"),
            ));
        }
    };
    let mut vlen = None;
    for item in items {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::metadata(key, format!("filter {item} has no \"id\"")))?;
        match id {
            "vlen-utf8" => vlen = Some("vlen-utf8"),
            "vlen-bytes" => vlen = Some("vlen-bytes"),
            other => {
                return Err(Error::UnsupportedCodec {
                    name: other.to_string(),
                    key: key.to_string(),
                });
            }
        }
    }
    Ok(vlen)
}
