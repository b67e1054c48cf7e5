//! What a request carries into a tool, resource or prompt body.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::version::ProtocolVersion;

pub use crate::budget::DEFAULT_RESPONSE_BUDGET;

/// The authenticated caller. Filled in by the HTTP layer from the verified token; the
/// engine only reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The token's `sub`, if any.
    pub subject: Option<String>,
    /// A non-reversible short hash of the subject, the only form logs carry.
    pub subject_hash: Option<String>,
    /// The tenant the caller may read, if the deployment is multi-tenant.
    pub tenant: Option<String>,
    /// Granted OAuth scopes.
    pub scopes: Vec<String>,
    /// Holds every scope. Only the conformance fixture build (auth off) sets this.
    pub unrestricted: bool,
}

impl Caller {
    /// How logs name the caller: the subject's hash, or `-` for none.
    pub fn log_id(&self) -> &str {
        self.subject_hash.as_deref().unwrap_or("-")
    }

    /// Returns true if and only if the caller holds every scope in `required` (exact,
    /// byte-wise comparison: `Admin` is not `admin`).
    pub fn has_scopes(&self, required: &[String]) -> bool {
        self.unrestricted || required.iter().all(|r| self.scopes.contains(r))
    }
}

/// Per-request facts handed to every tool, resource and prompt body.
///
/// Cheap to clone: bodies receive it by value so they can move it into a future.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The revision this request is served in.
    pub version: ProtocolVersion,
    /// The instant by which the answer must be on its way back (from the Lambda
    /// invocation), if known.
    pub deadline: Option<Instant>,
    pub caller: Arc<Caller>,
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]` of a 2026-07-28 request. The
    /// handshake era never tells a stateless server the client's capabilities.
    pub client_capabilities: Option<Value>,
    /// 2026-07-28 multi-round-trip requests (SEP-2322): the client's answers to an earlier
    /// `input_required` result, keyed as the server asked.
    pub input_responses: Option<Value>,
    /// 2026-07-28 multi-round-trip requests: the opaque state the server returned earlier.
    pub request_state: Option<String>,
    /// The byte budget of this call's result: the smallest of the server's, the tool's and
    /// the client's (see [`crate::budget`]). Tools that return lists fill them up to it and
    /// say `truncated` rather than overrun it.
    pub response_budget: usize,
}

impl RequestContext {
    /// A context for a request with no caller information (tests, fixtures).
    pub fn anonymous(version: ProtocolVersion) -> Self {
        Self {
            version,
            deadline: None,
            caller: Arc::new(Caller::default()),
            client_capabilities: None,
            input_responses: None,
            request_state: None,
            response_budget: DEFAULT_RESPONSE_BUDGET,
        }
    }
}
