//! The conformance suite's resources, prompts and completions.

use mcp_protocol::{
    ArgumentDef, Completer, InputRequired, Outcome, PromptArguments, PromptDef, PromptError,
    PromptResult, Prompts, RequestContext, ResourceDef, ResourceError, Resources,
};
use serde_json::{Value, json};

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

pub(crate) fn user(content: Value) -> Value {
    json!({ "role": "user", "content": content })
}

pub(crate) fn text(t: &str) -> Value {
    json!({ "type": "text", "text": t })
}

/// The suite's prompts; the two arguments of `test_prompt_with_arguments` complete from a
/// fixed list.
pub(crate) fn fixture_prompts() -> Result<Prompts, PromptError> {
    let words = || Completer::from_list(&["paris", "park", "party", "hello", "world"]);
    let mut prompts = Prompts::new();
    prompts
        .register(PromptDef::new(
            "test_simple_prompt",
            "A prompt without arguments",
            |_, _| async { done(vec![user(text("This is a simple prompt for testing."))]) },
        ))?
        .register(
            PromptDef::new(
                "test_prompt_with_arguments",
                "A prompt with two required arguments",
                |args: PromptArguments, _| async move {
                    // Both are required: the engine refused the request without them.
                    let arg = |name| args.get(name).map_or("", String::as_str);
                    let (a, b) = (arg("arg1"), arg("arg2"));
                    done(vec![user(text(&format!(
                        "Prompt with arguments: arg1='{a}', arg2='{b}'"
                    )))])
                },
            )
            .argument(ArgumentDef::required("arg1", "First test argument").complete_with(words()))
            .argument(ArgumentDef::required("arg2", "Second test argument").complete_with(words())),
        )?
        .register(
            PromptDef::new(
                "test_prompt_with_embedded_resource",
                "A prompt embedding a resource",
                |args: PromptArguments, _| async move {
                    done(vec![
                        user(json!({
                            "type": "resource",
                            "resource": {
                                "uri": args.get("resourceUri"),
                                "mimeType": "text/plain",
                                "text": "Embedded resource content for testing."
                            }
                        })),
                        user(text("Please process the embedded resource above.")),
                    ])
                },
            )
            .argument(ArgumentDef::required(
                "resourceUri",
                "URI of the resource to embed",
            )),
        )?
        .register(PromptDef::new(
            "test_prompt_with_image",
            "A prompt with an image",
            |_, _| async {
                done(vec![
                    user(json!({ "type": "image", "data": PNG_1X1, "mimeType": "image/png" })),
                    user(text("Please analyze the image above.")),
                ])
            },
        ))?
        .register(PromptDef::new(
            "test_input_required_result_prompt",
            "A prompt that first asks the user for context",
            |_, ctx: RequestContext| async move {
                match response(&ctx, "user_context") {
                    Some(answer) => done(vec![user(text(&format!(
                        "Use this context: {}",
                        elicited(answer, "context")
                    )))]),
                    None => Ok(Outcome::InputRequired(InputRequired {
                        input_requests: [(
                            "user_context".to_owned(),
                            elicitation("What context should the prompt use?", "context", "string"),
                        )]
                        .into_iter()
                        .collect(),
                        request_state: None,
                    })),
                }
            },
        ))?;
    Ok(prompts)
}

fn done(messages: Vec<Value>) -> PromptResult {
    Ok(Outcome::Complete(json!({ "messages": messages })))
}
