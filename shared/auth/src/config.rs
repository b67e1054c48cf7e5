//! Verifier settings, read once at cold start.

use std::time::Duration;

use jsonwebtoken::Algorithm;
use mcp_env::{Env, EnvError};

use crate::claims::{canonical_resource, is_loopback_url};
use crate::keys::{JwksError, KeySet};

/// Everything the verifier needs to know.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Exact `iss` value (`AUTH_ISSUER`).
    pub issuer: String,
    /// This endpoint's canonical resource URI (`MCP_RESOURCE_URL`): what `aud` must contain
    /// (RFC 8707) and what the protected resource metadata names.
    pub resource: String,
    /// Accepted signing algorithms (`AUTH_ALGORITHMS`, default RS256,ES256,EdDSA).
    pub algorithms: Vec<Algorithm>,
    /// Clock skew tolerated on `exp`, `nbf`, `iat` (`AUTH_LEEWAY_SECS`, default 30).
    pub leeway: Duration,
    /// Longest accepted token lifetime (`AUTH_MAX_TOKEN_LIFETIME_SECS`, default 86400).
    pub max_lifetime: Duration,
    /// Require `typ: at+jwt` (RFC 9068) (`AUTH_REQUIRE_AT_JWT`, default false).
    pub require_access_token_type: bool,
    /// Claim holding the tenant (`AUTH_TENANT_CLAIM`); required in tokens when set.
    pub tenant_claim: Option<String>,
    /// Tenant of single-tenant deployments (`AUTH_DEFAULT_TENANT`).
    pub default_tenant: Option<String>,
    /// Tokens longer than this are refused before any decoding (`AUTH_MAX_TOKEN_BYTES`,
    /// default 8192).
    pub max_token_bytes: usize,
    /// How a token is bound to this server.
    pub binding: AudienceBinding,
    pub keys: KeysConfig,
}

/// How a token proves it was issued for this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudienceBinding {
    /// `aud` must contain the canonical resource URI (RFC 8707; MCP authorization
    /// §Access Token Privilege Restriction). The default and the recommendation.
    Resource,
    /// Amazon Cognito access tokens carry no `aud`: they carry `client_id` and
    /// `token_use = access`. `client_id` must be one of these app clients, dedicated to this
    /// server (`AUTH_COGNITO_CLIENT_IDS`).
    CognitoClientIds(Vec<String>),
    /// An OpenID Connect ID token for this client: `aud` must contain the client id exactly
    /// and, when it names several audiences, `azp` must be the client id (OpenID Connect
    /// Core 1.0 §3.1.3.7, items 3-5). The OAuth bridge verifies its upstream's ID tokens so.
    ClientId(String),
}

/// Where verification keys come from.
#[derive(Debug, Clone)]
pub enum KeysConfig {
    /// A JWKS given at start-up (`AUTH_JWKS_JSON` or `AUTH_JWKS_FILE`): development and tests.
    Static(KeySet),
    /// A JWKS fetched over HTTPS (`AUTH_JWKS_URL`, or the issuer's OIDC discovery document).
    Remote(RemoteKeysConfig),
}

/// How a remote JWKS is fetched and cached.
#[derive(Debug, Clone)]
pub struct RemoteKeysConfig {
    /// `None`: read `jwks_uri` from `<issuer>/.well-known/openid-configuration`.
    pub jwks_url: Option<String>,
    /// Keys younger than this are used without asking the issuer (`AUTH_JWKS_TTL_SECS`, 600).
    pub ttl: Duration,
    /// At most one refresh per this interval, however many unknown `kid`s arrive
    /// (`AUTH_JWKS_REFRESH_MIN_INTERVAL_SECS`, 60).
    pub refresh_min_interval: Duration,
    /// Cached keys stay usable this long past their TTL while the issuer is unreachable
    /// (`AUTH_JWKS_MAX_STALE_SECS`, 86400); after that, requests are refused.
    pub max_stale: Duration,
    /// Upper bound of one fetch, further bounded by the request deadline
    /// (`AUTH_JWKS_FETCH_TIMEOUT_MS`, 2000).
    pub fetch_timeout: Duration,
    /// Largest JWKS or discovery document read (64 KiB).
    pub max_bytes: usize,
}

impl Default for RemoteKeysConfig {
    fn default() -> Self {
        Self {
            jwks_url: None,
            ttl: Duration::from_secs(600),
            refresh_min_interval: Duration::from_secs(60),
            max_stale: Duration::from_secs(86_400),
            fetch_timeout: Duration::from_millis(2_000),
            max_bytes: 64 * 1024,
        }
    }
}

/// A configuration that cannot be served. Raised at cold start, never per request.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("{name} is required when AUTH_ISSUER is set")]
    Missing { name: &'static str },
    #[error("{name} is invalid: {why}")]
    Invalid { name: &'static str, why: String },
    #[error("AUTH_JWKS_FILE could not be read")]
    JwksFile(#[source] std::io::Error),
    #[error("the configured JWKS is unusable")]
    Jwks(#[source] JwksError),
    #[error(transparent)]
    Env(#[from] EnvError),
}

fn invalid(name: &'static str, why: impl Into<String>) -> AuthConfigError {
    AuthConfigError::Invalid {
        name,
        why: why.into(),
    }
}

impl AuthConfig {
    /// Reads the verifier configuration. `Ok(None)` when `AUTH_ISSUER` is unset: the caller
    /// must then refuse every request (fail closed), never serve unauthenticated.
    ///
    /// # Errors
    ///
    /// Names the variable that is missing or malformed.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, AuthConfigError> {
        let env = Env::new(get);
        let Some(issuer) = env.text("AUTH_ISSUER") else {
            return Ok(None);
        };
        let resource = env
            .var("MCP_RESOURCE_URL")
            .ok_or(AuthConfigError::Missing {
                name: "MCP_RESOURCE_URL",
            })?;
        if canonical_resource(&resource).is_none() || resource.contains('#') {
            return Err(invalid(
                "MCP_RESOURCE_URL",
                "expected an absolute http(s) URL without a fragment",
            ));
        }
        if !resource.to_ascii_lowercase().starts_with("https://") && !is_loopback_url(&resource) {
            return Err(invalid(
                "MCP_RESOURCE_URL",
                "must be https (http only on loopback)",
            ));
        }
        let algorithms = match env.list("AUTH_ALGORITHMS") {
            None => vec![Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA],
            Some(list) => list
                .iter()
                .map(|name| match name.parse::<Algorithm>() {
                    Ok(Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) | Err(_) => {
                        Err(invalid(
                            "AUTH_ALGORITHMS",
                            format!("{name:?} is not an accepted asymmetric algorithm"),
                        ))
                    }
                    Ok(alg) => Ok(alg),
                })
                .collect::<Result<_, _>>()?,
        };
        if algorithms.is_empty() {
            return Err(invalid("AUTH_ALGORITHMS", "names no algorithm"));
        }
        let leeway = env.seconds("AUTH_LEEWAY_SECS", Duration::from_secs(30))?;
        if leeway > Duration::from_secs(300) {
            return Err(invalid(
                "AUTH_LEEWAY_SECS",
                "at most 300 seconds of clock skew",
            ));
        }
        let keys = if let Some(json) = env.var("AUTH_JWKS_JSON") {
            KeysConfig::Static(
                KeySet::from_json(json.as_bytes(), &algorithms).map_err(AuthConfigError::Jwks)?,
            )
        } else if let Some(path) = env.var("AUTH_JWKS_FILE") {
            let bytes = std::fs::read(path).map_err(AuthConfigError::JwksFile)?;
            KeysConfig::Static(
                KeySet::from_json(&bytes, &algorithms).map_err(AuthConfigError::Jwks)?,
            )
        } else {
            let defaults = RemoteKeysConfig::default();
            let jwks_url = env.var("AUTH_JWKS_URL");
            for (name, url) in [
                ("AUTH_JWKS_URL", jwks_url.as_deref()),
                ("AUTH_ISSUER", Some(issuer.as_str())),
            ] {
                if let Some(url) = url
                    && !url.to_ascii_lowercase().starts_with("https://")
                    && !is_loopback_url(url)
                {
                    return Err(invalid(
                        name,
                        "keys are only fetched over https (http only on loopback)",
                    ));
                }
            }
            let fetch_timeout = env.millis("AUTH_JWKS_FETCH_TIMEOUT_MS", defaults.fetch_timeout)?;
            KeysConfig::Remote(RemoteKeysConfig {
                jwks_url,
                ttl: env.seconds("AUTH_JWKS_TTL_SECS", defaults.ttl)?,
                refresh_min_interval: env.seconds(
                    "AUTH_JWKS_REFRESH_MIN_INTERVAL_SECS",
                    defaults.refresh_min_interval,
                )?,
                max_stale: env.seconds("AUTH_JWKS_MAX_STALE_SECS", defaults.max_stale)?,
                fetch_timeout,
                max_bytes: defaults.max_bytes,
            })
        };
        let max_token_bytes = env.parsed_or("AUTH_MAX_TOKEN_BYTES", "a byte count", 8192)?;
        let binding = match env.list("AUTH_COGNITO_CLIENT_IDS") {
            None => AudienceBinding::Resource,
            Some(ids) => {
                if ids.is_empty() {
                    return Err(invalid("AUTH_COGNITO_CLIENT_IDS", "names no app client"));
                }
                AudienceBinding::CognitoClientIds(ids)
            }
        };
        Ok(Some(Self {
            binding,
            issuer,
            resource,
            algorithms,
            leeway,
            max_lifetime: env
                .seconds("AUTH_MAX_TOKEN_LIFETIME_SECS", Duration::from_secs(86_400))?,
            require_access_token_type: env.flag("AUTH_REQUIRE_AT_JWT"),
            tenant_claim: env.text("AUTH_TENANT_CLAIM"),
            default_tenant: env.text("AUTH_DEFAULT_TENANT"),
            max_token_bytes,
            keys,
        }))
    }
}
