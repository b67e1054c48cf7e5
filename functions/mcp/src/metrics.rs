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
    /// The revision the request was answered in, once read (for its trace span).
    pub(crate) version: Option<mcp_protocol::ProtocolVersion>,
    /// The trace context of the request's `_meta`, read only when traces are on.
    pub(crate) parent: Option<crate::traceparent::Parent>,
}

/// The metrics of a tool call: EMF's metric definitions name them, the line carries their
/// values under the same names (`Tool` is the dimension).
const CALL_METRICS: [(&str, &str); 10] = [
    ("Latency", "Milliseconds"),
    ("Rows", "Count"),
    ("ResponseBytes", "Bytes"),
    ("Truncated", "Count"),
    ("DeadlineExceeded", "Count"),
    ("OverBudget", "Count"),
    ("ToolErrors", "Count"),
    ("RateLimited", "Count"),
    ("RateLimitUnchecked", "Count"),
    ("AuthDenied", "Count"),
];

/// A function's EMF lines. What never changes (namespace, dimensions, metric definitions)
/// is written once, at cold start; a request's line adds its timestamp and values. Building
/// the whole document as a `Value` tree per call cost about 1.5% of a `query_events` call's
/// CPU (issue 18).
pub(crate) struct Emf {
    /// The rest of a tool call line's `_aws` member after its timestamp, closed.
    call_spec: String,
    /// The same for a refusal of credentials without a tool call.
    denied_spec: String,
}

impl Emf {
    pub(crate) fn new(namespace: &str) -> Self {
        let definitions: Vec<Value> = CALL_METRICS
            .iter()
            .map(|(name, unit)| json!({ "Name": name, "Unit": unit }))
            .collect();
        let spec = |dimensions: Value, metrics: Value| {
            let spec = json!([{
                "Namespace": namespace,
                "Dimensions": dimensions,
                "Metrics": metrics,
            }]);
            format!(",\"CloudWatchMetrics\":{spec}}}")
        };
        Self {
            call_spec: spec(json!([["Tool"], []]), Value::Array(definitions)),
            denied_spec: spec(
                json!([[]]),
                json!([{ "Name": "AuthDenied", "Unit": "Count" }]),
            ),
        }
    }

    /// The EMF line for one request, if it is worth a data point: a tool call or an
    /// authentication refusal. Tool calls are recorded per tool and in aggregate.
    pub(crate) fn line(
        &self,
        trace: &RequestTrace,
        latency_ms: u64,
        response_bytes: usize,
    ) -> Option<String> {
        use std::fmt::Write as _;

        if trace.call.is_none() && !trace.auth_denied {
            return None;
        }
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let mut line = String::with_capacity(self.call_spec.len() + 320);
        // Writing to a String cannot fail.
        let _ = write!(line, "{{\"_aws\":{{\"Timestamp\":{timestamp}");
        let Some(call) = &trace.call else {
            line.push_str(&self.denied_spec);
            line.push_str(",\"AuthDenied\":1}");
            return Some(line);
        };
        line.push_str(&self.call_spec);
        line.push_str(",\"Tool\":");
        // A tool name may be anything a client sent (see `tool_label`): escaped by serde_json.
        line.push_str(&serde_json::to_string(tool_label(call)).unwrap_or_default());
        let count = |flag: bool| u64::from(flag);
        let values: [u64; 10] = [
            latency_ms,
            call.stats.rows.unwrap_or(0),
            response_bytes as u64,
            count(call.stats.truncated),
            count(call.stats.deadline_phase.is_some()),
            count(call.over_budget),
            count(call.is_error),
            count(call.rate_limited),
            count(call.rate_limit_unchecked),
            count(trace.auth_denied),
        ];
        for ((name, _), value) in CALL_METRICS.iter().zip(values) {
            let _ = write!(line, ",\"{name}\":{value}");
        }
        line.push('}');
        Some(line)
    }
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

#[cfg(test)]
mod tests {
    use mcp_protocol::{CallRecord, CallStats};

    use super::*;

    fn parsed(line: &str) -> Value {
        serde_json::from_str(line).expect("an EMF line is JSON")
    }

    #[test]
    fn a_tool_call_line_defines_and_carries_every_metric() {
        let trace = RequestTrace {
            call: Some(CallRecord {
                tool: "query_events".into(),
                known_tool: true,
                over_budget: true,
                stats: CallStats {
                    rows: Some(50),
                    truncated: true,
                    ..CallStats::default()
                },
                ..CallRecord::default()
            }),
            ..RequestTrace::default()
        };
        let doc = parsed(&Emf::new("Ns \"x\"").line(&trace, 12, 34_567).unwrap());
        let spec = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(spec["Namespace"], "Ns \"x\"");
        assert_eq!(spec["Dimensions"], json!([["Tool"], []]));
        assert!(doc["_aws"]["Timestamp"].as_u64().unwrap() > 1_700_000_000_000);
        let defined: Vec<&str> = spec["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert_eq!(defined.len(), 10);
        for name in defined {
            assert!(doc[name].is_u64(), "{name} has no value: {doc}");
        }
        assert_eq!(doc["Tool"], "query_events");
        let values = [
            ("Latency", 12),
            ("Rows", 50),
            ("ResponseBytes", 34_567),
            ("Truncated", 1),
            ("OverBudget", 1),
            ("DeadlineExceeded", 0),
            ("ToolErrors", 0),
            ("AuthDenied", 0),
        ];
        for (name, value) in values {
            assert_eq!(doc[name], value, "{name}");
        }
    }

    #[test]
    fn an_unknown_tool_is_one_dimension_value_and_a_bare_request_no_line() {
        let trace = RequestTrace {
            call: Some(CallRecord {
                tool: "\"}\n,\"Rows\":99".into(),
                ..CallRecord::default()
            }),
            ..RequestTrace::default()
        };
        let emf = Emf::new("EventStoreMcp");
        let doc = parsed(&emf.line(&trace, 1, 2).unwrap());
        assert_eq!(
            (doc["Tool"].clone(), doc["Rows"].clone()),
            (json!("(unknown)"), json!(0))
        );
        assert!(emf.line(&RequestTrace::default(), 1, 2).is_none());
    }

    #[test]
    fn a_refused_credential_is_counted_without_a_tool() {
        let trace = RequestTrace {
            auth_denied: true,
            ..RequestTrace::default()
        };
        let doc = parsed(&Emf::new("EventStoreMcp").line(&trace, 1, 2).unwrap());
        assert_eq!(doc["AuthDenied"], 1);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([[]])
        );
        assert_eq!(doc.as_object().unwrap().len(), 2, "{doc}");
    }
}
