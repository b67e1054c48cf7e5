//! Integrity-protected `requestState` for the multi-round-trip fixtures.
//!
//! The state comes back from the client, so it is signed: `<tool>.<round>.<mac>` with an
//! HMAC-SHA256 over `<tool>.<round>`. Any Lambda instance holding the key can verify it,
//! which is what keeps the flow stateless.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use mcp_protocol::ToolError;
use sha2::Sha256;

pub struct StateSigner {
    key: Vec<u8>,
}

impl StateSigner {
    /// Key from `FIXTURE_STATE_KEY`, or a fixed development key (fixtures only).
    pub fn from_env() -> Self {
        let key = std::env::var("FIXTURE_STATE_KEY")
            .unwrap_or_else(|_| "conformance-fixture-development-key".into());
        Self {
            key: key.into_bytes(),
        }
    }

    fn mac(&self, payload: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        mac.update(payload.as_bytes());
        mac
    }

    pub fn sign(&self, tool: &str, round: u32) -> String {
        let payload = format!("{tool}.{round}");
        let tag = URL_SAFE_NO_PAD.encode(self.mac(&payload).finalize().into_bytes());
        format!("{payload}.{tag}")
    }

    /// The round a valid state for `tool` carries.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidParams`] when the state was not signed by us for this tool.
    pub fn round(&self, state: &str, tool: &str) -> Result<u32, ToolError> {
        let invalid = || ToolError::InvalidParams("requestState failed its integrity check".into());
        let (payload, tag) = state.rsplit_once('.').ok_or_else(invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        self.mac(payload)
            .verify_slice(&tag)
            .map_err(|_| invalid())?;
        let (signed_tool, round) = payload.rsplit_once('.').ok_or_else(invalid)?;
        if signed_tool != tool {
            return Err(invalid());
        }
        round.parse().map_err(|_| invalid())
    }

    /// Checks that `state` is ours, for `tool`, at `round`.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidParams`] otherwise.
    pub fn verify(&self, state: &str, tool: &str, round: u32) -> Result<(), ToolError> {
        match self.round(state, tool)? {
            r if r == round => Ok(()),
            _ => Err(ToolError::InvalidParams(
                "requestState is from another round".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_state_verifies_and_any_change_is_refused() {
        let s = StateSigner { key: b"k".to_vec() };
        let state = s.sign("tool", 2);
        assert_eq!(s.round(&state, "tool").unwrap(), 2);
        assert!(s.verify(&state, "tool", 1).is_err());
        assert!(s.round(&state, "other").is_err());
        let mut tampered = state.clone();
        tampered.insert(0, 'x');
        assert!(s.round(&tampered, "xtool").is_err());
        assert!(s.round(&state.replace(".2.", ".3."), "tool").is_err());
        assert!(s.round("garbage", "tool").is_err());
        let other = StateSigner {
            key: b"other".to_vec(),
        };
        assert!(other.round(&state, "tool").is_err());
    }
}
