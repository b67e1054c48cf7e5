//! The 2026-07-28 rules: every request carries `_meta`, the `Mcp-Method`/`Mcp-Name` headers
//! must match the body, `server/discover` replaces the handshake, and every result carries
//! `resultType`, the server's identity and, when cacheable, caching hints.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::{Answer, HeaderField, Incoming, Server};
use crate::context::RequestContext;
use crate::error::RpcError;
use crate::method::Method;
use crate::version::{ProtocolVersion, supported_versions};

/// Keys of the 2026-07-28 per-request and per-response `_meta` fields.
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
}

impl Server {
    /// Answers a 2026-07-28 request this server serves.
    pub(super) async fn dispatch_stateless(
        &self,
        method: Method,
        params: Map<String, Value>,
        incoming: &Incoming<'_>,
    ) -> Answer {
        let ctx = match self.stateless_context(&method, &params, incoming) {
            Ok(ctx) => ctx,
            Err(e) => return Err(e).into(),
        };
        let mut answer = match method {
            Method::Discover => Ok(self.discover()).into(),
            _ => self.dispatch_common(&method, params, ctx).await,
        };
        if let Ok(result) = &mut answer.result {
            self.decorate(result, method.is_cacheable());
        }
        answer
    }

    /// Checks what every 2026-07-28 request must carry and builds its context from it.
    fn stateless_context(
        &self,
        method: &Method,
        params: &Map<String, Value>,
        incoming: &Incoming<'_>,
    ) -> Result<RequestContext, RpcError> {
        check_standard_headers(method, params, incoming)?;
        let client_capabilities = check_request_meta(params)?;
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
        Ok(RequestContext {
            client_capabilities: Some(client_capabilities),
            input_responses,
            request_state,
            ..self.context(ProtocolVersion::V2026_07_28, incoming)
        })
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

    /// Adds what 2026-07-28 requires on results: `resultType` on every result, the server's
    /// identity in `_meta`, and caching hints on cacheable ones.
    fn decorate(&self, result: &mut Value, cacheable: bool) {
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

/// 2026-07-28 streamable-http §Server Validation: the `Mcp-Method` header is required and
/// must equal the body's method; `Mcp-Name` must equal the body field the method names
/// ([`Method::name_param`]). Values are compared after trimming optional whitespace (RFC
/// 9110 §5.5) and decoding the `=?base64?...?=` form.
fn check_standard_headers(
    method: &Method,
    params: &Map<String, Value>,
    incoming: &Incoming<'_>,
) -> Result<(), RpcError> {
    match incoming.mcp_method {
        HeaderField::One(v) if v.trim() == method.as_str() => {}
        HeaderField::One(v) => {
            return Err(RpcError::HeaderMismatch(format!(
                "Mcp-Method header {:?} does not match the body method {:?}",
                v.trim(),
                method.as_str()
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
    let Some(body_name) = method
        .name_param()
        .and_then(|field| params.get(field))
        .and_then(Value::as_str)
    else {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode_only_the_base64_sentinel() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?w6l2w6huZW1lbnQ=?=").as_deref(),
            Some("évènement")
        );
        assert_eq!(decode_header_value("=?base64?not base64?="), None);
    }
}
