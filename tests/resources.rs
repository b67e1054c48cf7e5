//! The deployed function's resources against a real database through PgBouncer: what they
//! list for whom, what they read (the tenant's rows only), and how they fail in each era.

use std::time::Duration;

use mcp::App;
use serde_json::{Value, json};
use tokio_postgres::NoTls;

use crate::support::auth::{app_serving, auth_config, claims, keys, static_keys};
use crate::support::db::{ADMIN, TestDb, app_with_budget, fixture, token};
use crate::support::http::{Answer, MODERN, modern_meta, post_json, send};

const LEGACY: &str = "2025-11-25";

fn app(db: &TestDb, statement_timeout: Duration) -> App {
    let server = mcp::production_server(
        db.store("mcp_endpoint", statement_timeout),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap();
    app_serving(auth_config(static_keys(&[&keys().rsa])), server)
}

/// One authenticated request in `era` (a handshake-era version or [`MODERN`]).
async fn request(app: &App, token: &str, era: &str, method: &str, mut params: Value) -> Answer {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", era),
    ];
    let uri = params.get("uri").and_then(Value::as_str).map(str::to_owned);
    if era == MODERN {
        params["_meta"] = modern_meta();
        headers.push(("mcp-method", method));
        if let Some(uri) = uri.as_deref() {
            headers.push(("mcp-name", uri));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    send(app, post_json(&body, &headers)).await
}

async fn read(app: &App, token: &str, era: &str, uri: &str) -> Answer {
    request(app, token, era, "resources/read", json!({ "uri": uri })).await
}

/// The one JSON content of a successful read, parsed.
fn contents(a: &Answer, uri: &str) -> Value {
    assert_eq!(a.status, 200, "{a:?}");
    let contents = a.result()["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{a:?}");
    assert_eq!(contents[0]["uri"], uri);
    assert_eq!(contents[0]["mimeType"], "application/json");
    serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap()
}

fn scoped(scope: &str) -> String {
    let mut c = claims();
    c["scope"] = json!(scope);
    keys().rsa.sign(&c)
}

#[tokio::test]
async fn resources_read_the_tenants_rows_and_only_those() {
    let db = fixture().await;
    let app = app(&db, Duration::from_secs(5));
    let acme = token(Some("acme"));
    for era in [LEGACY, MODERN] {
        let listed = request(&app, &acme, era, "resources/list", json!({})).await;
        let uris: Vec<&str> = listed.result()["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["event-store://event-types"], "{era}");
        let templates = request(&app, &acme, era, "resources/templates/list", json!({})).await;
        let templates: Vec<&str> = templates.result()["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uriTemplate"].as_str().unwrap())
            .collect();
        assert_eq!(
            templates,
            [
                "event-store://events/{id}",
                "event-store://entities/{entity_id}/state"
            ]
        );

        let catalog = contents(
            &read(&app, &acme, era, "event-store://event-types").await,
            "event-store://event-types",
        );
        let names: Vec<&str> = catalog["event_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["alert.fired", "deploy.finished", "incident.opened"],
            "{era}"
        );
        assert_eq!(catalog["truncated"], false);
    }

    // One event, by the id a tool would give, matches the row in the database.
    let (id, payload): (i64, Value) = {
        let row = db
            .admin
            .query_one(
                "SELECT id, payload FROM events WHERE tenant_id = 'acme' AND event_type = 'incident.opened'",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    let uri = format!("event-store://events/{id}");
    let event = contents(&read(&app, &acme, LEGACY, &uri).await, &uri);
    assert_eq!(event["event"]["id"], id);
    assert_eq!(event["event"]["event_type"], "incident.opened");
    assert_eq!(event["event"]["payload"], payload);

    // The entity state, with an id that needs percent-encoding to travel in the URI.
    db.admin
        .batch_execute(
            "INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) VALUES \
             ('acme', 'team/core x', 'team', '{\"oncall\":\"ana\"}', now())",
        )
        .await
        .unwrap();
    for (entity, uri, expect) in [
        (
            "svc-a",
            "event-store://entities/svc-a/state",
            json!({"status": "degraded"}),
        ),
        (
            "team/core x",
            "event-store://entities/team%2Fcore%20x/state",
            json!({"oncall": "ana"}),
        ),
    ] {
        let state = contents(&read(&app, &acme, MODERN, uri).await, uri);
        assert_eq!(state["entity_id"], entity);
        assert_eq!(state["state"], expect);
    }

    // Another tenant's event and entity are indistinguishable from missing ones; the
    // error code is the era's (-32002 before 2026-07-28, -32602 since, SEP-2164).
    let globex_id: i64 = db
        .admin
        .query_one(
            "SELECT id FROM events WHERE tenant_id = 'globex' LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    for uri in [
        format!("event-store://events/{globex_id}"),
        "event-store://events/999999".into(),
        "event-store://events/abc".into(),
        "event-store://events/0".into(),
        "event-store://entities/nobody/state".into(),
        "event-store://nothing".into(),
        "https://example.com/".into(),
    ] {
        for (era, code) in [(LEGACY, -32002), (MODERN, -32602)] {
            let a = read(&app, &acme, era, &uri).await;
            a.assert_error(200, code);
            assert_eq!(a.body["error"]["data"]["uri"], uri.as_str());
            assert!(!a.text_contains("SECRET-GLOBEX"), "{a:?}");
        }
    }
    // A globex caller reads its own state under the same URI acme used.
    let globex = token(Some("globex"));
    let theirs = contents(
        &read(&app, &globex, LEGACY, "event-store://entities/svc-a/state").await,
        "event-store://entities/svc-a/state",
    );
    assert_eq!(theirs["state"], json!({"status": "SECRET-GLOBEX"}));
    assert_eq!(db.count().await, 7, "nothing was written");
}

#[tokio::test]
async fn a_caller_without_the_scope_sees_no_resources_and_is_challenged_on_read() {
    let db = fixture().await;
    let app = app(&db, Duration::from_secs(5));
    let other = scoped("profile");
    for era in [LEGACY, MODERN] {
        let listed = request(&app, &other, era, "resources/list", json!({})).await;
        assert_eq!(listed.result()["resources"], json!([]), "{era}");
        let templates = request(&app, &other, era, "resources/templates/list", json!({})).await;
        assert_eq!(templates.result()["resourceTemplates"], json!([]), "{era}");
        // Existing and unknown URIs get the same 403, so the answer is no oracle.
        for uri in ["event-store://event-types", "event-store://secret-plans"] {
            let a = read(&app, &other, era, uri).await;
            a.assert_error(403, -32600);
            let challenge = a.header("www-authenticate").unwrap();
            assert!(
                challenge.contains("error=\"insufficient_scope\"")
                    && challenge.contains("scope=\"events:read\""),
                "{challenge}"
            );
        }
    }
}

#[tokio::test]
async fn reads_keep_the_deadline_and_the_response_budget() {
    let db = fixture().await;
    // A lock held elsewhere stalls the read; the statement timeout stops it and the
    // client learns what happened in the error's data.
    let app = app(&db, Duration::from_millis(300));
    let (mut locker, connection) = tokio_postgres::connect(&format!("{ADMIN}/{}", db.name), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE event_types IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    for era in [LEGACY, MODERN] {
        let a = read(&app, &token(Some("acme")), era, "event-store://event-types").await;
        let message = a.assert_error(200, -32603);
        assert!(message.contains("300 ms"), "{message}");
        let data = &a.body["error"]["data"];
        assert_eq!(data["code"], "deadline_exceeded", "{a:?}");
        assert_eq!(data["budget_ms"], 300);
    }
    tx.rollback().await.unwrap();

    // Over the response budget, nothing of the contents leaves.
    let (small, _) = app_with_budget(db.store("mcp_endpoint", Duration::from_secs(5)), 200);
    let a = read(
        &small,
        &token(Some("acme")),
        LEGACY,
        "event-store://event-types",
    )
    .await;
    let message = a.assert_error(200, -32603);
    assert!(
        message.contains("over this server's budget of 200 bytes"),
        "{message}"
    );
    assert_eq!(a.body["error"]["data"]["code"], "mcp_response_over_budget");
    assert!(!a.text_contains("deploy.finished"), "{a:?}");
}

#[tokio::test]
async fn hostile_uris_get_precise_errors() {
    let db = fixture().await;
    let app = app(&db, Duration::from_secs(5));
    let acme = token(Some("acme"));
    let long = format!("event-store://entities/{}/state", "a".repeat(3000));
    let a = read(&app, &acme, LEGACY, &long).await;
    let message = a.assert_error(200, -32602);
    assert!(
        message.contains("no resource here has a URI over 2048 bytes"),
        "{message}"
    );
    for uri in [
        "event-store://entities/%00/state",
        "event-store://entities/%ZZ/state",
        "event-store://entities/%FF%FE/state",
        "event-store://entities/a/../state",
        "event-store://events/1;DROP TABLE events",
        "event-store://events/99999999999999999999999",
        "",
    ] {
        let a = read(&app, &acme, LEGACY, uri).await;
        a.assert_error(200, -32002);
    }
    let a = request(&app, &acme, LEGACY, "resources/read", json!({ "uri": 42 })).await;
    a.assert_error(200, -32602);
    assert_eq!(db.count().await, 7, "nothing was written");
}
