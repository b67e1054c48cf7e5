//! Database credentials from AWS Secrets Manager, in the standard RDS secret format.
//!
//! Read on the first connection, cached for the sandbox's life up to a TTL, and re-read once
//! when the database (or RDS Proxy / PgBouncer) refuses the password: that is how a rotation
//! reaches warm sandboxes without a redeploy.

use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::sync::Mutex;

use crate::{DbError, Phase};

/// The fields of an RDS secret we use (`engine`, `dbInstanceIdentifier`... are ignored).
#[derive(Clone, Deserialize)]
pub struct DbSecret {
    pub username: String,
    pub password: String,
    pub host: Option<String>,
    pub port: Option<PortValue>,
    pub dbname: Option<String>,
}

impl std::fmt::Debug for DbSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbSecret")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// RDS writes the port as a number; hand-made secrets often hold a string.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum PortValue {
    Number(u16),
    Text(String),
}

impl PortValue {
    fn get(&self) -> Option<u16> {
        match self {
            Self::Number(n) => Some(*n),
            Self::Text(s) => s.parse().ok(),
        }
    }
}

/// Where the connection goes when the secret is the credential source: the proxy in front
/// of the database, not the instance the secret names.
#[derive(Debug, Clone, Default)]
pub struct Endpoint {
    /// `DB_HOST`: overrides the secret's `host` (the RDS Proxy endpoint in AWS).
    pub host: Option<String>,
    /// `DB_PORT`.
    pub port: Option<u16>,
    /// `DB_NAME`.
    pub dbname: Option<String>,
}

/// A Secrets Manager secret and its cache.
pub struct SecretSource {
    client: aws_sdk_secretsmanager::Client,
    secret_id: String,
    ttl: Duration,
    cache: Mutex<Option<(DbSecret, Instant)>>,
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSource")
            .field("secret_id", &self.secret_id)
            .finish_non_exhaustive()
    }
}

impl SecretSource {
    pub fn new(
        client: aws_sdk_secretsmanager::Client,
        secret_id: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
            ttl,
            cache: Mutex::new(None),
        }
    }

    /// The cached secret, or a fresh read when there is none, it is older than the TTL, or
    /// `refresh` asks for one (after the database refused the cached password).
    ///
    /// # Errors
    ///
    /// [`DbError::Timeout`] (phase `acquire`) when the secret cannot be read in `timeout`,
    /// [`DbError::Secret`] when it cannot be read at all or is not RDS JSON.
    pub async fn get(&self, refresh: bool, timeout: Duration) -> Result<DbSecret, DbError> {
        let mut cache = self.cache.lock().await;
        if let Some((secret, at)) = cache.as_ref()
            && !refresh
            && at.elapsed() < self.ttl
        {
            return Ok(secret.clone());
        }
        let text = secret_string(&self.client, &self.secret_id, timeout).await?;
        let secret: DbSecret = serde_json::from_str(&text).map_err(|_| {
            DbError::Secret(
                "the secret is not RDS-format JSON (username, password, host, port, dbname)".into(),
            )
        })?;
        tracing::info!(
            secret.refresh = refresh,
            "read database credentials from Secrets Manager"
        );
        *cache = Some((secret.clone(), Instant::now()));
        Ok(secret)
    }

    /// The tokio-postgres configuration for this secret and endpoint.
    pub(crate) fn config(
        secret: &DbSecret,
        endpoint: &Endpoint,
    ) -> Result<tokio_postgres::Config, DbError> {
        let host = endpoint
            .host
            .clone()
            .or_else(|| secret.host.clone())
            .ok_or_else(|| {
                DbError::Secret("no host: set DB_HOST or put host in the secret".into())
            })?;
        let port = endpoint
            .port
            .or_else(|| secret.port.as_ref().and_then(PortValue::get))
            .unwrap_or(5432);
        let dbname = endpoint
            .dbname
            .clone()
            .or_else(|| secret.dbname.clone())
            .unwrap_or_else(|| "postgres".into());
        let mut config = tokio_postgres::Config::new();
        config
            .host(&host)
            .port(port)
            .user(&secret.username)
            .password(&secret.password)
            .dbname(&dbname);
        Ok(config)
    }
}

/// The `SecretString` of `secret_id`, read within `timeout`.
async fn secret_string(
    client: &aws_sdk_secretsmanager::Client,
    secret_id: &str,
    timeout: Duration,
) -> Result<String, DbError> {
    let read = client.get_secret_value().secret_id(secret_id).send();
    let output = tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| DbError::Timeout(Phase::Acquire))?
        .map_err(|e| {
            DbError::Secret(format!(
                "GetSecretValue failed: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(&e)
            ))
        })?;
    output
        .secret_string()
        .map(str::to_owned)
        .ok_or_else(|| DbError::Secret("the secret has no SecretString".into()))
}

/// Reads a plain-text secret (a signing key, say) once, with the default AWS configuration
/// (`AWS_ENDPOINT_URL_SECRETS_MANAGER` points it at an emulator).
///
/// # Errors
///
/// As for the database secret: unreadable in `timeout`, refused, or not a string.
pub async fn read_plain_secret(secret_id: &str, timeout: Duration) -> Result<String, DbError> {
    secret_string(&secrets_client().await, secret_id, timeout).await
}

/// The process's one AWS SDK configuration, from the default chain (region, credentials,
/// `AWS_ENDPOINT_URL_<SERVICE>` for emulators). Loaded once: a cold start that reads secrets
/// and counts rate limits pays for one load. Its HTTPS client is rustls on ring, the crypto
/// the database connection already uses.
pub async fn aws_sdk_config() -> aws_config::SdkConfig {
    static CONFIG: tokio::sync::OnceCell<aws_config::SdkConfig> =
        tokio::sync::OnceCell::const_new();
    CONFIG
        .get_or_init(|| async {
            use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
            let http = aws_smithy_http_client::Builder::new()
                .tls_provider(Provider::Rustls(CryptoMode::Ring))
                .build_https();
            aws_config::defaults(aws_config::BehaviorVersion::latest())
                .http_client(http)
                .load()
                .await
        })
        .await
        .clone()
}

/// The process's one Secrets Manager client (`AWS_ENDPOINT_URL_SECRETS_MANAGER` points it at
/// an emulator).
pub async fn secrets_client() -> aws_sdk_secretsmanager::Client {
    static CLIENT: tokio::sync::OnceCell<aws_sdk_secretsmanager::Client> =
        tokio::sync::OnceCell::const_new();
    CLIENT
        .get_or_init(|| async { aws_sdk_secretsmanager::Client::new(&aws_sdk_config().await) })
        .await
        .clone()
}
