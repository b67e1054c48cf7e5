//! Retention: months past the retention period are detached, taken out of the rollups and
//! dropped.

use jiff::Timestamp;
use tokio_postgres::Client;

use super::{Partition, partitions};

/// Retires every partition that ends at or before `cutoff`, oldest first.
#[allow(clippy::disallowed_methods)]
pub(super) async fn retire_before(
    client: &mut Client,
    cutoff: Timestamp,
) -> Result<Vec<String>, tokio_postgres::Error> {
    // A detach an earlier run began and did not finish is finished first.
    let pending = client
        .query(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = 'public.events'::regclass AND i.inhdetachpending",
            &[],
        )
        .await?;
    for row in &pending {
        let name: String = row.try_get(0)?;
        client
            .batch_execute(&format!(
                "ALTER TABLE events DETACH PARTITION {name} FINALIZE"
            ))
            .await?;
    }
    let backlog: bool = client
        .query_one("SELECT done_to < target_to FROM event_rollup_backfill", &[])
        .await?
        .try_get(0)?;
    if backlog {
        // Counts not taken yet cannot be taken out: retire on a later run.
        tracing::warn!("rollup backfill unfinished: no partition retired");
        return Ok(Vec::new());
    }
    let mut dropped = Vec::new();
    // Each partition is noted before it is detached, so that a run that stops between the
    // detach and the drop leaves a note the next run finishes from.
    for partition in partitions(client).await? {
        if partition.to > cutoff {
            break;
        }
        client
            .execute(
                "INSERT INTO event_partitions_retiring (name, from_at, to_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
                &[&partition.name, &partition.from, &partition.to],
            )
            .await?;
        client
            .batch_execute(&format!(
                "ALTER TABLE events DETACH PARTITION {} CONCURRENTLY",
                partition.name
            ))
            .await?;
    }
    let retiring = client
        .query(
            "SELECT r.name, r.from_at, r.to_at FROM event_partitions_retiring r \
             WHERE NOT EXISTS (SELECT FROM pg_inherits i \
                               WHERE i.inhrelid = to_regclass('public.' || quote_ident(r.name))) \
             ORDER BY r.to_at",
            &[],
        )
        .await?;
    for row in &retiring {
        let partition = Partition {
            name: row.try_get(0)?,
            from: row.try_get(1)?,
            to: row.try_get(2)?,
        };
        forget(client, &partition).await?;
        tracing::info!(partition = partition.name, "partition retired");
        dropped.push(partition.name);
    }
    Ok(dropped)
}

/// Events per transaction when a detached partition's counts are taken out of the totals:
/// a history partition of hundreds of millions of events is counted over several runs if
/// need be, each batch recorded as it is done.
const RETIRE_BATCH: i64 = 200_000;

/// Takes a detached partition's events out of the rollups and drops it. The totals lose the
/// partition's counts in batches of ids (each batch one transaction that also records how far
/// it got, so that an interrupted run resumes without counting a batch twice); then, in one
/// transaction, the minute and hour rollups lose their rows of the partition's range (months
/// begin on a whole hour in UTC, so those buckets hold its events only) and the table is
/// dropped. No writer can add to the range meanwhile: with the partition detached, an event
/// dated in it has no partition.
#[allow(clippy::disallowed_methods)]
async fn forget(client: &mut Client, partition: &Partition) -> Result<(), tokio_postgres::Error> {
    let name = &partition.name;
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('public.' || quote_ident($1)) IS NOT NULL",
            &[name],
        )
        .await?
        .try_get(0)?;
    if exists {
        take_out_of_totals(client, name).await?;
    }
    let tx = client.transaction().await?;
    tx.execute("DELETE FROM event_totals WHERE events = 0", &[])
        .await?;
    for (table, column) in [
        ("event_counts_minute", "minute"),
        ("event_counts_hour", "hour"),
        ("entity_counts_hour", "hour"),
    ] {
        tx.execute(
            &format!(
                "DELETE FROM {table} WHERE {column} < $2 AND ($1::timestamptz IS NULL OR {column} >= $1)"
            ),
            &[&partition.from, &partition.to],
        )
        .await?;
    }
    tx.batch_execute(&format!("DROP TABLE IF EXISTS {name}"))
        .await?;
    tx.execute(
        "DELETE FROM event_partitions_retiring WHERE name = $1",
        &[name],
    )
    .await?;
    tx.commit().await
}

/// Takes the detached partition `name`'s events out of the totals, `RETIRE_BATCH` ids per
/// transaction, from where an earlier run got to.
#[allow(clippy::disallowed_methods)]
async fn take_out_of_totals(client: &mut Client, name: &str) -> Result<(), tokio_postgres::Error> {
    loop {
        let tx = client.transaction().await?;
        let from: i64 = tx
            .query_one(
                "SELECT counted_to FROM event_partitions_retiring WHERE name = $1 FOR UPDATE",
                &[&name],
            )
            .await?
            .try_get(0)?;
        let to: Option<i64> = tx
            .query_one(
                &format!(
                    "SELECT max(id) FROM (SELECT id FROM {name} WHERE id > $1 ORDER BY id LIMIT $2) AS batch"
                ),
                &[&from, &RETIRE_BATCH],
            )
            .await?
            .try_get(0)?;
        let Some(to) = to else {
            tx.commit().await?;
            break;
        };
        tx.execute(
            &format!(
                "WITH gone AS (SELECT tenant_id, entity_type, event_type, severity, count(*) AS n \
                               FROM {name} WHERE id > $1 AND id <= $2 GROUP BY 1, 2, 3, 4) \
                 UPDATE event_totals t SET events = t.events - g.n FROM gone g \
                 WHERE (t.tenant_id, t.entity_type, t.event_type, t.severity) \
                     = (g.tenant_id, g.entity_type, g.event_type, g.severity)"
            ),
            &[&from, &to],
        )
        .await?;
        tx.execute(
            "UPDATE event_partitions_retiring SET counted_to = $2 WHERE name = $1",
            &[&name, &to],
        )
        .await?;
        tx.commit().await?;
    }
    Ok(())
}
