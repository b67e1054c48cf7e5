//! Protocol errors and their one mapping to the wire (JSON-RPC code + HTTP status).

use serde_json::{Value, json};

use crate::jsonrpc::{self, ErrorObject};
use crate::text::elided;
use crate::version::{ProtocolVersion, supported_versions};

/// JSON-RPC and MCP error codes we emit. 2026-07-28 basic §Error Codes reserves
/// -32020..-32099 and forbids emitting undefined codes from it, so these are the only ones.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found in the handshake era (2025-11-25 resources §Error Handling).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    pub const HEADER_MISMATCH: i64 = -32020;
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// The longest message an error carries. Messages repeat what the client sent (a method or
/// tool name, serde's `invalid type: string "…"`, a header), which can be the whole body;
/// longer ones keep their start and end (`text::elided`).
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// The longest unsupported protocol version repeated in `data.requested`: a real one is ten
/// bytes.
const MAX_VERSION_BYTES: usize = 64;

/// Everything that turns a request into a JSON-RPC error instead of a result.
///
/// Messages are written for the client: precise about what was wrong with *its* input,
/// silent about our internals (an [`RpcError::Internal`] says nothing more than that).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    #[error("Parse error: the body is not valid JSON")]
    Parse,
    #[error("Invalid request: {0}")]
    InvalidRequest(String),
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    #[error("Invalid params: {0}")]
    InvalidParams(String),
    /// A 2026-07-28 request whose `_meta` lacks a required field: -32602 *and* HTTP 400
    /// (2026-07-28 basic §_meta "the response status MUST be 400").
    #[error("Invalid params: {0}")]
    InvalidMeta(String),
    #[error("Resource not found")]
    ResourceNotFound { uri: String },
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),
    #[error("Missing required client capability")]
    MissingClientCapability { required: Value },
    #[error("Unsupported protocol version")]
    UnsupportedProtocolVersion { requested: String },
    /// The caller's token lacks scopes this call needs: HTTP 403 with an
    /// `insufficient_scope` challenge naming `scopes` (2025-11-25 authorization §Runtime
    /// Insufficient Scope Errors).
    #[error("Forbidden: insufficient scope; this call needs {}", .scopes.join(" "))]
    InsufficientScope { scopes: Vec<String> },
    /// The caller is over a rate limit: HTTP 429 with `Retry-After` (RFC 9110 §10.2.3) and
    /// -32600, like the other refusals decided before the body runs; `data` says which limit
    /// and when to retry.
    #[error("Rate limit exceeded: {message}")]
    RateLimited {
        message: String,
        retry_after_secs: u64,
        data: Value,
    },
    /// A read the server could not complete (its deadline passed, its answer was over the
    /// response budget): -32603 with a message saying what to do and the structured detail
    /// in `data`, in a 200 like any answered request. Not a fault of ours, so not a 500.
    #[error("{message}")]
    Failed { message: String, data: Value },
    #[error("Internal error")]
    Internal,
}

impl RpcError {
    /// The JSON-RPC error object for this failure in the given revision.
    pub fn to_object(&self, version: ProtocolVersion) -> ErrorObject {
        let (code, data) = match self {
            Self::Parse => (code::PARSE_ERROR, None),
            Self::InvalidRequest(_) => (code::INVALID_REQUEST, None),
            Self::MethodNotFound(_) => (code::METHOD_NOT_FOUND, None),
            Self::InvalidParams(_) | Self::InvalidMeta(_) => (code::INVALID_PARAMS, None),
            // SEP-2164: 2026-07-28 moved resource-not-found to -32602 and "MUST NOT emit"
            // -32002; the handshake era still documents -32002.
            Self::ResourceNotFound { uri } => {
                let code = if version.is_stateless() {
                    code::INVALID_PARAMS
                } else {
                    code::RESOURCE_NOT_FOUND
                };
                (code, Some(json!({ "uri": uri })))
            }
            Self::HeaderMismatch(_) => (code::HEADER_MISMATCH, None),
            Self::MissingClientCapability { required } => (
                code::MISSING_REQUIRED_CLIENT_CAPABILITY,
                Some(json!({ "requiredCapabilities": required })),
            ),
            Self::UnsupportedProtocolVersion { requested } => (
                code::UNSUPPORTED_PROTOCOL_VERSION,
                Some(json!({
                    "supported": supported_versions(),
                    "requested": elided(requested, MAX_VERSION_BYTES),
                })),
            ),
            Self::InsufficientScope { .. } => (code::INVALID_REQUEST, None),
            Self::Failed { data, .. } => (code::INTERNAL_ERROR, Some(data.clone())),
            Self::RateLimited { data, .. } => (code::INVALID_REQUEST, Some(data.clone())),
            Self::Internal => (code::INTERNAL_ERROR, None),
        };
        let mut message = self.to_string();
        if message.len() > MAX_MESSAGE_BYTES {
            message = elided(&message, MAX_MESSAGE_BYTES).into_owned();
        }
        ErrorObject {
            code,
            message,
            data,
        }
    }

    /// The HTTP status that carries this error in the given revision.
    ///
    /// Handshake era: JSON-RPC errors for well-formed requests travel in a 200, as every
    /// reference server does (a 404 would make a session-holding client re-initialize,
    /// 2025-11-25 transports §Session Management). Input the transport cannot accept at all
    /// is a 400 (§Sending Messages: "MUST return an HTTP error status code (e.g., 400)").
    /// 2026-07-28 adds 400 for `_meta`, version, header and capability errors and 404 for
    /// unknown methods (streamable-http §Protocol Version Header).
    pub fn http_status(&self, version: ProtocolVersion) -> u16 {
        match self {
            Self::Parse
            | Self::InvalidRequest(_)
            | Self::InvalidMeta(_)
            | Self::HeaderMismatch(_)
            | Self::MissingClientCapability { .. }
            | Self::UnsupportedProtocolVersion { .. } => 400,
            Self::MethodNotFound(_) if version.is_stateless() => 404,
            Self::MethodNotFound(_)
            | Self::InvalidParams(_)
            | Self::ResourceNotFound { .. }
            | Self::Failed { .. } => 200,
            Self::InsufficientScope { .. } => 403,
            Self::RateLimited { .. } => 429,
            Self::Internal => 500,
        }
    }
}

/// The error body of a request the transport refused before the engine read it (wrong path
/// or method, unacceptable headers, refused credentials): `-32600` with the refusal's own
/// message, id null. -32600 rather than the TypeScript SDK's -32000: 2026-07-28 basic
/// §Error Codes says new implementations SHOULD NOT use -32000..-32019.
pub fn transport_failure(message: impl Into<String>) -> Value {
    jsonrpc::failure(
        None,
        &ErrorObject {
            code: code::INVALID_REQUEST,
            message: message.into(),
            data: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion::*;

    #[test]
    fn every_error_maps_to_its_code_and_status_in_both_eras() {
        let cases: Vec<(RpcError, i64, u16, i64, u16)> = vec![
            (RpcError::Parse, -32700, 400, -32700, 400),
            (
                RpcError::InvalidRequest("x".into()),
                -32600,
                400,
                -32600,
                400,
            ),
            (
                RpcError::MethodNotFound("x".into()),
                -32601,
                200,
                -32601,
                404,
            ),
            (
                RpcError::InvalidParams("x".into()),
                -32602,
                200,
                -32602,
                200,
            ),
            (RpcError::InvalidMeta("x".into()), -32602, 400, -32602, 400),
            (
                RpcError::ResourceNotFound { uri: "u".into() },
                -32002,
                200,
                -32602,
                200,
            ),
            (
                RpcError::HeaderMismatch("x".into()),
                -32020,
                400,
                -32020,
                400,
            ),
            (
                RpcError::MissingClientCapability {
                    required: json!({"sampling": {}}),
                },
                -32021,
                400,
                -32021,
                400,
            ),
            (
                RpcError::UnsupportedProtocolVersion {
                    requested: "v9".into(),
                },
                -32022,
                400,
                -32022,
                400,
            ),
            (
                RpcError::InsufficientScope {
                    scopes: vec!["a".into()],
                },
                -32600,
                403,
                -32600,
                403,
            ),
            (
                RpcError::Failed {
                    message: "x".into(),
                    data: json!({}),
                },
                -32603,
                200,
                -32603,
                200,
            ),
            (
                RpcError::RateLimited {
                    message: "x".into(),
                    retry_after_secs: 3,
                    data: json!({}),
                },
                -32600,
                429,
                -32600,
                429,
            ),
            (RpcError::Internal, -32603, 500, -32603, 500),
        ];
        for (err, legacy_code, legacy_status, modern_code, modern_status) in cases {
            assert_eq!(err.to_object(V2025_11_25).code, legacy_code, "{err:?}");
            assert_eq!(err.http_status(V2025_11_25), legacy_status, "{err:?}");
            assert_eq!(err.to_object(V2026_07_28).code, modern_code, "{err:?}");
            assert_eq!(err.http_status(V2026_07_28), modern_status, "{err:?}");
        }
    }

    #[test]
    fn unsupported_version_names_every_supported_version_and_echoes_the_request() {
        let obj = RpcError::UnsupportedProtocolVersion {
            requested: "v999".into(),
        }
        .to_object(V2026_07_28);
        assert_eq!(
            obj.data,
            Some(json!({
                "supported": ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
                "requested": "v999"
            }))
        );
    }

    #[test]
    fn internal_errors_say_nothing_more() {
        let obj = RpcError::Internal.to_object(V2025_03_26);
        assert_eq!(obj.message, "Internal error");
        assert_eq!(obj.data, None);
    }
}
