//! Load-benchmark peer: the benchmark's one tool (query_events for an entity) on the official
//! Rust SDK, built the way its examples build a stateless Streamable HTTP server (axum,
//! `StreamableHttpService` without sessions, JSON responses, the `#[tool]` macros), with an
//! axum middleware verifying RS256 tokens through jsonwebtoken and a deadpool of 16
//! tokio-postgres connections over rustls.
//!
//! Environment: PORT, DATABASE_URL, DB_CA_FILE, JWKS_FILE, ISSUER, AUDIENCE.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use tokio_postgres::types::Type;

const SEVERITIES: [&str; 6] = ["debug", "info", "notice", "warning", "error", "critical"];

#[derive(Clone, Deserialize)]
struct Claims {
    tenant_id: Option<String>,
}

struct Auth {
    keys: JwkSet,
    validation: Validation,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct QueryArgs {
    entity_id: String,
    #[serde(default = "default_limit")]
    limit: i64,
}

fn default_limit() -> i64 {
    50
}

#[derive(Serialize, schemars::JsonSchema)]
struct Event {
    id: i64,
    entity_id: String,
    entity_type: String,
    event_type: String,
    severity: String,
    occurred_at: String,
    tags: Vec<String>,
    structured: serde_json::Value,
    ai_summary: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Page {
    count: usize,
    events: Vec<Event>,
    limit: i64,
    truncated: bool,
}

#[derive(Clone)]
struct Peer {
    pool: Pool,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Peer {
    /// Events of the caller's tenant for one entity, newest first.
    #[tool]
    async fn query_events(
        &self,
        Parameters(args): Parameters<QueryArgs>,
        Extension(parts): Extension<http::request::Parts>,
    ) -> Result<Json<Page>, String> {
        let tenant = parts
            .extensions
            .get::<Claims>()
            .and_then(|c| c.tenant_id.clone())
            .ok_or("The token names no tenant.")?;
        let limit = args.limit.clamp(1, 500);
        let mut client = self.pool.get().await.map_err(|e| e.to_string())?;
        let tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .await
            .map_err(|e| e.to_string())?;
        // query_typed: unnamed statements, since the pooler runs in transaction mode (named
        // prepared statements would land on other server connections).
        tx.query_typed(
            "SELECT set_config('app.tenant_id', $1, true)",
            &[(&tenant, Type::TEXT)],
        )
        .await
        .map_err(|e| e.to_string())?;
        let rows = tx
            .query_typed(
                "SELECT id, entity_id, entity_type, event_type, severity, occurred_at, tags, structured, ai_summary \
                 FROM events WHERE entity_id = $1 ORDER BY occurred_at DESC, id DESC LIMIT $2",
                &[(&args.entity_id, Type::TEXT), (&(limit + 1), Type::INT8)],
            )
            .await
            .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        let events: Vec<Event> = rows
            .iter()
            .take(limit as usize)
            .map(|r| Event {
                id: r.get("id"),
                entity_id: r.get("entity_id"),
                entity_type: r.get("entity_type"),
                event_type: r.get("event_type"),
                severity: SEVERITIES
                    .get(r.get::<_, i16>("severity") as usize)
                    .unwrap_or(&"unknown")
                    .to_string(),
                occurred_at: r
                    .get::<_, chrono::DateTime<chrono::Utc>>("occurred_at")
                    .to_rfc3339(),
                tags: r.get("tags"),
                structured: r.get("structured"),
                ai_summary: r.get("ai_summary"),
            })
            .collect();
        Ok(Json(Page {
            count: events.len(),
            truncated: rows.len() as i64 > limit,
            events,
            limit,
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

async fn require_bearer(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let claims = token.and_then(|token| {
        let kid = jsonwebtoken::decode_header(token).ok()?.kid?;
        let key = DecodingKey::from_jwk(auth.keys.find(&kid)?).ok()?;
        jsonwebtoken::decode::<Claims>(token, &key, &auth.validation)
            .ok()
            .map(|d| d.claims)
    });
    match claims {
        Some(claims) => {
            req.extensions_mut().insert(claims);
            next.run(req).await
        }
        None => (
            http::StatusCode::UNAUTHORIZED,
            [(http::header::WWW_AUTHENTICATE, "Bearer")],
        )
            .into_response(),
    }
}

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| anyhow::anyhow!("{name} is required"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut std::fs::read(env("DB_CA_FILE")?)?.as_slice()) {
        roots.add(cert?)?;
    }
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let mut pg: tokio_postgres::Config = env("DATABASE_URL")?.parse()?;
    pg.ssl_mode(tokio_postgres::config::SslMode::Require);
    let manager = Manager::from_config(
        pg,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager).max_size(16).build()?;

    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[env("ISSUER")?]);
    validation.set_audience(&[env("AUDIENCE")?]);
    let auth = Arc::new(Auth {
        keys: serde_json::from_slice(&std::fs::read(env("JWKS_FILE")?)?)?,
        validation,
    });

    let service = StreamableHttpService::new(
        move || {
            Ok(Peer {
                pool: pool.clone(),
                tool_router: Peer::tool_router(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    );
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(auth, require_bearer));
    let port: u16 = env("PORT")?.parse()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("peer-rmcp on http://127.0.0.1:{port}/mcp");
    axum::serve(listener, app).await?;
    Ok(())
}
