//! `/oauth/token`: the authorization code grant (PKCE, client and redirect URI checked,
//! single use) and the refresh token grant (rotation with reuse detection). Access tokens
//! are RFC 9068 JWTs for the MCP URL, signed in KMS; refresh tokens are sealed and name
//! their family in the table.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::bridge::{Bridge, now};
use crate::clients::{self, shown};
use crate::error::BridgeError;
use crate::seal::{Purpose, s256, same};
use crate::signin::Code;
use crate::store::Rotation;

/// A refresh token, sealed.
#[derive(Serialize, Deserialize)]
struct Refresh {
    #[serde(rename = "f")]
    family: String,
    #[serde(rename = "g")]
    generation: u64,
    #[serde(rename = "c")]
    client_id: String,
    #[serde(rename = "s")]
    scopes: Vec<String>,
    sub: String,
    #[serde(rename = "t")]
    tenant: String,
    /// The family's end, fixed at sign-in: rotation does not extend it.
    exp: u64,
    /// The keys of a client that authenticates with `private_key_jwt`: each refresh is
    /// authenticated too.
    #[serde(rename = "k", default, skip_serializing_if = "Option::is_none")]
    jwks_uri: Option<String>,
}

/// Answers a token request from its form parameters.
pub(crate) async fn token(
    bridge: &Bridge,
    params: &BTreeMap<String, String>,
) -> Result<Value, BridgeError> {
    let client_id = params.get("client_id").ok_or_else(|| {
        BridgeError::refused(
            "invalid_client",
            "client_id is required (this server's clients are public: no secret)",
        )
    })?;
    // A metadata document is not fetched again here: the code or refresh token is sealed
    // for this very client_id, and PKCE binds the code to whoever started the sign-in.
    let known = if crate::cimd::is_document_url(client_id) {
        crate::cimd::valid_client_id(client_id, bridge.config.cimd.allow_loopback)
    } else {
        clients::resolve(&bridge.sealer, client_id).is_some()
    };
    if !known {
        return Err(BridgeError::refused(
            "invalid_client",
            "this application is not registered here; it should register again",
        ));
    }
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
    match params.get("grant_type").map(String::as_str) {
        Some("authorization_code") => code_grant(bridge, params, client_id).await,
        Some("refresh_token") => refresh_grant(bridge, params, client_id).await,
        None => Err(BridgeError::invalid_request("grant_type is required")),
        Some(other) => Err(BridgeError::refused(
            "unsupported_grant_type",
            format!("grant_type {} is not offered", shown(other)),
        )),
    }
}

/// RFC 7636 §4.1: 43 to 128 unreserved characters.
fn valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

async fn code_grant(
    bridge: &Bridge,
    params: &BTreeMap<String, String>,
    client_id: &str,
) -> Result<Value, BridgeError> {
    let invalid = || BridgeError::invalid_grant("the authorization code is not valid");
    let code: Code = params
        .get("code")
        .and_then(|c| bridge.sealer.open(Purpose::Code, c))
        .ok_or_else(invalid)?;
    if code.exp < now() {
        return Err(BridgeError::invalid_grant(
            "the authorization code has expired",
        ));
    }
    let request = &code.request;
    if request.client_id != client_id {
        return Err(BridgeError::invalid_grant(
            "the authorization code was issued to another client",
        ));
    }
    // OAuth 2.1 §4.1.3: the same redirect URI as the authorization request, if it had one.
    match params.get("redirect_uri") {
        Some(uri) if uri == &request.redirect_uri => {}
        None if !request.redirect_uri_given => {}
        _ => {
            return Err(BridgeError::invalid_grant(
                "redirect_uri differs from the authorization request's",
            ));
        }
    }
    if let Some(jwks_uri) = &request.jwks_uri {
        crate::assertion::verify(bridge, params, client_id, jwks_uri).await?;
    }
    let verifier = params
        .get("code_verifier")
        .ok_or_else(|| BridgeError::invalid_request("code_verifier is required (PKCE)"))?;
    if !valid_verifier(verifier) || !same(&s256(verifier), &request.code_challenge) {
        return Err(BridgeError::invalid_grant("PKCE verification failed"));
    }
    let family = bridge.sealer.random_token(16)?;
    let family_end = now() + bridge.config.lifetimes.refresh_token.as_secs();
    if !bridge
        .store
        .redeem_code(&code.jti, &family, family_end)
        .await?
    {
        return Err(BridgeError::invalid_grant(
            "the authorization code was already used; what it granted is revoked",
        ));
    }
    // RFC 7591 §2: a client that did not register the refresh token grant gets none, and
    // no family is started for it.
    if request.refresh {
        bridge.store.start_family(&family, family_end).await?;
    }
    let refresh = Refresh {
        family,
        generation: 0,
        client_id: client_id.to_owned(),
        scopes: request.scopes.clone(),
        sub: code.sub,
        tenant: code.tenant,
        exp: family_end,
        jwks_uri: code.request.jwks_uri,
    };
    issue(bridge, &refresh, &refresh.scopes, code.request.refresh).await
}

async fn refresh_grant(
    bridge: &Bridge,
    params: &BTreeMap<String, String>,
    client_id: &str,
) -> Result<Value, BridgeError> {
    let refresh: Refresh = params
        .get("refresh_token")
        .and_then(|t| bridge.sealer.open(Purpose::Refresh, t))
        .ok_or_else(|| BridgeError::invalid_grant("the refresh token is not valid"))?;
    if refresh.exp < now() {
        return Err(BridgeError::invalid_grant(
            "the refresh token has expired; sign in again",
        ));
    }
    if refresh.client_id != client_id {
        return Err(BridgeError::invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    if let Some(jwks_uri) = &refresh.jwks_uri {
        crate::assertion::verify(bridge, params, client_id, jwks_uri).await?;
    }
    // RFC 6749 §6: a narrower scope may be asked for, never a wider one.
    let scopes = match params.get("scope") {
        None => refresh.scopes.clone(),
        Some(asked) => {
            let asked: Vec<String> = asked
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if asked.is_empty() || asked.iter().any(|s| !refresh.scopes.contains(s)) {
                return Err(BridgeError::refused(
                    "invalid_scope",
                    "a refresh may only ask for scopes granted at sign-in",
                ));
            }
            asked
        }
    };
    match bridge
        .store
        .rotate(
            &refresh.family,
            refresh.generation,
            refresh.exp,
            bridge.config.lifetimes.refresh_reuse,
        )
        .await?
    {
        // Either way the caller gets the generation after the one it presented: a client
        // that refreshed twice at once holds two equal tokens.
        Rotation::Rotated | Rotation::Concurrent => {}
        Rotation::Refused => {
            return Err(BridgeError::invalid_grant(
                "the refresh token was already used or revoked; sign in again",
            ));
        }
    }
    let next = Refresh {
        generation: refresh.generation + 1,
        ..refresh
    };
    issue(bridge, &next, &scopes, true).await
}

/// The token response (RFC 6749 §5.1) for `refresh`'s user, with an access token for
/// `scopes` and, if `with_refresh`, `refresh` itself, sealed, as the next refresh token.
async fn issue(
    bridge: &Bridge,
    refresh: &Refresh,
    scopes: &[String],
    with_refresh: bool,
) -> Result<Value, BridgeError> {
    let config = &bridge.config;
    let issued_at = now();
    let lifetime = config.lifetimes.access_token.as_secs();
    let scope = scopes.join(" ");
    let mut claims = json!({
        "iss": config.issuer,
        "sub": refresh.sub,
        "aud": config.resource,
        "client_id": refresh.client_id,
        "scope": scope,
        "iat": issued_at,
        "exp": issued_at + lifetime,
        "jti": bridge.sealer.random_token(16)?,
    });
    claims[config.tenant_claim.as_str()] = json!(refresh.tenant);
    let access_token = bridge.signer.sign(&claims).await?;
    let mut answer = json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": lifetime,
        "scope": scope,
    });
    if with_refresh {
        answer["refresh_token"] = json!(bridge.sealer.seal(Purpose::Refresh, refresh)?);
    }
    Ok(answer)
}
