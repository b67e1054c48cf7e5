//! `resources/list`, `resources/templates/list` and `resources/read`, under the rules tool
//! calls follow: a caller sees and reads only what its scopes allow, a read runs by its
//! deadline, and contents over the response budget never leave.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::call::{TOOL_GRACE, body_error, capped_deadline, out_of_reach};
use super::dispatch::not_found;
use super::parse_params;
use super::{Answer, Server};
use crate::budget::{Budget, client_budget};
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::json::object;
use crate::method::Method;
use crate::result::{CallRecord, CallToolResult, ToolError, serialized_len};

/// The longest URI a read may name. Ours are far shorter; the bound keeps an unknown URI's
/// error (which echoes it, SEP-2164 `data.uri`) small.
const MAX_URI_BYTES: usize = 2048;

#[derive(Deserialize)]
struct ReadResourceParams {
    uri: String,
}

impl Server {
    /// The listings of the templates (or of the direct resources) the caller may read.
    pub(super) fn listed(&self, templates: bool, ctx: &RequestContext) -> Vec<&Value> {
        self.resources
            .iter()
            .filter(|r| r.is_template() == templates)
            .filter(|r| ctx.caller.has_scopes(r.required_scopes()))
            .map(|r| r.listing())
            .collect()
    }

    pub(super) async fn read_resource(
        &self,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Answer {
        let mut record = CallRecord::of_method(Method::ResourcesRead.as_str());
        let result = self.read_contents(params, ctx, &mut record).await;
        Answer::recorded(result, record)
    }

    async fn read_contents(
        &self,
        params: Map<String, Value>,
        mut ctx: RequestContext,
        record: &mut CallRecord,
    ) -> Result<Value, RpcError> {
        if self.resources.is_empty() {
            return Err(not_found(&Method::ResourcesRead));
        }
        let client = client_budget(&params)?;
        let ReadResourceParams { uri } = parse_params(params)?;
        if uri.len() > MAX_URI_BYTES {
            return Err(RpcError::InvalidParams(format!(
                "uri is {} bytes long; no resource here has a URI over {MAX_URI_BYTES} bytes",
                uri.len()
            )));
        }
        let found = self
            .resources
            .find(&uri)
            .filter(|(r, _)| ctx.caller.has_scopes(r.required_scopes()));
        let Some((resource, request)) = found else {
            // As for tools: the same answer for a resource out of reach and for one that
            // does not exist.
            return Err(out_of_reach(
                self.resources.all_scopes(),
                &ctx.caller,
                &uri,
                RpcError::ResourceNotFound { uri: uri.clone() },
            ));
        };
        // Counted after the scope check, as a tool call is: a refused read costs nothing.
        self.admit(&ctx, Method::ResourcesRead.as_str(), record)
            .await?;
        let started = Instant::now();
        let deadline = capped_deadline(&ctx, started + resource.max_duration());
        ctx.deadline = Some(deadline);
        let budget = Budget::of_call(self.response_budget, None, client);
        record.budget = Some(budget);
        let budget = budget.bytes;
        ctx.response_budget = budget;
        tracing::info!(resource.uri = %uri, resource.name = resource.name(), caller = ctx.caller.log_id(), "resource read");
        let read = resource.read(request, ctx);
        // A body that ignores its deadline is stopped as a tool would be (see TOOL_GRACE).
        let outcome = tokio::time::timeout_at((deadline + TOOL_GRACE).into(), read).await;
        let contents = match outcome {
            Err(_) => {
                return Err(deadline_exceeded(
                    "resource",
                    resource.name(),
                    deadline.saturating_duration_since(started),
                ));
            }
            // SEP-2164: never an empty `contents` for a missing resource.
            Ok(Ok(Some(contents))) if !contents.is_empty() => contents,
            Ok(Ok(_)) => return Err(RpcError::ResourceNotFound { uri }),
            Ok(Err(ToolError::Detailed(result))) => return Err(detailed(*result)),
            Ok(Err(e)) => return Err(body_error(e, "resources/read", &uri)),
        };
        let result = object([("contents", contents.into())]);
        within_budget(result, budget, "resource", resource.name())
    }
}

/// A read body's failure with detail (its deadline, the database): -32603 with the
/// detail in `data`.
pub(super) fn detailed(result: CallToolResult) -> RpcError {
    let message = result.first_text().unwrap_or("The read failed.").to_owned();
    let data = result
        .into_structured_content()
        .unwrap_or_else(|| json!({}));
    RpcError::Failed { message, data }
}

/// The error for a read whose body ran past its deadline: `kind` is what was read
/// (`resource`, `prompt`, `completion`), `name` which.
pub(super) fn deadline_exceeded(kind: &str, name: &str, budget: Duration) -> RpcError {
    tracing::warn!(
        read.kind = kind,
        read.name = name,
        deadline.phase = "read",
        "read ran past its deadline; its output is discarded"
    );
    let guidance = match kind {
        "resource" => {
            "Retry; if it keeps happening, read a narrower resource or use a tool with filters."
        }
        _ => "Retry; if it keeps happening, use the tools directly, with filters.",
    };
    let mut data = json!({
        "code": "deadline_exceeded",
        "phase": "read",
        "budget_ms": budget.as_millis() as u64,
        "retryable": true,
        "guidance": guidance,
    });
    data[kind] = json!(name);
    RpcError::Failed {
        message: format!(
            "Reading the {kind} {name} did not finish within its time budget and was stopped. {guidance}"
        ),
        data,
    }
}

/// The response budget holds for every read as for tool results: an answer over it never
/// reaches the client; an error says how big it was.
pub(super) fn within_budget(
    result: Value,
    budget: usize,
    kind: &str,
    name: &str,
) -> Result<Value, RpcError> {
    let bytes = serialized_len(&result);
    if bytes <= budget {
        return Ok(result);
    }
    tracing::warn!(
        read.kind = kind,
        read.name = name,
        response_bytes = bytes,
        budget_bytes = budget,
        "read over the response budget"
    );
    let mut data = json!({
        "code": "mcp_response_over_budget",
        "response_bytes": bytes,
        "budget_bytes": budget,
        "estimated_tokens": bytes / 4,
    });
    data[kind] = json!(name);
    Err(RpcError::Failed {
        message: format!(
            "The {kind} {name} is {bytes} bytes, over this server's budget of {budget} bytes, so it was not returned. Use the tools, which page and filter."
        ),
        data,
    })
}
