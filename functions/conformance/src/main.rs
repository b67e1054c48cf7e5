//! The conformance fixture build: the production engine and HTTP layer with the suite's
//! fixtures registered. It exists so `@modelcontextprotocol/conformance` can score the
//! engine; the deployed `mcp` function does not link this crate.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mcp::init_tracing();
    let config = mcp::Config::from_env_allowing_auth_off()?;
    let server = conformance::fixture_server()?;
    mcp::run(mcp::App::new(config, server)).await
}
