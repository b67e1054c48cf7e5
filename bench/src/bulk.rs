//! The sample store loaded fast enough for tens of millions of events: the same events as
//! `migrate::seed` (the same generator, tenant by tenant), sent with binary `COPY` on one
//! connection per tenant at once, with the secondary indexes of `events` dropped for the
//! load and built again afterwards from their own definitions (in every monthly partition). The triggers stay on, so every
//! row gets its search document and the rollups count every row exactly as for any writer.
//! For benchmark databases only: until the load ends the table lacks its indexes.

use futures_util::future::try_join_all;
use jiff::Timestamp;
use mcp_db::partition::create_index;
use migrate::SampleEvents;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Error};

use crate::pg::local_pg;

/// Rows per `COPY` statement: each is a transaction, and its rows are one transition table
/// for the rollup trigger.
const ROWS_PER_COPY: usize = 500_000;

/// Loads `n` sample events for each of `tenants` (the `i`-th tenant gets the sequence
/// `migrate::seed` gives the `i`-th tenant of a seed) into database `db`, plus the event
/// types and every entity's state; returns the events loaded. `admin` is a superuser's
/// connection to `db`.
///
/// # Errors
///
/// The first failing statement.
pub async fn bulk_load(
    admin: &Client,
    db: &str,
    tenants: &[&str],
    n: usize,
    until: Timestamp,
) -> Result<u64, Error> {
    migrate::seed_event_types(admin).await?;
    // Secondary indexes only: those behind a constraint (the primary key) stay.
    let indexes: Vec<(String, String)> = admin
        .query(
            "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) \
             FROM pg_index i WHERE i.indrelid = 'events'::regclass \
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (name, _) in &indexes {
        // DDL takes no bind parameters; the name is the catalog's own (regclass text).
        admin.execute(&format!("DROP INDEX {name}"), &[]).await?;
    }
    let loads = tenants.iter().enumerate().map(|(t, tenant)| async move {
        let client = local_pg("postgres", db).await;
        let loaded = copy_tenant(&client, t, tenant, n, until).await?;
        migrate::seed_entity_state(&client, tenant).await?;
        Ok::<u64, Error>(loaded)
    });
    let loaded = try_join_all(loads).await?.into_iter().sum();
    // Two builds at a time, one per core. `events` is partitioned by month: each index is
    // built again partition by partition under its own names (`mcp_db::partition`).
    let mut builders = [
        local_pg("postgres", db).await,
        local_pg("postgres", db).await,
    ];
    for client in &builders {
        client
            .execute("SET maintenance_work_mem = '1GB'", &[])
            .await?;
    }
    for pair in indexes.chunks(2) {
        let builds = pair
            .iter()
            .zip(builders.iter_mut())
            .map(|((name, definition), client)| {
                let on = definition
                    .split_once(" ON ONLY public.events ")
                    .or_else(|| definition.split_once(" ON public.events "))
                    .map(|(_, rest)| format!("ON events {rest}"))
                    .unwrap_or_default();
                async move { create_index(client, name, &on, false).await }
            });
        try_join_all(builds).await?;
    }
    Ok(loaded)
}

/// One tenant's events, `ROWS_PER_COPY` to a statement.
async fn copy_tenant(
    client: &Client,
    t: usize,
    tenant: &str,
    n: usize,
    until: Timestamp,
) -> Result<u64, Error> {
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT2,
        Type::TIMESTAMPTZ,
        Type::TEXT_ARRAY,
        Type::JSONB,
        Type::JSONB,
        Type::TEXT,
    ];
    let mut events = SampleEvents::new(t, n, until).peekable();
    let mut loaded = 0;
    while events.peek().is_some() {
        let sink = client
            .copy_in(
                "COPY events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, \
                 tags, payload, structured, ai_summary) FROM STDIN (FORMAT binary)",
            )
            .await?;
        let writer = BinaryCopyInWriter::new(sink, &types);
        futures_util::pin_mut!(writer);
        for e in events.by_ref().take(ROWS_PER_COPY) {
            let row: [&(dyn ToSql + Sync); 10] = [
                &tenant,
                &e.entity_id,
                &e.entity_type,
                &e.event_type,
                &e.severity,
                &e.occurred_at,
                &e.tags,
                &e.payload,
                &e.structured,
                &e.ai_summary,
            ];
            writer.as_mut().write(&row).await?;
        }
        loaded += writer.finish().await?;
    }
    Ok(loaded)
}
