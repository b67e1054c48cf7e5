//! Sealed values: what the bridge hands out instead of keeping (a DCR registration, the
//! `state` of a sign-in at the upstream, an authorization code, a refresh token) is its own
//! JSON, encrypted and authenticated with AES-256-GCM under a key only the bridge holds.
//! Nobody can read or forge one, and each purpose is bound in as associated data, so a
//! sealed `state` is never accepted as a code or a code as a refresh token. Only what must
//! be single-use (codes, refresh rotations) touches the table.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a sealed value is for; part of the associated data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    Client,
    SignIn,
    Code,
    Refresh,
    /// An authorization request waiting on the user's answer at the consent page.
    Consent,
    /// The browser's cookie: its identity and the clients it approved.
    Browser,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Self::Client => b"mcp-oauth-bridge/client/v1",
            Self::SignIn => b"mcp-oauth-bridge/sign-in/v1",
            Self::Code => b"mcp-oauth-bridge/code/v1",
            Self::Refresh => b"mcp-oauth-bridge/refresh/v1",
            Self::Consent => b"mcp-oauth-bridge/consent/v1",
            Self::Browser => b"mcp-oauth-bridge/browser/v1",
        }
    }
}

/// The sealing key.
pub(crate) struct Sealer {
    key: LessSafeKey,
    random: SystemRandom,
}

/// Shortest sealing secret taken: 32 characters of random text is well past 128 bits.
const MIN_SECRET_CHARS: usize = 32;

/// Longest sealed value opened: nothing the bridge seals is near this.
const MAX_SEALED: usize = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("the sealing key secret must be at least 32 characters of random text")]
    BadKey,
    #[error("randomness unavailable")]
    Random,
}

impl Sealer {
    /// A sealer whose key is derived (HKDF-SHA256, RFC 5869) from `secret`: any text of at
    /// least 32 characters, such as the 64 random characters Secrets Manager generates for
    /// the template's secret. Deriving, rather than decoding bytes, accepts what a secret
    /// generator makes, and a purpose label keeps this key apart from any other use of it.
    ///
    /// # Errors
    ///
    /// [`SealError::BadKey`] for a secret shorter than 32 characters.
    pub(crate) fn from_secret(secret: &str) -> Result<Self, SealError> {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET_CHARS {
            return Err(SealError::BadKey);
        }
        let prk = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, b"mcp-oauth-bridge")
            .extract(secret.as_bytes());
        let okm = prk
            .expand(&[b"mcp-oauth-bridge/sealing-key/v1"], &AES_256_GCM)
            .map_err(|_| SealError::BadKey)?;
        let key = UnboundKey::from(okm);
        Ok(Self {
            key: LessSafeKey::new(key),
            random: SystemRandom::new(),
        })
    }

    /// `value` sealed for `purpose`: base64url of nonce, ciphertext and tag.
    pub(crate) fn seal<T: Serialize>(
        &self,
        purpose: Purpose,
        value: &T,
    ) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        let mut data = serde_json::to_vec(value).map_err(|_| SealError::Random)?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(purpose.label()),
                &mut data,
            )
            .map_err(|_| SealError::Random)?;
        let mut out = Vec::with_capacity(NONCE_LEN + data.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&data);
        Ok(URL_SAFE_NO_PAD.encode(out))
    }

    /// The value sealed for `purpose`, or `None` for anything else: another purpose, another
    /// key, a changed byte, not base64url, not the expected JSON.
    pub(crate) fn open<T: DeserializeOwned>(&self, purpose: Purpose, sealed: &str) -> Option<T> {
        if sealed.len() > MAX_SEALED {
            return None;
        }
        let mut bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let mut data = bytes.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&bytes).ok()?;
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(purpose.label()), &mut data)
            .ok()?;
        serde_json::from_slice(plain).ok()
    }

    /// `n` random bytes, base64url: identifiers, PKCE verifiers, nonces.
    pub(crate) fn random_token(&self, n: usize) -> Result<String, SealError> {
        let mut bytes = vec![0u8; n];
        self.random
            .fill(&mut bytes)
            .map_err(|_| SealError::Random)?;
        Ok(URL_SAFE_NO_PAD.encode(bytes))
    }
}

/// The PKCE S256 challenge of `verifier` (RFC 7636 §4.2).
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

/// Equality that takes the same time wherever the inputs differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::from_secret(&URL_SAFE_NO_PAD.encode([7u8; 32])).unwrap()
    }

    #[test]
    fn opens_what_it_sealed_for_the_same_purpose_only() {
        let s = sealer();
        let sealed = s.seal(Purpose::Code, &vec!["a", "b"]).unwrap();
        assert_eq!(
            s.open::<Vec<String>>(Purpose::Code, &sealed).unwrap(),
            ["a", "b"]
        );
        assert!(s.open::<Vec<String>>(Purpose::Refresh, &sealed).is_none());
        let other = Sealer::from_secret(&URL_SAFE_NO_PAD.encode([8u8; 32])).unwrap();
        assert!(other.open::<Vec<String>>(Purpose::Code, &sealed).is_none());
    }

    #[test]
    fn any_changed_byte_is_refused() {
        let s = sealer();
        let sealed = s.seal(Purpose::SignIn, &"x").unwrap();
        let bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        for i in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 1;
            let changed = URL_SAFE_NO_PAD.encode(changed);
            assert!(
                s.open::<String>(Purpose::SignIn, &changed).is_none(),
                "byte {i}"
            );
        }
        assert!(s.open::<String>(Purpose::SignIn, "").is_none());
        assert!(s.open::<String>(Purpose::SignIn, "not base64!").is_none());
    }

    #[test]
    fn sealing_secrets_must_be_32_characters_or_more() {
        assert!(Sealer::from_secret(&"x".repeat(31)).is_err());
        assert!(Sealer::from_secret("").is_err());
    }

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn same_compares_whole_strings() {
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("abc", "ab"));
    }
}
