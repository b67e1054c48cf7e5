//! Connection settings.

use std::time::Duration;

use rustls::pki_types::CertificateDer;

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct DbConfig {
    /// `postgres://user:password@host:port/dbname` (`DATABASE_URL`).
    pub url: String,
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
}

impl DbConfig {
    /// Reads `DATABASE_URL`, `DB_SSLMODE`, `DB_CA_FILE`, `DB_CONNECT_TIMEOUT_MS`. `Ok(None)`
    /// without `DATABASE_URL`.
    ///
    /// # Errors
    ///
    /// Names the variable that is malformed.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, DbConfigError> {
        let Some(url) = get("DATABASE_URL").filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let parsed = url
            .parse::<tokio_postgres::Config>()
            .map_err(|_| DbConfigError::Invalid("DATABASE_URL", "not a postgres:// URL".into()))?;
        let tls = match get("DB_SSLMODE").as_deref().unwrap_or("verify-full") {
            "disable" => {
                let loopback = parsed.get_hosts().iter().all(|h| match h {
                    tokio_postgres::config::Host::Tcp(name) => {
                        matches!(name.as_str(), "127.0.0.1" | "localhost" | "::1")
                    }
                    _ => true,
                });
                if !loopback {
                    return Err(DbConfigError::Invalid(
                        "DB_SSLMODE",
                        "disable is only allowed for a database on loopback".into(),
                    ));
                }
                TlsMode::Disable
            }
            "verify-full" => {
                let path = get("DB_CA_FILE").ok_or(DbConfigError::Invalid(
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
        let connect_timeout = match get("DB_CONNECT_TIMEOUT_MS") {
            None => Duration::from_millis(3000),
            Some(v) => Duration::from_millis(
                v.parse()
                    .map_err(|_| DbConfigError::Invalid("DB_CONNECT_TIMEOUT_MS", v.clone()))?,
            ),
        };
        Ok(Some(Self {
            url,
            tls,
            connect_timeout,
        }))
    }
}
