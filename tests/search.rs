//! Full-text search (`search_events`) and the ChatGPT pair (`search`, `fetch`) against a
//! real database through PgBouncer: answers checked against the rows (the words are really
//! there, no other tenant's row), the query language's edge cases, paging, links, and the
//! search index in use at 100,000 events.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use mcp::App;
use mcp_tools::{EventLinks, Store};
use serde_json::{Value, json};
use tokio_postgres::{AsyncMessage, NoTls};

use crate::support::auth::{app_serving, auth_config, keys, static_keys};
use crate::support::db::{ADMIN, TestDb, call, events_rows_read, fixture, ok, token, tool_error};
use crate::support::http::{post_json, send};

/// The fixture's events are all in November 2026.
const NOVEMBER: (&str, &str) = ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");

fn app_with_links(store: Arc<Store>) -> App {
    let server =
        mcp::production_server(store, mcp_protocol::server::DEFAULT_RESPONSE_BUDGET).unwrap();
    app_serving(auth_config(static_keys(&[&keys().rsa])), server)
}

fn app(db: &TestDb) -> App {
    app_with_links(db.store("mcp_endpoint", Duration::from_secs(5)))
}

async fn search_events(app: &App, tenant: &str, args: Value) -> crate::support::http::Answer {
    call(app, &token(Some(tenant)), "search_events", args).await
}

/// A tool call by `tenant` from a client that keeps `bytes` for the answer (the budget hint
/// in `_meta`).
async fn call_with_budget(
    app: &App,
    tenant: &str,
    tool: &str,
    args: Value,
    bytes: usize,
) -> crate::support::http::Answer {
    let bearer = format!("Bearer {}", token(Some(tenant)));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": args,
        "_meta": { mcp_protocol::budget::HINT_META: bytes }}});
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    send(app, post_json(&body, &headers)).await
}

fn november(query: &str) -> Value {
    json!({ "query": query, "since": NOVEMBER.0, "until": NOVEMBER.1 })
}

fn hit_ids(v: &Value) -> Vec<i64> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

/// Every id is a row of `tenant` whose stored text matches `query` (asked of the database
/// as its administrator, outside row-level security).
async fn assert_tenant_matches(db: &TestDb, tenant: &str, query: &str, ids: &[i64]) {
    for id in ids {
        let row = db
            .admin
            .query_one(
                "SELECT tenant_id, search @@ websearch_to_tsquery('english', $2) \
                 FROM events WHERE id = $1",
                &[id, &query],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), tenant, "event {id}");
        assert!(row.get::<_, bool>(1), "event {id} does not match {query:?}");
    }
}

#[tokio::test]
async fn search_events_finds_the_words_in_the_tenants_rows_only() {
    let db = fixture().await;
    let app = app(&db);

    let a = search_events(&app, "acme", november("latency")).await;
    let found = ok(&a);
    let ids = hit_ids(found);
    assert_eq!(ids.len(), 1, "{found}");
    assert_tenant_matches(&db, "acme", "latency", &ids).await;
    let hit = &found["results"][0];
    assert_eq!(hit["entity_id"], "svc-a");
    assert_eq!(hit["event_type"], "alert.fired");
    assert_eq!(hit["severity"], "error");
    assert!(
        hit["snippet"].as_str().unwrap().contains("**latency**"),
        "{hit}"
    );
    assert_eq!(found["window"]["since"], NOVEMBER.0);
    assert_eq!(found["truncated"], false);
    assert_eq!(found["next_cursor"], Value::Null);

    // Word forms: "incidents declared" finds "incident declared".
    let a = search_events(&app, "acme", november("incidents declared")).await;
    let ids = hit_ids(ok(&a));
    assert_eq!(ids.len(), 1);
    assert_tenant_matches(&db, "acme", "incidents declared", &ids).await;

    // Another tenant's words are not found, and its own rows are found by it alone.
    let a = search_events(&app, "acme", november("SECRET-GLOBEX")).await;
    assert_eq!(ok(&a)["count"], 0);
    assert!(!a.text_contains("SECRET-GLOBEX summary"), "{a:?}");
    let a = search_events(&app, "globex", november("SECRET-GLOBEX")).await;
    let ids = hit_ids(ok(&a));
    assert_eq!(ids.len(), 2);
    assert_tenant_matches(&db, "globex", "SECRET-GLOBEX", &ids).await;

    // Type names and structured text are searched too: "deploy" finds deploy.finished.
    let a = search_events(&app, "acme", november("deploy")).await;
    let ids = hit_ids(ok(&a));
    assert_eq!(ids.len(), 2);
    assert_tenant_matches(&db, "acme", "deploy", &ids).await;
}

#[tokio::test]
async fn the_query_language_is_web_search_and_never_a_syntax_error() {
    let db = fixture().await;
    let app = app(&db);
    let count = db.count().await;
    let ids_for = |q: &'static str| {
        let app = &app;
        async move { hit_ids(ok(&search_events(app, "acme", november(q)).await)) }
    };
    // Alternatives, exclusions, phrases.
    let either = ids_for("latency or \"error rate\"").await;
    assert_eq!(either.len(), 2);
    assert_tenant_matches(&db, "acme", "latency or \"error rate\"", &either).await;
    let alerts = ids_for("alert").await;
    let not_p99 = ids_for("alert -p99").await;
    assert_eq!(alerts.len(), 2);
    assert_eq!(not_p99.len(), 1);
    assert!(alerts.contains(&not_p99[0]));
    assert!(ids_for("\"rate error\"").await.is_empty());
    // Text that would be syntax anywhere else is only words here.
    for odd in [
        "'); DROP TABLE events; --",
        "checkout & | ! <-> :* (",
        "svc-a:*",
        "ünïcödé 🙂",
    ] {
        let a = search_events(&app, "acme", november(odd)).await;
        assert_eq!(a.status, 200, "{odd}: {a:?}");
        assert_ne!(a.result()["isError"], true, "{odd}: {a:?}");
    }
    assert_eq!(db.count().await, count, "nothing was written");

    // The input schema refuses an empty or overlong query before the tool runs; the tool
    // itself refuses what the schema cannot see.
    for (query, says) in [
        ("", "shorter than 1 character"),
        ("   ", "empty"),
        ("the and of", "stop words"),
        ("...", "stop words"),
        ("-deploy", "only excludes"),
        (&"timeout ".repeat(30), "longer than 200 characters"),
    ] {
        let a = search_events(&app, "acme", november(query)).await;
        let text = tool_error(&a);
        assert!(text.contains(says), "{query:?}: {text}");
    }
    let a = search_events(
        &app,
        "acme",
        json!({"query": "alert", "since": "2020-01-01T00:00:00Z", "until": NOVEMBER.1}),
    )
    .await;
    assert!(tool_error(&a).contains("366 days"));
    // The default window is the last 30 days, which the November fixture is outside of.
    let a = search_events(&app, "acme", json!({"query": "alert"})).await;
    let found = ok(&a);
    assert_eq!(found["count"], 0);
    let since: jiff::Timestamp = found["window"]["since"].as_str().unwrap().parse().unwrap();
    let until: jiff::Timestamp = found["window"]["until"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        until.duration_since(since),
        jiff::SignedDuration::from_hours(720)
    );
}

#[tokio::test]
async fn results_rank_by_relevance_then_recency_and_pages_follow_cursors() {
    let db = fixture().await;
    // More matches than a page: 30 events mentioning "checkout", some in the summary
    // (weight A), some only in structured text (weight C).
    db.admin
        .batch_execute(
            "INSERT INTO event_types (name, description, field_schema) VALUES ('error.logged', 'e', '{}'); \
             INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, structured, ai_summary) \
             SELECT 'acme', 'svc-checkout', 'service', 'error.logged', 4, \
                    TIMESTAMPTZ '2026-11-10T00:00:00Z' + make_interval(mins => i), \
                    jsonb_build_object('message', 'checkout failed #' || i), \
                    CASE WHEN i % 3 = 0 THEN 'checkout timeout number ' || i END \
             FROM generate_series(1, 30) AS i",
        )
        .await
        .unwrap();
    let app = app(&db);
    let all = search_events(
        &app,
        "acme",
        json!({"query": "checkout", "since": NOVEMBER.0, "until": NOVEMBER.1, "limit": 50}),
    )
    .await;
    let all = ok(&all).clone();
    let ids = hit_ids(&all);
    assert_eq!(ids.len(), 30);
    let ranked: Vec<(f64, String)> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rank"].as_f64().unwrap(),
                r["occurred_at"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for pair in ranked.windows(2) {
        let ((r1, t1), (r2, t2)) = (&pair[0], &pair[1]);
        assert!(r1 > r2 || (r1 == r2 && t1 > t2), "{ranked:?}");
    }
    // The ten with the word in their summary come first.
    let summarised: BTreeSet<i64> = db
        .admin
        .query(
            "SELECT id FROM events WHERE ai_summary LIKE 'checkout timeout%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        ids[..10].iter().copied().collect::<BTreeSet<_>>(),
        summarised
    );

    // Pages of 7 walk the same list, in order, without repeats or gaps.
    let mut walked = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        assert!(page < 10, "the walk does not end");
        let mut args =
            json!({"query": "checkout", "since": NOVEMBER.0, "until": NOVEMBER.1, "limit": 7});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let a = search_events(&app, "acme", args).await;
        let found = ok(&a);
        walked.extend(hit_ids(found));
        cursor = found["next_cursor"].clone();
        assert_eq!(found["truncated"], !cursor.is_null());
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(walked, ids);

    // A client that keeps 4 KiB gets pages cut at its budget rather than at the limit, and
    // the cursors still walk the same list.
    let mut walked = Vec::new();
    let mut cursor = Value::Null;
    for page in 0.. {
        assert!(page < 30, "the walk does not end");
        let mut args =
            json!({"query": "checkout", "since": NOVEMBER.0, "until": NOVEMBER.1, "limit": 50});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let a = call_with_budget(&app, "acme", "search_events", args, 4096).await;
        assert!(a.raw.len() <= 4096, "{} bytes", a.raw.len());
        let found = ok(&a);
        let got = hit_ids(found);
        assert!(!got.is_empty() && got.len() < 30, "{found}");
        walked.extend(got);
        cursor = found["next_cursor"].clone();
        assert_eq!(found["truncated"], !cursor.is_null());
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(walked, ids);

    // A cursor continues only its own query, for its own tenant.
    let first = search_events(
        &app,
        "acme",
        json!({"query": "checkout", "since": NOVEMBER.0, "until": NOVEMBER.1, "limit": 7}),
    )
    .await;
    let cursor = ok(&first)["next_cursor"].clone();
    let other = search_events(
        &app,
        "acme",
        json!({"query": "timeout", "since": NOVEMBER.0, "until": NOVEMBER.1, "cursor": cursor}),
    )
    .await;
    assert!(tool_error(&other).contains("different query"));
    let stolen = search_events(
        &app,
        "globex",
        json!({"query": "checkout", "since": NOVEMBER.0, "until": NOVEMBER.1, "limit": 7, "cursor": cursor}),
    )
    .await;
    assert!(tool_error(&stolen).contains("Invalid cursor"));
}

/// The one text block of a result, parsed: ChatGPT reads this JSON.
#[tokio::test]
async fn a_phrase_never_spans_two_fields_and_the_migration_recomputes_stored_documents() {
    let db = fixture().await;
    let app = app(&db);
    // acme's deploy.finished events have no summary; svc-a's alert ends "... on svc-a" and
    // its type is alert.fired: "svc alert" would join the summary's end and the type's start.
    let across = search_events(&app, "acme", november("\"svc alert\"")).await;
    assert_eq!(hit_ids(ok(&across)), Vec::<i64>::new(), "{across:?}");
    // Within one field a phrase still matches.
    let within = search_events(&app, "acme", november("\"p99 latency\"")).await;
    assert_eq!(hit_ids(ok(&within)).len(), 1, "{within:?}");

    // Documents stored before the gaps (computed the old way, the trigger held off) are
    // recomputed by the migration, in its batches, when it runs.
    db.admin
        .batch_execute(
            "ALTER TABLE events DISABLE TRIGGER events_fill_search; \
             UPDATE events SET search = setweight(to_tsvector('english', coalesce(ai_summary, '')), 'A') \
                 || setweight(to_tsvector('english', concat_ws(' ', translate(event_type, '._', '  '), \
                        entity_type, entity_id, array_to_string(tags, ' '))), 'B'); \
             ALTER TABLE events ENABLE TRIGGER events_fill_search; \
             DELETE FROM schema_migrations WHERE version = '0006_search_field_gaps'",
        )
        .await
        .unwrap();
    let old = search_events(&app, "acme", november("\"svc alert\"")).await;
    assert_eq!(
        hit_ids(ok(&old)).len(),
        1,
        "the old document joins the fields: {old:?}"
    );
    let mut admin = crate::support::db::admin(&db.name).await;
    let applied = mcp_db::migrate(&mut admin).await.unwrap();
    assert_eq!(applied, ["0006_search_field_gaps"]);
    let again = search_events(&app, "acme", november("\"svc alert\"")).await;
    assert_eq!(hit_ids(ok(&again)), Vec::<i64>::new(), "{again:?}");
}

#[tokio::test]
async fn a_hit_through_its_type_entity_or_tags_has_its_match_marked() {
    let db = fixture().await;
    let app = app(&db);
    // "paging" is a tag of svc-a's events and in none of their summaries; "svc-b" is an
    // entity id; "deploy" is in an event type only.
    for (query, marked) in [
        ("paging", "**paging**"),
        ("svc-b", "**svc**"),
        ("deploy", "**deploy**"),
    ] {
        let a = search_events(&app, "acme", november(query)).await;
        let found = ok(&a);
        let results = found["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{query}: {found}");
        for hit in results {
            let snippet = hit["snippet"].as_str().unwrap();
            assert!(snippet.contains(marked), "{query}: {snippet}");
        }
    }
}

#[tokio::test]
async fn a_small_budget_gets_fewer_hits_never_a_refusal_whatever_the_query() {
    let db = fixture().await;
    db.admin
        .batch_execute(
            "INSERT INTO event_types (name, description, field_schema) VALUES ('error.logged', 'e', '{}'); \
             INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
             SELECT 'acme', 'svc-checkout-' || i, 'service', 'error.logged', 4, \
                    now() - make_interval(mins => i), 'checkout timeout number ' || i \
             FROM generate_series(1, 40) AS i",
        )
        .await
        .unwrap();
    let app = app(&db);
    // The longest query there is, in 4-byte characters: the result repeats it, twice.
    let long = format!("checkout or {}", "\u{1F525}".repeat(188));
    assert_eq!(long.chars().count(), 200);
    for (tool, args) in [
        ("search_events", json!({"query": long, "limit": 50})),
        ("search", json!({"query": long})),
        ("search", json!({"query": "checkout"})),
    ] {
        let a = call_with_budget(&app, "acme", tool, args, 4096).await;
        assert!(a.raw.len() <= 4096, "{tool}: {} bytes", a.raw.len());
        let found = ok(&a);
        let results = found["results"].as_array().unwrap();
        assert!(!results.is_empty() && results.len() < 20, "{tool}: {found}");
    }
}

fn text_json(a: &crate::support::http::Answer) -> Value {
    let content = a.result()["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{a:?}");
    assert_eq!(content[0]["type"], "text");
    serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn search_and_fetch_answer_in_the_shape_chatgpt_documents() {
    let db = fixture().await;
    let store = db.store("mcp_endpoint", Duration::from_secs(5));
    let app = app_with_links(store);
    // `search` looks at the last 30 days: move the fixture there.
    db.admin
        .batch_execute("UPDATE events SET occurred_at = occurred_at + (now() - TIMESTAMPTZ '2026-11-03T00:00:00Z')")
        .await
        .unwrap();
    let acme = token(Some("acme"));

    let a = call(&app, &acme, "search", json!({"query": "svc-a"})).await;
    let found = ok(&a).clone();
    assert_eq!(
        text_json(&a),
        found,
        "the text block is the structured result"
    );
    assert_eq!(found.as_object().unwrap().len(), 1, "only results: {found}");
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{found}");
    let mut ids = Vec::new();
    for r in results {
        let id = r["id"].as_str().unwrap();
        assert_eq!(r["url"], format!("event-store://events/{id}"));
        assert!(r["title"].as_str().unwrap().contains(" on svc-a ("), "{r}");
        ids.push(id.parse::<i64>().unwrap());
    }
    assert_tenant_matches(&db, "acme", "svc-a", &ids).await;

    // fetch: by id or by url, the whole event as text, with metadata.
    let incident = db
        .admin
        .query_one(
            "SELECT id FROM events WHERE tenant_id = 'acme' AND event_type = 'incident.opened'",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    for id in [
        incident.to_string(),
        format!("event-store://events/{incident}"),
    ] {
        let a = call(&app, &acme, "fetch", json!({ "id": id })).await;
        let doc = ok(&a).clone();
        assert_eq!(text_json(&a), doc);
        assert_eq!(doc["id"], incident.to_string());
        assert_eq!(doc["url"], format!("event-store://events/{incident}"));
        let text = doc["text"].as_str().unwrap();
        assert!(
            text.starts_with("incident.opened on svc-a (service)"),
            "{text}"
        );
        assert!(
            text.contains("Summary: incident declared for svc-a"),
            "{text}"
        );
        assert!(text.contains("svc-a down"), "{text}");
        assert_eq!(doc["metadata"]["severity"], "critical");
        assert_eq!(doc["metadata"]["tags"], json!(["region:eu", "paging"]));
    }
    // Another tenant's event is not there; junk ids say what an id is.
    let globex_id = db
        .admin
        .query_one("SELECT min(id) FROM events WHERE tenant_id = 'globex'", &[])
        .await
        .unwrap()
        .get::<_, i64>(0);
    let a = call(&app, &acme, "fetch", json!({ "id": globex_id.to_string() })).await;
    assert!(tool_error(&a).contains("No event with id"));
    assert!(!a.text_contains("SECRET"), "{a:?}");
    for junk in ["abc", "0", "-3", "https://evil.example/events/1"] {
        let a = call(&app, &acme, "fetch", json!({ "id": junk })).await;
        assert!(tool_error(&a).contains("is not an event id"), "{junk}");
    }

    // With the deployment's own incident UI, results link there, and fetch takes its URLs.
    let mut store = Arc::try_unwrap(db.store("mcp_endpoint", Duration::from_secs(5)))
        .ok()
        .unwrap();
    store.links = EventLinks::new(Some("https://incidents.example.com/e/{id}?via=mcp")).unwrap();
    let app = app_with_links(Arc::new(store));
    let a = call(&app, &acme, "search", json!({"query": "incident"})).await;
    let url = ok(&a)["results"][0]["url"].as_str().unwrap().to_owned();
    assert_eq!(
        url,
        format!("https://incidents.example.com/e/{incident}?via=mcp")
    );
    let a = call(&app, &acme, "fetch", json!({ "id": url })).await;
    assert_eq!(ok(&a)["id"], incident.to_string());
}

/// The search is one statement that also reads the query's shape (one round trip with its
/// transaction): a query the rule refuses never reaches the ranking, which for a query of
/// exclusions only would rank every event in the window. Read from the statement's own
/// plan, run as the endpoint's role: `search_event_newest` is never executed when refused.
#[tokio::test]
async fn a_refused_query_ranks_nothing() {
    let db = fixture().await;
    let (client, connection) = tokio_postgres::connect(&format!("{ADMIN}/{}", db.name), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(
            "BEGIN READ ONLY; SET LOCAL ROLE mcp_endpoint; \
             SELECT set_config('app.tenant_id', 'acme', true)",
        )
        .await
        .unwrap();
    let since: jiff::Timestamp = NOVEMBER.0.parse().unwrap();
    let until: jiff::Timestamp = NOVEMBER.1.parse().unwrap();
    let explain = format!(
        "EXPLAIN (ANALYZE, FORMAT JSON) {}",
        mcp_tools::SEARCH_EVENTS_SQL
    );
    let run = |query: &'static str| {
        let (client, explain) = (&client, &explain);
        async move {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
                &query,
                &since,
                &until,
                &0i16,
                &None::<f32>,
                &None::<jiff::Timestamp>,
                &None::<i64>,
                &11i64,
                &500i64,
            ];
            let rows = client
                .query(mcp_tools::SEARCH_EVENTS_SQL, &params)
                .await
                .unwrap();
            let refusals: Vec<Option<String>> = rows.iter().map(|r| r.get("refusal")).collect();
            let plan: Value = client.query_one(explain, &params).await.unwrap().get(0);
            (refusals, ranking_loops(&plan))
        }
    };
    for (query, refusal) in [("-deploy", "only_exclusions"), ("the and of", "no_words")] {
        let (refusals, loops) = run(query).await;
        assert_eq!(refusals, [Some(refusal.to_owned())], "{query}");
        assert_eq!(loops, Some(0), "{query}: the ranking ran");
    }
    // The same plan runs the ranking once for a query it accepts (the test can fail).
    let (refusals, loops) = run("alert").await;
    assert_eq!(refusals, [None, None], "two alerts in the fixture");
    assert_eq!(loops, Some(1));
    let (refusals, loops) = run("nothingmatchesthis").await;
    assert_eq!(refusals, [None], "no match is one row without a hit");
    assert_eq!(loops, Some(1));
    client.batch_execute("ROLLBACK").await.unwrap();
}

/// How many times the plan's scan of `search_event_newest` ran (`None`: no such node).
fn ranking_loops(plan: &Value) -> Option<u64> {
    match plan {
        Value::Object(node) => {
            if node.get("Function Name").and_then(Value::as_str) == Some("search_event_newest") {
                return node.get("Actual Loops").and_then(Value::as_u64);
            }
            node.values().find_map(ranking_loops)
        }
        Value::Array(items) => items.iter().find_map(ranking_loops),
        _ => None,
    }
}

#[tokio::test]
async fn search_reads_a_bounded_number_of_rows_at_100_000_events() {
    let db = TestDb::create().await;
    let tenants = ["tenant-a", "tenant-b", "tenant-c"];
    let mut seeding = crate::support::db::admin(&db.name).await;
    let until: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    let inserted = migrate::seed(&mut seeding, &tenants, 33_334, until)
        .await
        .unwrap();
    assert_eq!(inserted, 100_002);
    db.admin.batch_execute("ANALYZE events").await.unwrap();

    // A rare pair of words: few matches, found through the search index.
    let (ids, plans, scans) = ranking_plans(&db, "checkout timeouts").await;
    assert_eq!(ids.len(), 11, "the sample has many checkout timeouts");
    let all = plans.join("\n");
    assert!(
        all.contains(r#"_search_hour""#) && all.contains(r#""Index Name": "events_p"#),
        "the search does not use the search index: {all}"
    );
    assert!(!all.contains(r#""Node Type": "Seq Scan""#), "{all}");
    assert!(scans >= 1, "events_search_hour was scanned {scans} times");
    assert_eq!(ids, newest_ranked(&db, "checkout timeouts").await);

    // A word in a ninth of the events: too many matches to fetch them all, too few for the
    // newest 2,000 events to hold 500. The index is asked for the newest hours' matches
    // only, and they are exactly the newest 500 of the window.
    let (ids, plans, _) = ranking_plans(&db, "checkout").await;
    assert_eq!(ids.len(), 11);
    let all = plans.join("\n");
    assert!(
        plans
            .iter()
            .any(|p| hour_keys_in_index_cond(&serde_json::from_str(p).unwrap())),
        "the index was not asked for the newest hours: {all}"
    );
    let read = read_by(&plans);
    assert!(
        read <= 4_000,
        "the search read {read} rows of events for a word in a ninth of them: {plans:?}"
    );
    assert_eq!(ids, newest_ranked(&db, "checkout").await);

    // A word in two thirds of the events (every service's events): the newest 500 matches
    // are found by reading the newest 2,000 events once, not the tenant's 22,000 matches.
    let (ids, plans, _) = ranking_plans(&db, "service").await;
    assert_eq!(ids, newest_ranked(&db, "service").await);
    let read = read_by(&plans);
    assert!(
        (501..=3_000).contains(&read),
        "the search read {read} rows of events for a common word: {plans:?}"
    );

    // Words that always occur together (a quoted phrase) fool the planner's estimate; the
    // sample does not: the walk reads a few thousand rows, not the index's every match.
    let (ids, plans, _) = ranking_plans(&db, "\"upstream timeout\"").await;
    assert_eq!(ids, newest_ranked(&db, "\"upstream timeout\"").await);
    let read = read_by(&plans);
    assert!(
        read <= 20_000,
        "the search read {read} rows for a phrase: {plans:?}"
    );
}

/// Whether a plan (JSON) asks the search index for a set of hours: an index condition on
/// `events_search_hour` with the hours' keys.
fn hour_keys_in_index_cond(plan: &Value) -> bool {
    match plan {
        Value::Object(node) => {
            // Each month's own copy of the index: events_pYYYY_MM_search_hour.
            let here = node
                .get("Index Name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.ends_with("_search_hour"))
                && node
                    .get("Index Cond")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains("event_hour_key") && c.contains("&&"));
            here || node.values().any(hour_keys_in_index_cond)
        }
        Value::Array(items) => items.iter().any(hour_keys_in_index_cond),
        _ => false,
    }
}

/// Rows of `events` the plans (JSON) read, together.
fn read_by(plans: &[String]) -> u64 {
    plans
        .iter()
        .map(|p| events_rows_read(&serde_json::from_str(p).unwrap()))
        .sum()
}

/// What `ranking_plans` must answer, computed from `events` directly: of tenant-a's newest
/// 500 matches in November, the 11 of the best rank (newest first among equals).
async fn newest_ranked(db: &TestDb, query: &str) -> Vec<i64> {
    db.admin
        .query(
            "SELECT id FROM (SELECT id, occurred_at, search FROM events \
               WHERE tenant_id = 'tenant-a' AND search @@ websearch_to_tsquery('english', $1) \
                 AND occurred_at >= '2026-11-01T00:00:00Z' AND occurred_at < '2026-12-01T00:00:00Z' \
               ORDER BY occurred_at DESC, id DESC LIMIT 500) AS newest \
             ORDER BY ts_rank_cd(search, websearch_to_tsquery('english', $1)) DESC, occurred_at DESC, id DESC \
             LIMIT 11",
            &[&query],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Runs `search_event_newest` for `query` (tenant-a, November, 500 candidates, a page of
/// 10 and its probe) as the endpoint's role; returns its ids in order, the plans of the
/// statements inside it as auto_explain reports them (JSON), and how often the search index
/// was scanned.
async fn ranking_plans(db: &TestDb, query: &str) -> (Vec<i64>, Vec<String>, i64) {
    let (client, mut connection) = tokio_postgres::connect(&format!("{ADMIN}/{}", db.name), NoTls)
        .await
        .unwrap();
    let (tx, mut notices) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notice(n)) => {
                    let _ = tx.send(n.message().to_owned());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    client
        .batch_execute(
            "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
             SET auto_explain.log_nested_statements = on; SET auto_explain.log_format = 'json'; \
             SET auto_explain.log_analyze = on; \
             SET auto_explain.log_level = 'notice'; SET client_min_messages = 'notice'; \
             BEGIN READ ONLY; SET LOCAL ROLE mcp_endpoint; \
             SELECT set_config('app.tenant_id', 'tenant-a', true)",
        )
        .await
        .unwrap();
    let rows = client
        .query(
            "SELECT id, rank FROM search_event_newest($1, \
             TIMESTAMPTZ '2026-11-01T00:00:00Z', TIMESTAMPTZ '2026-12-01T00:00:00Z', 0::int2, \
             NULL, NULL, NULL, 11, 500)",
            &[&query],
        )
        .await
        .unwrap();
    let scans: i64 = client
        .query_one(
            "SELECT coalesce(sum(pg_stat_get_xact_numscans(relid)), 0)::int8 \
             FROM pg_partition_tree('events_search_hour') WHERE isleaf",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    client.batch_execute("COMMIT").await.unwrap();
    drop(client);
    let mut plans = Vec::new();
    while let Some(n) = notices.recv().await {
        plans.push(n);
    }
    // auto_explain's notice is "duration: ... plan:\n{json}"; the statements inside the
    // function, not the call itself.
    let inner: Vec<String> = plans
        .iter()
        .filter(|p| !p.contains("search_event_newest("))
        .filter_map(|p| p.find('{').map(|i| p[i..].to_owned()))
        .collect();
    assert!(
        inner.len() >= 2,
        "no plans of the statements inside: {plans:?}"
    );
    (rows.iter().map(|r| r.get(0)).collect(), inner, scans)
}

/// Only the newest 500 matches are ranked; when more match, `older_matches_until` is the
/// `until` that reaches the older ones, and searching with it finds exactly those.
#[tokio::test]
async fn a_common_word_ranks_the_newest_500_and_says_where_the_older_are() {
    let db = fixture().await;
    // 620 events about zebras, one a minute from 2026-11-10T00:00Z; the ones on even
    // minutes say it twice (a better rank), so ranking and recency disagree.
    db.admin
        .batch_execute(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
             SELECT 'acme', 'svc-z', 'service', 'alert.fired', 3, \
                    TIMESTAMPTZ '2026-11-10T00:00:00Z' + make_interval(mins => i), \
                    CASE WHEN i % 2 = 0 THEN 'zebra zebra crossing' ELSE 'zebra seen' END \
             FROM generate_series(0, 619) AS i",
        )
        .await
        .unwrap();
    let app = app(&db);
    let mut args = november("zebra");
    args["limit"] = json!(50);
    let first = ok(&search_events(&app, "acme", args.clone()).await).clone();
    // The 501st newest is minute 119: the older ones start one microsecond after it.
    assert_eq!(first["older_matches_until"], "2026-11-10T01:59:00.000001Z");
    // Every ranked hit is among the newest 500 (minutes 120 to 619), best first.
    let mut seen = Vec::new();
    let mut page = first;
    loop {
        for hit in page["results"].as_array().unwrap() {
            seen.push(hit["occurred_at"].as_str().unwrap().to_owned());
        }
        let Some(cursor) = page["next_cursor"].as_str() else {
            break;
        };
        let mut next = args.clone();
        next["cursor"] = json!(cursor);
        page = ok(&search_events(&app, "acme", next).await).clone();
    }
    assert_eq!(seen.len(), 500);
    assert!(seen.iter().all(|at| at.as_str() >= "2026-11-10T02:00:00Z"));
    // Best first (the 250 that say it twice, newest first), then the others.
    assert_eq!(seen[0], "2026-11-10T10:18:00Z");
    assert_eq!(seen[249], "2026-11-10T02:00:00Z");
    assert_eq!(seen[250], "2026-11-10T10:19:00Z");
    // The older matches, through the `until` the answer gave: minutes 0 to 119, all ranked.
    let mut older = json!({"query": "zebra", "since": NOVEMBER.0, "until": "2026-11-10T01:59:00.000001Z", "limit": 50});
    let v = ok(&search_events(&app, "acme", older.clone()).await).clone();
    assert_eq!(v["older_matches_until"], Value::Null);
    assert_eq!(v["count"], 50);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["occurred_at"].as_str().unwrap() <= "2026-11-10T01:59:00Z")
    );
    // A word matched by fewer than 500 events says nothing more.
    older["query"] = json!("incident");
    let v = ok(&search_events(&app, "acme", older).await).clone();
    assert_eq!(v["older_matches_until"], Value::Null);
}
