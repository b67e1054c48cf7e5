//! `events` partitioned by month (migration `0012_events_partitioned`, `mcp_db::partition`):
//! a store with events moves into partitions while readers and writers go on, every tool
//! answers as before, no index is built again and no row is read under the lock; a reader
//! holding the table delays the move, never the readers behind it; retention drops whole
//! months and takes their events out of every count.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use mcp::App;
use serde_json::{Value, json};
use tokio_postgres::Client;

use crate::support::db::{TestDb, admin, call, eventually, ok, rollup_drift, token};

const TENANTS: [&str; 2] = ["tenant-a", "tenant-b"];

/// What every tool answers for each tenant, over the sample's 30 days and the whole store.
async fn answers(app: &App, since: Timestamp, until: Timestamp) -> Vec<Value> {
    let window = json!({"since": since.to_string(), "until": until.to_string()});
    let mut all = Vec::new();
    for tenant in TENANTS {
        let t = token(Some(tenant));
        let mut calls = vec![
            ("describe_data", json!({})),
            ("query_events", json!({"limit": 50})),
            (
                "query_events",
                json!({"entity_id": "svc-checkout-1", "limit": 20}),
            ),
            ("get_entity_state", json!({"entity_id": "svc-checkout-1"})),
        ];
        for (tool, mut args) in [
            (
                "count_events",
                json!({"bucket": "day", "group_by": "event_type"}),
            ),
            (
                "count_events",
                json!({"bucket": "hour", "entity_id": "svc-checkout-1"}),
            ),
            ("summarize_window", json!({})),
            ("search_events", json!({"query": "checkout", "limit": 20})),
            (
                "search_events",
                json!({"query": "\"upstream timeout\"", "limit": 20}),
            ),
        ] {
            args.as_object_mut()
                .unwrap()
                .extend(window.as_object().unwrap().clone());
            calls.push((tool, args));
        }
        for (tool, args) in calls {
            let a = call(app, &t, tool, args.clone()).await;
            all.push(json!({"tool": tool, "args": args, "answer": ok(&a).clone()}));
        }
        let newest = &all[all.len() - 8]["answer"]["events"][0]["id"];
        let a = call(app, &t, "get_event", json!({"id": newest})).await;
        all.push(ok(&a).clone());
    }
    all
}

/// Each index of `table` with the file that holds it: the same file after a change means
/// the index was not built again.
async fn index_files(c: &Client, table: &str) -> Vec<(String, i64)> {
    c.query(
        "SELECT c.relname::text, pg_relation_filenode(c.oid)::int8 FROM pg_index i \
         JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass($1) ORDER BY 1",
        &[&table],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// The partitions of `events` with their bounds, as PostgreSQL prints them.
async fn layout(c: &Client) -> Vec<(String, String)> {
    c.query(
        "SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i \
         JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass ORDER BY c.relname",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

fn month_name(at: Timestamp, months: i32) -> String {
    let first = at
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month()
        .checked_add(jiff::Span::new().months(months))
        .unwrap();
    format!("events_p{}", first.strftime("%Y_%m"))
}

#[tokio::test]
async fn a_store_with_events_moves_into_monthly_partitions_while_readers_and_writers_go_on() {
    // The store as the release before partitioning left it, with the sample's 30 days.
    let db = TestDb::create_through(Some("0011_drop_search_index")).await;
    let until = Timestamp::now();
    let since = until
        .checked_sub(SignedDuration::from_hours(24 * 30))
        .unwrap();
    let mut seeding = admin(&db.name).await;
    migrate::seed(&mut seeding, &TENANTS, 4_000, until)
        .await
        .unwrap();
    let app = db.app();
    let before = answers(&app, since, until).await;
    let files = index_files(&db.admin, "events").await;
    let last_id: i64 = db
        .admin
        .query_one("SELECT max(id) FROM events", &[])
        .await
        .unwrap()
        .get(0);

    // A writer role of the operator's, with its grant and a policy of its own on `events`.
    db.admin
        .batch_execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mcp_test_event_writer') \
                THEN CREATE ROLE mcp_test_event_writer; END IF; END $$; \
             GRANT SELECT, INSERT ON events TO mcp_test_event_writer; \
             CREATE POLICY writer_tenant_b ON events FOR ALL TO mcp_test_event_writer \
                 USING (tenant_id = 'tenant-b') WITH CHECK (tenant_id = 'tenant-b')",
        )
        .await
        .unwrap();
    // Readers of the endpoint's kind and a writer, throughout the move.
    let stop = Arc::new(AtomicBool::new(false));
    let (reads, written) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let reader = {
        let (stop, reads, name) = (stop.clone(), reads.clone(), db.name.clone());
        tokio::spawn(async move {
            let c = admin(&name).await;
            c.batch_execute("SET ROLE mcp_reader; SET statement_timeout = '10s'")
                .await
                .unwrap();
            while !stop.load(Ordering::SeqCst) {
                let tenant = TENANTS[reads.load(Ordering::SeqCst) as usize % 2];
                c.batch_execute(&format!(
                    "BEGIN READ ONLY; SELECT set_config('app.tenant_id', '{tenant}', true); \
                     SELECT count(*) FROM events WHERE occurred_at > now() - interval '1 day'; \
                     SELECT * FROM search_event_newest('checkout', now() - interval '30 days', now(), 0::int2, NULL, NULL, NULL, 11, 500); \
                     COMMIT"
                ))
                .await
                .unwrap();
                reads.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let writer = {
        let (stop, written, name) = (stop.clone(), written.clone(), db.name.clone());
        tokio::spawn(async move {
            let c = admin(&name).await;
            while !stop.load(Ordering::SeqCst) {
                c.execute(
                    "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
                     VALUES ('tenant-b', 'svc-late-1', 'service', 'deploy.finished', 2, now() - interval '1 hour', 'written during the move')",
                    &[],
                )
                .await
                .unwrap();
                written.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let mut migrator = admin(&db.name).await;
    let applied = migrate::migrate(&mut migrator).await.unwrap();
    stop.store(true, Ordering::SeqCst);
    reader.await.unwrap();
    writer.await.unwrap();
    assert_eq!(applied, ["0012_events_partitioned", "0013_search_by_month"]);
    assert!(reads.load(Ordering::SeqCst) > 0 && written.load(Ordering::SeqCst) > 0);

    // The old table is the history partition, up to the month after next; months from there
    // on have partitions of their own, six months past the current one.
    let parts = layout(&db.admin).await;
    let boundary = until
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month()
        .checked_add(jiff::Span::new().months(2))
        .unwrap();
    assert_eq!(parts[0].0, "events_history", "{parts:?}");
    assert_eq!(
        parts[0].1,
        format!("FOR VALUES FROM (MINVALUE) TO ('{boundary} 00:00:00+00')"),
        "{parts:?}"
    );
    let names: Vec<&str> = parts[1..].iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<String> = (2..=6).map(|m| month_name(until, m)).collect();
    assert_eq!(names, expected);
    // Its indexes are the same files under the partition's names: none was built again.
    let moved = index_files(&db.admin, "events_history").await;
    for (old, file) in files.iter().filter(|(n, _)| n != "events_pkey") {
        let new = old.replacen("events_", "events_history_", 1);
        assert!(
            moved.contains(&(new.clone(), *file)),
            "{old} -> {new}: {moved:?}"
        );
    }

    // Every tool answers as before; the rows written during the move are all there, counted
    // by the rollups, with their search documents.
    let late: i64 = db
        .admin
        .query_one(
            "SELECT count(*) FROM events WHERE entity_id = 'svc-late-1' AND search @@ 'move'::tsquery",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(late as u64, written.load(Ordering::SeqCst));
    db.admin
        .execute("DELETE FROM events WHERE entity_id = 'svc-late-1'", &[])
        .await
        .unwrap();
    assert_eq!(answers(&app, since, until).await, before);
    assert_eq!(rollup_drift(&db.admin).await, (0, 0));

    // New events go on from the old ids, into their month's partition, counted and found.
    let later = boundary
        .checked_add(jiff::Span::new().days(3))
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp();
    let row = db
        .admin
        .query_one(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
             VALUES ('tenant-a', 'svc-new-1', 'service', 'deploy.finished', 2, $1, 'a partitioned zebra') \
             RETURNING id, tableoid::regclass::text",
            &[&later],
        )
        .await
        .unwrap();
    let (id, partition): (i64, String) = (row.get(0), row.get(1));
    assert!(id > last_id, "{id} <= {last_id}");
    assert_eq!(partition, month_name(later, 0));
    let found = call(
        &app,
        &token(Some("tenant-a")),
        "search_events",
        json!({"query": "zebra", "since": boundary.to_string() + "T00:00:00Z", "until": later.checked_add(SignedDuration::from_secs(1)).unwrap().to_string()}),
    )
    .await;
    assert_eq!(ok(&found)["results"][0]["id"], json!(id));
    assert_eq!(rollup_drift(&db.admin).await, (0, 0));

    // The writer keeps its grant and its policy on `events`, and has none on the partition.
    let write_as_writer = |tenant: &str| {
        format!(
            "SET ROLE mcp_test_event_writer; \
             INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) \
             VALUES ('{tenant}', 'svc-w', 'service', 'deploy.finished', 1, now())"
        )
    };
    db.admin
        .batch_execute(&write_as_writer("tenant-b"))
        .await
        .unwrap();
    db.admin.batch_execute("RESET ROLE").await.unwrap();
    assert!(
        db.admin
            .batch_execute(&write_as_writer("tenant-a"))
            .await
            .is_err()
    );
    db.admin.batch_execute("RESET ROLE").await.unwrap();
    assert!(
        db.admin
            .batch_execute("SET ROLE mcp_test_event_writer; SELECT 1 FROM events_history LIMIT 1")
            .await
            .is_err()
    );
    db.admin.batch_execute("RESET ROLE").await.unwrap();
    // The reader role reaches rows through `events` only, under its policy.
    let denied = db
        .admin
        .batch_execute("SET ROLE mcp_reader; SELECT 1 FROM events_history LIMIT 1")
        .await;
    assert!(denied.is_err());
    db.admin.batch_execute("RESET ROLE").await.unwrap();
    // Running the migrations again changes nothing.
    assert!(migrate::migrate(&mut migrator).await.unwrap().is_empty());
    assert_eq!(layout(&db.admin).await, parts);
}

#[tokio::test]
async fn a_reader_holding_events_delays_the_move_and_never_the_readers_behind_it() {
    let db = TestDb::create_through(Some("0011_drop_search_index")).await;
    let mut seeding = admin(&db.name).await;
    migrate::seed(&mut seeding, &TENANTS, 200, Timestamp::now())
        .await
        .unwrap();
    // A long report: its transaction holds `events` (ACCESS SHARE) until it commits.
    let long = admin(&db.name).await;
    long.batch_execute("BEGIN; SELECT count(*) FROM events")
        .await
        .unwrap();
    let name = db.name.clone();
    let moving = tokio::spawn(async move {
        let mut migrator = admin(&name).await;
        migrate::migrate(&mut migrator).await
    });
    // The move waits for the lock it needs...
    let waiting = eventually(Duration::from_secs(60), || async {
        let n: i64 = db
            .admin
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE relation = 'events'::regclass AND NOT granted",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        n > 0
    })
    .await;
    assert!(waiting, "the move never asked for the table's lock");
    // ...and a reader arriving behind it gets its answer while the long report still holds
    // the table: the move gives up its place in the queue instead of holding everyone.
    let reader = admin(&db.name).await;
    reader
        .batch_execute("SET statement_timeout = '60s'")
        .await
        .unwrap();
    let n: i64 = reader
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 400);
    assert!(
        !moving.is_finished(),
        "the move did not wait for the long report"
    );
    long.batch_execute("COMMIT").await.unwrap();
    let applied = moving.await.unwrap().unwrap();
    assert_eq!(applied, ["0012_events_partitioned", "0013_search_by_month"]);
    let kind: String = db
        .admin
        .query_one(
            "SELECT relkind::text FROM pg_class WHERE oid = 'events'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "p");
}

/// Inserts one event per (tenant, day) at noon for every day from `from` for `days` days.
async fn daily_events(c: &Client, from: &str, days: i32) -> i64 {
    c.execute(
        "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
         SELECT t, 'svc-' || (d % 3), 'service', (ARRAY['deploy.finished', 'alert.fired'])[1 + d % 2], d % 6, \
                $1::timestamptz + d * interval '1 day' + interval '12 hours', 'day ' || d \
         FROM unnest($2::text[]) t, generate_series(0, $3 - 1) d",
        &[&from.parse::<Timestamp>().unwrap(), &TENANTS.to_vec(), &days],
    )
    .await
    .unwrap() as i64
}

/// Events dated before `at`.
async fn older_than(c: &Client, at: Timestamp) -> i64 {
    c.query_one("SELECT count(*) FROM events WHERE occurred_at < $1", &[&at])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn retention_drops_whole_months_and_takes_their_events_out_of_every_count() {
    let db = TestDb::create().await;
    let mut c = admin(&db.name).await;
    migrate::seed_event_types(&c).await.unwrap();
    // A fresh store's history partition ends twelve months back: events of 2024 go there,
    // and every month since has a partition of its own.
    let now: Timestamp = Timestamp::now();
    let start = now
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month()
        .checked_sub(jiff::Span::new().months(14))
        .unwrap();
    let inserted = daily_events(&c, &format!("{start}T00:00:00Z"), 430).await;
    assert_eq!(inserted, 860);
    let kept_from = now
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .first_of_month()
        .checked_sub(jiff::Span::new().months(3))
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp();
    assert!(older_than(&c, kept_from).await > 0);
    let parts_before = layout(&c).await;

    let report = mcp_db::partition::maintain(&mut c, now, Some(3))
        .await
        .unwrap();
    // Everything that ended before the month three months back: the history and each month.
    let expected: Vec<String> = parts_before
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| n == "events_history" || *n < month_name(now, -3))
        .collect();
    let mut dropped = report.dropped.clone();
    dropped.sort();
    assert_eq!(dropped, expected);
    assert!(report.created.is_empty());
    assert_eq!(older_than(&c, kept_from).await, 0);
    // The rollups lost exactly the dropped events: no bucket before the cutoff, totals equal.
    assert_eq!(rollup_drift(&c).await, (0, 0));
    let stale: i64 = c
        .query_one(
            "SELECT (SELECT count(*) FROM event_counts_hour WHERE hour < $1) \
                  + (SELECT count(*) FROM entity_counts_hour WHERE hour < $1) \
                  + (SELECT count(*) FROM event_counts_minute WHERE minute < $1)",
            &[&kept_from],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stale, 0);
    // The tools agree: the first event is the cutoff's first noon, and a count over the whole
    // period holds the kept events only.
    let app = db.app();
    let t = token(Some("tenant-a"));
    let described = call(&app, &t, "describe_data", json!({})).await;
    let kept: i64 = c
        .query_one(
            "SELECT count(*) FROM events WHERE tenant_id = 'tenant-a'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ok(&described)["total_events"], json!(kept), "{described:?}");
    let since = kept_from
        .checked_sub(SignedDuration::from_hours(24 * 200))
        .unwrap();
    let counted = call(
        &app,
        &t,
        "count_events",
        json!({"since": since.to_string(), "until": now.to_string(), "bucket": "day"}),
    )
    .await;
    let sum: i64 = ok(&counted)["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_i64().unwrap())
        .sum();
    let in_window: i64 = c
        .query_one(
            "SELECT count(*) FROM events WHERE tenant_id = 'tenant-a' AND occurred_at >= $1 AND occurred_at < $2",
            &[&since, &now],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(sum, in_window);
    // An event dated in a dropped month has nowhere to go: the database refuses it.
    let refused = c
        .execute(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) \
             VALUES ('tenant-a', 'svc-0', 'service', 'deploy.finished', 1, $1)",
            &[&kept_from.checked_sub(SignedDuration::from_hours(1)).unwrap()],
        )
        .await;
    assert!(refused.is_err());

    // A run that stopped between detaching a month and dropping it, after taking the first
    // half of its events out of the totals, is finished by the next, without taking that
    // half out twice.
    let victim = month_name(now, -3);
    c.execute(
        "INSERT INTO event_partitions_retiring (name, from_at, to_at) \
         SELECT $1, $2::timestamptz, $2::timestamptz + interval '1 month'",
        &[&victim, &kept_from],
    )
    .await
    .unwrap();
    c.batch_execute(&format!(
        "ALTER TABLE events DETACH PARTITION {victim}; \
         CREATE TEMPORARY TABLE half AS SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) AS id FROM {victim}; \
         WITH gone AS (SELECT tenant_id, entity_type, event_type, severity, count(*) AS n \
                       FROM {victim} WHERE id <= (SELECT id FROM half) GROUP BY 1, 2, 3, 4) \
         UPDATE event_totals t SET events = t.events - g.n FROM gone g \
         WHERE (t.tenant_id, t.entity_type, t.event_type, t.severity) \
             = (g.tenant_id, g.entity_type, g.event_type, g.severity); \
         UPDATE event_partitions_retiring SET counted_to = (SELECT id FROM half) WHERE name = '{victim}'"
    ))
    .await
    .unwrap();
    let report = mcp_db::partition::maintain(&mut c, now, Some(3))
        .await
        .unwrap();
    assert_eq!(report.dropped, [victim]);
    assert_eq!(rollup_drift(&c).await, (0, 0));
    // Nothing more to do.
    let again = mcp_db::partition::maintain(&mut c, now, Some(3))
        .await
        .unwrap();
    assert_eq!(again, mcp_db::partition::PartitionReport::default());
}
