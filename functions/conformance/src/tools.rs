//! The conformance suite's tool fixtures.

use base64::Engine as _;
use mcp_protocol::{CallToolResult, RegistryError, ToolDef, ToolError, Tools};
use serde_json::{Value, json};

use crate::ask::{ask, elicitation, response, sampled_text, sampling};

use crate::fixture::{PNG_1X1, complete, fixed, no_args};

pub(crate) fn wav() -> String {
    // 44-byte RIFF/WAVE header for 8 kHz mono 8-bit PCM, then 8 samples of silence.
    let samples = [0x80u8; 8];
    let mut bytes = Vec::with_capacity(44 + samples.len());
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(b"WAVEfmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // PCM
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&8000u32.to_le_bytes());
    bytes.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    bytes.extend_from_slice(&1u16.to_le_bytes()); // block align
    bytes.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&samples);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn fixture_tools() -> Result<Tools, RegistryError> {
    let mut tools = Tools::new();
    tools
        .register(fixed(
            "test_simple_text",
            "Returns a simple text response",
            CallToolResult::text("This is a simple text response for testing."),
        ))?
        .register(fixed(
            "test_image_content",
            "Returns a 1x1 PNG image",
            CallToolResult::blocks(vec![
                json!({ "type": "image", "data": PNG_1X1, "mimeType": "image/png" }),
            ]),
        ))?
        .register(fixed(
            "test_audio_content",
            "Returns a short WAV clip",
            CallToolResult::blocks(vec![
                json!({ "type": "audio", "data": wav(), "mimeType": "audio/wav" }),
            ]),
        ))?
        .register(fixed(
            "test_embedded_resource",
            "Returns an embedded text resource",
            CallToolResult::blocks(vec![json!({
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }
            })]),
        ))?
        .register(fixed(
            "test_multiple_content_types",
            "Returns text, image and resource content",
            CallToolResult::blocks(vec![
                json!({ "type": "text", "text": "Multiple content types test:" }),
                json!({ "type": "image", "data": PNG_1X1, "mimeType": "image/png" }),
                json!({
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"
                    }
                }),
            ]),
        ))?
        // Log and progress notifications need a response stream; this endpoint answers
        // with one JSON body, so these two run and report without notifications.
        .register(fixed(
            "test_tool_with_logging",
            "Runs a task that would log its steps (no log stream on a JSON-only endpoint)",
            CallToolResult::text("Tool execution completed"),
        ))?
        .register(fixed(
            "test_tool_with_progress",
            "Runs a task that would report progress (no progress stream on a JSON-only endpoint)",
            CallToolResult::text("Progress tool completed"),
        ))?
        .register(ToolDef::new(
            "test_error_handling",
            "Always fails with a tool execution error",
            no_args(),
            |_, _| async {
                Err(ToolError::Execution(
                    "This tool intentionally returns an error for testing".into(),
                ))
            },
        ))?
        .register(
            ToolDef::new(
                "test_sampling",
                "Asks the client's model to answer a prompt",
                json!({
                    "type": "object",
                    "properties": { "prompt": { "type": "string" } },
                    "required": ["prompt"]
                }),
                |args, ctx| async move {
                    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
                    match response(&ctx, "sample") {
                        Some(answer) => complete(CallToolResult::text(format!(
                            "LLM response: {}",
                            sampled_text(answer)
                        ))),
                        None => Ok(ask(vec![("sample", sampling(prompt, 100))], None)),
                    }
                },
            )
            .requires_client_capability("sampling"),
        )?
        .register(
            ToolDef::new(
                "test_elicitation",
                "Asks the user for input",
                json!({
                    "type": "object",
                    "properties": { "message": { "type": "string" } },
                    "required": ["message"]
                }),
                |args, ctx| async move {
                    let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                    match response(&ctx, "user_input") {
                        Some(answer) => complete(CallToolResult::text(format!(
                            "User response: {}",
                            Value::Object(answer.clone())
                        ))),
                        None => Ok(ask(
                            vec![("user_input", elicitation(message, "username", "string"))],
                            None,
                        )),
                    }
                },
            )
            .requires_client_capability("elicitation"),
        )?
        .register(
            fixed(
                "test_missing_capability",
                "Needs the client's sampling capability",
                CallToolResult::text("sampling capability was declared"),
            )
            .requires_client_capability("sampling"),
        )?
        .register(ToolDef::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "address": {
                        "$anchor": "addressDef",
                        "type": "object",
                        "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                    }
                },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }),
            |args, _| async move {
                complete(CallToolResult::text(format!(
                    "Received: {}",
                    Value::Object(args)
                )))
            },
        ))?;
    // Diagnostic tools of the 2026-07-28 `server-stateless` scenario.
    tools
        .register(fixed(
            "test_logging_tool",
            "Would log only when the request sets a log level; this endpoint never streams logs",
            CallToolResult::text("Logging tool completed"),
        ))?
        .register(ToolDef::new(
            "test_streaming_elicitation",
            "Asks for input through an input_required result, never a request on the stream",
            no_args(),
            |_, ctx| async move {
                match response(&ctx, "user_input") {
                    Some(_) => complete(CallToolResult::text("Elicitation answered")),
                    None => Ok(ask(
                        vec![(
                            "user_input",
                            elicitation("Please enter a value", "value", "string"),
                        )],
                        None,
                    )),
                }
            },
        ))?;
    Ok(tools)
}
