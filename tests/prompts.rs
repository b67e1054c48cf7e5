//! The deployed function's prompts and argument completion against a real database through
//! PgBouncer: what they list for whom, what they render (the tenant's facts only), how
//! completion suggests values, and how each refuses bad input, in both eras.

use std::time::Duration;

use mcp::App;
use serde_json::{Value, json};

use crate::support::auth::{app_serving, auth_config, claims, keys, static_keys};
use crate::support::db::{TestDb, fixture, token};
use crate::support::http::{Answer, MODERN, modern_meta, post_json, send};

const LEGACY: &str = "2025-11-25";

fn app(db: &TestDb) -> App {
    let server = mcp::production_server(
        db.store("mcp_endpoint", Duration::from_secs(5)),
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
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if era == MODERN {
        params["_meta"] = modern_meta();
        headers.push(("mcp-method", method));
        if method == "prompts/get"
            && let Some(name) = name.as_deref()
        {
            headers.push(("mcp-name", name));
        }
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    send(app, post_json(&body, &headers)).await
}

async fn get(app: &App, token: &str, era: &str, name: &str, arguments: Value) -> Answer {
    let params = json!({ "name": name, "arguments": arguments });
    request(app, token, era, "prompts/get", params).await
}

async fn complete(app: &App, token: &str, era: &str, reference: Value, argument: Value) -> Answer {
    let params = json!({ "ref": reference, "argument": argument });
    request(app, token, era, "completion/complete", params).await
}

fn prompt(name: &str) -> Value {
    json!({ "type": "ref/prompt", "name": name })
}

/// The values of a successful completion.
fn values(a: &Answer) -> Vec<String> {
    assert_eq!(a.status, 200, "{a:?}");
    a.result()["completion"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn texts(a: &Answer) -> String {
    assert_eq!(a.status, 200, "{a:?}");
    a.result()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"]["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn scoped(scope: &str) -> String {
    let mut c = claims();
    c["scope"] = json!(scope);
    c["tenant_id"] = json!("acme");
    keys().rsa.sign(&c)
}

#[tokio::test]
async fn prompts_are_listed_with_their_arguments_and_completions_are_offered() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    for era in [LEGACY, MODERN] {
        let listed = request(&app, &acme, era, "prompts/list", json!({})).await;
        assert_eq!(listed.status, 200, "{listed:?}");
        let prompts = listed.result()["prompts"].as_array().unwrap();
        let names: Vec<&str> = prompts
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["triage_incident", "what_changed", "daily_digest"],
            "{era}"
        );
        for p in prompts {
            assert!(p["description"].as_str().unwrap().len() > 40, "{p}");
            assert!(p["title"].is_string(), "{p}");
        }
        let args = &prompts[0]["arguments"];
        assert_eq!(args[0]["name"], "entity_id");
        assert_eq!(args[0]["required"], true);
        assert_eq!(args[1]["name"], "window");
        assert_eq!(args[1]["required"], false);
    }
    let init = request(
        &app,
        &acme,
        LEGACY,
        "initialize",
        json!({"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let caps = &init.result()["capabilities"];
    assert_eq!(caps["prompts"], json!({}), "{init:?}");
    assert_eq!(caps["completions"], json!({}), "{init:?}");
}

#[tokio::test]
async fn a_caller_without_the_read_scope_sees_no_prompt_and_gets_none() {
    let db = fixture().await;
    let app = app(&db);
    let other = scoped("profile");
    let listed = request(&app, &other, LEGACY, "prompts/list", json!({})).await;
    assert_eq!(listed.result()["prompts"], json!([]), "{listed:?}");
    // The same refusal for a prompt that exists and one that does not: no oracle.
    for name in ["triage_incident", "no_such_prompt"] {
        let a = get(&app, &other, LEGACY, name, json!({"entity_id": "svc-a"})).await;
        assert_eq!(a.status, 403, "{name}: {a:?}");
        assert!(
            a.header("www-authenticate")
                .unwrap()
                .contains("events:read"),
            "{a:?}"
        );
    }
    let a = complete(
        &app,
        &other,
        LEGACY,
        prompt("triage_incident"),
        json!({"name": "entity_id", "value": "s"}),
    )
    .await;
    assert_eq!(a.status, 403, "{a:?}");
}

#[tokio::test]
async fn triage_plans_the_tool_calls_and_embeds_the_tenants_own_state() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    for era in [LEGACY, MODERN] {
        let a = get(
            &app,
            &acme,
            era,
            "triage_incident",
            json!({"entity_id": "svc-a", "window": "6h"}),
        )
        .await;
        let text = texts(&a);
        for tool in ["query_events", "count_events", "get_entity_state"] {
            assert!(text.contains(&format!("`{tool}`")), "{tool}: {text}");
        }
        assert!(text.contains(r#""entity_id":"svc-a""#), "{text}");
        // The catalog's change types: deploy.finished, not alerts.
        assert!(
            text.contains(r#""event_types":["deploy.finished"]"#),
            "{text}"
        );
        let messages = a.result()["messages"].as_array().unwrap();
        let embedded = &messages[1]["content"];
        assert_eq!(embedded["type"], "resource", "{a:?}");
        assert_eq!(
            embedded["resource"]["uri"],
            "event-store://entities/svc-a/state"
        );
        let state: Value =
            serde_json::from_str(embedded["resource"]["text"].as_str().unwrap()).unwrap();
        assert_eq!(state["state"]["status"], "degraded", "{state}");
        assert!(!a.body.to_string().contains("SECRET-GLOBEX"), "{a:?}");
    }
    // An entity with events but no recorded state: the plan, and a note instead of state.
    let a = get(
        &app,
        &acme,
        LEGACY,
        "triage_incident",
        json!({"entity_id": "svc-b"}),
    )
    .await;
    assert!(
        texts(&a).contains("No current state is recorded for svc-b"),
        "{a:?}"
    );
    // Another tenant's state is never embedded, its secrets never shown.
    let globex = token(Some("globex"));
    let a = get(
        &app,
        &globex,
        LEGACY,
        "what_changed",
        json!({"entity_id": "svc-a", "window": "30d"}),
    )
    .await;
    assert!(texts(&a).contains("last 30d"), "{a:?}");
}

#[tokio::test]
async fn the_digest_needs_no_entity_and_bad_arguments_are_invalid_params() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let a = get(&app, &acme, LEGACY, "daily_digest", json!({})).await;
    assert!(texts(&a).contains("last 24h"), "{a:?}");
    for (name, arguments, needle) in [
        ("triage_incident", json!({}), "needs argument \"entity_id\""),
        (
            "triage_incident",
            json!({"entity_id": 5}),
            "arguments.entity_id must be a string",
        ),
        (
            "triage_incident",
            json!({"entity_id": "svc-a", "mood": "x"}),
            "has no argument \"mood\"",
        ),
        (
            "triage_incident",
            json!({"entity_id": "svc-a", "window": "a week"}),
            "window \"a week\"",
        ),
        (
            "triage_incident",
            json!({"entity_id": ""}),
            "entity_id must be 1-200 characters",
        ),
        ("daily_digest", json!({"window": "1000d"}), "at most 90d"),
        (
            "no_such_prompt",
            json!({}),
            "Unknown prompt: no_such_prompt",
        ),
    ] {
        for era in [LEGACY, MODERN] {
            let a = get(&app, &acme, era, name, arguments.clone()).await;
            let message = a.assert_error(200, -32602);
            assert!(message.contains(needle), "{name} {arguments}: {message}");
        }
    }
}

#[tokio::test]
async fn completion_suggests_the_tenants_entities_and_types_by_prefix() {
    let db = fixture().await;
    // Enough entities that one prefix matches more than the 100 a completion may list.
    db.admin
        .batch_execute(
            "INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) \
             SELECT 'acme', 'host-' || lpad(i::text, 3, '0'), 'host', '{}', now() FROM generate_series(1, 150) i; \
             INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) \
             VALUES ('globex', 'svc-globex-only', 'service', '{}', now())",
        )
        .await
        .unwrap();
    let app = app(&db);
    let acme = token(Some("acme"));
    let entity = |value: &str| json!({"name": "entity_id", "value": value});
    for era in [LEGACY, MODERN] {
        let a = complete(&app, &acme, era, prompt("triage_incident"), entity("svc")).await;
        assert_eq!(
            values(&a),
            ["svc-a"],
            "{era}: globex's ids stay with globex"
        );
        assert_eq!(a.result()["completion"]["hasMore"], false);
        assert_eq!(a.result()["completion"]["total"], 1);
        let a = complete(&app, &acme, era, prompt("what_changed"), entity("host-")).await;
        let got = values(&a);
        assert_eq!(got.len(), 100, "{era}");
        assert_eq!(got[0], "host-001");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "sorted: {got:?}");
        assert_eq!(a.result()["completion"]["hasMore"], true);
        assert!(a.result()["completion"].get("total").is_none(), "{a:?}");
        // The template's variable completes the same way.
        let template =
            json!({"type": "ref/resource", "uri": "event-store://entities/{entity_id}/state"});
        assert_eq!(
            values(&complete(&app, &acme, era, template, entity("host-14")).await),
            [
                "host-140", "host-141", "host-142", "host-143", "host-144", "host-145", "host-146",
                "host-147", "host-148", "host-149"
            ]
        );
        // Event types the tenant has events of; the window from its list.
        let types = complete(
            &app,
            &acme,
            era,
            prompt("daily_digest"),
            json!({"name": "event_type", "value": "a"}),
        )
        .await;
        assert_eq!(values(&types), ["alert.fired"]);
        let windows = complete(
            &app,
            &acme,
            era,
            prompt("daily_digest"),
            json!({"name": "window", "value": "2"}),
        )
        .await;
        assert_eq!(values(&windows), ["24h"]);
        // Nothing matches: an empty list, not an error.
        let none = complete(
            &app,
            &acme,
            era,
            prompt("triage_incident"),
            entity("zzz\u{10FFFF}"),
        )
        .await;
        assert_eq!(values(&none), Vec::<String>::new());
    }
    // Hostile prefixes are data, never SQL or patterns.
    for hostile in ["%", "_", "svc-a' OR '1'='1", "\\", "svc\u{0}"] {
        let a = complete(
            &app,
            &acme,
            LEGACY,
            prompt("triage_incident"),
            entity(hostile),
        )
        .await;
        assert_eq!(values(&a), Vec::<String>::new(), "{hostile}");
    }
}

#[tokio::test]
async fn completion_refuses_what_it_cannot_complete_precisely() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let long = "x".repeat(2000);
    for (reference, argument, needle) in [
        (
            prompt("triage_incident"),
            json!({"name": "mood", "value": ""}),
            "has no argument \"mood\"",
        ),
        (
            prompt("no_such_prompt"),
            json!({"name": "x", "value": ""}),
            "Unknown prompt",
        ),
        (
            json!({"type": "ref/resource", "uri": "event-store://nothing/{x}"}),
            json!({"name": "x", "value": ""}),
            "no resource template",
        ),
        (
            json!({"type": "ref/resource", "uri": "event-store://entities/{entity_id}/state"}),
            json!({"name": "id", "value": ""}),
            "has no variable \"id\"",
        ),
        (
            prompt("triage_incident"),
            json!({"name": "entity_id", "value": long}),
            "at most 1024 bytes",
        ),
        (
            json!({"type": "ref/tool", "name": "x"}),
            json!({"name": "x", "value": ""}),
            "unknown variant",
        ),
        (
            prompt("triage_incident"),
            json!({"name": "entity_id"}),
            "missing field `value`",
        ),
    ] {
        for era in [LEGACY, MODERN] {
            let a = complete(&app, &acme, era, reference.clone(), argument.clone()).await;
            let message = a.assert_error(200, -32602);
            assert!(
                message.contains(needle),
                "{reference} {argument}: {message}"
            );
        }
    }
}
