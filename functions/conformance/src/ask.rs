//! Asking the client for input (2026-07-28 `input_required`): the requests a fixture sends
//! and how it reads the answers.

use mcp_protocol::{CallToolResult, InputRequired, Outcome, RequestContext};
use serde_json::{Map, Value, json};

pub(crate) fn elicitation(message: &str, property: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { property: { "type": kind } },
                "required": [property]
            }
        }
    })
}

pub(crate) fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
            "maxTokens": max_tokens
        }
    })
}

pub(crate) fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// The client's answer to input request `key`, if it sent an object for it.
pub(crate) fn response<'a>(ctx: &'a RequestContext, key: &str) -> Option<&'a Map<String, Value>> {
    ctx.input_responses.as_ref()?.get(key)?.as_object()
}

pub(crate) fn ask(requests: Vec<(&str, Value)>, state: Option<String>) -> Outcome<CallToolResult> {
    Outcome::InputRequired(InputRequired {
        input_requests: requests
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        request_state: state,
    })
}

pub(crate) fn sampled_text(answer: &Map<String, Value>) -> String {
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

pub(crate) fn elicited<'a>(answer: &'a Map<String, Value>, field: &str) -> &'a str {
    answer
        .get("content")
        .and_then(|c| c.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}
