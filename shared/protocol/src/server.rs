//! The dispatch engine: one HTTP POST body in, one reply (status + JSON body) out.
//!
//! The engine decides everything the MCP revisions decide (era, version checks, `_meta`,
//! `Mcp-Method`/`Mcp-Name` consistency, batching, method routing, result decoration) and
//! nothing about HTTP itself: routing by path, Origin, Accept and body limits live in the
//! function crate.

use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::context::{CallSlot, Caller, RequestContext};
use crate::error::RpcError;
use crate::jsonrpc::{self, BodyError, EnvelopeError, Message, RequestId};
use crate::registry::{Completions, Owner, Prompts, Resources, Tools};
use crate::result::{ByteCounter, CallRecord, CallToolResult, InputRequired, Outcome, ToolError};
use crate::version::{ProtocolVersion, supported_versions};

/// Keys of the 2026-07-28 per-request and per-response `_meta` fields.
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
}

/// The most messages one 2025-03-26 batch may carry. The spec sets no bound; an
/// unbounded batch would turn one invocation into unbounded work.
pub const MAX_BATCH_LEN: usize = 16;

pub use crate::context::DEFAULT_RESPONSE_BUDGET;

/// A transport header as the HTTP layer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeaderField<'a> {
    #[default]
    Absent,
    One(&'a str),
    /// Sent more than once, or not valid visible ASCII/UTF-8: never trustworthy.
    Invalid,
}

/// One HTTP POST, reduced to what the protocol needs.
#[derive(Debug, Clone)]
pub struct Incoming<'a> {
    pub body: &'a [u8],
    pub protocol_version: HeaderField<'a>,
    pub mcp_method: HeaderField<'a>,
    pub mcp_name: HeaderField<'a>,
    pub deadline: Option<Instant>,
    pub caller: Arc<Caller>,
}

impl<'a> Incoming<'a> {
    /// A body with no transport headers and an anonymous caller.
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            body,
            protocol_version: HeaderField::Absent,
            mcp_method: HeaderField::Absent,
            mcp_name: HeaderField::Absent,
            deadline: None,
            caller: Arc::new(Caller::default()),
        }
    }
}

/// What to send back: an HTTP status and a JSON body, or no body (202 Accepted).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    /// The revision the reply was produced under.
    pub version: ProtocolVersion,
    /// The JSON-RPC method, when one was read (for logs).
    pub method: Option<String>,
    /// Set when the call was refused for missing scopes: the scopes to name in the
    /// `insufficient_scope` challenge.
    pub insufficient_scope: Option<Vec<String>>,
    /// What the request's `tools/call` did, if it made one (for logs and metrics).
    pub call: Option<CallRecord>,
}

/// The server's identity (`serverInfo` / `Implementation`).
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
}

/// Caching hints on cacheable 2026-07-28 results (server/utilities/caching).
#[derive(Debug, Clone, Copy)]
pub struct CacheHints {
    pub ttl_ms: u64,
    /// `private` whenever the answer may depend on the caller's token.
    pub private: bool,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            ttl_ms: 60_000,
            private: true,
        }
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    server: Server,
}

impl ServerBuilder {
    pub fn tools(mut self, tools: Tools) -> Self {
        self.server.tools = tools;
        self
    }

    pub fn resources(mut self, resources: Arc<dyn Resources>) -> Self {
        self.server.resources = Some(resources);
        self
    }

    pub fn prompts(mut self, prompts: Arc<dyn Prompts>) -> Self {
        self.server.prompts = Some(prompts);
        self
    }

    pub fn completions(mut self, completions: Arc<dyn Completions>) -> Self {
        self.server.completions = Some(completions);
        self
    }

    /// Advertises `logging` and accepts `logging/setLevel` in the handshake era. A
    /// stateless server can accept a level but has no stream to log on, so production
    /// leaves this off.
    pub fn logging(mut self, on: bool) -> Self {
        self.server.logging = on;
        self
    }

    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.server.info.instructions = Some(text.into());
        self
    }

    pub fn title(mut self, text: impl Into<String>) -> Self {
        self.server.info.title = Some(text.into());
        self
    }

    /// The largest serialised `tools/call` result, in bytes (default [`DEFAULT_RESPONSE_BUDGET`]).
    pub fn response_budget(mut self, bytes: usize) -> Self {
        self.server.response_budget = bytes;
        self
    }

    pub fn cache_hints(mut self, cache: CacheHints) -> Self {
        self.server.cache = cache;
        self
    }

    pub fn build(self) -> Server {
        self.server
    }
}

/// The MCP engine. Immutable once built; shared across invocations of a warm sandbox.
pub struct Server {
    info: ServerInfo,
    tools: Tools,
    resources: Option<Arc<dyn Resources>>,
    prompts: Option<Arc<dyn Prompts>>,
    completions: Option<Arc<dyn Completions>>,
    logging: bool,
    cache: CacheHints,
    response_budget: usize,
}

impl Server {
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            server: Server {
                info: ServerInfo {
                    name: name.into(),
                    version: version.into(),
                    title: None,
                    instructions: None,
                },
                tools: Tools::new(),
                resources: None,
                prompts: None,
                completions: None,
                logging: false,
                cache: CacheHints::default(),
                response_budget: DEFAULT_RESPONSE_BUDGET,
            },
        }
    }

    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// Answers one HTTP POST body.
    pub async fn handle(&self, incoming: Incoming<'_>) -> Reply {
        let slot = CallSlot::default();
        let mut reply = self.answer(&incoming, &slot).await;
        reply.call = slot.take();
        reply
    }

    async fn answer(&self, incoming: &Incoming<'_>, slot: &CallSlot) -> Reply {
        let assumed = ProtocolVersion::ASSUMED_WITHOUT_HEADER;
        let reply = |status, body, version, method| Reply {
            status,
            body,
            version,
            method,
            insufficient_scope: None,
            call: None,
        };
        let error_reply = |err: RpcError, id: Option<&RequestId>, version, method| {
            let body = jsonrpc::failure(id, &err.to_object(version));
            reply(err.http_status(version), Some(body), version, method)
        };

        // Invalid UTF-8 and invalid JSON are both parse errors: serde_json checks both.
        let value = match jsonrpc::parse_body(incoming.body) {
            Ok(value) => value,
            Err(BodyError::Syntax) => return error_reply(RpcError::Parse, None, assumed, None),
            Err(BodyError::DuplicateKey) => {
                let err = RpcError::InvalidRequest(
                    "an object repeats a member name; send each name once".into(),
                );
                return error_reply(err, None, assumed, None);
            }
        };
        let readable_id = match &value {
            Value::Object(obj) => obj.get("id").and_then(RequestId::from_value),
            _ => None,
        };
        let method_name = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);

        let version = match incoming.protocol_version {
            HeaderField::Absent => assumed,
            HeaderField::One(raw) => match ProtocolVersion::parse(raw.trim()) {
                Some(v) => v,
                None => {
                    // "If the server receives a request with an invalid or unsupported
                    // MCP-Protocol-Version, it MUST respond with 400 Bad Request"
                    // (2025-06-18 transports); 2026-07-28 names the error body.
                    let err = RpcError::UnsupportedProtocolVersion {
                        requested: raw.trim().to_owned(),
                    };
                    return error_reply(err, readable_id.as_ref(), assumed, method_name);
                }
            },
            HeaderField::Invalid => {
                let err = RpcError::UnsupportedProtocolVersion {
                    requested: String::new(),
                };
                return error_reply(err, readable_id.as_ref(), assumed, method_name);
            }
        };

        if let Value::Array(items) = &value {
            return self.handle_batch(items, version, incoming, slot).await;
        }

        match self
            .handle_message(&value, version, incoming, slot, false)
            .await
        {
            Handled::Accepted => reply(202, None, version, method_name),
            Handled::Answer {
                status,
                body,
                challenge,
            } => Reply {
                insufficient_scope: challenge,
                ..reply(status, Some(body), version, method_name)
            },
        }
    }

    async fn handle_batch(
        &self,
        items: &[Value],
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
        slot: &CallSlot,
    ) -> Reply {
        let reject = |msg: String| {
            let err = RpcError::InvalidRequest(msg);
            Reply {
                status: err.http_status(version),
                body: Some(jsonrpc::failure(None, &err.to_object(version))),
                version,
                method: None,
                insufficient_scope: None,
                call: None,
            }
        };
        if !version.allows_batches() {
            return reject(format!(
                "JSON-RPC batches are not part of protocol version {version}; send one message per POST"
            ));
        }
        if items.is_empty() {
            return reject("an empty batch is not a valid request".into());
        }
        if items.len() > MAX_BATCH_LEN {
            return reject(format!(
                "a batch may hold at most {MAX_BATCH_LEN} messages, this one holds {}",
                items.len()
            ));
        }
        // One bounded tool call per invocation: the deadline and response budget are sized
        // for one call, so a batch that asks for several is refused before any runs.
        let calls = items
            .iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"))
            .count();
        if calls > 1 {
            return reject(format!(
                "a batch may contain at most one tools/call, this one contains {calls}"
            ));
        }
        let mut responses = Vec::new();
        for item in items {
            if let Handled::Answer { body, .. } = self
                .handle_message(item, version, incoming, slot, true)
                .await
            {
                responses.push(body);
            }
        }
        if responses.is_empty() {
            return Reply {
                status: 202,
                body: None,
                version,
                method: None,
                insufficient_scope: None,
                call: None,
            };
        }
        Reply {
            status: 200,
            body: Some(Value::Array(responses)),
            version,
            method: None,
            insufficient_scope: None,
            call: None,
        }
    }

    async fn handle_message(
        &self,
        value: &Value,
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
        slot: &CallSlot,
        in_batch: bool,
    ) -> Handled {
        let message = match jsonrpc::parse_envelope(value) {
            Ok(m) => m,
            Err(EnvelopeError { id, reason }) => {
                return Handled::error(
                    RpcError::InvalidRequest(reason.into()),
                    id.as_ref(),
                    version,
                );
            }
        };
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            // "If the input is a JSON-RPC response or notification: If the server accepts
            // the input, the server MUST return HTTP status code 202 Accepted with no body"
            // (transports §Sending Messages). A stateless server has nothing to correlate a
            // response with, and cancellation has nothing to cancel; both are accepted and
            // forgotten.
            Message::Notification { .. } => return Handled::Accepted,
            Message::Response if version.is_stateless() => {
                let err = RpcError::InvalidRequest(
                    "clients must not send JSON-RPC responses in protocol version 2026-07-28"
                        .into(),
                );
                return Handled::error(err, None, version);
            }
            Message::Response => return Handled::Accepted,
        };
        let params = match params {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => {
                let err = RpcError::InvalidParams("params must be a JSON object".into());
                return Handled::error(err, Some(&id), version);
            }
        };
        let result = if version.is_stateless() {
            self.dispatch_stateless(&method, params, incoming, slot)
                .await
        } else {
            self.dispatch_handshake(&method, params, version, incoming, slot, in_batch)
                .await
        };
        match result {
            Ok(result) => Handled::Answer {
                status: 200,
                body: jsonrpc::success(&id, result),
                challenge: None,
            },
            Err(err) => Handled::error(err, Some(&id), version),
        }
    }

    async fn dispatch_handshake(
        &self,
        method: &str,
        params: Map<String, Value>,
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
        slot: &CallSlot,
        in_batch: bool,
    ) -> Result<Value, RpcError> {
        let ctx = || RequestContext {
            version,
            deadline: incoming.deadline,
            caller: incoming.caller.clone(),
            client_capabilities: None,
            input_responses: None,
            request_state: None,
            response_budget: self.response_budget,
            record: slot.clone(),
        };
        match method {
            // 2025-03-26 basic §Batching: "The initialize request MUST NOT be part of a
            // JSON-RPC batch".
            "initialize" if in_batch => Err(RpcError::InvalidRequest(
                "initialize must not be part of a JSON-RPC batch".into(),
            )),
            "initialize" => self.initialize(params),
            "ping" => Ok(json!({})),
            "logging/setLevel" if self.logging => {
                let p: SetLevelParams = parse_params(params)?;
                // Accepted and forgotten: a stateless endpoint has no stream to log on.
                let _ = p.level;
                Ok(json!({}))
            }
            _ => self.dispatch_common(method, params, ctx()).await,
        }
    }

    async fn dispatch_stateless(
        &self,
        method: &str,
        params: Map<String, Value>,
        incoming: &Incoming<'_>,
        slot: &CallSlot,
    ) -> Result<Value, RpcError> {
        let version = ProtocolVersion::V2026_07_28;
        if !self.serves_stateless(method) {
            // 2026-07-28 streamable-http: an unimplemented method "MUST respond with 404 Not
            // Found and a JSON-RPC error with code -32601". This covers the removed
            // `initialize` (when sent as a 2026-07-28 request), `ping`, `logging/setLevel`
            // and `resources/(un)subscribe`.
            return Err(RpcError::MethodNotFound(method.to_owned()));
        }
        check_standard_headers(method, &params, incoming)?;
        let client_capabilities = check_request_meta(&params)?;
        let input_responses = params.get("inputResponses").cloned();
        if input_responses.as_ref().is_some_and(|v| !v.is_object()) {
            return Err(RpcError::InvalidParams(
                "inputResponses must be an object keyed by input request name".into(),
            ));
        }
        let request_state = match params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(RpcError::InvalidParams(
                    "requestState must be a string".into(),
                ));
            }
        };
        let ctx = RequestContext {
            version,
            deadline: incoming.deadline,
            caller: incoming.caller.clone(),
            client_capabilities: Some(client_capabilities),
            input_responses,
            request_state,
            response_budget: self.response_budget,
            record: slot.clone(),
        };
        let cacheable = matches!(
            method,
            "server/discover"
                | "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
        );
        let mut result = match method {
            "server/discover" => self.discover(),
            _ => self.dispatch_common(method, params, ctx).await?,
        };
        self.decorate_stateless(&mut result, cacheable);
        Ok(result)
    }

    /// Methods a 2026-07-28 request may name, given what this server advertises.
    fn serves_stateless(&self, method: &str) -> bool {
        match method {
            "server/discover" | "tools/list" | "tools/call" => true,
            "resources/list" | "resources/templates/list" | "resources/read" => {
                self.resources.is_some()
            }
            "prompts/list" | "prompts/get" => self.prompts.is_some(),
            "completion/complete" => self.completions.is_some(),
            _ => false,
        }
    }

    /// Methods both eras share.
    async fn dispatch_common(
        &self,
        method: &str,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Result<Value, RpcError> {
        let not_found = || Err(RpcError::MethodNotFound(method.to_owned()));
        match method {
            "tools/list" => {
                no_cursor(&params)?;
                // Only what the caller may call (2026-07-28 tools: the list "MAY vary by the
                // authorization presented on the request").
                let tools: Vec<&Value> = self
                    .tools
                    .iter()
                    .filter(|t| ctx.caller.has_scopes(t.required_scopes()))
                    .map(|t| t.listing())
                    .collect();
                Ok(json!({ "tools": tools }))
            }
            "tools/call" => self.call_tool(params, ctx).await,
            "resources/list" | "resources/templates/list" | "resources/read" => {
                let Some(resources) = &self.resources else {
                    return not_found();
                };
                match method {
                    "resources/list" => {
                        no_cursor(&params)?;
                        Ok(json!({ "resources": resources.list() }))
                    }
                    "resources/templates/list" => {
                        no_cursor(&params)?;
                        Ok(json!({ "resourceTemplates": resources.templates() }))
                    }
                    _ => {
                        let p: ReadResourceParams = parse_params(params)?;
                        let uri = p.uri;
                        let version = ctx.version;
                        tracing::info!(resource.uri = %uri, caller = ctx.caller.subject_hash.as_deref().unwrap_or("-"), "resource read");
                        match resources.read(uri.clone(), ctx).await {
                            Ok(Some(Outcome::Complete(contents))) if !contents.is_empty() => {
                                Ok(json!({ "contents": contents }))
                            }
                            // SEP-2164: never an empty `contents` for a missing resource.
                            Ok(Some(Outcome::Complete(_)) | None) => {
                                Err(RpcError::ResourceNotFound { uri })
                            }
                            Ok(Some(Outcome::InputRequired(ir))) => {
                                self.input_required(ir, &version)
                            }
                            Err(e) => Err(body_error(e, "resources/read", &uri)),
                        }
                    }
                }
            }
            "prompts/list" | "prompts/get" => {
                let Some(prompts) = &self.prompts else {
                    return not_found();
                };
                if method == "prompts/list" {
                    no_cursor(&params)?;
                    return Ok(json!({ "prompts": prompts.list() }));
                }
                let p: GetPromptParams = parse_params(params)?;
                let arguments = p.arguments.unwrap_or_default();
                match prompts.get(&p.name, &arguments, &ctx) {
                    Ok(Some(Outcome::Complete(result))) => Ok(result),
                    Ok(Some(Outcome::InputRequired(ir))) => self.input_required(ir, &ctx.version),
                    Ok(None) => Err(RpcError::InvalidParams(format!(
                        "Unknown prompt: {}",
                        p.name
                    ))),
                    Err(e) => Err(body_error(e, "prompts/get", &p.name)),
                }
            }
            "completion/complete" => {
                let Some(completions) = &self.completions else {
                    return not_found();
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
            _ => not_found(),
        }
    }

    async fn call_tool(
        &self,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> Result<Value, RpcError> {
        let p: CallToolParams = parse_params(params)?;
        let slot = ctx.record.clone();
        let mut record = CallRecord {
            tool: p.name.clone(),
            known_tool: self.tools.get(&p.name).is_some(),
            ..CallRecord::default()
        };
        let result = self.run_tool(p, ctx, &mut record).await;
        record.is_error = match &result {
            Ok(value) => value.get("isError") == Some(&Value::Bool(true)),
            Err(_) => true,
        };
        slot.set(record);
        result
    }

    async fn run_tool(
        &self,
        p: CallToolParams,
        mut ctx: RequestContext,
        record: &mut CallRecord,
    ) -> Result<Value, RpcError> {
        let all_scopes = self.tools.all_scopes();
        let permitted = self
            .tools
            .get(&p.name)
            .filter(|t| ctx.caller.has_scopes(t.required_scopes()));
        let Some(tool) = permitted else {
            // A caller who may not see every tool gets the same answer for a tool that
            // exists but is out of reach and for one that does not exist, so the error is
            // no oracle for hidden tool names. The challenge names every scope the server
            // defines: enough to step up to any tool.
            if !ctx.caller.has_scopes(all_scopes) {
                tracing::info!(tool.name = %p.name, caller = ctx.caller.subject_hash.as_deref().unwrap_or("-"), "tool call refused: insufficient scope");
                return Err(RpcError::InsufficientScope {
                    scopes: all_scopes.to_vec(),
                });
            }
            // 2025-11-25 tools §Error Handling lists "Unknown tools" among protocol errors.
            return Err(RpcError::InvalidParams(format!("Unknown tool: {}", p.name)));
        };
        if let Some(required) = missing_capabilities(tool.required_client_capabilities(), &ctx) {
            if ctx.version.is_stateless() {
                return Err(RpcError::MissingClientCapability { required });
            }
            // The handshake era never tells a stateless server what the client supports,
            // so a tool that needs a client capability cannot run there.
            return Ok(to_value(CallToolResult::error(format!(
                "Tool {} needs client capabilities ({}) that a stateless server can only use with protocol version 2026-07-28",
                p.name,
                tool.required_client_capabilities().join(", ")
            ))));
        }
        // A missing `arguments` is `{}` (it is optional in CallToolRequestParams).
        let mut args = p.arguments.unwrap_or_default();
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
                    tracing::info!(tool.name = %p.name, caller = ctx.caller.subject_hash.as_deref().unwrap_or("-"), "tool call refused: not the owner");
                    return Ok(to_value(CallToolResult::error(format!(
                        "Not permitted: {name} must be your own; omit it to use yours"
                    ))));
                }
            }
        }
        // Input validation failures are tool execution errors the model can correct
        // (2025-11-25 changelog, SEP-1303), not protocol errors.
        if let Err(errors) = tool.validate_arguments(&Value::Object(args.clone())) {
            return Ok(to_value(CallToolResult::error(format!(
                "Invalid arguments for tool {}: {}",
                p.name,
                errors.join("; ")
            ))));
        }
        let version = ctx.version;
        // The tool's own cap bounds the call even when the invocation has longer left.
        let cap = Instant::now() + tool.max_duration();
        ctx.deadline = Some(ctx.deadline.map_or(cap, |d| d.min(cap)));
        let budget = tool.response_budget().unwrap_or(self.response_budget);
        ctx.response_budget = budget;
        tracing::info!(tool.name = %p.name, caller = ctx.caller.subject_hash.as_deref().unwrap_or("-"), "tool call");
        match tool.call(args, ctx).await {
            Ok(Outcome::Complete(result)) => {
                record.stats = result.stats.clone();
                if !result.is_error && !tool.output_conforms(result.structured_content.as_ref()) {
                    // "Servers MUST provide structured results that conform to this schema":
                    // a non-conforming result is our bug, never the client's problem.
                    tracing::error!(tool.name = %p.name, "structured result does not match the tool's output schema");
                    return Err(RpcError::Internal);
                }
                let value = to_value(result);
                let (value, over) = within_budget(value, budget, &p.name);
                record.over_budget = over;
                Ok(value)
            }
            Ok(Outcome::InputRequired(ir)) => self.input_required(ir, &version),
            Err(ToolError::Execution(message)) => Ok(to_value(CallToolResult::error(message))),
            Err(ToolError::Detailed(result)) => {
                record.stats = result.stats.clone();
                Ok(to_value(*result))
            }
            Err(e) => Err(body_error(e, "tools/call", &p.name)),
        }
    }

    /// Shapes an `input_required` outcome. Only 2026-07-28 has a way to carry it.
    fn input_required(
        &self,
        ir: InputRequired,
        version: &ProtocolVersion,
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

    fn initialize(&self, params: Map<String, Value>) -> Result<Value, RpcError> {
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

    fn discover(&self) -> Value {
        let mut result = json!({
            "supportedVersions": supported_versions(),
            "capabilities": self.capabilities(),
        });
        if let Some(text) = &self.info.instructions {
            result["instructions"] = json!(text);
        }
        result
    }

    /// Capabilities we can honour statelessly: never `listChanged` or `subscribe`, which
    /// need a stream we do not keep.
    fn capabilities(&self) -> Value {
        let mut caps = json!({ "tools": {} });
        if self.resources.is_some() {
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

    fn server_info(&self) -> Value {
        let mut info = json!({ "name": self.info.name, "version": self.info.version });
        if let Some(title) = &self.info.title {
            info["title"] = json!(title);
        }
        info
    }

    /// Adds what 2026-07-28 requires on results: `resultType` on every result, the server's
    /// identity in `_meta`, and caching hints on cacheable ones.
    fn decorate_stateless(&self, result: &mut Value, cacheable: bool) {
        let Value::Object(obj) = result else { return };
        obj.entry("resultType").or_insert_with(|| json!("complete"));
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(meta::SERVER_INFO.into(), self.server_info());
        }
        if cacheable {
            obj.insert("ttlMs".into(), json!(self.cache.ttl_ms));
            let scope = if self.cache.private {
                "private"
            } else {
                "public"
            };
            obj.insert("cacheScope".into(), json!(scope));
        }
    }
}

enum Handled {
    Accepted,
    Answer {
        status: u16,
        body: Value,
        challenge: Option<Vec<String>>,
    },
}

impl Handled {
    fn error(err: RpcError, id: Option<&RequestId>, version: ProtocolVersion) -> Self {
        let challenge = match &err {
            RpcError::InsufficientScope { scopes } => Some(scopes.clone()),
            _ => None,
        };
        Self::Answer {
            status: err.http_status(version),
            body: jsonrpc::failure(id, &err.to_object(version)),
            challenge,
        }
    }
}

/// 2026-07-28 streamable-http §Server Validation: the `Mcp-Method` header is required and
/// must equal the body's method; `Mcp-Name` must equal `params.name` (tools/call,
/// prompts/get) or `params.uri` (resources/read). Values are compared after trimming
/// optional whitespace (RFC 9110 §5.5) and decoding the `=?base64?...?=` form.
fn check_standard_headers(
    method: &str,
    params: &Map<String, Value>,
    incoming: &Incoming<'_>,
) -> Result<(), RpcError> {
    match incoming.mcp_method {
        HeaderField::One(v) if v.trim() == method => {}
        HeaderField::One(v) => {
            return Err(RpcError::HeaderMismatch(format!(
                "Mcp-Method header {:?} does not match the body method {method:?}",
                v.trim()
            )));
        }
        HeaderField::Absent => {
            return Err(RpcError::HeaderMismatch(
                "the Mcp-Method header is required".into(),
            ));
        }
        HeaderField::Invalid => {
            return Err(RpcError::HeaderMismatch(
                "the Mcp-Method header must appear once, as visible ASCII".into(),
            ));
        }
    }
    let body_name = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        _ => None,
    };
    let Some(body_name) = body_name else {
        return Ok(());
    };
    match incoming.mcp_name {
        HeaderField::One(v) => match decode_header_value(v.trim()) {
            Some(decoded) if decoded == body_name => Ok(()),
            Some(_) => Err(RpcError::HeaderMismatch(
                "the Mcp-Name header does not match the name in the body".into(),
            )),
            None => Err(RpcError::HeaderMismatch(
                "the Mcp-Name header has an invalid =?base64?...?= value".into(),
            )),
        },
        HeaderField::Absent => Err(RpcError::HeaderMismatch(format!(
            "the Mcp-Name header is required for {method}"
        ))),
        HeaderField::Invalid => Err(RpcError::HeaderMismatch(
            "the Mcp-Name header must appear once, as visible ASCII".into(),
        )),
    }
}

/// Decodes the `=?base64?<standard base64 of UTF-8>?=` sentinel; other values are literal.
fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        None => Some(value.to_owned()),
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
    }
}

/// 2026-07-28 basic §_meta: every request carries `_meta` with `protocolVersion` (which
/// must equal the header, checked by the caller's version) and `clientCapabilities`;
/// `clientInfo` is only a SHOULD and is not required. Unknown `_meta` keys are ignored.
fn check_request_meta(params: &Map<String, Value>) -> Result<Value, RpcError> {
    let Some(Value::Object(meta)) = params.get("_meta") else {
        return Err(RpcError::InvalidMeta(
            "the request must carry _meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities".into(),
        ));
    };
    match meta.get(meta::PROTOCOL_VERSION) {
        Some(Value::String(v)) if v == ProtocolVersion::V2026_07_28.as_str() => {}
        Some(Value::String(v)) => {
            return Err(RpcError::HeaderMismatch(format!(
                "the MCP-Protocol-Version header (2026-07-28) does not match _meta protocolVersion {v:?}"
            )));
        }
        _ => {
            return Err(RpcError::InvalidMeta(format!(
                "_meta[\"{}\"] must be a string",
                meta::PROTOCOL_VERSION
            )));
        }
    }
    match meta.get(meta::CLIENT_CAPABILITIES) {
        Some(caps @ Value::Object(_)) => Ok(caps.clone()),
        _ => Err(RpcError::InvalidMeta(format!(
            "_meta[\"{}\"] must be an object",
            meta::CLIENT_CAPABILITIES
        ))),
    }
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

/// Enforces the response budget at the dispatch boundary, whatever the tool: a result
/// whose serialised form is over `budget` never reaches the client; a small `isError`
/// result in its place says how big it was and how to ask for less.
fn within_budget(value: Value, budget: usize, tool: &str) -> (Value, bool) {
    // Measured without building the bytes: the transport serialises the reply once.
    let mut counter = ByteCounter::default();
    let bytes = match serde_json::to_writer(&mut counter, &value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    };
    if bytes <= budget {
        return (value, false);
    }
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

/// We serve every list in one page, so any cursor is one we never issued
/// (utilities/pagination: "Invalid cursors SHOULD result in an error with code -32602").
fn no_cursor(params: &Map<String, Value>) -> Result<(), RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(RpcError::InvalidParams("unknown or expired cursor".into())),
    }
}

fn body_error(err: ToolError, what: &str, name: &str) -> RpcError {
    match err {
        ToolError::InvalidParams(message) | ToolError::Execution(message) => {
            RpcError::InvalidParams(message)
        }
        ToolError::Detailed(result) => RpcError::InvalidParams(
            result
                .content
                .first()
                .and_then(|block| block.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("the request failed")
                .to_owned(),
        ),
        ToolError::Internal(source) => {
            // Logged once, here, with the whole chain; the client only learns "Internal error".
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
    Value::from(result)
}

/// Step two of parsing: a method's own parameters.
fn parse_params<T: for<'de> Deserialize<'de>>(params: Map<String, Value>) -> Result<T, RpcError> {
    serde_json::from_value(Value::Object(params))
        .map_err(|e| RpcError::InvalidParams(e.to_string()))
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
struct CallToolParams {
    name: String,
    arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ReadResourceParams {
    uri: String,
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
    level: String,
}
