//! The rollups (migration `0007_event_rollups`) that `count_events`, `summarize_window` and
//! `describe_data` read instead of scanning events: on random stores and windows every
//! answer equals the one computed from `events` itself, including events exactly on (and a
//! microsecond either side of) bucket edges, rows updated and deleted after insertion, reads
//! while events arrive, and rows that existed before the triggers (the migration's backfill,
//! with writers running throughout, and the fallback to `events` until it has finished).

use jiff::{SignedDuration, Timestamp};
use mcp::App;
use serde_json::{Value, json};
use tokio_postgres::Client;

use crate::support::db::{TestDb, admin, call, events_rows_read, ok, rollup_drift, token};
// The sample generator's (xorshift64*): the seed is printed with every failure.
use migrate::Rng;

const TENANTS: [&str; 2] = ["acme", "globex"];
const TYPES: [&str; 3] = ["alert.fired", "deploy.finished", "incident.opened"];
const ENTITIES: [&str; 4] = ["svc-a", "svc-b", "host-1", "host-2"];
const BUCKETS: [(&str, i64); 3] = [("minute", 60), ("hour", 3_600), ("day", 86_400)];
const GROUPS: [&str; 3] = ["none", "event_type", "severity"];

fn origin() -> Timestamp {
    "2026-11-01T00:00:00Z".parse().unwrap()
}

/// An instant in the three days from `origin`, often exactly on an hour or minute boundary
/// or a microsecond either side of one: where a split between rollup and raw rows would
/// count an event twice or not at all.
fn instant(rng: &mut Rng) -> Timestamp {
    let span_us = 3 * 86_400 * 1_000_000;
    let raw = rng.below(span_us) as i64;
    let unit: i64 = match rng.below(10) {
        0..=2 => 3_600_000_000,
        3..=4 => 60_000_000,
        _ => 1,
    };
    let jitter = [0, 0, 0, -1, 1][rng.below(5) as usize];
    let us = (raw / unit) * unit + jitter;
    origin()
        .checked_add(SignedDuration::from_micros(us.max(0)))
        .unwrap()
}

/// Inserts `n` random events in one statement (the triggers see one transition table).
async fn insert(client: &Client, rng: &mut Rng, n: usize) {
    let mut cols: [Vec<String>; 4] = Default::default();
    let (mut severities, mut times) = (Vec::new(), Vec::new());
    for _ in 0..n {
        cols[0].push((*rng.pick(&TENANTS)).into());
        cols[1].push((*rng.pick(&ENTITIES)).into());
        cols[2].push((*rng.pick(&["service", "host"])).into());
        cols[3].push((*rng.pick(&TYPES)).into());
        severities.push(rng.below(6) as i16);
        times.push(instant(rng));
    }
    client
        .execute(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[])",
            &[&cols[0], &cols[1], &cols[2], &cols[3], &severities, &times],
        )
        .await
        .unwrap();
}

/// A store of random events written as writers do: statements of one row and of many, then
/// updates of every counted column (and of an uncounted one) and deletes.
async fn random_store(db: &TestDb, rng: &mut Rng) {
    db.admin
        .batch_execute(
            "INSERT INTO event_types (name, description) VALUES \
             ('alert.fired', 'a'), ('deploy.finished', 'd'), ('incident.opened', 'i')",
        )
        .await
        .unwrap();
    for n in [1, 1, 7, 400, 1, 1500, 90, 1] {
        insert(&db.admin, rng, n).await;
    }
    let c = &db.admin;
    for (sql, modulo) in [
        (
            "UPDATE events SET occurred_at = occurred_at + interval '37 minutes 13.000001 seconds' WHERE id % $1 = 0",
            11i64,
        ),
        (
            "UPDATE events SET event_type = 'incident.opened' WHERE id % $1 = 1",
            13,
        ),
        (
            "UPDATE events SET severity = (severity + 1) % 6 WHERE id % $1 = 2",
            7,
        ),
        (
            "UPDATE events SET entity_id = 'svc-b', entity_type = 'service' WHERE id % $1 = 3",
            9,
        ),
        (
            "UPDATE events SET tenant_id = 'globex' WHERE id % $1 = 4",
            17,
        ),
        (
            "UPDATE events SET ai_summary = 'corrected' WHERE id % $1 = 5",
            5,
        ),
        ("DELETE FROM events WHERE id % $1 = 6", 10),
    ] {
        c.execute(sql, &[&modulo]).await.unwrap();
    }
}

/// `count_events` computed from `events` directly, as (start, key, count) rows.
async fn expected_counts(
    c: &Client,
    tenant: &str,
    args: &Value,
    seconds: i64,
) -> Vec<(String, String, i64)> {
    let key = match args["group_by"].as_str().unwrap() {
        "event_type" => "event_type",
        "severity" => "severity::text",
        _ => "''",
    };
    let since: Timestamp = args["since"].as_str().unwrap().parse().unwrap();
    let until: Timestamp = args["until"].as_str().unwrap().parse().unwrap();
    let entity = args["entity_id"].as_str();
    let types: Option<Vec<String>> = args["event_types"]
        .as_array()
        .map(|a| a.iter().map(|t| t.as_str().unwrap().to_owned()).collect());
    let sql = format!(
        "SELECT date_bin(make_interval(secs => $1), occurred_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'), {key}, count(*) \
         FROM events WHERE tenant_id = $2 AND occurred_at >= $3 AND occurred_at < $4 \
           AND ($5::text IS NULL OR entity_id = $5) AND ($6::text[] IS NULL OR event_type = ANY($6)) \
         GROUP BY 1, 2 ORDER BY 1, 2"
    );
    c.query(
        &sql,
        &[&(seconds as f64), &tenant, &since, &until, &entity, &types],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| {
        let key: String = r.get(1);
        let key = match args["group_by"].as_str().unwrap() {
            "severity" => mcp_tools::SEVERITIES[key.parse::<usize>().unwrap()].to_owned(),
            _ => key,
        };
        (r.get::<_, Timestamp>(0).to_string(), key, r.get(2))
    })
    .collect()
}

fn answered_counts(v: &Value) -> Vec<(String, String, i64)> {
    v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let key = b["event_type"]
                .as_str()
                .or(b["severity"].as_str())
                .unwrap_or("");
            (
                b["start"].as_str().unwrap().to_owned(),
                key.to_owned(),
                b["count"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A random `count_events` call: a window from interesting instants (at most 16 hours for
/// minute buckets, so it stays under the 1,000-bucket cap), a grouping, maybe an entity,
/// maybe event types.
fn random_call(rng: &mut Rng) -> (Value, i64) {
    let (bucket, seconds) = *rng.pick(&BUCKETS);
    let since = instant(rng);
    let most = if seconds == 60 {
        16 * 3_600_000_000
    } else {
        3 * 86_400_000_000
    };
    let length = 1 + match rng.below(3) {
        0 => rng.below(90_000_000),
        1 => rng.below(most / 8),
        _ => rng.below(most),
    } as i64;
    let until = since
        .checked_add(SignedDuration::from_micros(length))
        .unwrap();
    let mut args = json!({
        "since": since.to_string(),
        "until": until.to_string(),
        "bucket": bucket,
        "group_by": rng.pick(&GROUPS),
    });
    if rng.below(3) == 0 {
        args["entity_id"] = json!(rng.pick(&ENTITIES));
    }
    if rng.below(3) == 0 {
        args["event_types"] = json!([rng.pick(&TYPES)]);
    }
    (args, seconds)
}

/// Every tool that counts, against `events`, for `cases` random calls.
async fn compare(app: &App, c: &Client, rng: &mut Rng, cases: usize, seed: u64) {
    for tenant in TENANTS {
        let t = token(Some(tenant));
        let v = ok(&call(app, &t, "describe_data", json!({})).await).clone();
        let row = c
            .query_one(
                "SELECT count(*), min(occurred_at), max(occurred_at) FROM events WHERE tenant_id = $1",
                &[&tenant],
            )
            .await
            .unwrap();
        assert_eq!(v["total_events"], row.get::<_, i64>(0), "seed {seed}");
        assert_eq!(
            v["first_event_at"],
            row.get::<_, Timestamp>(1).to_string(),
            "seed {seed}"
        );
        let by_type: Vec<(String, i64)> = c
            .query(
                "SELECT entity_type, count(*) FROM events WHERE tenant_id = $1 \
                 GROUP BY 1 ORDER BY 2 DESC, 1",
                &[&tenant],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let answered: Vec<(String, i64)> = v["entity_types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().unwrap().into(),
                    e["events"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(answered, by_type, "seed {seed}");
    }
    for case in 0..cases {
        let tenant = *rng.pick(&TENANTS);
        let (args, seconds) = random_call(rng);
        let a = call(app, &token(Some(tenant)), "count_events", args.clone()).await;
        let v = ok(&a);
        let expected = expected_counts(c, tenant, &args, seconds).await;
        let answered = answered_counts(v);
        if v["truncated"] == true {
            assert!(
                answered.len() < expected.len(),
                "seed {seed} case {case} {args}"
            );
            assert_eq!(
                answered,
                expected[..answered.len()],
                "seed {seed} case {case} {args}"
            );
        } else {
            assert_eq!(answered, expected, "seed {seed} case {case} {args}");
        }
        // summarize_window over the same window and entity: its severity tally.
        let mut window = json!({"since": args["since"], "until": args["until"]});
        if let Some(e) = args.get("entity_id") {
            window["entity_id"] = e.clone();
        }
        let s = ok(&call(
            app,
            &token(Some(tenant)),
            "summarize_window",
            window.clone(),
        )
        .await)
        .clone();
        let mut tally = window.clone();
        tally["group_by"] = json!("severity");
        let per_severity = expected_counts(c, tenant, &tally, 3 * 86_400 * 400).await;
        for (rank, name) in mcp_tools::SEVERITIES.iter().enumerate() {
            let n: i64 = per_severity
                .iter()
                .filter(|(_, k, _)| k == name)
                .map(|(_, _, n)| n)
                .sum();
            assert_eq!(
                s["severity_counts"][*name], n,
                "seed {seed} case {case} {window} severity {rank}"
            );
        }
    }
}

fn seed() -> u64 {
    std::env::var("ROLLUP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

#[tokio::test]
async fn counts_from_the_rollups_equal_counts_from_events() {
    let seed = seed();
    println!("ROLLUP_SEED={seed}");
    let mut rng = Rng(seed);
    let db = TestDb::create().await;
    random_store(&db, &mut rng).await;
    let app = db.app();
    compare(&app, &db.admin, &mut rng, 120, seed).await;

    // Until the backfill has finished the rollups are not read at all: emptied and marked
    // unfinished, every answer still equals the events'.
    db.admin
        .batch_execute(
            "UPDATE event_rollup_backfill SET done_to = 0, target_to = 1; \
             TRUNCATE event_counts_minute, event_counts_hour, entity_counts_hour, event_totals",
        )
        .await
        .unwrap();
    compare(&app, &db.admin, &mut rng, 20, seed).await;

    // An operator's reset makes every row part of the backlog again; the next migrate run
    // (nothing else to apply) counts it, and the rollups are read again.
    let target: i64 = db
        .admin
        .query_one("SELECT event_rollups_reset()", &[])
        .await
        .unwrap()
        .get(0);
    assert!(target > 0);
    let mut migrator = admin(&db.name).await;
    assert!(migrate::migrate(&mut migrator).await.unwrap().is_empty());
    let counted: bool = db
        .admin
        .query_one(
            "SELECT done_to = target_to AND (SELECT count(*) FROM event_counts_hour) > 0 FROM event_rollup_backfill",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(counted, "the backlog was not counted");
    compare(&app, &db.admin, &mut rng, 20, seed).await;
}

/// Each batch of a writer puts events both in the window's whole hours and in its raw ends:
/// a read that saw the rollups of a batch but not its rows (or the reverse) would answer a
/// total that is not a multiple of the batch.
#[tokio::test]
async fn a_read_while_events_arrive_counts_whole_transactions() {
    let db = TestDb::create().await;
    db.admin
        .batch_execute("INSERT INTO event_types (name, description) VALUES ('alert.fired', 'a')")
        .await
        .unwrap();
    const BATCH: i64 = 7;
    const BATCHES: i64 = 150;
    let writer = admin(&db.name).await;
    let writing = tokio::spawn(async move {
        for _ in 0..BATCHES {
            writer
                .batch_execute(
                    "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) \
                     SELECT 'acme', 'svc-a', 'service', 'alert.fired', 3, t FROM unnest(ARRAY[\
                       '2026-11-01T10:15:00.5Z', '2026-11-01T10:59:59.999999Z', '2026-11-01T11:00:00Z', \
                       '2026-11-01T12:30:00Z', '2026-11-01T13:00:00Z', '2026-11-01T13:44:59Z', \
                       '2026-11-01T13:45:00Z']::timestamptz[]) AS t",
                )
                .await
                .unwrap();
        }
    });
    let app = db.app();
    let acme = token(Some("acme"));
    let mut seen = Vec::new();
    while !writing.is_finished() {
        for args in [
            json!({"since": "2026-11-01T10:15:00.25Z", "until": "2026-11-01T13:45:00.000001Z", "bucket": "hour"}),
            json!({"since": "2026-11-01T10:15:00.25Z", "until": "2026-11-01T13:45:00.000001Z", "bucket": "hour", "entity_id": "svc-a"}),
        ] {
            let total = ok(&call(&app, &acme, "count_events", args).await)["total_events"]
                .as_i64()
                .unwrap();
            assert_eq!(total % BATCH, 0, "a torn read: {total}");
            seen.push(total);
        }
    }
    writing.await.unwrap();
    let last = ok(&call(
        &app,
        &acme,
        "count_events",
        json!({"since": "2026-11-01T10:15:00.25Z", "until": "2026-11-01T13:45:00.000001Z", "bucket": "day"}),
    )
    .await)["total_events"]
        .as_i64()
        .unwrap();
    assert_eq!(last, BATCH * BATCHES);
    assert!(!seen.is_empty());
}

/// The rows of a store that predates the rollups are counted by the migration's backfill in
/// batches while writers insert, update and delete rows old and new.
#[tokio::test]
async fn the_backfill_counts_older_rows_while_writers_go_on() {
    let seed = seed();
    println!("ROLLUP_SEED={seed}");
    let mut rng = Rng(seed);
    let db = TestDb::create().await;
    // The store as it was before migration 0007: no triggers, no rollups.
    db.admin
        .batch_execute(
            "DROP FUNCTION event_rollups_apply() CASCADE; DROP FUNCTION event_rollups_truncate() CASCADE; \
             DROP FUNCTION event_rollups_add(event_rollup_delta[]); DROP TYPE event_rollup_delta; \
             DROP TABLE event_counts_minute, event_counts_hour, entity_counts_hour, event_totals, event_rollup_backfill; \
             DELETE FROM schema_migrations WHERE version = '0007_event_rollups'",
        )
        .await
        .unwrap();
    random_store(&db, &mut rng).await;
    for _ in 0..30 {
        insert(&db.admin, &mut rng, 1_500).await;
    }
    let writer = admin(&db.name).await;
    let writer_seed = rng.next_u64();
    let writing = tokio::spawn(async move {
        let mut rng = Rng(writer_seed | 1);
        for round in 0..40i64 {
            insert(&writer, &mut rng, 50).await;
            for sql in [
                "DELETE FROM events WHERE id = (SELECT min(id) + $1::bigint FROM events)",
                "UPDATE events SET severity = 5, occurred_at = occurred_at + interval '1 hour' \
                 WHERE id = (SELECT min(id) + $1::bigint * 3 FROM events)",
                "UPDATE events SET event_type = 'deploy.finished' WHERE id = (SELECT max(id) - $1::bigint FROM events)",
            ] {
                writer.execute(sql, &[&round]).await.unwrap();
            }
        }
    });
    let mut migrator = admin(&db.name).await;
    let applied = migrate::migrate(&mut migrator).await.unwrap();
    assert_eq!(applied, ["0007_event_rollups"]);
    writing.await.unwrap();
    assert_eq!(
        rollup_drift(&db.admin).await,
        (0, 0),
        "seed {seed}: rollup rows (minute, totals) that differ from events"
    );
    let app = db.app();
    compare(&app, &db.admin, &mut rng, 40, seed).await;
}

/// The counting statements' plans on a store of 40,000 events, as the endpoint's role: no
/// scan of `events` beyond a window's sub-minute ends (one entity: its sub-hour ends), no
/// parallel workers or JIT for branches that never run, the rollups' own indexes used.
#[tokio::test]
async fn counting_reads_rollups_not_events() {
    let db = TestDb::create().await;
    let mut seeding = admin(&db.name).await;
    let until: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    migrate::seed(&mut seeding, &["tenant-a", "tenant-b"], 20_000, until)
        .await
        .unwrap();
    db.admin.batch_execute("VACUUM ANALYZE").await.unwrap();
    let read_until: Timestamp = "2026-11-30T21:17:23.5Z".parse().unwrap();
    let since = read_until
        .checked_sub(SignedDuration::from_hours(30 * 24))
        .unwrap();
    let c = admin(&db.name).await;
    c.batch_execute(
        "BEGIN READ ONLY; SET LOCAL ROLE mcp_endpoint; \
         SELECT set_config('app.tenant_id', 'tenant-a', true)",
    )
    .await
    .unwrap();
    let no_types: Option<Vec<String>> = None;
    for (name, sql, entity, seconds) in [
        ("count by day", mcp_tools::COUNT_ALL, None, 86_400),
        (
            "count by hour x type",
            mcp_tools::COUNT_BY_EVENT_TYPE,
            None,
            3_600,
        ),
        (
            "count by minute x severity (16 h)",
            mcp_tools::COUNT_BY_SEVERITY,
            None,
            60,
        ),
        (
            "one entity by day",
            mcp_tools::ENTITY_COUNT_ALL,
            Some("svc-checkout-1"),
            86_400,
        ),
        ("severities", mcp_tools::WINDOW_SEVERITY_COUNTS, None, 3_600),
        (
            "one entity's severities",
            mcp_tools::ENTITY_SEVERITY_COUNTS,
            Some("svc-checkout-1"),
            3_600,
        ),
    ] {
        let since = if seconds == 60 {
            read_until
                .checked_sub(SignedDuration::from_hours(16))
                .unwrap()
        } else {
            since
        };
        let split = mcp_tools::WindowSplit::new(since, read_until, seconds, entity.is_some());
        let interval = format!("{seconds} seconds");
        let cap = 10_000i64;
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
            &since,
            &read_until,
            &entity,
            &no_types,
            &split.m1,
            &split.h1,
            &split.h2,
            &split.m2,
        ];
        if sql.contains("$10") {
            params.extend([
                &interval as &(dyn tokio_postgres::types::ToSql + Sync),
                &cap,
            ]);
        }
        let plan: Value = c
            .query_one(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}"), &params)
            .await
            .unwrap()
            .get(0);
        let text = plan.to_string();
        let read = events_rows_read(&plan);
        // A sub-minute end holds a few events here; one entity's sub-hour ends a few dozen.
        let most = if entity.is_some() { 200 } else { 50 };
        assert!(read <= most, "{name}: {read} rows of events read: {text}");
        assert!(
            !text.contains("\"Gather"),
            "{name}: parallel workers planned: {text}"
        );
        assert!(!text.contains("\"JIT\""), "{name}: JIT compiled: {text}");
        assert!(
            text.contains("_pkey"),
            "{name}: no rollup index used: {text}"
        );
    }
    c.batch_execute("ROLLBACK").await.unwrap();
}
