//! Faults between the endpoint and its dependencies, on 127.0.0.1: a backend killed
//! mid-query, every backend dropped between calls (what a PostgreSQL restart or failover
//! looks like through a pooler), the pooler down then back, Secrets Manager down at cold
//! start. For each: the answer is precise (a retryable `isError`, never -32603), the next
//! call after recovery succeeds, and no connection is left behind.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::db::{TestDb, call, fixture, ok, pgbouncer, token, tool_error};
use crate::support::db::{app_with_budget, eventually};
use crate::support::faultproxy::FaultProxy;

/// Backends of `db` the endpoint holds (through PgBouncer: the server side of its pool).
async fn endpoint_backends(db: &TestDb) -> i64 {
    db.admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = 'mcp_endpoint'",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

async fn terminate_endpoint_backends(db: &TestDb, only_query: Option<&str>) -> i64 {
    db.admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND usename = 'mcp_endpoint' \
               AND ($1::text IS NULL OR query = $1)",
            &[&only_query],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_backend_killed_mid_query_is_a_retryable_answer_and_the_next_call_works() {
    let db = fixture().await;
    let store = db.store("mcp_endpoint", Duration::from_secs(5));
    let reader = store.clone();
    let sleeping = tokio::spawn(async move {
        reader
            .db
            .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
                Box::pin(async move { tx.query("SELECT pg_sleep(3)", &[]).await })
            })
            .await
    });
    // Wait until the statement runs, then kill its backend.
    assert!(
        eventually(Duration::from_secs(5), || async {
            terminate_endpoint_backends(&db, Some("SELECT pg_sleep(3)")).await == 1
        })
        .await,
        "the statement never started"
    );
    let result = sleeping.await.unwrap();
    // Reads are safe to repeat, so a killed backend is retried once on a fresh connection:
    // the caller gets the answer, 3 s later, not an error.
    assert!(result.is_ok(), "{result:?}");

    // Through a tool: a backend killed between calls is invisible to the caller.
    let (app, _) = app_with_budget(store, 256 * 1024);
    let acme = token(Some("acme"));
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    assert!(terminate_endpoint_backends(&db, None).await >= 1);
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
}

#[tokio::test]
async fn the_pooler_down_then_back_is_a_retryable_answer_then_a_normal_one() {
    let db = fixture().await;
    let proxy = FaultProxy::start(pgbouncer().0).await;
    let store = db.store_via("mcp_endpoint", proxy.port, Duration::from_secs(2));
    let (app, _) = app_with_budget(store, 256 * 1024);
    let acme = token(Some("acme"));
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );

    // The pooler stops: its connections drop and new ones are refused.
    proxy.down(true);
    proxy.reset();
    let started = Instant::now();
    let a = call(&app, &acme, "query_events", json!({})).await;
    assert_eq!(a.status, 200);
    let m = tool_error(&a);
    assert!(m.contains("unreachable") && m.contains("Retry"), "{m}");
    // Refused connections fail fast, well inside the budget.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Nothing internal leaks into the answer.
    for word in ["SELECT", "ERROR", "tokio", "postgres://", "127.0.0.1"] {
        assert!(
            !String::from_utf8_lossy(&a.raw).contains(word),
            "{word} in {a:?}"
        );
    }

    proxy.down(false);
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    // One connection in use, none left over from the outage.
    assert!(
        eventually(Duration::from_secs(5), || async { proxy.live() == 1 }).await,
        "{}",
        proxy.live()
    );
    assert!(endpoint_backends(&db).await <= 1);
}

#[tokio::test]
async fn secrets_manager_down_at_cold_start_is_retryable_and_recovers() {
    let env = crate::support::secrets::env();
    let test_db = fixture().await;
    let moto_port: u16 = env.moto.rsplit(':').next().unwrap().parse().unwrap();
    let proxy = FaultProxy::start(moto_port).await;
    let sm = crate::support::secrets::secrets_client(&format!("http://127.0.0.1:{}", proxy.port));
    let secret_id = format!("mcp/faults/{}", test_db.name);
    let password = std::fs::read_to_string(format!("{}/endpoint-password", env.dir))
        .unwrap()
        .trim()
        .to_owned();
    sm.create_secret()
        .name(&secret_id)
        .secret_string(crate::support::secrets::secret_json(&password, &test_db))
        .send()
        .await
        .unwrap();
    let db = crate::support::secrets::db_with_secret(sm, &secret_id, &env);
    let store = std::sync::Arc::new(mcp_tools::Store {
        db,
        cursor_key: mcp_tools::CursorKey::new(vec![7u8; 32]).unwrap(),
        statement_timeout: Duration::from_secs(3),
        links: mcp_tools::EventLinks::default(),
    });
    let (app, _) = app_with_budget(store, 256 * 1024);
    let acme = token(Some("acme"));

    proxy.down(true);
    let a = call(&app, &acme, "query_events", json!({})).await;
    let m = tool_error(&a);
    assert!(m.contains("unreachable") && m.contains("Retry"), "{m}");
    assert!(proxy.accepted() >= 1, "the secret was never asked for");
    assert!(
        !String::from_utf8_lossy(&a.raw).contains(&secret_id),
        "the secret id leaked"
    );

    proxy.down(false);
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
}

#[tokio::test]
async fn a_slow_network_is_bounded_by_the_deadline_and_a_cut_stream_by_one_retry() {
    let db = fixture().await;
    let proxy = FaultProxy::start(pgbouncer().0).await;
    let store = db.store_via("mcp_endpoint", proxy.port, Duration::from_millis(800));
    let (app, _) = app_with_budget(store, 256 * 1024);
    let acme = token(Some("acme"));
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );

    // G-7: 500 ms per chunk each way: even the read's one round trip cannot fit 800 ms.
    proxy.latency(500);
    let started = Instant::now();
    let a = call(&app, &acme, "query_events", json!({})).await;
    assert_eq!(
        a.result()["structuredContent"]["code"],
        "deadline_exceeded",
        "{a:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(800 + 250 + 400),
        "{:?}",
        started.elapsed()
    );
    proxy.latency(0);
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );

    // G-8: new connections die after 6 KB from the server, mid-result (the TLS handshake
    // fits, a page with payloads does not): the read is retried once, then the caller is
    // told to retry; never a partial page.
    proxy.cut_after(6 * 1024);
    proxy.reset();
    let big = json!({"include_payload": true, "limit": 500});
    db.admin
        .batch_execute(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured)
             SELECT 'acme', 'svc-bulk', 'service', 'alert.fired', 2, '2026-11-05T00:00:00Z'::timestamptz + (g || ' s')::interval,
                    '{}', jsonb_build_object('text', repeat('p', 500)), '{}'
             FROM generate_series(1, 100) g",
        )
        .await
        .unwrap();
    let a = call(&app, &acme, "query_events", big.clone()).await;
    let m = tool_error(&a);
    assert!(m.contains("unreachable") && m.contains("Retry"), "{m}");
    proxy.cut_after(usize::MAX);
    assert_eq!(
        ok(&call(&app, &acme, "query_events", big).await)["count"],
        105
    );
    assert!(
        eventually(Duration::from_secs(5), || async { proxy.live() == 1 }).await,
        "{}",
        proxy.live()
    );
}

/// A stored schema that drifted from what this build reads (here `entity_state.state` is
/// text, not jsonb) is an `isError` result that says it is our fault, and other tools keep
/// working: never a panic, never the column's name or type on the wire.
#[tokio::test]
async fn a_drifted_column_is_an_error_result_not_a_panic() {
    let db = fixture().await;
    db.admin
        .batch_execute("ALTER TABLE entity_state ALTER COLUMN state TYPE text USING state::text")
        .await
        .unwrap();
    let store = db.store("mcp_endpoint", Duration::from_secs(5));
    let (app, _) = app_with_budget(store, mcp_protocol::server::DEFAULT_RESPONSE_BUDGET);
    let acme = token(Some("acme"));
    let a = call(
        &app,
        &acme,
        "get_entity_state",
        json!({"entity_id": "svc-a"}),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    let message = tool_error(&a);
    assert!(message.contains("server fault"), "{message}");
    for leak in ["state", "jsonb", "text", "WrongType"] {
        assert!(!message.contains(leak), "{leak} in {message}");
    }
    let a = call(&app, &acme, "query_events", json!({"limit": 2})).await;
    assert_eq!(ok(&a)["count"], json!(2));
}
