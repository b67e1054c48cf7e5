//! What the transport hands the engine and gets back.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::context::Caller;
use crate::result::CallRecord;
use crate::version::ProtocolVersion;

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
    /// Set when the call was rate limited: the seconds for `Retry-After`.
    pub retry_after_secs: Option<u64>,
    /// What the request's `tools/call` did, if it made one (for logs and metrics).
    pub call: Option<CallRecord>,
}

impl Reply {
    pub(crate) fn new(status: u16, body: Option<Value>, version: ProtocolVersion) -> Self {
        Self {
            status,
            body,
            version,
            method: None,
            insufficient_scope: None,
            retry_after_secs: None,
            call: None,
        }
    }
}
