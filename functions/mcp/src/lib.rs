//! The MCP endpoint as a Lambda function: HTTP in, HTTP out.
//!
//! Everything HTTP-shaped lives here (routing on method and path, `Host` and `Origin`
//! guards, `Accept` and `Content-Type`, body limits, the invocation deadline); everything
//! MCP-shaped lives in [`mcp_protocol`]. `main.rs` only wires the two to the runtime, so
//! tests drive [`App::handle`] directly with the same API Gateway events `cargo lambda
//! invoke` uses.

mod auth;
mod authority;
pub mod config;
mod event;
pub mod limits;
pub mod metrics;
mod transport;
mod wire;

use std::sync::Arc;
use std::time::Instant;

use lambda_http::{Body, Request, RequestExt, Response};
use mcp_env::Env;
use mcp_protocol::text::{LOGGED_NAME_BYTES, elided};
use mcp_protocol::{Resources, Server, Tools};
use mcp_tools::{CursorKey, EventLinks, Store};

pub use config::Config;
pub use limits::{DynamoLimiter, LimitsConfig};
pub use metrics::{MetricSink, stdout_sink};

/// The function's state: built once per sandbox, shared by every invocation.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) server: Server,
    pub(crate) auth: auth::Authenticator,
    metrics: MetricSink,
    /// `None` when metrics are off (`METRICS_NAMESPACE=off`).
    emf: Option<metrics::Emf>,
}

impl App {
    /// The app with EMF metric lines on stdout.
    pub fn new(config: Config, server: Server) -> Self {
        Self::with_metric_sink(config, server, stdout_sink())
    }

    /// The app with EMF metric lines sent to `metrics`.
    pub fn with_metric_sink(config: Config, server: Server, metrics: MetricSink) -> Self {
        let auth = auth::Authenticator::new(&config, &server);
        let emf = config.metrics_namespace.as_deref().map(metrics::Emf::new);
        Self {
            inner: Arc::new(Inner {
                config,
                server,
                auth,
                metrics,
                emf,
            }),
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
        let (response, trace) = transport::handle(&self.inner, req).await;
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
            .and_then(|emf| emf.line(&trace, duration_ms, bytes))
        {
            (self.inner.metrics)(&line);
        }
        response
    }
}

/// The server the deployed function serves: the event-store tools and resources over
/// `store`.
///
/// # Errors
///
/// Fails if a tool or resource definition is invalid (bad name, schema or URI template):
/// a cold-start error, caught by tests.
pub fn production_server(store: Arc<Store>, response_budget: usize) -> anyhow::Result<Server> {
    let mut tools = Tools::new();
    mcp_tools::register(&mut tools, store.clone())?;
    let mut resources = Resources::new();
    mcp_tools::register_resources(&mut resources, store)?;
    Ok(Server::builder("event-store-mcp", env!("CARGO_PKG_VERSION"))
        .title("Event store (read-only)")
        .instructions(
            "Read-only access to an incident event store. Every tool is bounded in time and size; \
             narrow the time window or add filters when a result is truncated.",
        )
        .tools(tools)
        .resources(resources)
        .response_budget(response_budget)
        // Every result of these tools is built by typed code (columns of fixed types under
        // fixed keys), so its shape changes only with the code. Debug builds, which every
        // test and the served function in scripts/test run, validate each result against
        // its output schema and turn a mismatch into an internal error the tests see;
        // release builds skip the walk over every row on every call (issue 18: about 4%
        // of the function's CPU per query_events call).
        .check_outputs(cfg!(debug_assertions))
        .build()?)
}

/// The event store from `DATABASE_URL` or `DB_SECRET_ID` (+ `DB_SSLMODE`, `DB_CA_FILE`, ...),
/// `CURSOR_SIGNING_KEY` (or `CURSOR_SIGNING_KEY_SECRET_ID`, read here, once) and
/// `TOOL_STATEMENT_TIMEOUT_MS`. The database is not connected yet, nor its secret read: the
/// first tool call does that.
///
/// # Errors
///
/// Names the missing or malformed variable.
pub async fn store_from_env() -> anyhow::Result<Arc<Store>> {
    let env = Env::process();
    let db = mcp_db::DbConfig::from_lookup(|name| env.var(name)).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "DATABASE_URL or DB_SECRET_ID is required: the endpoint's tools read the event store"
        )
    })?;
    let key = match (
        env.var("CURSOR_SIGNING_KEY"),
        env.text("CURSOR_SIGNING_KEY_SECRET_ID"),
    ) {
        (Some(key), None) => key,
        // Deployed: the key lives in Secrets Manager, never in the function's configuration.
        (None, Some(id)) => mcp_db::read_plain_secret(&id, std::time::Duration::from_secs(5))
            .await
            .map_err(|e| anyhow::anyhow!("CURSOR_SIGNING_KEY_SECRET_ID: {e}"))?,
        (Some(_), Some(_)) => {
            anyhow::bail!("set CURSOR_SIGNING_KEY or CURSOR_SIGNING_KEY_SECRET_ID, not both")
        }
        (None, None) => anyhow::bail!(
            "CURSOR_SIGNING_KEY (at least 32 bytes) or CURSOR_SIGNING_KEY_SECRET_ID is required"
        ),
    };
    let statement_timeout = env.millis(
        "TOOL_STATEMENT_TIMEOUT_MS",
        std::time::Duration::from_millis(5_000),
    )?;
    Ok(Arc::new(Store {
        db: mcp_db::Db::new(db),
        cursor_key: CursorKey::new(key)?,
        statement_timeout,
        // Where search and fetch results link to (ChatGPT cites only results with a url).
        links: EventLinks::new(env.text("EVENT_URL_TEMPLATE").as_deref())?,
    }))
}

/// The app as the function serves it, from the environment: configuration, the event store,
/// the tools. Shared by the Lambda `main` and `bench/serve`, so what is measured is what is
/// deployed.
///
/// # Errors
///
/// Names the missing or malformed variable, or the secret that could not be read.
pub async fn app_from_env() -> anyhow::Result<App> {
    let config = Config::from_env()?;
    let mut server = production_server(store_from_env().await?, config.response_budget)?;
    let limits = LimitsConfig::from_env(&Env::process())?;
    if let Some(limits) = limits.clone() {
        server = server.with_admission(Arc::new(DynamoLimiter::from_aws(limits).await));
    }
    log_cold_start(&config, &server, limits.as_ref());
    Ok(App::new(config, server))
}

/// One line per sandbox saying what it serves: enough to tell from the logs which build
/// and settings answered, and nothing secret (the issuer and budget are public facts).
fn log_cold_start(config: &Config, server: &Server, limits: Option<&LimitsConfig>) {
    let issuer = match &config.auth {
        config::AuthSetting::Verify(auth) => auth.issuer.as_str(),
        config::AuthSetting::Unconfigured => "(none: every request is refused)",
        config::AuthSetting::Off => "(off)",
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        tools = server.tools().iter().count(),
        resources = server.resources().len(),
        auth.issuer = issuer,
        response_budget_bytes = config.response_budget,
        rate_limits = limits.map_or("off", |l| l.table.as_str()),
        mcp_path = %config.mcp_path,
        "cold start"
    );
    if config.allowed_hosts == config::HostPolicy::Any {
        tracing::warn!(
            "ALLOWED_HOSTS=*: the Host check is off; only safe behind a gateway that pins the host"
        );
    }
}

/// Runs the Lambda runtime loop with `app` as the handler; the events are converted by
/// [`event`], not by `lambda_http`'s adapter.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub async fn run(app: App) -> Result<(), lambda_http::Error> {
    event::run(app).await
}

/// Structured JSON logs on stdout (CloudWatch parses them), level from `RUST_LOG`.
pub use mcp_lambda::init_tracing;
