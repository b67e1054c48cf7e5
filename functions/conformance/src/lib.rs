//! Fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! registered on the production engine. Names and payloads are the ones each scenario's
//! description asks for; nothing here is reachable from the deployed `mcp` function.

mod state;

use std::sync::Arc;

use base64::Engine as _;
use mcp_protocol::{
    BoxFuture, CallToolResult, Completions, InputRequired, Outcome, Prompts, RegistryError,
    RequestContext, Resources, Server, ToolDef, ToolError, Tools,
};
use serde_json::{Map, Value, json};

pub use state::StateSigner;

/// A 1x1 PNG.
const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// Builds the fixture server.
///
/// # Errors
///
/// Fails only if a fixture definition is invalid.
pub fn fixture_server() -> Result<Server, RegistryError> {
    let signer = Arc::new(StateSigner::from_env());
    Ok(
        Server::builder("mcp-conformance-fixture", env!("CARGO_PKG_VERSION"))
            .tools(fixture_tools(&signer)?)
            .resources(Arc::new(FixtureResources))
            .prompts(Arc::new(FixturePrompts))
            .completions(Arc::new(FixtureCompletions))
            .logging(true)
            .build(),
    )
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn complete(result: CallToolResult) -> Result<Outcome<CallToolResult>, ToolError> {
    Ok(Outcome::Complete(result))
}

fn fixed(name: &str, description: &str, result: CallToolResult) -> ToolDef {
    ToolDef::new(name, description, no_args(), move |_, _| {
        let result = result.clone();
        async move { complete(result) }
    })
}

fn wav() -> String {
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

fn elicitation(message: &str, property: &str, kind: &str) -> Value {
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

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
            "maxTokens": max_tokens
        }
    })
}

fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// The client's answer to input request `key`, if it sent an object for it.
fn response<'a>(ctx: &'a RequestContext, key: &str) -> Option<&'a Map<String, Value>> {
    ctx.input_responses.as_ref()?.get(key)?.as_object()
}

fn ask(requests: Vec<(&str, Value)>, state: Option<String>) -> Outcome<CallToolResult> {
    Outcome::InputRequired(InputRequired {
        input_requests: requests
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        request_state: state,
    })
}

fn sampled_text(answer: &Map<String, Value>) -> String {
    answer
        .get("content")
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn elicited<'a>(answer: &'a Map<String, Value>, field: &str) -> &'a str {
    answer
        .get("content")
        .and_then(|c| c.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn fixture_tools(signer: &Arc<StateSigner>) -> Result<Tools, RegistryError> {
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
    register_input_required_tools(&mut tools, signer)?;
    Ok(tools)
}

/// SEP-2322 multi-round-trip fixtures (2026-07-28 `input-required-result-*` scenarios).
fn register_input_required_tools(
    tools: &mut Tools,
    signer: &Arc<StateSigner>,
) -> Result<(), RegistryError> {
    let user_name = || elicitation("What is your name?", "name", "string");
    tools
        .register(ToolDef::new(
            "test_input_required_result_elicitation",
            "Asks for the user's name, then greets them",
            no_args(),
            move |_, ctx| async move {
                match response(&ctx, "user_name") {
                    Some(answer) => complete(CallToolResult::text(format!(
                        "Hello, {}!",
                        elicited(answer, "name")
                    ))),
                    None => Ok(ask(vec![("user_name", user_name())], None)),
                }
            },
        ))?
        .register(ToolDef::new(
            "test_input_required_result_sampling",
            "Asks the client's model a question",
            no_args(),
            |_, ctx| async move {
                match response(&ctx, "capital_question") {
                    Some(answer) => complete(CallToolResult::text(format!(
                        "The model answered: {}",
                        sampled_text(answer)
                    ))),
                    None => Ok(ask(
                        vec![(
                            "capital_question",
                            sampling("What is the capital of France?", 100),
                        )],
                        None,
                    )),
                }
            },
        ))?
        .register(ToolDef::new(
            "test_input_required_result_list_roots",
            "Asks for the client's roots",
            no_args(),
            |_, ctx| async move {
                match response(&ctx, "client_roots") {
                    Some(answer) => {
                        let uris: Vec<&str> = answer
                            .get("roots")
                            .and_then(Value::as_array)
                            .map(|roots| {
                                roots
                                    .iter()
                                    .filter_map(|r| r.get("uri").and_then(Value::as_str))
                                    .collect()
                            })
                            .unwrap_or_default();
                        complete(CallToolResult::text(format!(
                            "Client roots: {}",
                            uris.join(", ")
                        )))
                    }
                    None => Ok(ask(vec![("client_roots", list_roots())], None)),
                }
            },
        ))?;

    tools.register(ToolDef::new(
        "test_input_required_result_capabilities",
        "Asks only for what the client declared it can answer",
        no_args(),
        |_, ctx| async move {
            let declared = |name: &str| {
                ctx.client_capabilities
                    .as_ref()
                    .and_then(|c| c.get(name))
                    .is_some()
            };
            let answered = ["question", "user_name", "client_roots"]
                .iter()
                .any(|k| response(&ctx, k).is_some());
            if answered {
                return complete(CallToolResult::text("Received the declared inputs"));
            }
            let mut requests = Vec::new();
            if declared("sampling") {
                requests.push(("question", sampling("What is the capital of France?", 100)));
            }
            if declared("elicitation") {
                requests.push((
                    "user_name",
                    elicitation("What is your name?", "name", "string"),
                ));
            }
            if declared("roots") {
                requests.push(("client_roots", list_roots()));
            }
            if requests.is_empty() {
                return complete(CallToolResult::text(
                    "The client declared no capability to ask with",
                ));
            }
            Ok(ask(requests, None))
        },
    ))?;

    let s = signer.clone();
    tools.register(ToolDef::new(
        "test_input_required_result_request_state",
        "Round-trips a signed requestState",
        no_args(),
        move |_, ctx| {
            let s = s.clone();
            async move {
                let tool = "test_input_required_result_request_state";
                match (response(&ctx, "confirm"), ctx.request_state.as_deref()) {
                    (Some(_), Some(state)) => {
                        s.verify(state, tool, 1)?;
                        complete(CallToolResult::text("state-ok: requestState verified"))
                    }
                    _ => Ok(ask(
                        vec![("confirm", elicitation("Please confirm", "ok", "boolean"))],
                        Some(s.sign(tool, 1)),
                    )),
                }
            }
        },
    ))?;

    let s = signer.clone();
    tools.register(ToolDef::new(
        "test_input_required_result_multiple_inputs",
        "Asks for several inputs at once",
        no_args(),
        move |_, ctx| {
            let s = s.clone();
            async move {
                let tool = "test_input_required_result_multiple_inputs";
                let keys = ["user_name", "greeting", "client_roots"];
                let all = keys.iter().all(|k| response(&ctx, k).is_some());
                match ctx.request_state.as_deref() {
                    Some(state) if all => {
                        s.verify(state, tool, 1)?;
                        complete(CallToolResult::text(
                            "Received all inputs: user_name, greeting, client_roots",
                        ))
                    }
                    _ => Ok(ask(
                        vec![
                            (
                                "user_name",
                                elicitation("What is your name?", "name", "string"),
                            ),
                            ("greeting", sampling("Generate a greeting", 50)),
                            ("client_roots", list_roots()),
                        ],
                        Some(s.sign(tool, 1)),
                    )),
                }
            }
        },
    ))?;

    let s = signer.clone();
    tools.register(ToolDef::new(
        "test_input_required_result_multi_round",
        "Asks for input over two rounds",
        no_args(),
        move |_, ctx| {
            let s = s.clone();
            async move {
                let tool = "test_input_required_result_multi_round";
                let step1 = || {
                    ask(
                        vec![(
                            "step1",
                            elicitation("Step 1: What is your name?", "name", "string"),
                        )],
                        Some(s.sign(tool, 1)),
                    )
                };
                let Some(state) = ctx.request_state.as_deref() else {
                    return Ok(step1());
                };
                match s.round(state, tool)? {
                    1 if response(&ctx, "step1").is_some() => Ok(ask(
                        vec![(
                            "step2",
                            elicitation("Step 2: What is your favorite color?", "color", "string"),
                        )],
                        Some(s.sign(tool, 2)),
                    )),
                    2 if response(&ctx, "step2").is_some() => {
                        complete(CallToolResult::text("Completed all rounds"))
                    }
                    _ => Ok(step1()),
                }
            }
        },
    ))?;

    let s = signer.clone();
    tools.register(ToolDef::new(
        "test_input_required_result_tampered_state",
        "Rejects a requestState that was altered",
        no_args(),
        move |_, ctx| {
            let s = s.clone();
            async move {
                let tool = "test_input_required_result_tampered_state";
                match ctx.request_state.as_deref() {
                    Some(state) => {
                        s.verify(state, tool, 1)?;
                        complete(CallToolResult::text("state verified"))
                    }
                    None => Ok(ask(
                        vec![("confirm", elicitation("Please confirm", "ok", "boolean"))],
                        Some(s.sign(tool, 1)),
                    )),
                }
            }
        },
    ))?;
    Ok(())
}

struct FixtureResources;

const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

impl Resources for FixtureResources {
    fn list(&self) -> Vec<Value> {
        vec![
            json!({
                "uri": "test://static-text",
                "name": "static-text",
                "description": "A static text resource",
                "mimeType": "text/plain"
            }),
            json!({
                "uri": "test://static-binary",
                "name": "static-binary",
                "description": "A static binary resource (PNG)",
                "mimeType": "image/png"
            }),
        ]
    }

    fn templates(&self) -> Vec<Value> {
        vec![json!({
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "Data for one id",
            "mimeType": "application/json"
        })]
    }

    fn read(
        &self,
        uri: String,
        _ctx: RequestContext,
    ) -> BoxFuture<Result<Option<Outcome<Vec<Value>>>, ToolError>> {
        let contents = match uri.as_str() {
            "test://static-text" => Some(json!({
                "uri": uri,
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource."
            })),
            "test://static-binary" => Some(json!({
                "uri": uri,
                "mimeType": "image/png",
                "blob": PNG_1X1
            })),
            _ => uri
                .strip_prefix(TEMPLATE_PREFIX)
                .and_then(|rest| rest.strip_suffix(TEMPLATE_SUFFIX))
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .map(|id| {
                    let text = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                    json!({ "uri": uri, "mimeType": "application/json", "text": text.to_string() })
                }),
        };
        Box::pin(async move { Ok(contents.map(|c| Outcome::Complete(vec![c]))) })
    }
}

struct FixturePrompts;

fn user(content: Value) -> Value {
    json!({ "role": "user", "content": content })
}

fn text(t: &str) -> Value {
    json!({ "type": "text", "text": t })
}

impl Prompts for FixturePrompts {
    fn list(&self) -> Vec<Value> {
        let arg = |name: &str, description: &str| json!({ "name": name, "description": description, "required": true });
        vec![
            json!({ "name": "test_simple_prompt", "description": "A prompt without arguments" }),
            json!({
                "name": "test_prompt_with_arguments",
                "description": "A prompt with two required arguments",
                "arguments": [arg("arg1", "First test argument"), arg("arg2", "Second test argument")]
            }),
            json!({
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt embedding a resource",
                "arguments": [arg("resourceUri", "URI of the resource to embed")]
            }),
            json!({ "name": "test_prompt_with_image", "description": "A prompt with an image" }),
            json!({
                "name": "test_input_required_result_prompt",
                "description": "A prompt that first asks the user for context"
            }),
        ]
    }

    fn get(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Option<Outcome<Value>>, ToolError> {
        let arg = |key: &str| -> Result<String, ToolError> {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ToolError::InvalidParams(format!("missing required argument {key:?}"))
                })
        };
        let messages = match name {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
            "test_prompt_with_arguments" => {
                let (a, b) = (arg("arg1")?, arg("arg2")?);
                vec![user(text(&format!(
                    "Prompt with arguments: arg1='{a}', arg2='{b}'"
                )))]
            }
            "test_prompt_with_embedded_resource" => vec![
                user(json!({
                    "type": "resource",
                    "resource": {
                        "uri": arg("resourceUri")?,
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."
                    }
                })),
                user(text("Please process the embedded resource above.")),
            ],
            "test_prompt_with_image" => vec![
                user(json!({ "type": "image", "data": PNG_1X1, "mimeType": "image/png" })),
                user(text("Please analyze the image above.")),
            ],
            "test_input_required_result_prompt" => match response(ctx, "user_context") {
                Some(answer) => vec![user(text(&format!(
                    "Use this context: {}",
                    elicited(answer, "context")
                )))],
                None => {
                    return Ok(Some(Outcome::InputRequired(InputRequired {
                        input_requests: [(
                            "user_context".to_owned(),
                            elicitation("What context should the prompt use?", "context", "string"),
                        )]
                        .into_iter()
                        .collect(),
                        request_state: None,
                    })));
                }
            },
            _ => return Ok(None),
        };
        Ok(Some(Outcome::Complete(json!({ "messages": messages }))))
    }
}

struct FixtureCompletions;

impl Completions for FixtureCompletions {
    fn complete(&self, reference: &Value, argument: &Value) -> Vec<String> {
        let prefix = argument.get("value").and_then(Value::as_str).unwrap_or("");
        let candidates: &[&str] = match reference.get("name").and_then(Value::as_str) {
            Some("test_prompt_with_arguments") => &["paris", "park", "party", "hello", "world"],
            _ => &[],
        };
        candidates
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| (*c).to_owned())
            .collect()
    }
}
