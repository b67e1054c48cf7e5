//! The Lambda event in and out, converted here instead of by `lambda_http`'s adapter, whose
//! conversion panics on input a client controls: it builds the request URL with
//! `Url::parse(..).unwrap()` from `Host` and `X-Forwarded-Proto` (a non-numeric port, text
//! after an IPv6 literal, `X-Forwarded-Proto: 1`) and decodes a base64 body with `expect`.
//! A panic there is a 500 naming the panic, before any of our code runs. Here the handler
//! gets only requests that are well-formed, and an event that cannot become one is a 400
//! with a JSON-RPC error body. The authority is not part of the URI we build: the guards
//! read the `Host` header itself, strictly (`authority.rs`).

use std::convert::Infallible;

use base64::Engine as _;
use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderValue, StatusCode};
use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{self, LambdaEvent};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response, service_fn};

use crate::App;
use crate::wire::Rejection;

/// Runs the Lambda runtime loop with `app` answering API Gateway HTTP API (v2) events,
/// which is also what function URLs and `cargo lambda` send.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub(crate) async fn run(app: App) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<ApiGatewayV2httpRequest>| {
            let app = app.clone();
            async move { Ok::<_, Infallible>(app.invoke(event).await) }
        },
    ))
    .await
}

impl App {
    /// One invocation: the event made a request (or refused), answered, and the answer made
    /// the event's response.
    pub async fn invoke(
        &self,
        event: LambdaEvent<ApiGatewayV2httpRequest>,
    ) -> ApiGatewayV2httpResponse {
        let LambdaEvent { payload, context } = event;
        let response = match request_from(payload) {
            Ok(req) => self.handle(req.with_lambda_context(context)).await,
            Err(reason) => {
                tracing::warn!(reason, "event refused before the handler");
                Rejection::new(StatusCode::BAD_REQUEST, format!("Bad request: {reason}"))
                    .into_response()
            }
        };
        response_from(response)
    }
}

/// The request an event describes: method, path and query, headers (cookies folded back
/// into `Cookie`), body, and the gateway's request context.
fn request_from(event: ApiGatewayV2httpRequest) -> Result<Request, &'static str> {
    let raw_path = event.raw_path.unwrap_or_default();
    let mut uri = with_stage(event.request_context.stage.as_deref(), &raw_path);
    if let Some(query) = event.raw_query_string.as_deref().filter(|q| !q.is_empty()) {
        uri.push('?');
        uri.push_str(query);
    }
    let uri = http::Uri::try_from(uri).map_err(|_| "the path or query is not a valid URI")?;
    if uri.path().is_empty() || !uri.path().starts_with('/') || uri.authority().is_some() {
        return Err("the path must be an absolute path");
    }
    let body = match (event.body, event.is_base64_encoded) {
        (None, _) => Body::Empty,
        (Some(text), false) => Body::Text(text),
        (Some(text), true) => Body::Binary(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| "the body is marked base64 but is not")?,
        ),
    };
    let mut headers = event.headers;
    if let Some(cookies) = event.cookies
        && let Ok(value) = HeaderValue::from_str(&cookies.join("; "))
    {
        headers.insert(COOKIE, value);
    }
    let method = event.request_context.http.method.clone();
    let mut req = http::Request::new(body);
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    Ok(req.with_request_context(RequestContext::ApiGatewayV2(event.request_context)))
}

/// The path as `lambda_http` presents it, so `MCP_PATH` means what it meant: a named stage
/// (not `$default`) prefixes the path unless it is already there, or
/// `AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH` is set.
fn with_stage(stage: Option<&str>, path: &str) -> String {
    let stage = match stage {
        Some(stage) if stage != "$default" && !stage.is_empty() => stage,
        _ => return path.to_owned(),
    };
    if std::env::var_os("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH").is_some()
        || path.starts_with(&format!("/{stage}/"))
    {
        return path.to_owned();
    }
    format!("/{stage}{path}")
}

/// The event response for `response`: status, headers (`Set-Cookie` moved to `cookies`, as
/// the HTTP API expects), and the body, base64 when binary.
fn response_from(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut headers = parts.headers;
    let cookies = headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    headers.remove(SET_COOKIE);
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        body => Some(body),
    };
    out.headers = headers;
    out.cookies = cookies;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_prefix_the_path_as_lambda_http_does() {
        assert_eq!(with_stage(None, "/mcp"), "/mcp");
        assert_eq!(with_stage(Some("$default"), "/mcp"), "/mcp");
        assert_eq!(with_stage(Some("prod"), "/mcp"), "/prod/mcp");
        assert_eq!(with_stage(Some("prod"), "/prod/mcp"), "/prod/mcp");
    }
}
