//! Opaque pagination cursors: the position of the last row returned, bound to the tenant
//! and to the filter that produced it, HMAC-signed so a client can neither forge a position
//! nor replay a cursor for another tenant or another query.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The signing key (`CURSOR_SIGNING_KEY`, at least 32 bytes).
#[derive(Clone)]
pub struct CursorKey(Vec<u8>);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// A key that is too short to sign with.
#[derive(Debug, thiserror::Error)]
#[error("CURSOR_SIGNING_KEY must be at least 32 bytes")]
pub struct WeakKey;

impl CursorKey {
    /// # Errors
    ///
    /// [`WeakKey`] under 32 bytes.
    pub fn new(key: impl Into<Vec<u8>>) -> Result<Self, WeakKey> {
        let key = key.into();
        if key.len() < 32 {
            return Err(WeakKey);
        }
        Ok(Self(key))
    }

    fn mac(&self, tenant: &str, body: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        // Length-prefix the tenant so (tenant, body) pairs cannot collide.
        mac.update(&(tenant.len() as u64).to_be_bytes());
        mac.update(tenant.as_bytes());
        mac.update(body.as_bytes());
        mac
    }
}

/// Where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// `occurred_at` of the last row returned.
    pub at: Timestamp,
    /// `id` of the last row returned.
    pub id: i64,
}

/// What a cursor carries: where the next page starts (a [`Position`], or a tool's own
/// position type), and which query it continues.
#[derive(Serialize, Deserialize)]
struct Body<P> {
    #[serde(flatten)]
    position: P,
    /// Hash of the filter: a cursor only continues the query that made it.
    f: String,
}

/// A short hash of a filter's canonical JSON.
pub fn filter_hash(filter: &serde_json::Value) -> String {
    let digest = Sha256::digest(filter.to_string().as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..12])
}

/// Why a cursor was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CursorError {
    #[error("the cursor is malformed or was altered")]
    Invalid,
    #[error(
        "the cursor belongs to a different query; pass the same filters, or none of the cursor"
    )]
    OtherQuery,
}

impl CursorKey {
    pub fn sign<P: Serialize>(&self, tenant: &str, filter: &str, position: &P) -> String {
        let body = serde_json::to_string(&Body {
            position,
            f: filter.to_owned(),
        })
        .unwrap_or_default();
        let body = URL_SAFE_NO_PAD.encode(body);
        let tag = URL_SAFE_NO_PAD.encode(self.mac(tenant, &body).finalize().into_bytes());
        format!("{body}.{tag}")
    }

    /// # Errors
    ///
    /// [`CursorError::Invalid`] for anything not signed by us for this tenant,
    /// [`CursorError::OtherQuery`] for a genuine cursor of a different filter.
    pub fn verify<P: DeserializeOwned>(
        &self,
        tenant: &str,
        filter: &str,
        cursor: &str,
    ) -> Result<P, CursorError> {
        let (body, tag) = cursor.split_once('.').ok_or(CursorError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CursorError::Invalid)?;
        self.mac(tenant, body)
            .verify_slice(&tag)
            .map_err(|_| CursorError::Invalid)?;
        let json = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| CursorError::Invalid)?;
        let body: Body<P> = serde_json::from_slice(&json).map_err(|_| CursorError::Invalid)?;
        if body.f != filter {
            return Err(CursorError::OtherQuery);
        }
        Ok(body.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(vec![7u8; 32]).unwrap()
    }

    #[test]
    fn cursors_round_trip_and_are_bound_to_tenant_and_filter() {
        let pos = Position {
            at: "2026-01-02T03:04:05.123456Z".parse().unwrap(),
            id: 42,
        };
        let c = key().sign("acme", "f1", &pos);
        assert_eq!(key().verify("acme", "f1", &c), Ok(pos));
        assert_eq!(
            key().verify::<Position>("globex", "f1", &c),
            Err(CursorError::Invalid)
        );
        assert_eq!(
            key().verify::<Position>("acme", "f2", &c),
            Err(CursorError::OtherQuery)
        );
        let other = CursorKey::new(vec![8u8; 32]).unwrap();
        assert_eq!(
            other.verify::<Position>("acme", "f1", &c),
            Err(CursorError::Invalid)
        );
        let mut tampered = c.clone();
        tampered.replace_range(0..1, if c.starts_with('A') { "B" } else { "A" });
        assert_eq!(
            key().verify::<Position>("acme", "f1", &tampered),
            Err(CursorError::Invalid)
        );
        for junk in ["", ".", "abc", "a.b", "'; DROP TABLE events; --"] {
            assert_eq!(
                key().verify::<Position>("acme", "f1", junk),
                Err(CursorError::Invalid)
            );
        }
        assert!(CursorKey::new(vec![1u8; 31]).is_err());
    }
}
