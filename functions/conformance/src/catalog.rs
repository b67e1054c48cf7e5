//! The conformance suite's resources, prompts and completions.

use mcp_protocol::{
    Completions, InputRequired, Outcome, Prompts, RequestContext, ResourceDef, ResourceError,
    Resources, ToolError,
};
use serde_json::{Map, Value, json};

use crate::ask::{elicitation, elicited, response};

use crate::fixture::PNG_1X1;

/// The suite's resources: two static ones and a template.
pub(crate) fn fixture_resources() -> Result<Resources, ResourceError> {
    let mut resources = Resources::new();
    resources
        .register(
            ResourceDef::direct("test://static-text", "static-text", |request, _| async move {
                Ok(Some(vec![json!({
                    "uri": request.uri,
                    "mimeType": "text/plain",
                    "text": "This is the content of the static text resource."
                })]))
            })
            .description("A static text resource")
            .mime_type("text/plain"),
        )?
        .register(
            ResourceDef::direct("test://static-binary", "static-binary", |request, _| async move {
                Ok(Some(vec![json!({ "uri": request.uri, "mimeType": "image/png", "blob": PNG_1X1 })]))
            })
            .description("A static binary resource (PNG)")
            .mime_type("image/png"),
        )?
        .register(
            ResourceDef::template("test://template/{id}/data", "template-data", |request, _| async move {
                let id = request.var("id").unwrap_or_default();
                let text = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                Ok(Some(vec![json!({ "uri": request.uri, "mimeType": "application/json", "text": text.to_string() })]))
            })
            .description("Data for one id")
            .mime_type("application/json"),
        )?;
    Ok(resources)
}

pub(crate) struct FixturePrompts;

pub(crate) fn user(content: Value) -> Value {
    json!({ "role": "user", "content": content })
}

pub(crate) fn text(t: &str) -> Value {
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

pub(crate) struct FixtureCompletions;

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
