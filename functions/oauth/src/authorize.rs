//! `/oauth/authorize`: checks the client's request, then asks the user on the bridge's own
//! consent page (`consent.rs`) before anything goes upstream (`signin.rs`). Until the client
//! and its redirect URI check out, errors are shown, never redirected.

use std::collections::BTreeMap;

use http::HeaderMap;
use lambda_http::{Body, Response};

use crate::bridge::{Bridge, now};
use crate::browser::Browser;
use crate::cimd::{Documents, is_document_url};
use crate::clients::{self, Registration, shown};
use crate::consent::{self, Client};
use crate::error::BridgeError;
use crate::seal::Sealer;
use crate::signin::Authorization;
use crate::wire;

/// Longest client `state` taken.
const MAX_STATE_LEN: usize = 1024;

/// RFC 7636 §4.2: a challenge is 43 base64url characters for S256.
fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub(crate) async fn authorize(bridge: &Bridge, query: &str, headers: &HeaderMap) -> Response<Body> {
    let params = match crate::bridge::form(query) {
        Ok(p) => p,
        Err(e) => return wire::page(&e),
    };
    let Some(client_id) = params.get("client_id") else {
        return wire::page(&BridgeError::invalid_request("client_id is required"));
    };
    let client = match client(&bridge.sealer, &bridge.documents, client_id).await {
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
    // The client's state travels sealed inside the consent form and the upstream's state:
    // bounded, so that URL stays a URL every upstream takes.
    if params.get("state").is_some_and(|s| s.len() > MAX_STATE_LEN) {
        return wire::page(&BridgeError::invalid_request(format!(
            "state is longer than {MAX_STATE_LEN} characters"
        )));
    }
    let state = params.get("state").cloned();
    let scopes = match check_request(bridge, &params) {
        Ok(scopes) => scopes,
        // RFC 6749 §4.1.2.1 sends such errors to the redirect URI, but anyone can register
        // one here: only a client this browser approved gets them; for any other the bridge
        // would be an open redirector (RFC 9700 §4.11.2), so the error is shown.
        Err(e) => {
            let trusted = Browser::from_headers(&bridge.sealer, headers, bridge.secure())
                .is_some_and(|b| b.trusts(client_id, &redirect_uri, now()));
            return if trusted {
                wire::redirect_error(&redirect_uri, &e, state.as_deref(), &bridge.config.issuer)
            } else {
                wire::page(&e)
            };
        }
    };
    let request = Authorization {
        client_id: client_id.clone(),
        redirect_uri,
        redirect_uri_given: given,
        code_challenge: params.get("code_challenge").cloned().unwrap_or_default(),
        scopes,
        state,
        refresh: client.refresh,
        jwks_uri: client.jwks_uri.clone(),
    };
    let client = Client {
        registration: &client,
        by_document: is_document_url(client_id),
    };
    consent::ask(
        bridge,
        client,
        request,
        headers,
        params.get("prompt").map(String::as_str),
    )
    .await
}

/// The client `client_id` names: its metadata document (fetched), or its registration here.
async fn client(
    sealer: &Sealer,
    documents: &Documents,
    client_id: &str,
) -> Result<Registration, BridgeError> {
    if is_document_url(client_id) {
        return documents.resolve(client_id).await;
    }
    clients::resolve(sealer, client_id).ok_or_else(|| {
        BridgeError::refused(
            "invalid_client",
            "this application is not registered here (or its registration is from another \
             deployment); it should register again",
        )
    })
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
