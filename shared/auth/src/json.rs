//! A JSON pre-check: duplicate object keys anywhere are refused.
//!
//! `serde_json` keeps the last of two equal keys, so two parsers (ours and an IdP's, or an
//! authorization check and a dispatcher) can read different values from one document
//! (RFC 7519 §4: claim names "MUST be unique"; the Go SDK's CVE-2026-27896 class).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Returns true if and only if `bytes` is JSON in which no object repeats a key.
pub fn has_unique_keys(bytes: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    UniqueKeys.deserialize(&mut de).is_ok() && de.end().is_ok()
}

struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON without duplicate keys")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(UniqueKeys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key) {
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(UniqueKeys)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_at_any_depth() {
        assert!(has_unique_keys(br#"{"a":1,"b":{"c":[{"d":1,"e":2}]}}"#));
        assert!(has_unique_keys(br#"[1,"x",null,true,1.5]"#));
        assert!(!has_unique_keys(br#"{"a":1,"a":2}"#));
        assert!(!has_unique_keys(br#"{"x":{"sub":"a","sub":"b"}}"#));
        assert!(!has_unique_keys(br#"[{"k":1,"k":1}]"#));
        // Escapes are compared decoded: "\u0061" is "a".
        assert!(!has_unique_keys(br#"{"a":1,"\u0061":2}"#));
        assert!(!has_unique_keys(b"{\"a\":1} trailing"));
        assert!(!has_unique_keys(b"not json"));
    }
}
