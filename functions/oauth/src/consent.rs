//! The bridge's own consent page, before anything goes upstream.
//!
//! The bridge signs every user in upstream with one static client of its own, and registers
//! anyone who asks (DCR). Without a step of its own, a user with an upstream session who opens
//! a link crafted by someone who registered their own redirect URI would be sent upstream and
//! back to that redirect URI with a code, seeing no page at all. MCP Security Best Practices
//! ("Confused Deputy Problem") make the mitigation a MUST for such a proxy: obtain the user's
//! consent for each client before forwarding upstream, on a page that names the client and
//! where its redirect goes (2026-07-28 authorization, security considerations: the
//! authorization server MUST clearly display the redirect URI's host). The upstream's page
//! cannot: it only knows the bridge.
//!
//! The page names the client (its declared name, marked unverified for DCR; the metadata
//! document's host for CIMD), the redirect URI in full with its host, and the scopes; it warns
//! for loopback and app-scheme redirects. Approve and Deny are one form, POSTed with the sealed
//! request, which names this browser's cookie: a request opened in another browser, or posted
//! from another site (no SameSite=Lax cookie), is refused. The page cannot be framed or
//! cached and needs no script. An approval is remembered in this browser's sealed cookie only,
//! for this client, redirect URI and scopes, for [`crate::browser::APPROVAL_LIFETIME_SECS`].

use std::collections::BTreeMap;

use base64::Engine as _;
use http::header::ORIGIN;
use http::{HeaderMap, HeaderValue};
use lambda_http::{Body, Response};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::bridge::{Bridge, CONSENT_PATH, now};
use crate::browser::{Browser, approval_key};
use crate::clients::{Destination, Registration, destination};
use crate::error::BridgeError;
use crate::seal::{Purpose, same};
use crate::signin::{self, Authorization};
use crate::wire;

const TEMPLATE: &str = include_str!("consent.html");
/// The page's only style; allowed by its hash, so no other style or any script runs.
const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}\
main{max-width:36rem;margin:2rem auto;padding:1.5rem 2rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}\
h1{font-size:1.35rem;line-height:1.3}.client{overflow-wrap:anywhere}\
dt{font-weight:600;margin-top:.75rem}dd{margin:.25rem 0 0 0;overflow-wrap:anywhere}\
code{font-size:.9rem}.host{font-size:1.1rem}.identity{color:#444}\
.warning{border-left:4px solid #bf8700;background:#fff8c5;padding:.5rem .75rem}\
form{display:flex;gap:1rem;margin-top:1.5rem}\
button{font:inherit;padding:.5rem 1.5rem;border-radius:6px;border:1px solid #1f6feb;background:#1f6feb;color:#fff;cursor:pointer}\
button.deny{background:#fff;color:#1b1f24;border-color:#8c959f}\
button:focus-visible{outline:3px solid #0969da;outline-offset:2px}";

/// An authorization request waiting on the user's answer: the consent form's hidden field,
/// sealed, bound to the browser that was shown the page.
#[derive(Serialize, Deserialize)]
struct Pending {
    #[serde(flatten)]
    request: Authorization,
    #[serde(rename = "b")]
    browser: String,
    exp: u64,
}

/// What the page says about the client, from its registration or metadata document.
pub(crate) struct Client<'a> {
    pub(crate) registration: &'a Registration,
    /// Whether the client_id is a metadata document URL (its host vouches for the client).
    pub(crate) by_document: bool,
}

/// `/oauth/authorize` once the request checks out: the consent page, or (approved in this
/// browser before, and not `prompt=consent`) straight on to the upstream.
pub(crate) async fn ask(
    bridge: &Bridge,
    client: Client<'_>,
    request: Authorization,
    headers: &HeaderMap,
    prompt: Option<&str>,
) -> Response<Body> {
    let issuer = &bridge.config.issuer;
    let (redirect_uri, state) = (request.redirect_uri.clone(), request.state.clone());
    let fail = |e: BridgeError| wire::redirect_error(&redirect_uri, &e, state.as_deref(), issuer);
    let browser = match Browser::from_headers(&bridge.sealer, headers, bridge.secure()) {
        Some(browser) => browser,
        None => match Browser::new(&bridge.sealer) {
            Ok(browser) => browser,
            Err(e) => return fail(e),
        },
    };
    // OpenID Connect Core §3.1.2.1: `prompt` is a space-separated list.
    let prompts: Vec<&str> = prompt.unwrap_or("").split(' ').collect();
    let key = approval_key(&request.client_id, &request.redirect_uri, &request.scopes);
    if !prompts.contains(&"consent") && browser.approved(&key, now()) {
        return match signin::begin(bridge, request, &browser).await {
            Ok(url) => with_cookie(bridge, wire::redirect(&url), &browser),
            Err(e) => fail(e),
        };
    }
    if prompts.contains(&"none") {
        let error = BridgeError::refused(
            "consent_required",
            "this application has not been approved in this browser; sign in without prompt=none",
        );
        // Sent to the client only if this browser approved it before (for other scopes):
        // anyone can register a redirect URI (RFC 9700 §4.11.2).
        return if browser.trusts(&request.client_id, &request.redirect_uri, now()) {
            fail(error)
        } else {
            wire::page(&error)
        };
    }
    let pending = Pending {
        request,
        browser: browser.id().to_owned(),
        exp: now() + bridge.config.lifetimes.sign_in.as_secs(),
    };
    let sealed = match bridge.sealer.seal(Purpose::Consent, &pending) {
        Ok(sealed) => sealed,
        Err(e) => return fail(e.into()),
    };
    let html = render(bridge, &client, &pending.request, &sealed);
    with_cookie(bridge, page_response(html), &browser)
}

/// `POST /oauth/consent`: the user's answer. Approve starts the sign-in upstream; Deny sends
/// the client `access_denied`. Either way only for the browser that was shown the page.
pub(crate) async fn decide(bridge: &Bridge, headers: &HeaderMap, body: &[u8]) -> Response<Body> {
    let params = match std::str::from_utf8(body)
        .map_err(|_| BridgeError::invalid_request("the form is not UTF-8"))
        .and_then(crate::bridge::form)
    {
        Ok(params) => params,
        Err(e) => return wire::page(&e),
    };
    let Some(pending) = params
        .get("request")
        .and_then(|sealed| bridge.sealer.open::<Pending>(Purpose::Consent, sealed))
        .filter(|pending| pending.exp >= now())
    else {
        return wire::page(&BridgeError::invalid_request(
            "this page has expired or is not valid; connect again from your application",
        ));
    };
    if let Err(e) = same_origin(bridge, headers) {
        return wire::page(&e);
    }
    // The CSRF check: the sealed form names the browser that was shown it, and only that
    // browser's cookie (never sent with a cross-site POST: SameSite=Lax) matches it.
    let Some(mut browser) = Browser::from_headers(&bridge.sealer, headers, bridge.secure())
        .filter(|browser| same(browser.id(), &pending.browser))
    else {
        return wire::page(&BridgeError::refused(
            "access_denied",
            "this answer did not come from the browser that was shown the page (or cookies \
             are blocked for this site); connect again from your application",
        ));
    };
    let request = pending.request;
    let issuer = &bridge.config.issuer;
    match params.get("decision").map(String::as_str) {
        Some("approve") => {
            browser.approve_client(
                &request.client_id,
                &request.redirect_uri,
                &request.scopes,
                now(),
            );
            let (redirect_uri, state) = (request.redirect_uri.clone(), request.state.clone());
            let response = match signin::begin(bridge, request, &browser).await {
                Ok(url) => wire::redirect(&url),
                Err(e) => wire::redirect_error(&redirect_uri, &e, state.as_deref(), issuer),
            };
            with_cookie(bridge, wire::see_other(response), &browser)
        }
        Some("deny") => wire::see_other(wire::redirect_error(
            &request.redirect_uri,
            &BridgeError::refused("access_denied", "the user denied access"),
            request.state.as_deref(),
            issuer,
        )),
        _ => wire::page(&BridgeError::invalid_request(
            "the answer must be approve or deny",
        )),
    }
}

/// A form posted from another origin is refused, whatever its cookies (defence in depth
/// beside SameSite: a sibling host under the same site sends them). Browsers send `Origin`
/// with every POST; a client without one is not a browser posting across sites.
fn same_origin(bridge: &Bridge, headers: &HeaderMap) -> Result<(), BridgeError> {
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let ours = Url::parse(&bridge.config.issuer)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    if origin.to_str().is_ok_and(|o| o == ours) {
        Ok(())
    } else {
        Err(BridgeError::refused(
            "access_denied",
            "this answer was sent from another site",
        ))
    }
}

fn with_cookie(bridge: &Bridge, mut response: Response<Body>, browser: &Browser) -> Response<Body> {
    let secure = bridge.secure();
    if secure {
        // The cookie is Secure; the browser should never come here over http at all.
        response.headers_mut().insert(
            http::header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    if let Ok(cookie) = browser.set_cookie(&bridge.sealer, secure)
        && let Ok(value) = HeaderValue::from_str(&cookie)
    {
        response
            .headers_mut()
            .append(http::header::SET_COOKIE, value);
    }
    response
}

/// The page as served: HTML that no other site may frame, no cache keeps, and in which
/// nothing but its own style runs.
fn page_response(html: String) -> Response<Body> {
    let digest = ring::digest::digest(&ring::digest::SHA256, STYLE.as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{hash}'; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut response = wire::html(200, html);
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", policy.as_str()),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        // The page's URL holds the client's state: never sent to another origin.
        ("referrer-policy", "same-origin"),
        ("pragma", "no-cache"),
    ] {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
    response
}

/// What a scope lets the client do, in words; a scope without words is shown as it is.
fn scope_text(scope: &str) -> String {
    match scope {
        "events:read" => "Read your organisation's events: list, search, count and summarise \
                          them (read-only)"
            .into(),
        other => format!("Use the scope “{other}”"),
    }
}

fn render(bridge: &Bridge, client: &Client<'_>, request: &Authorization, sealed: &str) -> String {
    let redirect = Url::parse(&request.redirect_uri).ok();
    let host = redirect
        .as_ref()
        .and_then(|u| {
            u.host_str()
                .map(|h| u.port().map_or(h.to_owned(), |p| format!("{h}:{p}")))
        })
        .unwrap_or_default();
    let scheme = redirect.as_ref().map(Url::scheme).unwrap_or_default();
    let declared = client
        .registration
        .name
        .as_deref()
        .filter(|n| !n.is_empty());
    let document_host = Url::parse(&request.client_id)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    // The identity line is HTML: what in it came from the client (its id, host and name) is
    // escaped.
    let (name, identity) = if client.by_document {
        // What is verified is where the document is: its host is the heading; the name the
        // document gives itself is shown as its own claim.
        let claim = declared.map_or(String::new(), |n| {
            format!(" It calls itself “{}” (not verified).", wire::escape(n))
        });
        (
            document_host.clone(),
            format!(
                "Identified by its metadata document at {} (verified: the document is served \
                 by {}).{claim}",
                wire::escape(&request.client_id),
                wire::escape(&document_host)
            ),
        )
    } else {
        (
            declared.unwrap_or("An unnamed application").to_owned(),
            "This name was given by the application itself when it registered with this \
             server; it is not verified. Check where the authorization is sent, below."
                .to_owned(),
        )
    };
    let destination_host = match destination(&request.redirect_uri) {
        Destination::App => format!("the app that opens {scheme}: links"),
        _ => host.clone(),
    };
    let warning = match destination(&request.redirect_uri) {
        Destination::Web => String::new(),
        Destination::Loopback => format!(
            "<p class=\"warning\" role=\"alert\"><strong>The authorization goes to a program on \
             this computer</strong> ({}). Any program on this computer could be listening there. \
             Approve only if you just started connecting from an application on this computer.</p>",
            wire::escape(&host)
        ),
        Destination::App => format!(
            "<p class=\"warning\" role=\"alert\"><strong>The authorization goes to an app on this \
             device</strong>: whichever app handles <code>{}:</code> links. Any installed app can \
             claim such links. Approve only if you just started connecting from that app.</p>",
            wire::escape(scheme)
        ),
    };
    let scopes: String = request
        .scopes
        .iter()
        .map(|s| format!("<li>{}</li>", wire::escape(&scope_text(s))))
        .collect();
    let server = Url::parse(&bridge.config.resource)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| bridge.config.resource.clone());
    let values: BTreeMap<&str, String> = BTreeMap::from([
        ("server", wire::escape(&server)),
        ("style", STYLE.to_owned()),
        ("client_name", wire::escape(&name)),
        ("identity", identity),
        ("scopes", scopes),
        ("redirect_host", wire::escape(&destination_host)),
        ("redirect_uri", wire::escape(&request.redirect_uri)),
        ("resource", wire::escape(&bridge.config.resource)),
        ("warning", warning),
        (
            "action",
            wire::escape(&bridge.config.endpoint(CONSENT_PATH)),
        ),
        ("request", wire::escape(sealed)),
    ]);
    fill(TEMPLATE, &values)
}

/// `template` with every `{{name}}` replaced by its value, in one pass: a value is never read
/// again as a placeholder, whatever it holds.
fn fill(template: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(template.len() + 2048);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match values.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once_and_values_never_reread() {
        let values = BTreeMap::from([("a", "{{b}}".to_owned()), ("b", "B".to_owned())]);
        assert_eq!(fill("x{{a}}y{{b}}z{{c}}", &values), "x{{b}}yBz{{c}}");
        assert_eq!(fill("open {{a", &values), "open {{a");
    }

    #[test]
    fn the_template_has_every_placeholder_render_fills() {
        for name in [
            "server",
            "style",
            "client_name",
            "identity",
            "scopes",
            "redirect_host",
            "redirect_uri",
            "resource",
            "warning",
            "action",
            "request",
        ] {
            assert!(TEMPLATE.contains(&format!("{{{{{name}}}}}")), "{name}");
        }
        // The test clients find the form by this exact start.
        assert!(TEMPLATE.contains("<form method=\"post\" action=\"{{action}}\">"));
    }
}
