//! Serves the deployed handler over plain HTTP/1.1 on 127.0.0.1, in-process: the same
//! `mcp::App::handle` the Lambda runtime calls, configured from the environment exactly as
//! the function's `main` does, without an emulator in the path. Like Lambda, each of
//! `SANDBOXES` (default 16) app instances (own database connection, own caches) answers one
//! request at a time; each request gets an invocation deadline `FUNCTION_TIMEOUT_MS`
//! (default 29000) away. For load tests and benchmarks only.
//!
//! Usage: `serve PORT` (environment as for the function: DATABASE_URL or DB_SECRET_ID, ...).

/// The deployed function's allocator (functions/mcp/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    mcp::init_tracing();
    let (port, count, timeout_ms) = bench::serve_settings("serve")?;
    let mut apps = Vec::with_capacity(count);
    for _ in 0..count {
        apps.push(mcp::app_from_env().await?);
    }
    bench::serve(port, apps, timeout_ms).await
}
