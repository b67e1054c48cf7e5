//! The move of an unpartitioned `events` into the partitioned table: it becomes the
//! partition `events_history` (see the parent module for the locks each step takes).

use std::time::Duration;

use jiff::civil::Date;
use jiff::{Timestamp, ToSpan as _, tz::TimeZone};
use tokio_postgres::Client;

use super::{
    MONTHS_BACK_WHEN_EMPTY, SWAP_ATTEMPTS, SWAP_LOCK_WAIT, create_months, is_partitioned, locked,
    month_start, retryable, utc,
};

/// The migration step: moves an unpartitioned `events` into the partitioned table built by
/// `0012_events_partitioned.sql`, then creates the months ahead. Safe to run again at any
/// point: each part checks what is done.
pub(crate) async fn partition_events(client: &mut Client) -> Result<(), tokio_postgres::Error> {
    if !is_partitioned(client).await? {
        let boundary = history_boundary(client).await?;
        history_key(client).await?;
        swap(client, boundary).await?;
        // A partitioned table's own statistics (used when a plan reads several partitions)
        // are gathered only by ANALYZE, never by autovacuum.
        #[allow(clippy::disallowed_methods)]
        client.batch_execute("ANALYZE events").await?;
        tracing::info!(%boundary, "events partitioned by month");
    }
    let created = create_months(client, Timestamp::now()).await?;
    if !created.is_empty() {
        tracing::info!(?created, "partitions created");
    }
    Ok(())
}

/// The name of the CHECK constraint that bounds the history before `boundary`.
pub(super) fn history_check(boundary: Timestamp) -> String {
    format!(
        "events_history_before_{}",
        boundary.to_zoned(TimeZone::UTC).strftime("%Y%m%d")
    )
}

/// Where the history partition ends: the boundary of a CHECK constraint an earlier run left
/// (when still at least a week ahead), or a new one. For a store with events the boundary is
/// the month after next (every event and every write until the swap lies before it); for an
/// empty store, [`MONTHS_BACK_WHEN_EMPTY`] months back.
#[allow(clippy::disallowed_methods)]
pub(super) async fn history_boundary(
    client: &mut Client,
) -> Result<Timestamp, tokio_postgres::Error> {
    let existing = client
        .query(
            "SELECT conname::text, convalidated FROM pg_constraint \
             WHERE conrelid = 'public.events'::regclass AND conname LIKE 'events\\_history\\_before\\_%'",
            &[],
        )
        .await?;
    let now = Timestamp::now();
    for row in &existing {
        let name: String = row.try_get(0)?;
        let validated: bool = row.try_get(1)?;
        let at = name
            .rsplit('_')
            .next()
            .and_then(|d| Date::strptime("%Y%m%d", d).ok())
            .map(utc);
        match at {
            Some(at) if at > now + Duration::from_secs(7 * 86_400) => {
                if !validated {
                    client
                        .batch_execute(&format!("ALTER TABLE events VALIDATE CONSTRAINT {name}"))
                        .await?;
                }
                return Ok(at);
            }
            _ => {
                // Too close (an interrupted move, resumed weeks later): writes dated after
                // it would soon be refused. A new constraint replaces it.
                locked(
                    client,
                    &format!("ALTER TABLE events DROP CONSTRAINT {name}"),
                )
                .await?;
            }
        }
    }
    let any: bool = client
        .query_one("SELECT EXISTS (SELECT FROM events)", &[])
        .await?
        .try_get(0)?;
    let start = month_start(now);
    let first = if any {
        start.checked_add(2.months())
    } else {
        start.checked_sub(MONTHS_BACK_WHEN_EMPTY.months())
    };
    let boundary = utc(first.unwrap_or(start));
    let name = history_check(boundary);
    // NOT VALID: added under a moment's lock; VALIDATE then reads the table under a lock
    // that lets readers and writers go on.
    locked(
        client,
        &format!(
            "ALTER TABLE events ADD CONSTRAINT {name} CHECK (occurred_at < '{boundary}'::timestamptz) NOT VALID"
        ),
    )
    .await?;
    client
        .batch_execute(&format!("ALTER TABLE events VALIDATE CONSTRAINT {name}"))
        .await?;
    Ok(boundary)
}

/// The unique index on (id, occurred_at) that becomes the history partition's key, built
/// without blocking writes (an interrupted build is dropped and built again).
pub(super) async fn history_key(client: &Client) -> Result<(), tokio_postgres::Error> {
    crate::ddl::build_index(
        client,
        "events_history_pkey",
        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS events_history_pkey ON events (id, occurred_at)",
    )
    .await
}

/// The swap: one transaction of catalog changes (see the module's notes), tried again when
/// readers hold the table longer than [`SWAP_LOCK_WAIT`].
pub(super) async fn swap(
    client: &mut Client,
    boundary: Timestamp,
) -> Result<(), tokio_postgres::Error> {
    let mut attempt = 1;
    loop {
        match swap_once(client, boundary).await {
            Err(e) if retryable(&e) && attempt < SWAP_ATTEMPTS => {
                tracing::warn!(attempt, "waiting for readers to let go of events");
                tokio::time::sleep(Duration::from_millis(250) * attempt).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[allow(clippy::disallowed_methods)]
pub(super) async fn swap_once(
    client: &mut Client,
    boundary: Timestamp,
) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = '{}ms'; \
         LOCK TABLE events, events_partitioned IN ACCESS EXCLUSIVE MODE",
        SWAP_LOCK_WAIT.as_millis()
    ))
    .await?;
    let locked_at = std::time::Instant::now();
    // Where the ids have got to, so that the new table's sequence goes on from there.
    let seq = tx
        .query_one(
            "SELECT pg_get_serial_sequence('public.events', 'id'), \
                    pg_get_serial_sequence('public.events_partitioned', 'id')",
            &[],
        )
        .await?;
    let (old_seq, new_seq): (Option<String>, String) = (seq.try_get(0)?, seq.try_get(1)?);
    let position = match old_seq {
        Some(old) => {
            let row = tx
                .query_one(&format!("SELECT last_value, is_called FROM {old}"), &[])
                .await?;
            Some((row.try_get::<_, i64>(0)?, row.try_get::<_, bool>(1)?))
        }
        None => None,
    };
    // Whatever else the old table was given (the writers' grants, policies of the operator's
    // own, its owner) goes to the new one: writers outside this project insert into `events`
    // and go on doing so after the swap. The old table keeps none of its grants: a partition
    // is reached through `events` only.
    let carried = tx.query(CARRY_OVER, &[]).await?;
    for row in &carried {
        let statement: String = row.try_get(0)?;
        tx.batch_execute(&statement).await?;
    }
    // The old table's own parts that the partitioned table now provides: its key on id
    // alone (a partition's key must hold the partition key), its triggers (the parent's
    // are cloned onto it or fire for it), its policy and grant (partitions are reached
    // through the parent only). A foreign key can only refer to a partitioned table by a
    // key that holds the partition key, and retention must be able to drop the month an
    // entity's latest event is in: `entity_state.last_event_id` keeps the id, unchecked.
    tx.batch_execute(
        "ALTER TABLE entity_state DROP CONSTRAINT IF EXISTS entity_state_last_event_id_fkey; \
         ALTER TABLE events ALTER COLUMN id DROP IDENTITY IF EXISTS; \
         ALTER TABLE events DROP CONSTRAINT IF EXISTS events_pkey; \
         ALTER TABLE events ADD CONSTRAINT events_history_pkey PRIMARY KEY USING INDEX events_history_pkey; \
         DROP TRIGGER IF EXISTS events_fill_search ON events; \
         DROP TRIGGER IF EXISTS events_rollups_insert ON events; \
         DROP TRIGGER IF EXISTS events_rollups_delete ON events; \
         DROP TRIGGER IF EXISTS events_rollups_update ON events; \
         DROP TRIGGER IF EXISTS events_rollups_truncate ON events; \
         DROP POLICY IF EXISTS events_tenant ON events; \
         ALTER TABLE events RENAME TO events_history",
    )
    .await?;
    // Names follow the tables: events_X becomes events_history_X, events_partitioned_X
    // becomes events_X (the names the plans and the documentation use).
    let renames = tx
        .query(
            "SELECT c.relname::text, t.relname::text FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid \
             WHERE t.relname IN ('events_history', 'events_partitioned') \
               AND c.relname <> 'events_history_pkey' ORDER BY 2",
            &[],
        )
        .await?;
    for row in &renames {
        let (index, table): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        let renamed = if table == "events_history" {
            index.replacen("events_", "events_history_", 1)
        } else {
            index.replacen("events_partitioned_", "events_", 1)
        };
        tx.batch_execute(&format!("ALTER INDEX {index} RENAME TO {renamed}"))
            .await?;
    }
    tx.batch_execute(&format!(
        "ALTER TABLE events_partitioned RENAME TO events; \
         ALTER SEQUENCE {new_seq} RENAME TO events_id_seq; \
         ALTER TABLE events ATTACH PARTITION events_history FOR VALUES FROM (MINVALUE) TO ('{boundary}'); \
         ALTER TABLE events_history DROP CONSTRAINT IF EXISTS {check}",
        check = history_check(boundary),
    ))
    .await?;
    if let Some((last, called)) = position {
        tx.execute("SELECT setval('events_id_seq', $1, $2)", &[&last, &called])
            .await?;
    }
    tx.commit().await?;
    // How long readers were held: the lock's whole life, commit included.
    let held_ms = u64::try_from(locked_at.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::info!(held_ms, "events swapped for the partitioned table");
    Ok(())
}

/// The statements that give the partitioned table what the old one was given, then take the
/// grants from the old one: each grant but its owner's, its owner, each policy the new table
/// lacks (`events_tenant` it has: `0012_events_partitioned.sql`).
const CARRY_OVER: &str = "\
    WITH old AS (SELECT oid, relowner, relacl FROM pg_class WHERE oid = 'public.events'::regclass), \
         grants AS (SELECT a.privilege_type, a.is_grantable, \
                           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS grantee \
                    FROM old, aclexplode(old.relacl) AS a WHERE a.grantee <> old.relowner) \
    SELECT s FROM (\
        SELECT 1 AS step, format('GRANT %s ON events_partitioned TO %s%s', privilege_type, grantee, \
                                 CASE WHEN is_grantable THEN ' WITH GRANT OPTION' ELSE '' END) AS s FROM grants \
        UNION ALL \
        SELECT 2, format('ALTER TABLE events_partitioned OWNER TO %I', pg_get_userbyid(old.relowner)) FROM old \
        WHERE old.relowner <> (SELECT relowner FROM pg_class WHERE oid = 'public.events_partitioned'::regclass) \
        UNION ALL \
        SELECT 3, format('CREATE POLICY %I ON events_partitioned AS %s FOR %s TO %s%s%s', p.policyname, p.permissive, p.cmd, \
                         (SELECT string_agg(CASE WHEN r = 'public' THEN 'PUBLIC' ELSE quote_ident(r) END, ', ') FROM unnest(p.roles) AS r), \
                         CASE WHEN p.qual IS NOT NULL THEN ' USING (' || p.qual || ')' ELSE '' END, \
                         CASE WHEN p.with_check IS NOT NULL THEN ' WITH CHECK (' || p.with_check || ')' ELSE '' END) \
        FROM pg_policies p \
        WHERE p.schemaname = 'public' AND p.tablename = 'events' \
          AND NOT EXISTS (SELECT FROM pg_policies q WHERE q.schemaname = 'public' \
                          AND q.tablename = 'events_partitioned' AND q.policyname = p.policyname) \
        UNION ALL \
        SELECT DISTINCT 4, format('REVOKE ALL ON events FROM %s', grantee) FROM grants \
    ) AS statements ORDER BY step";
