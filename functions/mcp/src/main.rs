//! Cold start: configuration, the engine, then the runtime loop.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mcp::init_tracing();
    let config = mcp::Config::from_env()?;
    let server =
        mcp::production_server(Some(mcp::store_from_env().await?), config.response_budget)?;
    mcp::run(mcp::App::new(config, server)).await
}
