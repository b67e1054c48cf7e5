//! The bridge's settings, read once at cold start. Secrets (the sealing key, the upstream
//! client secret) are named here by their Secrets Manager id and read by `lib.rs`.

use std::time::Duration;

use anyhow::{Context, bail};
use mcp_env::Env;

/// Everything the bridge needs to know.
#[derive(Debug, Clone)]
pub struct Config {
    /// This authorization server's issuer identifier (`OAUTH_ISSUER`): an https URL, or http
    /// on a loopback host for local runs. Every endpoint is under it.
    pub issuer: String,
    /// The MCP URL, the one resource tokens are issued for (`MCP_RESOURCE_URL`): the `aud` of
    /// every access token (RFC 8707).
    pub resource: String,
    /// The scopes the endpoint defines (`OAUTH_SCOPES`, default `events:read`).
    pub scopes: Vec<String>,
    /// Who may have which scope: `(group, scope)` pairs from `OAUTH_GROUP_SCOPES`
    /// (`group=scope,...`). Empty: every signed-in user may have every scope.
    pub group_scopes: Vec<(String, String)>,
    /// The claim of the upstream ID token that lists the user's groups
    /// (`UPSTREAM_GROUPS_CLAIM`, default `cognito:groups`).
    pub groups_claim: String,
    /// The claim of the upstream ID token holding the user's tenant (`UPSTREAM_TENANT_CLAIM`,
    /// e.g. `custom:tenant_id` for a Cognito custom attribute).
    pub upstream_tenant_claim: Option<String>,
    /// Tenant of users whose ID token has none (`UPSTREAM_DEFAULT_TENANT`): single-tenant
    /// deployments. Without either setting nobody can sign in.
    pub default_tenant: Option<String>,
    /// The claim of issued access tokens that holds the tenant (`OAUTH_TENANT_CLAIM`, default
    /// `tenant_id`): what the endpoint's `AUTH_TENANT_CLAIM` names.
    pub tenant_claim: String,
    pub upstream: UpstreamConfig,
    /// KMS key that signs access tokens (`OAUTH_KMS_KEY_ID`), then keys still published so
    /// that tokens they signed keep verifying during a rotation (`OAUTH_KMS_PREVIOUS_KEY_IDS`).
    pub signing_keys: Vec<String>,
    /// DynamoDB table for single-use codes and refresh token families (`OAUTH_TABLE`).
    pub table: String,
    pub lifetimes: Lifetimes,
    pub cimd: CimdConfig,
}

/// How client metadata documents are fetched (`cimd.rs`).
#[derive(Debug, Clone)]
pub struct CimdConfig {
    /// Whether documents may be fetched from loopback addresses: only when the bridge itself
    /// runs on loopback (`OAUTH_ISSUER` on 127.0.0.1 or localhost: tests and local runs).
    pub allow_loopback: bool,
    /// Bound of one fetch, redirects included (`OAUTH_CIMD_TIMEOUT_MS`, default 3000).
    pub timeout: Duration,
    /// A PEM root certificate trusted besides the public ones (`OAUTH_CIMD_CA_FILE`): local
    /// runs only, where the tests publish documents on https://127.0.0.1.
    pub extra_root_pem: Option<Vec<u8>>,
    /// How long a fetched document is used before it is fetched again (5 minutes).
    pub fresh_for: Duration,
    /// How long a document is still used when fetching it again fails (24 hours): vendors'
    /// documents have been down for hours, and a failed fetch must not lock every user of
    /// that client out.
    pub stale_for: Duration,
}

/// The upstream OpenID Connect issuer users sign in with (Cognito, or any other).
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// Exact issuer (`UPSTREAM_ISSUER`); endpoints come from its discovery document.
    pub issuer: String,
    /// The bridge's own confidential client at the upstream (`UPSTREAM_CLIENT_ID`).
    pub client_id: String,
    /// The scopes asked of the upstream (`UPSTREAM_SCOPES`, default `openid email profile`).
    pub scopes: Vec<String>,
    /// Bound on each call to the upstream (`UPSTREAM_TIMEOUT_MS`, default 5000).
    pub timeout: Duration,
}

/// The reuse window of a rotated refresh token (see [`Lifetimes::refresh_reuse`]): short
/// enough that a copied token is still caught (RFC 9700 §4.14.2) unless it is used within
/// seconds of the rotation, as the grace periods of hosted authorization servers do.
pub const REFRESH_REUSE: Duration = Duration::from_secs(10);

/// How long each thing the bridge hands out stays good.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    /// Access tokens (`OAUTH_ACCESS_TOKEN_TTL_SECS`, default 600).
    pub access_token: Duration,
    /// A refresh token family, from the sign-in; rotation does not extend it
    /// (`OAUTH_REFRESH_TOKEN_TTL_SECS`, default 30 days).
    pub refresh_token: Duration,
    /// Authorization codes (60 s; RFC 6749 §4.1.2 recommends at most 10 minutes).
    pub code: Duration,
    /// The sealed `state` of a sign-in at the upstream (10 minutes).
    pub sign_in: Duration,
    /// How long after a rotation the refresh token it replaced is still honoured (10 s):
    /// clients refresh from concurrent requests that met the same expired token, and a
    /// second refresh with the token the first just rotated is theirs, not a thief's.
    pub refresh_reuse: Duration,
}

impl Config {
    /// Reads the settings from `env`.
    ///
    /// # Errors
    ///
    /// Names the missing or malformed variable.
    pub fn from_env<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> anyhow::Result<Self> {
        let required = |name: &str| {
            env.text(name)
                .with_context(|| format!("{name} is required by the OAuth bridge"))
        };
        let issuer = required("OAUTH_ISSUER")?.trim_end_matches('/').to_owned();
        check_base_url("OAUTH_ISSUER", &issuer)?;
        let resource = required("MCP_RESOURCE_URL")?;
        check_base_url("MCP_RESOURCE_URL", &resource)?;
        let upstream_issuer = required("UPSTREAM_ISSUER")?;
        check_base_url("UPSTREAM_ISSUER", &upstream_issuer)?;
        let mut group_scopes = Vec::new();
        for pair in env.list("OAUTH_GROUP_SCOPES").unwrap_or_default() {
            let Some((group, scope)) = pair.split_once('=') else {
                bail!("OAUTH_GROUP_SCOPES must be group=scope pairs separated by commas");
            };
            group_scopes.push((group.trim().to_owned(), scope.trim().to_owned()));
        }
        let scopes = env
            .text("OAUTH_SCOPES")
            .map_or_else(|| vec!["events:read".to_owned()], |s| words(&s));
        if let Some((_, scope)) = group_scopes.iter().find(|(_, s)| !scopes.contains(s)) {
            bail!("OAUTH_GROUP_SCOPES names {scope:?}, which OAUTH_SCOPES does not define");
        }
        let mut signing_keys = vec![required("OAUTH_KMS_KEY_ID")?];
        signing_keys.extend(env.list("OAUTH_KMS_PREVIOUS_KEY_IDS").unwrap_or_default());
        let lifetimes = Lifetimes {
            access_token: env.seconds("OAUTH_ACCESS_TOKEN_TTL_SECS", Duration::from_secs(600))?,
            refresh_token: env.seconds(
                "OAUTH_REFRESH_TOKEN_TTL_SECS",
                Duration::from_secs(30 * 24 * 3600),
            )?,
            code: Duration::from_secs(60),
            sign_in: Duration::from_secs(600),
            refresh_reuse: REFRESH_REUSE,
        };
        if lifetimes.access_token.is_zero() || lifetimes.access_token > Duration::from_secs(3600) {
            bail!("OAUTH_ACCESS_TOKEN_TTL_SECS must be between 1 and 3600");
        }
        let local = mcp_auth::is_loopback_url(&issuer);
        let cimd = CimdConfig {
            fresh_for: Duration::from_secs(300),
            stale_for: Duration::from_secs(24 * 3600),
            allow_loopback: local,
            timeout: env.millis("OAUTH_CIMD_TIMEOUT_MS", Duration::from_millis(3000))?,
            extra_root_pem: match env.text("OAUTH_CIMD_CA_FILE") {
                None => None,
                Some(_) if !local => {
                    bail!("OAUTH_CIMD_CA_FILE is for local runs only (OAUTH_ISSUER on loopback)")
                }
                Some(path) => Some(
                    std::fs::read(&path)
                        .with_context(|| format!("OAUTH_CIMD_CA_FILE: cannot read {path}"))?,
                ),
            },
        };
        if cimd.timeout.is_zero() || cimd.timeout > Duration::from_secs(10) {
            bail!("OAUTH_CIMD_TIMEOUT_MS must be between 1 and 10000");
        }
        Ok(Self {
            issuer,
            resource,
            scopes,
            group_scopes,
            groups_claim: env
                .text("UPSTREAM_GROUPS_CLAIM")
                .unwrap_or_else(|| "cognito:groups".to_owned()),
            upstream_tenant_claim: env.text("UPSTREAM_TENANT_CLAIM"),
            default_tenant: env.text("UPSTREAM_DEFAULT_TENANT"),
            tenant_claim: env
                .text("OAUTH_TENANT_CLAIM")
                .unwrap_or_else(|| "tenant_id".to_owned()),
            upstream: UpstreamConfig {
                issuer: upstream_issuer,
                client_id: required("UPSTREAM_CLIENT_ID")?,
                scopes: env
                    .text("UPSTREAM_SCOPES")
                    .map_or_else(|| words("openid email profile"), |s| words(&s)),
                timeout: env.millis("UPSTREAM_TIMEOUT_MS", Duration::from_millis(5000))?,
            },
            signing_keys,
            table: required("OAUTH_TABLE")?,
            lifetimes,
            cimd,
        })
    }

    /// An endpoint of this server: `issuer` + `path`.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

/// https, or http on a loopback host (local runs and tests); no fragment, no credentials.
fn check_base_url(name: &str, value: &str) -> anyhow::Result<()> {
    let url = url::Url::parse(value).with_context(|| format!("{name} must be a URL"))?;
    let loopback = mcp_auth::is_loopback_url(value);
    if !(url.scheme() == "https" || (url.scheme() == "http" && loopback))
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        bail!("{name} must be an https URL (http only on a loopback host), got {value:?}");
    }
    Ok(())
}
