//! `prompts/list`, `prompts/get` and `completion/complete`, under the rules tool calls
//! follow: a caller sees, gets and completes only what its scopes allow, each request that
//! reads counts against the rate limits, runs by its deadline, and its answer stays within
//! the response budget.

use std::time::Instant;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::call::{TOOL_GRACE, body_error, capped_deadline, input_required, out_of_reach};
use super::dispatch::not_found;
use super::read::{deadline_exceeded, detailed, within_budget};
use super::{Answer, Server, parse_params};
use crate::budget::{Budget, client_budget};
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::method::Method;
use crate::prompts::{Completer, CompletionRequest, Prompt, PromptArguments};
use crate::result::{CallRecord, Outcome, ToolError};

/// completion/complete: "values ... Must not exceed 100 items".
const MAX_COMPLETION_VALUES: usize = 100;

/// The longest argument value a prompt or a completion takes. Ours are identifiers and
/// windows; the bound keeps the echo in an error, and the work of a prefix search, small.
const MAX_ARGUMENT_BYTES: usize = 1024;

#[derive(Deserialize)]
struct GetPromptParams {
    name: String,
    arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Reference {
    #[serde(rename = "ref/prompt")]
    Prompt { name: String },
    #[serde(rename = "ref/resource")]
    Resource { uri: String },
}

#[derive(Deserialize)]
struct CompleteArgument {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct CompleteContext {
    arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: Reference,
    argument: CompleteArgument,
    context: Option<CompleteContext>,
}

impl Server {
    /// The prompts the caller may get, as `prompts/list` shows them.
    pub(super) fn listed_prompts(&self, ctx: &RequestContext) -> Vec<&Value> {
        self.prompts
            .iter()
            .filter(|p| ctx.caller.has_scopes(p.required_scopes()))
            .map(Prompt::listing)
            .collect()
    }

    pub(super) async fn get_prompt(
        &self,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Answer {
        let mut record = CallRecord::of_method(Method::PromptsGet.as_str());
        let result = self.render_prompt(params, ctx, &mut record).await;
        Answer::recorded(result, record)
    }

    async fn render_prompt(
        &self,
        params: Map<String, Value>,
        mut ctx: RequestContext,
        record: &mut CallRecord,
    ) -> Result<Value, RpcError> {
        if self.prompts.is_empty() {
            return Err(not_found(&Method::PromptsGet));
        }
        let client = client_budget(&params)?;
        let p: GetPromptParams = parse_params(params)?;
        let prompt = self.permitted_prompt(&p.name, &ctx)?;
        let arguments = prompt_arguments(prompt, p.arguments.unwrap_or_default())?;
        self.admit(&ctx, Method::PromptsGet.as_str(), record)
            .await?;
        let budget = Budget::of_call(self.response_budget, None, client);
        record.budget = Some(budget);
        let started = Instant::now();
        let deadline = capped_deadline(&ctx, started + prompt.max_duration());
        ctx.deadline = Some(deadline);
        ctx.response_budget = budget.bytes;
        let version = ctx.version;
        tracing::info!(
            prompt.name = prompt.name(),
            caller = ctx.caller.log_id(),
            "prompt get"
        );
        let rendered = prompt.render(arguments, ctx);
        let outcome = tokio::time::timeout_at((deadline + TOOL_GRACE).into(), rendered).await;
        match outcome {
            Err(_) => Err(deadline_exceeded(
                "prompt",
                prompt.name(),
                deadline.saturating_duration_since(started),
            )),
            Ok(Ok(Outcome::Complete(result))) => {
                within_budget(result, budget.bytes, "prompt", prompt.name())
            }
            Ok(Ok(Outcome::InputRequired(ir))) => input_required(ir, version),
            Ok(Err(ToolError::Detailed(result))) => Err(detailed(*result)),
            Ok(Err(e)) => Err(body_error(e, "prompts/get", prompt.name())),
        }
    }

    /// The prompt named `name` if the caller may get it; otherwise the same answer whether
    /// it exists or not, as for tools (no oracle for hidden names).
    fn permitted_prompt(&self, name: &str, ctx: &RequestContext) -> Result<&Prompt, RpcError> {
        if let Some(prompt) = self
            .prompts
            .get(name)
            .filter(|p| ctx.caller.has_scopes(p.required_scopes()))
        {
            return Ok(prompt);
        }
        // 2025-11-25 prompts §Error Handling: "Invalid prompt name: -32602".
        Err(out_of_reach(
            self.prompts.all_scopes(),
            &ctx.caller,
            name,
            RpcError::InvalidParams(format!("Unknown prompt: {name}")),
        ))
    }

    pub(super) async fn complete(&self, params: Map<String, Value>, ctx: RequestContext) -> Answer {
        let mut record = CallRecord::of_method(Method::Complete.as_str());
        let result = self.run_completion(params, ctx, &mut record).await;
        Answer::recorded(result, record)
    }

    async fn run_completion(
        &self,
        params: Map<String, Value>,
        mut ctx: RequestContext,
        record: &mut CallRecord,
    ) -> Result<Value, RpcError> {
        if !self.offered().completions {
            return Err(not_found(&Method::Complete));
        }
        let client = client_budget(&params)?;
        let p: CompleteParams = parse_params(params)?;
        let value = p.argument.value;
        if value.len() > MAX_ARGUMENT_BYTES {
            return Err(RpcError::InvalidParams(format!(
                "argument.value is {} bytes long; at most {MAX_ARGUMENT_BYTES} bytes are completed",
                value.len()
            )));
        }
        let context = match p.context.and_then(|c| c.arguments) {
            Some(arguments) => strings(arguments, "context.arguments")?,
            None => PromptArguments::new(),
        };
        let (completer, max_duration, what) =
            self.completer(&p.reference, &p.argument.name, &ctx)?;
        // 2025-11-25 completion: a server with nothing to suggest answers an empty list.
        let Some(completer) = completer else {
            return Ok(completion(Vec::new(), false));
        };
        self.admit(&ctx, Method::Complete.as_str(), record).await?;
        let budget = Budget::of_call(self.response_budget, None, client);
        record.budget = Some(budget);
        let started = Instant::now();
        let deadline = capped_deadline(&ctx, started + max_duration);
        ctx.deadline = Some(deadline);
        ctx.response_budget = budget.bytes;
        let request = CompletionRequest { value, context };
        let outcome = tokio::time::timeout_at(
            (deadline + TOOL_GRACE).into(),
            completer.complete(request, ctx),
        )
        .await;
        match outcome {
            Err(_) => Err(deadline_exceeded(
                "completion",
                &what,
                deadline.saturating_duration_since(started),
            )),
            Ok(Ok(mut found)) => {
                let more = found.has_more || found.values.len() > MAX_COMPLETION_VALUES;
                found.values.truncate(MAX_COMPLETION_VALUES);
                within_budget(
                    completion(found.values, more),
                    budget.bytes,
                    "completion",
                    &what,
                )
            }
            Ok(Err(ToolError::Detailed(result))) => Err(detailed(*result)),
            Ok(Err(e)) => Err(body_error(e, "completion/complete", &what)),
        }
    }

    /// The completer of `argument` of the prompt or template `reference` names (`None`
    /// when it has none), how long it may run, and what logs call it.
    fn completer(
        &self,
        reference: &Reference,
        argument: &str,
        ctx: &RequestContext,
    ) -> Result<(Option<&Completer>, std::time::Duration, String), RpcError> {
        match reference {
            Reference::Prompt { name } => {
                let prompt = self.permitted_prompt(name, ctx)?;
                let Some(arg) = prompt.argument(argument) else {
                    return Err(RpcError::InvalidParams(format!(
                        "prompt {name} has no argument {argument:?}"
                    )));
                };
                Ok((
                    arg.completer(),
                    prompt.max_duration(),
                    format!("{name}.{argument}"),
                ))
            }
            Reference::Resource { uri } => {
                let template = self
                    .resources
                    .template(uri)
                    .filter(|r| ctx.caller.has_scopes(r.required_scopes()));
                let Some(template) = template else {
                    return Err(out_of_reach(
                        self.resources.all_scopes(),
                        &ctx.caller,
                        uri,
                        RpcError::InvalidParams(format!(
                            "no resource template is {uri:?}; ref/resource names a template as resources/templates/list gives it"
                        )),
                    ));
                };
                if !template.has_variable(argument) {
                    return Err(RpcError::InvalidParams(format!(
                        "resource template {uri} has no variable {argument:?}"
                    )));
                }
                let what = format!("{}.{argument}", template.name());
                Ok((template.completer(argument), template.max_duration(), what))
            }
        }
    }
}

fn completion(values: Vec<String>, has_more: bool) -> Value {
    let mut body = json!({ "values": values, "hasMore": has_more });
    if !has_more {
        // Exact only when every match is listed.
        body["total"] = json!(values.len());
    }
    json!({ "completion": body })
}

/// A prompt's arguments, checked against its definition: strings only (the spec's type),
/// no argument it does not define, every required one present.
fn prompt_arguments(
    prompt: &Prompt,
    sent: Map<String, Value>,
) -> Result<PromptArguments, RpcError> {
    let arguments = strings(sent, "arguments")?;
    if let Some(unknown) = arguments.keys().find(|k| prompt.argument(k).is_none()) {
        let known: Vec<&str> = prompt.arguments().iter().map(|a| a.name()).collect();
        return Err(RpcError::InvalidParams(format!(
            "prompt {} has no argument {unknown:?} (its arguments: {})",
            prompt.name(),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    }
    // 2025-11-25 prompts §Error Handling: "Missing required arguments: -32602".
    if let Some(missing) = prompt
        .arguments()
        .iter()
        .find(|a| a.is_required() && !arguments.contains_key(a.name()))
    {
        return Err(RpcError::InvalidParams(format!(
            "prompt {} needs argument {:?}",
            prompt.name(),
            missing.name()
        )));
    }
    Ok(arguments)
}

/// A map of string values, each within [`MAX_ARGUMENT_BYTES`].
fn strings(sent: Map<String, Value>, field: &str) -> Result<PromptArguments, RpcError> {
    sent.into_iter()
        .map(|(name, value)| match value {
            Value::String(s) if s.len() <= MAX_ARGUMENT_BYTES => Ok((name, s)),
            Value::String(s) => Err(RpcError::InvalidParams(format!(
                "{field}.{name} is {} bytes long; at most {MAX_ARGUMENT_BYTES}",
                s.len()
            ))),
            _ => Err(RpcError::InvalidParams(format!(
                "{field}.{name} must be a string"
            ))),
        })
        .collect()
}
