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
//! Then a verdict per client, from how each client really registers (the replicas' table,
//! [`crate::replicas`]): a client that registers by Dynamic Client Registration is registered
//! once with its own request body, so that a server refusing one of its redirect URIs is seen
//! (unless `register` is off). The walk is here; [`steps`] checks each document, [`support`] fetches
//! them within bounds and reads their fields.

mod steps;
mod support;

use std::fmt::Write as _;
use std::time::Duration;

use mcp_auth::{canonical_resource, is_loopback_url as is_loopback};
use serde_json::Value;

use steps::{authorization_server, challenge};
use support::{Missing, first_document, hint, reachability, split_origin, strings};

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

pub use crate::replicas::Registration;
use crate::replicas::{REPLICAS, Replica, with_port};

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
    registration_endpoint: Option<String>,
}

/// Runs every check against `url` (the MCP URL exactly as a user would paste it); with
/// `register`, each client that registers by DCR is registered once as itself.
pub async fn diagnose(url: &str, timeout: Duration, register: bool) -> Report {
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
    let probe = register.then_some(&http);
    report.clients = verdicts(&report, servers.as_deref(), probe).await;
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

async fn verdicts(
    report: &Report,
    servers: Option<&[Server]>,
    probe: Option<&reqwest::Client>,
) -> Vec<Verdict> {
    let blocker = report.failures().next().map(|c| c.what.clone());
    let mut verdicts = Vec::with_capacity(REPLICAS.len());
    for replica in REPLICAS {
        let (connects, how) = match (&blocker, servers) {
            _ if report.open => (true, "yes, without signing in (no OAuth)".into()),
            (Some(why), _) => (false, format!("no: {why}")),
            (None, None) => (
                false,
                "no: the chain broke before the authorization server".into(),
            ),
            (None, Some(servers)) => verdict(replica, servers, probe).await,
        };
        verdicts.push(Verdict {
            client: replica.name,
            hosted: replica.hosted,
            connects,
            how,
        });
    }
    verdicts
}

async fn verdict(
    replica: &Replica,
    servers: &[Server],
    probe: Option<&reqwest::Client>,
) -> (bool, String) {
    // A client uses the first authorization server it can register with.
    for choice in replica.registration {
        for server in servers {
            match choice {
                Registration::Cimd if server.cimd && server.public_clients => {
                    return (true, "yes, registers by Client ID Metadata Document".into());
                }
                Registration::Dcr if server.dcr => {
                    let (Some(http), Some(endpoint), Some(body)) =
                        (probe, &server.registration_endpoint, replica.dcr)
                    else {
                        return (true, "yes, registers by Dynamic Client Registration".into());
                    };
                    return match register_as(http, endpoint, body).await {
                        Ok(()) => (
                            true,
                            "yes, registers by Dynamic Client Registration (its own request accepted)"
                                .into(),
                        ),
                        Err(why) => (false, format!("no: its own registration is refused: {why}")),
                    };
                }
                _ => {}
            }
        }
    }
    if replica.registration.contains(&Registration::Manual) {
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

/// Registers the client at `endpoint` with its own request `body`, as it would: `Err` says
/// why the server refused, or which redirect URI it dropped.
async fn register_as(http: &reqwest::Client, endpoint: &str, body: &str) -> Result<(), String> {
    let body: Value =
        serde_json::from_str(&with_port(body, 8080)).map_err(|e| format!("table: {e}"))?;
    let answer = http
        .post(endpoint)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("{endpoint} did not answer ({e})"))?;
    let status = answer.status();
    let got: Value = answer
        .bytes()
        .await
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    if !status.is_success() {
        let error = got["error"].as_str().unwrap_or("no error code");
        let description = got["error_description"].as_str().unwrap_or("");
        return Err(format!("HTTP {} {error}: {description}", status.as_u16()));
    }
    let kept = strings(&got, "redirect_uris");
    match strings(&body, "redirect_uris")
        .into_iter()
        .find(|uri| !kept.contains(uri))
    {
        Some(dropped) => Err(format!("the server dropped its redirect URI {dropped}")),
        None => Ok(()),
    }
}
