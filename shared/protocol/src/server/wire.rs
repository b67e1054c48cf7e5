//! What the transport hands the engine and gets back.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::context::Caller;
use crate::json::{write_json_as_string, write_object};
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
    /// The body, except that a mirrored tool result's `structuredContent` is a `null`
    /// placeholder for the text of its first content block (see
    /// [`CallRecord::structured_mirrored`]): read it with [`Reply::body_json`] or
    /// [`Reply::body_value`].
    pub(crate) body: Option<Value>,
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
    /// The body as JSON text, exactly what is sent. The `structuredContent` of a mirrored
    /// tool result (the usual case, and the bulk of a list's bytes) is written from the text
    /// of its first content block, the only form in which it exists.
    pub fn body_json(&self) -> Option<String> {
        let body = self.body.as_ref()?;
        let mirrored = self.call.as_ref().is_some_and(|c| c.structured_mirrored);
        let mut out = Vec::with_capacity(256);
        if mirrored {
            write_message_or_batch(&mut out, body);
        } else {
            // Writing a `Value` into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, body);
        }
        debug_assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(&out).is_ok(),
            "a body written with its mirror spliced in must be JSON"
        );
        // serde_json writes UTF-8, and the mirror spliced in is a `String`.
        String::from_utf8(out).ok()
    }

    /// The body as the client parses it (for tests and tools; the transport sends
    /// [`Reply::body_json`]).
    pub fn body_value(&self) -> Option<Value> {
        serde_json::from_str(&self.body_json()?).ok()
    }
}

/// Writes a response, or a batch of them, with the mirrored tool result's
/// `structuredContent` written from its text block. A batch holds at most one `tools/call`,
/// and no other method's result has `structuredContent`.
fn write_message_or_batch(out: &mut Vec<u8>, body: &Value) {
    match body {
        Value::Object(message) => write_message(out, message),
        Value::Array(batch) => {
            out.push(b'[');
            for (i, entry) in batch.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_message_or_batch(out, entry);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// `message` (a JSON-RPC response) serialised with its result's `structuredContent`
/// placeholder replaced by the text of the result's first content block.
fn write_message(out: &mut Vec<u8>, message: &Map<String, Value>) {
    write_object(out, message, |out, name, value| {
        let (true, Value::Object(result)) = (name == "result", value) else {
            return false;
        };
        let mirror = result
            .get("content")
            .and_then(|c| c.get(0))
            .and_then(|block| block.get("text"))
            .and_then(Value::as_str);
        let (Some(Value::Null), Some(mirror)) = (result.get("structuredContent"), mirror) else {
            return false;
        };
        // The text twice, once escaped, and the envelope: one allocation, no regrowth.
        out.reserve(2 * mirror.len() + mirror.len() / 8 + 512);
        write_object(out, result, |out, name, value| match (name, value) {
            ("structuredContent", _) => {
                out.extend_from_slice(mirror.as_bytes());
                true
            }
            ("content", Value::Array(blocks)) => {
                write_content(out, blocks, mirror);
                true
            }
            _ => false,
        });
        true
    });
}

/// The content blocks, the first of which is the text block holding `mirror`: its text is
/// written by [`write_json_as_string`], which escapes compact JSON without serde_json's
/// per-escape copy (a 50-event result has a quote every few bytes).
fn write_content(out: &mut Vec<u8>, blocks: &[Value], mirror: &str) {
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            Value::Object(members) if i == 0 => write_object(out, members, |out, name, _| {
                name == "text" && {
                    write_json_as_string(out, mirror);
                    true
                }
            }),
            other => {
                let _ = serde_json::to_writer(&mut *out, other);
            }
        }
    }
    out.push(b']');
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
    fn a_mirrored_result_is_written_from_its_text() {
        let structured = json!({"events": [{"id": 1, "say": "\"hi\"\n"}], "count": 1, "ü": null});
        let mirror = serde_json::to_string(&structured).unwrap();
        let result = |structured: Value| {
            json!({
                "content": [{"type": "text", "text": mirror}],
                "structuredContent": structured,
                "_meta": {"x": 1},
            })
        };
        let held = json!({"jsonrpc": "2.0", "id": 7, "result": result(Value::Null)});
        let sent = json!({"jsonrpc": "2.0", "id": 7, "result": result(structured.clone())});
        let expected = serde_json::to_string(&sent).unwrap();
        assert_eq!(reply(held.clone(), true).body_json(), Some(expected));
        assert_eq!(reply(held.clone(), true).body_value(), Some(sent.clone()));
        // In a batch, beside other answers.
        let other = json!({"jsonrpc": "2.0", "id": 8, "result": {"tools": []}});
        let batch = reply(json!([other, held]), true);
        assert_eq!(batch.body_value(), Some(json!([other, sent])));
    }

    #[test]
    fn bodies_without_a_mirror_are_serialised_whole() {
        // (body, whether it holds a mirror's placeholder)
        for (body, placeholder) in [
            (json!([{"jsonrpc": "2.0", "id": 1, "result": {}}]), false),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {}}}),
                false,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}}),
                false,
            ),
            // Only a call marked as mirrored has its placeholder filled.
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "{}"}], "structuredContent": null}}),
                true,
            ),
        ] {
            let expected = serde_json::to_string(&body).unwrap();
            assert_eq!(
                reply(body.clone(), false).body_json(),
                Some(expected.clone())
            );
            if !placeholder {
                assert_eq!(reply(body, true).body_json(), Some(expected));
            }
        }
        assert_eq!(
            Reply::new(202, None, ProtocolVersion::ASSUMED_WITHOUT_HEADER).body_json(),
            None
        );
    }
}
