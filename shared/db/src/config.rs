//! Connection settings.

use std::sync::Arc;
use std::time::Duration;

use mcp_env::{Env, EnvError};
use rustls::pki_types::CertificateDer;

use crate::secret::{Endpoint, SecretSource};

/// Where the user name and password come from.
#[derive(Debug, Clone)]
pub enum Credentials {
    /// `postgres://user:password@host:port/dbname` (`DATABASE_URL`): local runs and tests.
    Url(String),
    /// An RDS-format secret in AWS Secrets Manager (`DB_SECRET_ID`), connecting to
    /// `endpoint` (the proxy) where it overrides the secret.
    Secret {
        source: Arc<SecretSource>,
        endpoint: Endpoint,
    },
}

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct DbConfig {
    pub credentials: Credentials,
    pub tls: TlsMode,
    /// Bound of one connection attempt, TLS included (`DB_CONNECT_TIMEOUT_MS`, 3000).
    pub connect_timeout: Duration,
}

/// Transport security to the database or its proxy.
#[derive(Debug, Clone)]
pub enum TlsMode {
    /// Plain TCP (`DB_SSLMODE=disable`): only for a database on loopback.
    Disable,
    /// TLS, with the server certificate verified against these roots and the host name
    /// (libpq's `verify-full`; `DB_SSLMODE=verify-full`, the default, with `DB_CA_FILE`).
    VerifyFull { roots: Vec<CertificateDer<'static>> },
}

/// A database configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DbConfigError {
    #[error("{0} is invalid: {1}")]
    Invalid(&'static str, String),
    #[error("DB_CA_FILE could not be read")]
    CaFile(#[source] std::io::Error),
    #[error("either DATABASE_URL or DB_SECRET_ID is required, not both")]
    Ambiguous,
    #[error(transparent)]
    Env(#[from] EnvError),
}

impl DbConfig {
    /// Reads `DATABASE_URL` or `DB_SECRET_ID` (+ `DB_HOST`, `DB_PORT`, `DB_NAME`,
    /// `DB_SECRET_TTL_SECS`; the AWS SDK reads its own settings, `AWS_ENDPOINT_URL_SECRETS_MANAGER`
    /// included), `DB_SSLMODE`, `DB_CA_FILE`, `DB_CONNECT_TIMEOUT_MS`. `Ok(None)` with neither
    /// credential source.
    ///
    /// # Errors
    ///
    /// Names the variable that is malformed.
    pub async fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, DbConfigError> {
        let env = Env::new(get);
        let url = env.text("DATABASE_URL");
        let secret_id = env.text("DB_SECRET_ID");
        let (credentials, host) = match (url, secret_id) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err(DbConfigError::Ambiguous),
            (Some(url), None) => {
                let parsed = url.parse::<tokio_postgres::Config>().map_err(|_| {
                    DbConfigError::Invalid("DATABASE_URL", "not a postgres:// URL".into())
                })?;
                let host = match parsed.get_hosts().first() {
                    Some(tokio_postgres::config::Host::Tcp(name)) => Some(name.clone()),
                    _ => None,
                };
                (Credentials::Url(url), host)
            }
            (None, Some(id)) => {
                let port = env.parsed("DB_PORT", "a port number")?;
                let ttl = env.seconds("DB_SECRET_TTL_SECS", Duration::from_secs(300))?;
                let client = crate::secrets_client().await;
                let endpoint = Endpoint {
                    host: env.text("DB_HOST"),
                    port,
                    dbname: env.text("DB_NAME"),
                };
                let host = endpoint.host.clone();
                (
                    Credentials::Secret {
                        source: Arc::new(SecretSource::new(client, id, ttl)),
                        endpoint,
                    },
                    host,
                )
            }
        };
        let tls = match env.text("DB_SSLMODE").as_deref().unwrap_or("verify-full") {
            "disable" => {
                let loopback = host
                    .as_deref()
                    .is_some_and(|name| matches!(name, "127.0.0.1" | "localhost" | "::1"));
                if !loopback {
                    return Err(DbConfigError::Invalid(
                        "DB_SSLMODE",
                        "disable is only allowed for a database on loopback".into(),
                    ));
                }
                TlsMode::Disable
            }
            "verify-full" => {
                let path = env.text("DB_CA_FILE").ok_or(DbConfigError::Invalid(
                    "DB_CA_FILE",
                    "required with DB_SSLMODE=verify-full (the Amazon RDS bundle in AWS)".into(),
                ))?;
                let pem = std::fs::read(path).map_err(DbConfigError::CaFile)?;
                TlsMode::VerifyFull {
                    roots: crate::tls::parse_roots(&pem)
                        .map_err(|why| DbConfigError::Invalid("DB_CA_FILE", why))?,
                }
            }
            other => {
                return Err(DbConfigError::Invalid(
                    "DB_SSLMODE",
                    format!("expected verify-full or disable, got {other:?}"),
                ));
            }
        };
        let connect_timeout = env.millis("DB_CONNECT_TIMEOUT_MS", Duration::from_millis(3000))?;
        Ok(Some(Self {
            credentials,
            tls,
            connect_timeout,
        }))
    }
}
