//! Schema migrations and sample data for the event store.
//!
//! `migrate` runs as the deploy step (and locally) with an administrative connection;
//! `seed` loads a realistic, deterministic sample for local runs, demos and benchmarks. The
//! endpoint itself never runs either: it connects as a read-only role.

use jiff::Timestamp;
use tokio_postgres::{Client, GenericClient};

pub use mcp_db::{migrate, migrate_through};
pub use sample::{EVENT_TYPES, Rng, SampleEvent, SampleEvents};

mod sample;

/// What one deploy-time run did.
#[derive(Debug, serde::Serialize, PartialEq, Eq)]
pub struct Report {
    /// Migrations applied by this run (empty when the schema was up to date).
    pub applied: Vec<String>,
    /// Whether the endpoint role's password was set from its secret.
    pub endpoint_password_set: bool,
}

/// The deploy step: applies migrations, then, when the endpoint's own secret is given, sets
/// the login role's password from it so the function can connect (the secret is the single
/// source of that password; rotation updates both).
///
/// # Errors
///
/// A failing migration, or an endpoint secret for another role than `mcp_endpoint`.
pub async fn deploy(
    admin: &mut Client,
    endpoint: Option<&mcp_db::DbSecret>,
) -> anyhow::Result<Report> {
    let applied = migrate(admin).await?;
    let mut endpoint_password_set = false;
    if let Some(secret) = endpoint {
        anyhow::ensure!(
            secret.username == "mcp_endpoint",
            "the endpoint secret names role {:?}; the migrations create mcp_endpoint",
            secret.username
        );
        // ALTER ROLE takes no bind parameters: the password goes in as a quoted literal, and
        // through the extended protocol, which runs exactly one statement whatever the text.
        let literal = format!("'{}'", secret.password.replace('\'', "''"));
        admin
            .execute(
                &format!("ALTER ROLE mcp_endpoint WITH LOGIN PASSWORD {literal}"),
                &[],
            )
            .await?;
        endpoint_password_set = true;
    }
    Ok(Report {
        applied,
        endpoint_password_set,
    })
}

/// Loads `events_per_tenant` events for each of `tenants`, ending at `until`, plus the
/// event-type catalog and the current state of every entity. Idempotent per tenant: a
/// tenant that already has events is skipped.
///
/// # Errors
///
/// The first failing statement.
pub async fn seed(
    client: &mut Client,
    tenants: &[&str],
    events_per_tenant: usize,
    until: Timestamp,
) -> Result<u64, tokio_postgres::Error> {
    seed_event_types(client).await?;
    let mut inserted = 0;
    for (t, tenant) in tenants.iter().enumerate() {
        let present: i64 = client
            .query_one(
                "SELECT count(*) FROM events WHERE tenant_id = $1",
                &[tenant],
            )
            .await?
            .get(0);
        if present > 0 {
            continue;
        }
        let tx = client.transaction().await?;
        let mut batch = Vec::with_capacity(1000);
        for (i, event) in SampleEvents::new(t, events_per_tenant, until).enumerate() {
            batch.push(event);
            if batch.len() == 1000 || i + 1 == events_per_tenant {
                inserted += insert(&tx, tenant, &batch).await?;
                batch.clear();
            }
        }
        seed_entity_state(&tx, tenant).await?;
        tx.commit().await?;
    }
    Ok(inserted)
}

/// The sample's event-type catalog (idempotent).
///
/// # Errors
///
/// The first failing statement.
pub async fn seed_event_types(client: &impl GenericClient) -> Result<(), tokio_postgres::Error> {
    for (name, description, schema) in EVENT_TYPES {
        let schema: serde_json::Value = serde_json::from_str(schema).unwrap_or_default();
        client
            .execute(
                "INSERT INTO event_types (name, description, field_schema) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                &[name, description, &schema],
            )
            .await?;
    }
    Ok(())
}

/// Every entity's current state, from its newest event, for `tenant`'s loaded events.
///
/// # Errors
///
/// The failing statement.
pub async fn seed_entity_state(
    client: &impl GenericClient,
    tenant: &str,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, last_event_id, updated_at) \
             SELECT DISTINCT ON (entity_id) tenant_id, entity_id, entity_type, \
                    jsonb_build_object('last_event_type', event_type, 'last_severity', severity, 'last_structured', structured), id, occurred_at \
             FROM events WHERE tenant_id = $1 ORDER BY entity_id, occurred_at DESC, id DESC",
            &[&tenant],
        )
        .await
}

async fn insert(
    tx: &tokio_postgres::Transaction<'_>,
    tenant: &str,
    rows: &[SampleEvent],
) -> Result<u64, tokio_postgres::Error> {
    let mut entity = Vec::new();
    let mut etype = Vec::new();
    let mut kind = Vec::new();
    let mut sev = Vec::new();
    let mut at = Vec::new();
    let mut tags = Vec::new();
    let mut payload = Vec::new();
    let mut structured = Vec::new();
    let mut summary = Vec::new();
    for r in rows {
        entity.push(r.entity_id.as_str());
        etype.push(r.entity_type);
        kind.push(r.event_type);
        sev.push(r.severity);
        at.push(r.occurred_at);
        // Arrays of arrays cannot be unnested row-wise, so tags travel as JSON.
        tags.push(serde_json::to_value(&r.tags).unwrap_or_default());
        payload.push(&r.payload);
        structured.push(&r.structured);
        summary.push(r.ai_summary.as_deref());
    }
    tx.execute(
        "INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured, ai_summary) \
         SELECT $1, e, et, k, s, a, ARRAY(SELECT jsonb_array_elements_text(t)), p, st, sm \
         FROM unnest($2::text[], $3::text[], $4::text[], $5::int2[], $6::timestamptz[], $7::jsonb[], $8::jsonb[], $9::jsonb[], $10::text[]) \
              AS u(e, et, k, s, a, t, p, st, sm)",
        &[&tenant, &entity, &etype, &kind, &sev, &at, &tags, &payload, &structured, &summary],
    )
    .await
}
