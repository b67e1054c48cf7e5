//! The bare floor for the load benchmark: the benchmark's database work and nothing else.
//! Each request runs exactly the read `query_events` runs for one entity (the same
//! `mcp_db::Db::read`: TLS to the pooler, `BEGIN READ ONLY`, the tenant and timeouts set,
//! the same SELECT (`mcp_tools::QUERY_EVENTS_SQL`) with the same parameters, `COMMIT`) and
//! answers the rows as JSON in the shape the load generator checks, each event written by the
//! endpoint's own writer (`mcp_tools::EventRow`, straight from the row). No auth, no JSON-RPC,
//! no schema validation, no budget, no text mirror: the endpoint's time minus this one is what
//! MCP and its safety cost.
//!
//! Like `serve`, `SANDBOXES` (default 16) database handles each serve one request at a time.
//!
//! Usage: `floor PORT TENANT ENTITY_ID LIMIT` (database environment as for the function).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_postgres::types::Type;

/// The deployed function's allocator (functions/mcp/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Floor {
    dbs: Vec<mcp_db::Db>,
    next: AtomicUsize,
    tenant: String,
    entity: Option<String>,
    limit: i64,
}

/// The rows of one page (and the probe row past it).
async fn rows(floor: &Floor) -> Result<Vec<tokio_postgres::Row>, mcp_db::DbError> {
    let i = floor.next.fetch_add(1, Ordering::Relaxed) % floor.dbs.len();
    let deadline = Instant::now() + Duration::from_secs(5);
    let limit = floor.limit;
    floor.dbs[i]
        .read(&floor.tenant, deadline, |tx| {
            let entity = floor.entity.clone();
            Box::pin(async move {
                let none_text: Option<Vec<String>> = None;
                let none_time: Option<Timestamp> = None;
                let none_id: Option<i64> = None;
                let probe = limit + 1;
                tx.query_and_commit(
                    mcp_tools::QUERY_EVENTS_SQL,
                    &[
                        (&entity, Type::TEXT),
                        (&none_text, Type::TEXT_ARRAY),
                        (&none_time, Type::TIMESTAMPTZ),
                        (&none_time, Type::TIMESTAMPTZ),
                        (&none_text, Type::TEXT_ARRAY),
                        (&none_text, Type::TEXT_ARRAY),
                        (&0i16, Type::INT2),
                        (&none_time, Type::TIMESTAMPTZ),
                        (&none_id, Type::INT8),
                        (&probe, Type::INT8),
                        (&false, Type::BOOL),
                    ],
                )
                .await
            })
        })
        .await
}

/// `{"result":{"structuredContent":{"count":N,"events":[...]}}}`, each event written by the
/// endpoint's writer.
fn page(rows: &[tokio_postgres::Row]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(16 * 1024);
    out.extend_from_slice(
        format!(
            r#"{{"result":{{"structuredContent":{{"count":{},"events":["#,
            rows.len()
        )
        .as_bytes(),
    );
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let event = mcp_tools::EventRow::read(row, false).map_err(|e| e.to_string())?;
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &event);
    }
    out.extend_from_slice(b"]}}}");
    Ok(out)
}

async fn answer(
    floor: Arc<Floor>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let _ = req.into_body().collect().await?;
    let (status, body) = match rows(&floor)
        .await
        .map_err(|e| e.to_string())
        .and_then(|rows| {
            let taken = &rows[..rows.len().min(floor.limit as usize)];
            page(taken)
        }) {
        Ok(body) => (200, body),
        Err(e) => (500, json!({ "error": e }).to_string().into_bytes()),
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut next = |name: &str| {
        args.next()
            .ok_or_else(|| anyhow::anyhow!("usage: floor PORT TENANT ENTITY_ID LIMIT ({name})"))
    };
    let port: u16 = next("PORT")?.parse()?;
    let tenant = next("TENANT")?;
    let entity = Some(next("ENTITY_ID")?);
    let limit: i64 = next("LIMIT")?.parse()?;
    let count: usize = std::env::var("SANDBOXES").map_or(Ok(16), |v| v.parse())?;
    let mut dbs = Vec::with_capacity(count);
    for _ in 0..count {
        let config = mcp_db::DbConfig::from_lookup(|name| std::env::var(name).ok())
            .await?
            .ok_or_else(|| anyhow::anyhow!("DATABASE_URL or DB_SECRET_ID is required"))?;
        dbs.push(mcp_db::Db::new(config));
    }
    let floor = Arc::new(Floor {
        dbs,
        next: AtomicUsize::new(0),
        tenant,
        entity,
        limit,
    });
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    eprintln!("floor: {count} database handles on http://127.0.0.1:{port}");
    loop {
        let (stream, _) = listener.accept().await?;
        let floor = floor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(floor.clone(), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
