//! The sign-in at the upstream issuer, once the user approved the client on the bridge's
//! consent page (`consent.rs`): [`begin`] sends the browser upstream with a sealed `state`;
//! [`callback`] takes the upstream's answer, checks that it returns to the browser that
//! approved, once, and sends the client its authorization code. What connects the two is the
//! sealed `state` itself, the browser's cookie and one conditional write.

use std::collections::BTreeMap;
use std::time::Instant;

use http::HeaderMap;
use lambda_http::{Body, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bridge::{Bridge, now};
use crate::browser::Browser;
use crate::clients::shown;
use crate::error::BridgeError;
use crate::seal::{Purpose, Sealer, same};
use crate::wire;

/// An authorization request whose client, redirect URI, PKCE challenge and scopes are
/// checked: what the consent page asks about, what the sign-in carries upstream and back, and
/// what the code remembers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Authorization {
    #[serde(rename = "c")]
    pub(crate) client_id: String,
    #[serde(rename = "r")]
    pub(crate) redirect_uri: String,
    /// Whether the client named its redirect URI (then the token request must repeat it).
    #[serde(rename = "rg")]
    pub(crate) redirect_uri_given: bool,
    #[serde(rename = "cc")]
    pub(crate) code_challenge: String,
    #[serde(rename = "s")]
    pub(crate) scopes: Vec<String>,
    /// The client's own `state`, returned to it untouched.
    #[serde(rename = "st", default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
    /// Whether the client registered the refresh token grant (RFC 7591 §2: a client gets
    /// only the grants it registered).
    #[serde(rename = "rt", default)]
    pub(crate) refresh: bool,
    /// The keys of a client that authenticates with `private_key_jwt` (`assertion.rs`).
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    pub(crate) jwks_uri: Option<String>,
}

/// A sign-in in progress at the upstream: the `state` sent there, sealed.
#[derive(Serialize, Deserialize)]
struct SignIn {
    #[serde(flatten)]
    request: Authorization,
    /// The bridge's PKCE verifier at the upstream.
    #[serde(rename = "uv")]
    upstream_verifier: String,
    #[serde(rename = "n")]
    nonce: String,
    /// The browser that approved (its cookie's id): the answer must come back to it.
    #[serde(rename = "b")]
    browser: String,
    /// Numbers this `state` for its single use.
    #[serde(rename = "j")]
    jti: String,
    exp: u64,
}

/// An authorization code, sealed: the checked request it answers (with the scopes granted,
/// not those asked, and without the client's `state`, which went back with the code), the
/// user, and a `jti` whose single use the table enforces.
#[derive(Serialize, Deserialize)]
pub(crate) struct Code {
    #[serde(flatten)]
    pub(crate) request: Authorization,
    #[serde(rename = "j")]
    pub(crate) jti: String,
    pub(crate) sub: String,
    #[serde(rename = "t")]
    pub(crate) tenant: String,
    pub(crate) exp: u64,
}

/// The upstream authorization URL for `request`, approved in `browser`: a new sealed `state`
/// (MCP Security Best Practices: the upstream state is created only after consent).
pub(crate) async fn begin(
    bridge: &Bridge,
    request: Authorization,
    browser: &Browser,
) -> Result<String, BridgeError> {
    let sign_in = SignIn {
        request,
        upstream_verifier: bridge.sealer.random_token(32)?,
        nonce: bridge.sealer.random_token(16)?,
        browser: browser.id().to_owned(),
        jti: bridge.sealer.random_token(16)?,
        exp: now() + bridge.config.lifetimes.sign_in.as_secs(),
    };
    let sealed = bridge.sealer.seal(Purpose::SignIn, &sign_in)?;
    bridge
        .upstream
        .authorization_url(sealed, &sign_in.upstream_verifier, &sign_in.nonce)
        .await
}

pub(crate) async fn callback(
    bridge: &Bridge,
    query: &str,
    headers: &HeaderMap,
    deadline: Instant,
) -> Response<Body> {
    let params = match crate::bridge::form(query) {
        Ok(p) => p,
        Err(e) => return wire::page(&e),
    };
    let Some(sign_in) = params
        .get("state")
        .and_then(|sealed| open_sign_in(&bridge.sealer, sealed, now()))
    else {
        return wire::page(&BridgeError::invalid_request(
            "this sign-in has expired or is not valid; connect again from your application",
        ));
    };
    // The answer must come back to the browser that approved (MCP Security Best Practices,
    // consent: the state is bound to the user's browser), and only once: a copied callback
    // URL is worth nothing elsewhere or later.
    let same_browser = Browser::from_headers(&bridge.sealer, headers, bridge.secure())
        .is_some_and(|browser| same(browser.id(), &sign_in.browser));
    if !same_browser {
        return wire::page(&BridgeError::refused(
            "access_denied",
            "this sign-in was started in another browser (or its cookie is gone); connect \
             again from your application in this browser",
        ));
    }
    match bridge.store.use_state(&sign_in.jti, sign_in.exp).await {
        Ok(true) => {}
        Ok(false) => {
            return wire::page(&BridgeError::invalid_request(
                "this sign-in was already completed; connect again from your application",
            ));
        }
        Err(e) => return wire::page(&e),
    }
    let request = &sign_in.request;
    let issuer = &bridge.config.issuer;
    let fail = |e: BridgeError| {
        wire::redirect_error(&request.redirect_uri, &e, request.state.as_deref(), issuer)
    };
    // RFC 9207: an answer that names another issuer is a mix-up attack.
    if let Some(iss) = params.get("iss")
        && iss != &bridge.config.upstream.issuer
    {
        return fail(BridgeError::refused(
            "access_denied",
            "the sign-in answer came from another issuer",
        ));
    }
    if let Some(error) = params.get("error") {
        return fail(BridgeError::refused(
            "access_denied",
            format!("the identity provider answered {}", shown(error)),
        ));
    }
    let Some(code) = params.get("code") else {
        return fail(BridgeError::invalid_request(
            "the identity provider's answer has no code",
        ));
    };
    let (subject, claims) = match bridge
        .upstream
        .sign_in(
            code.clone(),
            sign_in.upstream_verifier.clone(),
            &sign_in.nonce,
            deadline,
        )
        .await
    {
        Ok(user) => user,
        Err(e) => return fail(e),
    };
    let (tenant, scopes) = match user_grant(bridge, &claims, &request.scopes) {
        Ok(g) => g,
        Err(e) => return fail(e),
    };
    let code = (|| {
        bridge.sealer.seal(
            Purpose::Code,
            &Code {
                request: Authorization {
                    scopes,
                    state: None,
                    ..request.clone()
                },
                jti: bridge.sealer.random_token(16)?,
                sub: subject,
                tenant,
                exp: now() + bridge.config.lifetimes.code.as_secs(),
            },
        )
    })();
    let code = match code {
        Ok(c) => c,
        Err(e) => return fail(e.into()),
    };
    let mut answer = vec![("code", code.as_str())];
    if let Some(state) = &request.state {
        answer.push(("state", state));
    }
    answer.push(("iss", issuer));
    wire::redirect(&wire::with_params(&request.redirect_uri, &answer))
}

/// The sign-in a `state` carries, if this bridge sealed it for a sign-in and it has not
/// expired: anything else (tampered, another purpose's sealed value, another deployment's
/// key, too old) is no sign-in at all.
fn open_sign_in(sealer: &Sealer, sealed: &str, now: u64) -> Option<SignIn> {
    sealer
        .open::<SignIn>(Purpose::SignIn, sealed)
        .filter(|sign_in| sign_in.exp >= now)
}

/// The user's tenant and the scopes they get of those asked for, from the ID token's claims.
fn user_grant(
    bridge: &Bridge,
    claims: &BTreeMap<String, Value>,
    asked: &[String],
) -> Result<(String, Vec<String>), BridgeError> {
    let config = &bridge.config;
    let from_token = config
        .upstream_tenant_claim
        .as_ref()
        .and_then(|name| claims.get(name))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && t.len() <= 256 && !t.chars().any(char::is_control));
    let Some(tenant) = from_token
        .map(str::to_owned)
        .or(config.default_tenant.clone())
    else {
        return Err(BridgeError::refused(
            "access_denied",
            "your account is not assigned to a tenant; ask an administrator",
        ));
    };
    let allowed: Vec<&String> = if config.group_scopes.is_empty() {
        config.scopes.iter().collect()
    } else {
        let groups: Vec<&str> = match claims.get(&config.groups_claim) {
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(s)) => s.split([' ', ',']).filter(|g| !g.is_empty()).collect(),
            _ => Vec::new(),
        };
        config
            .group_scopes
            .iter()
            .filter(|(group, _)| groups.contains(&group.as_str()))
            .map(|(_, scope)| scope)
            .collect()
    };
    let granted: Vec<String> = asked
        .iter()
        .filter(|s| allowed.contains(s))
        .cloned()
        .collect();
    if granted.is_empty() {
        return Err(BridgeError::refused(
            "access_denied",
            "your account may not use this server; ask an administrator for access",
        ));
    }
    Ok((tenant, granted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8) -> Sealer {
        use base64::Engine as _;
        Sealer::from_secret(&base64::engine::general_purpose::STANDARD.encode([byte; 32])).unwrap()
    }

    fn sign_in(exp: u64) -> SignIn {
        SignIn {
            request: Authorization {
                client_id: "dcr.x".into(),
                redirect_uri: "http://127.0.0.1:1/cb".into(),
                redirect_uri_given: true,
                code_challenge: "c".repeat(43),
                scopes: vec!["events:read".into()],
                state: Some("client-state".into()),
                refresh: true,
                jwks_uri: None,
            },
            upstream_verifier: "v".repeat(43),
            nonce: "n".into(),
            browser: "b".repeat(22),
            jti: "j".repeat(22),
            exp,
        }
    }

    #[test]
    fn a_state_opens_only_unexpired_untampered_and_for_a_sign_in() {
        let sealer = sealer(7);
        let now = 1_000_000;
        let good = sealer.seal(Purpose::SignIn, &sign_in(now + 600)).unwrap();
        let opened = open_sign_in(&sealer, &good, now).unwrap();
        assert_eq!(opened.request.client_id, "dcr.x");
        assert_eq!(opened.browser, "b".repeat(22));
        assert!(open_sign_in(&sealer, &good, now + 600).is_some());
        // Expired: one second past its end.
        assert!(open_sign_in(&sealer, &good, now + 601).is_none());
        // Tampered: any character changed.
        let mut bytes = good.clone().into_bytes();
        let i = bytes.len() / 2;
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(open_sign_in(&sealer, &tampered, now).is_none());
        // Sealed for another purpose (a refresh token, a code or a consent form is not a
        // sign-in).
        for purpose in [Purpose::Code, Purpose::Consent, Purpose::Browser] {
            let other = sealer.seal(purpose, &sign_in(now + 600)).unwrap();
            assert!(open_sign_in(&sealer, &other, now).is_none(), "{purpose:?}");
        }
        // Sealed by another deployment.
        assert!(open_sign_in(&self::sealer(8), &good, now).is_none());
    }
}
