//! Cold start: settings and secrets, then the runtime loop.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    oauth::init_tracing();
    oauth::run(oauth::App::from_env().await?).await
}
