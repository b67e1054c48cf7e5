//! The fast loader of the scale benchmark holds the store `migrate::seed` makes: the same
//! events, search documents, rollups and entity states, and every index of `events` back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use bench::{bulk_load, fresh_database};
use tokio_postgres::Client;

/// The rows of `sql` as text, in its order.
async fn rows(db: &Client, sql: &str) -> Vec<String> {
    db.query(&format!("SELECT t::text FROM ({sql}) AS t"), &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Everything the tools read, without the ids (the loader's tenants load at once, so their
/// ids interleave) but in id order within each tenant.
async fn store(db: &Client) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for sql in [
        "SELECT tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, \
         payload, structured, ai_summary, search FROM events ORDER BY tenant_id, id",
        "SELECT * FROM event_counts_minute ORDER BY 1, 2, 3, 4",
        "SELECT * FROM event_counts_hour ORDER BY 1, 2, 3, 4",
        "SELECT * FROM entity_counts_hour ORDER BY 1, 2, 3, 4, 5",
        "SELECT * FROM event_totals ORDER BY 1, 2, 3, 4",
        "SELECT tenant_id, entity_id, entity_type, state, updated_at FROM entity_state ORDER BY 1, 2",
        "SELECT name, description, field_schema FROM event_types ORDER BY name",
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' ORDER BY 1",
    ] {
        all.push(rows(db, sql).await);
    }
    all
}

#[tokio::test]
async fn the_bulk_load_holds_what_the_seed_holds() {
    let until: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
    let tenants = ["bulk-a", "bulk-b"];

    let mut seeded = fresh_database("mcp_bench_seeded").await;
    let n = migrate::seed(&mut seeded, &tenants, 2_500, until)
        .await
        .unwrap();
    let loaded_db = fresh_database("mcp_bench_bulk").await;
    let loaded = bulk_load(&loaded_db, "mcp_bench_bulk", &tenants, 2_500, until)
        .await
        .unwrap();

    assert_eq!((n, loaded), (5_000, 5_000));
    let (want, got) = (store(&seeded).await, store(&loaded_db).await);
    assert_eq!(want[0].len(), 5_000);
    assert!(want[1].len() > 100 && want[7].len() >= 6, "{:?}", want[7]);
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert!(
            w == g,
            "query {i} differs: {} rows seeded, {} loaded",
            w.len(),
            g.len()
        );
    }
    assert_eq!(
        rows(
            &loaded_db,
            "SELECT done_to = target_to FROM event_rollup_backfill"
        )
        .await,
        ["(t)"],
        "no backlog: the rollups counted every loaded row"
    );
    drop((seeded, loaded_db));
    let admin = bench::local_pg("postgres", "postgres").await;
    for db in ["mcp_bench_seeded", "mcp_bench_bulk"] {
        admin
            .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
            .await
            .unwrap();
    }
}
