//! What a call produces: tool results (complete or asking for input), the errors a body can
//! return, the statistics it reports, and the record of the call the transport logs. Depends on
//! nothing else in the crate, so the registry, the request context and the server all build on
//! it without importing each other.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::budget::Budget;
use crate::json::{object, string_escapes};

/// A result that is either complete or asks the client for more input first
/// (2026-07-28 `InputRequiredResult`, SEP-2322).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Complete(T),
    InputRequired(InputRequired),
}

/// The body of an `input_required` result.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// Requests the client must answer, keyed by a name the server picks.
    pub input_requests: Map<String, Value>,
    /// Opaque state the client echoes back; must be integrity-protected by whoever makes
    /// it, because it comes back from the client.
    pub request_state: Option<String>,
}

/// A `tools/call` result (2025-11-25 schema `CallToolResult`). Built by its constructors
/// only, so the serialised length of its structured content, where a constructor
/// serialised it already (for the text mirror), stays true of what is sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    content: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// What the call did, for the request's log record and metrics. Never sent.
    #[serde(skip)]
    pub stats: CallStats,
    /// Serialised lengths a constructor knows already, because it wrote the text mirror.
    #[serde(skip)]
    mirror: Option<MirrorLens>,
}

/// `serde_json::to_string(..).len()` of the structured content and of the content blocks
/// (one text block holding its mirror).
#[derive(Debug, Clone, Copy, PartialEq)]
struct MirrorLens {
    structured: usize,
    content: usize,
}

/// The wire form, built by moving the parts rather than by `serde_json::to_value`, which
/// would deep-copy every value of a (possibly large) structured result.
impl From<CallToolResult> for Value {
    fn from(result: CallToolResult) -> Self {
        let mut wire = Map::with_capacity(3);
        wire.insert("content".into(), Value::Array(result.content));
        if let Some(structured) = result.structured_content {
            wire.insert("structuredContent".into(), structured);
        }
        if result.is_error {
            wire.insert("isError".into(), Value::Bool(true));
        }
        Value::Object(wire)
    }
}

/// Facts about one tool call that only its body knows, reported in the request's log line
/// and metrics (never sent to the client).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Rows read from the store.
    pub rows: Option<u64>,
    /// The result was cut short (row limit, byte budget or a long value shortened).
    pub truncated: bool,
    /// Where the call's deadline ran out, if it did (`acquire`, `connect`, `execute`, or
    /// `tool` when the engine stopped a body that overran it).
    pub deadline_phase: Option<&'static str>,
}

impl CallToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::blocks(vec![text_block(text.into())])
    }

    /// A result with structured content, mirrored as serialised JSON in a text block
    /// ("a tool that returns structured content SHOULD also return the serialized JSON in
    /// a TextContent block", 2025-06-18 tools §Structured Content).
    pub fn structured(value: Value) -> Self {
        // serde_json::to_string writes straight into a byte buffer; `Value`'s Display goes
        // through `fmt::Write` a token at a time. Serialising a `Value` cannot fail.
        let mirror = serde_json::to_string(&value).unwrap_or_default();
        Self::structured_with_mirror(value, mirror)
    }

    /// [`CallToolResult::structured`] for a tool that has serialised its result already
    /// (a list that measured every item against the budget by writing it out): `mirror`
    /// must be exactly `serde_json::to_string(&value)`, which debug builds, and so every
    /// test, check.
    pub fn structured_with_mirror(value: Value, mirror: String) -> Self {
        debug_assert_eq!(
            serde_json::to_string(&value).ok().as_deref(),
            Some(mirror.as_str()),
            "a structured result's mirror must be its serialised JSON"
        );
        // Counting what the mirror gains as a JSON string is one fast scan; escaping the text
        // only to measure it was a few percent of a 50-event call's CPU.
        let escapes = string_escapes(mirror.as_bytes());
        Self {
            mirror: Some(MirrorLens {
                structured: mirror.len(),
                content: EMPTY_TEXT_BLOCK.len() + mirror.len() + escapes,
            }),
            content: vec![text_block(mirror)],
            structured_content: Some(value),
            is_error: false,
            stats: CallStats::default(),
        }
    }

    /// An `isError` result whose structured content tells the model what went wrong in a
    /// form it can act on, with `text` as the human-readable block. The same detail also
    /// travels as an embedded `application/json` resource (`tool-error://<code>`), so a
    /// client that shows only content blocks still sees the machine-readable error.
    pub fn structured_error(text: impl Into<String>, detail: Value) -> Self {
        let code = detail
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("error");
        let resource = json!({
            "type": "resource",
            "resource": {
                "uri": format!("tool-error://{code}"),
                "mimeType": "application/json",
                "text": serde_json::to_string(&detail).unwrap_or_default(),
            }
        });
        Self {
            content: vec![text_block(text.into()), resource],
            structured_content: Some(detail),
            is_error: true,
            stats: CallStats::default(),
            mirror: None,
        }
    }

    /// The result for a call whose time ran out in `phase` after `budget`: what happened
    /// (`text`), what to do (`guidance`), and whether retrying as is can help.
    pub fn deadline_exceeded(
        tool: &str,
        phase: &'static str,
        budget: Duration,
        text: &str,
        guidance: &str,
    ) -> Self {
        let detail = json!({
            "code": "deadline_exceeded",
            "tool": tool,
            "phase": phase,
            "budget_ms": budget.as_millis() as u64,
            "retryable": true,
            "guidance": guidance,
        });
        Self::structured_error(format!("{text} {guidance}"), detail).with_stats(CallStats {
            deadline_phase: Some(phase),
            ..CallStats::default()
        })
    }

    /// The text of its first content block: what a protocol error says when a body's
    /// detailed result has to travel as one.
    pub(crate) fn first_text(&self) -> Option<&str> {
        self.content
            .first()
            .and_then(|block| block.get("text"))
            .and_then(Value::as_str)
    }

    /// The same result with `stats` attached.
    #[must_use]
    pub fn with_stats(mut self, stats: CallStats) -> Self {
        self.stats = stats;
        self
    }

    /// A tool execution error the model can read and act on.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// A result made of arbitrary content blocks.
    pub fn blocks(content: Vec<Value>) -> Self {
        Self {
            content,
            structured_content: None,
            is_error: false,
            stats: CallStats::default(),
            mirror: None,
        }
    }

    /// Its content blocks.
    pub fn content(&self) -> &[Value] {
        &self.content
    }

    /// Its structured content, if any.
    pub fn structured_content(&self) -> Option<&Value> {
        self.structured_content.as_ref()
    }

    /// Its first content block is a text block whose text is exactly its structured
    /// content serialised (made by [`CallToolResult::structured`] or
    /// [`CallToolResult::structured_with_mirror`]).
    pub(crate) fn mirrors_structured_content(&self) -> bool {
        self.mirror.is_some()
    }

    /// Its structured content, taken out (a detailed failure's data).
    pub(crate) fn into_structured_content(self) -> Option<Value> {
        self.structured_content
    }

    /// The length of `serde_json::to_string(&Value::from(self))`: what the response budget
    /// counts. Where a constructor serialised the structured content already, its length
    /// and that of the text block mirroring it are reused instead of walking the tree a
    /// second time and escaping the mirror only to count it.
    pub(crate) fn wire_len(&self) -> usize {
        let content = self
            .mirror
            .map_or_else(|| serialized_len(&self.content), |m| m.content);
        let structured = match &self.structured_content {
            None => 0,
            Some(value) => r#","structuredContent":"#.len().saturating_add(
                self.mirror
                    .map_or_else(|| serialized_len(value), |m| m.structured),
            ),
        };
        let is_error = if self.is_error {
            r#","isError":true"#.len()
        } else {
            0
        };
        // {"content":[...],"structuredContent":...,"isError":true}
        // (Saturating: an unserialisable part counts as `usize::MAX`, over any budget.)
        [r#"{"content":"#.len(), content, structured, is_error, 1]
            .into_iter()
            .fold(0, usize::saturating_add)
    }
}

/// The content of a result made with [`CallToolResult::structured`] whose mirror is empty,
/// serialised (members in key order).
const EMPTY_TEXT_BLOCK: &str = r#"[{"text":"","type":"text"}]"#;

/// A text content block, its text moved in (a mirror can be hundreds of KiB).
fn text_block(text: String) -> Value {
    object([("type", "text".into()), ("text", Value::String(text))])
}

/// The bytes `value` adds to a result made with [`CallToolResult::structured`]: once as
/// `structuredContent`, once more as the text mirror, a JSON string of the same text in
/// which every quote and backslash gains a backslash (compact JSON has no raw control
/// characters left to escape). Tools that fill a list up to the response budget add this
/// per item.
pub fn structured_cost(value: &Value) -> usize {
    /// Counts the text and the bytes a JSON string of it would escape, without keeping it.
    #[derive(Default)]
    struct Cost {
        bytes: usize,
        escapes: usize,
    }
    impl std::io::Write for Cost {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            self.escapes += string_escapes(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut cost = Cost::default();
    if serde_json::to_writer(&mut cost, value).is_err() {
        return usize::MAX;
    }
    cost.bytes * 2 + cost.escapes
}

/// The serialised size of `value` in bytes, measured without building the bytes (the
/// transport serialises a reply once); `usize::MAX` if it cannot be serialised.
pub(crate) fn serialized_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter::default();
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// An `io::Write` that only counts: measures serialised size without a buffer.
#[derive(Default)]
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a tool, resource or prompt body can fail.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and failed in a way the model should see and can act on; becomes an
    /// `isError` result (2025-11-25 tools §Error Handling).
    #[error("{0}")]
    Execution(String),
    /// The request's own parameters are wrong in a way only the body can tell (for example
    /// a tampered `requestState`); becomes a -32602 protocol error.
    #[error("{0}")]
    InvalidParams(String),
    /// The tool failed and has shaped the `isError` result itself (structured detail the
    /// model can act on, plus [`CallStats`] for the log).
    #[error("the tool failed with a detailed result")]
    Detailed(Box<CallToolResult>),
    /// Something broke on our side. The client gets an opaque -32603; the cause is logged.
    #[error("internal failure")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What one `tools/call` did, for the request's log line and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallRecord {
    /// The name the call asked for; see `known_tool`.
    pub tool: String,
    /// `tool` names a registered tool (callers can send any name).
    pub known_tool: bool,
    /// The result was an `isError` result (or the call was refused as one).
    pub is_error: bool,
    /// The result was over the response budget and replaced.
    pub over_budget: bool,
    /// The call was refused by a rate limit before it ran.
    pub rate_limited: bool,
    /// The call ran without its rate limits checked (their store did not answer in time).
    pub rate_limit_unchecked: bool,
    /// What the tool body reported about its run.
    pub stats: CallStats,
    /// The response budget the call ran under, and whose it was.
    pub budget: Option<Budget>,
    /// The result sent is a structured one whose first content block's text is its
    /// `structuredContent` serialised, byte for byte: [`crate::Reply::body_json`] writes
    /// those bytes for both instead of serialising the tree again.
    pub structured_mirrored: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_len_is_the_length_of_what_is_sent() {
        let detail = json!({"code": "x", "say": "\"quoted\" \\ and ünïcode"});
        let results = [
            CallToolResult::text("plain \"text\"\n"),
            CallToolResult::error("failed"),
            CallToolResult::structured(json!({"rows": [1, "two", {"three": null}], "n": 1.5})),
            CallToolResult::structured_with_mirror(json!([]), "[]".into()),
            CallToolResult::structured(
                json!({"say": "a \"quote\", a \\ backslash, a\nnewline, a \u{1} control, ünïcode"}),
            ),
            CallToolResult::structured_error("what went wrong", detail.clone()),
            CallToolResult::structured_error("over", detail).with_stats(CallStats::default()),
            CallToolResult::blocks(vec![]),
        ];
        for result in results {
            let sent = serde_json::to_string(&Value::from(result.clone())).unwrap();
            assert_eq!(result.wire_len(), sent.len(), "{sent}");
        }
    }

    #[test]
    #[should_panic(expected = "mirror must be its serialised JSON")]
    #[cfg(debug_assertions)]
    fn a_mirror_that_is_not_the_value_is_caught() {
        let _ = CallToolResult::structured_with_mirror(json!({"a": 1}), r#"{"a":2}"#.into());
    }
}
