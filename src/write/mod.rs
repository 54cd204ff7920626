//! Writing: Arrow arrays and record batches into Zarr arrays and groups.
//!
//! ```text
//! RecordBatch ─▶ per column: nulls checked, dictionaries materialised
//!   ─▶ rows buffered until a chunk is full ─▶ (on the pool) chunk layout encode
//!   ─▶ bytes->bytes codecs ─▶ atomic put of c/<i>  …  then, last, the array metadata
//! ```
//!
//! Full chunks are encoded and stored on rayon's pool while the caller reads on
//! (at most one chunk per core, plus one, in flight). Memory is bounded by the
//! columns times the chunk size plus those in-flight chunks, not by the input's
//! length. Metadata is written after every chunk of its array (and a group's after
//! its arrays), so a reader never sees a complete-looking node with chunks still
//! missing.

mod append;
mod array;
mod column;
mod group;
mod metadata;
#[cfg(feature = "convert")]
pub(crate) mod output;
mod pipeline;

pub use array::{ArrayWriter, write_array, write_nd_array};
pub use group::{GroupWriter, write_batches, write_group_metadata};

use std::sync::Arc;
use std::time::Duration;

use crate::codec::{Blosc, BloscShuffle, BytesToBytesCodec, Gzip, Zstd};
use crate::error::{Error, ParseOptionError, Result, ShapeProblem};

/// The default target size of one chunk's values: 4 MiB.
///
/// Fixed-width columns get `4 MiB / element size` elements per chunk; variable
/// length columns get `4 MiB / (average value size + 4)`, the average taken from
/// the first batch written. [`WriteOptions::chunk_len`] overrides both.
pub(crate) const DEFAULT_CHUNK_BYTES: usize = 4 << 20;

/// The chunk layout of string and bytes arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Encoding {
    /// What zarr-python 3.1 writes: `vlen-utf8` / `vlen-bytes` (readable by
    /// zarr-python 2 and 3, numcodecs, zarrs).
    #[default]
    Default,
    /// `zarrs.vlen` with the index at the start: uint32 offsets for `Utf8` /
    /// `Binary`, uint64 for the large and view types (readable by zarrs and zarrow).
    ZarrsVlen,
    /// The ZEP0007 draft layout (experimental; zarrow only).
    Zep0007,
}

impl std::str::FromStr for Encoding {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim())
            .ok_or_else(|| ParseOptionError::new("encoding", s, "default, zarrs-vlen or zep0007"))
    }
}

impl Encoding {
    /// Parse the CLI spelling: `default`, `zarrs-vlen`, `zep0007`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "default" | "vlen" | "vlen-utf8" => Some(Self::Default),
            "zarrs-vlen" | "zarrs.vlen" => Some(Self::ZarrsVlen),
            "zep0007" => Some(Self::Zep0007),
            _ => None,
        }
    }

    /// The spelling `Encoding::from_str` reads back (its `Display`).
    fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::ZarrsVlen => "zarrs-vlen",
            Self::Zep0007 => "zep0007",
        }
    }
}

/// The compressor applied to every chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compressor {
    /// The default: zstd (level 0, as zarr-python 3 writes it) for strings,
    /// bytes and values of one byte; for numbers of two bytes or more, blosc
    /// with lz4 after a byte shuffle (level 5: zarr-python 2's default
    /// compressor), which decodes several times faster than zstd alone at
    /// about its size on noisy numbers (docs/formats.md, "Compressors"). Without
    /// the `blosc` feature, zstd for every array.
    Default,
    /// zstd for every array (level 0 as zarr-python writes it).
    Zstd,
    /// gzip.
    Gzip,
    /// blosc with its zstd inner compressor and byte shuffle.
    Blosc,
    /// No compression.
    None,
}

impl std::str::FromStr for Compressor {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim()).ok_or_else(|| {
            ParseOptionError::new("compressor", s, "default, zstd, gzip, blosc or none")
        })
    }
}

impl Compressor {
    /// Parse the CLI spelling: `default`, `zstd`, `gzip`, `blosc`, `none`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "default" => Some(Self::Default),
            "zstd" => Some(Self::Zstd),
            "gzip" => Some(Self::Gzip),
            "blosc" => Some(Self::Blosc),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// The spelling `Compressor::from_str` reads back (its `Display`).
    fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Zstd => "zstd",
            Self::Gzip => "gzip",
            Self::Blosc => "blosc",
            Self::None => "none",
        }
    }

    /// The codec for elements of `typesize` bytes (blosc shuffles by it) at
    /// `level` (each compressor's default when `None`).
    pub(crate) fn codec(
        self,
        level: Option<i32>,
        typesize: usize,
    ) -> Option<Arc<dyn BytesToBytesCodec>> {
        match self {
            Self::Default if cfg!(feature = "blosc") && typesize > 1 => Some(Arc::new(Blosc {
                cname: "lz4".into(),
                clevel: level.unwrap_or(5).clamp(0, 9) as u8,
                shuffle: BloscShuffle::Shuffle,
                typesize,
                blocksize: 0,
            })),
            Self::Default | Self::Zstd => Some(Arc::new(Zstd {
                level: level.unwrap_or(0),
                checksum: false,
            })),
            Self::Gzip => Some(Arc::new(Gzip {
                level: level.unwrap_or(5).clamp(0, 9) as u32,
                zlib: false,
            })),
            Self::Blosc => Some(Arc::new(Blosc {
                cname: "zstd".into(),
                clevel: level.unwrap_or(5).clamp(0, 9) as u8,
                shuffle: if typesize > 1 {
                    BloscShuffle::Shuffle
                } else {
                    BloscShuffle::NoShuffle
                },
                typesize,
                blocksize: 0,
            })),
            Self::None => None,
        }
    }
}

/// What to do with Arrow nulls, which Zarr cannot represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum NullPolicy {
    /// Refuse a column with nulls, naming it and the first null row (the default).
    #[default]
    Error,
    /// Write nulls as `""`, empty bytes, 0, `false`, and NaN for floats (as pandas
    /// and numpy mark a missing float): the nulls are lost, on purpose.
    Fill,
}

impl std::str::FromStr for NullPolicy {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim()).ok_or_else(|| ParseOptionError::new("nulls", s, "error or fill"))
    }
}

impl NullPolicy {
    /// Parse the CLI spelling: `error`, `fill`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Self::Error),
            "fill" => Some(Self::Fill),
            _ => None,
        }
    }

    /// The spelling `NullPolicy::from_str` reads back (its `Display`).
    fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Fill => "fill",
        }
    }
}

/// How a table becomes a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Layout {
    /// One 1-D array per column (the default), each carrying the dimension name
    /// (`dimension_names`, v2 `_ARRAY_DIMENSIONS`) so xarray opens the group as a
    /// dataset.
    #[default]
    Plain,
    /// An anndata dataframe (`anndata.io.read_elem` reads it as a pandas
    /// DataFrame): a `Dictionary` column becomes a `categorical` element; an
    /// integer, bool or string column that may hold nulls a `nullable-*` element
    /// (values and mask); floats with nulls hold NaN; the pandas index (from
    /// pyarrow's `pandas` schema metadata, else the row numbers) is `_index`.
    AnnData,
}

impl std::str::FromStr for Layout {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim()).ok_or_else(|| ParseOptionError::new("layout", s, "plain or anndata"))
    }
}

impl Layout {
    /// Parse the CLI spelling: `plain`, `anndata`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "plain" | "default" => Some(Self::Plain),
            "anndata" => Some(Self::AnnData),
            _ => None,
        }
    }

    /// The spelling `Layout::from_str` reads back (its `Display`).
    fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::AnnData => "anndata",
        }
    }
}

/// What a write does with an existing node at its output: `mode`, of which
/// `overwrite` and `append` are the shorthands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteMode {
    /// Make the node; an existing one is an error (the default).
    Create,
    /// Replace an existing node (only a Zarr store).
    Overwrite,
    /// Add the rows to the group there (made when absent).
    Append,
}

impl std::str::FromStr for WriteMode {
    type Err = ParseOptionError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::parse(s.trim())
            .ok_or_else(|| ParseOptionError::new("mode", s, "create, overwrite or append"))
    }
}

impl WriteMode {
    /// Parse the spelling: `create`, `overwrite`, `append`.
    fn parse(s: &str) -> Option<Self> {
        match s {
            "create" => Some(Self::Create),
            "overwrite" => Some(Self::Overwrite),
            "append" => Some(Self::Append),
            _ => None,
        }
    }

    /// The spelling `WriteMode::from_str` reads back (its `Display`).
    fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Overwrite => "overwrite",
            Self::Append => "append",
        }
    }
}

crate::options::options! {
    /// How arrays are written.
    #[derive(Debug, Clone, PartialEq)]
    pub struct WriteOptions("write") {
        /// [to Zarr] Replace an existing node instead of refusing.
        pub overwrite: bool = false,
        /// [to Zarr] What to do with an existing node: create (the default: an
        /// existing node is an error), overwrite (as overwrite) or append (as
        /// append). Given, it must agree with overwrite and append.
        pub mode: Option<WriteMode> as crate::options::Unset = None,
        /// [to Zarr] Append the rows to the group at the output (made when
        /// absent): its columns must be the input's, by names and Zarr data
        /// types, and its own format, codecs and chunks apply. A partly filled
        /// last chunk is stored again whole, new chunks follow, and the metadata
        /// is updated last (the consolidated metadata last of all): readers see
        /// the old rows or all of them. A second writer appending at once waits
        /// for the first (lock_timeout).
        pub append: bool = false; conflicts(&[
            "overwrite", "zarr_format", "encoding", "compressor", "level",
            "chunk_len", "shard_len", "chunk_shape", "shard_shape",
        ]),
        /// [to Zarr] With an append (append, or mode append): seconds to wait
        /// while another writer appends to the group before giving up with a
        /// Busy error (default 60).
        pub lock_timeout: Duration as crate::options::Seconds = DEFAULT_LOCK_TIMEOUT,
        /// [to Zarr] Zarr format: 3 (the default) or 2.
        pub zarr_format: u8 as ZarrFormat = 3,
        /// [to Zarr] String and bytes layout: default (vlen-utf8 / vlen-bytes, as
        /// zarr-python writes), zarrs-vlen, or zep0007 (experimental draft).
        pub encoding: Encoding = Encoding::Default,
        /// [to Zarr] Chunk compressor: default (zstd for strings, bytes and
        /// one-byte values; blosc with lz4 after a byte shuffle for wider
        /// numbers), zstd (every array), gzip, blosc (zstd inside, byte
        /// shuffle) or none.
        pub compressor: Compressor = Compressor::Default,
        /// [to Zarr] Compressor level (default: zstd 0, gzip 5, blosc 5;
        /// under the default compressor, zstd's for strings and blosc's, 0-9,
        /// for numbers).
        pub level: Option<i32> as crate::options::Unset = None,
        /// [to Zarr] Elements per chunk of a 1-D array (default: about 4 MiB of
        /// values per chunk); with shard_len, per inner chunk.
        pub chunk_len: Option<usize> as crate::options::Unset = None,
        /// [to Zarr] Store 1-D arrays in sharding_indexed shards of N elements
        /// (rounded up to a multiple of the chunk length), the index at the end
        /// with crc32c, as zarr-python writes. Zarr v3 only.
        pub shard_len: Option<usize> as crate::options::Unset = None,
        /// [to Zarr] Chunk shape of N-d arrays (linear-format input),
        /// comma-separated, e.g. 100,100 (default: chunks of about 4 MiB
        /// spanning all but the first dimension).
        pub chunk_shape: Option<Vec<u64>> as crate::options::List = None,
        /// [to Zarr] Shard shape of N-d arrays, a multiple of the chunk shape in
        /// every dimension, e.g. 1000,1000. Zarr v3 only.
        pub shard_shape: Option<Vec<u64>> as crate::options::List = None,
        /// [to Zarr] Nulls: error (the default) refuses a column with nulls
        /// (naming it and the first null row); fill writes each null as "" for
        /// strings, empty bytes, 0 for integers, NaN for floats, false for
        /// bools, so the nulls are lost.
        pub nulls: NullPolicy = NullPolicy::Error,
        /// [to Zarr] Group layout: plain (the default: one array per column,
        /// with the dimension name xarray reads) or anndata (an anndata
        /// dataframe: dictionary columns become categoricals, integer, bool and
        /// string columns with nulls nullable-* elements, the pandas index
        /// _index; anndata.io.read_elem reads it as the same DataFrame).
        pub layout: Layout = Layout::Plain,
        /// [to Zarr] Record chunk statistics beside each 1-D array
        /// (`zarrow.stats`: each chunk's bounds, null and NaN counts, and its
        /// object's version), which let a filter skip chunks; off (the command
        /// line's --no-stats): none are written.
        pub stats: bool = true; negated_flag("no-stats"),
        /// [to Icechunk] The commit's message (default: one naming zarrow, the
        /// operation, the rows and the node).
        pub message: Option<String> as crate::options::Unset = None,
    }
}

/// The codec of `zarr_format`: 2 or 3.
#[derive(Debug)]
pub(crate) struct ZarrFormat;

impl crate::options::Codec<u8> for ZarrFormat {
    const TAKES: &'static str = "2 or 3";

    fn parse(key: &'static str, text: &str) -> Result<u8> {
        match text.trim() {
            "2" => Ok(2),
            "3" => Ok(3),
            _ => Err(Error::Option(ParseOptionError::new(key, text, Self::TAKES))),
        }
    }

    fn items(value: &u8) -> Vec<String> {
        vec![value.to_string()]
    }
}

/// Each option's spelling (`Encoding::name`, ...) is its `Display`: what its
/// `FromStr` reads back, and what `--help` shows as a default.
macro_rules! display_by_name {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}
display_by_name!(Encoding, Compressor, NullPolicy, Layout, WriteMode);
crate::options::by_name!(
    Encoding: "default, zarrs-vlen or zep0007",
    Compressor: "default, zstd, gzip, blosc or none",
    NullPolicy: "error or fill",
    Layout: "plain or anndata",
    WriteMode: "create, overwrite or append"
);

/// How long a writer waits for another by default: a minute.
pub(crate) const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

impl WriteOptions {
    /// The mode in force: `mode` when given, else `append`'s or `overwrite`'s,
    /// else create; `overwrite` is a caller's own besides (`convert`'s).
    ///
    /// # Errors
    /// [`Error::OptionConflict`] naming `mode` when it contradicts `overwrite`
    /// or `append`, or naming both of those when both are on.
    pub(crate) fn write_mode(&self, overwrite: bool) -> Result<WriteMode> {
        let overwrite = overwrite || self.overwrite;
        let conflict = |mode: WriteMode, other: &str| Error::OptionConflict {
            option: format!("mode {mode}"),
            other: other.into(),
            why: "the mode contradicts it",
        };
        match self.mode {
            Some(mode) if overwrite && mode != WriteMode::Overwrite => {
                Err(conflict(mode, "overwrite"))
            }
            Some(mode) if self.append && mode != WriteMode::Append => Err(conflict(mode, "append")),
            Some(mode) => Ok(mode),
            None if self.append && overwrite => Err(Error::OptionConflict {
                option: "append".into(),
                other: "overwrite".into(),
                why: "",
            }),
            None if self.append => Ok(WriteMode::Append),
            None if overwrite => Ok(WriteMode::Overwrite),
            None => Ok(WriteMode::Create),
        }
    }

    /// Whether the rows are appended (`mode` append, or `append`).
    pub(crate) fn appends(&self) -> bool {
        self.mode
            .map_or(self.append, |mode| mode == WriteMode::Append)
    }

    /// Whether an existing node is replaced (`mode` overwrite, or `overwrite`).
    pub(crate) fn overwrites(&self) -> bool {
        self.mode
            .map_or(self.overwrite, |mode| mode == WriteMode::Overwrite)
    }

    /// Refuse `chunk_shape` and `shard_shape` where a table's 1-D columns are
    /// written: they shape N-d arrays (`write_nd_array`), and nothing is ignored
    /// in silence.
    pub(crate) fn refuse_nd_shapes(&self) -> Result<()> {
        if self.chunk_shape.is_some() || self.shard_shape.is_some() {
            return Err(Error::OptionNotApplicable {
                options: vec!["chunk_shape", "shard_shape"],
                applies_to: "N-d arrays (write_nd_array); 1-D arrays take chunk_len and shard_len",
            });
        }
        Ok(())
    }

    /// For an output that is not Zarr: an append, or its lock timeout, would be
    /// ignored, so either is an error.
    #[cfg(feature = "convert")]
    pub(crate) fn refuse_appending(&self) -> Result<()> {
        let mut given = Vec::new();
        if self.appends() {
            given.push("--append");
        }
        if self.lock_timeout != DEFAULT_LOCK_TIMEOUT {
            given.push("lock_timeout");
        }
        if given.is_empty() {
            return Ok(());
        }
        Err(Error::OptionNotApplicable {
            options: given,
            applies_to: "a Zarr output (rows added to its group)",
        })
    }

    /// Whether chunks are stored in shards.
    fn sharded(&self) -> bool {
        self.shard_len.is_some() || self.shard_shape.is_some()
    }

    /// The options the group's own metadata decides when appending (format,
    /// codecs, chunks) that differ from the defaults: set, they would be
    /// ignored.
    pub(crate) fn set_for_a_new_group(&self) -> Vec<&'static str> {
        let defaults = Self::default();
        let mut given = Vec::new();
        if self.zarr_format != defaults.zarr_format {
            given.push("zarr_format");
        }
        if self.encoding != defaults.encoding {
            given.push("encoding");
        }
        if self.compressor != defaults.compressor {
            given.push("compressor");
        }
        if self.level.is_some() {
            given.push("level");
        }
        if self.chunk_len.is_some() {
            given.push("chunk_len");
        }
        if self.shard_len.is_some() {
            given.push("shard_len");
        }
        given
    }

    fn validate(&self) -> Result<()> {
        if self.write_mode(false)? != WriteMode::Append && self.lock_timeout != DEFAULT_LOCK_TIMEOUT
        {
            return Err(Error::OptionNotApplicable {
                options: vec!["lock_timeout"],
                applies_to: "an append (mode append)",
            });
        }
        if self.zarr_format != 2 && self.zarr_format != 3 {
            return Err(Error::Option(ParseOptionError::new(
                "zarr_format",
                &self.zarr_format.to_string(),
                "2 or 3",
            )));
        }
        if self.zarr_format == 2 && self.encoding != Encoding::Default {
            return Err(Error::OptionConflict {
                option: format!("encoding {}", self.encoding),
                other: "zarr_format 2".into(),
                why: "the encoding needs Zarr v3 (v2 has only vlen-utf8 / vlen-bytes)",
            });
        }
        for (option, len) in [("chunk_len", self.chunk_len), ("shard_len", self.shard_len)] {
            if len == Some(0) {
                return Err(Error::Option(ParseOptionError::new(
                    option,
                    "0",
                    "a number of elements, at least 1",
                )));
            }
        }
        if self.sharded() && self.zarr_format == 2 {
            return Err(Error::OptionConflict {
                option: "sharding".into(),
                other: "zarr_format 2".into(),
                why: "sharding needs Zarr v3 (v2 has no sharding_indexed codec)",
            });
        }
        if self.sharded() && self.encoding == Encoding::Zep0007 {
            return Err(Error::OptionConflict {
                option: "encoding zep0007".into(),
                other: "sharding".into(),
                why: "the ZEP0007 layout is named by the data type and cannot sit inside a shard",
            });
        }
        for shape in [&self.chunk_shape, &self.shard_shape].into_iter().flatten() {
            if shape.contains(&0) {
                return Err(Error::InvalidShape {
                    shape: shape.clone(),
                    problem: ShapeProblem::ZeroExtent,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options as _;
    use proptest::prelude::*;

    /// `mode` is declared with the other options: set by its key, refused by
    /// name for a value it does not take, and it must agree with `overwrite`
    /// and `append`, its shorthands; `lock_timeout` applies to an append only.
    #[test]
    fn mode_and_its_shorthands() {
        let with = |pairs: &[(&str, &str)]| {
            let mut options = WriteOptions::default();
            for (key, value) in pairs {
                options.set(key, value).unwrap();
            }
            options
        };
        assert_eq!(with(&[]).write_mode(false).unwrap(), WriteMode::Create);
        assert_eq!(with(&[]).write_mode(true).unwrap(), WriteMode::Overwrite);
        for (pairs, mode) in [
            (&[("mode", "append")][..], WriteMode::Append),
            (&[("append", "true")], WriteMode::Append),
            (&[("mode", "append"), ("append", "true")], WriteMode::Append),
            (&[("mode", "overwrite")], WriteMode::Overwrite),
            (
                &[("overwrite", "true"), ("mode", "overwrite")],
                WriteMode::Overwrite,
            ),
            (&[("mode", "create")], WriteMode::Create),
        ] {
            let options = with(pairs);
            assert_eq!(options.write_mode(false).unwrap(), mode, "{pairs:?}");
            assert_eq!(options.appends(), mode == WriteMode::Append, "{pairs:?}");
            assert_eq!(
                options.overwrites(),
                mode == WriteMode::Overwrite,
                "{pairs:?}"
            );
            assert!(options.validate().is_ok(), "{pairs:?}");
        }
        for pairs in [
            &[("mode", "create"), ("overwrite", "true")][..],
            &[("mode", "append"), ("overwrite", "true")],
            &[("mode", "overwrite"), ("append", "true")],
            &[("append", "true"), ("overwrite", "true")],
        ] {
            let options = with(pairs);
            assert!(
                matches!(options.validate(), Err(Error::OptionConflict { .. })),
                "{pairs:?}"
            );
        }
        // The caller's own overwrite (convert's) against the mode.
        assert!(with(&[("mode", "append")]).write_mode(true).is_err());
        match WriteOptions::default().set("mode", "replace") {
            Err(Error::Option(e)) => {
                assert_eq!((e.option, e.value.as_str()), ("mode", "replace"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            with(&[("mode", "append")]).values(),
            [("mode", vec!["append".to_string()])]
        );
        let late = with(&[("lock_timeout", "5")]);
        assert!(matches!(
            late.validate(),
            Err(Error::OptionNotApplicable { options, .. }) if options == ["lock_timeout"]
        ));
        assert!(
            with(&[("lock_timeout", "5"), ("mode", "append")])
                .validate()
                .is_ok()
        );
    }

    proptest! {
        /// The options a plan carries make the same options again.
        #[test]
        fn carried_options_are_the_same_options(
            format in prop_oneof![Just(2u8), Just(3u8)],
            encoding in prop_oneof![Just(Encoding::Default), Just(Encoding::ZarrsVlen), Just(Encoding::Zep0007)],
            compressor in prop_oneof![Just(Compressor::Default), Just(Compressor::Zstd), Just(Compressor::Gzip), Just(Compressor::Blosc), Just(Compressor::None)],
            level in proptest::option::of(-5i32..22),
            chunk_len in proptest::option::of(1usize..1 << 30),
            shard_len in proptest::option::of(1usize..1 << 30),
            anndata: bool,
            fill: bool,
            overwrite: bool,
            append: bool,
            wait_ms in 0u64..10_000_000,
        ) {
            let mut options = WriteOptions { zarr_format: format, encoding, compressor, layout: if anndata { Layout::AnnData } else { Layout::Plain }, nulls: if fill { NullPolicy::Fill } else { NullPolicy::Error }, overwrite, append, lock_timeout: Duration::from_millis(wait_ms), ..WriteOptions::default() };
            options.level = level;
            options.chunk_len = chunk_len;
            options.shard_len = shard_len;
            options.chunk_shape = chunk_len.map(|n| vec![n as u64, 7]);
            let carried = crate::options::Carried::of(&options);
            let back: WriteOptions = carried.options().unwrap();
            prop_assert_eq!(back, options);
        }
    }

    #[test]
    fn every_option_reads_its_names_and_names_what_it_takes() {
        for e in [Encoding::Default, Encoding::ZarrsVlen, Encoding::Zep0007] {
            assert_eq!(e.name().parse::<Encoding>(), Ok(e));
        }
        for c in [
            Compressor::Default,
            Compressor::Zstd,
            Compressor::Gzip,
            Compressor::Blosc,
            Compressor::None,
        ] {
            assert_eq!(c.name().parse::<Compressor>(), Ok(c));
        }
        for l in [Layout::Plain, Layout::AnnData] {
            assert_eq!(l.name().parse::<Layout>(), Ok(l));
        }
        for n in [NullPolicy::Error, NullPolicy::Fill] {
            assert_eq!(n.name().parse::<NullPolicy>(), Ok(n));
        }
        let e = "lz5".parse::<Compressor>().unwrap_err();
        assert_eq!(
            (e.option, e.value.as_str(), e.allowed),
            ("compressor", "lz5", "default, zstd, gzip, blosc or none")
        );
        assert_eq!(
            "vlen2".parse::<Encoding>().unwrap_err().to_string(),
            "encoding \"vlen2\": use default, zarrs-vlen or zep0007"
        );
        let mut options = WriteOptions::default();
        assert!(matches!(
            options.set("layout", "wide"),
            Err(Error::Option(ParseOptionError {
                option: "layout",
                ..
            }))
        ));
    }
}
