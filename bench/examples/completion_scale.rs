//! How completion's cost grows with the store: the two completion statements the endpoint
//! runs (`mcp_tools::COMPLETE_ENTITY_IDS`, `COMPLETE_EVENT_TYPES`), as the endpoint's role
//! under row-level security, on one database grown in steps. At each step: entities and
//! events of the measured tenant (another tenant as large beside it), `ANALYZE`, then
//! `ROUNDS` rounds of each statement for a few prefixes, server-side time (planning and
//! execution) from `EXPLAIN (ANALYZE)`; medians and 99th percentiles per step.
//!
//! ```text
//! cargo run --release -p bench --example completion_scale -- 10000 1000000 5000000
//! ```
//! (the local PostgreSQL on 127.0.0.1:5432 with trust auth; the database
//! `mcp_completion_scale` is made anew.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use bench::fresh_database;
use tokio_postgres::Client;

const DB: &str = "mcp_completion_scale";
const ROUNDS: usize = 200;

/// Server-side time of `sql` (with its parameters written in): planning and execution, in
/// microseconds.
async fn executed_us(client: &Client, sql: &str) -> f64 {
    let plan = client
        .query_one(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}"), &[])
        .await
        .unwrap();
    let plan: serde_json::Value = plan.get(0);
    let ms = |key: &str| plan[0][key].as_f64().unwrap();
    (ms("Planning Time") + ms("Execution Time")) * 1000.0
}

fn literal(sql: &str, prefix: &str) -> String {
    sql.replace("$1", &format!("'{prefix}'"))
        .replace("$2", &format!("'{prefix}\u{10FFFF}'"))
        .replace("$3", "101")
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let steps: Vec<i64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("entity counts"))
        .collect();
    assert!(!steps.is_empty(), "usage: completion_scale ENTITIES...");
    let db = fresh_database(DB).await;
    db.batch_execute(
        "INSERT INTO event_types (name, description) \
         SELECT t, 'type ' || t FROM unnest(ARRAY['alert.fired', 'alert.resolved', 'config.changed', \
           'deploy.finished', 'deploy.started', 'error.logged', 'incident.opened']) t",
    )
    .await
    .unwrap();
    println!(
        "| entities per tenant | events per tenant | entity ids p50 | p99 | event types p50 | p99 |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut have = 0i64;
    for &entities in &steps {
        // Entities svc-<n> and one event per entity (its type by n), in both tenants.
        db.batch_execute(&format!(
            "ALTER TABLE events DISABLE TRIGGER events_fill_search; \
             INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) \
             SELECT t, 'svc-' || i, 'service', '{{}}', now() \
             FROM unnest(ARRAY['tenant-a', 'tenant-b']) t, generate_series({from}, {entities}) i; \
             INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at) \
             SELECT t, 'svc-' || i, 'service', \
               (ARRAY['alert.fired', 'alert.resolved', 'config.changed', 'deploy.finished', \
                      'deploy.started', 'error.logged', 'incident.opened'])[1 + i % 7], \
               1, now() - make_interval(secs => i) \
             FROM unnest(ARRAY['tenant-a', 'tenant-b']) t, generate_series({from}, {entities}) i; \
             ALTER TABLE events ENABLE TRIGGER events_fill_search; \
             ANALYZE",
            from = have + 1,
        ))
        .await
        .unwrap();
        have = entities;
        db.batch_execute(
            "SET ROLE mcp_reader; SELECT set_config('app.tenant_id', 'tenant-a', false)",
        )
        .await
        .unwrap();
        let (mut ids, mut types) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // A prefix as a person types it: broad, narrower, one entity.
            let prefix = ["svc-", "svc-1", "svc-12"][round % 3];
            ids.push(executed_us(&db, &literal(mcp_tools::COMPLETE_ENTITY_IDS, prefix)).await);
            let prefix = ["", "a", "de"][round % 3];
            types.push(executed_us(&db, &literal(mcp_tools::COMPLETE_EVENT_TYPES, prefix)).await);
        }
        db.batch_execute("RESET ROLE").await.unwrap();
        println!(
            "| {entities} | {entities} | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs |",
            percentile(&mut ids, 0.5),
            percentile(&mut ids, 0.99),
            percentile(&mut types, 0.5),
            percentile(&mut types, 0.99),
        );
    }
    drop(db);
    bench::local_pg("postgres", "postgres")
        .await
        .batch_execute(&format!("DROP DATABASE {DB} WITH (FORCE)"))
        .await
        .unwrap();
}
