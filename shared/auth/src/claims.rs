//! The typed claims of an access token and the checks `jsonwebtoken` does not make.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Claims every accepted token must carry, typed so wrong JSON types are refused
/// (CVE-2026-25537 was an `exp` string counted as "absent").
#[derive(Debug, Deserialize)]
pub(crate) struct Claims {
    pub(crate) iss: String,
    pub(crate) sub: String,
    pub(crate) aud: Option<Audience>,
    pub(crate) client_id: Option<String>,
    pub(crate) token_use: Option<String>,
    pub(crate) exp: u64,
    pub(crate) iat: Option<u64>,
    pub(crate) scope: Option<String>,
    pub(crate) scp: Option<ScopeList>,
    /// Everything else, for the configurable tenant claim.
    #[serde(flatten)]
    pub(crate) other: BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    /// Returns true if and only if `resource` is among the audiences (RFC 7519 §4.1.3:
    /// any-of; a token for several resources including us is ours too), compared as
    /// canonical URIs.
    pub(crate) fn contains(&self, resource: &str) -> bool {
        let Some(ours) = canonical_resource(resource) else {
            return false;
        };
        let matches = |aud: &String| canonical_resource(aud).as_deref() == Some(ours.as_str());
        match self {
            Self::One(aud) => matches(aud),
            Self::Many(list) => list.iter().any(matches),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ScopeList {
    One(String),
    Many(Vec<String>),
}

/// At most this many scopes are read from a token, each at most this long.
const MAX_SCOPES: usize = 64;
const MAX_SCOPE_LEN: usize = 128;

/// Granted scopes: `scope` (space-separated, RFC 9068 §2.2.3) or else `scp` (array or
/// string, as Okta and Azure issue it). Scopes with control or whitespace characters are
/// dropped, never repaired: stripping `ad\u0000min` would forge `admin`.
pub(crate) fn scopes(claims: &Claims) -> Vec<String> {
    let raw: Vec<&str> = match (&claims.scope, &claims.scp) {
        (Some(s), _) => s.split(' ').collect(),
        (None, Some(ScopeList::One(s))) => s.split(' ').collect(),
        (None, Some(ScopeList::Many(list))) => list.iter().map(String::as_str).collect(),
        (None, None) => Vec::new(),
    };
    let mut out: Vec<String> = Vec::new();
    for s in raw {
        let clean = !s.is_empty()
            && s.len() <= MAX_SCOPE_LEN
            && !s
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || is_bidi_control(c));
        if clean && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
        if out.len() == MAX_SCOPES {
            break;
        }
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A string claim usable as an identifier: 1-256 chars, no control characters.
pub(crate) fn clean_identifier(value: &str) -> Option<&str> {
    (!value.is_empty()
        && value.len() <= 256
        && !value.chars().any(|c| c.is_control() || is_bidi_control(c)))
    .then_some(value)
}

/// The canonical form of a resource URI for comparison: scheme and host lowercased
/// (MCP 2025-11-25 authorization §Canonical Server URI: "implementations SHOULD accept
/// uppercase scheme and host components"), everything else compared exactly, so a
/// trailing slash or a different path is a different resource. `None` if not an absolute
/// http(s) URI.
pub fn canonical_resource(uri: &str) -> Option<String> {
    let (scheme, rest) = uri.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    Some(format!(
        "{scheme}://{}{path}",
        authority.to_ascii_lowercase()
    ))
}

/// Returns true if and only if the URL's host is a loopback name or address.
pub fn is_loopback_url(url: &str) -> bool {
    let Some(canonical) = canonical_resource(url) else {
        return false;
    };
    let authority = canonical
        .split_once("://")
        .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
        .unwrap_or("");
    let host = if authority.starts_with('[') {
        authority
            .split(']')
            .next()
            .map(|h| format!("{h}]"))
            .unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or("").to_owned()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_compare_with_case_insensitive_scheme_and_host_only() {
        let ours = "https://mcp.example.com/prod/mcp";
        assert!(Audience::One("HTTPS://MCP.Example.com/prod/mcp".into()).contains(ours));
        assert!(!Audience::One("https://mcp.example.com/prod/MCP".into()).contains(ours));
        assert!(!Audience::One("https://mcp.example.com/prod/mcp/".into()).contains(ours));
        assert!(!Audience::One("https://mcp.example.com".into()).contains(ours));
        assert!(Audience::Many(vec!["other".into(), ours.into()]).contains(ours));
        assert!(!Audience::Many(vec![]).contains(ours));
        assert_eq!(canonical_resource("ftp://x/y"), None);
        assert_eq!(canonical_resource("https://user@evil/x"), None);
    }

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback_url("http://127.0.0.1:9000/lambda-url/mcp/mcp"));
        assert!(is_loopback_url("http://LOCALHOST/x"));
        assert!(is_loopback_url("http://[::1]:80/"));
        assert!(!is_loopback_url("http://localhost.evil.example/"));
        assert!(!is_loopback_url("https://example.com/"));
    }

    fn claims(extra: serde_json::Value) -> Claims {
        let mut base = json!({"iss": "i", "sub": "s", "aud": "a", "exp": 1});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn scopes_come_from_scope_or_scp_and_dirty_ones_are_dropped() {
        assert_eq!(scopes(&claims(json!({"scope": "a b  a"}))), ["a", "b"]);
        assert_eq!(scopes(&claims(json!({"scp": ["x", "y"]}))), ["x", "y"]);
        assert_eq!(scopes(&claims(json!({"scp": "x y"}))), ["x", "y"]);
        assert_eq!(scopes(&claims(json!({"scope": "a", "scp": ["b"]}))), ["a"]);
        let dirty = json!({"scp": ["admin\u{0}", "ad\u{0}min", "admin\n", "\u{202e}admin", "admin\t", "read"]});
        assert_eq!(scopes(&claims(dirty)), ["read"]);
        let many: Vec<String> = (0..500).map(|i| format!("s{i}")).collect();
        assert_eq!(scopes(&claims(json!({"scp": many}))).len(), 64);
        assert!(scopes(&claims(json!({}))).is_empty());
    }
}
