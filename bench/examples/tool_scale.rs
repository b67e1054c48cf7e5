//! How each tool's cost grows with the store: the statements the tools run (exported by
//! `mcp_tools`, with the parameters the tools give them), as the endpoint's role under
//! row-level security in a read-only transaction, on one database grown in steps. At each
//! step two tenants of N events each (the sample generator: 30 days, 32 entities, 8 event
//! types) join the ones before, then `VACUUM ANALYZE`; each tool's statements are timed
//! (wall time of the transaction from the client, loopback, no TLS) at concurrency 1 and 16,
//! twice: as the tools read today (rollups, bounded search) and as they read before
//! (the same statements with the rollups marked unfinished, so they count from `events`,
//! and search ranking every match). Medians and 99th percentiles per step and mode.
//!
//! ```text
//! cargo run --profile harness -p bench --example tool_scale -- 100000 1000000
//! ```
//! (the local PostgreSQL on 127.0.0.1:5432 with trust auth; the database `mcp_tool_scale`
//! is made anew. ROUNDS (default 20) calls per tool at c1, a quarter as many per connection
//! at c16; TENANTS (default 2) tenants of N events per step; BEFORE_ROUNDS and
//! BEFORE_C16_UNTIL bound the slow "before" reads on large stores.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::time::Instant;

use bench::{fresh_database, local_pg};
use jiff::{SignedDuration, Timestamp};
use mcp_tools as t;
use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};

const DB: &str = "mcp_tool_scale";

type Params = Vec<(Box<dyn ToSql + Sync + Send>, Type)>;

/// One tool call: its statements with their parameters.
struct Call {
    tool: &'static str,
    statements: Vec<(&'static str, Params)>,
}

fn ts(t: Timestamp) -> (Box<dyn ToSql + Sync + Send>, Type) {
    (Box::new(t), Type::TIMESTAMPTZ)
}

fn text(s: Option<&str>) -> (Box<dyn ToSql + Sync + Send>, Type) {
    (Box::new(s.map(str::to_owned)), Type::TEXT)
}

fn int8(v: i64) -> (Box<dyn ToSql + Sync + Send>, Type) {
    (Box::new(v), Type::INT8)
}

/// A counted window's parameters (`$1`-`$8` of the statements over rollups): the window, the
/// entity, no event-type filter, and its split for buckets of `seconds`.
fn window(since: Timestamp, until: Timestamp, seconds: i64, entity: Option<&str>) -> Params {
    let split = t::WindowSplit::new(since, until, seconds, entity.is_some());
    vec![
        ts(since),
        ts(until),
        text(entity),
        (Box::new(None::<Vec<String>>), Type::TEXT_ARRAY),
        ts(split.m1),
        ts(split.h1),
        ts(split.h2),
        ts(split.m2),
    ]
}

/// `count_events`' parameters: the window's, the bucket width and the row cap.
fn count(since: Timestamp, until: Timestamp, seconds: i64, entity: Option<&str>) -> Params {
    let mut params = window(since, until, seconds, entity);
    params.push((Box::new(format!("{seconds} seconds")), Type::TEXT));
    params.push(int8(10_000));
    params
}

fn search(query: &str, since: Timestamp, until: Timestamp, limit: i64, candidates: i64) -> Params {
    vec![
        (Box::new(query.to_owned()), Type::TEXT),
        ts(since),
        ts(until),
        (Box::new(0i16), Type::INT2),
        (Box::new(None::<f32>), Type::FLOAT4),
        (Box::new(None::<Timestamp>), Type::TIMESTAMPTZ),
        (Box::new(None::<i64>), Type::INT8),
        int8(limit + 1),
        int8(candidates),
    ]
}

/// Every tool call measured; `bounded` chooses the search's candidate count (all matches
/// when false, as search ranked before).
fn calls(until: Timestamp, bounded: bool) -> Vec<Call> {
    let since = until
        .checked_sub(SignedDuration::from_hours(30 * 24))
        .unwrap();
    let candidates = if bounded {
        t::SEARCH_CANDIDATES
    } else {
        i64::MAX / 2
    };
    let c = |tool, statements| Call { tool, statements };
    let searching = |tool, query: &str, limit| Call {
        tool,
        statements: vec![(
            t::SEARCH_EVENTS_SQL,
            search(query, since, until, limit, candidates),
        )],
    };
    vec![
        c(
            "describe_data",
            vec![
                (t::EVENT_TYPES, vec![int8(201)]),
                (t::ENTITY_TYPES, vec![]),
                (t::SEVERITY_COUNTS, vec![]),
                (t::EVENT_RANGE, vec![]),
            ],
        ),
        c(
            "count_events, 30 days by day",
            vec![(t::COUNT_ALL, count(since, until, 86_400, None))],
        ),
        c(
            "count_events, 30 days by day x type",
            vec![(t::COUNT_BY_EVENT_TYPE, count(since, until, 86_400, None))],
        ),
        c(
            "count_events, 30 days by hour",
            vec![(t::COUNT_ALL, count(since, until, 3_600, None))],
        ),
        c(
            "count_events, one entity, 30 days by day",
            vec![(
                t::ENTITY_COUNT_ALL,
                count(since, until, 86_400, Some("svc-checkout-1")),
            )],
        ),
        c(
            "summarize_window, 30 days",
            vec![
                (t::WINDOW_SEVERITY_COUNTS, window(since, until, 3_600, None)),
                (
                    t::WINDOW_SUMMARIES,
                    vec![ts(since), ts(until), text(None), int8(21)],
                ),
            ],
        ),
        searching("search_events \"error\"", "error", 10),
        searching("search_events \"deploy -failure\"", "deploy -failure", 10),
        searching(
            "search_events \"\\\"upstream timeout\\\"\"",
            "\"upstream timeout\"",
            10,
        ),
        searching("search \"timeout\" (ChatGPT)", "timeout", 20),
        searching(
            "search_events \"checkout nullpointer\"",
            "checkout nullpointer",
            10,
        ),
        c(
            "query_events, limit 50",
            vec![(
                t::QUERY_EVENTS_SQL,
                vec![
                    text(None),
                    (Box::new(None::<Vec<String>>), Type::TEXT_ARRAY),
                    ts(since),
                    ts(until),
                    (Box::new(None::<Vec<String>>), Type::TEXT_ARRAY),
                    (Box::new(None::<Vec<String>>), Type::TEXT_ARRAY),
                    (Box::new(0i16), Type::INT2),
                    (Box::new(None::<Timestamp>), Type::TIMESTAMPTZ),
                    (Box::new(None::<i64>), Type::INT8),
                    int8(51),
                    (Box::new(false), Type::BOOL),
                ],
            )],
        ),
    ]
}

/// One call as the endpoint makes it: a read-only transaction for the tenant, the tool's
/// statements, commit. Returns microseconds.
async fn once(client: &Client, tenant: &str, call: &Call) -> u64 {
    let start = Instant::now();
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    client
        .query("SELECT set_config('app.tenant_id', $1, true)", &[&tenant])
        .await
        .unwrap();
    for (sql, params) in &call.statements {
        let p: Vec<(&(dyn ToSql + Sync), Type)> = params
            .iter()
            .map(|(v, ty)| (&**v as &(dyn ToSql + Sync), ty.clone()))
            .collect();
        client.query_typed(sql, &p).await.unwrap();
    }
    client.batch_execute("COMMIT").await.unwrap();
    start.elapsed().as_micros() as u64
}

fn quantile(v: &mut [u64], p: f64) -> f64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

/// (p50, p99) in ms at concurrency 1 and at 16 (NaN when `c16` is false).
async fn measure(
    pool: &[Client],
    tenant: &str,
    call: &Call,
    rounds: usize,
    c16: bool,
) -> [(f64, f64); 2] {
    once(&pool[0], tenant, call).await;
    let mut c1 = Vec::new();
    for _ in 0..rounds {
        c1.push(once(&pool[0], tenant, call).await);
    }
    // A quarter as many calls per connection at c16: still 4x the calls of c1.
    let per_connection = (rounds / 4).max(2);
    let runs = pool.iter().map(|client| async move {
        let mut v = Vec::new();
        for _ in 0..per_connection {
            v.push(once(client, tenant, call).await);
        }
        v
    });
    let c1 = (quantile(&mut c1, 0.5), quantile(&mut c1, 0.99));
    if !c16 {
        return [c1, (f64::NAN, f64::NAN)];
    }
    let mut c16: Vec<u64> = futures_util::future::join_all(runs).await.concat();
    [c1, (quantile(&mut c16, 0.5), quantile(&mut c16, 0.99))]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let steps: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("event counts per tenant"))
        .collect();
    assert!(!steps.is_empty(), "usage: tool_scale EVENTS_PER_TENANT...");
    let setting = |name: &str, default: usize| {
        std::env::var(name).map_or(default, |v| v.parse().expect("a count"))
    };
    let rounds = setting("ROUNDS", 20);
    // The reads as they were take seconds on a large store: fewer rounds, c1 only from
    // BEFORE_C16_UNTIL events per tenant on.
    let before_rounds = setting("BEFORE_ROUNDS", rounds);
    let before_c16_until = setting("BEFORE_C16_UNTIL", usize::MAX);
    let tenants_per_step = setting("TENANTS", 2).max(1);
    let mut db = fresh_database(DB).await;
    let until: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    // The window ends off the hour and the minute, as a caller's "now" does.
    let read_until: Timestamp = "2026-11-30T21:17:23.5Z".parse().unwrap();
    let mut pool = Vec::new();
    for _ in 0..16 {
        pool.push(local_pg("mcp_endpoint", DB).await);
    }
    let mut report = Vec::new();
    for n in &steps {
        let tenants: Vec<String> = (0..tenants_per_step)
            .map(|i| format!("scale-{n}-{i}"))
            .collect();
        let names: Vec<&str> = tenants.iter().map(String::as_str).collect();
        let started = Instant::now();
        let loaded = migrate::seed(&mut db, &names, *n, until).await.unwrap();
        eprintln!(
            "[tool_scale] {loaded} events loaded in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        db.batch_execute("VACUUM ANALYZE").await.unwrap();
        for (mode, bounded) in [("now", true), ("before", false)] {
            let (rounds, c16) = if bounded {
                (rounds, true)
            } else {
                (before_rounds, *n < before_c16_until)
            };
            if rounds == 0 {
                continue;
            }
            // "before": the rollups marked unfinished, so every count reads events.
            let mark = if bounded {
                "UPDATE event_rollup_backfill SET done_to = target_to"
            } else {
                "UPDATE event_rollup_backfill SET done_to = 0, target_to = 1"
            };
            db.batch_execute(mark).await.unwrap();
            for call in calls(read_until, bounded) {
                let [c1, c16] = measure(&pool, &tenants[0], &call, rounds, c16).await;
                eprintln!("[tool_scale] {n} {mode} {}: {c1:?} {c16:?}", call.tool);
                report.push((*n, mode, call.tool, c1, c16));
            }
        }
        // Back to the counted state for the next step's writes.
        db.batch_execute(
            "UPDATE event_rollup_backfill SET done_to = (SELECT coalesce(max(id), 0) FROM events), \
             target_to = (SELECT coalesce(max(id), 0) FROM events)",
        )
        .await
        .unwrap();
    }
    println!("| events per tenant | reads | tool call | c1 p50 | c1 p99 | c16 p50 | c16 p99 |");
    println!("|---:|---|---|---:|---:|---:|---:|");
    for (n, mode, tool, c1, c16) in &report {
        println!(
            "| {n} | {mode} | {tool} | {:.1} | {:.1} | {:.1} | {:.1} |",
            c1.0, c1.1, c16.0, c16.1
        );
    }
}
