//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP
//! authorization 2025-11-25 §Client ID Metadata Documents, preferred since 2026-07-28): a
//! client whose `client_id` is an https URL registers nowhere. The bridge fetches the JSON
//! document at that URL, which must name the same `client_id` and lists the redirect URIs.
//!
//! Fetching a URL a stranger chose is a server-side request forgery risk, so the fetch is
//! bounded in every way the bridge controls: https only; every address the host resolves to
//! (or an IP literal) must be public (no private, loopback, link-local, CGNAT or documentation
//! ranges; loopback only when the bridge itself runs on loopback, i.e. tests and local runs);
//! no redirects (the draft, §4); a few seconds; 5 KiB (the draft's own suggestion).
//!
//! A fetched document is kept per sandbox: used for a few minutes, and for a day more when
//! fetching it again fails (vendors' documents have been down for hours). It is a cache of
//! public data, the same for every sandbox, not state: nothing needs sharing through the
//! table.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use url::{Host, Url};

use crate::clients::{Registration, client_name, redirect_uris, shown};
use crate::config::CimdConfig;
use crate::error::BridgeError;

/// Largest document read (the draft suggests 5 kilobytes).
const MAX_BYTES: usize = 5 * 1024;
/// Documents (and clients' JWKS) kept per sandbox.
const CACHE_ENTRIES: usize = 256;
const MAX_URL_LEN: usize = 512;
/// Largest JWKS read: a few keys.
const MAX_JWKS_BYTES: usize = 16 * 1024;

/// Whether `client_id` names a metadata document (rather than a DCR registration).
pub(crate) fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

pub(crate) struct Documents {
    http: reqwest::Client,
    allow_loopback: bool,
    fresh_for: Duration,
    stale_for: Duration,
    documents: Kept<Registration>,
    /// Clients' JWKS (`private_key_jwt`), by URL.
    keys: Kept<Vec<u8>>,
}

/// What was fetched, by URL, with when: at most [`CACHE_ENTRIES`]; when full, what is older
/// than the longest anything is used goes first, then the oldest.
struct Kept<T> {
    entries: Mutex<HashMap<String, (Instant, T)>>,
    stale_for: Duration,
}

impl<T: Clone> Kept<T> {
    fn new(stale_for: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            stale_for,
        }
    }

    /// The value kept for `url`, if it was fetched less than `max_age` ago.
    fn get(&self, url: &str, max_age: Duration) -> Option<T> {
        let entries = self.entries.lock().ok()?;
        let (at, value) = entries.get(url)?;
        (at.elapsed() < max_age).then(|| value.clone())
    }

    fn keep(&self, url: &str, value: &T) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CACHE_ENTRIES {
            entries.retain(|_, (at, _)| at.elapsed() < self.stale_for);
        }
        if entries.len() >= CACHE_ENTRIES
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(url.to_owned(), (Instant::now(), value.clone()));
    }
}

fn refused(description: String) -> BridgeError {
    BridgeError::refused("invalid_client", description)
}

impl Documents {
    pub(crate) fn new(config: &CimdConfig) -> anyhow::Result<Self> {
        let allow_loopback = config.allow_loopback;
        let mut builder = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .https_only(true)
            .dns_resolver(Arc::new(PublicOnly { allow_loopback }))
            // The draft (§4): the document is served at the client_id URL itself; a
            // redirect is an answer, never followed (it could lead anywhere).
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pem) = &config.extra_root_pem {
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(pem)?);
        }
        Ok(Self {
            http: builder.build()?,
            allow_loopback,
            fresh_for: config.fresh_for,
            stale_for: config.stale_for,
            documents: Kept::new(config.stale_for),
            keys: Kept::new(config.stale_for),
        })
    }

    /// The client whose `client_id` is `url`, from its document: kept from a fetch less than
    /// `fresh_for` ago, or fetched. When the fetch fails (no answer, an HTTP error) a copy
    /// less than `stale_for` old is used instead; a document that answers but is no longer
    /// valid is believed at once.
    pub(crate) async fn resolve(&self, url: &str) -> Result<Registration, BridgeError> {
        if let Some(found) = self.documents.get(url, self.fresh_for) {
            return Ok(found);
        }
        let parsed = parse_client_id(url, self.allow_loopback).map_err(|why| {
            refused(format!(
                "the client_id {} is not a valid client metadata document URL: {why}",
                shown(url)
            ))
        })?;
        let body = match self
            .fetch_bounded(parsed, "metadata document", url, MAX_BYTES)
            .await
        {
            Ok(body) => body,
            Err(e) => {
                return match self.documents.get(url, self.stale_for) {
                    Some(kept) => {
                        tracing::warn!(
                            client_id = %shown(url),
                            "metadata document unreachable; the last good copy is used"
                        );
                        Ok(kept)
                    }
                    None => Err(e),
                };
            }
        };
        let registration = registration_from(&body, url)?;
        self.documents.keep(url, &registration);
        Ok(registration)
    }

    /// The JWKS at `jwks_uri` (a client's keys, named by its document), fetched as documents
    /// are; kept as documents are.
    pub(crate) async fn keys(&self, jwks_uri: &str) -> Result<Vec<u8>, BridgeError> {
        if let Some(found) = self.keys.get(jwks_uri, self.fresh_for) {
            return Ok(found);
        }
        let url = Url::parse(jwks_uri)
            .ok()
            .filter(|u| check_url(u, self.allow_loopback).is_ok())
            .ok_or_else(|| refused("the client's jwks_uri is not an https URL".into()))?;
        match self
            .fetch_bounded(url, "keys (jwks_uri)", jwks_uri, MAX_JWKS_BYTES)
            .await
        {
            Ok(body) => {
                self.keys.keep(jwks_uri, &body);
                Ok(body)
            }
            Err(e) => self.keys.get(jwks_uri, self.stale_for).ok_or(e),
        }
    }

    /// `what` at `url` (named `shown_url` to the client), at most `max_bytes`; `Err` when it
    /// could not be had (the error the client sees).
    async fn fetch_bounded(
        &self,
        url: Url,
        what: &str,
        shown_url: &str,
        max_bytes: usize,
    ) -> Result<Vec<u8>, BridgeError> {
        let unreachable = |why: String| {
            refused(format!(
                "the client's {what} at {} could not be fetched: {why}",
                shown(shown_url)
            ))
        };
        let mut response = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| unreachable(describe(&e)))?;
        if response.status().is_redirection() {
            return Err(unreachable(format!(
                "it redirected (HTTP {}); it must be served at its own URL",
                response.status().as_u16()
            )));
        }
        if !response.status().is_success() {
            return Err(unreachable(format!("HTTP {}", response.status().as_u16())));
        }
        if response
            .content_length()
            .is_some_and(|n| n > max_bytes as u64)
        {
            return Err(unreachable(format!("larger than {max_bytes} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unreachable(describe(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > max_bytes {
                return Err(unreachable(format!("larger than {max_bytes} bytes")));
            }
        }
        Ok(body)
    }
}

/// Why a fetch failed, in words safe to show (never an address the client cannot see).
fn describe(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(cause) = source {
        if cause.to_string().contains(NO_PUBLIC_ADDRESS) {
            return format!("the host {NO_PUBLIC_ADDRESS}");
        }
        source = cause.source();
    }
    if e.is_timeout() {
        "it took too long".into()
    } else if e.is_connect() {
        "no connection (refused, or TLS failed)".into()
    } else {
        "the request failed".into()
    }
}

/// What [`PublicOnly`] answers for a name without a public address.
const NO_PUBLIC_ADDRESS: &str = "resolves to no public address";

#[derive(Deserialize)]
struct Document {
    client_id: Option<String>,
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    token_endpoint_auth_method: Option<String>,
    client_secret: Option<serde_json::Value>,
    grant_types: Option<Vec<String>>,
    jwks_uri: Option<String>,
}

/// The registration a document describes, if it is one the bridge can serve.
fn registration_from(body: &[u8], client_id: &str) -> Result<Registration, BridgeError> {
    let doc: Document = serde_json::from_slice(body)
        .map_err(|_| refused("the client's metadata document is not a JSON object".into()))?;
    // The draft §4.1: the document's client_id must equal the URL it came from, exactly.
    if doc.client_id.as_deref() != Some(client_id) {
        return Err(refused(
            "the client's metadata document names another client_id than its own URL".into(),
        ));
    }
    // Public clients only, as with DCR: a document cannot carry a shared secret (draft §4.1).
    if doc.client_secret.is_some() {
        return Err(refused(
            "a client metadata document must not carry a client_secret".into(),
        ));
    }
    match doc.token_endpoint_auth_method.as_deref() {
        None | Some("none") => {}
        // ChatGPT's per-connector documents declare private_key_jwt with a jwks_uri: its
        // token requests carry a client assertion signed with those keys (`assertion.rs`),
        // besides PKCE, which binds every code here.
        Some("private_key_jwt")
            if doc
                .jwks_uri
                .as_deref()
                .is_some_and(|u| u.starts_with("https://") && u.len() <= MAX_URL_LEN) => {}
        Some(other) => {
            return Err(refused(format!(
                "token_endpoint_auth_method {} is not offered; this server's clients are public (none)",
                shown(other)
            )));
        }
    }
    // The same rules as a registration's.
    let redirect_uris = redirect_uris(doc.redirect_uris)
        .map_err(|why| refused(format!("the client's metadata document: {why}")))?;
    Ok(Registration {
        redirect_uris,
        name: doc.client_name.as_deref().map(client_name),
        issued_at: 0,
        // RFC 7591 §2, which the draft's metadata follows: absent means authorization_code.
        refresh: doc
            .grant_types
            .is_some_and(|grants| grants.iter().any(|g| g == "refresh_token")),
        jwks_uri: match doc.token_endpoint_auth_method.as_deref() {
            Some("private_key_jwt") => doc.jwks_uri,
            _ => None,
        },
    })
}

/// Whether `client_id` is a URL a metadata document may be fetched from.
pub(crate) fn valid_client_id(client_id: &str, allow_loopback: bool) -> bool {
    parse_client_id(client_id, allow_loopback).is_ok()
}

/// A `client_id` URL as the draft §3 allows it: https, a host, a path, no fragment, no user
/// information, no dot segments, no query; and (for an IP literal) a public address.
fn parse_client_id(client_id: &str, allow_loopback: bool) -> Result<Url, &'static str> {
    if client_id.len() > MAX_URL_LEN {
        return Err("longer than 512 characters");
    }
    let url = Url::parse(client_id).map_err(|_| "not a URL")?;
    if client_id.contains('#') {
        return Err("it has a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("it carries user information");
    }
    if url.query().is_some() {
        return Err("it has a query");
    }
    let path = client_id
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("");
    if path.len() < 2 {
        return Err("it has no path");
    }
    if path.split('/').any(|s| s == "." || s == "..") {
        return Err("it has dot segments");
    }
    // The client id is shown on the consent page and compared as a string: it must be an
    // RFC 3986 URI exactly as a URL parser reads it, so that what a person reads is where the
    // document is (`https://evil.example\@claude.ai/x` is evil.example to a browser).
    if iri_string::types::UriAbsoluteStr::new(client_id).is_err() {
        return Err("not a valid absolute URI (RFC 3986)");
    }
    if url.as_str() != client_id {
        return Err("not in its normal form (as a URL parser writes it)");
    }
    check_url(&url, allow_loopback)?;
    Ok(url)
}

/// https with a host, and no IP literal outside the public address space. (Names are
/// checked when they resolve: see [`PublicOnly`].)
fn check_url(url: &Url, allow_loopback: bool) -> Result<(), &'static str> {
    if url.scheme() != "https" {
        return Err("not https");
    }
    let ip = match url.host() {
        None => return Err("no host"),
        Some(Host::Domain(_)) => return Ok(()),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
    };
    if allowed(ip, allow_loopback) {
        Ok(())
    } else {
        Err("not a public address")
    }
}

/// Resolves names to their public addresses only; a name with none fails to resolve, so the
/// fetch never connects to a private, loopback or link-local address (AWS's instance
/// metadata at 169.254.169.254 included), however the name was chosen or redirected to.
struct PublicOnly {
    allow_loopback: bool,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .filter(|a| allowed(a.ip(), allow_loopback))
                .collect();
            if addrs.is_empty() {
                return Err(NO_PUBLIC_ADDRESS.into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether the bridge may connect to `ip`: a globally routable unicast address, or loopback
/// when allowed.
fn allowed(ip: IpAddr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return allow_loopback;
    }
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || a >= 240
        // Shared address space (RFC 6598, carrier-grade NAT).
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments (RFC 6890) and benchmarking (RFC 2544).
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b)))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local (fc00::/7) and link-local (fe80::/10).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // Documentation (2001:db8::/32) and NAT64 (64:ff9b::/96, which reaches IPv4 ranges).
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_fetched_from() {
        for public in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(allowed(public.parse().unwrap(), false), "{public}");
        }
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
        ] {
            assert!(!allowed(private.parse().unwrap(), false), "{private}");
        }
        assert!(allowed("127.0.0.1".parse().unwrap(), true));
        assert!(!allowed("10.0.0.1".parse().unwrap(), true));
    }

    #[test]
    fn client_id_urls_follow_the_draft() {
        assert!(parse_client_id("https://app.example.com/oauth/client.json", false).is_ok());
        for (bad, why) in [
            ("http://app.example.com/client.json", "not https"),
            ("https://app.example.com", "it has no path"),
            ("https://app.example.com/", "it has no path"),
            ("https://app.example.com/a#b", "it has a fragment"),
            (
                "https://u:p@app.example.com/a",
                "it carries user information",
            ),
            ("https://app.example.com/a?b=c", "it has a query"),
            ("https://app.example.com/a/../b", "it has dot segments"),
            ("https://app.example.com/./b", "it has dot segments"),
            ("https://10.0.0.1/client.json", "not a public address"),
            ("https://[::1]/client.json", "not a public address"),
            (
                "https://169.254.169.254/latest/meta-data",
                "not a public address",
            ),
            (
                "https://evil.example\\@claude.ai/client.json",
                "not a valid absolute URI (RFC 3986)",
            ),
            (
                "https://App.Example.com/client.json",
                "not in its normal form (as a URL parser writes it)",
            ),
        ] {
            assert_eq!(parse_client_id(bad, false).err(), Some(why), "{bad}");
        }
    }

    #[test]
    fn a_document_must_name_itself_and_be_public() {
        let id = "https://app.example.com/client.json";
        let doc = |extra: &str| {
            format!(
                r#"{{"client_id":"{id}","redirect_uris":["https://app.example.com/cb"]{extra}}}"#
            )
        };
        assert!(registration_from(doc("").as_bytes(), id).is_ok());
        assert!(registration_from(doc(r#","client_name":"App""#).as_bytes(), id).is_ok());
        for bad in [
            doc(r#","client_secret":"s""#),
            doc(r#","token_endpoint_auth_method":"client_secret_basic""#),
            r#"{"client_id":"https://other.example.com/client.json","redirect_uris":["https://a.example/cb"]}"#.to_owned(),
            format!(r#"{{"client_id":"{id}","redirect_uris":["javascript:alert(1)"]}}"#),
            format!(r#"{{"client_id":"{id}","redirect_uris":[]}}"#),
            format!(r#"{{"client_id":"{id}"}}"#),
            "[]".to_owned(),
        ] {
            assert!(registration_from(bad.as_bytes(), id).is_err(), "{bad}");
        }
    }
}
