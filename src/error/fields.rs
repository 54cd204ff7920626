//! [`Error::fields`]: an error's typed context as name / value pairs, for a
//! caller that acts on it without reading the message (the Python package sets
//! them as the exception's attributes).

use super::Error;

impl Error {
    /// The typed context this error carries, as `(name, value)` pairs, in a fixed
    /// order: where it happened (`location`, `path`, `key`), then what
    /// (`field`, `codec`, `expected`, `found`, `name`, `column`...). Names are
    /// the same across variants: `key` is always a store key (a metadata
    /// document's, a chunk's), `path` a node path or a file, `location` a URL or
    /// a store's location. A field the error does not have is left out (an
    /// [`Error::Metadata`] without `found` has no `found` pair); an error
    /// without typed context gives none. Input-derived values are whole, except
    /// `found`, which the error keeps cut to 200 characters.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let s = |v: &str| v.to_string();
        match self {
            Error::Io { path, .. } => vec![("path", path.display().to_string())],
            Error::InvalidKey { key, reason } => vec![("key", s(key)), ("reason", s(reason))],
            #[cfg(feature = "object-store")]
            Error::Location { location, .. } => vec![("location", s(location))],
            Error::NodeNotFound { path } => vec![("path", s(path))],
            Error::ValueTooLarge { key, size, limit } => vec![
                ("key", s(key)),
                ("size", size.to_string()),
                ("limit", limit.to_string()),
            ],
            Error::ReadTooLarge {
                path, bytes, limit, ..
            } => vec![
                ("path", s(path)),
                ("size", bytes.to_string()),
                ("limit", limit.to_string()),
            ],
            Error::Json { key, .. } => vec![("key", s(key))],
            Error::Metadata {
                key,
                field,
                codec,
                expected,
                found,
            } => {
                let mut pairs = vec![("key", s(key)), ("field", s(field))];
                if let Some(codec) = codec {
                    pairs.push(("codec", s(codec)));
                }
                pairs.push(("expected", s(expected)));
                if let Some(found) = found {
                    pairs.push(("found", s(found)));
                }
                pairs
            }
            Error::UnsupportedCodec { name, key } => vec![("key", s(key)), ("codec", s(name))],
            Error::CodecNotBuilt { name, feature, key } => {
                vec![("key", s(key)), ("codec", s(name)), ("feature", s(feature))]
            }
            Error::UnsupportedDataType { name, key } => {
                vec![("key", s(key)), ("name", s(name))]
            }
            Error::Chunk { key, .. } => vec![("key", s(key))],
            Error::Encode { key, codec, .. } => vec![("key", s(key)), ("codec", s(codec))],
            Error::Nulls { column, row } => {
                vec![("column", s(column)), ("row", row.to_string())]
            }
            Error::Busy { store, lock, .. } => {
                vec![("location", s(store)), ("lock", s(lock))]
            }
            Error::ReadOnlyVersion { location, version } => {
                vec![("location", s(location)), ("version", s(version))]
            }
            Error::Conflict {
                location, branch, ..
            } => vec![("location", s(location)), ("branch", s(branch))],
            Error::AlreadyExists { path, .. }
            | Error::WrongNodeKind { path, .. }
            | Error::NotOneDimensional { path, .. }
            | Error::RowsOutOfRange { path, .. }
            | Error::AppendMismatch { path, .. }
            | Error::NotAZarrStore { path, .. }
            | Error::UnsupportedConversion { path, .. }
            | Error::Table { path, .. }
            | Error::LengthsDiffer { path, .. }
            | Error::NoColumns { path, .. }
            | Error::Convention { path, .. } => vec![("path", s(path))],
            Error::UnknownFormat { path, expected } => {
                vec![("path", s(path)), ("expected", s(expected))]
            }
            Error::Linear {
                field,
                expected,
                found,
            } => {
                let mut v = vec![("field", s(field)), ("expected", s(expected))];
                if let Some(found) = found {
                    v.push(("found", s(found)));
                }
                v
            }
            Error::RangeOutOfBounds { key, .. } => vec![("key", s(key))],
            Error::UnknownOption { key, .. } => vec![("field", s(key))],
            Error::InvalidName { name, .. } => vec![("name", s(name))],
            Error::UnsupportedArrowType { column, .. } => column
                .as_deref()
                .map(|c| vec![("column", s(c))])
                .unwrap_or_default(),
            Error::ConditionalWriteUnsupported { location, .. }
            | Error::Remote { location, .. } => vec![("location", s(location))],
            Error::Option(e) => vec![
                ("field", s(e.option)),
                ("expected", s(e.allowed)),
                ("found", super::cut_owned(&e.value)),
            ],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_fields_in_order_without_absent_ones() {
        let e = Error::metadata_found("obs/zarr.json", "shape", "a list", "3");
        assert_eq!(
            e.fields(),
            vec![
                ("key", "obs/zarr.json".to_string()),
                ("field", "shape".to_string()),
                ("expected", "a list".to_string()),
                ("found", "3".to_string()),
            ]
        );
        let e = Error::metadata("zarr.json", "node_type", "\"array\" or \"group\"");
        let names: Vec<&str> = e.fields().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["key", "field", "expected"]);
        assert!(
            Error::Internal { what: "x" }.fields().is_empty(),
            "no typed context, no pairs"
        );
    }
}
