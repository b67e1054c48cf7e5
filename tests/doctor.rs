//! The connectability doctor (`devtools::doctor`) against loopback sites shaped like
//! deployments: an endpoint's challenge and resource metadata (as the endpoint serves them)
//! and authorization servers shaped like Cognito's (no registration, no S256 advertised,
//! confidential clients only), like one with a trailing-slash mistake, and like a complete
//! one. The doctor against the served function and the real authorization server
//! (oidc-provider, where every client connects) runs in `scripts/test`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use devtools::doctor::{Outcome, Report, diagnose};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::site::{self, Reply};

/// A loopback site answering fixed documents by method and path; a 401 entry's text is the
/// challenge (`WWW-Authenticate`) of an endpoint.
struct Site {
    origin: String,
    listener: TcpListener,
}

impl Site {
    async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        Self { origin, listener }
    }

    fn serve(self, documents: HashMap<String, (u16, String)>) {
        let documents = Arc::new(documents);
        site::serve(self.listener, move |method, path| {
            let reply = match documents.get(&format!("{method} {path}")) {
                Some((401, challenge)) => Reply {
                    status: 401,
                    headers: vec![("www-authenticate", challenge.clone())],
                    body: "{}".into(),
                },
                Some((status, body)) => Reply::json(*status, body.clone()),
                None => Reply::json(404, "{}"),
            };
            async move { Some(reply) }
        });
    }
}

fn dev_jwks() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../dev/jwks.json")).unwrap()
}

/// The endpoint (`/mcp`), its metadata, and one authorization server at `issuer_path`
/// whose metadata is `as_metadata` (with `issuer` and `jwks_uri` filled in unless given).
async fn deployment(
    issuer_path: &str,
    advertised_issuer: Option<&str>,
    mut as_metadata: Value,
) -> Report {
    let site = Site::bind().await;
    let origin = site.origin.clone();
    let mcp = format!("{origin}/mcp");
    let issuer = format!("{origin}{issuer_path}");
    let prm_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    let prm = json!({
        "resource": mcp,
        "authorization_servers": [advertised_issuer.map_or(issuer.clone(), |i| format!("{origin}{i}"))],
        "scopes_supported": ["events:read"],
        "bearer_methods_supported": ["header"],
    });
    as_metadata["issuer"] = json!(issuer);
    as_metadata["jwks_uri"] = json!(format!("{issuer}/jwks"));
    for field in ["authorization_endpoint", "token_endpoint"] {
        as_metadata[field] = json!(format!("{issuer}/{field}"));
    }
    let mut docs = HashMap::new();
    docs.insert(
        "POST /mcp".to_owned(),
        (
            401,
            format!(r#"Bearer resource_metadata="{prm_url}", scope="events:read""#),
        ),
    );
    docs.insert(
        "GET /.well-known/oauth-protected-resource/mcp".to_owned(),
        (200, prm.to_string()),
    );
    docs.insert(format!("GET {issuer_path}/jwks"), (200, dev_jwks()));
    // A registration endpoint that refuses every client, as a server refusing a scheme would.
    let register = as_metadata["registration_endpoint"] == "refuses";
    if register {
        as_metadata["registration_endpoint"] = json!(format!("{issuer}/register"));
        docs.insert(
            format!("POST {issuer_path}/register"),
            (
                400,
                json!({"error": "invalid_redirect_uri",
                       "error_description": "redirect_uris must only contain web uris"})
                .to_string(),
            ),
        );
    }
    docs.insert(
        format!("GET {issuer_path}/.well-known/openid-configuration"),
        (200, as_metadata.to_string()),
    );
    site.serve(docs);
    diagnose(&mcp, Duration::from_secs(5), register).await
}

/// What an authorization server offers that lets every client connect (issuer, endpoints and
/// JWKS are filled in by `deployment`).
fn complete_metadata() -> Value {
    json!({
        "code_challenge_methods_supported": ["S256"],
        "registration_endpoint": "unused",
        "client_id_metadata_document_supported": true,
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "scopes_supported": ["openid", "events:read"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
    })
}

fn has(report: &Report, outcome: Outcome, needle: &str) -> bool {
    report
        .checks
        .iter()
        .any(|c| c.outcome == outcome && c.what.contains(needle))
}

#[tokio::test]
async fn a_cognito_like_issuer_is_reported_unreachable_for_hosted_clients_with_the_reasons() {
    // What Cognito's OpenID discovery document offers: no registration_endpoint, no
    // client_id_metadata_document_supported, no code_challenge_methods_supported, client
    // secrets only, no RFC 8414 path, no RFC 9207.
    let report = deployment(
        "/us-east-1_Example",
        None,
        json!({
            "response_types_supported": ["code", "token"],
            "scopes_supported": ["openid", "email", "phone", "profile", "events:read"],
            "subject_types_supported": ["public"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }),
    )
    .await;
    let text = report.render();
    assert!(!report.hosted_clients_connect(), "{text}");
    assert!(has(&report, Outcome::Fail, "does not list S256"), "{text}");
    assert!(
        has(
            &report,
            Outcome::Warn,
            "no registration_endpoint and no client_id_metadata_document_supported"
        ),
        "{text}"
    );
    assert!(has(&report, Outcome::Warn, "lacks none"), "{text}");
    assert!(
        has(&report, Outcome::Warn, "no RFC 8414 metadata"),
        "{text}"
    );
    assert!(
        has(&report, Outcome::Pass, "issuer is byte-identical"),
        "{text}"
    );
    assert!(has(&report, Outcome::Pass, "signing key(s)"), "{text}");
    for client in &report.clients {
        assert!(!client.connects, "{text}");
        assert!(client.how.contains("S256"), "{text}");
    }
    assert!(text.ends_with("can connect: no\n"), "{text}");
}

#[tokio::test]
async fn without_registration_only_hand_registered_clients_connect_and_cursor_does_not() {
    // Cognito with S256 advertised (a proxy in front of it, say) still has no registration.
    let report = deployment(
        "/pool",
        None,
        json!({
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["events:read"],
        }),
    )
    .await;
    let text = report.render();
    assert_eq!(report.failures().count(), 0, "{text}");
    assert!(!report.hosted_clients_connect(), "{text}");
    let verdict = |name: &str| report.clients.iter().find(|c| c.client == name).unwrap();
    assert!(
        verdict("claude.ai / Claude Desktop")
            .how
            .contains("registered by hand"),
        "{text}"
    );
    assert!(
        verdict("ChatGPT").how.contains("registered by hand"),
        "{text}"
    );
    assert!(
        verdict("Cursor")
            .how
            .starts_with("no: needs Dynamic Client Registration"),
        "{text}"
    );
}

#[tokio::test]
async fn a_trailing_slash_in_authorization_servers_breaks_every_client_and_is_named() {
    let report = deployment("/issuer", Some("/issuer/"), complete_metadata()).await;
    let text = report.render();
    assert!(has(&report, Outcome::Fail, "trailing slash"), "{text}");
    assert!(report.clients.iter().all(|c| !c.connects), "{text}");
}

#[tokio::test]
async fn a_complete_authorization_server_lets_every_client_connect() {
    let report = deployment("/issuer", None, complete_metadata()).await;
    let text = report.render();
    assert_eq!(report.failures().count(), 0, "{text}");
    assert!(report.hosted_clients_connect(), "{text}");
    assert!(report.clients.iter().all(|c| c.connects), "{text}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_one_named_line() {
    // A port nobody listens on: bind, note it, close.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let report = diagnose(&url, Duration::from_secs(2), true).await;
    let text = report.render();
    assert!(
        has(
            &report,
            Outcome::Fail,
            &format!("POST {url} failed: cannot connect")
        ),
        "{text}"
    );
    assert!(
        has(&report, Outcome::Fail, "no protected resource metadata"),
        "{text}"
    );
    assert!(!report.hosted_clients_connect());
}

#[tokio::test]
async fn an_endpoint_that_asks_for_no_token_is_open_to_every_client_and_says_so() {
    let site = Site::bind().await;
    let url = format!("{}/mcp", site.origin);
    let mut docs = HashMap::new();
    docs.insert(
        "POST /mcp".to_owned(),
        (200, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()),
    );
    site.serve(docs);
    let report = diagnose(&url, Duration::from_secs(2), true).await;
    let text = report.render();
    assert!(has(&report, Outcome::Warn, "requires no token"), "{text}");
    assert_eq!(report.failures().count(), 0, "{text}");
    assert!(
        report
            .clients
            .iter()
            .all(|c| c.connects && c.how.contains("without signing in")),
        "{text}"
    );
}

#[tokio::test]
async fn a_server_that_refuses_a_clients_own_registration_is_named_for_that_client() {
    // Offers DCR, yet refuses what the clients really send (oidc-provider refuses Cursor's
    // app scheme so): the doctor registers each DCR client as itself and says so.
    let mut metadata = complete_metadata();
    metadata["registration_endpoint"] = json!("refuses");
    metadata["client_id_metadata_document_supported"] = json!(false);
    let report = deployment("/issuer", None, metadata).await;
    let text = report.render();
    for client in &report.clients {
        assert!(!client.connects, "{text}");
        assert!(
            client
                .how
                .contains("its own registration is refused: HTTP 400 invalid_redirect_uri")
                || client.how.contains("registered by hand"),
            "{text}"
        );
    }
    let cursor = report
        .clients
        .iter()
        .find(|c| c.client == "Cursor")
        .unwrap();
    assert!(cursor.how.contains("must only contain web uris"), "{text}");
}
