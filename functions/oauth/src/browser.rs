//! The browser's cookie: a random identity for this browser and the clients it approved on
//! the consent page, sealed (`seal.rs`), so it can be neither read nor forged, nor moved to
//! another deployment. The consent form and the upstream `state` name the identity, which binds
//! both to the browser that saw the page (MCP Security Best Practices, "Confused Deputy
//! Problem": consent cookies are `__Host-` prefixed, Secure, HttpOnly, SameSite=Lax, signed
//! and bound to the client). Approvals live here and nowhere else: one browser's approval
//! never lets a client past another browser's consent page.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use http::header::COOKIE;
use serde::{Deserialize, Serialize};

use crate::clients::loopback_parts;
use crate::error::BridgeError;
use crate::seal::{Purpose, Sealer};

/// How long an approval lets the same client (same redirect URI, same scopes) past the page.
pub(crate) const APPROVAL_LIFETIME_SECS: u64 = 30 * 24 * 3600;
/// Approvals kept per browser; the oldest go first. Bounds the cookie (about 1 KB).
const MAX_APPROVALS: usize = 16;

/// The cookie's name: with the `__Host-` prefix (RFC 6265bis §4.1.3.2: Secure, `Path=/`, no
/// `Domain`, so no other host or path can set or shadow it) wherever the bridge is served over
/// https; without it only for an http issuer on loopback (local runs and tests), where a
/// Secure cookie would not come back.
pub(crate) fn cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-mcp-oauth"
    } else {
        "mcp-oauth"
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Browser {
    #[serde(rename = "i")]
    id: String,
    /// `(approval key, expiry)`: see [`approval_key`].
    #[serde(rename = "a", default)]
    approvals: Vec<(String, u64)>,
}

impl Browser {
    /// A browser seen for the first time.
    pub(crate) fn new(sealer: &Sealer) -> Result<Self, BridgeError> {
        Ok(Self {
            id: sealer.random_token(16)?,
            approvals: Vec::new(),
        })
    }

    /// The browser whose cookie `headers` carry, if it is one this bridge sealed, under this
    /// deployment's cookie name only: over https that is the `__Host-` name, which no other
    /// host, path or plain-http response can set. (Accepting the unprefixed name there would
    /// let a sibling host or a network attacker plant a cookie holding its own approvals.)
    pub(crate) fn from_headers(sealer: &Sealer, headers: &HeaderMap, secure: bool) -> Option<Self> {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == cookie_name(secure))
            .find_map(|(_, value)| sealer.open::<Self>(Purpose::Browser, value.trim()))
    }

    /// Whether this browser approved `client_id` sending codes to `redirect_uri`, for any
    /// scopes: only then may an error be sent to that redirect URI rather than shown (anyone
    /// can register a redirect URI; RFC 9700 §4.11.2).
    pub(crate) fn trusts(&self, client_id: &str, redirect_uri: &str, now: u64) -> bool {
        self.approved(&redirect_key(client_id, redirect_uri), now)
    }

    /// Remembers the approval of `client_id`, `redirect_uri` and `scopes`.
    pub(crate) fn approve_client(
        &mut self,
        client_id: &str,
        redirect_uri: &str,
        scopes: &[String],
        now: u64,
    ) {
        self.approve(approval_key(client_id, redirect_uri, scopes), now);
        self.approve(redirect_key(client_id, redirect_uri), now);
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Whether this browser approved `key` and the approval has not expired.
    pub(crate) fn approved(&self, key: &str, now: u64) -> bool {
        self.approvals.iter().any(|(k, exp)| k == key && *exp > now)
    }

    /// Remembers the approval of `key` until [`APPROVAL_LIFETIME_SECS`] from `now`; drops
    /// expired approvals and, past [`MAX_APPROVALS`], the oldest.
    pub(crate) fn approve(&mut self, key: String, now: u64) {
        self.approvals.retain(|(k, exp)| *k != key && *exp > now);
        self.approvals.push((key, now + APPROVAL_LIFETIME_SECS));
        self.approvals
            .sort_by_key(|(_, exp)| std::cmp::Reverse(*exp));
        self.approvals.truncate(MAX_APPROVALS);
    }

    /// The `Set-Cookie` value that keeps this browser: HttpOnly (no script reads it),
    /// SameSite=Lax (sent on the upstream's top-level redirect back to the callback, never
    /// with a cross-site POST), for as long as its approvals last.
    pub(crate) fn set_cookie(&self, sealer: &Sealer, secure: bool) -> Result<String, BridgeError> {
        let sealed = sealer.seal(Purpose::Browser, self)?;
        let mut cookie = format!(
            "{}={sealed}; Path=/; Max-Age={APPROVAL_LIFETIME_SECS}; HttpOnly; SameSite=Lax",
            cookie_name(secure)
        );
        if secure {
            cookie.push_str("; Secure");
        }
        Ok(cookie)
    }
}

/// What an approval is for: this client, sending codes to this redirect URI (a loopback one
/// on any port, as matching allows: RFC 8252 §7.3), for these scopes. A client that later
/// asks for more, or for another of its redirect URIs, asks the user again. Hashed, so the
/// cookie stays small whatever the client id's length.
pub(crate) fn approval_key(client_id: &str, redirect_uri: &str, scopes: &[String]) -> String {
    let mut scopes = scopes.to_vec();
    scopes.sort();
    hashed(&format!(
        "{client_id}\n{}\nscopes {}",
        without_loopback_port(redirect_uri),
        scopes.join(" ")
    ))
}

/// What [`Browser::trusts`] looks for: this client and redirect URI approved, whatever scopes.
fn redirect_key(client_id: &str, redirect_uri: &str) -> String {
    hashed(&format!(
        "{client_id}\n{}\nredirects",
        without_loopback_port(redirect_uri)
    ))
}

fn without_loopback_port(redirect_uri: &str) -> String {
    match loopback_parts(redirect_uri) {
        Some((host, _port, rest)) => format!("http://{host}{rest}"),
        None => redirect_uri.to_owned(),
    }
}

fn hashed(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer(byte: u8) -> Sealer {
        Sealer::from_secret(&URL_SAFE_NO_PAD.encode([byte; 32])).unwrap()
    }

    fn headers(cookie: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, cookie.parse().unwrap());
        headers
    }

    #[test]
    fn a_browser_comes_back_only_from_its_own_sealed_cookie() {
        let s = sealer(1);
        let mut browser = Browser::new(&s).unwrap();
        browser.approve(approval_key("c", "https://a.example/cb", &[]), 100);
        let set = browser.set_cookie(&s, true).unwrap();
        assert!(set.starts_with("__Host-mcp-oauth="), "{set}");
        for attribute in ["Path=/", "HttpOnly", "SameSite=Lax", "Secure"] {
            assert!(
                set.split("; ").any(|a| a == attribute),
                "{attribute}: {set}"
            );
        }
        assert!(!set.contains("Domain"), "{set}");
        let value = set.split(';').next().unwrap();
        let back =
            Browser::from_headers(&s, &headers(&format!("other=1; {value}; x=y")), true).unwrap();
        assert_eq!(back.id(), browser.id());
        assert!(back.approved(&approval_key("c", "https://a.example/cb", &[]), 101));
        // Another deployment's key, a changed value, another purpose: no browser.
        assert!(Browser::from_headers(&sealer(2), &headers(value), true).is_none());
        let tampered = format!("{}A", value.trim_end_matches('A'));
        assert!(Browser::from_headers(&s, &headers(&tampered), true).is_none());
        let other = s.seal(Purpose::Consent, &browser).unwrap();
        let other = format!("__Host-mcp-oauth={other}");
        assert!(Browser::from_headers(&s, &headers(&other), true).is_none());
        // Over https the unprefixed name, which another host or plain http could set, is not
        // read, whatever it holds; over http on loopback only it is.
        let unprefixed = value.replacen("__Host-mcp-oauth=", "mcp-oauth=", 1);
        assert!(Browser::from_headers(&s, &headers(&unprefixed), true).is_none());
        assert!(Browser::from_headers(&s, &headers(&unprefixed), false).is_some());
        assert!(Browser::from_headers(&s, &headers(value), false).is_none());
        // Over http on loopback the cookie has no prefix and no Secure.
        let local = browser.set_cookie(&s, false).unwrap();
        assert!(
            local.starts_with("mcp-oauth=") && !local.contains("Secure"),
            "{local}"
        );
    }

    #[test]
    fn approvals_are_per_client_redirect_and_scopes_and_expire() {
        let s = sealer(1);
        let mut browser = Browser::new(&s).unwrap();
        let scopes = vec!["events:read".to_owned()];
        let key = approval_key("client-a", "http://127.0.0.1:4000/cb", &scopes);
        browser.approve(key.clone(), 1_000);
        assert!(browser.approved(&key, 1_001));
        assert!(!browser.approved(&key, 1_000 + APPROVAL_LIFETIME_SECS));
        // A loopback redirect on another port is the same approval; anything else is not.
        assert_eq!(
            key,
            approval_key("client-a", "http://127.0.0.1:5000/cb", &scopes)
        );
        for other in [
            approval_key("client-b", "http://127.0.0.1:4000/cb", &scopes),
            approval_key("client-a", "http://127.0.0.1:4000/other", &scopes),
            approval_key("client-a", "http://localhost:4000/cb", &scopes),
            approval_key("client-a", "http://127.0.0.1:4000/cb", &[]),
        ] {
            assert!(!browser.approved(&other, 1_001));
        }
        // Bounded: the oldest approvals go first.
        for i in 0..(MAX_APPROVALS as u64 + 4) {
            browser.approve(format!("k{i}"), 2_000 + i);
        }
        assert_eq!(browser.approvals.len(), MAX_APPROVALS);
        assert!(browser.approved(&format!("k{}", MAX_APPROVALS + 3), 2_100));
        assert!(!browser.approved("k0", 2_100));
    }
}
