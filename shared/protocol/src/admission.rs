//! Admission of tool calls: the hook a deployment fills in with limits shared by every
//! sandbox (the deployed function's is DynamoDB). Asked once per `tools/call`, after the
//! caller is known to hold the tool's scopes and before anything runs (2025-11-25 tools
//! §Security Considerations: servers "MUST ... rate limit tool invocations").

use std::time::Duration;

use crate::context::Caller;
use crate::registry::BoxFuture;

/// The answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    Allowed,
    /// Allowed without counting: the limits' store could not be asked in time. Recorded
    /// (a metric, an alarm) so an outage of the store is seen, not silently unlimited.
    Unchecked,
    /// Over `limit` (which counter: `subject`, `tool`, `tenant`), `max` calls per `window`;
    /// the window ends in `retry_after`.
    Limited {
        limit: &'static str,
        max: u64,
        window: Duration,
        retry_after: Duration,
    },
}

/// Decides whether a call may run now.
pub trait Admission: Send + Sync {
    /// Counts the call of `tool` by `caller` and says whether it is within the limits.
    /// Must answer promptly whatever its store does: an implementation bounds its own wait
    /// and decides what an unreachable store means.
    fn admit(&self, caller: &Caller, tool: &str) -> BoxFuture<Admit>;
}
