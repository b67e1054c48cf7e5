//! The methods both eras share, and the handshake era's own (`initialize`, `ping`,
//! `logging/setLevel`). Each method's parameters are deserialised here, after routing: the
//! second step of the two-step parse.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::call::{body_error, input_required};
use super::{Answer, Incoming, Server, parse_params};
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::json::object;
use crate::method::Method;
use crate::result::Outcome;
use crate::version::ProtocolVersion;

impl Server {
    pub(super) async fn dispatch_handshake(
        &self,
        method: Method,
        params: Map<String, Value>,
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
        in_batch: bool,
    ) -> Answer {
        match method {
            // 2025-03-26 basic §Batching: "The initialize request MUST NOT be part of a
            // JSON-RPC batch".
            Method::Initialize if in_batch => Err(RpcError::InvalidRequest(
                "initialize must not be part of a JSON-RPC batch".into(),
            ))
            .into(),
            Method::Initialize => self.initialize(params).into(),
            Method::Ping => Ok(json!({})).into(),
            // Accepted and forgotten: a stateless endpoint has no stream to log on.
            Method::SetLevel => parse_params::<SetLevelParams>(params)
                .map(|_| json!({}))
                .into(),
            _ => {
                self.dispatch_common(&method, params, self.context(version, incoming))
                    .await
            }
        }
    }

    /// Methods both eras share. The caller has checked that this server serves `method`.
    pub(super) async fn dispatch_common(
        &self,
        method: &Method,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Answer {
        if method.is_list()
            && let Err(e) = no_cursor(&params)
        {
            return Err(e).into();
        }
        let result = match method {
            Method::ToolsCall => return self.call_tool(params, ctx).await,
            Method::ToolsList => {
                // Only what the caller may call (2026-07-28 tools: the list "MAY vary by
                // the authorization presented on the request").
                let tools: Vec<Value> = self
                    .tools
                    .iter()
                    .filter(|t| ctx.caller.has_scopes(t.required_scopes()))
                    .map(|t| t.listing().clone())
                    .collect();
                Ok(object([("tools", Value::Array(tools))]))
            }
            // Like tools, only what the caller may read is listed.
            Method::ResourcesList => Ok(json!({ "resources": self.listed(false, &ctx) })),
            Method::ResourceTemplatesList => {
                Ok(json!({ "resourceTemplates": self.listed(true, &ctx) }))
            }
            Method::ResourcesRead => self.read_resource(params, ctx).await,
            Method::PromptsList => match &self.prompts {
                Some(prompts) => Ok(json!({ "prompts": prompts.list() })),
                None => Err(not_found(method)),
            },
            Method::PromptsGet => self.get_prompt(params, &ctx),
            Method::Complete => self.complete(params),
            _ => Err(not_found(method)),
        };
        result.into()
    }

    fn get_prompt(
        &self,
        params: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Value, RpcError> {
        let Some(prompts) = &self.prompts else {
            return Err(not_found(&Method::PromptsGet));
        };
        let p: GetPromptParams = parse_params(params)?;
        let arguments = p.arguments.unwrap_or_default();
        match prompts.get(&p.name, &arguments, ctx) {
            Ok(Some(Outcome::Complete(result))) => Ok(result),
            Ok(Some(Outcome::InputRequired(ir))) => input_required(ir, ctx.version),
            Ok(None) => Err(RpcError::InvalidParams(format!(
                "Unknown prompt: {}",
                p.name
            ))),
            Err(e) => Err(body_error(e, "prompts/get", &p.name)),
        }
    }

    fn complete(&self, params: Map<String, Value>) -> Result<Value, RpcError> {
        let Some(completions) = &self.completions else {
            return Err(not_found(&Method::Complete));
        };
        let p: CompleteParams = parse_params(params)?;
        let mut values = completions.complete(&p.reference, &p.argument);
        // completion/complete: "values ... Must not exceed 100 items".
        let total = values.len();
        values.truncate(100);
        Ok(json!({
            "completion": { "values": values, "total": total, "hasMore": total > 100 }
        }))
    }

    pub(super) fn initialize(&self, params: Map<String, Value>) -> Result<Value, RpcError> {
        let p: InitializeParams = parse_params(params)?;
        // lifecycle §Version Negotiation: mirror a supported version, otherwise answer the
        // latest we support. 2026-07-28 has no handshake, so asking for it in `initialize`
        // gets the newest handshake revision.
        let negotiated = match ProtocolVersion::parse(&p.protocol_version) {
            Some(v) if !v.is_stateless() => v,
            _ => ProtocolVersion::LATEST_HANDSHAKE,
        };
        let mut result = json!({
            "protocolVersion": negotiated.as_str(),
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        });
        if let Some(text) = &self.info.instructions {
            result["instructions"] = json!(text);
        }
        Ok(result)
    }

    /// Capabilities we can honour statelessly: never `listChanged` or `subscribe`, which
    /// need a stream we do not keep.
    pub(super) fn capabilities(&self) -> Value {
        let mut caps = json!({ "tools": {} });
        if !self.resources.is_empty() {
            caps["resources"] = json!({});
        }
        if self.prompts.is_some() {
            caps["prompts"] = json!({});
        }
        if self.completions.is_some() {
            caps["completions"] = json!({});
        }
        if self.logging {
            caps["logging"] = json!({});
        }
        caps
    }

    pub(super) fn server_info(&self) -> Value {
        let mut info = json!({ "name": self.info.name, "version": self.info.version });
        if let Some(title) = &self.info.title {
            info["title"] = json!(title);
        }
        info
    }
}

pub(super) fn not_found(method: &Method) -> RpcError {
    RpcError::MethodNotFound(method.as_str().to_owned())
}

/// We serve every list in one page, so any cursor is one we never issued
/// (utilities/pagination: "Invalid cursors SHOULD result in an error with code -32602").
fn no_cursor(params: &Map<String, Value>) -> Result<(), RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(RpcError::InvalidParams("unknown or expired cursor".into())),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams {
    // `capabilities` and `clientInfo` are not read: a stateless server must not depend on
    // client capabilities in the handshake era (lifecycle §Operation), and unknown fields
    // (Inspector's `capabilities.extensions`) are ignored.
    protocol_version: String,
}

#[derive(Deserialize)]
struct GetPromptParams {
    name: String,
    arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: Value,
    argument: Value,
}

#[derive(Deserialize)]
struct SetLevelParams {
    // Read only to refuse a request without it (-32602).
    #[allow(dead_code)]
    level: String,
}
