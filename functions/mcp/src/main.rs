//! Cold start: configuration, the engine, then the runtime loop.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mcp::init_tracing();
    mcp::run(mcp::app_from_env().await?).await
}
