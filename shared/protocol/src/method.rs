//! The methods this engine knows, parsed once after the envelope. Every per-method question
//! (served in this era? cacheable? which body field must `Mcp-Name` equal?) is answered
//! here, so adding a method is one edit and a typo is a compile error, not a silent -32601.

use std::fmt;

use crate::version::ProtocolVersion;

/// A request method. Parameters are still deserialised per method, after this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Initialize,
    Ping,
    SetLevel,
    Discover,
    ToolsList,
    ToolsCall,
    ResourcesList,
    ResourceTemplatesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
    Complete,
    /// Any other name: answered `-32601 Method not found` in both eras.
    Other(String),
}

/// What a server offers beyond tools: which of the optional methods it serves.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offered {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
    pub(crate) logging: bool,
}

impl Method {
    pub fn parse(name: &str) -> Self {
        match name {
            "initialize" => Self::Initialize,
            "ping" => Self::Ping,
            "logging/setLevel" => Self::SetLevel,
            "server/discover" => Self::Discover,
            "tools/list" => Self::ToolsList,
            "tools/call" => Self::ToolsCall,
            "resources/list" => Self::ResourcesList,
            "resources/templates/list" => Self::ResourceTemplatesList,
            "resources/read" => Self::ResourcesRead,
            "prompts/list" => Self::PromptsList,
            "prompts/get" => Self::PromptsGet,
            "completion/complete" => Self::Complete,
            other => Self::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Initialize => "initialize",
            Self::Ping => "ping",
            Self::SetLevel => "logging/setLevel",
            Self::Discover => "server/discover",
            Self::ToolsList => "tools/list",
            Self::ToolsCall => "tools/call",
            Self::ResourcesList => "resources/list",
            Self::ResourceTemplatesList => "resources/templates/list",
            Self::ResourcesRead => "resources/read",
            Self::PromptsList => "prompts/list",
            Self::PromptsGet => "prompts/get",
            Self::Complete => "completion/complete",
            Self::Other(name) => name,
        }
    }

    /// Whether a server offering `offered` answers this method in `version`. 2026-07-28
    /// removed `initialize`, `ping` and `logging/setLevel` and added `server/discover`;
    /// the optional families are served only when the server advertises them.
    pub(crate) fn is_served(&self, version: ProtocolVersion, offered: Offered) -> bool {
        let stateless = version.is_stateless();
        match self {
            Self::Initialize | Self::Ping => !stateless,
            Self::SetLevel => !stateless && offered.logging,
            Self::Discover => stateless,
            Self::ToolsList | Self::ToolsCall => true,
            Self::ResourcesList | Self::ResourceTemplatesList | Self::ResourcesRead => {
                offered.resources
            }
            Self::PromptsList | Self::PromptsGet => offered.prompts,
            Self::Complete => offered.completions,
            Self::Other(_) => false,
        }
    }

    /// 2026-07-28 server/utilities/caching: results a client may cache (lists, discovery
    /// and resource contents), which carry `ttlMs` and `cacheScope`.
    pub(crate) fn is_cacheable(&self) -> bool {
        matches!(
            self,
            Self::Discover
                | Self::ToolsList
                | Self::PromptsList
                | Self::ResourcesList
                | Self::ResourceTemplatesList
                | Self::ResourcesRead
        )
    }

    /// 2026-07-28 streamable-http §Server Validation: the body field the `Mcp-Name` header
    /// must equal, for the methods that name a target.
    pub(crate) fn name_param(&self) -> Option<&'static str> {
        match self {
            Self::ToolsCall | Self::PromptsGet => Some("name"),
            Self::ResourcesRead => Some("uri"),
            _ => None,
        }
    }

    /// Lists served in one page: any cursor is one we never issued.
    pub(crate) fn is_list(&self) -> bool {
        matches!(
            self,
            Self::ToolsList | Self::PromptsList | Self::ResourcesList | Self::ResourceTemplatesList
        )
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [&str; 12] = [
        "initialize",
        "ping",
        "logging/setLevel",
        "server/discover",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    ];

    #[test]
    fn names_round_trip_and_unknown_names_stay_unknown() {
        for name in KNOWN {
            let method = Method::parse(name);
            assert!(!matches!(method, Method::Other(_)), "{name}");
            assert_eq!(method.as_str(), name);
        }
        for name in ["tools/Call", "tools/call ", "", "notifications/initialized"] {
            assert_eq!(Method::parse(name), Method::Other(name.to_owned()));
        }
    }

    #[test]
    fn each_era_serves_its_own_methods() {
        let all = Offered {
            resources: true,
            prompts: true,
            completions: true,
            logging: true,
        };
        let old = ProtocolVersion::LATEST_HANDSHAKE;
        let new = ProtocolVersion::V2026_07_28;
        for name in ["initialize", "ping", "logging/setLevel"] {
            assert!(Method::parse(name).is_served(old, all), "{name}");
            assert!(!Method::parse(name).is_served(new, all), "{name}");
        }
        assert!(Method::Discover.is_served(new, all));
        assert!(!Method::Discover.is_served(old, all));
        let bare = Offered::default();
        for name in [
            "resources/read",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
        ] {
            assert!(!Method::parse(name).is_served(old, bare), "{name}");
        }
        assert!(Method::ToolsCall.is_served(new, bare));
    }
}
