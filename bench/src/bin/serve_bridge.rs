//! Serves the OAuth bridge's handler (`oauth::App::handle`, configured from the environment
//! as the `oauth` function's `main` does) over plain HTTP/1.1 on 127.0.0.1, in-process, as
//! `serve` serves the endpoint: `SANDBOXES` (default 16) app instances, each with its own AWS
//! clients and key cache, one request at a time each. Its issuer is `http://127.0.0.1:PORT`
//! (no emulator prefix). For `bench/bridge` only.
//!
//! Usage: `serve_bridge PORT` (environment as for the function: OAUTH_ISSUER, ...).

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    oauth::init_tracing();
    let (port, count, timeout_ms) = bench::serve_settings("serve_bridge")?;
    let mut apps = Vec::with_capacity(count);
    for _ in 0..count {
        apps.push(oauth::App::from_env().await?);
    }
    bench::serve(port, apps, timeout_ms).await
}
