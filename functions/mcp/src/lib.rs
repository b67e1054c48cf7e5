//! The MCP endpoint as a Lambda function: HTTP in, HTTP out.
//!
//! Everything HTTP-shaped lives here (routing on method and path, `Host` and `Origin`
//! guards, `Accept` and `Content-Type`, body limits, the invocation deadline); everything
//! MCP-shaped lives in [`mcp_protocol`]. `main.rs` only wires the two to the runtime, so
//! tests drive [`App::handle`] directly with the same API Gateway events `cargo lambda
//! invoke` uses.

mod app;
mod auth;
mod authority;
pub mod config;
mod event;
pub mod limits;
pub mod metrics;
mod state;
pub mod telemetry;
mod traceparent;
mod transport;
mod wire;

use std::sync::Arc;

use mcp_env::Env;
use mcp_protocol::{Prompts, Resources, Server, Tools};
use mcp_tools::{CursorKey, EventLinks, Store};

pub use app::App;
pub use config::Config;
pub use limits::{DynamoLimiter, LimitsConfig};
pub use metrics::{MetricSink, stdout_sink};
pub use telemetry::TelemetryConfig;

/// The server the deployed function serves: the event-store tools, resources and prompts
/// over `store`.
///
/// # Errors
///
/// Fails if a tool or resource definition is invalid (bad name, schema or URI template):
/// a cold-start error, caught by tests.
pub fn production_server(store: Arc<Store>, response_budget: usize) -> anyhow::Result<Server> {
    let mut tools = Tools::new();
    mcp_tools::register(&mut tools, store.clone())?;
    let mut resources = Resources::new();
    mcp_tools::register_resources(&mut resources, store.clone())?;
    let mut prompts = Prompts::new();
    mcp_tools::register_prompts(&mut prompts, store)?;
    Ok(Server::builder("event-store-mcp", env!("CARGO_PKG_VERSION"))
        .title("Event store (read-only)")
        .instructions(
            "Read-only access to an incident event store. Every tool is bounded in time and size; \
             narrow the time window or add filters when a result is truncated.",
        )
        .tools(tools)
        .resources(resources)
        .prompts(prompts)
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
    let telemetry = TelemetryConfig::from_env(&Env::process())?;
    log_cold_start(&config, &server, limits.as_ref(), telemetry.as_ref());
    let app = App::new(config, server);
    Ok(match telemetry {
        Some(telemetry) => app.traced(telemetry),
        None => app,
    })
}

/// One line per sandbox saying what it serves: enough to tell from the logs which build
/// and settings answered, and nothing secret (the issuer and budget are public facts).
fn log_cold_start(
    config: &Config,
    server: &Server,
    limits: Option<&LimitsConfig>,
    telemetry: Option<&TelemetryConfig>,
) {
    let issuer = match &config.auth {
        config::AuthSetting::Verify(auth) => auth.issuer.as_str(),
        config::AuthSetting::Unconfigured => "(none: every request is refused)",
        config::AuthSetting::Off => "(off)",
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        tools = server.tools().iter().count(),
        resources = server.resources().len(),
        prompts = server.prompts().len(),
        auth.issuer = issuer,
        response_budget_bytes = config.response_budget,
        rate_limits = limits.map_or("off", |l| l.table.as_str()),
        traces = telemetry.map_or("off", |t| t.endpoint.as_str()),
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
