//! One log line per request and CloudWatch Embedded Metric Format (EMF) lines, so the
//! deployed function has per-tool latency, size and failure metrics without an agent or an
//! API call: Lambda ships stdout to CloudWatch Logs, which extracts EMF metrics from it.
//!
//! Neither line ever carries a token, a subject, SQL, arguments or row data: only the tool
//! name, counts, sizes, durations and the hashed principal.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_protocol::CallRecord;
use serde_json::{Value, json};

/// Where EMF lines go: stdout in the function, a buffer in tests.
pub type MetricSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Stdout, one line per write, as CloudWatch Logs expects.
pub fn stdout_sink() -> MetricSink {
    Arc::new(|line: &str| println!("{line}"))
}

/// What one request did, gathered by the transport for the log line and the metrics.
#[derive(Debug, Default)]
pub(crate) struct RequestTrace {
    pub(crate) method: Option<String>,
    /// The caller's hashed subject, once authenticated.
    pub(crate) principal: Option<String>,
    pub(crate) call: Option<CallRecord>,
    /// The request was refused for its credentials (401, or 403 for missing scopes).
    pub(crate) auth_denied: bool,
}

/// The EMF document for one request, if it is worth a data point: a tool call or an
/// authentication refusal. Tool calls are recorded per tool and in aggregate.
pub(crate) fn emf(
    namespace: &str,
    trace: &RequestTrace,
    latency_ms: u64,
    response_bytes: usize,
) -> Option<Value> {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let count = |flag: bool| u64::from(flag);
    if let Some(call) = &trace.call {
        return Some(json!({
            "_aws": {
                "Timestamp": timestamp,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    "Dimensions": [["Tool"], []],
                    "Metrics": [
                        { "Name": "Latency", "Unit": "Milliseconds" },
                        { "Name": "Rows", "Unit": "Count" },
                        { "Name": "ResponseBytes", "Unit": "Bytes" },
                        { "Name": "Truncated", "Unit": "Count" },
                        { "Name": "DeadlineExceeded", "Unit": "Count" },
                        { "Name": "OverBudget", "Unit": "Count" },
                        { "Name": "ToolErrors", "Unit": "Count" },
                        { "Name": "RateLimited", "Unit": "Count" },
                        { "Name": "RateLimitUnchecked", "Unit": "Count" },
                        { "Name": "AuthDenied", "Unit": "Count" }
                    ]
                }]
            },
            "Tool": tool_label(call),
            "Latency": latency_ms,
            "Rows": call.stats.rows.unwrap_or(0),
            "ResponseBytes": response_bytes,
            "Truncated": count(call.stats.truncated),
            "DeadlineExceeded": count(call.stats.deadline_phase.is_some()),
            "OverBudget": count(call.over_budget),
            "ToolErrors": count(call.is_error),
            "RateLimited": count(call.rate_limited),
            "RateLimitUnchecked": count(call.rate_limit_unchecked),
            "AuthDenied": count(trace.auth_denied),
        }));
    }
    trace.auth_denied.then(|| {
        json!({
            "_aws": {
                "Timestamp": timestamp,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    "Dimensions": [[]],
                    "Metrics": [{ "Name": "AuthDenied", "Unit": "Count" }]
                }]
            },
            "AuthDenied": 1,
        })
    })
}

/// A tool name as a metric dimension: names are checked at registration, but a refused
/// call can name anything, and dimension values must stay few and short.
fn tool_label(call: &CallRecord) -> &str {
    if call.known_tool {
        &call.tool
    } else {
        "(unknown)"
    }
}
