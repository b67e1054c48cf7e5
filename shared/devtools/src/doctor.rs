//! The connectability doctor: can the OAuth clients that hosted agents use reach a deployed
//! (or local) MCP URL? Everything that breaks those connections happens before a request
//! reaches the endpoint, so the doctor walks the chain a client walks and reports each fact
//! it relies on:
//!
//! 1. the `401` challenge and its `resource_metadata` (MCP authorization §Protected Resource
//!    Metadata Discovery, RFC 9728 §5.1);
//! 2. the protected resource metadata, at the challenge's URL and at both well-known
//!    locations (path-inserted and root, RFC 9728 §3.1): `resource` must equal the MCP URL
//!    exactly (RFC 9728 §3.3), `authorization_servers` must name issuers;
//! 3. each authorization server's metadata (RFC 8414 §3 and OpenID discovery): `issuer`
//!    byte-identical to the entry that led there (RFC 8414 §3.3), `S256` (MCP requires PKCE
//!    and clients refuse when it is not advertised), a registration path (Dynamic Client
//!    Registration or Client ID Metadata Documents), public clients (`none`), RFC 9207 `iss`,
//!    the endpoint's scopes;
//! 4. the issuer's JWKS: keys the endpoint would accept.
//!
//! Then a verdict per client, from what each client documents it supports (the table in
//! [`CLIENTS`]).

use std::fmt::Write as _;
use std::time::Duration;

use mcp_auth::{Algorithm, KeySet, canonical_resource, is_loopback_url as is_loopback};
use serde_json::Value;

/// Largest metadata document or JWKS read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// Some clients are affected, or a safeguard is missing; the chain still works.
    Warn,
    /// Breaks the chain for every client.
    Fail,
}

/// One check and the fact it rests on.
#[derive(Debug, Clone)]
pub struct Check {
    pub outcome: Outcome,
    pub what: String,
}

/// How a client registers itself with an authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Client ID Metadata Document (the `client_id` is an https URL).
    Cimd,
    /// Dynamic Client Registration (RFC 7591).
    Dcr,
    /// A client registered by hand at the authorization server and typed into the client.
    Manual,
}

/// What one MCP client supports, as its vendor documents it (checked 2026-12; update the
/// table when a client changes).
pub struct ClientProfile {
    pub name: &'static str,
    /// Connects from the vendor's cloud: the MCP URL must be publicly reachable.
    pub hosted: bool,
    /// In the client's order of preference.
    pub registration: &'static [Registration],
}

pub const CLIENTS: &[ClientProfile] = &[
    ClientProfile {
        name: "claude.ai / Claude Desktop",
        hosted: true,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
    },
    ClientProfile {
        name: "Claude Code",
        hosted: false,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
    },
    ClientProfile {
        name: "ChatGPT",
        hosted: true,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
    },
    ClientProfile {
        name: "VS Code",
        hosted: false,
        registration: &[Registration::Dcr, Registration::Manual],
    },
    ClientProfile {
        name: "Cursor",
        hosted: false,
        registration: &[Registration::Dcr],
    },
    ClientProfile {
        name: "MCP Inspector",
        hosted: false,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
    },
];

/// Whether one client connects, and why (not).
#[derive(Debug, Clone)]
pub struct Verdict {
    pub client: &'static str,
    pub hosted: bool,
    /// Connects with no step outside the client (registration included).
    pub connects: bool,
    pub how: String,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub url: String,
    pub checks: Vec<Check>,
    pub clients: Vec<Verdict>,
    /// Said once: the URL is not reachable from a vendor's cloud.
    pub reachability: Option<String>,
    /// The endpoint answered without a token: clients connect without OAuth.
    pub open: bool,
}

impl Report {
    /// Whether claude.ai, Claude Desktop and ChatGPT can connect on their own (the exit status
    /// of `doctor`). Reachability from their clouds is reported, not judged: a local URL is
    /// checked before it is deployed.
    pub fn hosted_clients_connect(&self) -> bool {
        self.clients.iter().filter(|c| c.hosted).all(|c| c.connects)
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.outcome == Outcome::Fail)
    }

    pub fn render(&self) -> String {
        let mut out = format!("Connectability of {}\n\n", self.url);
        for check in &self.checks {
            let tag = match check.outcome {
                Outcome::Pass => "ok  ",
                Outcome::Warn => "warn",
                Outcome::Fail => "FAIL",
            };
            let _ = writeln!(out, "  {tag}  {}", check.what);
        }
        out.push_str("\nClients\n");
        let width = self
            .clients
            .iter()
            .map(|c| c.client.len())
            .max()
            .unwrap_or(0);
        for c in &self.clients {
            let _ = writeln!(out, "  {:width$}  {}", c.client, c.how);
        }
        if let Some(note) = &self.reachability {
            let _ = writeln!(out, "\n  note  {note}");
        }
        let _ = writeln!(
            out,
            "\nHosted clients (claude.ai, Claude Desktop, ChatGPT) can connect: {}",
            if self.hosted_clients_connect() {
                "yes"
            } else {
                "no"
            }
        );
        out
    }

    fn pass(&mut self, what: impl Into<String>) {
        self.push(Outcome::Pass, what);
    }
    fn warn(&mut self, what: impl Into<String>) {
        self.push(Outcome::Warn, what);
    }
    fn fail(&mut self, what: impl Into<String>) {
        self.push(Outcome::Fail, what);
    }
    fn push(&mut self, outcome: Outcome, what: impl Into<String>) {
        self.checks.push(Check {
            outcome,
            what: what.into(),
        });
    }
}

/// What the doctor learnt about one authorization server.
#[derive(Default)]
struct Server {
    cimd: bool,
    dcr: bool,
    public_clients: bool,
}

/// Runs every check against `url` (the MCP URL exactly as a user would paste it).
pub async fn diagnose(url: &str, timeout: Duration) -> Report {
    let http = reqwest::Client::builder()
        // A client follows no redirect on these fetches (RFC 9728 §3.3, RFC 8414 §3.3 compare
        // what they asked for with what they got).
        .redirect(reqwest::redirect::Policy::none())
        .timeout(timeout)
        .build()
        .unwrap_or_default();
    let mut report = Report {
        url: url.to_owned(),
        ..Report::default()
    };
    let servers = walk(&http, url, &mut report).await;
    report.reachability = reachability(url);
    report.clients = verdicts(&report, servers.as_deref());
    report
}

/// The chain up to the authorization servers; `None` when it broke before them.
async fn walk(http: &reqwest::Client, url: &str, report: &mut Report) -> Option<Vec<Server>> {
    let Some(resource) = canonical_resource(url) else {
        report.fail(format!("{url} is not an http(s) URL"));
        return None;
    };
    if !url.starts_with("https://") && !is_loopback(url) {
        report.fail("the MCP URL is not https (MCP authorization: only loopback may be http)");
    }

    // 1. The challenge.
    let challenged_at = challenge(http, url, report).await;
    if report.open {
        return Some(Vec::new());
    }

    // 2. The protected resource metadata. A client that got a resource_metadata URL never
    // looks at the well-known locations; their absence matters only without it.
    let (origin, path) = split_origin(&resource);
    let well_known_missing = match challenged_at {
        Some(_) => Missing(Outcome::Pass, "; clients use the challenge's URL"),
        None => Missing(Outcome::Warn, ""),
    };
    let mut locations = Vec::new();
    if let Some(at) = challenged_at {
        locations.push(("the challenge's", at, Missing(Outcome::Warn, "")));
    }
    locations.push((
        "RFC 9728 path-inserted",
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        well_known_missing,
    ));
    locations.push((
        "RFC 9728 root",
        format!("{origin}/.well-known/oauth-protected-resource"),
        well_known_missing,
    ));
    let Some(prm) = first_document(http, report, "", "resource metadata", locations).await else {
        report.fail(
            "no protected resource metadata anywhere a client looks: nothing can be discovered",
        );
        return None;
    };
    match prm.get("resource").and_then(Value::as_str) {
        Some(r) if r == url => report.pass(format!("resource is exactly the MCP URL ({r})")),
        Some(r) => report.fail(format!(
            "resource is {r:?} but the URL is {url:?}: clients refuse the metadata (RFC 9728 §3.3) and tokens get the wrong audience{}",
            hint(r, url)
        )),
        None => report.fail("the resource metadata has no resource"),
    }
    let scopes: Vec<String> = strings(&prm, "scopes_supported");
    if scopes.is_empty() {
        report
            .warn("the resource metadata lists no scopes_supported: clients guess what to ask for");
    } else {
        report.pass(format!("scopes_supported: {}", scopes.join(" ")));
    }
    let issuers = strings(&prm, "authorization_servers");
    if issuers.is_empty() {
        report.fail("the resource metadata names no authorization_servers");
        return None;
    }

    // 3 and 4. Each authorization server and its keys.
    let mut servers = Vec::new();
    for issuer in issuers {
        servers.push(authorization_server(http, &issuer, &scopes, report).await);
    }
    Some(servers)
}

async fn challenge(http: &reqwest::Client, url: &str, report: &mut Report) -> Option<String> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-doctor","version":"1"}}}"#;
    let response = match http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => {
            report.fail(format!("POST {url} failed: {}", cause(&e)));
            return None;
        }
    };
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match (status, header) {
        (401, Some(h)) if h.to_ascii_lowercase().starts_with("bearer") => {
            match param(&h, "resource_metadata") {
                Some(at) => {
                    report.pass(format!(
                        "401 without a token, challenge names resource_metadata={at}"
                    ));
                    Some(at)
                }
                None => {
                    report.warn("401 challenge without resource_metadata: clients fall back to the well-known locations");
                    None
                }
            }
        }
        (401, _) => {
            report.fail("401 without a WWW-Authenticate: Bearer challenge: clients cannot discover how to sign in");
            None
        }
        (s, _) if (200..300).contains(&s) => {
            report.open = true;
            report.warn(format!(
                "POST without a token answered {s}: the endpoint requires no token, so anyone who can reach it can call it"
            ));
            None
        }
        (s, _) => {
            report.fail(format!(
                "POST without a token answered {s}, not 401: clients never start OAuth"
            ));
            None
        }
    }
}

async fn authorization_server(
    http: &reqwest::Client,
    issuer: &str,
    resource_scopes: &[String],
    report: &mut Report,
) -> Server {
    let mut server = Server::default();
    let (origin, path) = split_origin(issuer);
    let trimmed = issuer.trim_end_matches('/');
    let locations = vec![
        (
            "RFC 8414",
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            Missing(
                Outcome::Warn,
                ": clients of MCP 2025-03-26 and 2025-06-18 look only there",
            ),
        ),
        (
            "OpenID discovery",
            format!("{trimmed}/.well-known/openid-configuration"),
            Missing(Outcome::Warn, ""),
        ),
    ];
    let prefix = format!("{issuer}: ");
    let Some(meta) = first_document(http, report, &prefix, "metadata", locations).await else {
        report.fail(format!(
            "{issuer}: no authorization server metadata: clients cannot find its endpoints"
        ));
        return server;
    };

    match meta.get("issuer").and_then(Value::as_str) {
        Some(i) if i == issuer => report.pass(format!("{issuer}: issuer is byte-identical")),
        Some(i) => report.fail(format!(
            "{issuer}: its metadata says issuer {i:?}; authorization_servers must name it byte for byte (RFC 8414 §3.3){}",
            hint(i, issuer)
        )),
        None => report.fail(format!("{issuer}: the metadata has no issuer")),
    }
    for field in ["authorization_endpoint", "token_endpoint"] {
        match meta.get(field).and_then(Value::as_str) {
            Some(u) if u.starts_with("https://") || is_loopback(u) => {}
            Some(u) => report.fail(format!("{issuer}: {field} {u} is not https")),
            None => report.fail(format!("{issuer}: no {field}")),
        }
    }
    if strings(&meta, "code_challenge_methods_supported")
        .iter()
        .any(|m| m == "S256")
    {
        report.pass(format!("{issuer}: PKCE S256 advertised"));
    } else {
        report.fail(format!(
            "{issuer}: code_challenge_methods_supported does not list S256: MCP clients refuse to authorize (MCP authorization §Authorization Code Protection)"
        ));
    }
    server.dcr = meta
        .get("registration_endpoint")
        .and_then(Value::as_str)
        .is_some();
    server.cimd = meta
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        == Some(true);
    let auth_methods = strings(&meta, "token_endpoint_auth_methods_supported");
    // RFC 8414 §2: absent means client_secret_basic only.
    server.public_clients = auth_methods.iter().any(|m| m == "none");
    match (server.cimd, server.dcr) {
        (true, true) => report.pass(format!(
            "{issuer}: registration by Client ID Metadata Document and by Dynamic Client Registration"
        )),
        (true, false) => report.pass(format!("{issuer}: registration by Client ID Metadata Document")),
        (false, true) => report.pass(format!(
            "{issuer}: registration by Dynamic Client Registration (no Client ID Metadata Documents)"
        )),
        (false, false) => report.warn(format!(
            "{issuer}: no registration_endpoint and no client_id_metadata_document_supported: only clients registered by hand can sign in"
        )),
    }
    if server.public_clients {
        report.pass(format!(
            "{issuer}: public clients (token_endpoint_auth_method none)"
        ));
    } else {
        report.warn(format!(
            "{issuer}: token_endpoint_auth_methods_supported lacks none: public clients (CIMD, desktop and CLI clients) cannot redeem codes"
        ));
    }
    if meta
        .get("authorization_response_iss_parameter_supported")
        .and_then(Value::as_bool)
        == Some(true)
    {
        report.pass(format!(
            "{issuer}: iss in authorization responses (RFC 9207)"
        ));
    } else {
        report.warn(format!(
            "{issuer}: authorization_response_iss_parameter_supported is not true: no mix-up defence (RFC 9207)"
        ));
    }
    let advertised = strings(&meta, "scopes_supported");
    let unknown: Vec<&str> = resource_scopes
        .iter()
        .filter(|s| !advertised.is_empty() && !advertised.contains(s))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        report.pass(format!("{issuer}: knows the endpoint's scopes"));
    } else {
        report.fail(format!(
            "{issuer}: does not advertise the scopes the endpoint requires: {}",
            unknown.join(" ")
        ));
    }
    let grants = strings(&meta, "grant_types_supported");
    if !grants.is_empty() && !grants.iter().any(|g| g == "refresh_token") {
        report.warn(format!(
            "{issuer}: no refresh_token grant: users sign in again whenever a token expires"
        ));
    }

    match meta.get("jwks_uri").and_then(Value::as_str) {
        Some(jwks) => match fetch(http, jwks).await {
            Ok(bytes) => {
                match KeySet::from_json(&bytes, &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA]) {
                    Ok(keys) if !keys.is_empty() => report.pass(format!(
                        "{issuer}: {} signing key(s) at {jwks} the endpoint can verify with",
                        keys.len()
                    )),
                    Ok(_) => report.fail(format!(
                        "{issuer}: no key at {jwks} the endpoint accepts (RSA of 2048 bits or more, P-256, Ed25519; signing keys only)"
                    )),
                    Err(e) => report.fail(format!("{issuer}: the JWKS at {jwks} is refused: {e}")),
                }
            }
            Err(e) => report.fail(format!("{issuer}: JWKS {jwks} could not be fetched: {e}")),
        },
        None => report.fail(format!(
            "{issuer}: no jwks_uri: the endpoint cannot verify its tokens"
        )),
    }
    server
}

fn verdicts(report: &Report, servers: Option<&[Server]>) -> Vec<Verdict> {
    let blocker = report.failures().next().map(|c| c.what.clone());
    CLIENTS
        .iter()
        .map(|profile| {
            let (connects, how) = match (&blocker, servers) {
                _ if report.open => (true, "yes, without signing in (no OAuth)".into()),
                (Some(why), _) => (false, format!("no: {why}")),
                (None, None) => (
                    false,
                    "no: the chain broke before the authorization server".into(),
                ),
                (None, Some(servers)) => verdict(profile, servers),
            };
            Verdict {
                client: profile.name,
                hosted: profile.hosted,
                connects,
                how,
            }
        })
        .collect()
}

fn verdict(profile: &ClientProfile, servers: &[Server]) -> (bool, String) {
    // A client uses the first authorization server it can register with.
    for choice in profile.registration {
        for server in servers {
            match choice {
                Registration::Cimd if server.cimd && server.public_clients => {
                    return (true, "yes, registers by Client ID Metadata Document".into());
                }
                Registration::Dcr if server.dcr => {
                    return (true, "yes, registers by Dynamic Client Registration".into());
                }
                _ => {}
            }
        }
    }
    if profile.registration.contains(&Registration::Manual) {
        (
            false,
            "only with a client registered by hand at the authorization server and typed into the client (no DCR, no CIMD)".into(),
        )
    } else {
        (
            false,
            "no: needs Dynamic Client Registration, which the authorization server does not offer"
                .into(),
        )
    }
}

fn reachability(url: &str) -> Option<String> {
    is_loopback(url).then(|| {
        "the URL is loopback: claude.ai, Claude Desktop and ChatGPT connect from their vendors' clouds and need a public https URL; the verdicts above say what happens once it is deployed as configured".into()
    })
}

/// Why two URLs that should be equal differ, when it is one of the usual reasons.
fn hint(got: &str, want: &str) -> String {
    if got.trim_end_matches('/') == want.trim_end_matches('/') {
        " (they differ only in a trailing slash)".into()
    } else if got.eq_ignore_ascii_case(want) {
        " (they differ only in letter case)".into()
    } else if canonical_resource(got).map(|g| split_origin(&g).0)
        != canonical_resource(want).map(|w| split_origin(&w).0)
    {
        " (another host: custom domain or stage URL?)".into()
    } else {
        " (another path: stage prefix?)".into()
    }
}

fn split_origin(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let path = path.trim_end_matches('/');
    (format!("{scheme}://{authority}"), path.to_owned())
}

fn strings(doc: &Value, field: &str) -> Vec<String> {
    doc.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A parameter of a `WWW-Authenticate` challenge (RFC 9110 §11.2 auth-param, quoted or not).
fn param(header: &str, name: &str) -> Option<String> {
    let mut rest = header.split_once(' ').map_or("", |(_, r)| r);
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let (value, remainder) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        if key.eq_ignore_ascii_case(name) {
            return Some(value);
        }
        rest = remainder.trim_start().trim_start_matches(',').trim_start();
    }
    None
}

/// How a location that holds no document is reported, and why it matters.
#[derive(Clone, Copy)]
struct Missing(Outcome, &'static str);

/// Fetches the JSON document `what` at each location in turn (label, URL, how its absence is
/// reported), reports every one, and returns the first found: clients try the same places.
async fn first_document(
    http: &reqwest::Client,
    report: &mut Report,
    prefix: &str,
    what: &str,
    locations: Vec<(&str, String, Missing)>,
) -> Option<Value> {
    let mut found = None;
    for (label, at, Missing(outcome, why)) in locations {
        match fetch_json(http, &at).await {
            Ok(doc) => {
                report.pass(format!("{prefix}{label} {what} at {at}"));
                found.get_or_insert(doc);
            }
            Err(e) => report.push(
                outcome,
                format!("{prefix}no {label} {what} at {at} ({e}){why}"),
            ),
        }
    }
    found
}

async fn fetch_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let bytes = fetch(http, url).await?;
    serde_json::from_slice(&bytes).map_err(|_| "not JSON".to_owned())
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let mut response = http.get(url).send().await.map_err(|e| cause(&e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| cause(&e))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
    }
    Ok(body)
}

/// A fetch error in one line: what failed and its innermost cause.
fn cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        format!("cannot connect ({source})")
    } else {
        source.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read_quoted_or_not() {
        let h = r#"Bearer error="invalid_token", error_description="a \"b\", c", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope=events:read"#;
        assert_eq!(
            param(h, "resource_metadata").as_deref(),
            Some("https://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            param(h, "error_description").as_deref(),
            Some(r#"a "b", c"#)
        );
        assert_eq!(param(h, "scope").as_deref(), Some("events:read"));
        assert_eq!(param(h, "realm"), None);
    }

    #[test]
    fn hints_name_the_usual_mismatches() {
        assert!(hint("https://a.example/mcp/", "https://a.example/mcp").contains("trailing slash"));
        assert!(hint("https://A.example/mcp", "https://a.example/mcp").contains("case"));
        assert!(hint("https://b.example/mcp", "https://a.example/mcp").contains("host"));
        assert!(hint("https://a.example/prod/mcp", "https://a.example/mcp").contains("path"));
    }

    #[test]
    fn origins_and_paths() {
        assert_eq!(
            split_origin("https://h.example/a/b/"),
            ("https://h.example".into(), "/a/b".into())
        );
        assert_eq!(
            split_origin("http://127.0.0.1:9100"),
            ("http://127.0.0.1:9100".into(), String::new())
        );
    }
}
