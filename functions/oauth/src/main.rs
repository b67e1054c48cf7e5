//! Cold start: settings and secrets, then the runtime loop.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    oauth::init_tracing();
    let app = oauth::App::from_env().await?;
    lambda_http::run(lambda_http::service_fn(move |req| {
        let app = app.clone();
        async move { Ok::<_, std::convert::Infallible>(app.handle(req).await) }
    }))
    .await
}
