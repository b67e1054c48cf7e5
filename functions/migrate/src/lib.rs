//! Schema migrations and sample data for the event store.
//!
//! `migrate` runs as the deploy step (and locally) with an administrative connection;
//! `seed` loads a realistic, deterministic sample for local runs, demos and benchmarks. The
//! endpoint itself never runs either: it connects as a read-only role.

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use tokio_postgres::Client;

pub use mcp_db::migrate;

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

/// Event types of the sample: (name, description, field schema of `structured`).
pub const EVENT_TYPES: &[(&str, &str, &str)] = &[
    (
        "deploy.started",
        "A deployment of a service version began",
        r#"{"type":"object","properties":{"version":{"type":"string"},"actor":{"type":"string"}}}"#,
    ),
    (
        "deploy.finished",
        "A deployment completed, successfully or not",
        r#"{"type":"object","properties":{"version":{"type":"string"},"outcome":{"enum":["success","failure","rolled_back"]}}}"#,
    ),
    (
        "alert.fired",
        "A monitoring alert started firing",
        r#"{"type":"object","properties":{"alert":{"type":"string"},"value":{"type":"number"},"threshold":{"type":"number"}}}"#,
    ),
    (
        "alert.resolved",
        "A monitoring alert stopped firing",
        r#"{"type":"object","properties":{"alert":{"type":"string"},"duration_s":{"type":"integer"}}}"#,
    ),
    (
        "error.logged",
        "An application logged an error",
        r#"{"type":"object","properties":{"error_class":{"type":"string"},"count":{"type":"integer"},"message":{"type":"string"}}}"#,
    ),
    (
        "config.changed",
        "A configuration value changed",
        r#"{"type":"object","properties":{"key":{"type":"string"},"actor":{"type":"string"}}}"#,
    ),
    (
        "incident.opened",
        "An incident was declared",
        r#"{"type":"object","properties":{"title":{"type":"string"},"commander":{"type":"string"}}}"#,
    ),
];

/// A small deterministic generator (xorshift64*): sample data must be the same every run.
/// Public for the tests that generate stores of their own from a printed seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
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
    for (name, description, schema) in EVENT_TYPES {
        let schema: serde_json::Value = serde_json::from_str(schema).unwrap_or_default();
        client
            .execute(
                "INSERT INTO event_types (name, description, field_schema) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                &[name, description, &schema],
            )
            .await?;
    }
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
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1));
        let services: Vec<String> = (0..12)
            .map(|i| {
                format!(
                    "svc-{}",
                    [
                        "checkout",
                        "payments",
                        "search",
                        "auth",
                        "inventory",
                        "email"
                    ][i % 6]
                ) + &format!("-{}", i / 6 + 1)
            })
            .collect();
        let hosts: Vec<String> = (0..20).map(|i| format!("host-{:02}", i + 1)).collect();
        let tx = client.transaction().await?;
        let mut batch: Vec<SampleRow> = Vec::new();
        for i in 0..events_per_tenant {
            // Spread events over 30 days, newest last, with jitter.
            let back = SignedDuration::from_secs(
                ((events_per_tenant - i) as i64 * 30 * 86_400) / events_per_tenant as i64
                    + rng.below(600) as i64,
            );
            let at = until.checked_sub(back).unwrap_or(until);
            let (entity_id, entity_type) = if rng.below(3) == 0 {
                (
                    hosts[rng.below(hosts.len() as u64) as usize].clone(),
                    "host",
                )
            } else {
                (
                    services[rng.below(services.len() as u64) as usize].clone(),
                    "service",
                )
            };
            let (event_type, _, _) = EVENT_TYPES[rng.below(EVENT_TYPES.len() as u64) as usize];
            let severity: i16 = match event_type {
                "incident.opened" => 5,
                "alert.fired" => [3, 4, 4, 5][rng.below(4) as usize],
                "error.logged" => [3, 4][rng.below(2) as usize],
                "deploy.finished" if rng.below(10) == 0 => 4,
                "config.changed" => 2,
                // Deploy steps are chatty: half of their starts are debug-level, so the
                // sample holds every severity the schema knows (0 = debug).
                "deploy.started" => rng.below(2) as i16,
                _ => 1,
            };
            let region = ["eu-west-1", "us-east-1", "ap-south-1"][rng.below(3) as usize];
            let mut tags = vec![
                format!("region:{region}"),
                format!(
                    "team:{}",
                    ["core", "growth", "platform"][rng.below(3) as usize]
                ),
            ];
            if severity >= 4 {
                tags.push("paging".into());
            }
            let version = format!("1.{}.{}", rng.below(40), rng.below(10));
            let structured = match event_type {
                "deploy.started" => json!({"version": version, "actor": "ci"}),
                "deploy.finished" => {
                    json!({"version": version, "outcome": if severity >= 4 { "failure" } else { "success" }})
                }
                "alert.fired" => {
                    json!({"alert": "p99_latency_ms", "value": 200 + rng.below(2000), "threshold": 500})
                }
                "alert.resolved" => {
                    json!({"alert": "p99_latency_ms", "duration_s": rng.below(3600)})
                }
                "error.logged" => {
                    let class =
                        ["TimeoutError", "ConnectionReset", "NullPointer"][rng.below(3) as usize];
                    // A sentence a person would search for (no draw from the generator,
                    // so the rest of the sample is unchanged).
                    let message = match class {
                        "TimeoutError" => "upstream timeout after 3000 ms waiting for a response",
                        "ConnectionReset" => {
                            "connection reset by peer while talking to the database"
                        }
                        _ => "null reference while rendering the order summary",
                    };
                    json!({"error_class": class, "count": 1 + rng.below(50), "message": message})
                }
                "config.changed" => json!({"key": "pool.max_connections", "actor": "oncall"}),
                _ => {
                    json!({"title": format!("Elevated errors on {entity_id}"), "commander": "oncall"})
                }
            };
            let payload = json!({"source": "sample", "seq": i, "raw": {"region": region, "detail": structured}});
            let summary = (severity >= 3).then(|| {
                format!("{event_type} on {entity_id} ({region}), severity {severity}: {structured}")
            });
            batch.push((
                entity_id,
                entity_type.into(),
                event_type.into(),
                severity,
                at,
                tags,
                payload,
                structured,
                summary,
            ));
            if batch.len() == 1000 || i + 1 == events_per_tenant {
                inserted += insert(&tx, tenant, &batch).await?;
                batch.clear();
            }
        }
        tx.execute(
            "INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, last_event_id, updated_at) \
             SELECT DISTINCT ON (entity_id) tenant_id, entity_id, entity_type, \
                    jsonb_build_object('last_event_type', event_type, 'last_severity', severity, 'last_structured', structured), id, occurred_at \
             FROM events WHERE tenant_id = $1 ORDER BY entity_id, occurred_at DESC, id DESC",
            &[tenant],
        )
        .await?;
        tx.commit().await?;
    }
    Ok(inserted)
}

type SampleRow = (
    String,
    String,
    String,
    i16,
    Timestamp,
    Vec<String>,
    serde_json::Value,
    serde_json::Value,
    Option<String>,
);

async fn insert(
    tx: &tokio_postgres::Transaction<'_>,
    tenant: &str,
    rows: &[SampleRow],
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
        entity.push(r.0.clone());
        etype.push(r.1.clone());
        kind.push(r.2.clone());
        sev.push(r.3);
        at.push(r.4);
        // Arrays of arrays cannot be unnested row-wise, so tags travel as JSON.
        tags.push(serde_json::to_value(&r.5).unwrap_or_default());
        payload.push(r.6.clone());
        structured.push(r.7.clone());
        summary.push(r.8.clone());
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
