//! The checks of each document a client reads: the challenge and the authorization
//! server's metadata with its keys.

use super::support::{Missing, cause, fetch, first_document, hint, param, split_origin, strings};
use mcp_auth::{Algorithm, KeySet, is_loopback_url as is_loopback};
use serde_json::Value;

use super::{Outcome, Report, Server};

pub(super) async fn challenge(
    http: &reqwest::Client,
    url: &str,
    report: &mut Report,
) -> Option<String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-doctor","version":"1"}}}"#;
    let response = match http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => {
            report.fail(format!("POST {url} failed: {}", cause(&e)));
            return None;
        }
    };
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match (status, header) {
        (401, Some(h)) if h.to_ascii_lowercase().starts_with("bearer") => {
            match param(&h, "resource_metadata") {
                Some(at) => {
                    report.pass(format!(
                        "401 without a token, challenge names resource_metadata={at}"
                    ));
                    Some(at)
                }
                None => {
                    report.warn("401 challenge without resource_metadata: clients fall back to the well-known locations");
                    None
                }
            }
        }
        (401, _) => {
            report.fail("401 without a WWW-Authenticate: Bearer challenge: clients cannot discover how to sign in");
            None
        }
        (s, _) if (200..300).contains(&s) => {
            report.open = true;
            report.warn(format!(
                "POST without a token answered {s}: the endpoint requires no token, so anyone who can reach it can call it"
            ));
            None
        }
        (s, _) => {
            report.fail(format!(
                "POST without a token answered {s}, not 401: clients never start OAuth"
            ));
            None
        }
    }
}

pub(super) async fn authorization_server(
    http: &reqwest::Client,
    issuer: &str,
    resource_scopes: &[String],
    report: &mut Report,
) -> Server {
    let mut server = Server::default();
    let (origin, path) = split_origin(issuer);
    let trimmed = issuer.trim_end_matches('/');
    let locations = vec![
        (
            "RFC 8414",
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            Missing(
                Outcome::Warn,
                ": clients of MCP 2025-03-26 and 2025-06-18 look only there",
            ),
        ),
        (
            "OpenID discovery",
            format!("{trimmed}/.well-known/openid-configuration"),
            Missing(Outcome::Warn, ""),
        ),
    ];
    let prefix = format!("{issuer}: ");
    let Some(meta) = first_document(http, report, &prefix, "metadata", locations).await else {
        report.fail(format!(
            "{issuer}: no authorization server metadata: clients cannot find its endpoints"
        ));
        return server;
    };

    match meta.get("issuer").and_then(Value::as_str) {
        Some(i) if i == issuer => report.pass(format!("{issuer}: issuer is byte-identical")),
        Some(i) => report.fail(format!(
            "{issuer}: its metadata says issuer {i:?}; authorization_servers must name it byte for byte (RFC 8414 §3.3){}",
            hint(i, issuer)
        )),
        None => report.fail(format!("{issuer}: the metadata has no issuer")),
    }
    for field in ["authorization_endpoint", "token_endpoint"] {
        match meta.get(field).and_then(Value::as_str) {
            Some(u) if u.starts_with("https://") || is_loopback(u) => {}
            Some(u) => report.fail(format!("{issuer}: {field} {u} is not https")),
            None => report.fail(format!("{issuer}: no {field}")),
        }
    }
    if strings(&meta, "code_challenge_methods_supported")
        .iter()
        .any(|m| m == "S256")
    {
        report.pass(format!("{issuer}: PKCE S256 advertised"));
    } else {
        report.fail(format!(
            "{issuer}: code_challenge_methods_supported does not list S256: MCP clients refuse to authorize (MCP authorization §Authorization Code Protection)"
        ));
    }
    server.registration_endpoint = meta
        .get("registration_endpoint")
        .and_then(Value::as_str)
        .map(str::to_owned);
    server.dcr = server.registration_endpoint.is_some();
    server.cimd = meta
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        == Some(true);
    let auth_methods = strings(&meta, "token_endpoint_auth_methods_supported");
    // RFC 8414 §2: absent means client_secret_basic only.
    server.public_clients = auth_methods.iter().any(|m| m == "none");
    match (server.cimd, server.dcr) {
        (true, true) => report.pass(format!(
            "{issuer}: registration by Client ID Metadata Document and by Dynamic Client Registration"
        )),
        (true, false) => report.pass(format!("{issuer}: registration by Client ID Metadata Document")),
        (false, true) => report.pass(format!(
            "{issuer}: registration by Dynamic Client Registration (no Client ID Metadata Documents)"
        )),
        (false, false) => report.warn(format!(
            "{issuer}: no registration_endpoint and no client_id_metadata_document_supported: only clients registered by hand can sign in"
        )),
    }
    if server.public_clients {
        report.pass(format!(
            "{issuer}: public clients (token_endpoint_auth_method none)"
        ));
    } else {
        report.warn(format!(
            "{issuer}: token_endpoint_auth_methods_supported lacks none: public clients (CIMD, desktop and CLI clients) cannot redeem codes"
        ));
    }
    if meta
        .get("authorization_response_iss_parameter_supported")
        .and_then(Value::as_bool)
        == Some(true)
    {
        report.pass(format!(
            "{issuer}: iss in authorization responses (RFC 9207)"
        ));
    } else {
        report.warn(format!(
            "{issuer}: authorization_response_iss_parameter_supported is not true: no mix-up defence (RFC 9207)"
        ));
    }
    let advertised = strings(&meta, "scopes_supported");
    let unknown: Vec<&str> = resource_scopes
        .iter()
        .filter(|s| !advertised.is_empty() && !advertised.contains(s))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        report.pass(format!("{issuer}: knows the endpoint's scopes"));
    } else {
        report.fail(format!(
            "{issuer}: does not advertise the scopes the endpoint requires: {}",
            unknown.join(" ")
        ));
    }
    let grants = strings(&meta, "grant_types_supported");
    if !grants.is_empty() && !grants.iter().any(|g| g == "refresh_token") {
        report.warn(format!(
            "{issuer}: no refresh_token grant: users sign in again whenever a token expires"
        ));
    }

    match meta.get("jwks_uri").and_then(Value::as_str) {
        Some(jwks) => match fetch(http, jwks).await {
            Ok(bytes) => {
                match KeySet::from_json(&bytes, &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA]) {
                    Ok(keys) if !keys.is_empty() => report.pass(format!(
                        "{issuer}: {} signing key(s) at {jwks} the endpoint can verify with",
                        keys.len()
                    )),
                    Ok(_) => report.fail(format!(
                        "{issuer}: no key at {jwks} the endpoint accepts (RSA of 2048 bits or more, P-256, Ed25519; signing keys only)"
                    )),
                    Err(e) => report.fail(format!("{issuer}: the JWKS at {jwks} is refused: {e}")),
                }
            }
            Err(e) => report.fail(format!("{issuer}: JWKS {jwks} could not be fetched: {e}")),
        },
        None => report.fail(format!(
            "{issuer}: no jwks_uri: the endpoint cannot verify its tokens"
        )),
    }
    server
}
