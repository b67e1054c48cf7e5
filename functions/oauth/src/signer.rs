//! Access tokens signed in AWS KMS: the private key never leaves KMS; the bridge sends the
//! JWS signing input to `Sign` (RSASSA-PKCS1-v1_5 with SHA-256, i.e. RS256) and publishes the
//! public halves (`GetPublicKey`) as its JWKS. The `kid` is the key's RFC 7638 thumbprint, so
//! it changes exactly when the key does. During a rotation the previous keys stay in the JWKS
//! until the tokens they signed have expired.

use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs8::DecodePublicKey;
use rsa::traits::PublicKeyParts;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::error::BridgeError;

/// One published key.
#[derive(Debug, Clone)]
struct PublicJwk {
    kid: String,
    jwk: Value,
}

pub(crate) struct Signer {
    client: Client,
    /// Current key first.
    key_ids: Vec<String>,
    published: OnceCell<Vec<PublicJwk>>,
}

impl Signer {
    pub(crate) fn new(client: Client, key_ids: Vec<String>) -> Self {
        Self {
            client,
            key_ids,
            published: OnceCell::new(),
        }
    }

    async fn published(&self) -> Result<&[PublicJwk], BridgeError> {
        let keys = self
            .published
            .get_or_try_init(|| async {
                let mut keys = Vec::with_capacity(self.key_ids.len());
                for id in &self.key_ids {
                    keys.push(self.public_jwk(id).await?);
                }
                Ok::<_, BridgeError>(keys)
            })
            .await?;
        Ok(keys)
    }

    async fn public_jwk(&self, key_id: &str) -> Result<PublicJwk, BridgeError> {
        let answer = self
            .client
            .get_public_key()
            .key_id(key_id)
            .send()
            .await
            .map_err(|e| BridgeError::unavailable(format!("kms GetPublicKey: {e:?}")))?;
        let der = answer
            .public_key()
            .ok_or_else(|| BridgeError::unavailable("kms GetPublicKey: no key"))?;
        let key = rsa::PublicKey::from_public_key_der(der.as_ref()).map_err(|e| {
            BridgeError::unavailable(format!("kms key {key_id} is not an RSA key: {e}"))
        })?;
        let n = URL_SAFE_NO_PAD.encode(key.n_bytes());
        let e = URL_SAFE_NO_PAD.encode(key.e_bytes());
        // RFC 7638 §3.2: the required members in lexicographic order, no whitespace.
        let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            canonical.as_bytes(),
        ));
        Ok(PublicJwk {
            jwk: json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": n, "e": e}),
            kid,
        })
    }

    /// The JWKS document (RFC 7517 §5).
    pub(crate) async fn jwks(&self) -> Result<Value, BridgeError> {
        let keys: Vec<&Value> = self.published().await?.iter().map(|k| &k.jwk).collect();
        Ok(json!({ "keys": keys }))
    }

    /// `claims` as a JWT access token (RFC 9068: `typ: at+jwt`) signed by the current key.
    pub(crate) async fn sign(&self, claims: &Value) -> Result<String, BridgeError> {
        let current = self
            .published()
            .await?
            .first()
            .ok_or_else(|| BridgeError::unavailable("no signing key"))?;
        let header = json!({"alg": "RS256", "typ": "at+jwt", "kid": current.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signed = self
            .client
            .sign()
            .key_id(&self.key_ids[0])
            .message(Blob::new(input.as_bytes()))
            .message_type(MessageType::Raw)
            .signing_algorithm(SigningAlgorithmSpec::RsassaPkcs1V15Sha256)
            .send()
            .await
            .map_err(|e| BridgeError::unavailable(format!("kms Sign: {e:?}")))?;
        let signature = signed
            .signature()
            .ok_or_else(|| BridgeError::unavailable("kms Sign: no signature"))?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}
