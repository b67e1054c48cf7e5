//! The conformance fixture build with authentication on: same fixtures, bearer tokens
//! verified exactly as the deployed function does. The suite itself cannot send a token,
//! so CI runs it through a loopback proxy that adds one (`auth_proxy.mjs`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mcp::init_tracing();
    // `AUTH_MODE` is set to `off` for this package's other binary; this one never honours it.
    let config = mcp::Config::from_lookup(|name| {
        (name != "AUTH_MODE").then(|| std::env::var(name).ok())?
    })?;
    let server = conformance::fixture_server()?;
    mcp::run(mcp::App::new(config, server)).await
}
