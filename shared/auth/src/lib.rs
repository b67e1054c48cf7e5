//! Bearer-token verification for the MCP endpoint, an OAuth 2.1 resource server.
//!
//! [`Verifier::verify`] turns a bearer token into a [`Principal`] or a precise
//! [`AuthError`]. It requires what `jsonwebtoken`'s defaults leave optional (`iss`, `aud`,
//! `sub`, `exp`, `nbf` checked; see `shared/research/security.md` part B), decodes into a
//! typed claims struct, rejects duplicate JSON keys, caps token size before decoding,
//! bounds token lifetime, and only trusts keys from configuration: never `jku`, `x5u`, an
//! embedded `jwk` or the `iss` URL.
//!
//! Keys come from a JWKS: inline JSON (development, tests) or an HTTPS URL (or the issuer's
//! OIDC discovery document) fetched lazily, cached across warm invocations, refreshed on an
//! unknown `kid` at most once per interval, and usable while stale for a bounded window.
//!
//! This crate knows nothing about HTTP frameworks or MCP; the function crate maps its
//! errors to 401/403/503 and `WWW-Authenticate`.

mod claims;
mod config;
mod error;
pub mod json;
mod keys;
mod source;
mod verifier;

pub use claims::{canonical_resource, is_loopback_url};
pub use config::{AudienceBinding, AuthConfig, AuthConfigError, KeysConfig, RemoteKeysConfig};
pub use error::AuthError;
pub use keys::KeySet;
pub use verifier::{Principal, Verifier};

/// Re-exported so configuration and tests name algorithms the way the verifier does.
pub use jsonwebtoken::Algorithm;
