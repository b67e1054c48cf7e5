//! What the fixtures share: a tool without arguments, an answer that completes at once, a
//! tool whose answer never changes, and a 1x1 PNG for image content.

use mcp_protocol::{CallToolResult, Outcome, ToolDef, ToolError};
use serde_json::{Value, json};

/// A 1x1 PNG.
pub(crate) const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

pub(crate) fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

pub(crate) fn complete(result: CallToolResult) -> Result<Outcome<CallToolResult>, ToolError> {
    Ok(Outcome::Complete(result))
}

pub(crate) fn fixed(name: &str, description: &str, result: CallToolResult) -> ToolDef {
    ToolDef::new(name, description, no_args(), move |_, _| {
        let result = result.clone();
        async move { complete(result) }
    })
}
