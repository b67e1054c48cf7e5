//! Bounded execution: one deadline from the invocation into Postgres with named phases, a
//! client-side cancel when the server's own timeout cannot answer, the per-tool cap, pages
//! that stop at the byte budget, and the request's log line and metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_db::{DbError, Phase};
use mcp_protocol::{CallToolResult, Incoming, Outcome, RequestContext, Server, ToolDef, Tools};
use serde_json::{Value, json};

use crate::support::auth::{claims, keys};
use crate::support::db::{
    TestDb, app_with_budget, call, eventually, fixture, ids, ok, pgbouncer, token, tool_error,
};
use crate::support::faultproxy::FaultProxy;
use crate::support::http::{captured_logs, post_json, send};

async fn running(db: &TestDb, query: &str) -> i64 {
    db.admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE query = $1 AND state = 'active'",
            &[&query],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_statement_that_slips_its_server_timeout_is_cancelled_by_the_client() {
    let db = fixture().await;
    let store = db.store("mcp_endpoint", Duration::from_secs(5));
    let started = Instant::now();
    // The body turns the server-side timeout off, as a hung proxy or a lost network would
    // make it useless: only the client-side timer is left.
    let result = store
        .db
        .read("acme", Instant::now() + Duration::from_millis(600), |tx| {
            Box::pin(async move {
                tx.query(
                    "SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)",
                    &[],
                )
                .await?;
                tx.query("SELECT pg_sleep(30)", &[]).await
            })
        })
        .await;
    assert!(
        matches!(result, Err(DbError::Timeout(Phase::Execute))),
        "{result:?}"
    );
    // The answer came at the deadline plus the bounded cancel wait, not after 30 s.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The cancel request reached the server through PgBouncer: the sleep is gone.
    assert!(
        eventually(Duration::from_secs(5), || async {
            running(&db, "SELECT pg_sleep(30)").await == 0
        })
        .await,
        "the statement still runs"
    );
    // A fresh connection serves the next read.
    assert_eq!(
        crate::support::secrets::count_acme(&store.db)
            .await
            .unwrap(),
        5
    );
}

#[tokio::test]
async fn a_blackholed_network_still_answers_inside_the_deadline_and_recovers() {
    let db = fixture().await;
    let proxy = FaultProxy::start(pgbouncer().0).await;
    let store = db.store_via("mcp_endpoint", proxy.port, Duration::from_millis(700));
    let (app, _) = app_with_budget(store.clone(), 256 * 1024);
    let acme = token(Some("acme"));
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    assert_eq!(proxy.live(), 1);

    // The warm connection's path hangs mid-call: the statement cannot even be sent.
    proxy.blackhole(true);
    let started = Instant::now();
    let a = call(&app, &acme, "query_events", json!({})).await;
    let elapsed = started.elapsed();
    assert!(tool_error(&a).contains("700 ms"), "{a:?}");
    let detail = &a.result()["structuredContent"];
    assert_eq!(detail["code"], "deadline_exceeded");
    assert_eq!(detail["phase"], "execute");
    assert_eq!(detail["retryable"], true);
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");

    // Still down, and now the sandbox must connect afresh: the connect phase runs out.
    let a = call(&app, &acme, "get_event", json!({"id": 1})).await;
    assert_eq!(a.result()["structuredContent"]["phase"], "connect", "{a:?}");

    // The path comes back: the next call succeeds on a new connection, and the held
    // connections drain instead of piling up.
    proxy.blackhole(false);
    let page = call(&app, &acme, "query_events", json!({})).await;
    assert_eq!(ok(&page)["count"], 5);
    assert!(
        eventually(Duration::from_secs(5), || async { proxy.live() == 1 }).await,
        "{} connections open through the proxy",
        proxy.live()
    );
}

#[tokio::test]
async fn a_reset_connection_is_replaced_within_the_same_call() {
    let db = fixture().await;
    let proxy = FaultProxy::start(pgbouncer().0).await;
    let store = db.store_via("mcp_endpoint", proxy.port, Duration::from_secs(5));
    let (app, _) = app_with_budget(store, 256 * 1024);
    let acme = token(Some("acme"));
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    proxy.reset();
    assert!(eventually(Duration::from_secs(5), || async { proxy.live() == 0 }).await);
    // The dead connection is noticed and replaced; the caller never sees it.
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    assert_eq!(proxy.live(), 1);
}

/// 40 events for `big` whose payloads are six 900-byte values each (never cut), plus one event with a 100 KB text
/// value and one whose payload is a large object of short strings.
async fn bulky(db: &TestDb) {
    db.admin
        .batch_execute(
            r#"
            INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured)
            SELECT 'big', 'svc-big', 'service', 'alert.fired', 3,
                   '2026-11-10T00:00:00Z'::timestamptz + (g || ' minutes')::interval, '{}',
                   (SELECT jsonb_object_agg('f' || h, repeat('x', 900)) FROM generate_series(1, 6) h), '{}'
            FROM generate_series(1, 40) g;
            INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured)
            VALUES ('big', 'svc-long', 'service', 'alert.fired', 3, '2026-11-12T00:00:00Z', '{}',
                    jsonb_build_object('log', repeat('é', 50000)), '{}');
            INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured)
            SELECT 'big', 'svc-wide', 'service', 'alert.fired', 3, '2026-11-13T00:00:00Z', '{}',
                   jsonb_object_agg('k' || g, 'value ' || g), '{}'
            FROM generate_series(1, 5000) g;
            "#,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn pages_stop_at_the_byte_budget_and_the_cursor_loses_nothing() {
    let db = fixture().await;
    bulky(&db).await;
    let budget = 64 * 1024;
    let (app, _) = app_with_budget(db.store("mcp_endpoint", Duration::from_secs(5)), budget);
    let big = token(Some("big"));
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"entity_id": "svc-big", "include_payload": true, "limit": 50});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let a = call(&app, &big, "query_events", args).await;
        // Each page fits the budget whole, so the outer guard never had to step in.
        assert!(a.raw.len() <= budget, "page of {} bytes", a.raw.len());
        let page = ok(&a);
        pages += 1;
        assert!(page["count"].as_u64().unwrap() >= 1, "{page}");
        seen.extend(ids(page));
        if page["truncated"] == false {
            assert_eq!(page["next_cursor"], Value::Null);
            break;
        }
        assert_eq!(page["stopped_by"], "bytes");
        cursor = Some(page["next_cursor"].as_str().unwrap().to_owned());
        assert!(pages < 40, "no progress");
    }
    // 40 events at ~10 KB each (counted twice) cannot fit one 64 KiB page: several pages, every event once.
    assert!(pages > 2, "{pages} pages");
    let mut unique = seen.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (40, 40));

    // Without payloads the same 40 events fit one page, cut by the row limit instead.
    let a = call(
        &app,
        &big,
        "query_events",
        json!({"entity_id": "svc-big", "limit": 10}),
    )
    .await;
    assert_eq!(ok(&a)["stopped_by"], "limit");
    assert_eq!(ok(&a)["count"], 10);
}

#[tokio::test]
async fn long_values_are_cut_with_a_marker_and_huge_payloads_are_left_to_get_event() {
    let db = fixture().await;
    bulky(&db).await;
    let (app, _) = app_with_budget(db.store("mcp_endpoint", Duration::from_secs(5)), 256 * 1024);
    let big = token(Some("big"));
    let a = call(
        &app,
        &big,
        "query_events",
        json!({"entity_id": "svc-long", "include_payload": true}),
    )
    .await;
    let page = ok(&a);
    let log = page["events"][0]["payload"]["log"].as_str().unwrap();
    assert!(
        log.len() < 1100 && log.ends_with("…[cut: 100000 bytes in all]"),
        "{}",
        &log[log.len() - 60..]
    );
    assert_eq!(page["shortened_values"], 1);
    let id = page["events"][0]["id"].as_i64().unwrap();
    let one = call(&app, &big, "get_event", json!({"id": id})).await;
    let full = ok(&one)["event"]["payload"]["log"]
        .as_str()
        .unwrap()
        .to_owned();
    // get_event allows 32 KiB per value: still cut (the value is 100 KB), but much later.
    assert!(full.len() > 32_000 && full.contains("[cut: 100000 bytes in all]"));

    // A payload of thousands of short values cannot be cut per value: it is left out of
    // the list with a pointer to get_event, and the page still arrives.
    let wide = call(
        &app,
        &big,
        "query_events",
        json!({"entity_id": "svc-wide", "include_payload": true}),
    )
    .await;
    let event = &ok(&wide)["events"][0];
    let omitted = event["payload"]["omitted"].as_str().unwrap();
    assert!(omitted.contains("get_event"), "{omitted}");
}

#[tokio::test]
async fn a_tool_cannot_run_past_its_own_cap_whatever_the_invocation_has_left() {
    // A tool that reports how much time it was given.
    let reporting = |name: &str| {
        ToolDef::new(
            name,
            "Reports the time it was given",
            json!({"type": "object"}),
            |_, ctx: RequestContext| async move {
                let left = ctx
                    .deadline
                    .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64);
                Ok(Outcome::Complete(CallToolResult::structured(
                    json!({ "left_ms": left }),
                )))
            },
        )
    };
    let mut tools = Tools::new();
    tools
        .register(reporting("remaining").max_duration(Duration::from_millis(800)))
        .unwrap();
    tools.register(reporting("default")).unwrap();
    let server = Server::builder("t", "1").tools(tools).build().unwrap();
    let left = |name: &'static str, deadline: Option<Instant>| {
        let server = &server;
        async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}).to_string();
            let mut incoming = Incoming::new(body.as_bytes());
            incoming.deadline = deadline;
            let reply = server.handle(incoming).await;
            reply.body_value().unwrap()["result"]["structuredContent"]["left_ms"]
                .as_u64()
                .unwrap()
        }
    };
    let far = Some(Instant::now() + Duration::from_secs(600));
    assert!(left("remaining", far).await <= 800);
    assert!(left("remaining", None).await <= 800);
    // Without a cap of its own a tool gets the default, under API Gateway's 29 s.
    let d = left("default", far).await;
    assert!(d <= 28_000 && d > 20_000, "{d}");
    // An invocation with less time left than the cap keeps its own deadline.
    assert!(left("default", Some(Instant::now() + Duration::from_millis(300))).await <= 300);
}

#[tokio::test]
async fn every_request_leaves_one_log_record_and_tool_calls_leave_metrics() {
    let logs = captured_logs();
    let db = fixture().await;
    let (app, metrics) =
        app_with_budget(db.store("mcp_endpoint", Duration::from_secs(5)), 256 * 1024);
    let acme = token(Some("acme"));
    let a = call(
        &app,
        &acme,
        "query_events",
        json!({"entity_id": "svc-a", "include_payload": true}),
    )
    .await;
    assert_eq!(ok(&a)["count"], 3);
    let expired = {
        let mut c = claims();
        c["exp"] = json!(1);
        keys().rsa.sign(&c)
    };
    assert_eq!(
        call(&app, &expired, "query_events", json!({})).await.status,
        401
    );

    let lines = metrics.lock().unwrap().clone();
    let docs: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tool = docs
        .iter()
        .find(|d| d["Tool"] == "query_events")
        .expect("a tool-call metric line");
    let spec = &tool["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(spec["Namespace"], "EventStoreMcp");
    assert_eq!(spec["Dimensions"], json!([["Tool"], []]));
    let names: Vec<&str> = spec["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Name"].as_str().unwrap())
        .collect();
    for name in &names {
        assert!(tool[*name].is_number(), "{name} has no value: {tool}");
    }
    assert_eq!(tool["Rows"], 3);
    assert_eq!(
        tool["ResponseBytes"].as_u64().unwrap() as usize,
        a.raw.len()
    );
    assert_eq!(
        (
            tool["Truncated"].clone(),
            tool["DeadlineExceeded"].clone(),
            tool["AuthDenied"].clone()
        ),
        (json!(0), json!(0), json!(0))
    );
    assert!(
        docs.iter()
            .any(|d| d["AuthDenied"] == 1 && d["Tool"].is_null()),
        "{lines:?}"
    );

    let text = logs.text();
    let record = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| {
            l["fields"]["message"] == "request"
                && l["fields"]["tool.name"] == "query_events"
                && l["fields"]["rows"] == 3
        })
        .unwrap_or_else(|| panic!("no request record in {text}"));
    let f = &record["fields"];
    assert_eq!(f["http.status"], 200);
    assert_eq!(f["rpc.method"], "tools/call");
    assert_eq!(f["response_bytes"].as_u64().unwrap() as usize, a.raw.len());
    assert_eq!(f["truncated"], false);
    assert!(f["principal"].as_str().is_some_and(|p| p.len() >= 8), "{f}");
    assert!(f["duration_ms"].is_number());
    // Never the token, row data or arguments.
    for secret in [
        acme.rsplit('.').next().unwrap(),
        "p99 latency high",
        "\"k\":2",
        "svc-a\"",
    ] {
        assert!(!text.contains(secret), "logs leak {secret}");
        assert!(
            !lines.iter().any(|l| l.contains(secret)),
            "metrics leak {secret}"
        );
    }
}

#[tokio::test]
async fn long_bucket_lists_stop_at_the_budget_and_say_so() {
    let db = fixture().await;
    db.admin
        .batch_execute(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured)
             SELECT 'busy', 'svc', 'service', 'alert.fired', 3,
                    '2026-11-20T00:00:00Z'::timestamptz + (g || ' minutes')::interval, '{}', '{}', '{}'
             FROM generate_series(0, 299) g",
        )
        .await
        .unwrap();
    let budget = 8 * 1024;
    let (app, _) = app_with_budget(db.store("mcp_endpoint", Duration::from_secs(5)), budget);
    let busy = token(Some("busy"));
    let args = json!({"since": "2026-11-20T00:00:00Z", "until": "2026-11-20T05:00:00Z", "bucket": "minute", "group_by": "event_type"});
    let a = call(&app, &busy, "count_events", args).await;
    assert!(a.raw.len() <= budget, "{} bytes", a.raw.len());
    let s = ok(&a);
    assert_eq!(s["truncated"], true);
    let buckets = s["buckets"].as_array().unwrap();
    assert!(
        !buckets.is_empty() && buckets.len() < 300,
        "{}",
        buckets.len()
    );
    let sum: i64 = buckets.iter().map(|b| b["count"].as_i64().unwrap()).sum();
    assert_eq!(s["total_events"].as_i64().unwrap(), sum);
    // The same window by hour fits.
    let a = call(
        &app,
        &busy,
        "count_events",
        json!({"since": "2026-11-20T00:00:00Z", "until": "2026-11-20T05:00:00Z"}),
    )
    .await;
    assert_eq!(ok(&a)["truncated"], false);
    assert_eq!(ok(&a)["total_events"], 300);
}

/// A body that ignores its deadline is stopped by the engine: the caller gets the structured
/// `deadline_exceeded` result (phase `tool`, also as an embedded JSON resource), the record
/// says so, and whatever the body would have returned later is discarded.
#[tokio::test]
async fn a_tool_that_ignores_its_deadline_is_stopped_by_the_engine() {
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let mut tools = Tools::new();
    tools
        .register(
            ToolDef::new(
                "stubborn",
                "Sleeps whatever its deadline says",
                json!({"type": "object"}),
                move |_, _| {
                    let flag = flag.clone();
                    async move {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        flag.store(true, Ordering::SeqCst);
                        Ok(Outcome::Complete(CallToolResult::text("too late")))
                    }
                },
            )
            .max_duration(Duration::from_millis(200)),
        )
        .unwrap();
    let server = Server::builder("t", "1").tools(tools).build().unwrap();
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stubborn"}})
            .to_string();
    let started = Instant::now();
    let reply = server.handle(Incoming::new(body.as_bytes())).await;
    // Stopped near its 200 ms cap, not after the body's 60 s.
    assert!(started.elapsed() < Duration::from_secs(30));
    let record = reply.call.clone().unwrap();
    assert_eq!(record.stats.deadline_phase, Some("tool"));
    assert!(record.is_error);
    let result = &reply.body_value().unwrap()["result"];
    assert_eq!(result["isError"], true);
    let detail = &result["structuredContent"];
    assert_eq!(detail["code"], "deadline_exceeded");
    assert_eq!(detail["phase"], "tool");
    assert_eq!(detail["tool"], "stubborn");
    assert!(detail["budget_ms"].as_u64().unwrap() <= 200, "{detail}");
    let embedded = &result["content"][1];
    assert_eq!(embedded["type"], "resource");
    assert_eq!(
        embedded["resource"]["uri"],
        "tool-error://deadline_exceeded"
    );
    assert_eq!(embedded["resource"]["mimeType"], "application/json");
    let text: Value = serde_json::from_str(embedded["resource"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, detail);
    assert!(
        !finished.load(Ordering::SeqCst),
        "the late body was dropped"
    );
}

/// Every tool's read is one round trip to the proxy: `BEGIN`, the settings, the statements
/// and `COMMIT` leave in one flight (the searches read the query's shape in the same
/// statement as the search). Counted at a proxy in front of PgBouncer (TLS hides the
/// statements, not who speaks when).
#[tokio::test]
async fn every_tool_reads_in_one_round_trip() {
    let db = fixture().await;
    let proxy = FaultProxy::start(pgbouncer().0).await;
    let store = db.store_via("mcp_endpoint", proxy.port, Duration::from_secs(5));
    let (app, _) = app_with_budget(store.clone(), 256 * 1024);
    let acme = token(Some("acme"));
    // The first call connects (TLS, authentication, the role check): not counted.
    ok(&call(&app, &acme, "describe_data", json!({})).await);
    let first: i64 = db
        .admin
        .query_one("SELECT min(id) FROM events WHERE tenant_id = 'acme'", &[])
        .await
        .unwrap()
        .get(0);
    let window = json!({"since": "2026-10-01T00:00:00Z", "until": "2026-12-01T00:00:00Z"});
    // Every call below must take exactly one round trip.
    let cases = [
        ("describe_data", json!({})),
        ("query_events", json!({})),
        // A page that stops before its rows do: the rows it leaves are discarded, and the
        // COMMIT sent with the statement is answered after them.
        ("query_events", json!({"limit": 1})),
        ("get_event", json!({"id": first})),
        ("get_entity_state", json!({"entity_id": "svc-a"})),
        ("summarize_window", window),
        (
            "count_events",
            json!({"since": "2026-10-01T00:00:00Z", "until": "2026-12-01T00:00:00Z", "bucket": "day"}),
        ),
        ("fetch", json!({"id": first.to_string()})),
        (
            "search_events",
            json!({"query": "checkout", "since": "2026-10-01T00:00:00Z", "until": "2026-12-01T00:00:00Z"}),
        ),
        ("search", json!({"query": "checkout"})),
    ];
    // Every tool the server lists is measured here: a new tool joins this list.
    let bearer = format!("Bearer {acme}");
    let listed = send(
        &app,
        post_json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        ),
    )
    .await;
    let mut listed: Vec<&str> = listed.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut measured: Vec<&str> = cases.iter().map(|(tool, _)| *tool).collect();
    listed.sort_unstable();
    measured.sort_unstable();
    measured.dedup();
    assert_eq!(measured, listed);
    for (tool, args) in cases {
        let before = proxy.turns();
        let answer = call(&app, &acme, tool, args.clone()).await;
        ok(&answer);
        assert_eq!(proxy.turns() - before, 1, "{tool} {args}");
    }
    // A refused search is the same one round trip (the statement says why it refused).
    let before = proxy.turns();
    let refused = call(&app, &acme, "search_events", json!({"query": "-checkout"})).await;
    assert!(
        tool_error(&refused).contains("only excludes"),
        "{refused:?}"
    );
    assert_eq!(proxy.turns() - before, 1);
    assert_eq!(proxy.live(), 1, "one connection served every call");

    // A body that needs a statement's rows before its next one is committed by the read
    // itself, one round trip later.
    let before = proxy.turns();
    let rows = store
        .db
        .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
            Box::pin(async move { tx.query("SELECT 1", &[]).await })
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(proxy.turns() - before, 2);

    // A last statement that fails is rolled back by the COMMIT sent with it: the next read
    // needs no ROLLBACK first, and still sees its rows.
    let failed = store
        .db
        .read("acme", Instant::now() + Duration::from_secs(5), |tx| {
            Box::pin(async move { tx.query_and_commit("SELECT 1 / 0", &[]).await })
        })
        .await;
    assert!(matches!(failed, Err(DbError::Query(_))), "{failed:?}");
    let before = proxy.turns();
    assert_eq!(
        ok(&call(&app, &acme, "query_events", json!({})).await)["count"],
        5
    );
    assert_eq!(proxy.turns() - before, 1);
}
