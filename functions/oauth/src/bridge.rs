//! What every endpoint of the bridge shares: where the endpoints are, the bridge's state
//! (settings, keys, clients of its dependencies), the clock, and form parsing. A module of its
//! own so that each endpoint's module reads it without reading the router (`app.rs`).

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cimd::Documents;
use crate::clients::shown;
use crate::config::Config;
use crate::error::BridgeError;
use crate::seal::Sealer;
use crate::signer::Signer;
use crate::store::Store;
use crate::upstream::Upstream;

/// Where the bridge's endpoints are, under its issuer.
pub const AUTHORIZE_PATH: &str = "/oauth/authorize";
pub const CONSENT_PATH: &str = "/oauth/consent";
pub const CALLBACK_PATH: &str = "/oauth/callback";
pub const TOKEN_PATH: &str = "/oauth/token";
pub const REGISTER_PATH: &str = "/oauth/register";
pub const JWKS_PATH: &str = "/oauth/jwks";

/// The bridge's state: built once per sandbox.
pub(crate) struct Bridge {
    pub(crate) config: Config,
    pub(crate) sealer: Sealer,
    pub(crate) upstream: Upstream,
    pub(crate) signer: Signer,
    pub(crate) store: Store,
    pub(crate) documents: Documents,
}

impl Bridge {
    /// Whether the bridge is served over https (every deployment; http only on loopback):
    /// its cookie is then `__Host-` prefixed and Secure.
    pub(crate) fn secure(&self) -> bool {
        self.config.issuer.starts_with("https://")
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Form or query parameters (`application/x-www-form-urlencoded`). A parameter given twice
/// is refused (RFC 6749 §3.1 and §3.2): two parsers must never read two different requests.
pub(crate) fn form(encoded: &str) -> Result<BTreeMap<String, String>, BridgeError> {
    let mut params = BTreeMap::new();
    for (name, value) in url::form_urlencoded::parse(encoded.as_bytes()) {
        if params
            .insert(name.to_string(), value.into_owned())
            .is_some()
        {
            return Err(BridgeError::invalid_request(format!(
                "parameter {} is given more than once",
                shown(&name)
            )));
        }
    }
    Ok(params)
}
