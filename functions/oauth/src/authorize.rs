//! The front channel: `/oauth/authorize` checks the client's request and sends the user to
//! the upstream issuer; `/oauth/callback` takes the upstream's answer, checks the user, and
//! sends the client its authorization code. What connects the two is the sealed `state`
//! itself: the bridge keeps nothing between them.

use std::collections::BTreeMap;
use std::time::Instant;

use lambda_http::{Body, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clients::{self, shown};
use crate::error::BridgeError;
use crate::seal::{Purpose, Sealer};
use crate::{Bridge, now, wire};

/// A sign-in in progress at the upstream: the `state` sent there, sealed.
#[derive(Serialize, Deserialize)]
struct SignIn {
    #[serde(rename = "c")]
    client_id: String,
    #[serde(rename = "r")]
    redirect_uri: String,
    /// Whether the client named its redirect URI (then the token request must repeat it).
    #[serde(rename = "rg")]
    redirect_uri_given: bool,
    #[serde(rename = "cc")]
    code_challenge: String,
    #[serde(rename = "s")]
    scopes: Vec<String>,
    /// The client's own `state`, returned to it untouched.
    #[serde(rename = "st", default, skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    /// The bridge's PKCE verifier at the upstream.
    #[serde(rename = "uv")]
    upstream_verifier: String,
    #[serde(rename = "n")]
    nonce: String,
    exp: u64,
}

/// An authorization code, sealed: everything the token endpoint needs, and a `jti` whose
/// single use the table enforces.
#[derive(Serialize, Deserialize)]
pub(crate) struct Code {
    #[serde(rename = "j")]
    pub(crate) jti: String,
    #[serde(rename = "c")]
    pub(crate) client_id: String,
    #[serde(rename = "r")]
    pub(crate) redirect_uri: String,
    #[serde(rename = "rg")]
    pub(crate) redirect_uri_given: bool,
    #[serde(rename = "cc")]
    pub(crate) code_challenge: String,
    #[serde(rename = "s")]
    pub(crate) scopes: Vec<String>,
    pub(crate) sub: String,
    #[serde(rename = "t")]
    pub(crate) tenant: String,
    pub(crate) exp: u64,
}

/// Longest client `state` taken.
const MAX_STATE_LEN: usize = 1024;

/// RFC 7636 §4.2: a challenge is 43 base64url characters for S256.
fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub(crate) async fn authorize(bridge: &Bridge, query: &str) -> Response<Body> {
    let params = match crate::form(query) {
        Ok(p) => p,
        Err(e) => return wire::page(&e),
    };
    // Until the client and its redirect URI check out, errors are shown, not redirected.
    let Some(client_id) = params.get("client_id") else {
        return wire::page(&BridgeError::invalid_request("client_id is required"));
    };
    let client = match clients::client(&bridge.sealer, &bridge.documents, client_id).await {
        Ok(client) => client,
        Err(e) => return wire::page(&e),
    };
    let (redirect_uri, given) = match params.get("redirect_uri") {
        Some(uri) if clients::redirect_uri_matches(&client.redirect_uris, uri) => {
            (uri.clone(), true)
        }
        Some(uri) => {
            return wire::page(&BridgeError::invalid_request(format!(
                "redirect_uri {} is not one this application registered",
                shown(uri)
            )));
        }
        None if client.redirect_uris.len() == 1 => (client.redirect_uris[0].clone(), false),
        None => {
            return wire::page(&BridgeError::invalid_request(
                "redirect_uri is required: this application registered several",
            ));
        }
    };
    // The client's state travels sealed inside the upstream's state: bounded, so that URL stays
    // a URL every upstream takes.
    if params.get("state").is_some_and(|s| s.len() > MAX_STATE_LEN) {
        return wire::page(&BridgeError::invalid_request(format!(
            "state is longer than {MAX_STATE_LEN} characters"
        )));
    }
    let state = params.get("state").cloned();
    let issuer = &bridge.config.issuer;
    let fail = |e: BridgeError| wire::redirect_error(&redirect_uri, &e, state.as_deref(), issuer);
    match check_request(bridge, &params) {
        Ok(scopes) => {
            let sign_in = (|| {
                Ok::<_, BridgeError>(SignIn {
                    client_id: client_id.clone(),
                    redirect_uri: redirect_uri.clone(),
                    redirect_uri_given: given,
                    code_challenge: params.get("code_challenge").cloned().unwrap_or_default(),
                    scopes,
                    state: state.clone(),
                    upstream_verifier: bridge.sealer.random_token(32)?,
                    nonce: bridge.sealer.random_token(16)?,
                    exp: now() + bridge.config.lifetimes.sign_in.as_secs(),
                })
            })();
            let sign_in = match sign_in {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let sealed = match bridge.sealer.seal(Purpose::SignIn, &sign_in) {
                Ok(s) => s,
                Err(e) => return fail(e.into()),
            };
            match bridge
                .upstream
                .authorization_url(sealed, &sign_in.upstream_verifier, &sign_in.nonce)
                .await
            {
                Ok(url) => wire::redirect(&url),
                Err(e) => fail(e),
            }
        }
        Err(e) => fail(e),
    }
}

/// The checks made once the redirect URI is trusted; the granted-for-asking scopes.
fn check_request(
    bridge: &Bridge,
    params: &BTreeMap<String, String>,
) -> Result<Vec<String>, BridgeError> {
    match params.get("response_type").map(String::as_str) {
        Some("code") => {}
        None => return Err(BridgeError::invalid_request("response_type is required")),
        Some(other) => {
            return Err(BridgeError::refused(
                "unsupported_response_type",
                format!("response_type {} is not offered; use code", shown(other)),
            ));
        }
    }
    // OAuth 2.1 §4.1.1 and MCP authorization: PKCE is required, and only S256 is accepted
    // (an absent method means `plain`).
    match (
        params.get("code_challenge"),
        params.get("code_challenge_method").map(String::as_str),
    ) {
        (Some(challenge), Some("S256")) if valid_challenge(challenge) => {}
        (Some(_), Some("S256")) => {
            return Err(BridgeError::invalid_request(
                "code_challenge must be 43 base64url characters (RFC 7636 S256)",
            ));
        }
        (None, _) => {
            return Err(BridgeError::invalid_request(
                "PKCE is required: send code_challenge with code_challenge_method=S256",
            ));
        }
        (Some(_), _) => {
            return Err(BridgeError::invalid_request(
                "code_challenge_method must be S256; plain is not accepted",
            ));
        }
    }
    // RFC 8707: tokens from here are only for the MCP server.
    if let Some(resource) = params.get("resource")
        && mcp_auth::canonical_resource(resource)
            != mcp_auth::canonical_resource(&bridge.config.resource)
    {
        return Err(BridgeError::refused(
            "invalid_target",
            format!(
                "this server issues tokens for {} only",
                bridge.config.resource
            ),
        ));
    }
    let offered = &bridge.config.scopes;
    match params.get("scope") {
        None => Ok(offered.clone()),
        Some(asked) => {
            // OpenID and refresh scopes are not ours to grant and not an error to ask for.
            let scopes: Vec<String> = offered
                .iter()
                .filter(|s| asked.split(' ').any(|a| a == s.as_str()))
                .cloned()
                .collect();
            if scopes.is_empty() {
                Err(BridgeError::refused(
                    "invalid_scope",
                    format!("ask for one of: {}", offered.join(" ")),
                ))
            } else {
                Ok(scopes)
            }
        }
    }
}

pub(crate) async fn callback(bridge: &Bridge, query: &str, deadline: Instant) -> Response<Body> {
    let params = match crate::form(query) {
        Ok(p) => p,
        Err(e) => return wire::page(&e),
    };
    let expired = || {
        wire::page(&BridgeError::invalid_request(
            "this sign-in has expired or is not valid; connect again from your application",
        ))
    };
    let Some(sign_in) = params
        .get("state")
        .and_then(|sealed| open_sign_in(&bridge.sealer, sealed, now()))
    else {
        return expired();
    };
    let issuer = &bridge.config.issuer;
    let fail = |e: BridgeError| {
        wire::redirect_error(&sign_in.redirect_uri, &e, sign_in.state.as_deref(), issuer)
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
    let granted = match user_grant(bridge, &claims, &sign_in.scopes) {
        Ok(g) => g,
        Err(e) => return fail(e),
    };
    let code = (|| {
        bridge.sealer.seal(
            Purpose::Code,
            &Code {
                jti: bridge.sealer.random_token(16)?,
                client_id: sign_in.client_id.clone(),
                redirect_uri: sign_in.redirect_uri.clone(),
                redirect_uri_given: sign_in.redirect_uri_given,
                code_challenge: sign_in.code_challenge.clone(),
                scopes: granted.1,
                sub: subject,
                tenant: granted.0,
                exp: now() + bridge.config.lifetimes.code.as_secs(),
            },
        )
    })();
    let code = match code {
        Ok(c) => c,
        Err(e) => return fail(e.into()),
    };
    let mut answer = vec![("code", code.as_str())];
    if let Some(state) = &sign_in.state {
        answer.push(("state", state));
    }
    answer.push(("iss", issuer));
    wire::redirect(&wire::with_params(&sign_in.redirect_uri, &answer))
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
            client_id: "dcr.x".into(),
            redirect_uri: "http://127.0.0.1:1/cb".into(),
            redirect_uri_given: true,
            code_challenge: "c".repeat(43),
            scopes: vec!["events:read".into()],
            state: Some("client-state".into()),
            upstream_verifier: "v".repeat(43),
            nonce: "n".into(),
            exp,
        }
    }

    #[test]
    fn a_state_opens_only_unexpired_untampered_and_for_a_sign_in() {
        let sealer = sealer(7);
        let now = 1_000_000;
        let good = sealer.seal(Purpose::SignIn, &sign_in(now + 600)).unwrap();
        assert!(open_sign_in(&sealer, &good, now).is_some());
        assert!(open_sign_in(&sealer, &good, now + 600).is_some());
        // Expired: one second past its end.
        assert!(open_sign_in(&sealer, &good, now + 601).is_none());
        // Tampered: any character changed.
        let mut bytes = good.clone().into_bytes();
        let i = bytes.len() / 2;
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(open_sign_in(&sealer, &tampered, now).is_none());
        // Sealed for another purpose (a refresh token or a code is not a sign-in).
        let other = sealer.seal(Purpose::Code, &sign_in(now + 600)).unwrap();
        assert!(open_sign_in(&sealer, &other, now).is_none());
        // Sealed by another deployment.
        assert!(open_sign_in(&self::sealer(8), &good, now).is_none());
    }
}
