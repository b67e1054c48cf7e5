//! What the transport hands the engine and gets back.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::context::Caller;
use crate::json::write_object;
use crate::result::CallRecord;
use crate::version::ProtocolVersion;

/// A transport header as the HTTP layer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderField<'a> {
    #[default]
    Absent,
    One(&'a str),
    /// Sent more than once, or not valid visible ASCII/UTF-8: never trustworthy.
    Invalid,
}

/// One HTTP POST, reduced to what the protocol needs.
#[derive(Debug, Clone)]
pub struct Incoming<'a> {
    pub body: &'a [u8],
    pub protocol_version: HeaderField<'a>,
    pub mcp_method: HeaderField<'a>,
    pub mcp_name: HeaderField<'a>,
    pub deadline: Option<Instant>,
    pub caller: Arc<Caller>,
}

impl<'a> Incoming<'a> {
    /// A body with no transport headers and an anonymous caller.
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            body,
            protocol_version: HeaderField::Absent,
            mcp_method: HeaderField::Absent,
            mcp_name: HeaderField::Absent,
            deadline: None,
            caller: Arc::new(Caller::default()),
        }
    }
}

/// What to send back: an HTTP status and a JSON body, or no body (202 Accepted).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    /// The revision the reply was produced under.
    pub version: ProtocolVersion,
    /// The JSON-RPC method, when one was read (for logs).
    pub method: Option<String>,
    /// Set when the call was refused for missing scopes: the scopes to name in the
    /// `insufficient_scope` challenge.
    pub insufficient_scope: Option<Vec<String>>,
    /// Set when the call was rate limited: the seconds for `Retry-After`.
    pub retry_after_secs: Option<u64>,
    /// What the request's `tools/call` did, if it made one (for logs and metrics).
    pub call: Option<CallRecord>,
}

impl Reply {
    pub(crate) fn new(status: u16, body: Option<Value>, version: ProtocolVersion) -> Self {
        Self {
            status,
            body,
            version,
            method: None,
            insufficient_scope: None,
            retry_after_secs: None,
            call: None,
        }
    }
}

impl Reply {
    /// The body as JSON text, as `serde_json::to_string` writes it. The `structuredContent`
    /// of a tool result that mirrors it in its first text block (the usual case, and the
    /// bulk of a list's bytes) is written from that text rather than by serialising its
    /// tree a second time.
    pub fn body_json(&self) -> Option<String> {
        let body = self.body.as_ref()?;
        let mirrored = self.call.as_ref().is_some_and(|c| c.structured_mirrored);
        let spliced = match body {
            Value::Object(message) if mirrored => write_with_mirror(message),
            _ => None,
        };
        debug_assert!(
            spliced.is_none() || spliced == serde_json::to_string(body).ok(),
            "a mirrored result's text must be its structured content serialised"
        );
        // Serialising a `Value` cannot fail.
        Some(spliced.unwrap_or_else(|| serde_json::to_string(body).unwrap_or_default()))
    }
}

/// `message` (a JSON-RPC response) serialised with its result's `structuredContent` taken
/// from the result's first text block; `None` when the message has no such pair.
fn write_with_mirror(message: &Map<String, Value>) -> Option<String> {
    let result = message.get("result")?.as_object()?;
    result.get("structuredContent")?;
    let mirror = result.get("content")?.get(0)?.get("text")?.as_str()?;
    let mut out = Vec::with_capacity(2 * mirror.len() + 256);
    write_object(&mut out, message, |out, name, value| {
        if name != "result" {
            return false;
        }
        let Value::Object(result) = value else {
            return false;
        };
        write_object(out, result, |out, name, _| {
            if name != "structuredContent" {
                return false;
            }
            out.extend_from_slice(mirror.as_bytes());
            true
        });
        true
    });
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn reply(body: Value, mirrored: bool) -> Reply {
        Reply {
            call: Some(CallRecord {
                structured_mirrored: mirrored,
                ..CallRecord::default()
            }),
            ..Reply::new(200, Some(body), ProtocolVersion::ASSUMED_WITHOUT_HEADER)
        }
    }

    #[test]
    fn a_mirrored_result_is_written_as_serde_json_writes_it() {
        let structured = json!({"events": [{"id": 1, "say": "\"hi\"\n"}], "count": 1, "ü": null});
        let mirror = serde_json::to_string(&structured).unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": mirror}],
            "structuredContent": structured,
            "_meta": {"x": 1},
        }});
        let expected = serde_json::to_string(&body).unwrap();
        assert_eq!(
            reply(body.clone(), true).body_json(),
            Some(expected.clone())
        );
        assert_eq!(reply(body, false).body_json(), Some(expected));
    }

    #[test]
    fn bodies_without_a_mirror_are_serialised_whole() {
        for body in [
            json!([{"jsonrpc": "2.0", "id": 1, "result": {}}]),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {}}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}),
        ] {
            let expected = serde_json::to_string(&body).unwrap();
            assert_eq!(reply(body, true).body_json(), Some(expected));
        }
        assert_eq!(
            Reply::new(202, None, ProtocolVersion::ASSUMED_WITHOUT_HEADER).body_json(),
            None
        );
    }
}
