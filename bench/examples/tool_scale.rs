//! How each tool's cost grows with the store: the statements the tools run (exported by
//! `mcp_tools`, with the parameters the tools give them), as the endpoint's role under
//! row-level security in a read-only transaction, on one database grown in steps. At each
//! step two tenants of N events each (the sample generator: 30 days, 32 entities, 8 event
//! types; loaded with `COPY` by `bench::bulk_load`) join the ones before, then
//! `VACUUM ANALYZE`; each tool's statements are timed (wall time of the transaction from the
//! client, loopback, no TLS) at concurrency 1 and 16, twice: as the tools read today
//! (rollups, bounded search) and as they read before (the same statements with the rollups
//! marked unfinished, so they count from `events`, and search ranking every match). Medians
//! and 99th percentiles per step and mode, then per tool the growth from the first step to
//! the last. Each call's reads of `events` and its indexes are counted by PostgreSQL's
//! transaction statistics (whatever its plan, statements inside the search functions
//! included); the run exits 1 after its report when a call read more than `TUPLE_BUDGET`.
//! Before measuring, each step checks every call's answer against the same answer computed
//! from `events` another way: the counts with the rollups marked unfinished (so they count
//! raw events), each search against the newest 500 matches ranked directly, the newest
//! events directly (outside row-level security, by tenant); the run exits 1 when one differs.
//!
//! ```text
//! cargo run --profile harness -p bench --example tool_scale -- 100000 1000000 10000000
//! ```
//! (the local PostgreSQL on 127.0.0.1:5432 with trust auth; the database `mcp_tool_scale`
//! is made anew. ROUNDS (default 20) calls per tool at c1, a quarter as many per connection
//! at c16; TENANTS (default 2) tenants of N events per step; BEFORE_ROUNDS, BEFORE_C16_UNTIL
//! and BEFORE_UNTIL bound the slow "before" reads on large stores; REUSE measures the
//! database an earlier run left, loading nothing.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::time::Instant;

use bench::{bulk_load, fresh_database, local_pg};
use jiff::{SignedDuration, Timestamp};
use mcp_tools as t;
use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};

const DB: &str = "mcp_tool_scale";

type Params = Vec<(Box<dyn ToSql + Sync + Send>, Type)>;

/// One tool call: its statements with their parameters, and how its answer is checked.
struct Call {
    tool: &'static str,
    statements: Vec<(&'static str, Params)>,
    check: Check,
}

/// What a call's answer must equal, computed another way.
enum Check {
    /// The same statements with the rollups marked unfinished: counted from `events`.
    FromEvents,
    /// The newest `SEARCH_CANDIDATES` matches of the window ranked directly from `events`
    /// (query, rows).
    Search(&'static str, i64),
    /// The newest events of the window, directly from `events` (rows).
    Newest(i64),
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
    let c = |tool, statements| Call {
        tool,
        statements,
        check: Check::FromEvents,
    };
    let searching = |tool, query: &'static str, limit| Call {
        tool,
        statements: vec![(
            t::SEARCH_EVENTS_SQL,
            search(query, since, until, limit, candidates),
        )],
        check: Check::Search(query, limit + 1),
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
        Call {
            tool: "query_events, limit 50",
            statements: vec![(
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
            check: Check::Newest(51),
        },
    ]
}

/// One call as the endpoint makes it: a read-only transaction for the tenant, the tool's
/// statements, commit. Returns microseconds.
async fn once(client: &Client, tenant: &str, call: &Call) -> u64 {
    let start = Instant::now();
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    run(client, tenant, call).await;
    client.batch_execute("COMMIT").await.unwrap();
    start.elapsed().as_micros() as u64
}

/// The call's statements for `tenant`, in the open transaction.
async fn run(client: &Client, tenant: &str, call: &Call) {
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
}

/// A call's answer: each statement's rows as JSON text, in the order the statement gives.
async fn answer(client: &Client, tenant: &str, call: &Call) -> Vec<String> {
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    client
        .query("SELECT set_config('app.tenant_id', $1, true)", &[&tenant])
        .await
        .unwrap();
    let mut rows = Vec::new();
    for (sql, params) in &call.statements {
        let p: Vec<(&(dyn ToSql + Sync), Type)> = params
            .iter()
            .map(|(v, ty)| (&**v as &(dyn ToSql + Sync), ty.clone()))
            .collect();
        let wrapped = format!("SELECT coalesce(json_agg(x), '[]')::text FROM ({sql}) AS x");
        rows.push(client.query_typed(&wrapped, &p).await.unwrap()[0].get(0));
    }
    client.batch_execute("COMMIT").await.unwrap();
    rows
}

/// The `id`s of an answer's rows (a search's row without a hit has none).
fn ids(answer: &[String]) -> Vec<i64> {
    answer
        .iter()
        .flat_map(|rows| serde_json::from_str::<Vec<serde_json::Value>>(rows).unwrap())
        .filter_map(|row| row["id"].as_i64())
        .collect()
}

/// Checks every call's answer at this size against the same answer computed another way
/// (`Check`), as the administrator for the counts from `events` and directly, outside
/// row-level security, for the rest. Returns the calls whose answers differ.
async fn verify(admin: &Client, reader: &Client, tenant: &str, until: Timestamp) -> Vec<String> {
    let since = until
        .checked_sub(SignedDuration::from_hours(30 * 24))
        .unwrap();
    let calls = calls(until, true);
    admin.batch_execute(COUNTED).await.unwrap();
    let mut now = Vec::new();
    for call in &calls {
        now.push(answer(reader, tenant, call).await);
    }
    admin.batch_execute(NOT_COUNTED).await.unwrap();
    let mut differ = Vec::new();
    for (call, got) in calls.iter().zip(&now) {
        let same = match call.check {
            Check::FromEvents => answer(reader, tenant, call).await == *got,
            Check::Search(query, rows) => {
                let expected = column(
                    admin,
                    "SELECT id FROM (SELECT e.id, e.occurred_at, ts_rank_cd(e.search, q) AS rank \
                       FROM events e, websearch_to_tsquery('english', $1) AS q \
                       WHERE e.tenant_id = $2 AND e.search @@ q AND e.occurred_at >= $3 AND e.occurred_at < $4 \
                       ORDER BY e.occurred_at DESC, e.id DESC LIMIT $5) AS s \
                     ORDER BY rank DESC, occurred_at DESC, id DESC LIMIT $6",
                    &[&query, &tenant, &since, &until, &t::SEARCH_CANDIDATES, &rows],
                )
                .await;
                ids(got) == expected
            }
            Check::Newest(rows) => {
                let expected = column(
                    admin,
                    "SELECT id FROM events WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3 \
                     ORDER BY occurred_at DESC, id DESC LIMIT $4",
                    &[&tenant, &since, &until, &rows],
                )
                .await;
                ids(got) == expected
            }
        };
        if !same {
            differ.push(call.tool.to_owned());
        }
    }
    admin.batch_execute(COUNTED).await.unwrap();
    differ
}

/// The first column of `sql`'s rows.
async fn column(client: &Client, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Vec<i64> {
    client
        .query(sql, params)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The rollups marked finished (the tools read them) or unfinished (the tools count from
/// `events`, as they do while a migration counts older rows).
const COUNTED: &str = "UPDATE event_rollup_backfill SET done_to = target_to";
const NOT_COUNTED: &str = "UPDATE event_rollup_backfill SET done_to = 0, target_to = 1";

/// What one call reads of `events`: the rows its scans returned and fetched from the table
/// plus the entries read from each of its indexes, as PostgreSQL's counters say (statements
/// inside the search functions included, whatever the plan). The counters hold what the
/// connection read since they were last flushed (between transactions, now and then), so
/// the call's share is their difference across its statements, in one transaction.
async fn tuples_read(client: &Client, tenant: &str, call: &Call) -> i64 {
    // Counted per partition (`events` is partitioned by month): every partition's rows and
    // index entries.
    const COUNTERS: &str = "SELECT ((SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(t.relid) \
                + pg_stat_get_xact_tuples_fetched(t.relid)), 0) \
            FROM pg_partition_tree('events') t WHERE t.isleaf) \
         + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) \
            FROM pg_partition_tree('events') t JOIN pg_index i ON i.indrelid = t.relid \
            WHERE t.isleaf))::int8";
    client.batch_execute("BEGIN READ ONLY").await.unwrap();
    let before: i64 = client.query_one(COUNTERS, &[]).await.unwrap().get(0);
    run(client, tenant, call).await;
    let after: i64 = client.query_one(COUNTERS, &[]).await.unwrap().get(0);
    client.batch_execute("COMMIT").await.unwrap();
    after - before
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

/// What a call may read of `events` and its indexes at any size of the store: the budget
/// that keeps every tool's cost independent of how many events match (the newest-matches
/// probe and ranking of search, the rollups' partial edges). A call over it fails the run.
const TUPLE_BUDGET: i64 = 50_000;

struct Row {
    n: usize,
    mode: &'static str,
    tool: &'static str,
    c1: (f64, f64),
    c16: (f64, f64),
    read: Option<i64>,
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
    // BEFORE_C16_UNTIL events per tenant on, none from BEFORE_UNTIL on.
    let before_rounds = setting("BEFORE_ROUNDS", rounds);
    let before_c16_until = setting("BEFORE_C16_UNTIL", usize::MAX);
    let before_until = setting("BEFORE_UNTIL", usize::MAX);
    let tenants_per_step = setting("TENANTS", 2).max(1);
    // REUSE: measure the database an earlier run left, without loading (its tenants must be
    // there: scale-N-0 for each N).
    let reuse = std::env::var_os("REUSE").is_some();
    let db = if reuse {
        local_pg("postgres", DB).await
    } else {
        fresh_database(DB).await
    };
    let until: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    // The window ends off the hour and the minute, as a caller's "now" does.
    let read_until: Timestamp = "2026-11-30T21:17:23.5Z".parse().unwrap();
    let mut pool = Vec::new();
    for _ in 0..16 {
        pool.push(local_pg("mcp_endpoint", DB).await);
    }
    let mut report: Vec<Row> = Vec::new();
    let (mut wrong, mut checked) = (Vec::new(), 0);
    for &n in &steps {
        let tenants: Vec<String> = (0..tenants_per_step)
            .map(|i| format!("scale-{n}-{i}"))
            .collect();
        let names: Vec<&str> = tenants.iter().map(String::as_str).collect();
        if !reuse {
            load(&db, &names, n, until).await;
        }
        let differ = verify(&db, &pool[0], &tenants[0], read_until).await;
        eprintln!("[tool_scale] {n}: answers that differ from events: {differ:?}");
        wrong.extend(differ.into_iter().map(|tool| format!("{tool} at {n}")));
        checked += calls(read_until, true).len();
        for (mode, bounded) in [("now", true), ("before", false)] {
            let (rounds, c16) = if bounded {
                (rounds, true)
            } else if n < before_until {
                (before_rounds, n < before_c16_until)
            } else {
                (0, false)
            };
            if rounds == 0 {
                continue;
            }
            // "before": the rollups marked unfinished, so every count reads events.
            let mark = if bounded { COUNTED } else { NOT_COUNTED };
            db.batch_execute(mark).await.unwrap();
            for call in calls(read_until, bounded) {
                let read = if bounded {
                    Some(tuples_read(&pool[0], &tenants[0], &call).await)
                } else {
                    None
                };
                let [c1, c16] = measure(&pool, &tenants[0], &call, rounds, c16).await;
                eprintln!(
                    "[tool_scale] {n} {mode} {}: {c1:?} {c16:?} {read:?}",
                    call.tool
                );
                let tool = call.tool;
                report.push(Row {
                    n,
                    mode,
                    tool,
                    c1,
                    c16,
                    read,
                });
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
    print_report(&steps, &report);
    let over: Vec<String> = report
        .iter()
        .filter(|r| r.read.is_some_and(|read| read > TUPLE_BUDGET))
        .map(|r| format!("{} at {}: {:?}", r.tool, r.n, r.read))
        .collect();
    println!(
        "\nAnswers checked against events: {checked} calls, {} differ {wrong:?}",
        wrong.len()
    );
    if !over.is_empty() {
        eprintln!("[tool_scale] calls over the budget of {TUPLE_BUDGET} tuples read: {over:?}");
    }
    if !over.is_empty() || !wrong.is_empty() {
        std::process::exit(1);
    }
}

/// Loads a step's tenants, then `VACUUM ANALYZE`.
async fn load(db: &Client, tenants: &[&str], n: usize, until: Timestamp) {
    let started = Instant::now();
    let loaded = bulk_load(db, DB, tenants, n, until).await.unwrap();
    eprintln!(
        "[tool_scale] {loaded} events loaded and indexed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    db.batch_execute("VACUUM ANALYZE").await.unwrap();
    eprintln!(
        "[tool_scale] VACUUM ANALYZE in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// Every measurement, then per tool the medians at each size with the growth from the
/// smallest to the largest.
fn print_report(steps: &[usize], report: &[Row]) {
    println!(
        "| events per tenant | reads | tool call | c1 p50 | c1 p99 | c16 p50 | c16 p99 | tuples read |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|");
    for r in report {
        let read = r.read.map_or_else(|| "-".to_owned(), |v| v.to_string());
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {read} |",
            r.n, r.mode, r.tool, r.c1.0, r.c1.1, r.c16.0, r.c16.1
        );
    }
    let (first, last) = (steps[0], steps[steps.len() - 1]);
    println!();
    let sizes: Vec<String> = steps.iter().map(|n| format!("c1 p50 at {n}")).collect();
    println!(
        "| tool call | {} | growth {first} to {last} | c1 p99 at {last} | c16 p99 at {last} |",
        sizes.join(" | ")
    );
    println!("|---|{}---:|---:|---:|", "---:|".repeat(steps.len()));
    let now: Vec<&Row> = report.iter().filter(|r| r.mode == "now").collect();
    for tool in now.iter().filter(|r| r.n == first).map(|r| r.tool) {
        let of = |n: usize| now.iter().find(|r| r.tool == tool && r.n == n);
        let p50s: Vec<String> = steps
            .iter()
            .map(|&n| of(n).map_or("-".into(), |r| format!("{:.1}", r.c1.0)))
            .collect();
        let (Some(a), Some(b)) = (of(first), of(last)) else {
            continue;
        };
        println!(
            "| {tool} | {} | x{:.2} | {:.1} | {:.1} |",
            p50s.join(" | "),
            b.c1.0 / a.c1.0,
            b.c1.1,
            b.c16.1
        );
    }
}
