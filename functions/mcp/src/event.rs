//! The Lambda event in and out, through `mcp_lambda`, which converts events itself instead of
//! by `lambda_http`'s adapter (whose conversion panics on a malformed `Host` or
//! `X-Forwarded-Proto`). An event that cannot become a request is a 400 with a JSON-RPC
//! error body. The authority is not part of the URI built: the guards read the `Host` header
//! itself, strictly (`authority.rs`).

use std::future::Future;

use http::StatusCode;
use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{self, LambdaEvent};
use lambda_http::{Body, Request, Response};

use crate::app::App;
use crate::wire::Rejection;

impl mcp_lambda::Handler for App {
    fn handle(&self, req: Request) -> impl Future<Output = Response<Body>> + Send {
        App::handle(self, req)
    }

    fn refuse(&self, reason: &'static str) -> Response<Body> {
        tracing::warn!(reason, "event refused before the handler");
        Rejection::new(StatusCode::BAD_REQUEST, format!("Bad request: {reason}")).into_response()
    }
}

/// Runs the Lambda runtime loop with `app` answering API Gateway HTTP API (v2) events,
/// which is also what function URLs and `cargo lambda` send.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub(crate) async fn run(app: App) -> Result<(), lambda_runtime::Error> {
    mcp_lambda::run(app).await
}

impl App {
    /// One invocation: the event made a request (or refused), answered, and the answer made
    /// the event's response.
    pub async fn invoke(
        &self,
        event: LambdaEvent<ApiGatewayV2httpRequest>,
    ) -> ApiGatewayV2httpResponse {
        mcp_lambda::invoke(self, event).await
    }
}
