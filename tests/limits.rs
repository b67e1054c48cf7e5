//! Rate limits shared by every sandbox, counted in DynamoDB (moto in server mode): two apps
//! stand for two sandboxes, and only the shared table makes them agree.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::{App, DynamoLimiter, LimitsConfig};
use serde_json::{Value, json};

use crate::support::auth::{claims, keys};
use crate::support::aws::{dynamodb, table};
use crate::support::db::{TestDb, app_recording_metrics, call, fixture, ok};
use crate::support::http::Answer;

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

/// Asserts a 429 for `limit` and returns the seconds it says to wait.
fn assert_limited(a: &Answer, limit: &str) -> u64 {
    let message = a.assert_error(429, -32600);
    let data = &a.body["error"]["data"];
    assert_eq!(data["code"], "rate_limited", "{a:?}");
    assert_eq!(data["limit"], limit, "{a:?}");
    let secs = data["retry_after_secs"].as_u64().unwrap();
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
