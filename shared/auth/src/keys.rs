//! Loading a JWKS into verification keys, dropping every key we must not trust.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// The smallest RSA modulus accepted. `jsonwebtoken`'s `rust_crypto` backend verifies with
/// 1024-bit keys, so this check at load time is the only guard (RFC 8725 §3.5).
const MIN_RSA_BITS: usize = 2048;

/// One usable verification key.
#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The algorithms this key may verify: its JWK `alg` if it names one, otherwise every
    /// algorithm of its family. The token header must name one of these.
    pub(crate) algorithms: Vec<Algorithm>,
}

/// The keys of one JWKS document, by `kid`.
#[derive(Clone, Default)]
pub struct KeySet {
    keys: HashMap<String, Arc<Key>>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut kids: Vec<&String> = self.keys.keys().collect();
        kids.sort();
        f.debug_struct("KeySet").field("kids", &kids).finish()
    }
}

/// Why a JWKS document was refused as a whole.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwksError {
    #[error("the JWKS is not a JSON object with a \"keys\" array")]
    NotAJwks,
    #[error("the JWKS names key id {0:?} twice")]
    DuplicateKid(String),
    #[error("the JWKS holds no usable signing key")]
    NoUsableKey,
}

impl KeySet {
    /// Parses a JWKS, keeping only signing keys we can use safely.
    ///
    /// Dropped (each with a warning): keys without a `kid`, `use` other than `sig`, HMAC
    /// (`oct`) keys, RSA moduli under 2048 bits, curves other than P-256 and Ed25519, and
    /// keys whose `alg` is outside `allowed` or does not fit their type.
    ///
    /// # Errors
    ///
    /// Refuses the whole document when it is not a JWKS, when a `kid` repeats (which key
    /// would a token mean?), or when no key survives.
    pub fn from_json(bytes: &[u8], allowed: &[Algorithm]) -> Result<Self, JwksError> {
        let doc: Value = serde_json::from_slice(bytes).map_err(|_| JwksError::NotAJwks)?;
        let list = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or(JwksError::NotAJwks)?;
        let mut keys = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for jwk in list {
            let kid = jwk.get("kid").and_then(Value::as_str).unwrap_or("");
            if !kid.is_empty() && !seen.insert(kid.to_owned()) {
                return Err(JwksError::DuplicateKid(kid.to_owned()));
            }
            match parse_key(jwk, allowed) {
                Ok(key) => {
                    keys.insert(kid.to_owned(), Arc::new(key));
                }
                Err(why) => tracing::warn!(jwk.kid = kid, reason = why, "ignoring JWKS key"),
            }
        }
        if keys.is_empty() {
            return Err(JwksError::NoUsableKey);
        }
        Ok(Self { keys })
    }

    pub(crate) fn get(&self, kid: &str) -> Option<Arc<Key>> {
        self.keys.get(kid).cloned()
    }

    /// Returns true if and only if a key with this id is present.
    pub fn contains(&self, kid: &str) -> bool {
        self.keys.contains_key(kid)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

fn field<'a>(jwk: &'a Value, name: &str) -> Option<&'a str> {
    jwk.get(name).and_then(Value::as_str)
}

fn parse_key(jwk: &Value, allowed: &[Algorithm]) -> Result<Key, &'static str> {
    let kid = field(jwk, "kid").unwrap_or("");
    if kid.is_empty() || kid.len() > 256 {
        return Err("a key id (kid) of 1-256 characters is required");
    }
    if jwk.get("use").is_some_and(|usage| usage != "sig") {
        return Err("the key is not for signatures (use != sig)");
    }
    let (decoding, family): (DecodingKey, &[Algorithm]) = match field(jwk, "kty") {
        Some("RSA") => {
            let (n, e) = (
                field(jwk, "n").ok_or("n missing")?,
                field(jwk, "e").ok_or("e missing")?,
            );
            if rsa_modulus_bits(n).ok_or("n is not base64url")? < MIN_RSA_BITS {
                return Err("RSA modulus under 2048 bits");
            }
            let key = DecodingKey::from_rsa_components(n, e).map_err(|_| "bad RSA components")?;
            (
                key,
                &[
                    Algorithm::RS256,
                    Algorithm::RS384,
                    Algorithm::RS512,
                    Algorithm::PS256,
                    Algorithm::PS384,
                    Algorithm::PS512,
                ],
            )
        }
        Some("EC") if field(jwk, "crv") == Some("P-256") => {
            let (x, y) = (
                field(jwk, "x").ok_or("x missing")?,
                field(jwk, "y").ok_or("y missing")?,
            );
            let key = DecodingKey::from_ec_components(x, y).map_err(|_| "bad EC components")?;
            (key, &[Algorithm::ES256])
        }
        Some("OKP") if field(jwk, "crv") == Some("Ed25519") => {
            let x = field(jwk, "x").ok_or("x missing")?;
            let key = DecodingKey::from_ed_components(x).map_err(|_| "bad Ed25519 key")?;
            (key, &[Algorithm::EdDSA])
        }
        Some("oct") => return Err("symmetric (oct) keys are never trusted"),
        _ => return Err("unsupported key type or curve"),
    };
    let algorithms: Vec<Algorithm> = match field(jwk, "alg") {
        Some(name) => {
            let alg: Algorithm = name.parse().map_err(|_| "unknown alg")?;
            if !family.contains(&alg) {
                return Err("alg does not fit the key type");
            }
            vec![alg]
        }
        None => family.to_vec(),
    }
    .into_iter()
    .filter(|a| allowed.contains(a))
    .collect();
    if algorithms.is_empty() {
        return Err("none of the key's algorithms is allowed");
    }
    Ok(Key {
        decoding,
        algorithms,
    })
}

/// Bit length of a base64url big-endian modulus, ignoring leading zero bytes.
fn rsa_modulus_bits(n: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(n.trim_end_matches('=')).ok()?;
    let first = bytes.iter().position(|b| *b != 0)?;
    let significant = &bytes[first..];
    Some(significant.len() * 8 - significant[0].leading_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ALL: &[Algorithm] = &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

    fn modulus(bits: usize) -> String {
        let mut bytes = vec![0xffu8; bits / 8];
        bytes[0] = 0x80 | 0x01;
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn modulus_bits_ignore_leading_zeros() {
        assert_eq!(rsa_modulus_bits(&modulus(2048)), Some(2048));
        let mut padded = vec![0u8, 0x7f];
        padded.extend([0xff; 255]);
        assert_eq!(
            rsa_modulus_bits(&URL_SAFE_NO_PAD.encode(padded)),
            Some(2047)
        );
    }

    #[test]
    fn weak_symmetric_and_encryption_keys_are_dropped() {
        let doc = json!({"keys": [
            {"kty": "RSA", "kid": "weak", "n": modulus(1024), "e": "AQAB"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": modulus(2048), "e": "AQAB"},
            {"kty": "RSA", "kid": "ok", "n": modulus(2048), "e": "AQAB"},
            {"kty": "RSA", "kid": "es", "alg": "ES256", "n": modulus(2048), "e": "AQAB"},
            {"kty": "RSA", "n": modulus(2048), "e": "AQAB"},
        ]});
        let set = KeySet::from_json(doc.to_string().as_bytes(), ALL).unwrap();
        assert!(set.contains("ok"));
        assert_eq!(set.len(), 1, "{set:?}");
        assert_eq!(set.get("ok").unwrap().algorithms, vec![Algorithm::RS256]);
    }

    #[test]
    fn duplicate_kids_and_empty_sets_refuse_the_document() {
        let doc = json!({"keys": [
            {"kty": "RSA", "kid": "a", "n": modulus(2048), "e": "AQAB"},
            {"kty": "RSA", "kid": "a", "n": modulus(4096), "e": "AQAB"},
        ]});
        assert_eq!(
            KeySet::from_json(doc.to_string().as_bytes(), ALL).unwrap_err(),
            JwksError::DuplicateKid("a".into())
        );
        assert_eq!(
            KeySet::from_json(br#"{"keys": []}"#, ALL).unwrap_err(),
            JwksError::NoUsableKey
        );
        assert_eq!(
            KeySet::from_json(b"<html>", ALL).unwrap_err(),
            JwksError::NotAJwks
        );
    }
}
