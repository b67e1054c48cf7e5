//! The one place that turns decisions into HTTP responses: the engine's replies (status,
//! JSON-RPC body, the `insufficient_scope` challenge) and the transport's own refusals
//! (status, a JSON-RPC error body, and the one header each refusal needs: `Allow`,
//! `Retry-After` or `WWW-Authenticate`).

use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderName, HeaderValue, StatusCode};
use lambda_http::{Body, Response};
use mcp_protocol::Reply;
use serde_json::Value;

/// A refusal decided from the request line, headers or credentials: an HTTP status with a
/// JSON-RPC error body (id null: the message was never read), so no client ever sees an
/// empty error.
pub(crate) struct Rejection {
    status: StatusCode,
    message: String,
    header: Option<(HeaderName, HeaderValue)>,
}

impl Rejection {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            header: None,
        }
    }

    pub(crate) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload too large: the body limit is {limit} bytes"),
        )
    }

    pub(crate) fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.header = Some((name, value));
        self
    }

    /// Adds a `WWW-Authenticate` challenge, when there is one that is a valid header value.
    pub(crate) fn with_challenge(self, challenge: Option<String>) -> Self {
        match challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            Some(value) => self.with_header(WWW_AUTHENTICATE, value),
            None => self,
        }
    }

    pub(crate) fn into_response(self) -> Response<Body> {
        let body = mcp_protocol::error::transport_failure(self.message);
        let mut response = json_response(self.status, &body);
        if let Some((name, value)) = self.header {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// The engine's reply as HTTP. `challenge` builds the `WWW-Authenticate` value for a call
/// refused for missing scopes; a rate-limited call gets `Retry-After`.
pub(crate) fn reply_response(
    reply: &mut Reply,
    challenge: impl FnOnce(&[String]) -> String,
) -> Response<Body> {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match reply.body_json() {
        None => empty(status),
        Some(text) => json_text_response(status, text),
    };
    if let Some(scopes) = &reply.insufficient_scope
        && let Ok(value) = HeaderValue::from_str(&challenge(scopes))
    {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    if let Some(secs) = reply.retry_after_secs {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    // Not `body.to_string()`: Display formats through `fmt::Write` a token at a time, and
    // replies can be hundreds of KiB. Serialising a `Value` cannot fail.
    json_text_response(status, serde_json::to_string(body).unwrap_or_default())
}

fn json_text_response(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub(crate) fn text_response(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = status;
    response
}
