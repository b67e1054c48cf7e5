//! Settings read once, at cold start, from the environment.

use std::time::Duration;

use anyhow::bail;
use mcp_auth::AuthConfig;
use mcp_env::Env;

/// Everything the HTTP layer needs to know about its deployment.
#[derive(Debug, Clone)]
pub struct Config {
    /// Path of the MCP endpoint (`MCP_PATH`, default `/mcp`).
    pub mcp_path: String,
    /// Browser origins allowed to call the endpoint (`ALLOWED_ORIGINS`).
    pub allowed_origins: OriginPolicy,
    /// Host names the endpoint answers for (`ALLOWED_HOSTS`).
    pub allowed_hosts: HostPolicy,
    /// Largest accepted request body (`MAX_BODY_BYTES`, default 1 MiB).
    pub max_body_bytes: usize,
    /// Time kept back from the invocation deadline to serialise and return the answer
    /// (`DEADLINE_MARGIN_MS`, default 500).
    pub deadline_margin: Duration,
    /// Largest serialised tool result (`RESPONSE_BUDGET_BYTES`, default 96 KiB, at most
    /// 4 MiB: well under Lambda's 6 MB buffered response limit). A call's budget is the
    /// smallest of this, the tool's and the client's (`mcp_protocol::budget`).
    pub response_budget: usize,
    /// How callers are authenticated.
    pub auth: AuthSetting,
    /// Authorization servers named in the protected resource metadata
    /// (`AUTH_AUTHORIZATION_SERVERS`, default: the issuer).
    pub authorization_servers: Vec<String>,
    /// Where clients find the protected resource metadata
    /// (`MCP_RESOURCE_METADATA_URL`, default: RFC 9728 path insertion into
    /// `MCP_RESOURCE_URL`). Set it when a proxy or stage prefix changes what is routable.
    pub resource_metadata_url: Option<String>,
    /// CloudWatch namespace of the Embedded Metric Format lines (`METRICS_NAMESPACE`,
    /// default `EventStoreMcp`); `off` turns them off.
    pub metrics_namespace: Option<String>,
    /// The domain verification token OpenAI gives for an app
    /// (`OPENAI_APPS_CHALLENGE`), served unauthenticated at
    /// `/.well-known/openai-apps-challenge`; unset: that path is 404.
    pub openai_apps_challenge: Option<String>,
}

/// How requests are authenticated.
#[derive(Debug, Clone)]
pub enum AuthSetting {
    /// Verify bearer tokens.
    Verify(Box<AuthConfig>),
    /// Nothing configured: every request is refused with 401 (fail closed), never served
    /// unauthenticated by accident.
    Unconfigured,
    /// `AUTH_MODE=off`: no authentication. Only the conformance fixture build accepts it;
    /// the deployed function refuses to start with it.
    Off,
}

/// Which `Origin` values are accepted. An absent `Origin` (every non-browser client) is
/// always accepted; a present one that is not allowed gets 403 (2025-11-25 transports
/// §Security Warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPolicy {
    /// Only pages served from this machine (`http(s)://localhost|127.0.0.1|[::1][:port]`).
    Loopback,
    /// Exactly these origins (`scheme://host[:port]`, compared case-insensitively).
    List(Vec<String>),
}

/// Which `Host` names are accepted: the DNS-rebinding guard for a locally served endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// `localhost`, `127.0.0.1`, `[::1]`, any port.
    Loopback,
    /// Exactly these host names (ports ignored, case-insensitive).
    List(Vec<String>),
    /// No check (`ALLOWED_HOSTS=*`), for deployments behind a gateway that already pins it.
    Any,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mcp_path: "/mcp".into(),
            allowed_origins: OriginPolicy::Loopback,
            allowed_hosts: HostPolicy::Loopback,
            max_body_bytes: 1024 * 1024,
            deadline_margin: Duration::from_millis(500),
            response_budget: mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
            auth: AuthSetting::Unconfigured,
            authorization_servers: Vec::new(),
            resource_metadata_url: None,
            metrics_namespace: Some("EventStoreMcp".into()),
            openai_apps_challenge: None,
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// # Errors
    ///
    /// Fails, naming the variable, when a value is malformed. Init errors stop the cold
    /// start loudly instead of serving with a setting silently ignored.
    pub fn from_env() -> anyhow::Result<Self> {
        let env = Env::process();
        let config = Self::from_lookup(|name| env.var(name))?;
        if matches!(config.auth, AuthSetting::Off) {
            bail!("AUTH_MODE=off is only accepted by the conformance fixture build");
        }
        Ok(config)
    }

    /// Like [`Config::from_env`], but honours `AUTH_MODE=off`. For the conformance fixture
    /// build only.
    ///
    /// # Errors
    ///
    /// See [`Config::from_env`].
    pub fn from_env_allowing_auth_off() -> anyhow::Result<Self> {
        let env = Env::process();
        Self::from_lookup(|name| env.var(name))
    }

    /// Like [`Config::from_env`], from any name → value lookup (tests use a map).
    ///
    /// # Errors
    ///
    /// See [`Config::from_env`].
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let env = Env::new(get);
        let mut config = Self::default();
        if let Some(path) = env.var("MCP_PATH") {
            if !path.starts_with('/') || path.len() < 2 || path.ends_with('/') {
                bail!("MCP_PATH must start with '/' and not end with '/', got {path:?}");
            }
            config.mcp_path = path;
        }
        if let Some(list) = env.list("ALLOWED_ORIGINS") {
            config.allowed_origins = OriginPolicy::List(lowercase(list));
        }
        if let Some(list) = env.list("ALLOWED_HOSTS") {
            config.allowed_hosts = if list == ["*"] {
                HostPolicy::Any
            } else {
                HostPolicy::List(lowercase(list))
            };
        }
        config.max_body_bytes =
            env.parsed_or("MAX_BODY_BYTES", "a byte count", config.max_body_bytes)?;
        if config.max_body_bytes > 6 * 1024 * 1024 {
            bail!("MAX_BODY_BYTES cannot exceed Lambda's 6 MiB payload limit");
        }
        config.auth = match env.var("AUTH_MODE").as_deref().map(str::trim) {
            Some("off") => AuthSetting::Off,
            None | Some("" | "jwt") => match AuthConfig::from_lookup(|name| env.var(name))? {
                Some(auth) => AuthSetting::Verify(Box::new(auth)),
                None => AuthSetting::Unconfigured,
            },
            Some(other) => bail!("AUTH_MODE must be \"jwt\" (default) or \"off\", got {other:?}"),
        };
        if let AuthSetting::Verify(auth) = &config.auth {
            config.authorization_servers = env
                .list("AUTH_AUTHORIZATION_SERVERS")
                .unwrap_or_else(|| vec![auth.issuer.clone()]);
        }
        config.resource_metadata_url = env.var("MCP_RESOURCE_METADATA_URL");
        config.response_budget = env.parsed_or(
            "RESPONSE_BUDGET_BYTES",
            "a byte count",
            config.response_budget,
        )?;
        if !(1024..=4 * 1024 * 1024).contains(&config.response_budget) {
            bail!("RESPONSE_BUDGET_BYTES must be between 1 KiB and 4 MiB");
        }
        config.deadline_margin = env.millis("DEADLINE_MARGIN_MS", config.deadline_margin)?;
        config.openai_apps_challenge = match env.text("OPENAI_APPS_CHALLENGE") {
            None => None,
            // What is served is exactly the token: no spaces, controls or non-ASCII that a
            // copy and paste could have added, and nothing long enough to be anything else.
            Some(t) if t.len() <= 512 && t.bytes().all(|b| b.is_ascii_graphic()) => Some(t),
            Some(_) => bail!(
                "OPENAI_APPS_CHALLENGE must be the verification token as given: 1-512 visible ASCII characters"
            ),
        };
        match env.var("METRICS_NAMESPACE").as_deref().map(str::trim) {
            None => {}
            Some("off") => config.metrics_namespace = None,
            Some(ns) if !ns.is_empty() && ns.len() <= 255 && !ns.contains(':') => {
                config.metrics_namespace = Some(ns.to_owned());
            }
            Some(ns) => {
                bail!("METRICS_NAMESPACE must be 1-255 characters without ':' (or off), got {ns:?}")
            }
        }
        Ok(config)
    }
}

fn lowercase(list: Vec<String>) -> Vec<String> {
    list.into_iter().map(|s| s.to_ascii_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> anyhow::Result<Config> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_loopback_only() {
        let c = config(&[]).unwrap();
        assert_eq!(c.mcp_path, "/mcp");
        assert_eq!(c.allowed_origins, OriginPolicy::Loopback);
        assert_eq!(c.allowed_hosts, HostPolicy::Loopback);
        assert_eq!(c.max_body_bytes, 1 << 20);
    }

    #[test]
    fn lists_are_trimmed_and_lowercased() {
        let c = config(&[
            ("ALLOWED_ORIGINS", " https://A.example ,https://b.example,"),
            ("ALLOWED_HOSTS", "Api.Example.com"),
        ])
        .unwrap();
        assert_eq!(
            c.allowed_origins,
            OriginPolicy::List(vec!["https://a.example".into(), "https://b.example".into()])
        );
        assert_eq!(
            c.allowed_hosts,
            HostPolicy::List(vec!["api.example.com".into()])
        );
        assert_eq!(
            config(&[("ALLOWED_HOSTS", "*")]).unwrap().allowed_hosts,
            HostPolicy::Any
        );
    }

    #[test]
    fn the_apps_challenge_is_the_token_as_given() {
        assert_eq!(config(&[]).unwrap().openai_apps_challenge, None);
        let c = config(&[("OPENAI_APPS_CHALLENGE", " tok-123_ABC ")]).unwrap();
        assert_eq!(c.openai_apps_challenge.as_deref(), Some("tok-123_ABC"));
        for bad in ["two words", "tab\there", "ünï", &"x".repeat(513)] {
            let err = config(&[("OPENAI_APPS_CHALLENGE", bad)]).unwrap_err();
            assert!(
                err.to_string().contains("OPENAI_APPS_CHALLENGE"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn malformed_values_name_the_variable() {
        for (k, v) in [
            ("MAX_BODY_BYTES", "lots"),
            ("MAX_BODY_BYTES", "99999999"),
            ("DEADLINE_MARGIN_MS", "-1"),
            ("RESPONSE_BUDGET_BYTES", "10"),
            ("RESPONSE_BUDGET_BYTES", "99999999"),
            ("MCP_PATH", "mcp"),
            ("MCP_PATH", "/mcp/"),
        ] {
            let err = config(&[(k, v)]).unwrap_err().to_string();
            assert!(err.contains(k), "{k}={v}: {err}");
        }
    }
}
