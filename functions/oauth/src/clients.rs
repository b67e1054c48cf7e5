//! Clients: Dynamic Client Registration (RFC 7591) without a store (clients whose `client_id`
//! is a metadata document URL are `cimd.rs`'s). A registered client's
//! `client_id` is its own registration, sealed (`seal.rs`), so any sandbox can read it back
//! and nothing is written. Only public clients (`token_endpoint_auth_method: none`) are
//! registered: MCP clients are, and PKCE is what binds a code to its client.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use url::{Host, Url};

use crate::error::BridgeError;
use crate::seal::{Purpose, Sealer};

/// Marks a `client_id` this bridge issued by registration.
const DCR_PREFIX: &str = "dcr.";
/// Bounds of a registration: it travels inside every `client_id`.
const MAX_REDIRECT_URIS: usize = 8;
const MAX_URI_LEN: usize = 512;
const MAX_NAME_LEN: usize = 200;
const MAX_REGISTRATION_BYTES: usize = 1536;

/// What the bridge knows of a client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Registration {
    #[serde(rename = "r")]
    pub(crate) redirect_uris: Vec<String>,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(rename = "t")]
    pub(crate) issued_at: u64,
}

#[derive(Deserialize)]
struct Request {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    token_endpoint_auth_method: Option<String>,
    scope: Option<String>,
}

fn invalid_metadata(description: impl Into<std::borrow::Cow<'static, str>>) -> BridgeError {
    BridgeError::refused("invalid_client_metadata", description)
}

/// Registers a client from an RFC 7591 request body; the RFC 7591 §3.2.1 response.
pub(crate) fn register(sealer: &Sealer, body: &[u8], now: u64) -> Result<Value, BridgeError> {
    let request: Request = serde_json::from_slice(body)
        .map_err(|_| invalid_metadata("the body must be a JSON object of client metadata"))?;
    let redirect_uris = redirect_uris(request.redirect_uris)
        .map_err(|why| BridgeError::refused("invalid_redirect_uri", why))?;
    let grants = request
        .grant_types
        .unwrap_or_else(|| vec!["authorization_code".into()]);
    if let Some(other) = grants
        .iter()
        .find(|g| !["authorization_code", "refresh_token"].contains(&g.as_str()))
    {
        return Err(invalid_metadata(format!(
            "grant type {} is not offered; authorization_code and refresh_token are",
            shown(other)
        )));
    }
    if let Some(types) = &request.response_types
        && types.iter().any(|t| t != "code")
    {
        return Err(invalid_metadata(
            "only the response type \"code\" is offered",
        ));
    }
    let registration = Registration {
        redirect_uris,
        name: request.client_name.as_deref().map(client_name),
        issued_at: now,
    };
    // The registration travels in the client_id, and the client_id in every sealed sign-in
    // state and code: bounded so those stay short enough for a URL at the upstream.
    if !serde_json::to_vec(&registration).is_ok_and(|r| r.len() <= MAX_REGISTRATION_BYTES) {
        return Err(invalid_metadata(format!(
            "the registration is too large (its redirect URIs and name together exceed \
             {MAX_REGISTRATION_BYTES} bytes)"
        )));
    }
    let client_id = format!(
        "{DCR_PREFIX}{}",
        sealer.seal(Purpose::Client, &registration)?
    );
    // RFC 7591 §3.2.1: the server may replace requested values; a client asking for a
    // secret-based method gets `none`, the only method this server has (it issues no secrets).
    let _ = request.token_endpoint_auth_method;
    let mut response = json!({
        "client_id": client_id,
        "client_id_issued_at": now,
        "redirect_uris": registration.redirect_uris,
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(name) = &registration.name {
        response["client_name"] = json!(name);
    }
    if let Some(scope) = request.scope {
        response["scope"] = json!(scope);
    }
    Ok(response)
}

/// The client `client_id` names: its metadata document (fetched), or its registration here.
pub(crate) async fn client(
    sealer: &Sealer,
    documents: &crate::cimd::Documents,
    client_id: &str,
) -> Result<Registration, BridgeError> {
    if crate::cimd::is_document_url(client_id) {
        return documents.resolve(client_id).await;
    }
    resolve(sealer, client_id).ok_or_else(|| {
        BridgeError::refused(
            "invalid_client",
            "this application is not registered here (or its registration is from another \
             deployment); it should register again",
        )
    })
}

/// The registration behind `client_id`, or `None` for a client this bridge does not know.
pub(crate) fn resolve(sealer: &Sealer, client_id: &str) -> Option<Registration> {
    let sealed = client_id.strip_prefix(DCR_PREFIX)?;
    sealer.open(Purpose::Client, sealed)
}

/// The redirect URIs a client may have, registered or listed in its metadata document: at
/// least one, at most [`MAX_REDIRECT_URIS`], each one [`check_redirect_uri`] allows. `Err`
/// says why not.
pub(crate) fn redirect_uris(uris: Option<Vec<String>>) -> Result<Vec<String>, String> {
    let uris = uris
        .filter(|uris| !uris.is_empty())
        .ok_or("redirect_uris is required")?;
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(format!("at most {MAX_REDIRECT_URIS} redirect_uris"));
    }
    for uri in &uris {
        check_redirect_uri(uri).map_err(|why| format!("{why}: {}", shown(uri)))?;
    }
    Ok(uris)
}

/// A client's name as kept: control characters dropped, at most [`MAX_NAME_LEN`] characters.
pub(crate) fn client_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_LEN)
        .collect()
}

/// A redirect URI a client may register: https with a host, or http on a loopback address
/// (RFC 8252 §7.3); no fragment (RFC 6749 §3.1.2), no user information. Refuses every other
/// scheme: `javascript:`, `data:` and custom schemes alike.
pub(crate) fn check_redirect_uri(uri: &str) -> Result<(), &'static str> {
    if uri.len() > MAX_URI_LEN {
        return Err("redirect URI too long");
    }
    let url = Url::parse(uri).map_err(|_| "not an absolute URI")?;
    if url.fragment().is_some() || uri.contains('#') {
        return Err("a redirect URI must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a redirect URI must not carry user information");
    }
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => Ok(()),
        ("http", Some(host)) if is_loopback(&host) => Ok(()),
        ("http", _) => Err("http redirect URIs must be on a loopback address"),
        _ => Err("redirect URIs must be https (or http on a loopback address)"),
    }
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// Whether `given` is one of the registered redirect URIs: exact string comparison, except
/// that a loopback IP literal's port may differ (RFC 8252 §7.3: native apps listen on
/// whatever port is free).
pub(crate) fn redirect_uri_matches(registered: &[String], given: &str) -> bool {
    registered.iter().any(|r| {
        r == given
            || (|| {
                let (r, g) = (Url::parse(r).ok()?, Url::parse(given).ok()?);
                let ip_literal = matches!(r.host(), Some(Host::Ipv4(_) | Host::Ipv6(_)));
                let mut r_any_port = r.clone();
                let mut g_any_port = g.clone();
                r_any_port.set_port(None).ok()?;
                g_any_port.set_port(None).ok()?;
                Some(
                    r.scheme() == "http"
                        && ip_literal
                        && r.host().is_some_and(|h| is_loopback(&h))
                        && r_any_port.as_str() == g_any_port.as_str()
                        && given.starts_with("http://"),
                )
            })()
            .unwrap_or(false)
    })
}

/// A value from the request, cut for an error message.
pub(crate) fn shown(value: &str) -> String {
    let cut: String = value.chars().filter(|c| !c.is_control()).take(80).collect();
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_that_may_be_registered() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418/callback",
            "http://localhost:6274/oauth/callback",
            "http://[::1]:8080/cb",
        ] {
            assert_eq!(check_redirect_uri(ok), Ok(()), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "http://evil.example/cb",
            "https://claude.ai/cb#frag",
            "https://user:pw@claude.ai/cb",
            "vscode://callback",
            "/relative",
            "",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn redirect_uris_match_exactly_except_a_loopback_port() {
        let registered = vec![
            "https://claude.ai/api/mcp/auth_callback".to_owned(),
            "http://127.0.0.1:33418/callback".to_owned(),
        ];
        assert!(redirect_uri_matches(
            &registered,
            "https://claude.ai/api/mcp/auth_callback"
        ));
        assert!(redirect_uri_matches(
            &registered,
            "http://127.0.0.1:40000/callback"
        ));
        for bad in [
            "https://claude.ai/api/mcp/auth_callback/extra",
            "https://claude.ai/api/mcp/auth_callbac",
            "https://claude.ai.evil.example/api/mcp/auth_callback",
            "http://claude.ai/api/mcp/auth_callback",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "http://127.0.0.1:40000/other",
            "https://127.0.0.1:33418/callback",
        ] {
            assert!(!redirect_uri_matches(&registered, bad), "{bad}");
        }
    }
}
