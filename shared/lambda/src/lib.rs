//! What both HTTP functions (the endpoint and the OAuth bridge) share with the Lambda runtime.
//!
//! The events are converted here instead of by `lambda_http`'s adapter, whose conversion panics
//! on input a client controls: it builds the request URL with `Url::parse(..).unwrap()` from
//! `Host` and `X-Forwarded-Proto` (a non-numeric port, text after an IPv6 literal,
//! `X-Forwarded-Proto: 1`) and decodes a base64 body with `expect`. A panic there is a 500
//! naming the panic, before any of the function's code runs. Here a handler gets only
//! requests that are well-formed, and an event that cannot become one is refused in the
//! function's own words ([`Handler::refuse`]). The authority is not part of the URI built: a
//! function that cares reads the `Host` header itself.

use std::convert::Infallible;
use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use http::HeaderValue;
use http::header::{COOKIE, SET_COOKIE};
use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{self, LambdaEvent};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response, service_fn};

/// A function that answers HTTP requests.
pub trait Handler: Clone + Send + Sync + 'static {
    /// Answers one well-formed request (the Lambda context attached); never fails.
    fn handle(&self, req: Request) -> impl Future<Output = Response<Body>> + Send;
    /// The answer to an event that is no request (`reason` says why, in words safe to send).
    fn refuse(&self, reason: &'static str) -> Response<Body>;
}

/// Runs the Lambda runtime loop with `handler` answering API Gateway HTTP API (v2) events,
/// which is also what function URLs and `cargo lambda` send.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub async fn run<H: Handler>(handler: H) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<ApiGatewayV2httpRequest>| {
            let handler = handler.clone();
            async move { Ok::<_, Infallible>(invoke(&handler, event).await) }
        },
    ))
    .await
}

/// One invocation: the event made a request (or refused), answered, and the answer made the
/// event's response.
pub async fn invoke<H: Handler>(
    handler: &H,
    event: LambdaEvent<ApiGatewayV2httpRequest>,
) -> ApiGatewayV2httpResponse {
    let LambdaEvent { payload, context } = event;
    let response = match request_from(payload) {
        Ok(req) => handler.handle(req.with_lambda_context(context)).await,
        Err(reason) => handler.refuse(reason),
    };
    response_from(response)
}

/// The request an event describes: method, path and query, headers (cookies folded back
/// into `Cookie`), body, and the gateway's request context.
///
/// # Errors
///
/// Why the event is no request, in words safe to send to the client.
pub fn request_from(event: ApiGatewayV2httpRequest) -> Result<Request, &'static str> {
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

/// The path as `lambda_http` presents it, so configured paths mean what they meant: a named
/// stage (not `$default`) prefixes the path unless it is already there, or
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
pub fn response_from(response: Response<Body>) -> ApiGatewayV2httpResponse {
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

/// When the answer must be ready: the invocation's deadline less `margin` (time kept to
/// serialise and return the answer), on the monotonic clock; `None` outside Lambda.
pub fn deadline(req: &Request, margin: Duration) -> Option<Instant> {
    req.lambda_context_ref()
        .map(|ctx| invocation_deadline(ctx.deadline, margin, SystemTime::now(), Instant::now()))
}

/// Deadlines below this many milliseconds are not epoch times (it is 2001-09-09).
const EPOCH_MS_FLOOR: u64 = 1_000_000_000_000;

/// The Lambda context gives the deadline as wall-clock epoch milliseconds; waits are measured
/// on the monotonic clock, so the remaining time is converted once, here.
///
/// `cargo lambda watch` (1.9) sends the function's timeout in milliseconds instead of an
/// epoch deadline; a value that small cannot be a real deadline, so it is read as the time
/// remaining, which is what the emulator means.
fn invocation_deadline(
    deadline_ms: u64,
    margin: Duration,
    now: SystemTime,
    now_instant: Instant,
) -> Instant {
    let remaining = if deadline_ms < EPOCH_MS_FLOOR {
        Duration::from_millis(deadline_ms)
    } else {
        (UNIX_EPOCH + Duration::from_millis(deadline_ms))
            .duration_since(now)
            .unwrap_or(Duration::ZERO)
    };
    now_instant + remaining.saturating_sub(margin)
}

/// Structured JSON logs on stdout (CloudWatch parses them), level from `RUST_LOG` (default
/// `info`), flattened so that CloudWatch Logs Insights reads `duration_ms`, ... as fields.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_env_filter(filter)
        .with_current_span(false)
        .with_target(false)
        .without_time()
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_keeps_the_margin_and_never_goes_negative() {
        let epoch_ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        // Whole milliseconds, as the Lambda context carries them.
        let wall = UNIX_EPOCH + Duration::from_millis(epoch_ms(SystemTime::now()));
        let mono = Instant::now();
        let second = Duration::from_secs(1);
        let d = invocation_deadline(epoch_ms(wall + 10 * second), second, wall, mono);
        assert_eq!(d - mono, 9 * second);
        let tight = invocation_deadline(epoch_ms(wall + second / 2), second, wall, mono);
        assert_eq!(tight, mono);
        let past = invocation_deadline(epoch_ms(wall - 5 * second), second, wall, mono);
        assert_eq!(past, mono);
        // The emulator's relative form: 600000 means ten minutes from now.
        let emulated = invocation_deadline(600_000, second, wall, mono);
        assert_eq!(emulated - mono, 599 * second);
    }

    #[test]
    fn stages_prefix_the_path_as_lambda_http_does() {
        assert_eq!(with_stage(None, "/mcp"), "/mcp");
        assert_eq!(with_stage(Some("$default"), "/mcp"), "/mcp");
        assert_eq!(with_stage(Some("prod"), "/mcp"), "/prod/mcp");
        assert_eq!(with_stage(Some("prod"), "/prod/mcp"), "/prod/mcp");
    }
}
