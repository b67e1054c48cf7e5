//! The event-store tools on a real PostgreSQL, reached through a real PgBouncer in
//! transaction mode with TLS verified against a CA made for the run (`scripts/pgbouncer`).
//! Each test gets its own database.

use std::time::{Duration, Instant};

use mcp::App;
use mcp_db::{Credentials, Db, DbConfig, DbError, Phase, TlsMode};
use serde_json::{Value, json};
use tokio_postgres::NoTls;

use crate::support::auth::{app_serving, auth_config, keys, static_keys};
use crate::support::db::{
    ADMIN, TestDb, admin, call, eventually, fixture, ids, ok, token, tool_error,
};

fn app(db: &TestDb) -> App {
    let server = mcp::production_server(
        db.store("mcp_endpoint", Duration::from_secs(5)),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap();
    app_serving(auth_config(static_keys(&[&keys().rsa])), server)
}

fn times(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["occurred_at"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn describe_data_reports_the_callers_tenant_only() {
    let db = fixture().await;
    let app = app(&db);
    let a = call(&app, &token(Some("acme")), "describe_data", json!({})).await;
    let v = ok(&a);
    assert_eq!(v["total_events"], 5);
    assert_eq!(v["first_event_at"], "2026-11-01T10:00:00Z");
    assert_eq!(v["last_event_at"], "2026-11-02T09:00:00Z");
    assert_eq!(v["entity_types"], json!([{"name": "service", "events": 5}]));
    let names: Vec<&str> = v["event_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alert.fired", "deploy.finished", "incident.opened"]);
    let sev: Vec<(String, i64)> = v["severities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().into(),
                s["events"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sev,
        [
            ("debug".into(), 0),
            ("info".into(), 2),
            ("notice".into(), 0),
            ("warning".into(), 1),
            ("error".into(), 1),
            ("critical".into(), 1)
        ]
    );
    let a = call(&app, &token(Some("globex")), "describe_data", json!({})).await;
    assert_eq!(ok(&a)["total_events"], 2);
}

#[tokio::test]
async fn query_events_filters_newest_first() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let q = |args: Value| {
        let (app, acme) = (&app, &acme);
        async move { call(app, acme, "query_events", args).await }
    };
    let all = q(json!({})).await;
    let v = ok(&all);
    assert_eq!(
        times(v),
        [
            "2026-11-02T09:00:00Z",
            "2026-11-01T13:00:00Z",
            "2026-11-01T12:00:00Z",
            "2026-11-01T11:00:00Z",
            "2026-11-01T10:00:00Z"
        ]
    );
    assert_eq!(
        (
            v["count"].as_i64(),
            v["limit"].as_i64(),
            v["truncated"].as_bool(),
            v["next_cursor"].is_null()
        ),
        (Some(5), Some(50), Some(false), true)
    );
    assert!(
        v["events"][0].get("payload").is_none(),
        "payload only on request"
    );
    for (args, expected) in [
        (
            json!({"entity_id": "svc-a"}),
            vec![
                "2026-11-01T13:00:00Z",
                "2026-11-01T11:00:00Z",
                "2026-11-01T10:00:00Z",
            ],
        ),
        (
            json!({"min_severity": "warning"}),
            vec![
                "2026-11-01T13:00:00Z",
                "2026-11-01T12:00:00Z",
                "2026-11-01T11:00:00Z",
            ],
        ),
        (
            json!({"tags_any": ["paging", "team:core"]}),
            vec![
                "2026-11-01T13:00:00Z",
                "2026-11-01T11:00:00Z",
                "2026-11-01T10:00:00Z",
            ],
        ),
        (
            json!({"tags_all": ["region:eu", "paging"]}),
            vec!["2026-11-01T13:00:00Z", "2026-11-01T11:00:00Z"],
        ),
        (
            json!({"event_types": ["alert.fired"]}),
            vec!["2026-11-01T12:00:00Z", "2026-11-01T11:00:00Z"],
        ),
        (
            json!({"since": "2026-11-01T11:00:00Z", "until": "2026-11-01T13:00:00Z"}),
            vec!["2026-11-01T12:00:00Z", "2026-11-01T11:00:00Z"],
        ),
        (
            json!({"since": "2026-11-01T12:00:00+01:00"}),
            vec![
                "2026-11-02T09:00:00Z",
                "2026-11-01T13:00:00Z",
                "2026-11-01T12:00:00Z",
                "2026-11-01T11:00:00Z",
            ],
        ),
        (
            json!({"entity_id": "svc-a'; DELETE FROM events; --"}),
            vec![],
        ),
        (json!({"tags_any": ["x' OR '1'='1"]}), vec![]),
    ] {
        let a = q(args.clone()).await;
        assert_eq!(times(ok(&a)), expected, "{args}");
    }
    let a = q(json!({"include_payload": true, "limit": 1})).await;
    assert_eq!(ok(&a)["events"][0]["payload"], json!({"k": 5}));
    // A whole number written as a float is an integer to JSON Schema, and read as one.
    let a = q(json!({"limit": 2.0})).await;
    assert_eq!(ok(&a)["count"], json!(2));
    assert_eq!(ok(&a)["limit"], json!(2));
    let message = tool_error(
        &q(json!({"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"})).await,
    );
    assert!(
        message.contains("since") && message.contains("before until"),
        "{message}"
    );
    let message = tool_error(&q(json!({"since": "yesterday"})).await);
    assert!(message.contains("RFC 3339"), "{message}");
    for bad in [
        json!({"limit": 501}),
        json!({"limit": 0}),
        json!({"limit": 2.5}),
        json!({"min_severity": "loud"}),
        json!({"entity_id": ""}),
    ] {
        assert!(
            tool_error(&q(bad.clone()).await).starts_with("Invalid arguments"),
            "{bad}"
        );
    }
    assert_eq!(db.count().await, 7, "nothing was written");
}

#[tokio::test]
async fn pages_follow_a_signed_cursor_bound_to_tenant_and_filter() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"limit": 2});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let a = call(&app, &acme, "query_events", args).await;
        let v = ok(&a).clone();
        pages += 1;
        seen.extend(ids(&v));
        assert_eq!(
            v["truncated"].as_bool().unwrap(),
            !v["next_cursor"].is_null()
        );
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let all = call(&app, &acme, "query_events", json!({})).await;
    assert_eq!(
        seen,
        ids(ok(&all)),
        "pages cover every event once, in order"
    );

    let first = call(&app, &acme, "query_events", json!({"limit": 2})).await;
    let c = ok(&first)["next_cursor"].as_str().unwrap().to_owned();
    let mut tampered = c.clone();
    tampered.replace_range(0..1, if c.starts_with('e') { "f" } else { "e" });
    let m = tool_error(
        &call(
            &app,
            &acme,
            "query_events",
            json!({"limit": 2, "cursor": tampered}),
        )
        .await,
    );
    assert!(m.starts_with("Invalid cursor"), "{m}");
    let m = tool_error(
        &call(
            &app,
            &acme,
            "query_events",
            json!({"limit": 2, "cursor": c, "entity_id": "svc-a"}),
        )
        .await,
    );
    assert!(m.contains("different query"), "{m}");
    let m = tool_error(
        &call(
            &app,
            &token(Some("globex")),
            "query_events",
            json!({"limit": 2, "cursor": c}),
        )
        .await,
    );
    assert!(m.starts_with("Invalid cursor"), "{m}");
}

#[tokio::test]
async fn entity_state_and_single_events_are_tenant_scoped() {
    let db = fixture().await;
    let app = app(&db);
    let (acme, globex) = (token(Some("acme")), token(Some("globex")));
    let a = call(
        &app,
        &acme,
        "get_entity_state",
        json!({"entity_id": "svc-a"}),
    )
    .await;
    assert_eq!(ok(&a)["state"], json!({"status": "degraded"}));
    let a = call(
        &app,
        &globex,
        "get_entity_state",
        json!({"entity_id": "svc-a"}),
    )
    .await;
    assert_eq!(ok(&a)["state"], json!({"status": "SECRET-GLOBEX"}));
    let m = tool_error(
        &call(
            &app,
            &acme,
            "get_entity_state",
            json!({"entity_id": "svc-z"}),
        )
        .await,
    );
    assert!(m.contains("No entity \"svc-z\""), "{m}");

    let globex_event: i64 = db
        .admin
        .query_one("SELECT min(id) FROM events WHERE tenant_id = 'globex'", &[])
        .await
        .unwrap()
        .get(0);
    let a = call(&app, &globex, "get_event", json!({"id": globex_event})).await;
    assert_eq!(
        ok(&a)["event"]["payload"],
        json!({"secret": "SECRET-GLOBEX"})
    );
    let m = tool_error(&call(&app, &acme, "get_event", json!({"id": globex_event})).await);
    assert_eq!(
        m,
        format!(
            "No event with id {globex_event} in your tenant. Use query_events to find event ids."
        )
    );
}

#[tokio::test]
async fn windows_are_summarised_and_counted() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let window = json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-03T00:00:00Z"});
    let a = call(&app, &acme, "summarize_window", window.clone()).await;
    let v = ok(&a);
    assert_eq!(v["total_events"], 5);
    assert_eq!(
        v["severity_counts"],
        json!({"debug": 0, "info": 2, "notice": 0, "warning": 1, "error": 1, "critical": 1})
    );
    let summaries: Vec<&str> = v["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ai_summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        summaries,
        [
            "incident declared for svc-a",
            "error rate up on svc-b",
            "p99 latency high on svc-a"
        ]
    );
    assert_eq!(v["truncated"], false);
    let mut capped = window.clone();
    capped["max_summaries"] = json!(1);
    assert_eq!(
        ok(&call(&app, &acme, "summarize_window", capped).await)["truncated"],
        true
    );

    let mut by_day = window.clone();
    by_day["bucket"] = json!("day");
    by_day["group_by"] = json!("severity");
    let a = call(&app, &acme, "count_events", by_day).await;
    let v = ok(&a);
    assert_eq!(v["total_events"], 5);
    assert_eq!(
        v["buckets"],
        json!([
            {"start": "2026-11-01T00:00:00Z", "severity": "info", "count": 1},
            {"start": "2026-11-01T00:00:00Z", "severity": "warning", "count": 1},
            {"start": "2026-11-01T00:00:00Z", "severity": "error", "count": 1},
            {"start": "2026-11-01T00:00:00Z", "severity": "critical", "count": 1},
            {"start": "2026-11-02T00:00:00Z", "severity": "info", "count": 1},
        ])
    );
    let mut minutes = window;
    minutes["bucket"] = json!("minute");
    let m = tool_error(&call(&app, &acme, "count_events", minutes).await);
    assert!(m.contains("at most 1000"), "{m}");

    // Buckets start on UTC boundaries, whatever the window's own start: a window from
    // 10:30 puts the 11:00 and 12:00 alerts in the 11:00 and 12:00 hours.
    let half_past = json!({"since": "2026-11-01T10:30:00Z", "until": "2026-11-01T12:30:00Z"});
    let v = ok(&call(&app, &acme, "count_events", half_past).await).clone();
    assert_eq!(
        v["buckets"],
        json!([
            {"start": "2026-11-01T11:00:00Z", "count": 1},
            {"start": "2026-11-01T12:00:00Z", "count": 1},
        ])
    );
    // 1,000 minute buckets fit; one second more touches bucket 1,001 and is refused.
    let exact = json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-01T16:40:00Z", "bucket": "minute"});
    assert_eq!(
        ok(&call(&app, &acme, "count_events", exact).await)["total_events"],
        4
    );
    let over = json!({"since": "2026-11-01T00:00:00Z", "until": "2026-11-01T16:40:01Z", "bucket": "minute"});
    let m = tool_error(&call(&app, &acme, "count_events", over).await);
    assert!(m.contains("touches 1001 UTC minute buckets"), "{m}");
}

#[tokio::test]
async fn no_tool_leaks_another_tenants_rows_and_no_tenant_means_no_data() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let window = json!({"since": "2026-10-01T00:00:00Z", "until": "2026-12-01T00:00:00Z"});
    for (tool, args) in [
        ("describe_data", json!({})),
        (
            "query_events",
            json!({"include_payload": true, "limit": 500}),
        ),
        (
            "query_events",
            json!({"entity_id": "svc-a", "include_payload": true}),
        ),
        ("summarize_window", window.clone()),
        (
            "count_events",
            json!({"since": "2026-10-01T00:00:00Z", "until": "2026-12-01T00:00:00Z", "group_by": "event_type"}),
        ),
        ("get_entity_state", json!({"entity_id": "svc-a"})),
    ] {
        let a = call(&app, &acme, tool, args).await;
        assert_eq!(a.status, 200);
        assert!(
            !String::from_utf8_lossy(&a.raw).contains("SECRET-GLOBEX"),
            "{tool} leaked: {a:?}"
        );
    }
    // With a tenant claim configured, a token without one never gets in.
    assert_eq!(
        call(&app, &token(None), "query_events", json!({}))
            .await
            .status,
        401
    );
    // Without a tenant claim or default tenant, a caller has no tenant and reads nothing.
    let mut config = auth_config(static_keys(&[&keys().rsa]));
    config.tenant_claim = None;
    let server = mcp::production_server(
        db.store("mcp_endpoint", Duration::from_secs(5)),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap();
    let tenantless = app_serving(config, server);
    let m = tool_error(&call(&tenantless, &token(None), "query_events", json!({})).await);
    assert!(m.contains("names no tenant"), "{m}");
}

#[tokio::test]
async fn the_database_refuses_every_write_and_bypass_even_from_inside_a_read() {
    let db = fixture().await;
    let store = db.store("mcp_endpoint", Duration::from_secs(5));
    let attempts = [
        "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) VALUES ('acme','x','x','alert.fired',1,now())",
        "UPDATE events SET severity = 0",
        "DELETE FROM events",
        "SET TRANSACTION READ WRITE",
        "COMMIT; DELETE FROM events",
        "SELECT 1; DELETE FROM events",
        "SELECT pg_read_file('/etc/passwd')",
        "EXPLAIN ANALYZE DELETE FROM events",
        "CREATE TABLE x (a int)",
        "SELECT set_config('default_transaction_read_only', 'off', false); DELETE FROM events",
        "COPY events TO '/tmp/leak'",
    ];
    for sql in attempts {
        let result = store
            .db
            .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
                Box::pin(async move { tx.query(sql, &[]).await })
            })
            .await;
        assert!(
            matches!(result, Err(DbError::Query(_))),
            "{sql}: {result:?}"
        );
    }
    // Another tenant's rows stay invisible even to a hand-written query: RLS, not our SQL.
    let rows = store
        .db
        .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
            Box::pin(async move { tx.query("SELECT tenant_id FROM events", &[]).await })
        })
        .await
        .unwrap();
    assert!(rows.iter().all(|r| r.get::<_, String>(0) == "acme"));
    assert_eq!(rows.len(), 5);
    assert_eq!(db.count().await, 7, "nothing was written");
}

#[tokio::test]
async fn a_role_that_could_write_or_bypass_rls_is_refused() {
    let db = fixture().await;
    // Through PgBouncer as the superuser.
    let superuser = db.store("postgres", Duration::from_secs(5));
    let result = superuser
        .db
        .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
            Box::pin(async move { tx.query("SELECT 1", &[]).await })
        })
        .await;
    assert!(
        matches!(&result, Err(DbError::UnsafeRole(p)) if p == "is a superuser"),
        "{result:?}"
    );
    // Directly, as a role that may insert (plain TCP is allowed on loopback only).
    db.admin
        .batch_execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mcp_test_writer') THEN CREATE ROLE mcp_test_writer LOGIN; END IF; END $$; \
             ALTER ROLE mcp_test_writer SET default_transaction_read_only = on; \
             GRANT SELECT, INSERT ON events TO mcp_test_writer;",
        )
        .await
        .unwrap();
    let writer = Db::new(DbConfig {
        credentials: Credentials::Url(format!(
            "postgres://mcp_test_writer@127.0.0.1:5432/{}",
            db.name
        )),
        tls: TlsMode::Disable,
        connect_timeout: Duration::from_secs(3),
    });
    let result = writer
        .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
            Box::pin(async move { tx.query("SELECT 1", &[]).await })
        })
        .await;
    assert!(
        matches!(&result, Err(DbError::UnsafeRole(p)) if p == "can write to a table"),
        "{result:?}"
    );
    // Through the endpoint the refusal is an opaque internal error, and nothing is read.
    let server =
        mcp::production_server(superuser, mcp_protocol::server::DEFAULT_RESPONSE_BUDGET).unwrap();
    let app = app_serving(auth_config(static_keys(&[&keys().rsa])), server);
    let a = call(&app, &token(Some("acme")), "describe_data", json!({})).await;
    assert_eq!(a.assert_error(500, -32603), "Internal error");
}

#[tokio::test]
async fn hot_queries_use_the_tenant_indexes() {
    let db = TestDb::create().await;
    let mut seeder = admin(&db.name).await;
    migrate::seed(
        &mut seeder,
        &["tenant-a", "tenant-b"],
        20_000,
        "2026-12-01T00:00:00Z".parse().unwrap(),
    )
    .await
    .unwrap();
    db.admin.batch_execute("ANALYZE").await.unwrap();
    // The sample holds every severity, debug (0) to critical (5), in every tenant.
    for tenant in ["tenant-a", "tenant-b"] {
        let severities: Vec<i16> = db
            .admin
            .query_one(
                "SELECT array_agg(DISTINCT severity ORDER BY severity) FROM events WHERE tenant_id = $1",
                &[&tenant],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(severities, [0, 1, 2, 3, 4, 5], "{tenant}");
    }
    // Completion reads entity_state, one row per entity: 50,000 entities in each tenant
    // make a range scan the only sensible plan for a prefix.
    db.admin
        .batch_execute(
            "INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) \
             SELECT t, 'node-' || i, 'host', '{}', now() \
             FROM unnest(ARRAY['tenant-a', 'tenant-b']) t, generate_series(1, 50000) i; \
             ANALYZE entity_state",
        )
        .await
        .unwrap();
    let literal = |sql: &str, prefix: &str| {
        sql.replace("$1", &format!("'{prefix}'"))
            .replace("$2", &format!("'{prefix}\u{10FFFF}'"))
            .replace("$3", "101")
    };
    db.admin
        .batch_execute("SET ROLE mcp_reader; SELECT set_config('app.tenant_id', 'tenant-a', false)")
        .await
        .unwrap();
    for (sql, index) in [
        (
            literal(mcp_tools::COMPLETE_ENTITY_IDS, "node-12"),
            "entity_state_completion",
        ),
        (
            literal(mcp_tools::COMPLETE_EVENT_TYPES, "alert"),
            "_tenant_type_time",
        ),
        (
            "SELECT id FROM events WHERE entity_id = 'svc-checkout-1' ORDER BY occurred_at DESC, id DESC LIMIT 51".to_owned(),
            "_tenant_entity_time",
        ),
        (
            "SELECT id FROM events ORDER BY occurred_at DESC, id DESC LIMIT 51".to_owned(),
            "_tenant_time",
        ),
        (
            "SELECT id FROM events WHERE event_type = 'incident.opened' ORDER BY occurred_at DESC, id DESC LIMIT 51".to_owned(),
            "_tenant_type_time",
        ),
    ] {
        let plan: Vec<String> = db
            .admin
            .query(&format!("EXPLAIN {sql}"), &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        // Each month's partition has its own copy of the index: events_pYYYY_MM<index>.
        assert!(plan.contains(index), "{sql}\n{plan}");
    }
}

#[tokio::test]
async fn hostile_strings_in_every_argument_read_nothing_and_write_nothing() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    let hostile = [
        "'; DELETE FROM events; --",
        "x' OR '1'='1",
        "svc-a\u{0}",
        "$1; COMMIT; DROP TABLE events",
        "svc-a')) UNION SELECT payload FROM events --",
        "\\\\x27",
    ];
    for h in hostile {
        for (tool, args) in [
            ("query_events", json!({"entity_id": h})),
            ("query_events", json!({"event_types": [h]})),
            ("query_events", json!({"tags_any": [h], "tags_all": [h]})),
            ("query_events", json!({"since": h})),
            ("query_events", json!({"cursor": h})),
            ("get_entity_state", json!({"entity_id": h})),
            (
                "summarize_window",
                json!({"since": "2026-10-01T00:00:00Z", "entity_id": h}),
            ),
            (
                "count_events",
                json!({"since": "2026-10-01T00:00:00Z", "until": "2026-11-30T00:00:00Z", "bucket": "day", "entity_id": h, "event_types": [h]}),
            ),
        ] {
            let a = call(&app, &acme, tool, args.clone()).await;
            assert_eq!(a.status, 200, "{tool} {args}: {a:?}");
            let result = a.result();
            if result["isError"] != true {
                let s = &result["structuredContent"];
                let found = s["events"].as_array().map_or(0, Vec::len)
                    + s["summaries"].as_array().map_or(0, Vec::len)
                    + s["buckets"].as_array().map_or(0, Vec::len);
                assert_eq!(found, 0, "{tool} {args} matched rows: {s}");
            }
        }
    }
    assert_eq!(db.count().await, 7, "nothing was written");
}

#[tokio::test]
async fn the_deadline_reaches_postgres_and_the_connection_survives_it() {
    let db = fixture().await;
    let store = db.store("mcp_endpoint", Duration::from_millis(300));
    // A statement past its budget is cancelled by the server itself...
    let result = store
        .db
        .read("acme", Instant::now() + Duration::from_millis(300), |tx| {
            Box::pin(async move { tx.query("SELECT pg_sleep(5)", &[]).await })
        })
        .await;
    assert!(
        matches!(result, Err(DbError::Timeout(Phase::Execute))),
        "{result:?}"
    );
    // ...so it no longer runs anywhere. When the server's own timeout answered, the backend
    // is idle already; when the client-side backstop fired instead (a loaded machine), its
    // cancel request reaches the backend through the proxy a moment later. Either way the
    // sleep ends well before its 5 s, which is what this checks.
    let admin = &db.admin;
    let stopped = eventually(Duration::from_secs(3), || async {
        let running: i64 = admin
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(5)' AND state = 'active'", &[])
            .await
            .unwrap()
            .get(0);
        running == 0
    })
    .await;
    assert!(stopped, "the timed-out statement still runs");
    // ...and the same warm connection serves the next read.
    assert_eq!(
        crate::support::secrets::count_acme(&store.db)
            .await
            .unwrap(),
        5
    );

    // A lock wait counts against the same budget (lock_timeout).
    let (mut locker, connection) = tokio_postgres::connect(&format!("{ADMIN}/{}", db.name), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let result = store
        .db
        .read("acme", Instant::now() + Duration::from_millis(300), |tx| {
            Box::pin(async move { tx.query("SELECT count(*) FROM events", &[]).await })
        })
        .await;
    assert!(
        matches!(result, Err(DbError::Timeout(Phase::Execute))),
        "{result:?}"
    );
    tx.rollback().await.unwrap();

    // Through a tool, the model is told what happened and what to do.
    let server =
        mcp::production_server(store, mcp_protocol::server::DEFAULT_RESPONSE_BUDGET).unwrap();
    let app = app_serving(auth_config(static_keys(&[&keys().rsa])), server);
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let a = call(&app, &token(Some("acme")), "query_events", json!({})).await;
    let m = tool_error(&a);
    assert!(
        m.contains("time budget of 300 ms") && m.contains("narrow the time window"),
        "{m}"
    );
    let detail = &a.result()["structuredContent"];
    assert_eq!(detail["code"], "deadline_exceeded");
    assert_eq!(detail["phase"], "execute");
    assert_eq!(detail["budget_ms"], 300);
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn window_bounds_hold_at_the_stored_precision_and_range() {
    let db = fixture().await;
    let app = app(&db);
    let acme = token(Some("acme"));
    // svc-a's deploy is at 10:00:00 exactly and its alert at 11:00:00 (stored in
    // microseconds): 100 ns after the first, `since` excludes it; 100 ns after the second,
    // `until` includes it.
    let a = call(
        &app,
        &acme,
        "query_events",
        json!({"entity_id": "svc-a", "since": "2026-11-01T10:00:00.0000001Z", "until": "2026-11-01T11:00:00.0000001Z"}),
    )
    .await;
    let types: Vec<&str> = ok(&a)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["alert.fired"]);
    // An instant the parser knows but the database cannot store is a bad argument, named.
    for (key, value) in [
        ("since", "-005000-01-01T00:00:00Z"),
        ("until", "0000-06-01T00:00:00Z"),
    ] {
        for tool in ["query_events", "count_events", "summarize_window"] {
            let mut args = json!({"since": "2026-11-01T00:00:00Z"});
            args[key] = json!(value);
            let m = tool_error(&call(&app, &acme, tool, args).await);
            assert!(
                m.contains(&format!(
                    "{key} must be between 0001-01-01T00:00:00Z and 9999-12-30T00:00:00Z"
                )),
                "{tool} {key}: {m}"
            );
        }
    }
}
