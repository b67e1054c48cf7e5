//! The methods both eras share, and the handshake era's own (`initialize`, `ping`,
//! `logging/setLevel`). Each method's parameters are deserialised here, after routing: the
//! second step of the two-step parse.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Answer, Incoming, Server, parse_params};
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::json::object;
use crate::method::Method;
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
            Method::ResourcesRead => return self.read_resource(params, ctx).await,
            Method::PromptsList if !self.prompts.is_empty() => {
                Ok(json!({ "prompts": self.listed_prompts(&ctx) }))
            }
            Method::PromptsGet => return self.get_prompt(params, ctx).await,
            Method::Complete => return self.complete(params, ctx).await,
            _ => Err(not_found(method)),
        };
        result.into()
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
        if !self.prompts.is_empty() {
            caps["prompts"] = json!({});
        }
        if self.offered().completions {
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
struct SetLevelParams {
    // Read only to refuse a request without it (-32602).
    #[allow(dead_code)]
    level: String,
}
