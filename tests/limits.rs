//! Rate limits shared by every sandbox, counted in DynamoDB (moto in server mode): two apps
//! stand for two sandboxes, and only the shared table makes them agree.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::{App, DynamoLimiter, LimitsConfig};
use serde_json::{Value, json};

use crate::support::auth::{claims, keys};
use crate::support::aws::{dynamodb, table};
use crate::support::db::{TestDb, app_recording_metrics, call, fixture, ok};
use crate::support::http::{Answer, post_json, send};

/// A day-long window: a test never straddles two windows unless it runs across midnight UTC.
fn limits(table: &str) -> LimitsConfig {
    LimitsConfig {
        table: table.to_owned(),
        window: Duration::from_secs(86_400),
        per_subject: 5,
        per_tool: 2,
        tools: vec![("count_events".into(), 1)],
        per_tenant: None,
        wait: Duration::from_secs(2),
    }
}

type Metrics = Arc<Mutex<Vec<String>>>;

/// One "sandbox": its own app and limiter, the shared table.
fn sandbox(db: &TestDb, client: aws_sdk_dynamodb::Client, limits: LimitsConfig) -> (App, Metrics) {
    let server = mcp::production_server(
        db.store("mcp_endpoint", Duration::from_secs(5)),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap()
    .with_admission(Arc::new(DynamoLimiter::new(client, limits)));
    app_recording_metrics(server)
}

fn token_for(sub: &str, tenant: &str) -> String {
    let mut c = claims();
    c["sub"] = json!(sub);
    c["tenant_id"] = json!(tenant);
    keys().rsa.sign(&c)
}

/// Asserts a 429 for `counter` and returns the seconds it says to wait.
fn assert_limited(a: &Answer, counter: &str) -> u64 {
    let message = a.assert_error(429, -32600);
    let data = &a.body["error"]["data"];
    assert_eq!(data["code"], "rate_limited", "{a:?}");
    assert_eq!(data["counter"], counter, "{a:?}");
    // The rate-limit SEP's draft fields: the wait in milliseconds, the limit, none left.
    assert!(data["limit"].as_u64().unwrap() >= 1, "{a:?}");
    assert_eq!(data["remaining"], 0, "{a:?}");
    let secs = data["retry_after_secs"].as_u64().unwrap();
    let ms = data["retryAfterMs"].as_u64().unwrap();
    assert!(
        ms <= secs * 1000 && ms > (secs - 1) * 1000,
        "{ms} ms, {secs} s"
    );
    assert_eq!(a.header("retry-after"), Some(secs.to_string().as_str()));
    assert!((1..=86_400).contains(&secs), "{secs}");
    assert!(
        message.contains(&format!("retry after {secs} s")),
        "{message}"
    );
    assert!(a.body.get("result").is_none());
    secs
}

fn last_metric(lines: &Metrics) -> Value {
    serde_json::from_str(lines.lock().unwrap().last().unwrap()).unwrap()
}

#[tokio::test]
async fn limits_hold_across_sandboxes_per_tool_and_per_subject() {
    let moto = crate::support::aws::moto_url();
    let db = fixture().await;
    let client = dynamodb(&moto);
    let name = table(&client, "limits-shared").await;
    let (a, metrics_a) = sandbox(&db, client.clone(), limits(&name));
    let (b, _) = sandbox(&db, client.clone(), limits(&name));
    let alice = token_for("alice", "acme");

    // Two calls of one tool, one in each sandbox: the third, in either, is over the tool's
    // limit of 2, because both count in the same table.
    ok(&call(&a, &alice, "describe_data", json!({})).await);
    ok(&call(&b, &alice, "describe_data", json!({})).await);
    let refused = call(&a, &alice, "describe_data", json!({})).await;
    assert_limited(&refused, "tool");
    let metric = last_metric(&metrics_a);
    assert_eq!(metric["RateLimited"], 1, "{metric}");
    assert_eq!(metric["Rows"], 0, "nothing was read: {metric}");

    // Other tools and other callers are unaffected.
    ok(&call(
        &b,
        &alice,
        "get_entity_state",
        json!({"entity_id": "svc-a"}),
    )
    .await);
    let bob = token_for("bob", "acme");
    ok(&call(&a, &bob, "describe_data", json!({})).await);

    // A per-tool maximum from RATE_LIMIT_TOOLS: count_events allows one.
    ok(&call(
        &a,
        &bob,
        "count_events",
        json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-03T00:00:00Z"}),
    )
    .await);
    let again = call(
        &b,
        &bob,
        "count_events",
        json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-03T00:00:00Z"}),
    )
    .await;
    assert_limited(&again, "tool");

    // Alice has made 3 counted calls (the refused one did not count); 2 more reach her
    // total of 5, and the next call of any tool is over it.
    ok(&call(&a, &alice, "query_events", json!({"limit": 1})).await);
    ok(&call(
        &b,
        &alice,
        "get_entity_state",
        json!({"entity_id": "svc-a"}),
    )
    .await);
    let over = call(
        &a,
        &alice,
        "summarize_window",
        json!({"since": "2026-11-01T00:00:00Z"}),
    )
    .await;
    assert_limited(&over, "subject");
}

#[tokio::test]
async fn a_tenant_limit_counts_every_caller_of_the_tenant() {
    let moto = crate::support::aws::moto_url();
    let db = fixture().await;
    let client = dynamodb(&moto);
    let name = table(&client, "limits-tenant").await;
    let config = LimitsConfig {
        per_tenant: Some(2),
        ..limits(&name)
    };
    let (app, _) = sandbox(&db, client, config);
    ok(&call(&app, &token_for("u1", "acme"), "describe_data", json!({})).await);
    ok(&call(&app, &token_for("u2", "acme"), "describe_data", json!({})).await);
    let third = call(&app, &token_for("u3", "acme"), "describe_data", json!({})).await;
    assert_limited(&third, "tenant");
    // Another tenant has its own count.
    ok(&call(&app, &token_for("u1", "globex"), "describe_data", json!({})).await);
}

#[tokio::test]
async fn an_unreachable_table_lets_calls_run_and_says_so_in_the_metrics() {
    let db = fixture().await;
    // Nothing listens on port 1: the update fails at once, well inside the wait.
    let (app, metrics) = sandbox(&db, dynamodb("http://127.0.0.1:1"), limits("none"));
    let alice = token_for("alice", "acme");
    for _ in 0..3 {
        ok(&call(&app, &alice, "describe_data", json!({})).await);
        let metric = last_metric(&metrics);
        assert_eq!(metric["RateLimitUnchecked"], 1, "{metric}");
        assert_eq!(metric["RateLimited"], 0, "{metric}");
    }
}

/// One JSON-RPC request of `method` by `token` in 2025-11-25, or a 2025-03-26 batch when
/// `body` is an array.
async fn rpc(app: &App, token: &str, version: &str, body: Value) -> Answer {
    let bearer = format!("Bearer {token}");
    send(
        app,
        post_json(
            &body,
            &[
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", version),
            ],
        ),
    )
    .await
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

#[tokio::test]
async fn every_read_counts_resources_prompts_and_completions_batches_included() {
    let moto = crate::support::aws::moto_url();
    let db = fixture().await;
    let client = dynamodb(&moto);
    let name = table(&client, "limits-reads").await;
    let (app, metrics) = sandbox(&db, client, limits(&name));
    let reader = token_for("reader", "acme");
    let read = request(
        "resources/read",
        json!({"uri": "event-store://event-types"}),
    );
    // Two resource reads, then the third is over the per-method limit of 2: each method
    // of reading counts under its own name, as each tool does.
    for _ in 0..2 {
        let a = rpc(&app, &reader, "2025-11-25", read.clone()).await;
        assert_eq!(a.status, 200, "{a:?}");
        assert!(a.result()["contents"].is_array(), "{a:?}");
    }
    let refused = rpc(&app, &reader, "2025-11-25", read.clone()).await;
    assert_limited(&refused, "tool");
    assert_eq!(refused.body["error"]["data"]["method"], "resources/read");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("resources/read requests by you")
    );
    let metric = last_metric(&metrics);
    assert_eq!(metric["Tool"], "resources/read", "{metric}");
    assert_eq!(metric["RateLimited"], 1, "{metric}");
    // A prompt and a completion count too: with the two reads the subject's total is 4,
    // a tool call makes 5, and the next read of any kind is over it.
    let digest = request("prompts/get", json!({"name": "daily_digest"}));
    assert_eq!(
        rpc(&app, &reader, "2025-11-25", digest.clone())
            .await
            .status,
        200
    );
    let completion = request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "triage_incident"}, "argument": {"name": "entity_id", "value": "svc"}}),
    );
    let a = rpc(&app, &reader, "2025-11-25", completion.clone()).await;
    assert_eq!(
        a.result()["completion"]["values"],
        json!(["svc-a"]),
        "{a:?}"
    );
    ok(&call(&app, &reader, "describe_data", json!({})).await);
    let over = rpc(&app, &reader, "2025-11-25", completion).await;
    assert_limited(&over, "subject");
    // A 2025-03-26 batch: each member counts. Two reads pass, the third is refused, and
    // the batch carries the 429 and Retry-After a lone read would.
    let batcher = token_for("batcher", "acme");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "event-store://event-types"}},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "event-store://event-types"}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "event-store://event-types"}},
    ]);
    let a = rpc(&app, &batcher, "2025-03-26", batch).await;
    assert_eq!(a.status, 429, "{a:?}");
    assert!(a.header("retry-after").is_some(), "{a:?}");
    let entries = a.body.as_array().unwrap();
    assert!(entries[0]["result"]["contents"].is_array(), "{a:?}");
    assert!(entries[1]["result"]["contents"].is_array(), "{a:?}");
    assert_eq!(entries[2]["error"]["data"]["code"], "rate_limited", "{a:?}");
    assert_eq!(
        entries[2]["error"]["data"]["method"], "resources/read",
        "{a:?}"
    );
}

#[tokio::test]
async fn in_the_stateless_era_a_read_over_its_limit_is_the_same_429() {
    let moto = crate::support::aws::moto_url();
    let db = fixture().await;
    let client = dynamodb(&moto);
    let name = table(&client, "limits-modern").await;
    let (app, _) = sandbox(&db, client, limits(&name));
    let bearer = format!("Bearer {}", token_for("modern", "acme"));
    let get = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "prompts/get", "params": {
            "name": "daily_digest", "_meta": crate::support::http::modern_meta()}})
    };
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", crate::support::http::MODERN),
        ("mcp-method", "prompts/get"),
        ("mcp-name", "daily_digest"),
    ];
    for id in 1..=2 {
        let a = send(&app, post_json(&get(id), &headers)).await;
        assert_eq!(a.status, 200, "{a:?}");
        assert!(a.result()["messages"].is_array(), "{a:?}");
    }
    let refused = send(&app, post_json(&get(3), &headers)).await;
    assert_limited(&refused, "tool");
    assert_eq!(refused.body["error"]["data"]["method"], "prompts/get");
}
