//! What the rollups (migration `0007_event_rollups`) cost the writers: events inserted per
//! second with the rollup triggers enabled and disabled, in one run, for statements of 1,
//! 10, 100 and 1,000 events from one writer, and for single-event statements from 4
//! concurrent writers of one tenant (who then update the same rollup rows). Everything else
//! a write does (the search document trigger, the indexes) is the same both ways. Each round
//! measures both settings, in alternating order; medians and the spread over rounds.
//!
//! With `COMPARE=search_index` the two settings are the search index before migration
//! `0010_search_hour_index` (tenant and words) and after it (tenant, tenant and hour, words),
//! each measured on an emptied table (the other index dropped), rollups on both ways.
//!
//! ```text
//! cargo run --release -p bench --example rollup_write_cost -- [ROUNDS]
//! ```
//! (the local PostgreSQL on 127.0.0.1:5432 with trust auth; the database
//! `mcp_rollup_write_cost` is made anew.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::time::Instant;

use bench::{fresh_database, local_pg};
use tokio_postgres::Client;

const DB: &str = "mcp_rollup_write_cost";
const TRIGGERS: [&str; 3] = [
    "events_rollups_insert",
    "events_rollups_delete",
    "events_rollups_update",
];

/// Inserts `statements` statements of `per_statement` sample-shaped events each (a
/// summary, tags, structured fields and a payload, spread over the last day), as a writer
/// would with one prepared statement. Returns the seconds taken.
async fn write(client: &Client, writer: i64, statements: i64, per_statement: i64) -> f64 {
    let insert = client
        .prepare(
            "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, \
                                 tags, payload, structured, ai_summary) \
             SELECT 'tenant-a', 'svc-' || (i % 32), 'service', \
                    (ARRAY['alert.fired', 'deploy.finished', 'error.logged'])[1 + i % 3], (i % 6)::int2, \
                    now() - make_interval(secs => (i * 7919) % 86400), ARRAY['region:eu', 'team:core'], \
                    jsonb_build_object('seq', i, 'writer', $1::bigint), \
                    jsonb_build_object('version', '1.' || (i % 40), 'outcome', 'success'), \
                    'deploy of svc-' || (i % 32) || ' finished with outcome success' \
             FROM generate_series($2::bigint, $3::bigint) AS i",
        )
        .await
        .unwrap();
    let start = Instant::now();
    for s in 0..statements {
        let first = s * per_statement;
        client
            .execute(&insert, &[&writer, &first, &(first + per_statement - 1)])
            .await
            .unwrap();
    }
    start.elapsed().as_secs_f64()
}

/// The search index of each setting (`COMPARE=search_index`): before and after `0010`.
const SEARCH_INDEXES: [(&str, &str); 2] = [mcp_db::SEARCH_INDEX, mcp_db::SEARCH_HOUR_INDEX];

/// Switches to a setting: the rollup triggers on or off, or (comparing search indexes) an
/// emptied table with the setting's search index only.
async fn set(client: &Client, search_index: bool, on: bool) {
    if !search_index {
        return set_rollups(client, on).await;
    }
    let (drop, (create, definition)) = if on {
        (SEARCH_INDEXES[0].0, SEARCH_INDEXES[1])
    } else {
        (SEARCH_INDEXES[1].0, SEARCH_INDEXES[0])
    };
    client
        .batch_execute(&format!(
            "TRUNCATE events, entity_state; DROP INDEX IF EXISTS {drop}; CREATE INDEX IF NOT EXISTS {create} {definition}"
        ))
        .await
        .unwrap();
}

async fn set_rollups(client: &Client, on: bool) {
    for t in TRIGGERS {
        let verb = if on { "ENABLE" } else { "DISABLE" };
        client
            .batch_execute(&format!("ALTER TABLE events {verb} TRIGGER {t}"))
            .await
            .unwrap();
    }
}

/// Events per second for one workload: `writers` concurrent connections, each running
/// `statements` statements of `per_statement` events.
async fn rate(writers: &[Client], statements: i64, per_statement: i64) -> f64 {
    let start = Instant::now();
    let runs = writers
        .iter()
        .enumerate()
        .map(|(w, c)| write(c, w as i64, statements, per_statement));
    futures_util::future::join_all(runs).await;
    let events = writers.len() as i64 * statements * per_statement;
    events as f64 / start.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(5, |a| a.parse().expect("a round count"));
    let search_index = std::env::var("COMPARE").is_ok_and(|c| c == "search_index");
    let db = fresh_database(DB).await;
    db.batch_execute(
        "INSERT INTO event_types (name, description) \
         SELECT t, 'type ' || t FROM unnest(ARRAY['alert.fired', 'deploy.finished', 'error.logged']) t",
    )
    .await
    .unwrap();
    let mut writers = Vec::new();
    for _ in 0..4 {
        writers.push(local_pg("postgres", DB).await);
    }
    // (label, writers, statements per writer per round, events per statement)
    let workloads: [(&str, usize, i64, i64); 5] = [
        ("1 writer, 1 event per statement", 1, 2_000, 1),
        ("1 writer, 10 events per statement", 1, 500, 10),
        ("1 writer, 100 events per statement", 1, 100, 100),
        ("1 writer, 1,000 events per statement", 1, 20, 1_000),
        ("4 writers, 1 event per statement", 4, 1_000, 1),
    ];
    let (without, with) = if search_index {
        ("(tenant, words) index", "(tenant, hour, words) index")
    } else {
        ("without rollups", "with rollups")
    };
    println!("| workload | {without} (events/s) | {with} (events/s) | with / without |");
    println!("|---|---:|---:|---:|");
    for (label, n, statements, per_statement) in workloads {
        let (mut off, mut on) = (Vec::new(), Vec::new());
        // A warm-up of each setting, not counted.
        for setting in [false, true] {
            set(&db, search_index, setting).await;
            rate(&writers[..n], statements / 10 + 1, per_statement).await;
        }
        for round in 0..rounds {
            for setting in if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            } {
                set(&db, search_index, setting).await;
                let r = rate(&writers[..n], statements, per_statement).await;
                if setting { on.push(r) } else { off.push(r) }
            }
        }
        let spread = |v: &[f64]| {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, 0f64), |(l, h), x| (l.min(*x), h.max(*x)));
            format!("{lo:.0}-{hi:.0}")
        };
        let (m_off, m_on) = (median(&mut off), median(&mut on));
        println!(
            "| {label} | {m_off:.0} ({}) | {m_on:.0} ({}) | {:.2} |",
            spread(&off),
            spread(&on),
            m_on / m_off
        );
    }
    set_rollups(&db, true).await;
    // The rollups must still agree with the events after a run with them switched off half
    // the time: they do not (the disabled rounds were not counted), which is why this
    // database is thrown away; say so rather than leave it looking usable.
    drop(writers);
    local_pg("postgres", "postgres")
        .await
        .batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
        .await
        .unwrap();
}
