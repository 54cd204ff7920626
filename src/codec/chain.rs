//! [`CodecChain`]: an array's codecs, built from its metadata in one place.

use std::fmt;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use serde_json::Value;

use super::{
    ArrayToArrayCodec, ArrayToBytesCodec, Builder, BytesToBytesCodec, CODECS, ChunkRange,
    ConfigError, DecodeContext, PartialDecoder, PartialRead, PartialStep, vlen, zep0007, zstd,
};
use crate::error::{ChunkError, EncodeError, Error, Result};
use crate::metadata::{ArrayMetadata, CodecMetadata, Zep0007Offsets};

/// The codecs of an array in encoding order: array->array codecs, one array->bytes
/// layout, then bytes->bytes codecs.
///
/// Built from metadata by [`CodecChain::from_metadata`]; decodes a chunk's bytes
/// with no store involved ([`CodecChain::decode`]). Cheap to clone (the codecs are
/// shared).
#[derive(Debug, Clone)]
pub struct CodecChain {
    array_to_array: Vec<Arc<dyn ArrayToArrayCodec>>,
    array_to_bytes: Arc<dyn ArrayToBytesCodec>,
    bytes_to_bytes: Vec<Arc<dyn BytesToBytesCodec>>,
}

impl CodecChain {
    /// A chain from its parts (the writer's).
    pub(crate) fn new(
        array_to_array: Vec<Arc<dyn ArrayToArrayCodec>>,
        array_to_bytes: Arc<dyn ArrayToBytesCodec>,
        bytes_to_bytes: Vec<Arc<dyn BytesToBytesCodec>>,
    ) -> Self {
        Self {
            array_to_array,
            array_to_bytes,
            bytes_to_bytes,
        }
    }

    /// The chain of the array described by `meta` (whose document is at `key`,
    /// named in errors), checked against its data type and chunk shape.
    ///
    /// # Errors
    /// [`Error::UnsupportedCodec`] for a codec zarrow does not implement;
    /// [`Error::Metadata`] for a misplaced codec, a bad configuration, or a chain
    /// that does not fit the data type or chunk shape.
    pub fn from_metadata(meta: &ArrayMetadata, key: &str) -> Result<Self> {
        let implied = meta.zep0007.map(|offsets| {
            Arc::new(zep0007::Zep0007 {
                large: offsets == Zep0007Offsets::Int64,
            }) as Arc<dyn ArrayToBytesCodec>
        });
        let chain = Self::parse(&meta.codecs, implied).map_err(|e| e.into_error(key))?;
        if chain.array_to_bytes.is_variable_length() != meta.is_variable_length() {
            let layout = chain.array_to_bytes.metadata();
            return Err(Error::Metadata {
                key: key.to_string(),
                field: "codecs".to_string(),
                codec: layout
                    .as_ref()
                    .and_then(|l| l["name"].as_str())
                    .map(Into::into),
                expected: format!(
                    "an array->bytes codec for data type {} ({})",
                    meta.data_type,
                    if meta.is_variable_length() {
                        "a variable-length layout"
                    } else {
                        "a fixed-width layout"
                    }
                ),
                found: Some(
                    crate::error::cut_owned(&describe(chain.array_to_bytes.as_ref())).into(),
                ),
            });
        }
        chain
            .check_shape(&meta.chunk_shape)
            .map_err(|e| e.into_error(key))?;
        Ok(chain)
    }

    /// A chain from a v3 `codecs` list alone (no data type or shape to check it
    /// against): for the sections of a layout codec (`zarrs.vlen`'s index and data
    /// codecs), or to undo an array's compression by hand with
    /// [`CodecChain::decode_bytes`].
    ///
    /// # Errors
    /// As [`CodecChain::from_metadata`], naming the key `"codecs"`.
    pub fn from_codecs(codecs: &[CodecMetadata]) -> Result<Self> {
        Self::parse(codecs, None).map_err(|e| e.into_error("codecs"))
    }

    /// Build a chain from a `codecs` list. `implied` is the array->bytes layout a
    /// ZEP0007 data type names; with it the list holds bytes->bytes codecs only
    /// (or, for the int32 types, an explicit layout that replaces it).
    pub(crate) fn parse(
        codecs: &[CodecMetadata],
        implied: Option<Arc<dyn ArrayToBytesCodec>>,
    ) -> Result<Self, ConfigError> {
        let implicit = implied.is_some();
        let mut array_to_bytes = implied;
        let mut a2a = Vec::new();
        let mut b2b = Vec::new();
        for item in codecs {
            let name = item.name.as_str();
            let builder = CODECS
                .iter()
                .find(|(names, _)| names.contains(&name))
                .map(|(_, b)| b)
                .ok_or_else(|| ConfigError::Unsupported(name.to_string()))?;
            let config = &item.configuration;
            match builder {
                Builder::ArrayToArray(build) => {
                    if array_to_bytes.is_some() && !implicit {
                        return Err(ConfigError::invalid(
                            name,
                            "codecs",
                            "array->array codecs before the array->bytes codec",
                        ));
                    }
                    a2a.push(build(name, config)?);
                }
                Builder::BytesToBytes(build) => {
                    if array_to_bytes.is_none() {
                        return Err(ConfigError::invalid(
                            name,
                            "codecs",
                            "bytes->bytes codecs after the array->bytes codec",
                        ));
                    }
                    b2b.push(build(name, config)?);
                }
                Builder::ArrayToBytes(build) => {
                    let codec = build(name, config)?;
                    // `{"name": "string"}` / `{"name": "binary"}` are also the plain
                    // types in object form: with an explicit array->bytes codec, that
                    // codec lays the chunk out. The `large_*` names exist only in
                    // ZEP0007.
                    if implicit {
                        let int32 = array_to_bytes
                            .as_ref()
                            .and_then(|c| c.as_any().downcast_ref::<zep0007::Zep0007>())
                            .is_some_and(|z| !z.large);
                        if !(int32 && b2b.is_empty()) {
                            return Err(ConfigError::invalid(
                                name,
                                "codecs",
                                "no array->bytes codec (the ZEP0007 data type fixes the chunk layout)",
                            ));
                        }
                        array_to_bytes = None;
                    }
                    if !b2b.is_empty() || array_to_bytes.is_some() {
                        return Err(ConfigError::invalid(
                            name,
                            "codecs",
                            "one array->bytes codec, before the bytes->bytes codecs",
                        ));
                    }
                    array_to_bytes = Some(codec);
                }
            }
        }
        let array_to_bytes = array_to_bytes.ok_or_else(|| ConfigError::Invalid {
            codec: None,
            field: "codecs".to_string(),
            expected: "an array->bytes codec".to_string(),
            found: Some("none".to_string()),
        })?;
        Ok(Self::new(a2a, array_to_bytes, b2b))
    }

    /// Check the chain against the shape of the chunks it encodes: array->array
    /// codecs fit the rank, inner chunks divide their shard.
    pub(crate) fn check_shape(&self, shape: &[u64]) -> Result<(), ConfigError> {
        let mut shape = shape.to_vec();
        for codec in &self.array_to_array {
            shape = codec.encoded_shape(&shape).map_err(|e| {
                let name = codec.metadata()["name"]
                    .as_str()
                    .unwrap_or("array->array")
                    .to_string();
                match e {
                    EncodeError::RankMismatch { order, shape } => ConfigError::invalid_found(
                        &name,
                        "configuration.order",
                        format!("{} dimensions, the chunk's", shape.len()),
                        format!("{order:?}"),
                    ),
                    other => ConfigError::invalid(&name, "configuration", other.to_string()),
                }
            })?;
        }
        self.array_to_bytes.check_shape(&shape)
    }

    /// The array->bytes layout.
    pub(crate) fn array_to_bytes(&self) -> &dyn ArrayToBytesCodec {
        self.array_to_bytes.as_ref()
    }

    /// The bytes->bytes codecs, in encoding order.
    pub(crate) fn bytes_to_bytes(&self) -> &[Arc<dyn BytesToBytesCodec>] {
        &self.bytes_to_bytes
    }

    /// Whether the chain reorders elements before laying them out.
    pub(crate) fn has_array_to_array(&self) -> bool {
        !self.array_to_array.is_empty()
    }

    /// How a chunk of `ndim` dimensions is decoded in part from ranges of its
    /// bytes, when the chain can: its array->bytes codec offers it, no
    /// array->array codec reorders the elements, and every bytes->bytes codec
    /// only appends bytes (`crc32c`), which ranges pass through.
    pub(crate) fn partial(&self, ndim: usize) -> Option<ChainPartial<'_>> {
        if !self.array_to_array.is_empty() {
            return None;
        }
        let inner = self.array_to_bytes.partial(ndim)?;
        let mut trailing = 0u64;
        for codec in &self.bytes_to_bytes {
            trailing = trailing.checked_add(codec.trailing_bytes()?)?;
        }
        Some(ChainPartial {
            inner,
            chain: self,
            trailing,
        })
    }

    /// Decode one encoded chunk into an Arrow array of `ctx.elements` elements
    /// (or of the first `ctx.wanted`, where the layout can stop early).
    ///
    /// # Errors
    /// A [`ChunkError`] for any corrupt, truncated or oversized input.
    pub fn decode(&self, encoded: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        // Arrow structures cost up to ARROW_BYTES_PER_ELEMENT per element (views,
        // gather and transpose indices), whatever the data; fixed-width elements
        // exactly their width: bound them up front.
        // (A transposed chunk also needs an 8-byte gather index per element.)
        let per_element = ctx.data_type.arrow_bytes_per_element()
            + 8 * usize::from(self.has_array_to_array() && ctx.data_type.fixed_size().is_some());
        if ctx.elements.saturating_mul(per_element) > ctx.max_bytes {
            return Err(ChunkError::TooLarge {
                codec: "chunk shape",
                limit: ctx.max_bytes as u64,
            });
        }
        let array = match self.fused_vlen_zstd(&encoded, ctx) {
            Some(array) => array?,
            None => self.decode_unfused(encoded, ctx)?,
        };
        // Whatever a layout decoder did, a chunk has exactly its shape's elements
        // (or, stopped early, exactly those wanted).
        if array.len() != ctx.elements && array.len() != ctx.wanted {
            return Err(ChunkError::CountMismatch {
                expected: ctx.elements as u64,
                found: array.len() as u64,
            });
        }
        Ok(array)
    }

    /// vlen + zstd alone: decompress and decode fused (see `vlen::decode_zstd`).
    fn fused_vlen_zstd(
        &self,
        encoded: &Buffer,
        ctx: &DecodeContext,
    ) -> Option<Result<ArrayRef, ChunkError>> {
        let [only] = self.bytes_to_bytes.as_slice() else {
            return None;
        };
        let fusable = self.array_to_array.is_empty()
            && self.array_to_bytes.as_any().is::<vlen::Vlen>()
            && only.as_any().is::<zstd::Zstd>()
            && vlen::fuse_zstd(encoded, ctx);
        fusable.then(|| vlen::decode_zstd(encoded, ctx))
    }

    fn decode_unfused(&self, encoded: Buffer, ctx: &DecodeContext) -> Result<ArrayRef, ChunkError> {
        // Fixed-width chunks have an exact decoded size: use it as the bound.
        let limit = match ctx.data_type.fixed_size() {
            Some(size) => size.saturating_mul(ctx.elements).min(ctx.max_bytes),
            None => ctx.max_bytes,
        };
        let bytes = self.decode_bytes_reusing(encoded, limit, ctx.recycler)?;
        // The shape each array->array codec hands on, from the chunk's own shape.
        let mut shapes = vec![ctx.shape.to_vec()];
        for codec in &self.array_to_array {
            let last = shapes.last().map(Vec::as_slice).unwrap_or_default();
            let next = codec
                .encoded_shape(last)
                .map_err(|e| ChunkError::Decompress {
                    codec: "array->array",
                    message: e.to_string(),
                })?;
            shapes.push(next);
        }
        let encoded_shape = shapes.last().map(Vec::as_slice).unwrap_or_default();
        let mut array = self
            .array_to_bytes
            .decode(bytes, &ctx.with_shape(encoded_shape))?;
        for (codec, shape) in self.array_to_array.iter().zip(&shapes).rev() {
            array = codec.decode(&array, shape)?;
        }
        Ok(array)
    }

    /// Undo the bytes->bytes codecs (decompress, check checksums), producing at
    /// most `limit` bytes at each step: the chunk's bytes in its array->bytes
    /// layout.
    ///
    /// # Errors
    /// A [`ChunkError`] for corrupt or oversized input.
    pub fn decode_bytes(&self, buffer: Buffer, limit: usize) -> Result<Buffer, ChunkError> {
        self.decode_bytes_reusing(buffer, limit, None)
    }

    /// As [`decode_bytes`](Self::decode_bytes), each step's output in a buffer
    /// from `recycler` where the codec can.
    pub(crate) fn decode_bytes_reusing(
        &self,
        buffer: Buffer,
        limit: usize,
        recycler: Option<&Arc<crate::recycle::Recycler>>,
    ) -> Result<Buffer, ChunkError> {
        self.bytes_to_bytes
            .iter()
            .rev()
            .try_fold(buffer, |buf, codec| {
                codec.decode_reusing(buf, limit, recycler)
            })
    }

    /// Encode `array` (at most `shape`'s element count) as one chunk of `shape`.
    /// An error names the codec that failed (its v3 name) and why.
    pub(crate) fn encode(
        &self,
        array: &ArrayRef,
        shape: &[u64],
    ) -> Result<Vec<u8>, (String, EncodeError)> {
        let mut array = array.clone();
        let mut shape = shape.to_vec();
        for codec in &self.array_to_array {
            let failed = |e| (name_of(&codec.metadata()), e);
            array = codec.encode(&array, &shape).map_err(failed)?;
            shape = codec.encoded_shape(&shape).map_err(failed)?;
        }
        let mut bytes = self
            .array_to_bytes
            .encode(array.as_ref(), &shape)
            .map_err(|message| (describe(self.array_to_bytes.as_ref()), message))?;
        for codec in &self.bytes_to_bytes {
            bytes = codec
                .encode(bytes)
                .map_err(|message| (name_of(&codec.metadata(3)), message))?;
        }
        Ok(bytes)
    }

    /// Apply the bytes->bytes codecs (compress, append checksums) to a chunk's
    /// bytes in its array->bytes layout: the inverse of
    /// [`CodecChain::decode_bytes`].
    ///
    /// # Errors
    /// A message from a compressor (an unknown blosc `cname`, an input too large).
    pub fn encode_bytes(&self, bytes: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
        self.bytes_to_bytes
            .iter()
            .try_fold(bytes, |buf, codec| codec.encode(buf))
    }

    /// The v3 `codecs` list of this chain (without a layout the data type implies).
    pub(crate) fn metadata(&self) -> Vec<Value> {
        let a2a = self.array_to_array.iter().map(|c| c.metadata());
        let a2b = self.array_to_bytes.metadata();
        let b2b = self.bytes_to_bytes.iter().map(|c| c.metadata(3));
        a2a.chain(a2b).chain(b2b).collect()
    }
}

/// A codec's name from its v3 entry.
fn name_of(entry: &Value) -> String {
    entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("codec")
        .to_string()
}

/// How an array->bytes codec is named in messages: its v3 entry, or (ZEP0007) the
/// data type that implies it.
fn describe(codec: &dyn ArrayToBytesCodec) -> String {
    match codec.metadata() {
        Some(entry) => entry.to_string(),
        None => format!("{codec:?}"),
    }
}

impl fmt::Display for CodecChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .array_to_array
            .iter()
            .map(|c| c.metadata().to_string())
            .collect();
        parts.push(describe(self.array_to_bytes.as_ref()));
        parts.extend(
            self.bytes_to_bytes
                .iter()
                .map(|c| c.metadata(3).to_string()),
        );
        f.write_str(&parts.join(" -> "))
    }
}

/// A chain's partial decoder: its array->bytes codec's, the ranges shifted past
/// the bytes its bytes->bytes codecs append (see [`CodecChain::partial`]).
pub(crate) struct ChainPartial<'a> {
    inner: &'a dyn PartialDecoder,
    chain: &'a CodecChain,
    /// Bytes appended after the array->bytes codec's output.
    trailing: u64,
}

impl std::fmt::Debug for ChainPartial<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainPartial")
            .field("inner", &self.inner)
            .field("trailing", &self.trailing)
            .finish()
    }
}

impl PartialDecoder for ChainPartial<'_> {
    fn part_rows(&self) -> u64 {
        self.inner.part_rows()
    }

    fn plan(
        &self,
        shape: &[u64],
        want: std::ops::Range<u64>,
        runs: bool,
    ) -> Result<Box<dyn PartialRead>, ChunkError> {
        let inner = self.inner.plan(shape, want, runs)?;
        if self.trailing == 0 {
            return Ok(inner);
        }
        Ok(Box::new(TrailingRead {
            inner,
            trailing: self.trailing,
            suffixes: Vec::new(),
        }))
    }

    fn decode_runs(&self, bytes: Buffer, ctx: &DecodeContext) -> Result<Vec<ArrayRef>, ChunkError> {
        // A whole chunk: its appended bytes checked (crc32c) and removed first.
        let content = self
            .chain
            .decode_bytes_reusing(bytes, ctx.max_bytes, ctx.recycler)?;
        self.inner.decode_runs(content, ctx)
    }
}

/// A partial read through codecs that append `trailing` bytes (`crc32c`): the
/// inner read's ranges pass through, a suffix moved before the appended bytes
/// (which a partial read cannot check: the checksum covers the whole value).
#[derive(Debug)]
struct TrailingRead {
    inner: Box<dyn PartialRead>,
    trailing: u64,
    /// Which of the ranges asked for are suffixes (their last `trailing` bytes
    /// are the appended ones).
    suffixes: Vec<bool>,
}

impl TrailingRead {
    fn ask(&mut self, ranges: Vec<ChunkRange>) -> Vec<ChunkRange> {
        self.suffixes = ranges
            .iter()
            .map(|r| matches!(r, ChunkRange::Suffix(_)))
            .collect();
        ranges
            .into_iter()
            .map(|r| match r {
                ChunkRange::Suffix(n) => ChunkRange::Suffix(n.saturating_add(self.trailing)),
                bounded => bounded,
            })
            .collect()
    }
}

impl PartialRead for TrailingRead {
    fn start(&mut self) -> Vec<ChunkRange> {
        let ranges = self.inner.start();
        self.ask(ranges)
    }

    fn resume(
        &mut self,
        buffers: Vec<Buffer>,
        chunk_len: u64,
        ctx: &DecodeContext,
    ) -> Result<PartialStep, ChunkError> {
        let truncated = |available| ChunkError::Truncated {
            what: "a chunk's appended bytes (crc32c)",
            needed: self.trailing,
            available,
        };
        let content = chunk_len
            .checked_sub(self.trailing)
            .ok_or_else(|| truncated(chunk_len))?;
        let buffers = buffers
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                if !self.suffixes.get(i).copied().unwrap_or(false) {
                    return Ok(b);
                }
                let keep = (b.len() as u64)
                    .checked_sub(self.trailing)
                    .ok_or_else(|| truncated(b.len() as u64))?;
                Ok(b.slice_with_length(0, keep as usize))
            })
            .collect::<Result<Vec<_>, ChunkError>>()?;
        match self.inner.resume(buffers, content, ctx)? {
            PartialStep::Fetch(ranges) => Ok(PartialStep::Fetch(self.ask(ranges))),
            done => Ok(done),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::metadata::{DataType, FillValue, NodeMetadata, parse_zarr_json};

    /// Metadata parsed from `doc`, with its chain built (and checked).
    fn array(doc: serde_json::Value) -> Result<ArrayMetadata> {
        match parse_zarr_json("zarr.json", &serde_json::to_vec(&doc).unwrap())? {
            NodeMetadata::Array(meta) => {
                CodecChain::from_metadata(&meta, "zarr.json")?;
                Ok(*meta)
            }
            NodeMetadata::Group(_) => panic!("not an array"),
        }
    }

    fn base(
        data_type: serde_json::Value,
        codecs: serde_json::Value,
        fill: serde_json::Value,
    ) -> serde_json::Value {
        json!({"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": data_type,
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs})
    }

    #[test]
    fn object_form_string_is_zep0007_only_without_a_layout_codec() {
        let zep = array(base(json!({"name": "string"}), json!([]), json!(""))).unwrap();
        let chain = CodecChain::from_metadata(&zep, "zarr.json").unwrap();
        assert_eq!(zep.zep0007, Some(Zep0007Offsets::Int32));
        assert!(chain.to_string().contains("Zep0007"), "{chain}");
        let plain = array(base(
            json!({"name": "string"}),
            json!([{"name": "vlen-utf8"}]),
            json!(""),
        ))
        .unwrap();
        let chain = CodecChain::from_metadata(&plain, "zarr.json").unwrap();
        assert_eq!(
            chain.to_string(),
            r#"{"name":"vlen-utf8","configuration":{}}"#
        );
        assert_eq!(plain.data_type, DataType::String);
    }

    #[test]
    fn extension_fields_follow_must_understand() {
        let mut doc = base(json!("int32"), json!([{"name": "bytes"}]), json!(0));
        doc["x_extension"] = json!({"must_understand": false, "anything": 1});
        assert!(array(doc.clone()).is_ok());
        doc["x_extension"] = json!({"anything": 1});
        assert!(matches!(array(doc), Err(Error::Metadata { .. })));
    }

    #[test]
    fn fixed_width_fill_values_read_like_elements() {
        let t = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}});
        let meta = array(base(t, json!([{"name": "bytes"}]), json!("YQAA"))).unwrap(); // b"a\0\0"
        assert_eq!(meta.fill_value, FillValue::Bytes(b"a".to_vec()));
        let t = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}});
        assert!(array(base(t, json!([{"name": "bytes"}]), json!("abc"))).is_err());
    }

    /// A build without the C codecs' features reads every other codec, and names
    /// the feature a blosc or lzma chain needs (CI runs this with
    /// `--no-default-features`).
    #[test]
    fn a_codec_left_out_of_the_build_names_its_feature() {
        for (name, feature, built) in [
            ("blosc", "blosc", cfg!(feature = "blosc")),
            ("numcodecs.lzma", "lzma", cfg!(feature = "lzma")),
        ] {
            let chain = CodecChain::from_codecs(&[
                CodecMetadata::named("bytes"),
                CodecMetadata::named(name),
            ]);
            match chain {
                Ok(_) => assert!(built, "{name} built without its feature"),
                Err(Error::CodecNotBuilt {
                    name: got,
                    feature: f,
                    ..
                }) => {
                    assert!(!built, "{name} refused with its feature on");
                    assert_eq!((got.as_str(), f), (name, feature));
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
        let zstd = [CodecMetadata::named("bytes"), CodecMetadata::named("zstd")];
        assert!(CodecChain::from_codecs(&zstd).is_ok());
    }
}

#[cfg(test)]
#[path = "chain_encode_tests.rs"]
mod encode_tests;
