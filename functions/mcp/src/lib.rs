//! The MCP endpoint as a Lambda function: HTTP in, HTTP out.
//!
//! Everything HTTP-shaped lives here (routing on method and path, `Host` and `Origin`
//! guards, `Accept` and `Content-Type`, body limits, the invocation deadline); everything
//! MCP-shaped lives in [`mcp_protocol`]. `main.rs` only wires the two to the runtime, so
//! tests drive [`App::handle`] directly with the same API Gateway events `cargo lambda
//! invoke` uses.

mod auth;
pub mod config;
mod transport;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use lambda_http::{Body, Request, Response, service_fn};
use mcp_protocol::{RegistryError, Server, Tools};
use mcp_tools::{CursorKey, Store};

pub use config::Config;

/// The function's state: built once per sandbox, shared by every invocation.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: Config,
    pub(crate) server: Server,
    pub(crate) auth: auth::Authenticator,
}

impl App {
    pub fn new(config: Config, server: Server) -> Self {
        let auth = auth::Authenticator::new(&config, &server);
        Self {
            inner: Arc::new(Inner {
                config,
                server,
                auth,
            }),
        }
    }

    /// Answers one HTTP request. Never fails: every problem is an HTTP status with a
    /// JSON-RPC error body.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let started = Instant::now();
        let (response, method) = transport::handle(&self.inner, req).await;
        tracing::info!(
            http.status = response.status().as_u16(),
            rpc.method = method.as_deref().unwrap_or(""),
            duration_ms = started.elapsed().as_millis() as u64,
            "request"
        );
        response
    }
}

/// The server the deployed function serves: the event-store tools over `store` (none without
/// a store, which only tests use).
///
/// # Errors
///
/// Fails if a tool definition is invalid (bad name, bad schema): a cold-start error.
pub fn production_server(
    store: Option<Arc<Store>>,
    response_budget: usize,
) -> Result<Server, RegistryError> {
    let mut tools = Tools::new();
    if let Some(store) = store {
        mcp_tools::register(&mut tools, store)?;
    }
    Ok(Server::builder("event-store-mcp", env!("CARGO_PKG_VERSION"))
        .title("Event store (read-only)")
        .instructions(
            "Read-only access to an incident event store. Every tool is bounded in time and size; \
             narrow the time window or add filters when a result is truncated.",
        )
        .tools(tools)
        .response_budget(response_budget)
        .build())
}

/// The event store from `DATABASE_URL` or `DB_SECRET_ID` (+ `DB_SSLMODE`, `DB_CA_FILE`, ...),
/// `CURSOR_SIGNING_KEY` and `TOOL_STATEMENT_TIMEOUT_MS`. Nothing is connected or fetched yet:
/// the first tool call does that.
///
/// # Errors
///
/// Names the missing or malformed variable.
pub async fn store_from_env() -> anyhow::Result<Arc<Store>> {
    let get = |name: &str| std::env::var(name).ok();
    let db = mcp_db::DbConfig::from_lookup(get).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "DATABASE_URL or DB_SECRET_ID is required: the endpoint's tools read the event store"
        )
    })?;
    let key = get("CURSOR_SIGNING_KEY")
        .ok_or_else(|| anyhow::anyhow!("CURSOR_SIGNING_KEY is required (at least 32 bytes)"))?;
    let statement_timeout = match get("TOOL_STATEMENT_TIMEOUT_MS") {
        None => std::time::Duration::from_millis(5_000),
        Some(v) => std::time::Duration::from_millis(v.parse().map_err(|_| {
            anyhow::anyhow!("TOOL_STATEMENT_TIMEOUT_MS must be milliseconds, got {v:?}")
        })?),
    };
    Ok(Arc::new(Store {
        db: mcp_db::Db::new(db),
        cursor_key: CursorKey::new(key)?,
        statement_timeout,
    }))
}

/// Runs the Lambda runtime loop with `app` as the handler.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub async fn run(app: App) -> Result<(), lambda_http::Error> {
    lambda_http::run(service_fn(move |req: Request| {
        let app = app.clone();
        async move { Ok::<_, Infallible>(app.handle(req).await) }
    }))
    .await
}

/// Structured JSON logs on stdout (CloudWatch parses them), level from `RUST_LOG`.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .without_time()
        .init();
}
