//! Options declared once, in the manner of DataFusion's `config_namespace!`.
//!
//! Each option group ([`ReadOptions`](crate::ReadOptions),
//! [`TableOptions`](crate::read::TableOptions), [`WriteOptions`](crate::write::WriteOptions),
//! `UrlOptions`, `Limits`, `ExportOptions`, and the compositions of them that
//! `convert` and the DataFusion table take) is one `options!` declaration:
//! each field with its type, default and doc. From it come the struct, its
//! `Default`, and the [`Options`] impl: [`Options::entries`] (what the command
//! line's flags, the Python package's keywords and `--help` are made of),
//! [`Options::set`] (a key and its text: `zarrow convert`'s flags, DataFusion's
//! `OPTIONS`), [`Options::set_items`] (a key and a list: Python's lists and
//! tuples) and [`Options::values`] (the options that differ from the defaults,
//! as the items `set_items` takes back: how a plan carries them to another
//! machine). No front end lists the options again.
//!
//! How a field's text is read and written is its codec: the field type's
//! own spelling, or one the declaration names
//! (`as Size`, `as Seconds`, `as Rows`...).

use std::ops::Range;
use std::time::Duration;

use crate::error::{Error, ParseOptionError, Result};

/// What an option takes, for a front end to offer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionKind {
    /// `true` or `false`: a command-line flag that needs no value.
    Flag,
    /// One value.
    Value,
    /// A list: comma-separated as text, a list or tuple in Python.
    List,
}

/// One option, as its declaration describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OptionEntry {
    /// Its key: `zarrow convert`'s flag without the dashes and with `_` for
    /// `-`, Python's keyword, the key of DataFusion's `OPTIONS`.
    pub key: &'static str,
    /// Its documentation (the declaration's doc comment).
    pub doc: &'static str,
    /// What it takes.
    pub kind: OptionKind,
    /// Its values, as a phrase (`a number`, `zstd, gzip, blosc or none`).
    pub takes: &'static str,
    /// The command line's flag for a [`Flag`](OptionKind::Flag) that is on by
    /// default: giving it turns the option off (`no-cf` for `decode_cf`).
    pub negated_flag: Option<&'static str>,
    /// Options the command line refuses beside this one.
    pub conflicts: &'static [&'static str],
}

impl OptionEntry {
    pub(crate) const fn new(
        key: &'static str,
        doc: &'static str,
        kind: OptionKind,
        takes: &'static str,
    ) -> Self {
        Self {
            key,
            doc,
            kind,
            takes,
            negated_flag: None,
            conflicts: &[],
        }
    }

    pub(crate) const fn negated_flag(mut self, flag: &'static str) -> Self {
        self.negated_flag = Some(flag);
        self
    }

    pub(crate) const fn conflicts(mut self, keys: &'static [&'static str]) -> Self {
        self.conflicts = keys;
        self
    }

    /// The doc's paragraphs, each on one line: the first is a short help.
    pub fn paragraphs(&self) -> Vec<String> {
        self.doc
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| !p.is_empty())
            .collect()
    }
}

/// A group of options declared with `options!`.
pub trait Options: Default {
    /// The group's name, in errors (`write`, `convert`, `ZARR table`).
    const GROUP: &'static str;

    /// Every option of the group (and of the groups it is composed of), in
    /// declaration order, each key once.
    fn entries() -> Vec<OptionEntry>;

    /// Set the option `key` from its text (a list: comma-separated). `None`:
    /// the group has no such key.
    fn try_set(&mut self, key: &str, value: &str) -> Option<Result<()>>;

    /// Set the option `key` from items (a list's, or a scalar's one). `None`:
    /// the group has no such key.
    fn try_set_items(&mut self, key: &str, items: &[String]) -> Option<Result<()>>;

    /// Call `f` with each option's key and value, as the items
    /// [`set_items`](Self::set_items) takes (none: unset).
    fn visit(&self, f: &mut dyn FnMut(&'static str, Vec<String>));

    /// Set the option named `key` from its text.
    ///
    /// # Errors
    /// [`Error::Option`] naming the key, the value and what it takes;
    /// [`Error::UnknownOption`] for a key the group has not.
    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        self.try_set(key, value)
            .unwrap_or_else(|| Err(unknown::<Self>(key)))
    }

    /// Set the option named `key` from items: a list's, or one for a scalar.
    ///
    /// # Errors
    /// As [`set`](Self::set).
    fn set_items(&mut self, key: &str, items: &[String]) -> Result<()> {
        self.try_set_items(key, items)
            .unwrap_or_else(|| Err(unknown::<Self>(key)))
    }

    /// The options that differ from the defaults, as `(key, items)`: set in
    /// order on the defaults with [`set_items`](Self::set_items), they make
    /// these options again.
    fn values(&self) -> Vec<(&'static str, Vec<String>)> {
        let mut defaults = Vec::new();
        Self::default().visit(&mut |key, items| defaults.push((key, items)));
        let mut given = Vec::new();
        self.visit(&mut |key, items| {
            if !defaults.iter().any(|(k, d)| *k == key && *d == items) {
                given.push((key, items));
            }
        });
        given
    }
}

/// Options as a plan carries them to another machine: the `(key, items)` of
/// those that differ from the defaults ([`Options::values`]), made into the
/// options again there with [`Options::set_items`].
#[cfg(any(feature = "datafusion", test))]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct Carried(Vec<(String, Vec<String>)>);

#[cfg(any(feature = "datafusion", test))]
impl Carried {
    /// What `options` carry.
    pub(crate) fn of<T: Options>(options: &T) -> Self {
        Self(
            options
                .values()
                .into_iter()
                .map(|(key, items)| (key.to_string(), items))
                .collect(),
        )
    }

    /// The options carried, on the defaults.
    ///
    /// # Errors
    /// As [`Options::set_items`]: a plan from another version of zarrow may
    /// carry a key or a value this one does not take.
    pub(crate) fn options<T: Options>(&self) -> Result<T> {
        let mut options = T::default();
        for (key, items) in &self.0 {
            options.set_items(key, items)?;
        }
        Ok(options)
    }
}

fn unknown<T: Options>(key: &str) -> Error {
    Error::UnknownOption {
        group: T::GROUP,
        key: key.to_string(),
        known: T::entries().iter().map(|e| e.key).collect(),
    }
}

/// How an option's text becomes its value and back.
pub(crate) trait Codec<T> {
    /// What it takes.
    const KIND: OptionKind = OptionKind::Value;
    /// Its values, as a phrase.
    const TAKES: &'static str;
    /// The value of `text` (a list: comma-separated).
    ///
    /// # Errors
    /// [`Error::Option`] for a text that is not one of its values.
    fn parse(key: &'static str, text: &str) -> Result<T>;
    /// The value of `items` (one for a scalar).
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    fn parse_items(key: &'static str, items: &[String]) -> Result<T> {
        match items {
            [one] => Self::parse(key, one),
            _ => Err(bad(key, &items.join(","), Self::TAKES)),
        }
    }
    /// The value as items (none: unset).
    fn items(value: &T) -> Vec<String>;
}

fn bad(key: &'static str, value: &str, takes: &'static str) -> Error {
    Error::Option(ParseOptionError::new(key, value, takes))
}

/// A value an option holds, read and written by its own spelling.
pub(crate) trait OptionValue: Sized {
    /// What it takes.
    const KIND: OptionKind = OptionKind::Value;
    /// Its values, as a phrase.
    const TAKES: &'static str;
    /// Parse the text (`None`: not a value).
    fn parse_text(text: &str) -> Option<Self>;
    /// Its text.
    fn text(&self) -> String;
}

/// The codec of a type's own [`OptionValue`] spelling.
#[derive(Debug)]
pub(crate) struct Plain;

impl<T: OptionValue> Codec<T> for Plain {
    const KIND: OptionKind = T::KIND;
    const TAKES: &'static str = T::TAKES;

    fn parse(key: &'static str, text: &str) -> Result<T> {
        T::parse_text(text).ok_or_else(|| bad(key, text, T::TAKES))
    }

    fn items(value: &T) -> Vec<String> {
        vec![value.text()]
    }
}

/// A flag's text: `true` / `1` / `yes`, `false` / `0` / `no`, in any case.
pub(crate) fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

impl OptionValue for bool {
    const KIND: OptionKind = OptionKind::Flag;
    const TAKES: &'static str = "true or false";
    fn parse_text(text: &str) -> Option<Self> {
        parse_flag(text)
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

macro_rules! numbers {
    ($($t:ty: $takes:literal),*) => {$(
        impl OptionValue for $t {
            const TAKES: &'static str = $takes;
            fn parse_text(text: &str) -> Option<Self> {
                text.trim().parse().ok()
            }
            fn text(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
numbers!(u64: "a number", usize: "a number", i32: "an integer");

impl OptionValue for String {
    const TAKES: &'static str = "a text";
    fn parse_text(text: &str) -> Option<Self> {
        Some(text.to_string())
    }
    fn text(&self) -> String {
        self.clone()
    }
}

/// Implement [`OptionValue`] for types whose `FromStr` and `Display` are the
/// option's spelling (each type's module names its own).
macro_rules! by_name {
    ($($t:ty: $takes:expr),*) => {$(
        impl $crate::options::OptionValue for $t {
            const TAKES: &'static str = $takes;
            fn parse_text(text: &str) -> Option<Self> {
                text.parse().ok()
            }
            fn text(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
pub(crate) use by_name;
by_name!(crate::StringType: "utf8, large-utf8 or utf8-view");

/// `Option<T>`'s codec: none when unset.
impl<T: OptionValue> Codec<Option<T>> for Unset {
    const KIND: OptionKind = T::KIND;
    const TAKES: &'static str = T::TAKES;
    fn parse(key: &'static str, text: &str) -> Result<Option<T>> {
        <Plain as Codec<T>>::parse(key, text).map(Some)
    }
    fn items(value: &Option<T>) -> Vec<String> {
        value.iter().map(T::text).collect()
    }
}

/// The codec of an `Option<T>` whose `None` is "not given": no items.
#[derive(Debug)]
pub(crate) struct Unset;

/// The codec of a list, comma-separated as text: `Option<Vec<T>>` (`None`:
/// not given) or `Vec<T>`.
#[derive(Debug)]
pub(crate) struct List;

fn list_items(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl<T: OptionValue> Codec<Vec<T>> for List {
    const KIND: OptionKind = OptionKind::List;
    const TAKES: &'static str = "a comma-separated list";
    fn parse(key: &'static str, text: &str) -> Result<Vec<T>> {
        Self::parse_items(key, &list_items(text))
    }
    fn parse_items(key: &'static str, items: &[String]) -> Result<Vec<T>> {
        items
            .iter()
            .map(|item| T::parse_text(item).ok_or_else(|| bad(key, item, T::TAKES)))
            .collect()
    }
    fn items(value: &Vec<T>) -> Vec<String> {
        value.iter().map(T::text).collect()
    }
}

impl<T: OptionValue> Codec<Option<Vec<T>>> for List {
    const KIND: OptionKind = OptionKind::List;
    const TAKES: &'static str = "a comma-separated list";
    fn parse(key: &'static str, text: &str) -> Result<Option<Vec<T>>> {
        <Self as Codec<Vec<T>>>::parse(key, text).map(Some)
    }
    fn parse_items(key: &'static str, items: &[String]) -> Result<Option<Vec<T>>> {
        <Self as Codec<Vec<T>>>::parse_items(key, items).map(Some)
    }
    fn items(value: &Option<Vec<T>>) -> Vec<String> {
        value.iter().flatten().map(T::text).collect()
    }
}

/// The codec of an `Option<usize>` count that is at least 1 when given
/// (`batch_size`): 0 is refused by name, never clamped in silence.
#[derive(Debug)]
pub(crate) struct AtLeastOne;

impl Codec<Option<usize>> for AtLeastOne {
    const TAKES: &'static str = "a number, at least 1";
    fn parse(key: &'static str, text: &str) -> Result<Option<usize>> {
        match text.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(bad(key, text, Self::TAKES)),
        }
    }
    fn items(value: &Option<usize>) -> Vec<String> {
        value.iter().map(usize::to_string).collect()
    }
}

/// A byte count with an optional suffix K, M, G or T (powers of 1024; `KB`,
/// `KiB` alike).
#[derive(Debug)]
pub(crate) struct Size;

/// What a byte count takes.
const SIZE: &str = "a byte count, optionally with a suffix K, M, G or T (powers of 1024)";

/// A byte count with an optional suffix: `1048576`, `64K`, `2G`, `1 TiB`.
///
/// # Errors
/// [`ParseOptionError`] for anything else, or a count past `u64`.
pub fn parse_size(text: &str) -> std::result::Result<u64, ParseOptionError> {
    let bad = || ParseOptionError::new("size", text, SIZE);
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let shift = match suffix
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    number.checked_mul(1 << shift).ok_or_else(bad)
}

impl Codec<u64> for Size {
    const TAKES: &'static str = SIZE;
    fn parse(key: &'static str, text: &str) -> Result<u64> {
        parse_size(text).map_err(|_| bad(key, text, SIZE))
    }
    fn items(value: &u64) -> Vec<String> {
        vec![value.to_string()]
    }
}

impl Codec<usize> for Size {
    const TAKES: &'static str = SIZE;
    fn parse(key: &'static str, text: &str) -> Result<usize> {
        let bytes = <Self as Codec<u64>>::parse(key, text)?;
        Ok(usize::try_from(bytes).unwrap_or(usize::MAX))
    }
    fn items(value: &usize) -> Vec<String> {
        vec![value.to_string()]
    }
}

impl Codec<Option<u64>> for Size {
    const TAKES: &'static str = SIZE;
    fn parse(key: &'static str, text: &str) -> Result<Option<u64>> {
        <Self as Codec<u64>>::parse(key, text).map(Some)
    }
    fn items(value: &Option<u64>) -> Vec<String> {
        value.iter().map(u64::to_string).collect()
    }
}

/// A duration in seconds (a decimal number, 0 or more).
#[derive(Debug)]
pub(crate) struct Seconds;

const SECONDS: &str = "a number of seconds (0 or more)";

fn parse_seconds(key: &'static str, text: &str) -> Result<Duration> {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| bad(key, text, SECONDS))
}

impl Codec<Duration> for Seconds {
    const TAKES: &'static str = SECONDS;
    fn parse(key: &'static str, text: &str) -> Result<Duration> {
        parse_seconds(key, text)
    }
    fn items(value: &Duration) -> Vec<String> {
        vec![value.as_secs_f64().to_string()]
    }
}

impl Codec<Option<Duration>> for Seconds {
    const TAKES: &'static str = SECONDS;
    fn parse(key: &'static str, text: &str) -> Result<Option<Duration>> {
        parse_seconds(key, text).map(Some)
    }
    fn items(value: &Option<Duration>) -> Vec<String> {
        value.iter().map(|d| d.as_secs_f64().to_string()).collect()
    }
}

/// A row range: `START..END` as text, `[START, END]` as items.
#[derive(Debug)]
pub(crate) struct Rows;

const ROWS: &str = "START..END (for example 1000..2000), START at most END";

fn rows(key: &'static str, start: &str, end: &str, text: &str) -> Result<Range<u64>> {
    let start: u64 = start.trim().parse().map_err(|_| bad(key, text, ROWS))?;
    let end: u64 = end.trim().parse().map_err(|_| bad(key, text, ROWS))?;
    if start > end {
        return Err(bad(key, text, ROWS));
    }
    Ok(start..end)
}

impl Codec<Option<Range<u64>>> for Rows {
    const TAKES: &'static str = ROWS;
    fn parse(key: &'static str, text: &str) -> Result<Option<Range<u64>>> {
        let (start, end) = text.split_once("..").ok_or_else(|| bad(key, text, ROWS))?;
        rows(key, start, end, text).map(Some)
    }
    fn parse_items(key: &'static str, items: &[String]) -> Result<Option<Range<u64>>> {
        match items {
            [start, end] => rows(key, start, end, &items.join(", ")).map(Some),
            [text] => Self::parse(key, text),
            _ => Err(bad(key, &items.join(", "), ROWS)),
        }
    }
    fn items(value: &Option<Range<u64>>) -> Vec<String> {
        value
            .iter()
            .flat_map(|r| [r.start.to_string(), r.end.to_string()])
            .collect()
    }
}

/// Declare a group of options once: the struct (its fields public, with
/// their docs), its `Default`, and its [`Options`] impl.
///
/// ```text
/// options! {
///     /// The struct's doc.
///     #[derive(Debug, Clone)]
///     pub struct ReadOptions("read") {
///         /// The option's doc.
///         pub string_type: Option<StringType> as Unset = None,
///         /// A flag on by default; `--no-cf` on the command line.
///         pub decode_cf: bool = true; negated_flag("no-cf"),
///     }
///     groups { /// A group it is composed of.
///              pub url: UrlOptions = UrlOptions::default() }
///     internal { /// A field no key sets.
///                pub parallel: bool = true }
/// }
/// ```
///
/// A field's text is read by its codec (`as Codec`; default [`Plain`]);
/// after `;`, the entry's builders (`negated_flag`, `conflicts`).
/// A composed group's keys follow the struct's own (a key the struct has
/// itself is the struct's).
macro_rules! options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident ($group:literal) {
            $(
                $(#[doc = $doc:literal])*
                $fvis:vis $field:ident : $ty:ty $(as $codec:ty)? = $default:expr
                $(; $($build:ident ( $($barg:expr),* )),+ )?
            ),* $(,)?
        }
        $(groups {
            $( $(#[doc = $gdoc:literal])* $gvis:vis $gfield:ident : $gty:ty = $gdefault:expr ),* $(,)?
        })?
        $(internal {
            $( $(#[doc = $idoc:literal])* $ivis:vis $ifield:ident : $ity:ty = $idefault:expr ),* $(,)?
        })?
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])* $fvis $field: $ty, )*
            $($( $(#[doc = $gdoc])* $gvis $gfield: $gty, )*)?
            $($( $(#[doc = $idoc])* $ivis $ifield: $ity, )*)?
        }

        impl ::std::default::Default for $name {
            fn default() -> Self {
                Self {
                    $( $field: $default, )*
                    $($( $gfield: $gdefault, )*)?
                    $($( $ifield: $idefault, )*)?
                }
            }
        }

        impl $crate::options::Options for $name {
            const GROUP: &'static str = $group;

            fn entries() -> ::std::vec::Vec<$crate::options::OptionEntry> {
                #[allow(unused_mut)]
                let mut entries = ::std::vec![$(
                    $crate::options::OptionEntry::new(
                        stringify!($field),
                        concat!($($doc, "\n"),*),
                        <$crate::options::options!(@codec $($codec)?) as $crate::options::Codec<$ty>>::KIND,
                        <$crate::options::options!(@codec $($codec)?) as $crate::options::Codec<$ty>>::TAKES,
                    ) $($( .$build($($barg),*) )+)?
                ),*];
                $($(
                    for entry in <$gty as $crate::options::Options>::entries() {
                        if !entries.iter().any(|e: &$crate::options::OptionEntry| e.key == entry.key) {
                            entries.push(entry);
                        }
                    }
                )*)?
                entries
            }

            fn try_set(&mut self, key: &str, value: &str) -> ::std::option::Option<$crate::Result<()>> {
                match key {
                    $(stringify!($field) => ::std::option::Option::Some(
                        <$crate::options::options!(@codec $($codec)?) as $crate::options::Codec<$ty>>::parse(stringify!($field), value)
                            .map(|v| self.$field = v),
                    ),)*
                    _ => {
                        $($(
                            if let ::std::option::Option::Some(done) = $crate::options::Options::try_set(&mut self.$gfield, key, value) {
                                return ::std::option::Option::Some(done);
                            }
                        )*)?
                        ::std::option::Option::None
                    }
                }
            }

            fn try_set_items(&mut self, key: &str, items: &[::std::string::String]) -> ::std::option::Option<$crate::Result<()>> {
                match key {
                    $(stringify!($field) => ::std::option::Option::Some(
                        <$crate::options::options!(@codec $($codec)?) as $crate::options::Codec<$ty>>::parse_items(stringify!($field), items)
                            .map(|v| self.$field = v),
                    ),)*
                    _ => {
                        $($(
                            if let ::std::option::Option::Some(done) = $crate::options::Options::try_set_items(&mut self.$gfield, key, items) {
                                return ::std::option::Option::Some(done);
                            }
                        )*)?
                        ::std::option::Option::None
                    }
                }
            }

            fn visit(&self, f: &mut dyn FnMut(&'static str, ::std::vec::Vec<::std::string::String>)) {
                $( f(stringify!($field), <$crate::options::options!(@codec $($codec)?) as $crate::options::Codec<$ty>>::items(&self.$field)); )*
                #[allow(unused_variables)]
                let own: &[&str] = &[$(stringify!($field)),*];
                $($(
                    $crate::options::Options::visit(&self.$gfield, &mut |key, items| if !own.contains(&key) { f(key, items) });
                )*)?
            }
        }
    };
    (@codec) => { $crate::options::Plain };
    (@codec $codec:ty) => { $codec };
}
pub(crate) use options;

#[cfg(test)]
mod tests {
    use super::*;

    crate::options::options! {
        #[derive(Debug, Clone, PartialEq)]
        struct Inner("inner") {
            /// A number.
            n: Option<u64> as Unset = None,
            /// Shared with the outer group, which takes it.
            shared: bool = false,
        }
    }

    crate::options::options! {
        #[derive(Debug, Clone, PartialEq)]
        struct Outer("outer") {
            /// On by default.
            on: bool = true; negated_flag("no-on"),
            /// A size.
            size: u64 as Size = 1024,
            /// Columns.
            columns: Option<Vec<String>> as List = None,
            /// Rows.
            rows: Option<Range<u64>> as Rows = None,
            /// A wait.
            wait: Duration as Seconds = Duration::from_secs(60),
            /// The outer's own.
            shared: bool = false,
        }
        groups {
            /// Composed.
            inner: Inner = Inner { n: Some(7), ..Inner::default() },
        }
        internal {
            /// No key.
            hidden: u8 = 3,
        }
    }

    #[test]
    fn declared_once() {
        let keys: Vec<_> = Outer::entries().iter().map(|e| e.key).collect();
        assert_eq!(
            keys,
            ["on", "size", "columns", "rows", "wait", "shared", "n"]
        );
        let entries = Outer::entries();
        assert_eq!(entries[0].negated_flag, Some("no-on"));
        assert_eq!(entries[0].kind, OptionKind::Flag);
        assert_eq!(entries[2].kind, OptionKind::List);
        assert_eq!(entries[1].paragraphs(), ["A size."]);

        let mut o = Outer::default();
        assert_eq!((o.hidden, o.inner.n), (3, Some(7)));
        o.set("size", "2K").unwrap();
        o.set("columns", "a, b,c").unwrap();
        o.set("rows", "3..9").unwrap();
        o.set("wait", "1.5").unwrap();
        o.set("on", "no").unwrap();
        o.set("n", "5").unwrap();
        o.set("shared", "true").unwrap();
        assert_eq!(o.size, 2048);
        assert_eq!(
            o.columns.as_deref(),
            Some(&["a".into(), "b".into(), "c".into()][..])
        );
        assert_eq!(o.rows, Some(3..9));
        assert_eq!(o.wait, Duration::from_millis(1500));
        assert!(!o.on && o.shared && !o.inner.shared);
        assert_eq!(o.inner.n, Some(5));
        o.set_items("columns", &["x,y".into()]).unwrap();
        assert_eq!(o.columns.as_deref(), Some(&["x,y".into()][..]));
        o.set_items("rows", &["1".into(), "2".into()]).unwrap();
        assert_eq!(o.rows, Some(1..2));

        // The values differing from the defaults make the options again.
        let mut back = Outer::default();
        for (key, items) in o.values() {
            back.set_items(key, &items).unwrap();
        }
        assert_eq!(back, o);

        for (key, text) in [
            ("size", "1X"),
            ("rows", "9..3"),
            ("wait", "-1"),
            ("on", "maybe"),
        ] {
            match o.set(key, text) {
                Err(Error::Option(e)) => assert_eq!((e.option, e.value.as_str()), (key, text)),
                other => panic!("{key}={text}: {other:?}"),
            }
        }
        match o.set("hidden", "1") {
            Err(Error::UnknownOption { group, known, .. }) => {
                assert_eq!(group, "outer");
                assert!(known.contains(&"n") && !known.contains(&"hidden"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn at_least_one() {
        let parse = |text| <AtLeastOne as Codec<Option<usize>>>::parse("batch_size", text);
        assert_eq!(parse("5").unwrap(), Some(5));
        for text in ["0", "-1", "x", ""] {
            match parse(text) {
                Err(Error::Option(e)) => {
                    assert_eq!((e.option, e.value.as_str()), ("batch_size", text))
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K").unwrap(), 64 << 10);
        assert_eq!(parse_size("2 GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("7").unwrap(), 7);
        assert!(parse_size("1P").is_err() && parse_size("99999999999T").is_err());
    }
}
