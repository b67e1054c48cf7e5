//! JSON-RPC 2.0 envelopes: the first of the two parsing steps.
//!
//! The envelope is parsed on its own (`jsonrpc`, `id`, `method`, `params`); a method's
//! parameters are only deserialised once the method is known, so each failure gets the
//! exact code the spec assigns to it instead of an untagged-enum guess.

use serde::Serialize;
use serde_json::{Map, Number, Value};

/// A request id. MCP narrows JSON-RPC: "MUST be a string or integer", "MUST NOT be null"
/// (2025-11-25 basic §Requests). Numbers are kept as parsed so they echo back exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(Number),
    String(String),
}

impl RequestId {
    /// Reads an id, accepting only strings and integers (`0` included: the TypeScript SDK
    /// starts at 0).
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::String(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Self::Number(n.clone())),
            _ => None,
        }
    }
}

impl From<&RequestId> for Value {
    fn from(id: &RequestId) -> Self {
        match id {
            RequestId::Number(n) => Value::Number(n.clone()),
            RequestId::String(s) => Value::String(s.clone()),
        }
    }
}

/// One incoming JSON-RPC message, after the envelope step.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// A response (or error) sent by the client. Accepted in the handshake era, refused in
    /// 2026-07-28 where clients "MUST NOT send JSON-RPC responses".
    Response,
}

/// Why an envelope is not a valid JSON-RPC message. Carries the id when it could be read,
/// because an error response includes the id "except in error cases where the ID could not
/// be read due a malformed request" (2025-11-25 basic §Responses).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeError {
    pub id: Option<RequestId>,
    pub reason: &'static str,
}

/// Step one: classify a JSON value as a request, notification or response.
///
/// # Errors
///
/// Returns [`EnvelopeError`] for anything that is not a JSON-RPC 2.0 object with a string
/// `method` (or a `result`/`error` response), for a null, fractional or boolean id, and for
/// `params` that are neither an object nor an array (JSON-RPC 2.0 §4.2).
/// Why a body is not one JSON document we will read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Not JSON (or not UTF-8, or nested deeper than serde_json's limit of 128).
    Syntax,
    /// An object repeats a member name. serde_json keeps the last, another parser (a
    /// gateway, a WAF, a logging proxy) may keep the first, so the two would act on
    /// different messages (RFC 8259 §4: names "SHOULD be unique"; the class of the Go SDK's
    /// CVE-2026-27896). Refused rather than guessed.
    DuplicateKey,
}

/// Step zero: parses a body into a JSON value in one pass, refusing repeated member names
/// at any depth.
///
/// # Errors
///
/// [`BodyError`] says which rule the body broke.
pub fn parse_body(bytes: &[u8]) -> Result<Value, BodyError> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = strict::Strict.deserialize(&mut de).map_err(|e| {
        if e.to_string().starts_with(strict::DUPLICATE) {
            BodyError::DuplicateKey
        } else {
            BodyError::Syntax
        }
    })?;
    de.end().map_err(|_| BodyError::Syntax)?;
    Ok(value)
}

mod strict {
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::{Map, Number, Value};

    pub(super) const DUPLICATE: &str = "duplicate member name";

    /// Builds a [`Value`] like serde_json's own visitor, except that a repeated key fails.
    pub(super) struct Strict;

    impl<'de> DeserializeSeed<'de> for Strict {
        type Value = Value;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Strict {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value without repeated member names")
        }

        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(Value::Number(v.into()))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(Value::Number(v.into()))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }
        fn visit_string<E>(self, v: String) -> Result<Value, E> {
            Ok(Value::String(v))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_none<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(item) = seq.next_element_seed(Strict)? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut out = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let value = map.next_value_seed(Strict)?;
                if out.insert(key, value).is_some() {
                    return Err(de::Error::custom(DUPLICATE));
                }
            }
            Ok(Value::Object(out))
        }
    }
}

pub fn parse_envelope(value: &Value) -> Result<Message, EnvelopeError> {
    let Value::Object(obj) = value else {
        return Err(EnvelopeError {
            id: None,
            reason: "a JSON-RPC message must be a JSON object",
        });
    };
    let raw_id = obj.get("id");
    let id = raw_id.and_then(RequestId::from_value);
    let fail = |reason| {
        Err(EnvelopeError {
            id: id.clone(),
            reason,
        })
    };

    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail("the \"jsonrpc\" member must be exactly \"2.0\"");
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return fail("the \"method\" member must be a string"),
        None if is_response(obj) => return Ok(Message::Response),
        None => return fail("the \"method\" member is missing"),
    };
    let params = match obj.get("params") {
        None => None,
        Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p.clone()),
        Some(_) => return fail("the \"params\" member must be an object"),
    };
    match raw_id {
        None => Ok(Message::Notification { method, params }),
        Some(Value::Null) => fail("the request id must not be null"),
        Some(_) => match id {
            Some(id) => Ok(Message::Request { id, method, params }),
            None => fail("the request id must be a string or an integer (of at most 64 bits)"),
        },
    }
}

fn is_response(obj: &Map<String, Value>) -> bool {
    obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error"))
}

/// A JSON-RPC error object as sent on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Builds a success response.
pub fn success(id: &RequestId, result: Value) -> Value {
    // `result` is moved in, never copied (see `json::object`): it is the whole reply.
    crate::json::object([
        ("jsonrpc", "2.0".into()),
        ("id", id.into()),
        ("result", result),
    ])
}

/// Builds an error response; `id` is null when it could not be read.
pub fn failure(id: Option<&RequestId>, error: &ErrorObject) -> Value {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request_id(v: Value) -> RequestId {
        match parse_envelope(&v) {
            Ok(Message::Request { id, .. }) => id,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[test]
    fn ids_are_echoed_exactly() {
        for id in [
            json!(0),
            json!(-7),
            json!(u64::MAX),
            json!("abc"),
            json!(""),
        ] {
            let parsed = request_id(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
            assert_eq!(serde_json::to_value(&parsed).unwrap(), id);
        }
    }

    #[test]
    fn bad_ids_are_invalid_requests() {
        for id in [json!(null), json!(1.5), json!(true), json!({}), json!([1])] {
            let err = parse_envelope(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
                .expect_err("must fail");
            assert!(err.reason.contains("id"), "{err:?}");
            assert_eq!(err.id, None);
        }
    }

    #[test]
    fn notifications_have_no_id_and_responses_no_method() {
        assert_eq!(
            parse_envelope(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            Ok(Message::Notification {
                method: "notifications/initialized".into(),
                params: None
            })
        );
        assert_eq!(
            parse_envelope(&json!({"jsonrpc": "2.0", "id": 3, "result": {}})),
            Ok(Message::Response)
        );
        assert_eq!(
            parse_envelope(
                &json!({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "x"}})
            ),
            Ok(Message::Response)
        );
    }

    #[test]
    fn malformed_envelopes_keep_the_readable_id() {
        let cases = [
            (
                json!({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
                "jsonrpc",
            ),
            (json!({"id": 4, "method": "ping"}), "jsonrpc"),
            (json!({"jsonrpc": "2.0", "id": 4, "method": 7}), "method"),
            (json!({"jsonrpc": "2.0", "id": 4}), "method"),
            (
                json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": "x"}),
                "params",
            ),
        ];
        for (msg, needle) in cases {
            let err = parse_envelope(&msg).expect_err("must fail");
            assert_eq!(err.id, Some(RequestId::Number(4.into())), "{msg}");
            assert!(err.reason.contains(needle), "{msg}: {err:?}");
        }
        let err = parse_envelope(&json!([1])).expect_err("must fail");
        assert_eq!(err.id, None);
    }
}
