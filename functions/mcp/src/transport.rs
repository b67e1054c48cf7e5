//! Streamable HTTP, JSON responses only, no sessions.

use std::sync::Arc;
use std::time::SystemTime;

use http::header::{
    ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ALLOW,
    CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Request, Response};
use mcp_auth::AuthError;
use mcp_protocol::telemetry::{self as collector, SpanKind, SpanRecord};
use mcp_protocol::{HeaderField, Incoming};

use crate::authority::{host_of, origin_of};
use crate::config::{Config, HostPolicy, OriginPolicy};
use crate::metrics::RequestTrace;
use crate::state::Inner;
use crate::wire::{Rejection, empty, json_response, reply_response, text_response};

/// Handles one request; also returns what it did, for the request's log line and metrics.
pub(crate) async fn handle(app: &Inner, req: Request) -> (Response<Body>, RequestTrace) {
    let config = &app.config;
    let mut trace = RequestTrace::default();
    let origin = match check_host_and_origin(config, req.headers()) {
        Ok(origin) => origin,
        Err(rejection) => return (rejection.into_response(), trace),
    };
    let mut response = route(app, req, &mut trace).await;
    if let Some(origin) = origin {
        cors_headers(&mut response, &origin);
    }
    (response, trace)
}

async fn route(app: &Inner, req: Request, trace: &mut RequestTrace) -> Response<Body> {
    let config = &app.config;
    let path = req.uri().path();
    let is_mcp = path == config.mcp_path;
    let is_metadata = path == METADATA_PATH
        || path
            .strip_prefix(METADATA_PATH)
            .is_some_and(|rest| rest == config.mcp_path);
    if req.method() == Method::OPTIONS && (is_mcp || is_metadata) {
        return preflight();
    }
    if is_metadata {
        return metadata(app, req.method());
    }
    if path == APPS_CHALLENGE_PATH {
        return apps_challenge(config, req.method());
    }
    if let Err(rejection) = check_request(config, &req) {
        return rejection.into_response();
    }
    let deadline = mcp_lambda::deadline(&req, config.deadline_margin);
    let headers = req.headers();
    // Authentication comes before the body is even parsed: nothing about the message is
    // looked at on behalf of an unknown caller.
    let started = SystemTime::now();
    let authenticated = app.auth.authenticate(headers, deadline).await;
    if collector::enabled() {
        authentication_span(started, authenticated.as_ref().err());
    }
    let caller = match authenticated {
        Ok(caller) => caller,
        Err(error) => {
            trace.auth_denied = !matches!(error, AuthError::KeysUnavailable);
            return app.auth.rejection(&error).into_response();
        }
    };
    trace.principal.clone_from(&caller.subject_hash);
    // `Body` derefs to its bytes (empty for `Body::Empty`); base64 events arrive decoded.
    let body: &[u8] = req.body();
    if body.len() > config.max_body_bytes {
        return Rejection::too_large(config.max_body_bytes).into_response();
    }
    if collector::enabled() {
        trace.parent = crate::traceparent::meta_parent(body);
    }
    let incoming = Incoming {
        body,
        protocol_version: header_field(headers, "mcp-protocol-version"),
        mcp_method: header_field(headers, "mcp-method"),
        mcp_name: header_field(headers, "mcp-name"),
        deadline,
        caller: Arc::new(caller),
    };
    let mut reply = app.server.handle(incoming).await;
    let response = reply_response(&mut reply, |scopes| app.auth.scope_challenge(scopes));
    trace.auth_denied = reply.insufficient_scope.is_some();
    trace.method = reply.method;
    trace.call = reply.call;
    trace.version = Some(reply.version);
    response
}

/// The span of the bearer token's check: how long it took and how it ended, never the
/// token or its claims.
fn authentication_span(start: SystemTime, error: Option<&AuthError>) {
    let mut attributes = vec![(
        "mcp.auth.outcome",
        if error.is_some() { "refused" } else { "ok" }.into(),
    )];
    if let Some(error) = error {
        attributes.push(("error.type", error.reason().into()));
    }
    collector::record(SpanRecord {
        name: "authenticate".to_owned(),
        kind: SpanKind::Internal,
        start,
        end: SystemTime::now(),
        attributes,
        failed: error.is_some(),
    });
}

const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// RFC 9728 protected resource metadata, unauthenticated (clients read it to learn how
/// to get a token). Served at the root form and the path-inserted form for the MCP path.
fn metadata(app: &Inner, method: &Method) -> Response<Body> {
    if let Some(refusal) = not_a_read(method, "the protected resource metadata") {
        return refusal;
    }
    match app.auth.metadata() {
        Some(doc) => json_response(StatusCode::OK, doc),
        None => Rejection::new(
            StatusCode::NOT_FOUND,
            "Not found: this server has no authorization configured",
        )
        .into_response(),
    }
}

/// The 405 for anything but GET (or HEAD) on a document that is only read.
fn not_a_read(method: &Method, what: &str) -> Option<Response<Body>> {
    (method != Method::GET && method != Method::HEAD).then(|| {
        Rejection::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("Method not allowed: {what} is read with GET"),
        )
        .with_header(ALLOW, HeaderValue::from_static("GET"))
        .into_response()
    })
}

/// Where OpenAI looks for an app's domain verification token.
const APPS_CHALLENGE_PATH: &str = "/.well-known/openai-apps-challenge";

/// The domain verification token, as plain text, unauthenticated (OpenAI reads it before
/// any sign-in); nothing else is ever served on this path.
fn apps_challenge(config: &Config, method: &Method) -> Response<Body> {
    if let Some(refusal) = not_a_read(method, "the verification token") {
        return refusal;
    }
    match &config.openai_apps_challenge {
        Some(token) => text_response(StatusCode::OK, token),
        None => Rejection::new(
            StatusCode::NOT_FOUND,
            "Not found: no OpenAI apps verification token is configured",
        )
        .into_response(),
    }
}

/// Headers browsers need to read our answers (the MCP headers and the auth challenge).
fn cors_headers(response: &mut Response<Body>, origin: &HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("WWW-Authenticate, Mcp-Protocol-Version, Mcp-Session-Id"),
    );
    headers.append(VARY, HeaderValue::from_static("Origin"));
}

/// CORS preflight: what a browser may send. Host and Origin were checked already.
fn preflight() -> Response<Body> {
    let mut response = empty(StatusCode::NO_CONTENT);
    let headers = response.headers_mut();
    headers.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, GET, OPTIONS"),
    );
    headers.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID",
        ),
    );
    headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

/// The DNS-rebinding and cross-origin guards, before anything else. Returns the request's
/// `Origin` when it is present and allowed (it is echoed in CORS headers).
fn check_host_and_origin(
    config: &Config,
    headers: &HeaderMap,
) -> Result<Option<HeaderValue>, Rejection> {
    if !host_allowed(&config.allowed_hosts, headers) {
        return Err(Rejection::new(
            StatusCode::FORBIDDEN,
            "Forbidden: the Host header names a host this endpoint does not serve",
        ));
    }
    // "If the Origin header is present and invalid, servers MUST respond with HTTP 403
    // Forbidden" (2025-11-25 transports §Security Warning). Absent Origin: not a browser.
    if !origin_allowed(&config.allowed_origins, headers) {
        return Err(Rejection::new(
            StatusCode::FORBIDDEN,
            "Forbidden: requests from this Origin are not allowed",
        ));
    }
    Ok(headers.get(ORIGIN).cloned())
}

/// Everything about an MCP POST decided from the request line and headers alone.
fn check_request(config: &Config, req: &Request) -> Result<(), Rejection> {
    let headers = req.headers();
    if req.uri().path() != config.mcp_path {
        return Err(Rejection::new(
            StatusCode::NOT_FOUND,
            format!("Not found: the MCP endpoint is {}", config.mcp_path),
        ));
    }
    if req.method() != Method::POST {
        // No SSE stream to offer on GET (2025-11-25 transports §Listening for Messages: "or
        // else return HTTP 405"), no session to delete (§Session Management: "MAY respond
        // ... with HTTP 405"), and 2026-07-28 is POST only.
        return Err(Rejection::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed: send JSON-RPC messages with POST",
        )
        .with_header(ALLOW, HeaderValue::from_static("POST")));
    }
    if !accepts_json(headers) {
        return Err(Rejection::new(
            StatusCode::NOT_ACCEPTABLE,
            "Not acceptable: this endpoint only answers with application/json",
        ));
    }
    if !is_json_content_type(headers) {
        return Err(Rejection::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported media type: the body must be application/json",
        ));
    }
    // Refuse an announced oversize body without looking at it.
    let announced = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > config.max_body_bytes as u64) {
        return Err(Rejection::too_large(config.max_body_bytes));
    }
    Ok(())
}

fn header_field<'a>(headers: &'a HeaderMap, name: &str) -> HeaderField<'a> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => HeaderField::Absent,
        (Some(v), None) => v.to_str().map_or(HeaderField::Invalid, HeaderField::One),
        (Some(_), Some(_)) => HeaderField::Invalid,
    }
}

fn is_loopback_host(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
}

fn host_allowed(policy: &HostPolicy, headers: &HeaderMap) -> bool {
    if *policy == HostPolicy::Any {
        return true;
    }
    let mut hosts = headers.get_all(HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => match h.to_str().ok().and_then(host_of) {
            Some(host) => host,
            None => return false,
        },
        // No Host at all (a direct invoke of a hand-written event) is not a browser being
        // rebound; two Host headers are an attack.
        (None, _) => return true,
        (Some(_), Some(_)) => return false,
    };
    match policy {
        HostPolicy::Loopback => is_loopback_host(&host),
        HostPolicy::List(allowed) => allowed.contains(&host),
        HostPolicy::Any => true,
    }
}

fn origin_allowed(policy: &OriginPolicy, headers: &HeaderMap) -> bool {
    let mut origins = headers.get_all(ORIGIN).iter();
    let origin = match (origins.next(), origins.next()) {
        (None, _) => return true,
        (Some(o), None) => match o.to_str() {
            Ok(o) => o.trim().to_ascii_lowercase(),
            Err(_) => return false,
        },
        (Some(_), Some(_)) => return false,
    };
    match policy {
        OriginPolicy::List(allowed) => allowed.contains(&origin),
        OriginPolicy::Loopback => origin_of(&origin).is_some_and(|(scheme, host)| {
            matches!(scheme.as_str(), "http" | "https") && is_loopback_host(&host)
        }),
    }
}

/// True unless the client's `Accept` rules out `application/json`. A missing header means
/// "anything" (RFC 9110 §12.5.1). Clients list `application/json, text/event-stream`;
/// browsers send long lists with parameters and `q` weights, all tolerated.
fn accepts_json(headers: &HeaderMap) -> bool {
    let values: Vec<&HeaderValue> = headers.get_all(ACCEPT).iter().collect();
    if values.is_empty() {
        return true;
    }
    values
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            !refused && matches!(media.as_str(), "application/json" | "application/*" | "*/*")
        })
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn accept_tolerates_parameters_lists_and_wildcards() {
        for ok in [
            "application/json",
            "application/json, text/event-stream",
            "text/event-stream, application/json; charset=utf-8",
            "text/html,application/xhtml+xml,*/*;q=0.8",
            "application/*",
            "APPLICATION/JSON",
        ] {
            assert!(accepts_json(&headers(&[("accept", ok)])), "{ok}");
        }
        assert!(accepts_json(&headers(&[])));
        for bad in [
            "text/event-stream",
            "text/html",
            "application/json;q=0",
            "*/*; q=0.0",
        ] {
            assert!(!accepts_json(&headers(&[("accept", bad)])), "{bad}");
        }
    }

    #[test]
    fn host_names_are_compared_without_port_or_case() {
        let loopback = HostPolicy::Loopback;
        assert!(host_allowed(
            &loopback,
            &headers(&[("host", "127.0.0.1:9000")])
        ));
        assert!(!host_allowed(
            &loopback,
            &headers(&[("host", "evil.example.com")])
        ));
        assert!(!host_allowed(
            &loopback,
            &headers(&[("host", "localhost.evil.com")])
        ));
        assert!(!host_allowed(
            &loopback,
            &headers(&[("host", "localhost"), ("host", "evil.example")])
        ));
        let listed = HostPolicy::List(vec!["api.example.com".into()]);
        assert!(host_allowed(
            &listed,
            &headers(&[("host", "API.example.com:443")])
        ));
        assert!(!host_allowed(&listed, &headers(&[("host", "localhost")])));
        // Not a host at all: refused, whatever it starts with.
        for bad in [
            "localhost:9000@evil.example",
            "[::1]evil.example",
            "127.0.0.1:x",
        ] {
            assert!(
                !host_allowed(&loopback, &headers(&[("host", bad)])),
                "{bad}"
            );
        }
    }

    #[test]
    fn origins_are_allowed_only_when_absent_or_listed() {
        let loopback = OriginPolicy::Loopback;
        assert!(origin_allowed(&loopback, &headers(&[])));
        assert!(origin_allowed(
            &loopback,
            &headers(&[("origin", "http://localhost:6274")])
        ));
        assert!(origin_allowed(
            &loopback,
            &headers(&[("origin", "http://[::1]:3000")])
        ));
        for bad in [
            "http://evil.example",
            "null",
            "http://localhost.evil.example",
            "file://",
            "http://127.0.0.1:9000@evil.example",
            "http://[::1]evil.example",
            "ftp://localhost",
        ] {
            assert!(
                !origin_allowed(&loopback, &headers(&[("origin", bad)])),
                "{bad}"
            );
        }
        let listed = OriginPolicy::List(vec!["https://app.example".into()]);
        assert!(origin_allowed(
            &listed,
            &headers(&[("origin", "https://APP.example")])
        ));
        assert!(!origin_allowed(
            &listed,
            &headers(&[("origin", "http://localhost")])
        ));
    }

    #[test]
    fn repeated_or_non_ascii_protocol_headers_are_invalid() {
        let map = headers(&[("mcp-method", "tools/list"), ("mcp-method", "ping")]);
        assert_eq!(header_field(&map, "mcp-method"), HeaderField::Invalid);
        let mut map = HeaderMap::new();
        map.insert("mcp-name", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        assert_eq!(header_field(&map, "mcp-name"), HeaderField::Invalid);
        assert_eq!(header_field(&map, "mcp-method"), HeaderField::Absent);
    }
}
