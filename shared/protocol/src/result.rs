//! What a call produces: tool results (complete or asking for input), the errors a body can
//! return, the statistics it reports, and the record of the call the transport logs. Depends on
//! nothing else in the crate, so the registry, the request context and the server all build on
//! it without importing each other.

use std::borrow::Cow;
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
/// only, so what it knows of its own serialised form stays true of what is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult {
    content: Vec<Value>,
    structured: Structured,
    pub is_error: bool,
    /// What the call did, for the request's log record and metrics. Never sent.
    pub stats: CallStats,
}

/// A result's `structuredContent`.
#[derive(Debug, Clone, PartialEq)]
enum Structured {
    None,
    /// Sent as this tree (an error's machine-readable detail).
    Tree(Value),
    /// The text of the first content block, which is compact JSON exactly as serde_json
    /// writes it: sent once as that text block and once, the same bytes, as
    /// `structuredContent`. A list result is written item by item from its rows and never
    /// exists as a `Value` (issue 18); a result made from a tree keeps it, so that checking
    /// it against the output schema does not parse the text back.
    Mirrored(MirrorLens, Option<Box<Value>>),
}

/// Serialised lengths of a mirrored result: of the structured content and of the content
/// blocks (one text block holding the mirror), as `serde_json::to_string(..).len()`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct MirrorLens {
    structured: usize,
    content: usize,
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
        let json = serde_json::to_string(&value).unwrap_or_default();
        let escapes = string_escapes(json.as_bytes());
        Self::mirrored(json, escapes, Some(Box::new(value)))
    }

    /// [`CallToolResult::structured`] for a tool that has written its result as JSON text
    /// itself (a list that measured every item against the budget by writing it out):
    /// `json` must be a JSON object exactly as `serde_json::to_string` writes it (compact,
    /// members in key order), which debug builds, and so every test, check. It is sent as
    /// the text block and, the same bytes, as `structuredContent`.
    pub fn structured_json(json: String) -> Self {
        // Counting what the mirror gains as a JSON string is one fast scan; escaping the text
        // only to measure it was a few percent of a 50-event call's CPU.
        let escapes = string_escapes(json.as_bytes());
        Self::mirrored(json, escapes, None)
    }

    /// [`CallToolResult::structured_json`] for a tool that has counted
    /// [`string_escapes`] of `json` already, as it wrote it (a list counts each item as it
    /// measures it): one scan of a large result fewer. Debug builds check the count.
    pub fn structured_json_with_escapes(json: String, escapes: usize) -> Self {
        Self::mirrored(json, escapes, None)
    }

    /// A result whose structured content is `json`, mirrored in its text block; `tree` is
    /// the same content as a `Value` where the caller had one.
    fn mirrored(json: String, escapes: usize, tree: Option<Box<Value>>) -> Self {
        // Compact, as serde_json writes it; members may come in another order (an event's
        // `structured` keeps the database's).
        debug_assert!(
            matches!(serde_json::from_str(&json), Ok(Value::Object(ref o))
                if serde_json::to_string(o).is_ok_and(|own| own.len() == json.len())),
            "structured JSON must be a compact object: {json}"
        );
        debug_assert_eq!(
            escapes,
            string_escapes(json.as_bytes()),
            "the escapes counted must be the text's"
        );
        Self {
            structured: Structured::Mirrored(
                MirrorLens {
                    structured: json.len(),
                    content: EMPTY_TEXT_BLOCK.len() + json.len() + escapes,
                },
                tree,
            ),
            content: vec![text_block(json)],
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
            structured: Structured::Tree(detail),
            is_error: true,
            stats: CallStats::default(),
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
            structured: Structured::None,
            is_error: false,
            stats: CallStats::default(),
        }
    }

    /// Its content blocks.
    pub fn content(&self) -> &[Value] {
        &self.content
    }

    /// Its structured content, if any. A mirrored result's is parsed from its text block
    /// (for checks and tests: the request path never needs the tree).
    pub fn structured_content(&self) -> Option<Cow<'_, Value>> {
        match &self.structured {
            Structured::None => None,
            Structured::Tree(value) => Some(Cow::Borrowed(value)),
            Structured::Mirrored(_, Some(tree)) => Some(Cow::Borrowed(tree)),
            Structured::Mirrored(_, None) => self
                .first_text()
                .and_then(|text| serde_json::from_str(text).ok())
                .map(Cow::Owned),
        }
    }

    /// Its first content block is a text block whose text is its structured content
    /// serialised (made by [`CallToolResult::structured`] or
    /// [`CallToolResult::structured_json`]).
    pub(crate) fn mirrors_structured_content(&self) -> bool {
        matches!(self.structured, Structured::Mirrored(..))
    }

    /// Its structured content, taken out (a detailed failure's data).
    pub(crate) fn into_structured_content(self) -> Option<Value> {
        match self.structured {
            Structured::Tree(value) => Some(value),
            Structured::Mirrored(_, Some(tree)) => Some(*tree),
            _ => self.structured_content().map(Cow::into_owned),
        }
    }

    /// The JSON-RPC `result`, its parts moved rather than copied (`serde_json::to_value`
    /// would deep-copy a possibly large tree). A mirrored result's `structuredContent` is a
    /// `null` placeholder here: [`crate::Reply::body_json`] writes the mirror's bytes in its
    /// place, which the caller must ask for by marking the call
    /// [`CallRecord::structured_mirrored`].
    pub(crate) fn into_wire(self) -> Value {
        let mut wire = Map::with_capacity(3);
        wire.insert("content".into(), Value::Array(self.content));
        match self.structured {
            Structured::None => {}
            Structured::Tree(value) => {
                wire.insert("structuredContent".into(), value);
            }
            Structured::Mirrored(..) => {
                wire.insert("structuredContent".into(), Value::Null);
            }
        }
        if self.is_error {
            wire.insert("isError".into(), Value::Bool(true));
        }
        Value::Object(wire)
    }

    /// The length of the result as sent (its wire form with the mirror written as
    /// `structuredContent`): what the response budget counts. A mirrored result's lengths
    /// are known from its constructor, so nothing is walked or escaped only to count it.
    pub(crate) fn wire_len(&self) -> usize {
        let (content, structured) = match &self.structured {
            Structured::Mirrored(lens, _) => (lens.content, Some(lens.structured)),
            Structured::Tree(value) => (serialized_len(&self.content), Some(serialized_len(value))),
            Structured::None => (serialized_len(&self.content), None),
        };
        let structured = structured.map_or(0, |len| {
            r#","structuredContent":"#.len().saturating_add(len)
        });
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
    /// The result sent is a mirrored one ([`CallToolResult::structured_json`]): the reply
    /// holds a `null` placeholder for its `structuredContent`, and
    /// [`crate::Reply::body_json`] writes the text of its first content block there.
    pub structured_mirrored: bool,
}

impl CallRecord {
    /// The record of a read that is not a tool call (`resources/read`, `prompts/get`,
    /// `completion/complete`): the method stands where a tool's name would, for logs and
    /// metrics.
    pub fn of_method(method: &str) -> Self {
        Self {
            tool: method.to_owned(),
            known_tool: true,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the client receives for `result`: its wire form with a mirrored result's
    /// `structuredContent` filled in, serialised.
    fn sent(result: CallToolResult) -> String {
        let structured = result.structured_content().map(Cow::into_owned);
        let mut wire = result.into_wire();
        if let Some(structured) = structured {
            wire["structuredContent"] = structured;
        }
        serde_json::to_string(&wire).unwrap()
    }

    #[test]
    fn wire_len_is_the_length_of_what_is_sent() {
        let detail = json!({"code": "x", "say": "\"quoted\" \\ and ünïcode"});
        let results = [
            CallToolResult::text("plain \"text\"\n"),
            CallToolResult::error("failed"),
            CallToolResult::structured(json!({"rows": [1, "two", {"three": null}], "n": 1.5})),
            CallToolResult::structured_json("{}".into()),
            CallToolResult::structured(
                json!({"say": "a \"quote\", a \\ backslash, a\nnewline, a \u{1} control, ünïcode"}),
            ),
            CallToolResult::structured_error("what went wrong", detail.clone()),
            CallToolResult::structured_error("over", detail).with_stats(CallStats::default()),
            CallToolResult::blocks(vec![]),
        ];
        for result in results {
            let len = result.wire_len();
            let sent = sent(result);
            assert_eq!(len, sent.len(), "{sent}");
        }
    }

    #[test]
    fn a_mirrored_result_is_its_text_twice() {
        let value = json!({"count": 2, "events": [{"id": 1}, {"id": 2}], "say": "\"q\""});
        // Held as text only, it is parsed back for whoever asks.
        let text_only = CallToolResult::structured_json(value.to_string());
        assert_eq!(text_only.structured_content().as_deref(), Some(&value));
        let result = CallToolResult::structured(value.clone());
        assert_eq!(result.structured_content().as_deref(), Some(&value));
        assert_eq!(result.wire_len(), text_only.wire_len());
        assert_eq!(result.first_text(), Some(value.to_string().as_str()));
        assert_eq!(
            serde_json::from_str::<Value>(&sent(result)).unwrap(),
            json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value})
        );
    }

    #[test]
    #[should_panic(expected = "a compact object")]
    #[cfg(debug_assertions)]
    fn structured_json_that_is_not_compact_is_caught() {
        let _ = CallToolResult::structured_json(r#"{"b": 1}"#.into());
    }

    #[test]
    #[should_panic(expected = "a compact object")]
    #[cfg(debug_assertions)]
    fn structured_json_that_is_no_object_is_caught() {
        let _ = CallToolResult::structured_json("[1]".into());
    }

    #[test]
    fn structured_json_may_keep_its_members_order() {
        let result = CallToolResult::structured_json(r#"{"b":1,"a":2}"#.into());
        assert_eq!(result.first_text(), Some(r#"{"b":1,"a":2}"#));
    }
}
