//! SEP-2322 multi-round-trip fixtures: tools that ask the client for input and resume.

use std::sync::Arc;

use mcp_protocol::{CallToolResult, RegistryError, ToolDef, Tools};
use serde_json::Value;

use crate::ask::{ask, elicitation, elicited, list_roots, response, sampled_text, sampling};
use crate::fixture::{complete, no_args};
use crate::state::StateSigner;

/// SEP-2322 multi-round-trip fixtures (2026-07-28 `input-required-result-*` scenarios).
pub(crate) fn register_input_required_tools(
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
