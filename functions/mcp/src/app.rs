//! The function's state and its one entry point, [`App::handle`]: the request answered by
//! `transport.rs`, then one log line (and metric line) per request.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use lambda_http::{Body, Request, RequestExt, Response};
use mcp_protocol::Server;
use mcp_protocol::telemetry as collector;
use mcp_protocol::text::{LOGGED_NAME_BYTES, elided};

use crate::auth::Authenticator;
use crate::config::Config;
use crate::metrics::{Emf, MetricSink, RequestTrace, stdout_sink};
use crate::state::Inner;
use crate::telemetry::{self, Exporter, TelemetryConfig};
use crate::traceparent;
use crate::transport;

/// The function's state: built once per sandbox, shared by every invocation.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

impl App {
    /// The app with EMF metric lines on stdout.
    pub fn new(config: Config, server: Server) -> Self {
        Self::with_metric_sink(config, server, stdout_sink())
    }

    /// The app with EMF metric lines sent to `metrics`.
    pub fn with_metric_sink(config: Config, server: Server, metrics: MetricSink) -> Self {
        let auth = Authenticator::new(&config, &server);
        let emf = config.metrics_namespace.as_deref().map(Emf::new);
        Self {
            inner: Arc::new(Inner {
                config,
                server,
                auth,
                metrics,
                emf,
                telemetry: None,
            }),
        }
    }

    /// The same app sending a trace of every request to `telemetry`'s collector. Call it
    /// before the app is cloned: a shared app keeps its settings (and says so in the log).
    #[must_use]
    pub fn traced(self, telemetry: TelemetryConfig) -> Self {
        match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => {
                inner.telemetry = Some(Exporter::new(telemetry));
                Self {
                    inner: Arc::new(inner),
                }
            }
            Err(inner) => {
                tracing::warn!("traces not turned on: the app was already shared");
                Self { inner }
            }
        }
    }

    /// Answers one HTTP request. Never fails: every problem is an HTTP status with a
    /// JSON-RPC error body. Leaves one log line (and, for tool calls and refused
    /// credentials, one EMF metric line) per request.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let started = Instant::now();
        let request_id = req
            .lambda_context_ref()
            .map(|ctx| ctx.request_id.clone())
            .unwrap_or_default();
        let Some(exporter) = &self.inner.telemetry else {
            let (response, trace) = transport::handle(&self.inner, req).await;
            return self.finish(&request_id, started, response, &trace);
        };
        // The Lambda trace header, for a request whose `_meta` names no trace of its own.
        let lambda_parent = req
            .lambda_context_ref()
            .and_then(|ctx| ctx.xray_trace_id.as_deref())
            .or_else(|| {
                req.headers()
                    .get("x-amzn-trace-id")
                    .and_then(|v| v.to_str().ok())
            })
            .and_then(traceparent::parse_xray);
        let wall_start = SystemTime::now();
        let ((response, trace), parts) =
            collector::collect(transport::handle(&self.inner, req)).await;
        let span = telemetry::server_span(
            &trace,
            response.status().as_u16(),
            response.body(),
            wall_start,
            &request_id,
        );
        let response = self.finish(&request_id, started, response, &trace);
        exporter
            .export(
                trace.parent.as_ref().or(lambda_parent.as_ref()),
                span,
                parts,
            )
            .await;
        response
    }

    /// The request's log line and metric line; returns the response.
    fn finish(
        &self,
        request_id: &str,
        started: Instant,
        response: Response<Body>,
        trace: &RequestTrace,
    ) -> Response<Body> {
        let duration_ms = started.elapsed().as_millis() as u64;
        // `Body` derefs to its bytes.
        let bytes = response.body().len();
        let call = trace.call.as_ref();
        // The method and tool name are the client's own text, up to the whole body.
        let method = elided(trace.method.as_deref().unwrap_or(""), LOGGED_NAME_BYTES);
        let tool = call.map(|c| elided(&c.tool, LOGGED_NAME_BYTES));
        tracing::info!(
            request_id,
            http.status = response.status().as_u16(),
            rpc.method = method.as_ref(),
            tool.name = tool.as_deref(),
            principal = trace.principal.as_deref(),
            duration_ms,
            response_bytes = bytes,
            rows = call.and_then(|c| c.stats.rows),
            truncated = call.map(|c| c.stats.truncated),
            tool.is_error = call.map(|c| c.is_error),
            over_budget = call.map(|c| c.over_budget),
            budget_bytes = call.and_then(|c| c.budget.map(|b| b.bytes)),
            budget_source = call.and_then(|c| c.budget.map(|b| b.source.as_str())),
            rate_limited = call.map(|c| c.rate_limited),
            deadline.phase = call.and_then(|c| c.stats.deadline_phase),
            auth_denied = trace.auth_denied,
            "request"
        );
        if let Some(line) = self
            .inner
            .emf
            .as_ref()
            .and_then(|emf| emf.line(trace, duration_ms, bytes))
        {
            (self.inner.metrics)(&line);
        }
        response
    }
}
