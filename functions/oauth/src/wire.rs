//! Responses: JSON for the token and registration endpoints, a plain page for errors that
//! must not be redirected, and redirects back to a client. Every error the bridge answers
//! goes through here, and every response says `Cache-Control: no-store` (RFC 6749 §5.1).

use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use lambda_http::{Body, Response};
use serde_json::{Value, json};
use url::Url;

use crate::error::BridgeError;

fn build(status: u16, content_type: &str, body: String) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_str(content_type)
            .unwrap_or(http::HeaderValue::from_static("text/plain")),
    );
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

pub(crate) fn json(status: u16, value: &Value) -> Response<Body> {
    build(status, "application/json", value.to_string())
}

/// An OAuth error as JSON (RFC 6749 §5.2): 503 when a dependency failed, 400 otherwise.
pub(crate) fn json_error(error: &BridgeError) -> Response<Body> {
    log(error);
    let status = match error {
        BridgeError::Refused { .. } => 400,
        BridgeError::Unavailable(_) => 503,
    };
    json(
        status,
        &json!({"error": error.code(), "error_description": error.description()}),
    )
}

/// A token endpoint error. RFC 6749 §5.2: a client that tried to authenticate with the
/// `Authorization` header (`scheme`) and failed gets 401 with a `WWW-Authenticate` challenge
/// of that scheme (RFC 9110 §11.6.1: every 401 carries one); any other error is as
/// [`json_error`] answers it.
pub(crate) fn token_error(
    error: &BridgeError,
    scheme: Option<&str>,
    realm: &str,
) -> Response<Body> {
    let mut response = json_error(error);
    if let (Some(scheme), "invalid_client") = (scheme, error.code()) {
        *response.status_mut() = http::StatusCode::UNAUTHORIZED;
        let challenge = format!("{scheme} realm=\"{}\"", realm.replace(['"', '\\'], ""));
        if let Ok(value) = http::HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(http::header::WWW_AUTHENTICATE, value);
        }
    }
    response
}

/// An error shown to the person in the browser, never redirected: before the client and its
/// redirect URI are known good, a redirect would make the bridge an open redirector (RFC
/// 6749 §4.1.2.1, RFC 9700 §4.11).
pub(crate) fn page(error: &BridgeError) -> Response<Body> {
    log(error);
    let status = if matches!(error, BridgeError::Unavailable(_)) {
        503
    } else {
        400
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>Sign-in failed</title>\
         <h1>Sign-in failed</h1><p>{}</p><p><code>{}</code></p>\
         <p>Go back to the application and connect again.</p>",
        escape(error.description()),
        escape(error.code()),
    );
    build(status, "text/html; charset=utf-8", body)
}

/// An HTML page.
pub(crate) fn html(status: u16, body: String) -> Response<Body> {
    build(status, "text/html; charset=utf-8", body)
}

/// `response`, a redirect, as a 303: the answer to a form POST, which the browser follows
/// with a GET (RFC 9110 §15.4.4).
pub(crate) fn see_other(mut response: Response<Body>) -> Response<Body> {
    if response.status() == http::StatusCode::FOUND {
        *response.status_mut() = http::StatusCode::SEE_OTHER;
    }
    response
}

/// A 302 to `location`.
pub(crate) fn redirect(location: &str) -> Response<Body> {
    let mut response = build(302, "text/plain; charset=utf-8", String::new());
    if let Ok(value) = http::HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// The client's redirect URI with `params` added to its query.
pub(crate) fn with_params(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    match Url::parse(redirect_uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(params);
            url.into()
        }
        Err(_) => redirect_uri.to_owned(),
    }
}

/// An error redirected to a validated redirect URI (RFC 6749 §4.1.2.1), with the client's
/// `state` and this issuer (RFC 9207).
pub(crate) fn redirect_error(
    redirect_uri: &str,
    error: &BridgeError,
    state: Option<&str>,
    issuer: &str,
) -> Response<Body> {
    log(error);
    let mut params = vec![
        ("error", error.code()),
        ("error_description", error.description()),
    ];
    if let Some(state) = state {
        params.push(("state", state));
    }
    params.push(("iss", issuer));
    redirect(&with_params(redirect_uri, &params))
}

fn log(error: &BridgeError) {
    match error {
        BridgeError::Unavailable(detail) => tracing::error!(detail, "dependency failed"),
        BridgeError::Refused { code, description } => {
            tracing::info!(error = code, reason = %description, "refused");
        }
    }
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
