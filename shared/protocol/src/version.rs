//! Protocol revisions this engine speaks, and what each one implies on the wire.

use std::fmt;

/// A protocol revision served by this engine.
///
/// The three handshake-era revisions are served statelessly (every request stands alone);
/// 2026-07-28 is stateless by design (per-request `_meta`, `server/discover`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every supported revision, oldest first.
    pub const ALL: [Self; 4] = [
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The newest revision that still uses the `initialize` handshake: what `initialize`
    /// answers when the client asks for a revision we do not speak (lifecycle §Version
    /// Negotiation: "This SHOULD be the latest version supported by the server").
    pub const LATEST_HANDSHAKE: Self = Self::V2025_11_25;

    /// "If the server does not receive an `MCP-Protocol-Version` header ... the server
    /// SHOULD assume protocol version 2025-03-26" (2025-06-18 transports §Protocol Version
    /// Header).
    pub const ASSUMED_WITHOUT_HEADER: Self = Self::V2025_03_26;

    /// Parses a revision string exactly as it appears on the wire.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The wire form, e.g. `"2025-11-25"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Returns true if and only if this revision is the stateless era (per-request `_meta`,
    /// `resultType`, HTTP 404 for unknown methods).
    pub fn is_stateless(self) -> bool {
        self == Self::V2026_07_28
    }

    /// Returns true if and only if JSON-RPC batches are part of this revision: 2025-03-26
    /// requires receiving them; 2025-06-18 removed them.
    pub fn allows_batches(self) -> bool {
        self == Self::V2025_03_26
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The wire strings of every supported revision, oldest first.
pub fn supported_versions() -> Vec<&'static str> {
    ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_every_version_and_rejects_others() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        for bad in ["", "2024-11-05", "2025-11-25 ", "v999.0.0", "2026-07-28\n"] {
            assert_eq!(ProtocolVersion::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_the_first_revision_allows_batches_and_only_the_last_is_stateless() {
        let batches: Vec<_> = ProtocolVersion::ALL
            .iter()
            .map(|v| v.allows_batches())
            .collect();
        assert_eq!(batches, [true, false, false, false]);
        let stateless: Vec<_> = ProtocolVersion::ALL
            .iter()
            .map(|v| v.is_stateless())
            .collect();
        assert_eq!(stateless, [false, false, false, true]);
    }
}
