//! A `jsonb` column as an event returns it: kept as the text the database sent and
//! re-written compactly as it is serialised, or as a tree where it had to be changed.
//!
//! Parsing every event's `structured` (and `payload`) into a `Value` tree, only to serialise
//! the tree straight back, was about 5% of a 50-event `query_events` call's CPU, and the
//! tree's maps are allocations per member (issue 18). Transcoding the text is one pass with
//! no tree. What is sent is the same JSON; its members come in `jsonb`'s order (shorter keys
//! first) instead of alphabetical order, which JSON does not give meaning to.

use std::error::Error;

use serde::{Serialize, Serializer};
use serde_json::Value;
use tokio_postgres::types::{FromSql, Type};

use crate::outcome::shorten_values;

/// A JSON value read from a `jsonb` (or `json`) column.
#[derive(Debug)]
pub(crate) enum Jsonb<'r> {
    /// The database's text of the value (valid JSON: the database checked it on the way in).
    Text(&'r str),
    /// A value changed or made here.
    Tree(Value),
}

impl<'r> FromSql<'r> for Jsonb<'r> {
    fn from_sql(ty: &Type, raw: &'r [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        // The binary form of `jsonb` is a version byte (1) before the text; `json`'s is the
        // text alone (PostgreSQL, src/backend/utils/adt/jsonb.c, jsonb_send).
        let text = if *ty == Type::JSONB {
            match raw.split_first() {
                Some((1, text)) => text,
                _ => return Err("unsupported jsonb version".into()),
            }
        } else {
            raw
        };
        Ok(Self::Text(std::str::from_utf8(text)?))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::JSONB || *ty == Type::JSON
    }
}

impl Jsonb<'_> {
    pub(crate) fn is_null(&self) -> bool {
        match self {
            Self::Text(text) => text.trim() == "null",
            Self::Tree(value) => value.is_null(),
        }
    }

    /// Cuts every string longer than `max` bytes, as [`shorten_values`] does; returns how
    /// many were cut. A text no longer than `max` holds no such string, so only a longer one
    /// is parsed to look.
    pub(crate) fn shorten(&mut self, max: usize) -> usize {
        if let Self::Text(text) = self {
            if text.len() <= max {
                return 0;
            }
            match serde_json::from_str(text) {
                Ok(tree) => *self = Self::Tree(tree),
                // Not JSON after all: left to fail as it is serialised, as a tree would have
                // failed to read.
                Err(_) => return 0,
            }
        }
        match self {
            Self::Tree(value) => shorten_values(value, max),
            Self::Text(_) => 0,
        }
    }
}

impl Serialize for Jsonb<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serde_transcode::transcode(
                &mut serde_json::Deserializer::from_str(text),
                serializer,
            ),
            Self::Tree(value) => value.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_written_compactly_with_the_same_content() {
        // As PostgreSQL prints jsonb: spaces after `:` and `,`, shorter keys first.
        let text = r#"{"a": [1, 2.5, -3, 1e300], "zz": {"q": "x \"y\" \\ \n é"}, "bbb": null}"#;
        let written = serde_json::to_string(&Jsonb::Text(text)).unwrap();
        assert_eq!(
            written,
            r#"{"a":[1,2.5,-3,1e+300],"zz":{"q":"x \"y\" \\ \n é"},"bbb":null}"#
        );
        let parsed: Value = serde_json::from_str(&written).unwrap();
        assert_eq!(parsed, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn only_a_text_longer_than_the_cut_is_parsed_and_cut() {
        let short = r#"{"m": "abcdef"}"#;
        let mut kept = Jsonb::Text(short);
        assert_eq!(kept.shorten(short.len()), 0);
        assert!(matches!(kept, Jsonb::Text(_)));
        let mut cut = Jsonb::Text(short);
        assert_eq!(cut.shorten(3), 1);
        let Jsonb::Tree(tree) = cut else {
            panic!("a cut value is a tree")
        };
        assert_ne!(tree["m"], "abcdef");
        assert!(Jsonb::Text(" null").is_null() && !Jsonb::Text("{}").is_null());
    }

    #[test]
    fn only_jsonb_version_1_is_read() {
        assert!(matches!(
            Jsonb::from_sql(&Type::JSONB, b"\x01{\"a\": 1}"),
            Ok(Jsonb::Text("{\"a\": 1}"))
        ));
        assert!(Jsonb::from_sql(&Type::JSONB, b"\x02{}").is_err());
        assert!(Jsonb::from_sql(&Type::JSONB, b"").is_err());
        assert!(matches!(
            Jsonb::from_sql(&Type::JSON, b"[1]"),
            Ok(Jsonb::Text("[1]"))
        ));
    }
}
