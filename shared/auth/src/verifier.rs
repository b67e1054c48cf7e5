//! Turning a bearer token into a principal.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Validation, decode, decode_header};
use sha2::{Digest, Sha256};

use crate::claims::{Audience, Claims, clean_identifier, scopes};
use crate::config::{AudienceBinding, AuthConfig};
use crate::error::AuthError;
use crate::json::has_unique_keys;
use crate::keys::Key;
use crate::source::KeySource;

/// How many verified tokens a sandbox remembers. A Lambda sandbox serves one caller's
/// requests after another, typically with one or a few tokens; past this the memory is
/// dropped and rebuilt rather than managed.
const REMEMBERED_TOKENS: usize = 64;

/// Who is calling, from a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub subject: String,
    pub tenant: Option<String>,
    pub scopes: Vec<String>,
}

impl Principal {
    /// A short, stable, non-reversible id for logs: the first 16 hex digits of
    /// SHA-256(iss-independent subject). Logs never carry the subject itself.
    pub fn subject_hash(&self) -> String {
        hash_subject(&self.subject)
    }
}

pub(crate) fn hash_subject(subject: &str) -> String {
    let digest = Sha256::digest(subject.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Verifies bearer tokens. Built once per sandbox; the key cache lives inside.
pub struct Verifier {
    config: AuthConfig,
    keys: KeySource,
    verified: Mutex<HashMap<Box<str>, Verified>>,
}

/// A token that passed every check, and what is needed to re-check the parts that change
/// with time or with the issuer's keys.
struct Verified {
    kid: String,
    /// The exact key the signature was verified with.
    key: Arc<Key>,
    exp: u64,
    nbf: Option<u64>,
    principal: Principal,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Verifier {
    pub fn new(config: AuthConfig) -> Self {
        let keys = KeySource::new(&config.keys, &config.issuer, &config.algorithms);
        Self {
            config,
            keys,
            verified: Mutex::new(HashMap::new()),
        }
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Verifies `token` and returns the caller.
    ///
    /// `deadline` bounds any key fetch this needs.
    ///
    /// # Errors
    ///
    /// Every reason a token is refused, as an [`AuthError`].
    pub async fn verify(
        &self,
        token: &str,
        deadline: Option<Instant>,
    ) -> Result<Principal, AuthError> {
        // Size first: nothing is decoded from an oversized token (RFC 8725 §3.4 spirit).
        if token.len() > self.config.max_token_bytes {
            return Err(AuthError::TooLarge);
        }
        if let Some(principal) = self.remembered(token, deadline).await {
            return Ok(principal);
        }
        let (verified, _) = self.verify_fully(token, deadline).await?;
        let principal = verified.principal.clone();
        if let Ok(mut remembered) = self.verified.lock() {
            if remembered.len() >= REMEMBERED_TOKENS {
                let now = now_secs();
                remembered.retain(|_, v| v.exp > now);
                if remembered.len() >= REMEMBERED_TOKENS {
                    remembered.clear();
                }
            }
            remembered.insert(token.into(), verified);
        }
        Ok(principal)
    }

    /// The caller of a token this verifier has already accepted, without the signature
    /// check (an RSA verification is most of the cost of a small request), if and only if
    /// the token is still acceptable: the same bytes, not expired and not before its `nbf`
    /// now, and the issuer's current key for its `kid` is the very key that verified it
    /// (any JWKS refresh replaces the keys, so a rotated-out or replaced key forces a full
    /// check). Everything else a full check looks at is fixed by the token's bytes and this
    /// verifier's configuration. The same idea as Envoy's `jwt_cache_config`.
    async fn remembered(&self, token: &str, deadline: Option<Instant>) -> Option<Principal> {
        let (kid, key) = {
            let remembered = self.verified.lock().ok()?;
            let v = remembered.get(token)?;
            let now = now_secs();
            let leeway = self.config.leeway.as_secs();
            if now > v.exp.saturating_add(leeway)
                || v.nbf.is_some_and(|nbf| nbf > now.saturating_add(leeway))
            {
                return None;
            }
            (v.kid.clone(), v.key.clone())
        };
        // Looked up as for a new token: a stale key cache refreshes here as it would.
        let current = self.keys.key(&kid, deadline).await.ok()?;
        if !Arc::ptr_eq(&current, &key) {
            return None;
        }
        let remembered = self.verified.lock().ok()?;
        remembered.get(token).map(|v| v.principal.clone())
    }

    /// Verifies `token` like [`Verifier::verify`], every check and never from memory, and
    /// returns the caller with the token's other claims (those the typed checks do not
    /// consume: `nonce`, group and tenant claims). For one-time tokens such as an ID token,
    /// whose claims the caller maps itself.
    ///
    /// # Errors
    ///
    /// Every reason a token is refused, as an [`AuthError`].
    pub async fn verify_with_claims(
        &self,
        token: &str,
        deadline: Option<Instant>,
    ) -> Result<(Principal, BTreeMap<String, serde_json::Value>), AuthError> {
        if token.len() > self.config.max_token_bytes {
            return Err(AuthError::TooLarge);
        }
        let (verified, other) = self.verify_fully(token, deadline).await?;
        Ok((verified.principal, other))
    }

    /// Every check, from the token's bytes.
    async fn verify_fully(
        &self,
        token: &str,
        deadline: Option<Instant>,
    ) -> Result<(Verified, BTreeMap<String, serde_json::Value>), AuthError> {
        let segments: Vec<&str> = token.split('.').collect();
        let [header_b64, payload_b64, _signature] = segments[..] else {
            return Err(AuthError::Malformed);
        };
        // Both JSON parts must be canonical base64url JSON without repeated keys: two
        // parsers must never read two different claim sets from one token.
        for part in [header_b64, payload_b64] {
            let bytes = URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| AuthError::Malformed)?;
            if !has_unique_keys(&bytes) {
                return Err(AuthError::Malformed);
            }
        }
        // `alg` parses into a closed enum: "none" in any casing is a parse failure.
        let header = decode_header(token).map_err(|_| AuthError::Malformed)?;
        if !self.config.algorithms.contains(&header.alg) {
            return Err(AuthError::AlgorithmNotAllowed);
        }
        if self.config.require_access_token_type {
            let typ = header.typ.as_deref().unwrap_or("").to_ascii_lowercase();
            if typ != "at+jwt" && typ != "application/at+jwt" {
                return Err(AuthError::WrongType);
            }
        }
        // The key comes from our JWKS by exact kid lookup, never from jku/x5u/jwk headers.
        let kid = header
            .kid
            .as_deref()
            .filter(|k| !k.is_empty())
            .ok_or(AuthError::MissingKeyId)?;
        if kid.len() > 256 {
            return Err(AuthError::UnknownKey);
        }
        let key = self.keys.key(kid, deadline).await?;
        // The algorithm must be one the key itself allows: RFC 8725 §3.1.
        if !key.algorithms.contains(&header.alg) {
            return Err(AuthError::AlgorithmNotAllowed);
        }

        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_exp = true;
        // Off by default in jsonwebtoken: turn it on.
        validation.validate_nbf = true;
        match self.config.binding {
            AudienceBinding::Resource => {
                validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"])
            }
            AudienceBinding::CognitoClientIds(_) => {
                validation.set_required_spec_claims(&["exp", "iss", "sub"])
            }
            AudienceBinding::ClientId(_) => {
                validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"])
            }
        }
        validation.set_issuer(&[&self.config.issuer]);
        // The audience is compared below as a canonical URI (scheme/host case-insensitive),
        // which the library's exact string match cannot do.
        validation.validate_aud = false;

        let claims = decode::<Claims>(token, &key.decoding, &validation)
            .map_err(|e| map_error(e.kind()))?
            .claims;
        let nbf = claims.other.get("nbf").and_then(serde_json::Value::as_u64);

        if claims.iss != self.config.issuer {
            return Err(AuthError::WrongIssuer);
        }
        match &self.config.binding {
            AudienceBinding::Resource => {
                if !claims
                    .aud
                    .as_ref()
                    .is_some_and(|aud| aud.contains(&self.config.resource))
                {
                    return Err(AuthError::WrongAudience);
                }
            }
            // An ID token (token_use = id) or another app client's token is not ours.
            AudienceBinding::CognitoClientIds(ids) => {
                if claims.token_use.as_deref() != Some("access") {
                    return Err(AuthError::WrongType);
                }
                if !claims.client_id.as_ref().is_some_and(|id| ids.contains(id)) {
                    return Err(AuthError::WrongAudience);
                }
            }
            AudienceBinding::ClientId(id) => {
                let ours = match &claims.aud {
                    Some(Audience::One(aud)) => aud == id,
                    Some(Audience::Many(list)) => {
                        list.contains(id)
                            && (list.len() == 1
                                || claims.other.get("azp").and_then(serde_json::Value::as_str)
                                    == Some(id.as_str()))
                    }
                    None => false,
                };
                if !ours {
                    return Err(AuthError::WrongAudience);
                }
            }
        }
        let now = now_secs();
        let leeway = self.config.leeway.as_secs();
        let max_lifetime = self.config.max_lifetime.as_secs();
        // `exp = u64::MAX` passes the library's checks: bound lifetimes ourselves.
        if claims.exp.saturating_sub(now) > max_lifetime.saturating_add(leeway) {
            return Err(AuthError::LifetimeTooLong);
        }
        if let Some(iat) = claims.iat {
            if iat > now.saturating_add(leeway) {
                return Err(AuthError::NotYetValid);
            }
            if claims.exp.saturating_sub(iat) > max_lifetime {
                return Err(AuthError::LifetimeTooLong);
            }
        }
        let subject = clean_identifier(&claims.sub)
            .ok_or(AuthError::InvalidClaims)?
            .to_owned();
        let tenant = match &self.config.tenant_claim {
            Some(name) => Some(
                claims
                    .other
                    .get(name)
                    .and_then(serde_json::Value::as_str)
                    .and_then(clean_identifier)
                    .ok_or(AuthError::InvalidClaims)?
                    .to_owned(),
            ),
            None => self.config.default_tenant.clone(),
        };
        let principal = Principal {
            subject,
            tenant,
            scopes: scopes(&claims),
        };
        let verified = Verified {
            kid: kid.to_owned(),
            key,
            exp: claims.exp,
            nbf,
            principal,
        };
        Ok((verified, claims.other))
    }
}

fn map_error(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
        ErrorKind::InvalidAudience => AuthError::WrongAudience,
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::InvalidAlgorithm
        | ErrorKind::InvalidAlgorithmName
        | ErrorKind::MissingAlgorithm => AuthError::AlgorithmNotAllowed,
        ErrorKind::MissingRequiredClaim(_)
        | ErrorKind::InvalidClaimFormat(_)
        | ErrorKind::InvalidSubject => AuthError::InvalidClaims,
        // Json covers claims of the wrong type for our typed struct.
        ErrorKind::Json(_) => AuthError::InvalidClaims,
        _ => AuthError::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> Verifier {
        let jwks = include_str!("../../../dev/jwks.json");
        let config = AuthConfig::from_lookup(|name| match name {
            "AUTH_ISSUER" => Some("https://issuer.test".into()),
            "MCP_RESOURCE_URL" => Some("https://mcp.test/mcp".into()),
            "AUTH_JWKS_JSON" => Some(jwks.into()),
            "AUTH_LEEWAY_SECS" => Some("0".into()),
            _ => None,
        })
        .unwrap()
        .unwrap();
        Verifier::new(config)
    }

    fn principal() -> Principal {
        Principal {
            subject: "alice".into(),
            tenant: None,
            scopes: vec![],
        }
    }

    /// Plants a remembered entry for a token no full check would accept, so a success can
    /// only come from memory and a refusal shows memory was not trusted.
    async fn plant(v: &Verifier, token: &str, exp: u64, nbf: Option<u64>, key: Option<Arc<Key>>) {
        let kid = "dev-rs256-1";
        let key = match key {
            Some(key) => key,
            None => v.keys.key(kid, None).await.unwrap(),
        };
        v.verified.lock().unwrap().insert(
            token.into(),
            Verified {
                kid: kid.into(),
                key,
                exp,
                nbf,
                principal: principal(),
            },
        );
    }

    #[tokio::test]
    async fn a_remembered_token_is_accepted_only_while_valid_and_under_the_same_key() {
        let v = verifier();
        let now = now_secs();
        plant(&v, "fresh.token.x", now + 300, None, None).await;
        assert_eq!(v.verify("fresh.token.x", None).await, Ok(principal()));

        plant(&v, "expired.token.x", now - 1, None, None).await;
        assert!(v.verify("expired.token.x", None).await.is_err());

        plant(&v, "early.token.x", now + 300, Some(now + 60), None).await;
        assert!(v.verify("early.token.x", None).await.is_err());

        // Same kid, but not the key object the issuer's key source holds now (as after a
        // JWKS refresh): verified again from scratch, which this token cannot pass.
        let other = crate::keys::KeySet::from_json(
            include_bytes!("../../../dev/jwks.json"),
            &[jsonwebtoken::Algorithm::RS256],
        )
        .unwrap()
        .get("dev-rs256-1");
        plant(&v, "rekeyed.token.x", now + 300, None, other).await;
        assert!(v.verify("rekeyed.token.x", None).await.is_err());

        // A token is remembered by its exact bytes.
        assert!(v.verify("fresh.token.y", None).await.is_err());
    }

    #[tokio::test]
    async fn refused_tokens_are_never_remembered() {
        let v = verifier();
        assert!(v.verify("not.a.token", None).await.is_err());
        assert!(v.verified.lock().unwrap().is_empty());
    }
}
