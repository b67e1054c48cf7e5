//! The upstream OpenID Connect issuer where users sign in. The bridge is an ordinary
//! confidential client there: its own client id and secret, its own PKCE and `nonce` for
//! each sign-in. The `oauth2` crate builds the authorization URL and makes the code exchange;
//! `mcp_auth` verifies the ID token against the upstream's JWKS, as the endpoint verifies
//! access tokens.

use std::collections::BTreeMap;
use std::time::Instant;

use mcp_auth::{AudienceBinding, AuthConfig, KeysConfig, RemoteKeysConfig, Verifier};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse,
    BasicTokenType,
};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet,
    ExtraTokenFields, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    StandardRevocableToken, StandardTokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::config::UpstreamConfig;
use crate::error::BridgeError;

/// The one extra field of an OpenID token response the bridge reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IdTokenField {
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

type TokenResponse = StandardTokenResponse<IdTokenField, BasicTokenType>;

type OidcClient = oauth2::Client<
    BasicErrorResponse,
    TokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// The part of the upstream's discovery document the bridge uses.
#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
}

/// What discovery yields, once per sandbox.
struct Resolved {
    client: OidcClient,
    verifier: Verifier,
}

pub(crate) struct Upstream {
    config: UpstreamConfig,
    secret: String,
    callback: String,
    http: reqwest::Client,
    resolved: OnceCell<Resolved>,
}

/// Largest discovery document read.
const MAX_DISCOVERY_BYTES: usize = 64 * 1024;

impl Upstream {
    /// `callback` is the bridge's redirect URI registered at the upstream.
    pub(crate) fn new(config: UpstreamConfig, secret: String, callback: String) -> Self {
        // No redirects: following one from a token endpoint is an SSRF vector (and the
        // `oauth2` crate's own advice).
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .build()
            .unwrap_or_default();
        Self {
            config,
            secret,
            callback,
            http,
            resolved: OnceCell::new(),
        }
    }

    async fn resolved(&self) -> Result<&Resolved, BridgeError> {
        self.resolved
            .get_or_try_init(|| async {
                let discovery = self.discover().await?;
                let unavailable = |what: &str| BridgeError::unavailable(format!("upstream {what}"));
                let client = oauth2::Client::new(ClientId::new(self.config.client_id.clone()))
                    .set_client_secret(ClientSecret::new(self.secret.clone()))
                    .set_auth_uri(
                        AuthUrl::new(discovery.authorization_endpoint)
                            .map_err(|_| unavailable("authorization_endpoint is not a URL"))?,
                    )
                    .set_token_uri(
                        TokenUrl::new(discovery.token_endpoint)
                            .map_err(|_| unavailable("token_endpoint is not a URL"))?,
                    )
                    .set_redirect_uri(
                        RedirectUrl::new(self.callback.clone())
                            .map_err(|_| unavailable("callback is not a URL"))?,
                    );
                let verifier = Verifier::new(AuthConfig {
                    issuer: self.config.issuer.clone(),
                    resource: String::new(),
                    algorithms: vec![
                        mcp_auth::Algorithm::RS256,
                        mcp_auth::Algorithm::ES256,
                        mcp_auth::Algorithm::PS256,
                    ],
                    leeway: std::time::Duration::from_secs(60),
                    max_lifetime: std::time::Duration::from_secs(24 * 3600),
                    require_access_token_type: false,
                    tenant_claim: None,
                    default_tenant: None,
                    // Cognito ID tokens with many groups are large.
                    max_token_bytes: 32 * 1024,
                    binding: AudienceBinding::ClientId(self.config.client_id.clone()),
                    keys: KeysConfig::Remote(RemoteKeysConfig {
                        jwks_url: Some(discovery.jwks_uri),
                        ..RemoteKeysConfig::default()
                    }),
                });
                Ok(Resolved { client, verifier })
            })
            .await
    }

    /// The upstream's discovery document, whose `issuer` must be the configured one exactly
    /// (OpenID Connect Discovery 1.0 §4.3).
    async fn discover(&self) -> Result<Discovery, BridgeError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.config.issuer.trim_end_matches('/')
        );
        let response = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|e| BridgeError::unavailable(format!("upstream discovery: {e}")))?;
        if !response.status().is_success() {
            return Err(BridgeError::unavailable(format!(
                "upstream discovery answered {}",
                response.status()
            )));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| BridgeError::unavailable(format!("upstream discovery: {e}")))?;
        if body.len() > MAX_DISCOVERY_BYTES {
            return Err(BridgeError::unavailable(
                "upstream discovery document too large",
            ));
        }
        let discovery: Discovery = serde_json::from_slice(&body)
            .map_err(|e| BridgeError::unavailable(format!("upstream discovery: {e}")))?;
        if discovery.issuer != self.config.issuer {
            return Err(BridgeError::unavailable(
                "upstream discovery names another issuer",
            ));
        }
        Ok(discovery)
    }

    /// Where to send the user: the upstream's authorization endpoint with the bridge's
    /// client, `state`, PKCE challenge of `verifier`, and `nonce`.
    pub(crate) async fn authorization_url(
        &self,
        state: String,
        verifier: &str,
        nonce: &str,
    ) -> Result<String, BridgeError> {
        let resolved = self.resolved().await?;
        let challenge =
            PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.into()));
        let (url, _) = resolved
            .client
            .authorize_url(|| CsrfToken::new(state))
            .add_scopes(self.config.scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge)
            .add_extra_param("nonce", nonce)
            .url();
        Ok(url.into())
    }

    /// The user's verified ID token claims for the upstream's `code`: exchanged with the
    /// bridge's client credentials and PKCE `verifier`; the ID token's signature, issuer,
    /// audience, expiry and `nonce` checked.
    pub(crate) async fn sign_in(
        &self,
        code: String,
        verifier: String,
        nonce: &str,
        deadline: Instant,
    ) -> Result<(String, BTreeMap<String, Value>), BridgeError> {
        let resolved = self.resolved().await?;
        let tokens = resolved
            .client
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                // The upstream refused the code (used, expired, not ours): the user starts
                // again; nothing is wrong with the bridge.
                oauth2::RequestTokenError::ServerResponse(r) => BridgeError::refused(
                    "access_denied",
                    format!("the identity provider refused the sign-in ({})", r.error()),
                ),
                other => BridgeError::unavailable(format!("upstream token endpoint: {other}")),
            })?;
        let id_token = tokens.extra_fields().id_token.as_deref().ok_or_else(|| {
            BridgeError::unavailable("the upstream token response has no id_token")
        })?;
        let (principal, claims) = resolved
            .verifier
            .verify_with_claims(id_token, Some(deadline))
            .await
            .map_err(|e| {
                BridgeError::refused(
                    "access_denied",
                    format!("the identity provider's ID token was refused: {e}"),
                )
            })?;
        // OpenID Connect Core §3.1.3.7 item 11: the nonce sent must come back.
        let returned = claims.get("nonce").and_then(Value::as_str).unwrap_or("");
        if !crate::seal::same(returned, nonce) {
            return Err(BridgeError::refused(
                "access_denied",
                "the identity provider's ID token was refused: wrong nonce",
            ));
        }
        Ok((principal.subject, claims))
    }
}
