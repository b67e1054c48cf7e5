//! The dispatch engine: one HTTP POST body in, one reply (status + JSON body) out.
//!
//! The engine decides everything the MCP revisions decide (era, version checks, `_meta`,
//! `Mcp-Method`/`Mcp-Name` consistency, batching, method routing, result decoration) and
//! nothing about HTTP itself: routing by path, Origin, Accept and body limits live in the
//! function crate. This module reads the message and routes it; [`dispatch`] answers the
//! methods both eras share, [`call`] runs `tools/call`, [`stateless`] holds the 2026-07-28
//! rules, [`wire`] what goes in and out, and [`builder`] how a server is put together.

mod builder;
mod call;
mod dispatch;
mod prompt;
mod read;
mod stateless;
mod wire;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::admission::Admission;
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::jsonrpc::{self, BodyError, EnvelopeError, Message, RequestId};
use crate::method::{Method, Offered};
use crate::prompts::Prompts;
use crate::registry::Tools;
use crate::resources::Resources;
use crate::result::CallRecord;
use crate::version::ProtocolVersion;

pub use crate::context::DEFAULT_RESPONSE_BUDGET;
pub use builder::{BuildError, CacheHints, ServerBuilder, ServerInfo};
pub use stateless::meta;
pub use wire::{HeaderField, Incoming, Reply};

/// The most messages one 2025-03-26 batch may carry. The spec sets no bound; an
/// unbounded batch would turn one invocation into unbounded work.
pub const MAX_BATCH_LEN: usize = 16;

/// The MCP engine. Immutable once built; shared across invocations of a warm sandbox.
pub struct Server {
    info: ServerInfo,
    tools: Tools,
    /// Offered (`resources` capability, the three methods) when not empty.
    resources: Resources,
    prompts: Prompts,
    logging: bool,
    cache: CacheHints,
    response_budget: usize,
    check_outputs: bool,
    admission: Option<Arc<dyn Admission>>,
}

/// What one request produced: its result or error, and the record of the tool call it made
/// (returned up to the transport's log line, never left in shared state).
struct Answer {
    result: Result<Value, RpcError>,
    call: Option<CallRecord>,
}

impl Answer {
    /// A read's answer with its record, which counts an error as one.
    fn recorded(result: Result<Value, RpcError>, mut record: CallRecord) -> Self {
        record.is_error = result.is_err();
        Self {
            result,
            call: Some(record),
        }
    }
}

impl From<Result<Value, RpcError>> for Answer {
    fn from(result: Result<Value, RpcError>) -> Self {
        Self { result, call: None }
    }
}

/// One message's outcome, before it becomes a reply or a batch entry.
enum Handled {
    Accepted,
    Answer {
        status: u16,
        body: Value,
        challenge: Option<Vec<String>>,
        retry_after_secs: Option<u64>,
        call: Option<CallRecord>,
    },
}

impl Handled {
    fn error(err: RpcError, id: Option<&RequestId>, version: ProtocolVersion) -> Self {
        let challenge = match &err {
            RpcError::InsufficientScope { scopes } => Some(scopes.clone()),
            _ => None,
        };
        let retry_after_secs = match &err {
            RpcError::RateLimited {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        };
        Self::Answer {
            status: err.http_status(version),
            body: jsonrpc::failure(id, &err.to_object(version)),
            challenge,
            retry_after_secs,
            call: None,
        }
    }
}

impl Server {
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The same server asking `admission` before every tool call: for a deployment that
    /// builds its server in one place and its limits in another.
    #[must_use]
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Self {
        self.admission = Some(admission);
        self
    }

    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// Every scope a tool, resource or prompt requires, sorted: the `scopes_supported` of
    /// the protected resource metadata.
    pub fn all_scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = self.tools.all_scopes().to_vec();
        scopes.extend(self.resources.all_scopes().iter().cloned());
        scopes.extend(self.prompts.all_scopes().iter().cloned());
        scopes.sort();
        scopes.dedup();
        scopes
    }

    fn offered(&self) -> Offered {
        Offered {
            resources: !self.resources.is_empty(),
            prompts: !self.prompts.is_empty(),
            completions: self.prompts.completes() || self.resources.completes(),
            logging: self.logging,
        }
    }

    /// Answers one HTTP POST body.
    pub async fn handle(&self, incoming: Incoming<'_>) -> Reply {
        let assumed = ProtocolVersion::ASSUMED_WITHOUT_HEADER;
        let error_reply = |err: RpcError, id: Option<&RequestId>, method: Option<String>| Reply {
            method,
            ..Reply::new(
                err.http_status(assumed),
                Some(jsonrpc::failure(id, &err.to_object(assumed))),
                assumed,
            )
        };

        // Invalid UTF-8 and invalid JSON are both parse errors: serde_json checks both.
        let value = match jsonrpc::parse_body(incoming.body) {
            Ok(value) => value,
            Err(BodyError::Syntax) => return error_reply(RpcError::Parse, None, None),
            Err(BodyError::DuplicateKey) => {
                let err = RpcError::InvalidRequest(
                    "an object repeats a member name; send each name once".into(),
                );
                return error_reply(err, None, None);
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
                    return error_reply(err, readable_id.as_ref(), method_name);
                }
            },
            HeaderField::Invalid => {
                let err = RpcError::UnsupportedProtocolVersion {
                    requested: String::new(),
                };
                return error_reply(err, readable_id.as_ref(), method_name);
            }
        };

        if let Value::Array(items) = &value {
            return self.handle_batch(items, version, &incoming).await;
        }

        let reply = match self.handle_message(&value, version, &incoming, false).await {
            Handled::Accepted => Reply::new(202, None, version),
            Handled::Answer {
                status,
                body,
                challenge,
                retry_after_secs,
                call,
            } => Reply {
                insufficient_scope: challenge,
                retry_after_secs,
                call,
                ..Reply::new(status, Some(body), version)
            },
        };
        Reply {
            method: method_name,
            ..reply
        }
    }

    async fn handle_batch(
        &self,
        items: &[Value],
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
    ) -> Reply {
        let reject = |msg: String| {
            let err = RpcError::InvalidRequest(msg);
            let body = jsonrpc::failure(None, &err.to_object(version));
            Reply::new(err.http_status(version), Some(body), version)
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
            .filter_map(|m| m.get("method").and_then(Value::as_str))
            .filter(|name| Method::parse(name) == Method::ToolsCall)
            .count();
        if calls > 1 {
            return reject(format!(
                "a batch may contain at most one tools/call, this one contains {calls}"
            ));
        }
        let mut responses = Vec::new();
        let mut record = None;
        let (mut scopes, mut retry_after) = (None, None);
        for item in items {
            if let Handled::Answer {
                body,
                call,
                challenge,
                retry_after_secs,
                ..
            } = self.handle_message(item, version, incoming, true).await
            {
                responses.push(body);
                record = record.or(call);
                scopes = scopes.or(challenge);
                retry_after = retry_after.or(retry_after_secs);
            }
        }
        if responses.is_empty() {
            return Reply::new(202, None, version);
        }
        // The batch's one tool call, refused for scope or by a rate limit, sets the status
        // and header a lone call would get (403 + challenge, 429 + Retry-After), so a client
        // can step up or back off whichever way it sent the call; the body keeps every
        // entry's answer.
        let status = match (&scopes, retry_after) {
            (Some(_), _) => 403,
            (None, Some(_)) => 429,
            (None, None) => 200,
        };
        Reply {
            call: record,
            insufficient_scope: scopes,
            retry_after_secs: retry_after,
            ..Reply::new(status, Some(Value::Array(responses)), version)
        }
    }

    async fn handle_message(
        &self,
        value: &Value,
        version: ProtocolVersion,
        incoming: &Incoming<'_>,
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
        let method = Method::parse(&method);
        let answer = if !method.is_served(version, self.offered()) {
            // 2026-07-28 streamable-http: an unimplemented method "MUST respond with 404
            // Not Found and a JSON-RPC error with code -32601" (the status is the error's
            // per era). In 2026-07-28 this covers the removed `initialize`, `ping`,
            // `logging/setLevel` and `resources/(un)subscribe`.
            Err(RpcError::MethodNotFound(method.as_str().to_owned())).into()
        } else if version.is_stateless() {
            self.dispatch_stateless(method, params, incoming).await
        } else {
            self.dispatch_handshake(method, params, version, incoming, in_batch)
                .await
        };
        let mut handled = match answer.result {
            Ok(result) => Handled::Answer {
                status: 200,
                body: jsonrpc::success(&id, result),
                challenge: None,
                retry_after_secs: None,
                call: None,
            },
            Err(err) => Handled::error(err, Some(&id), version),
        };
        if let Handled::Answer { call, .. } = &mut handled {
            *call = answer.call;
        }
        handled
    }

    /// The context a request body runs with: its era, deadline, caller and budget.
    fn context(&self, version: ProtocolVersion, incoming: &Incoming<'_>) -> RequestContext {
        RequestContext {
            deadline: incoming.deadline,
            caller: incoming.caller.clone(),
            response_budget: self.response_budget,
            ..RequestContext::anonymous(version)
        }
    }
}

/// Step two of parsing: a method's own parameters. Here, beside the types every method
/// module shares, so that no method module depends on another for it.
fn parse_params<T: for<'de> serde::Deserialize<'de>>(
    params: Map<String, Value>,
) -> Result<T, RpcError> {
    serde_json::from_value(Value::Object(params))
        .map_err(|e| RpcError::InvalidParams(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::ResourceDef;

    #[test]
    fn a_server_that_offers_nothing_is_not_built() {
        assert_eq!(
            Server::builder("empty", "1").build().err(),
            Some(BuildError::NothingOffered)
        );
        let mut resources = Resources::new();
        resources
            .register(ResourceDef::direct("test://one", "one", |_, _| async {
                Ok(None)
            }))
            .unwrap();
        let server = Server::builder("resources only", "1")
            .resources(resources)
            .build();
        assert!(server.is_ok_and(|s| s.offered().resources && s.tools().is_empty()));
    }
}
