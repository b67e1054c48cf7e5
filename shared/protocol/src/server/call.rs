//! The `tools/call` pipeline: find the tool the caller may call, check the client can host
//! it, settle its arguments (owner, schema), run it by its deadline, check what it returned
//! (output schema, response budget) and keep a record of it all for the log line.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Answer, Server, parse_params};
use crate::admission::Admit;
use crate::budget::{Budget, client_budget};
use crate::context::{Caller, RequestContext};
use crate::error::RpcError;
use crate::registry::{Owner, Tool};
use crate::result::{CallRecord, CallToolResult, InputRequired, Outcome, ToolError};
use crate::text::{LOGGED_NAME_BYTES, elided};
use crate::version::ProtocolVersion;

#[derive(Deserialize)]
struct CallToolParams {
    name: String,
    arguments: Option<Map<String, Value>>,
}

impl Server {
    pub(super) async fn call_tool(
        &self,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Answer {
        let client = match client_budget(&params) {
            Ok(client) => client,
            Err(e) => return Err(e).into(),
        };
        let p: CallToolParams = match parse_params(params) {
            Ok(p) => p,
            Err(e) => return Err(e).into(),
        };
        let mut record = CallRecord {
            tool: p.name.clone(),
            known_tool: self.tools.get(&p.name).is_some(),
            ..CallRecord::default()
        };
        let result = self.run_tool(p, ctx, client, &mut record).await;
        record.is_error = match &result {
            Ok(value) => value.get("isError") == Some(&Value::Bool(true)),
            Err(_) => true,
        };
        Answer {
            result,
            call: Some(record),
        }
    }

    async fn run_tool(
        &self,
        p: CallToolParams,
        mut ctx: RequestContext,
        client: Option<Budget>,
        record: &mut CallRecord,
    ) -> Result<Value, RpcError> {
        let tool = self.permitted(&p.name, &ctx)?;
        self.admit(&ctx, tool.name(), record).await?;
        // Every result this call can have is held to its budget, refusals included: their
        // text repeats what the client sent.
        let budget = Budget::of_call(self.response_budget, tool.response_budget(), client);
        record.budget = Some(budget);
        let budget = budget.bytes;
        if let Some(required) = missing_capabilities(tool.required_client_capabilities(), &ctx) {
            if ctx.version.is_stateless() {
                return Err(RpcError::MissingClientCapability { required });
            }
            // The handshake era never tells a stateless server what the client supports,
            // so a tool that needs a client capability cannot run there.
            let refusal = CallToolResult::error(format!(
                "Tool {} needs client capabilities ({}) that a stateless server can only use with protocol version 2026-07-28",
                p.name,
                tool.required_client_capabilities().join(", ")
            ));
            return Ok(sent(refusal, budget, &p.name, record));
        }
        // A missing `arguments` is `{}` (it is optional in CallToolRequestParams).
        let args = match settle_arguments(tool, p.arguments.unwrap_or_default(), &ctx) {
            Ok(args) => args,
            Err(refusal) => {
                return Ok(sent(
                    CallToolResult::error(refusal),
                    budget,
                    &p.name,
                    record,
                ));
            }
        };
        let version = ctx.version;
        // The tool's own cap bounds the call even when the invocation has longer left.
        ctx.deadline = Some(capped_deadline(&ctx, Instant::now() + tool.max_duration()));
        ctx.response_budget = budget;
        tracing::info!(tool.name = %p.name, caller = ctx.caller.log_id(), "tool call");
        match run_by_deadline(tool, args, ctx).await {
            Ok(Outcome::Complete(result)) => {
                record.stats = result.stats.clone();
                if self.check_outputs && !result.is_error && !tool.output_conforms(&result) {
                    // "Servers MUST provide structured results that conform to this schema":
                    // a non-conforming result is our bug, never the client's problem.
                    tracing::error!(tool.name = %p.name, "structured result does not match the tool's output schema");
                    return Err(RpcError::Internal);
                }
                Ok(sent(result, budget, &p.name, record))
            }
            Ok(Outcome::InputRequired(ir)) => input_required(ir, version),
            Err(ToolError::Execution(message)) => Ok(sent(
                CallToolResult::error(message),
                budget,
                &p.name,
                record,
            )),
            Err(ToolError::Detailed(result)) => {
                record.stats = result.stats.clone();
                Ok(sent(*result, budget, &p.name, record))
            }
            Err(e) => Err(body_error(e, "tools/call", &p.name)),
        }
    }

    /// Counts a request that reads against the caller's limits, under `key` (a tool's name,
    /// or the method of another read).
    pub(super) async fn admit(
        &self,
        ctx: &RequestContext,
        key: &str,
        record: &mut CallRecord,
    ) -> Result<(), RpcError> {
        let Some(admission) = &self.admission else {
            return Ok(());
        };
        match admission.admit(&ctx.caller, key).await {
            Admit::Allowed => Ok(()),
            Admit::Unchecked => {
                record.rate_limit_unchecked = true;
                Ok(())
            }
            Admit::Limited {
                limit,
                max,
                window,
                retry_after,
            } => {
                record.rate_limited = true;
                Err(rate_limited(key, limit, max, window, retry_after, ctx))
            }
        }
    }

    /// The tool named `name` if the caller may call it.
    fn permitted(&self, name: &str, ctx: &RequestContext) -> Result<&Tool, RpcError> {
        let all_scopes = self.tools.all_scopes();
        if let Some(tool) = self
            .tools
            .get(name)
            .filter(|t| ctx.caller.has_scopes(t.required_scopes()))
        {
            return Ok(tool);
        }
        // 2025-11-25 tools §Error Handling lists "Unknown tools" among protocol errors.
        Err(out_of_reach(
            all_scopes,
            &ctx.caller,
            name,
            RpcError::InvalidParams(format!("Unknown tool: {name}")),
        ))
    }
}

/// The answer for a tool, resource, prompt or template the caller cannot reach: the same
/// whether it exists or not, so the error is no oracle for hidden names. A caller who may
/// not reach everything gets the challenge naming every scope in `all`, enough to step up
/// to any of them (2025-11-25 authorization §Runtime Insufficient Scope Errors); one who may
/// reach everything gets `missing`.
pub(super) fn out_of_reach(
    all: &[String],
    caller: &Caller,
    name: &str,
    missing: RpcError,
) -> RpcError {
    if caller.has_scopes(all) {
        return missing;
    }
    tracing::info!(target.name = %elided(name, LOGGED_NAME_BYTES), caller = caller.log_id(), "refused: insufficient scope");
    RpcError::InsufficientScope {
        scopes: all.to_vec(),
    }
}

/// The invocation's deadline, or `cap` (a body's own bound) if that comes first.
pub(super) fn capped_deadline(ctx: &RequestContext, cap: Instant) -> Instant {
    ctx.deadline.map_or(cap, |d| d.min(cap))
}

/// The refusal of a request over a limit (`key`: the tool's name, or the method of another
/// read): when to retry, in whole seconds for `Retry-After` (at least one) and in
/// milliseconds as the rate-limit SEP's draft has it (`data.retryAfterMs`, beside the
/// `limit` and the `remaining` calls), and which counter, in words and in `data`.
fn rate_limited(
    key: &str,
    counter: &'static str,
    max: u64,
    window: Duration,
    retry_after: Duration,
    ctx: &RequestContext,
) -> RpcError {
    let secs = retry_after.as_secs_f64().ceil().max(1.0) as u64;
    let window_secs = window.as_secs();
    tracing::info!(
        rate_limit.key = key,
        caller = ctx.caller.log_id(),
        rate_limit.counter = counter,
        "request refused: rate limited"
    );
    let per = match counter {
        "tool" if key.contains('/') => format!("{key} requests by you"),
        "tool" => format!("calls of {key} by you"),
        "tenant" => "reads by your tenant".to_owned(),
        _ => "reads by you (tool calls, resource reads, prompts, completions)".to_owned(),
    };
    let mut data = json!({
        "code": "rate_limited",
        "counter": counter,
        "limit": max,
        "remaining": 0,
        "window_secs": window_secs,
        // Rounded up, as the seconds are: a client that waits this long never comes back
        // before the window ends.
        "retryAfterMs": retry_after.as_nanos().div_ceil(1_000_000).max(1) as u64,
        "retry_after_secs": secs,
    });
    data[if key.contains('/') { "method" } else { "tool" }] = json!(key);
    RpcError::RateLimited {
        message: format!("at most {max} {per} per {window_secs} s; retry after {secs} s"),
        retry_after_secs: secs,
        data,
    }
}

/// How long past its deadline a body may take to report the deadline itself. A body that
/// honours the deadline says more than the engine can (the database layer names the phase,
/// and after a client-side cancel waits up to 250 ms for the server to confirm it); the
/// engine stops only bodies that do not. Well inside the margin the transport keeps back
/// from the invocation's own deadline (`DEADLINE_MARGIN_MS`, 500 by default).
pub(super) const TOOL_GRACE: Duration = Duration::from_millis(300);

/// Runs the tool body, racing it against the call's deadline. Database reads honour the
/// deadline themselves, but a body that does not (a slow computation, an awaited call with
/// no timeout) must not hold the invocation past it: once the deadline and [`TOOL_GRACE`]
/// have passed its future is dropped, whatever it would have returned is discarded, and
/// the caller gets `deadline_exceeded` with phase `tool`, logged once, here.
async fn run_by_deadline(
    tool: &Tool,
    args: Map<String, Value>,
    ctx: RequestContext,
) -> Result<Outcome<CallToolResult>, ToolError> {
    let Some(deadline) = ctx.deadline else {
        return tool.call(args, ctx).await;
    };
    let budget = deadline.saturating_duration_since(Instant::now());
    let stop = deadline + TOOL_GRACE;
    match tokio::time::timeout_at(stop.into(), tool.call(args, ctx)).await {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::warn!(
                tool.name = tool.name(),
                deadline.phase = "tool",
                budget_ms = budget.as_millis() as u64,
                "tool call ran past its deadline; its output is discarded"
            );
            Err(ToolError::Detailed(Box::new(
                CallToolResult::deadline_exceeded(
                    tool.name(),
                    "tool",
                    budget,
                    &format!(
                        "{} did not finish within its time budget of {} ms and was stopped.",
                        tool.name(),
                        budget.as_millis()
                    ),
                    "Ask for less (a narrower time window, more filters, a lower limit), or retry.",
                ),
            )))
        }
    }
}

/// The arguments a tool runs with: its owner argument filled in or checked against the
/// caller, then validated against its input schema. A refusal is the text of an `isError`
/// result.
fn settle_arguments(
    tool: &Tool,
    mut args: Map<String, Value>,
    ctx: &RequestContext,
) -> Result<Map<String, Value>, String> {
    if let Some((name, owner)) = tool.owner_argument() {
        let own = match owner {
            Owner::Subject => ctx.caller.subject.as_deref(),
            Owner::Tenant => ctx.caller.tenant.as_deref(),
        };
        match (args.get(name), own) {
            (None, Some(own)) => {
                args.insert(name.to_owned(), Value::from(own));
            }
            (Some(Value::String(given)), Some(own)) if given == own => {}
            _ => {
                tracing::info!(tool.name = %tool.name(), caller = ctx.caller.log_id(), "tool call refused: not the owner");
                return Err(format!(
                    "Not permitted: {name} must be your own; omit it to use yours"
                ));
            }
        }
    }
    // Input validation failures are tool execution errors the model can correct
    // (2025-11-25 changelog, SEP-1303), not protocol errors.
    let args = Value::Object(args);
    if let Err(errors) = tool.validate_arguments(&args) {
        return Err(format!(
            "Invalid arguments for tool {}: {}",
            tool.name(),
            errors.join("; ")
        ));
    }
    match args {
        Value::Object(args) => Ok(args),
        _ => Ok(Map::new()),
    }
}

/// Shapes an `input_required` outcome. Only 2026-07-28 has a way to carry it.
pub(super) fn input_required(
    ir: InputRequired,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    if !version.is_stateless() {
        return Ok(to_value(CallToolResult::error(
            "This operation needs input from the client, which a stateless server can only request with protocol version 2026-07-28",
        )));
    }
    let mut result = json!({
        "resultType": "input_required",
        "inputRequests": ir.input_requests,
    });
    if let Some(state) = ir.request_state {
        result["requestState"] = json!(state);
    }
    Ok(result)
}

/// The capabilities among `required` that the request's client did not declare, as a
/// `ClientCapabilities`-shaped object (`{"sampling": {}}`), or `None` if all are present.
fn missing_capabilities(required: &[String], ctx: &RequestContext) -> Option<Value> {
    if required.is_empty() {
        return None;
    }
    let declared = ctx.client_capabilities.as_ref().and_then(Value::as_object);
    let missing: Map<String, Value> = required
        .iter()
        .filter(|c| !declared.is_some_and(|d| d.contains_key(c.as_str())))
        .map(|c| (c.clone(), json!({})))
        .collect();
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// What is sent for a body's `result`, within `budget`, noted in `record`: whether it was
/// over the budget, and whether it is a mirrored result whose `structuredContent` the reply
/// writes from its text block.
fn sent(result: CallToolResult, budget: usize, tool: &str, record: &mut CallRecord) -> Value {
    let mirrored = result.mirrors_structured_content();
    let (value, over) = within_budget(result, budget, tool);
    record.over_budget = over;
    record.structured_mirrored = mirrored && !over;
    value
}

/// Enforces the response budget at the dispatch boundary, whatever the tool: a result
/// whose serialised form is over `budget` never reaches the client; a small `isError`
/// result in its place says how big it was and how to ask for less. Measured without
/// serialising again what the result's constructor serialised for its text mirror.
fn within_budget(result: CallToolResult, budget: usize, tool: &str) -> (Value, bool) {
    let bytes = result.wire_len();
    if bytes <= budget {
        return (to_value(result), false);
    }
    over_budget(bytes, budget, tool)
}

fn over_budget(bytes: usize, budget: usize, tool: &str) -> (Value, bool) {
    tracing::warn!(
        tool.name = tool,
        response_bytes = bytes,
        budget_bytes = budget,
        "tool result over the response budget"
    );
    let detail = json!({
        "code": "mcp_response_over_budget",
        "tool": tool,
        "response_bytes": bytes,
        "budget_bytes": budget,
        // About four bytes per token for JSON and English text.
        "estimated_tokens": bytes / 4,
        "guidance": "Ask for less: narrow the time window, add filters, lower the limit, or leave out raw payloads."
    });
    let text = format!(
        "The result of {tool} was {bytes} bytes (about {} tokens), over this server's budget of {budget} bytes, so it was not returned. Narrow the time window, add filters, lower the limit, or leave out raw payloads.",
        bytes / 4
    );
    (
        to_value(CallToolResult::structured_error(text, detail)),
        true,
    )
}

/// The protocol error for a body's failure. Internal failures are logged once, here, with
/// their whole chain; the client only learns "Internal error".
pub(super) fn body_error(err: ToolError, what: &str, name: &str) -> RpcError {
    match err {
        ToolError::InvalidParams(message) | ToolError::Execution(message) => {
            RpcError::InvalidParams(message)
        }
        ToolError::Detailed(result) => RpcError::InvalidParams(
            result
                .first_text()
                .unwrap_or("the request failed")
                .to_owned(),
        ),
        ToolError::Internal(source) => {
            tracing::error!(rpc.method = what, target = name, error = %ErrorChain(&*source), "request body failed");
            RpcError::Internal
        }
    }
}

struct ErrorChain<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

fn to_value(result: CallToolResult) -> Value {
    result.into_wire()
}
