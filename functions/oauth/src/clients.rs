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
    /// Whether the client registered the refresh token grant (RFC 7591 §2: an omitted
    /// `grant_types` means `authorization_code` alone).
    #[serde(rename = "g", default)]
    pub(crate) refresh: bool,
    /// Where the keys of a client that authenticates with `private_key_jwt` are (its
    /// metadata document's `jwks_uri`); `None` for a public client.
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub(crate) jwks_uri: Option<String>,
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
pub(crate) fn register(
    sealer: &Sealer,
    scopes: &[String],
    body: &[u8],
    now: u64,
) -> Result<Value, BridgeError> {
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
        refresh: grants.iter().any(|g| g == "refresh_token"),
        jwks_uri: None,
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
    // RFC 7591 §3.2.1: the response holds what was registered. Scopes are granted per
    // sign-in, never per client, so a requested `scope` is echoed only as far as this server
    // defines it, and left out when none of it is.
    if let Some(asked) = request.scope {
        let known: Vec<&str> = asked
            .split(' ')
            .filter(|s| scopes.iter().any(|offered| offered == s))
            .collect();
        if !known.is_empty() {
            response["scope"] = json!(known.join(" "));
        }
    }
    Ok(response)
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

/// A client's name as kept: control characters and invisible formatting dropped, at most
/// [`MAX_NAME_LEN`] characters. The name is shown on the consent page, where a right-to-left
/// override or a zero-width character would let a client spell one name and show another
/// (Unicode TR #36, bidirectional and invisible-character spoofing).
pub(crate) fn client_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control() && !invisible(*c))
        .take(MAX_NAME_LEN)
        .collect()
}

/// Bidirectional controls, zero-width and other invisible format characters.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// What kind of place a redirect URI sends the code to; the consent page warns about the
/// last two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Destination {
    /// https on a named host: a web application.
    Web,
    /// http on this computer (RFC 8252 §7.3): whichever program listens on the port.
    Loopback,
    /// A private-use scheme (RFC 8252 §7.1): whichever app on the device claimed it.
    App,
}

/// Schemes a redirect must never use: they run or show content in the browser itself, reach
/// files, or are web schemes checked above. Every other scheme is a private-use scheme.
const REFUSED_SCHEMES: &[&str] = &[
    "javascript",
    "data",
    "vbscript",
    "file",
    "blob",
    "about",
    "filesystem",
    "view-source",
    "ws",
    "wss",
    "ftp",
    "mailto",
    "tel",
    "sms",
    "intent",
    "chrome",
    "chrome-extension",
    "moz-extension",
    "resource",
    "jar",
];

/// A redirect URI a client may register (RFC 8252, OAuth 2.1 §2.3.1): a valid absolute
/// RFC 3986 URI without fragment (RFC 6749 §3.1.2) or user information that is https with a
/// host, http on a loopback host (RFC 8252 §7.3), or a private-use scheme for a native app
/// (RFC 8252 §7.1; PKCE, required of every client here, is what keeps a code another app
/// caught useless). `javascript:`, `data:`, `file:` and the like, and http anywhere else,
/// are refused. Nothing is repaired: a URI with a space or a line break is no URI.
pub(crate) fn check_redirect_uri(uri: &str) -> Result<Destination, &'static str> {
    if uri.len() > MAX_URI_LEN {
        return Err("redirect URI too long");
    }
    if uri.contains('#') {
        return Err("a redirect URI must not have a fragment");
    }
    // `url` parses as browsers do and repairs what it is given (spaces, backslashes, CR/LF);
    // RFC 3986's grammar does not, and a registered URI is compared as a string later.
    if iri_string::types::UriAbsoluteStr::new(uri).is_err() {
        return Err("not a valid absolute URI (RFC 3986)");
    }
    let url = Url::parse(uri).map_err(|_| "not a valid absolute URI (RFC 3986)")?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("a redirect URI must not carry user information");
    }
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => Ok(Destination::Web),
        ("http", Some(host)) if is_loopback(&host) => Ok(Destination::Loopback),
        ("http", _) => Err("http redirect URIs must be on a loopback address"),
        ("https", None) => Err("an https redirect URI needs a host"),
        (scheme, _) if REFUSED_SCHEMES.contains(&scheme) => Err(
            "this scheme is never a redirect URI's (use https, loopback http or an app's own scheme)",
        ),
        _ => Ok(Destination::App),
    }
}

/// Where a redirect URI that [`check_redirect_uri`] allowed sends the code.
pub(crate) fn destination(uri: &str) -> Destination {
    check_redirect_uri(uri).unwrap_or(Destination::Web)
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// An http URI on `localhost`, `127.0.0.1` or `[::1]`, spelled exactly so, split as written:
/// host, port (if any), and the rest (path and query). Nothing is parsed or normalised, so
/// `127.1`, `LOCALHOST` or `/x/../cb` stay what they are.
pub(crate) fn loopback_parts(uri: &str) -> Option<(&str, Option<&str>, &str)> {
    let rest = uri.strip_prefix("http://")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = match authority.strip_prefix("[::1]") {
        Some(port) => ("[::1]", port),
        None => authority.split_at(authority.find(':').unwrap_or(authority.len())),
    };
    if !["localhost", "127.0.0.1", "[::1]"].contains(&host) {
        return None;
    }
    let port = match port.strip_prefix(':') {
        None if port.is_empty() => None,
        Some(digits)
            if (1..=5).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_digit())
                && digits.parse::<u16>().is_ok() =>
        {
            Some(digits)
        }
        _ => return None,
    };
    Some((host, port, tail))
}

/// Whether `given` is one of the registered redirect URIs: the same string, except that on a
/// loopback host the port may differ or be added (RFC 8252 §7.3 and §8.4: native apps listen
/// on whatever port is free, and documents such as Claude Code's list loopback URIs without
/// one). Host spelling, path and query must match exactly.
pub(crate) fn redirect_uri_matches(registered: &[String], given: &str) -> bool {
    registered.iter().any(|r| {
        r == given
            || matches!(
                (loopback_parts(r), loopback_parts(given)),
                (Some((rh, _, rr)), Some((gh, _, gr))) if rh == gh && rr == gr
            )
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
        for (ok, destination) in [
            ("https://claude.ai/api/mcp/auth_callback", Destination::Web),
            (
                "https://chatgpt.com/connector_platform_oauth_redirect",
                Destination::Web,
            ),
            ("http://127.0.0.1:33418/callback", Destination::Loopback),
            (
                "http://localhost:6274/oauth/callback",
                Destination::Loopback,
            ),
            ("http://localhost/callback", Destination::Loopback),
            ("http://[::1]:8080/cb", Destination::Loopback),
            // Cursor's desktop app (RFC 8252 §7.1 private-use schemes).
            (
                "cursor://anysphere.cursor-mcp/oauth/callback",
                Destination::App,
            ),
            ("com.example.app:/oauth2redirect", Destination::App),
            (
                "vscode://vscode.github-authentication/did-authenticate",
                Destination::App,
            ),
        ] {
            assert_eq!(check_redirect_uri(ok), Ok(destination), "{ok}");
            assert_eq!(destination, super::destination(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:msgbox",
            "file:///etc/passwd",
            "blob:https://a.example/x",
            "http://evil.example/cb",
            "https://claude.ai/cb#frag",
            "https://user:pw@claude.ai/cb",
            "https://claude.ai/a b",
            "https://claude.ai/cb\r\nSet-Cookie: x=1",
            "http://127.0.0.1:1/a\tb",
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
            "http://localhost/callback".to_owned(),
            "cursor://anysphere.cursor-mcp/oauth/callback".to_owned(),
        ];
        for good in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:40000/callback",
            "http://127.0.0.1/callback",
            // Claude Code's document lists localhost without a port; it listens on any.
            "http://localhost:54321/callback",
            "http://localhost/callback",
            "cursor://anysphere.cursor-mcp/oauth/callback",
        ] {
            assert!(redirect_uri_matches(&registered, good), "{good}");
        }
        for bad in [
            "https://claude.ai/api/mcp/auth_callback/extra",
            "https://claude.ai/api/mcp/auth_callbac",
            "https://claude.ai.evil.example/api/mcp/auth_callback",
            "http://claude.ai/api/mcp/auth_callback",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "http://127.0.0.1:40000/other",
            "https://127.0.0.1:33418/callback",
            // Nothing but the port is relaxed: no host spelling, dot segment or encoding.
            "http://127.1:33418/callback",
            "http://127.0.0.1:33418/x/../callback",
            "http://127.0.0.1:33418/%63allback",
            "http://LOCALHOST:54321/callback",
            "http://localhost:54321/callback/",
            "http://localhost:/callback",
            "http://localhost:99999/callback",
            "http://[::1]:4000/callback",
            "cursor://anysphere.cursor-mcp/oauth/callback2",
            "cursor://evil/oauth/callback",
        ] {
            assert!(!redirect_uri_matches(&registered, bad), "{bad}");
        }
    }
}
