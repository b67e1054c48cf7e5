//! Where keys are looked up: a fixed set, or a remote JWKS with a cache that survives warm
//! invocations of the same Lambda sandbox.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;
use tokio::sync::{Mutex, RwLock};

use crate::config::{KeysConfig, RemoteKeysConfig};
use crate::error::AuthError;
use crate::keys::{Key, KeySet};

pub(crate) enum KeySource {
    Static(KeySet),
    Remote(Box<Remote>),
}

impl KeySource {
    pub(crate) fn new(config: &KeysConfig, issuer: &str, algorithms: &[Algorithm]) -> Self {
        match config {
            KeysConfig::Static(set) => Self::Static(set.clone()),
            KeysConfig::Remote(remote) => Self::Remote(Box::new(Remote {
                config: remote.clone(),
                issuer: issuer.trim_end_matches('/').to_owned(),
                algorithms: algorithms.to_vec(),
                client: reqwest::Client::builder()
                    // Never follow a redirect to somewhere the configuration did not name.
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap_or_default(),
                cache: RwLock::new(Cache::default()),
                refresh: Mutex::new(None),
            })),
        }
    }

    pub(crate) async fn key(
        &self,
        kid: &str,
        deadline: Option<Instant>,
    ) -> Result<Arc<Key>, AuthError> {
        match self {
            Self::Static(set) => set.get(kid).ok_or(AuthError::UnknownKey),
            Self::Remote(remote) => remote.key(kid, deadline).await,
        }
    }
}

#[derive(Default)]
struct Cache {
    keys: Option<KeySet>,
    fetched_at: Option<Instant>,
    /// The JWKS URL found through OIDC discovery, kept once known.
    discovered_url: Option<String>,
}

pub(crate) struct Remote {
    config: RemoteKeysConfig,
    issuer: String,
    algorithms: Vec<Algorithm>,
    client: reqwest::Client,
    cache: RwLock<Cache>,
    /// Held while fetching, so concurrent requests wait for one fetch instead of each
    /// starting their own; holds the time of the last attempt, for the rate limit.
    refresh: Mutex<Option<Instant>>,
}

/// Why a fetch failed; logged, never sent to clients.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("the request deadline leaves no time to fetch keys")]
    NoTime,
    // Printed, not chained: this error only ever ends up in one log line.
    #[error("request failed: {0}")]
    Http(reqwest::Error),
    #[error("unexpected status {0}")]
    Status(u16),
    #[error("the document is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the discovery document has no https jwks_uri")]
    NoJwksUri,
    #[error("the JWKS was refused: {0}")]
    Jwks(crate::keys::JwksError),
}

impl Remote {
    async fn key(&self, kid: &str, deadline: Option<Instant>) -> Result<Arc<Key>, AuthError> {
        if let (Some(key), Some(age)) = self.lookup(kid).await
            && age < self.config.ttl
        {
            return Ok(key);
        }
        // Stale cache or unknown kid (key rotation, or a forged kid): one rate-limited
        // refresh. A failed refresh leaves the cache as it was.
        let refreshed = self.refresh(deadline).await;
        let (key, age) = self.lookup(kid).await;
        let usable = refreshed || age.is_some_and(|a| a < self.config.ttl + self.config.max_stale);
        match key {
            Some(key) if usable => Ok(key),
            // Keys are known, this one is not among them (or was rotated out).
            _ if usable => Err(AuthError::UnknownKey),
            // Nothing trustworthy to verify with: fail closed.
            _ => Err(AuthError::KeysUnavailable),
        }
    }

    /// The cached key for `kid` and the age of the cache.
    async fn lookup(&self, kid: &str) -> (Option<Arc<Key>>, Option<Duration>) {
        let cache = self.cache.read().await;
        (
            cache.keys.as_ref().and_then(|k| k.get(kid)),
            cache.fetched_at.map(|t| t.elapsed()),
        )
    }

    /// Fetches the JWKS unless another attempt happened within the rate-limit interval.
    /// Returns true if and only if this call replaced the cached keys.
    async fn refresh(&self, deadline: Option<Instant>) -> bool {
        let mut last_attempt = self.refresh.lock().await;
        let now = Instant::now();
        if last_attempt
            .is_some_and(|t| now.saturating_duration_since(t) < self.config.refresh_min_interval)
        {
            return false;
        }
        *last_attempt = Some(now);
        match self.fetch_keys(deadline).await {
            Ok(keys) => {
                tracing::info!(auth.jwks_keys = keys.len(), "fetched the issuer's JWKS");
                let mut cache = self.cache.write().await;
                cache.keys = Some(keys);
                cache.fetched_at = Some(Instant::now());
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not fetch the issuer's JWKS");
                false
            }
        }
    }

    async fn fetch_keys(&self, deadline: Option<Instant>) -> Result<KeySet, FetchError> {
        let url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => self.discover(deadline).await?,
        };
        let bytes = self.get(&url, deadline).await?;
        KeySet::from_json(&bytes, &self.algorithms).map_err(FetchError::Jwks)
    }

    async fn discover(&self, deadline: Option<Instant>) -> Result<String, FetchError> {
        if let Some(url) = self.cache.read().await.discovered_url.clone() {
            return Ok(url);
        }
        let doc_url = format!("{}/.well-known/openid-configuration", self.issuer);
        let bytes = self.get(&doc_url, deadline).await?;
        let doc: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|_| FetchError::NoJwksUri)?;
        let url = doc
            .get("jwks_uri")
            .and_then(serde_json::Value::as_str)
            .filter(|u| u.starts_with("https://") || crate::claims::is_loopback_url(u))
            .ok_or(FetchError::NoJwksUri)?
            .to_owned();
        self.cache.write().await.discovered_url = Some(url.clone());
        Ok(url)
    }

    /// One bounded GET: time from the request deadline and the configured cap, size from
    /// the configured cap, status 200 only.
    async fn get(&self, url: &str, deadline: Option<Instant>) -> Result<Vec<u8>, FetchError> {
        let mut budget = self.config.fetch_timeout;
        if let Some(deadline) = deadline {
            budget = budget.min(deadline.saturating_duration_since(Instant::now()));
        }
        if budget < Duration::from_millis(10) {
            return Err(FetchError::NoTime);
        }
        let started = Instant::now();
        let mut response = self
            .client
            .get(url)
            .timeout(budget)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(FetchError::Http)?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        let limit = self.config.max_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(FetchError::TooLarge(limit));
        }
        let mut body = Vec::new();
        loop {
            let remaining = budget.saturating_sub(started.elapsed());
            let chunk = tokio::time::timeout(remaining, response.chunk())
                .await
                .map_err(|_| FetchError::NoTime)?
                .map_err(FetchError::Http)?;
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > limit {
                return Err(FetchError::TooLarge(limit));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}
