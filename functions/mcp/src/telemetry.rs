//! Traces that join the caller's: one server span per request, named and described as the
//! OpenTelemetry semantic conventions for MCP say (`{mcp.method.name} {gen_ai.tool.name}`),
//! with the parts the request recorded (authentication, database reads) as its children,
//! parented on the client's `_meta.traceparent` (SEP-414) or else on the Lambda trace
//! header, and sent over OTLP/HTTP (JSON) to a collector, such as the one AWS's
//! OpenTelemetry Lambda layer runs beside the function on `localhost:4318`.
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
//! set: then nothing is collected and nothing is parsed twice. On, a request costs one
//! loopback POST, awaited before the answer leaves (a frozen sandbox would lose it).
//!
//! Written here rather than with the `opentelemetry-otlp` exporter: that crate's HTTP
//! transport brings a second `reqwest` major and the protobuf stack into a binary whose
//! size is its cold start, to emit three kinds of span in a JSON wire format that is
//! stable (OTLP 1.x).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_env::{Env, EnvError};
use mcp_protocol::telemetry::{AttrValue, SpanKind, SpanRecord};
use mcp_protocol::text::{LOGGED_NAME_BYTES, elided};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::metrics::RequestTrace;
use crate::traceparent::Parent;

/// Where traces go and how they are named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP traces URL (`…/v1/traces`).
    pub endpoint: String,
    /// `OTEL_SERVICE_NAME`, `event-store-mcp` by default.
    pub service_name: String,
    /// The longest an export may hold the answer back (`OTEL_EXPORTER_OTLP_TIMEOUT`, ms).
    pub timeout: Duration,
}

impl TelemetryConfig {
    /// `None` when no OTLP endpoint is set or `OTEL_TRACES_EXPORTER=none`.
    ///
    /// # Errors
    ///
    /// Names a malformed variable.
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Option<Self>, EnvError> {
        if env.text("OTEL_TRACES_EXPORTER").as_deref() == Some("none") {
            return Ok(None);
        }
        // The OTLP exporter specification: the signal's own variable is the whole URL; the
        // general one is a base the signal's path is appended to.
        let endpoint = match (
            env.text("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            env.text("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(url), _) => url,
            (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
            (None, None) => return Ok(None),
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(EnvError {
                name: "OTEL_EXPORTER_OTLP_ENDPOINT",
                expected: "an http:// or https:// URL",
                value: endpoint,
            });
        }
        Ok(Some(Self {
            endpoint,
            service_name: env
                .text("OTEL_SERVICE_NAME")
                .unwrap_or_else(|| "event-store-mcp".to_owned()),
            timeout: env.millis("OTEL_EXPORTER_OTLP_TIMEOUT", Duration::from_millis(500))?,
        }))
    }
}

/// The request's own span, as the transport saw it.
pub(crate) struct ServerSpan {
    pub(crate) name: String,
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
    pub(crate) attributes: Vec<(&'static str, AttrValue)>,
    pub(crate) failed: bool,
}

#[derive(Deserialize)]
struct ErrorProbe {
    error: Option<ErrorCode>,
}

#[derive(Deserialize)]
struct ErrorCode {
    code: i64,
}

/// The server span of one request, from what the transport recorded: named
/// `{mcp.method.name} {gen_ai.tool.name}` for a tool call and `{mcp.method.name}` otherwise,
/// with the conventions' attributes. A tool name is the client's text: only a registered
/// one is used, as for the metrics' dimension.
pub(crate) fn server_span(
    trace: &RequestTrace,
    status: u16,
    body: &[u8],
    start: SystemTime,
    request_id: &str,
) -> ServerSpan {
    let method = trace
        .method
        .as_deref()
        .map(|m| elided(m, LOGGED_NAME_BYTES).into_owned());
    let tool = trace
        .call
        .as_ref()
        .filter(|c| c.known_tool && !c.tool.contains('/'))
        .map(|c| c.tool.clone());
    let name = match (&method, &tool) {
        (Some(m), Some(t)) => format!("{m} {t}"),
        (Some(m), None) => m.clone(),
        (None, _) => "POST".to_owned(),
    };
    let mut attributes: Vec<(&'static str, AttrValue)> = vec![
        ("network.protocol.name", "http".into()),
        ("http.request.method", "POST".into()),
        ("http.response.status_code", i64::from(status).into()),
        ("jsonrpc.protocol.version", "2.0".into()),
    ];
    if let Some(m) = method {
        attributes.push(("mcp.method.name", m.into()));
    }
    if let Some(v) = trace.version {
        attributes.push(("mcp.protocol.version", v.as_str().into()));
    }
    if let Some(t) = tool {
        attributes.push(("gen_ai.tool.name", t.into()));
        attributes.push(("gen_ai.operation.name", "execute_tool".into()));
    }
    if !request_id.is_empty() {
        attributes.push(("faas.invocation_id", request_id.into()));
    }
    // error.type: the HTTP status of a refusal (401, 403, 429, ...), else the JSON-RPC
    // error code of an error answered in a 200, else `tool_error` for an isError result.
    // An error answer is written with its members in order, `error` first; a result (up
    // to the whole budget) is never parsed again for this.
    let code = body
        .starts_with(br#"{"error":"#)
        .then(|| serde_json::from_slice::<ErrorProbe>(body).ok())
        .flatten()
        .and_then(|p| p.error)
        .map(|e| e.code);
    let error = match (code, &trace.call) {
        _ if status >= 400 => Some(status.to_string()),
        (Some(code), _) => Some(code.to_string()),
        (None, Some(call)) if call.is_error => Some("tool_error".to_owned()),
        _ => None,
    };
    if let Some(code) = code {
        attributes.push(("rpc.response.status_code", code.to_string().into()));
    }
    let failed = error.is_some();
    if let Some(error) = error {
        attributes.push(("error.type", error.into()));
    }
    ServerSpan {
        name,
        start,
        end: SystemTime::now(),
        attributes,
        failed,
    }
}

/// Sends each request's spans to the collector.
pub(crate) struct Exporter {
    config: TelemetryConfig,
    client: reqwest::Client,
    random: SystemRandom,
    resource: Value,
}

impl Exporter {
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        let mut resource = vec![
            attribute("service.name", &AttrValue::Str(config.service_name.clone())),
            attribute("service.version", &env!("CARGO_PKG_VERSION").into()),
            attribute("cloud.provider", &"aws".into()),
        ];
        for (key, var) in [
            ("faas.name", "AWS_LAMBDA_FUNCTION_NAME"),
            ("faas.version", "AWS_LAMBDA_FUNCTION_VERSION"),
        ] {
            if let Ok(value) = std::env::var(var) {
                resource.push(attribute(key, &value.into()));
            }
        }
        Self {
            client: reqwest::Client::builder()
                .timeout(config.timeout)
                .build()
                .unwrap_or_default(),
            config,
            random: SystemRandom::new(),
            resource: json!({ "attributes": resource }),
        }
    }

    /// Gives the spans their ids (a new trace unless `parent` says which) and sends them;
    /// a failure is logged and forgotten: telemetry never fails a request.
    pub(crate) async fn export(
        &self,
        parent: Option<&Parent>,
        server: ServerSpan,
        parts: Vec<SpanRecord>,
    ) {
        if parent.is_some_and(|p| !p.sampled) {
            return;
        }
        let trace_id = parent.map_or_else(|| self.id(16), |p| p.trace_id.clone());
        let server_id = self.id(8);
        let mut spans = vec![span_json(
            &trace_id,
            &server_id,
            parent.map(|p| p.span_id.as_str()),
            parent.and_then(|p| p.trace_state.as_deref()),
            &server.name,
            2, // SPAN_KIND_SERVER
            server.start,
            server.end,
            &server.attributes,
            server.failed,
        )];
        for part in &parts {
            let kind = match part.kind {
                SpanKind::Internal => 1,
                SpanKind::Client => 3,
            };
            spans.push(span_json(
                &trace_id,
                &self.id(8),
                Some(&server_id),
                None,
                &part.name,
                kind,
                part.start,
                part.end,
                &part.attributes,
                part.failed,
            ));
        }
        let body = json!({
            "resourceSpans": [{
                "resource": self.resource,
                "scopeSpans": [{
                    "scope": { "name": "event-store-mcp", "version": env!("CARGO_PKG_VERSION") },
                    "spans": spans,
                }],
            }],
        });
        let sent = self
            .client
            .post(&self.config.endpoint)
            .json(&body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => tracing::warn!(
                http.status = r.status().as_u16(),
                "the trace collector refused the spans"
            ),
            Err(e) => {
                tracing::warn!(error = %e.without_url(), "the spans could not be sent to the trace collector")
            }
        }
    }

    /// A random id of `bytes` bytes, in lowercase hex (OTLP/JSON's form of ids).
    fn id(&self, bytes: usize) -> String {
        let mut raw = [0u8; 16];
        let raw = &mut raw[..bytes];
        // SystemRandom fails only when the OS has no randomness; an id of the clock's
        // nanoseconds still tells spans apart.
        if self.random.fill(raw).is_err() {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos());
            for (i, b) in raw.iter_mut().enumerate() {
                *b = (nanos >> (8 * (i % 16))) as u8 | 1;
            }
        }
        raw.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[allow(clippy::too_many_arguments)]
fn span_json(
    trace_id: &str,
    span_id: &str,
    parent: Option<&str>,
    trace_state: Option<&str>,
    name: &str,
    kind: u8,
    start: SystemTime,
    end: SystemTime,
    attributes: &[(&'static str, AttrValue)],
    failed: bool,
) -> Value {
    let nanos = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_string()
    };
    let mut span = json!({
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": nanos(start),
        "endTimeUnixNano": nanos(end),
        "attributes": attributes.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
        // STATUS_CODE_ERROR, or UNSET: the conventions leave success unset.
        "status": { "code": if failed { 2 } else { 0 } },
    });
    if let Some(parent) = parent {
        span["parentSpanId"] = json!(parent);
    }
    if let Some(state) = trace_state {
        span["traceState"] = json!(state);
    }
    span
}

fn attribute(key: &str, value: &AttrValue) -> Value {
    let value = match value {
        AttrValue::Str(s) => json!({ "stringValue": s }),
        // OTLP/JSON carries 64-bit integers as strings.
        AttrValue::Int(i) => json!({ "intValue": i.to_string() }),
        AttrValue::Bool(b) => json!({ "boolValue": b }),
    };
    json!({ "key": key, "value": value })
}

#[cfg(test)]
mod tests {
    use mcp_protocol::CallRecord;

    use super::*;

    fn named(method: &str, call: Option<CallRecord>, status: u16, body: &[u8]) -> ServerSpan {
        let trace = RequestTrace {
            method: Some(method.into()),
            call,
            ..RequestTrace::default()
        };
        server_span(&trace, status, body, SystemTime::now(), "")
    }

    fn error_type(span: &ServerSpan) -> Option<&AttrValue> {
        span.attributes
            .iter()
            .find(|(k, _)| *k == "error.type")
            .map(|(_, v)| v)
    }

    #[test]
    fn server_spans_are_named_by_method_and_registered_tool_only() {
        let known = CallRecord {
            tool: "query_events".into(),
            known_tool: true,
            ..CallRecord::default()
        };
        assert_eq!(
            named("tools/call", Some(known), 200, b"{}").name,
            "tools/call query_events"
        );
        // A name the client made up never becomes part of a span's name.
        let unknown = CallRecord {
            tool: "x".repeat(500),
            ..CallRecord::default()
        };
        let span = named(
            "tools/call",
            Some(unknown),
            200,
            br#"{"error":{"code":-32602}}"#,
        );
        assert_eq!(span.name, "tools/call");
        assert_eq!(error_type(&span), Some(&AttrValue::Str("-32602".into())));
        assert!(span.failed);
        // Reads that are not tool calls carry the method, not a tool.
        let read = CallRecord::of_method("resources/read");
        assert_eq!(
            named("resources/read", Some(read), 200, b"{}").name,
            "resources/read"
        );
        let refused = named("tools/list", None, 429, br#"{"error":{"code":-32600}}"#);
        assert_eq!(error_type(&refused), Some(&AttrValue::Str("429".into())));
    }
}
