//! Authentication at the HTTP boundary: bearer extraction, verification, challenges, and
//! the protected resource metadata document (RFC 9728).

use std::time::Instant;

use http::header::{AUTHORIZATION, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_auth::{AuthError, Verifier};
use mcp_protocol::{Caller, Server};
use serde_json::{Value, json};

use crate::config::{AuthSetting, Config};
use crate::wire::Rejection;

/// How this sandbox authenticates requests.
pub(crate) enum Authenticator {
    Verify {
        verifier: Box<Verifier>,
        /// Where the metadata document is published (the `resource_metadata` of challenges).
        metadata_url: String,
        metadata: Value,
        scopes: Vec<String>,
    },
    Unconfigured,
    Off,
}

impl Authenticator {
    pub(crate) fn new(config: &Config, server: &Server) -> Self {
        match &config.auth {
            AuthSetting::Verify(auth) => {
                let scopes = server.all_scopes();
                let metadata_url = config
                    .resource_metadata_url
                    .clone()
                    .unwrap_or_else(|| metadata_url_for(&auth.resource));
                let metadata = json!({
                    "resource": auth.resource,
                    "authorization_servers": config.authorization_servers,
                    "scopes_supported": scopes,
                    "bearer_methods_supported": ["header"],
                });
                Self::Verify {
                    verifier: Box::new(Verifier::new((**auth).clone())),
                    metadata_url,
                    metadata,
                    scopes,
                }
            }
            AuthSetting::Unconfigured => {
                tracing::error!(
                    "no token verifier is configured (AUTH_ISSUER unset): every request will be refused with 401"
                );
                Self::Unconfigured
            }
            AuthSetting::Off => {
                tracing::warn!(
                    "AUTH_MODE=off: AUTHENTICATION IS DISABLED. Every caller holds every scope. Conformance fixture build only."
                );
                Self::Off
            }
        }
    }

    /// The caller of this request, or why it may not proceed.
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
        deadline: Option<Instant>,
    ) -> Result<Caller, AuthError> {
        let verifier = match self {
            Self::Off => {
                return Ok(Caller {
                    unrestricted: true,
                    ..Caller::default()
                });
            }
            Self::Unconfigured => return Err(AuthError::NotConfigured),
            Self::Verify { verifier, .. } => verifier,
        };
        let result = match bearer_token(headers) {
            Ok(token) => verifier.verify(token, deadline).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(principal) => {
                let hash = principal.subject_hash();
                tracing::info!(auth.outcome = "ok", caller = %hash, "authenticated");
                Ok(Caller {
                    subject: Some(principal.subject),
                    subject_hash: Some(hash),
                    tenant: principal.tenant,
                    scopes: principal.scopes,
                    unrestricted: false,
                })
            }
            Err(e) => {
                tracing::warn!(
                    auth.outcome = "denied",
                    auth.reason = e.reason(),
                    "authentication failed"
                );
                Err(e)
            }
        }
    }

    /// The metadata document and the paths it is served at, when auth is configured.
    pub(crate) fn metadata(&self) -> Option<&Value> {
        match self {
            Self::Verify { metadata, .. } => Some(metadata),
            _ => None,
        }
    }

    /// The answer to a request whose credentials were refused: 400 for a malformed
    /// `Authorization` header, 503 + `Retry-After` when the issuer's keys cannot be had (a
    /// retryable condition on our side, not a verdict on the token), otherwise 401; with
    /// the challenge that tells the client where to get a token.
    pub(crate) fn rejection(&self, error: &AuthError) -> Rejection {
        match error {
            AuthError::KeysUnavailable => {
                return Rejection::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable: the token issuer's keys cannot be fetched; retry shortly",
                )
                .with_header(RETRY_AFTER, HeaderValue::from_static("5"));
            }
            AuthError::MalformedHeader => {
                Rejection::new(StatusCode::BAD_REQUEST, format!("Bad request: {error}"))
            }
            _ => Rejection::new(StatusCode::UNAUTHORIZED, format!("Unauthorized: {error}")),
        }
        .with_challenge(self.challenge(error))
    }

    /// `WWW-Authenticate` for a refused token (RFC 6750 §3, MCP 2025-11-25 authorization
    /// §Protected Resource Metadata Discovery). No `error` when no credentials were sent.
    fn challenge(&self, error: &AuthError) -> Option<String> {
        let Self::Verify {
            metadata_url,
            scopes,
            ..
        } = self
        else {
            return Some("Bearer".into());
        };
        let mut params = Vec::new();
        if !matches!(error, AuthError::MissingToken) {
            let code = if matches!(error, AuthError::MalformedHeader) {
                "invalid_request"
            } else {
                "invalid_token"
            };
            params.push(format!("error={}", quote(code)));
            params.push(format!("error_description={}", quote(&error.to_string())));
        }
        params.push(format!("resource_metadata={}", quote(metadata_url)));
        if !scopes.is_empty() {
            params.push(format!("scope={}", quote(&scopes.join(" "))));
        }
        Some(format!("Bearer {}", params.join(", ")))
    }

    /// `WWW-Authenticate` for a call that needs more scopes (2025-11-25 authorization
    /// §Runtime Insufficient Scope Errors; 2026-07-28: all scopes the operation needs in one
    /// challenge).
    pub(crate) fn scope_challenge(&self, needed: &[String]) -> String {
        let mut params = vec![
            format!("error={}", quote("insufficient_scope")),
            format!(
                "error_description={}",
                quote("the access token lacks a scope this call needs")
            ),
            format!("scope={}", quote(&needed.join(" "))),
        ];
        if let Self::Verify { metadata_url, .. } = self {
            params.push(format!("resource_metadata={}", quote(metadata_url)));
        }
        format!("Bearer {}", params.join(", "))
    }
}

/// RFC 9728 §3.1: the metadata of `https://host/path` is at
/// `https://host/.well-known/oauth-protected-resource/path`.
fn metadata_url_for(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    format!("{scheme}://{authority}/.well-known/oauth-protected-resource{path}")
}

/// An RFC 9110 quoted-string: backslash-escape `"` and `\`, drop control characters.
fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars().filter(|c| !c.is_control()) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The bearer token of the single `Authorization` header (RFC 6750 §2.1). Tokens in the
/// query string are never looked at (MCP authorization: "MUST NOT be included in the URI
/// query string").
fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthError> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return Err(AuthError::MissingToken),
        (Some(v), None) => v.to_str().map_err(|_| AuthError::MalformedHeader)?,
        // Two credentials: never pick one silently.
        (Some(_), Some(_)) => return Err(AuthError::MalformedHeader),
    };
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    // The scheme is case-insensitive (RFC 9110 §11.1); another scheme is no bearer token.
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MissingToken);
    }
    let token = rest.trim_matches(' ');
    // RFC 6750 §2.1 `b64token`, tested a byte at a time (a JWT is hundreds of bytes).
    let token68 = |b: u8| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
    };
    if token.is_empty() || !token.bytes().all(token68) {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn auth(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        assert_eq!(
            bearer_token(&auth(&["Bearer abc.def.ghi"])),
            Ok("abc.def.ghi")
        );
        assert_eq!(bearer_token(&auth(&["bearer  abc"])), Ok("abc"));
        assert_eq!(bearer_token(&auth(&[])), Err(AuthError::MissingToken));
        assert_eq!(
            bearer_token(&auth(&["Basic dXNlcjpwdw=="])),
            Err(AuthError::MissingToken)
        );
        assert_eq!(bearer_token(&auth(&["Bearer"])), Err(AuthError::Malformed));
        assert_eq!(
            bearer_token(&auth(&["Bearer a b"])),
            Err(AuthError::Malformed)
        );
        assert_eq!(
            bearer_token(&auth(&["Bearer A-z0.9_~+/=="])),
            Ok("A-z0.9_~+/==")
        );
        for bad in ["Bearer a!b", "Bearer a,b", "Bearer a\"b", "Bearer a:b"] {
            assert_eq!(
                bearer_token(&auth(&[bad])),
                Err(AuthError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            bearer_token(&auth(&["Bearer a", "Bearer b"])),
            Err(AuthError::MalformedHeader)
        );
    }

    #[test]
    fn challenge_values_are_quoted_strings() {
        assert_eq!(quote(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        assert_eq!(quote("x\r\ny"), r#""xy""#);
        assert_eq!(
            metadata_url_for("https://api.example.com/prod/mcp"),
            "https://api.example.com/.well-known/oauth-protected-resource/prod/mcp"
        );
        assert_eq!(
            metadata_url_for("https://api.example.com"),
            "https://api.example.com/.well-known/oauth-protected-resource"
        );
    }
}
