//! What moving an existing store into monthly partitions (migration `0012_events_partitioned`)
//! costs the readers and writers that go on meanwhile. A store as the release before left it
//! (two tenants of N events each, loaded with `COPY` by `bench::bulk_load`), then three
//! phases of equal standing: `before` (10 s), `during` (the migrate run, timed), `after`
//! (10 s). Throughout, one reader reads the newest 50 events of a tenant as the endpoint's
//! role, one transaction at a time, and one writer inserts one event per statement; each
//! operation's latency is recorded in the phase it started in. Reported per phase: count,
//! p50, p99 and the longest, for both; the swap's lock time is the log line `events swapped
//! for the partitioned table` (`held_ms`).
//!
//! ```text
//! cargo run --profile harness -p bench --example partition_move -- [EVENTS_PER_TENANT]
//! ```
//! (the local PostgreSQL on 127.0.0.1:5432 with trust auth; the database
//! `mcp_partition_move` is made anew. Default 1,000,000 events per tenant.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use bench::{bulk_load, fresh_database_through, local_pg};
use jiff::Timestamp;
use tokio::sync::Mutex;

const DB: &str = "mcp_partition_move";
const PHASES: [&str; 3] = ["before", "during", "after"];

type Samples = Arc<Mutex<Vec<(u8, u64)>>>;

/// Runs `sql` back to back on `c` until the last phase has ended, recording each run's
/// latency with the phase it started in.
fn probe(
    c: tokio_postgres::Client,
    sql: &'static str,
    phase: Arc<AtomicU8>,
    samples: Samples,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let p = phase.load(Ordering::SeqCst);
            if p >= 3 {
                return;
            }
            let start = Instant::now();
            c.batch_execute(sql).await.unwrap();
            let us = u64::try_from(start.elapsed().as_micros()).unwrap();
            samples.lock().await.push((p, us));
        }
    })
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let n: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |a| a.parse().expect("events per tenant"));
    let tenants = ["move-0", "move-1"];
    let mut admin = fresh_database_through(DB, Some("0011_drop_search_index")).await;
    let started = Instant::now();
    let loaded = bulk_load(&admin, DB, &tenants, n, Timestamp::now())
        .await
        .unwrap();
    admin.batch_execute("VACUUM ANALYZE events").await.unwrap();
    eprintln!(
        "[partition_move] {loaded} events loaded, indexed and analysed in {:.0} s",
        started.elapsed().as_secs_f64()
    );

    let phase = Arc::new(AtomicU8::new(0));
    let (reads, writes): (Samples, Samples) = Default::default();
    let reader = probe(
        local_pg("mcp_endpoint", DB).await,
        "BEGIN READ ONLY; SELECT set_config('app.tenant_id', 'move-0', true); \
         SELECT id FROM events ORDER BY occurred_at DESC, id DESC LIMIT 50; COMMIT",
        phase.clone(),
        reads.clone(),
    );
    let writer = probe(
        local_pg("postgres", DB).await,
        "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, ai_summary) \
         VALUES ('move-1', 'svc-move-1', 'service', 'deploy.finished', 2, now() - interval '1 minute', 'written during the move')",
        phase.clone(),
        writes.clone(),
    );
    // The phases around the move are windows of measurement, not waits for anything.
    tokio::time::sleep(Duration::from_secs(10)).await;
    phase.store(1, Ordering::SeqCst);
    let started = Instant::now();
    let applied = mcp_db::migrate(&mut admin).await.unwrap();
    let moved = started.elapsed();
    phase.store(2, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(10)).await;
    phase.store(3, Ordering::SeqCst);
    reader.await.unwrap();
    writer.await.unwrap();
    assert_eq!(applied, ["0012_events_partitioned", "0013_search_by_month"]);

    println!(
        "## The move of {loaded} events into monthly partitions: {:.1} s\n",
        moved.as_secs_f64()
    );
    println!("| probe | phase | operations | p50 ms | p99 ms | longest ms |");
    println!("|---|---|---:|---:|---:|---:|");
    for (probe, samples) in [("read (newest 50)", &reads), ("write (one event)", &writes)] {
        let samples = samples.lock().await;
        for (i, name) in PHASES.iter().enumerate() {
            let mut v: Vec<u64> = samples
                .iter()
                .filter(|(p, _)| usize::from(*p) == i)
                .map(|(_, us)| *us)
                .collect();
            v.sort_unstable();
            if v.is_empty() {
                continue;
            }
            let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0;
            println!(
                "| {probe} | {name} | {} | {:.2} | {:.2} | {:.1} |",
                v.len(),
                q(0.5),
                q(0.99),
                q(1.0)
            );
        }
    }
}
