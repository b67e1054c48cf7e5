//! Client assertions: a client whose metadata document declares `private_key_jwt` (ChatGPT's
//! per-connector documents do) authenticates at the token endpoint with a JWT signed by a key
//! its document's `jwks_uri` publishes (RFC 7523 §2.2 and §3; OpenID Connect Core 1.0 §9).
//! Checked: the assertion type, the signature by a key of that JWKS (fetched as documents
//! are: https, public addresses only, bounded), `iss` and `sub` both the client id, `aud` this
//! token endpoint or this issuer, `exp` near, and `jti` used once (the table's conditional
//! write, so once across every sandbox). PKCE still binds the code: the assertion is in
//! addition, never instead.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_auth::{AudienceBinding, AuthConfig, KeySet, KeysConfig, Verifier};
use serde_json::Value;

use crate::bridge::{Bridge, TOKEN_PATH, now};
use crate::error::BridgeError;

/// RFC 7523 §2.2.
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// Longest an assertion may live: it is made for one request.
const MAX_LIFETIME: Duration = Duration::from_secs(300);
/// Clock skew allowed between the client and the bridge.
const LEEWAY: Duration = Duration::from_secs(30);

fn refused(description: impl Into<std::borrow::Cow<'static, str>>) -> BridgeError {
    BridgeError::refused("invalid_client", description)
}

/// Checks the client assertion in `params` for `client_id`, whose keys are at `jwks_uri`.
pub(crate) async fn verify(
    bridge: &Bridge,
    params: &BTreeMap<String, String>,
    client_id: &str,
    jwks_uri: &str,
) -> Result<(), BridgeError> {
    if params.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
        return Err(refused(
            "this client authenticates with private_key_jwt: send client_assertion_type \
             urn:ietf:params:oauth:client-assertion-type:jwt-bearer and client_assertion",
        ));
    }
    let Some(assertion) = params.get("client_assertion") else {
        return Err(refused("client_assertion is required"));
    };
    let jwks = bridge.documents.keys(jwks_uri).await?;
    let keys = KeySet::from_json(&jwks, &ALGORITHMS)
        .map_err(|_| refused("the client's jwks_uri holds no usable key"))?;
    // `aud`: this token endpoint (RFC 7523 §3, item 3) or, as many clients send, the issuer.
    let audiences = [
        bridge.config.endpoint(TOKEN_PATH),
        bridge.config.issuer.clone(),
    ];
    let mut last = None;
    for audience in audiences {
        let verifier = Verifier::new(AuthConfig {
            issuer: client_id.to_owned(),
            resource: String::new(),
            algorithms: ALGORITHMS.to_vec(),
            leeway: LEEWAY,
            max_lifetime: MAX_LIFETIME,
            require_access_token_type: false,
            tenant_claim: None,
            default_tenant: None,
            max_token_bytes: 8 * 1024,
            binding: AudienceBinding::ClientId(audience),
            keys: KeysConfig::Static(keys.clone()),
        });
        match verifier.verify_with_claims(assertion, None).await {
            Ok((principal, claims)) => {
                return single_use(bridge, client_id, &principal.subject, &claims).await;
            }
            Err(e) => last = Some(e),
        }
    }
    Err(refused(format!(
        "the client assertion is not valid: {}",
        last.map(|e| e.to_string()).unwrap_or_default()
    )))
}

const ALGORITHMS: [mcp_auth::Algorithm; 3] = [
    mcp_auth::Algorithm::RS256,
    mcp_auth::Algorithm::ES256,
    mcp_auth::Algorithm::PS256,
];

/// `sub` is the client too, and the assertion's `jti` has not been seen before.
async fn single_use(
    bridge: &Bridge,
    client_id: &str,
    subject: &str,
    claims: &BTreeMap<String, Value>,
) -> Result<(), BridgeError> {
    if subject != client_id {
        return Err(refused("the client assertion's sub must be the client id"));
    }
    let Some(jti) = claims
        .get("jti")
        .and_then(Value::as_str)
        .filter(|j| !j.is_empty() && j.len() <= 256)
    else {
        return Err(refused("the client assertion needs a jti"));
    };
    // Kept until no assertion with this jti could still be accepted: its lifetime is at
    // most MAX_LIFETIME from now, plus the verifier's leeway on each side.
    let expires = now() + MAX_LIFETIME.as_secs() + 2 * LEEWAY.as_secs();
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{client_id}\n{jti}").as_bytes(),
    );
    let key: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    if bridge.store.use_assertion(&key, expires).await? {
        Ok(())
    } else {
        Err(refused("this client assertion was already used"))
    }
}
