//! Serves the deployed handler over plain HTTP/1.1 on 127.0.0.1, in-process: the same
//! `mcp::App::handle` the Lambda runtime calls, configured from the environment exactly as
//! the function's `main` does, without an emulator in the path. Like Lambda, each of
//! `SANDBOXES` (default 16) app instances (own database connection, own caches) answers one
//! request at a time; each request gets an invocation deadline `FUNCTION_TIMEOUT_MS`
//! (default 29000) away. For load tests and benchmarks only.
//!
//! Usage: `serve PORT` (environment as for the function: DATABASE_URL or DB_SECRET_ID, ...).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lambda_http::RequestExt;
use tokio::net::TcpListener;
use tokio::sync::Mutex;

/// The deployed function's allocator (functions/mcp/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Sandboxes {
    apps: Vec<Mutex<mcp::App>>,
    next: AtomicUsize,
    timeout_ms: u64,
}

async fn answer(
    sandboxes: Arc<Sandboxes>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut ctx = lambda_http::lambda_runtime::Context::default();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    ctx.deadline = now + sandboxes.timeout_ms;
    ctx.request_id = format!("local-{now}");
    let request = http::Request::from_parts(parts, lambda_http::Body::from(body.to_vec()))
        .with_lambda_context(ctx);
    let i = sandboxes.next.fetch_add(1, Ordering::Relaxed) % sandboxes.apps.len();
    let app = sandboxes.apps[i].lock().await;
    let response = app.handle(request).await;
    let (parts, body) = response.into_parts();
    // Moved, not copied: the adapter's own work is not the handler's.
    let bytes = match body {
        lambda_http::Body::Empty => Bytes::new(),
        lambda_http::Body::Text(text) => Bytes::from(text),
        lambda_http::Body::Binary(bytes) => Bytes::from(bytes),
        other => Bytes::copy_from_slice(&other),
    };
    Ok(hyper::Response::from_parts(parts, Full::new(bytes)))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp::init_tracing();
    let port: u16 = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: serve PORT"))?
        .parse()?;
    let count: usize = std::env::var("SANDBOXES").map_or(Ok(16), |v| v.parse())?;
    let timeout_ms: u64 = std::env::var("FUNCTION_TIMEOUT_MS").map_or(Ok(29_000), |v| v.parse())?;
    let mut apps = Vec::with_capacity(count);
    for _ in 0..count {
        apps.push(Mutex::new(mcp::app_from_env().await?));
    }
    let sandboxes = Arc::new(Sandboxes {
        apps,
        next: AtomicUsize::new(0),
        timeout_ms,
    });
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    eprintln!("serving {count} sandboxes on http://127.0.0.1:{port}");
    loop {
        let (stream, _) = listener.accept().await?;
        let sandboxes = sandboxes.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(sandboxes.clone(), req));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
