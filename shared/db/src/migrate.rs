//! Schema migrations, applied in order, each once, under an advisory lock so concurrent
//! deploys cannot interleave. Run with an administrative role (never the endpoint's).
//!
//! Most steps are SQL files run in one transaction each. A step that PostgreSQL forbids in a
//! transaction (`CREATE INDEX CONCURRENTLY`) or that must not hold locks for long (a backfill
//! over millions of rows) is written here instead, idempotent, and recorded only once it
//! has finished: a deploy that dies half-way simply runs it again.

use tokio_postgres::Client;

use crate::DbError;
use crate::ddl::{LOCK_KEY, build_index};

/// One migration step.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// A SQL file, run in one transaction.
    Sql(&'static str),
    /// Fills `events.search` for rows older than its trigger, in short batches, then builds
    /// the search index concurrently (writes go on throughout).
    EventSearchIndex,
    /// Indexes built concurrently (writes go on throughout): (name, `ON table (...)`).
    Indexes(&'static [(&'static str, &'static str)]),
    /// A SQL file that changes how `events.search` is computed, run in one transaction,
    /// then every stored document recomputed in short batches (writes go on throughout).
    SearchDocuments(&'static str),
    /// Indexes dropped concurrently (readers and writers go on throughout).
    DropIndexes(&'static [&'static str]),
    /// A SQL file that builds the partitioned table beside `events` (one transaction), then
    /// the move of `events` into it (`partition::partition_events`: online, resumable).
    PartitionEvents(&'static str),
}

/// Every migration, in order: (version, step).
pub const MIGRATIONS: &[(&str, Step)] = &[
    (
        "0001_event_store",
        Step::Sql(include_str!("../migrations/0001_event_store.sql")),
    ),
    (
        "0002_reader_role_and_rls",
        Step::Sql(include_str!("../migrations/0002_reader_role_and_rls.sql")),
    ),
    (
        "0003_event_search",
        Step::Sql(include_str!("../migrations/0003_event_search.sql")),
    ),
    ("0004_event_search_index", Step::EventSearchIndex),
    // completion/complete by prefix, whatever the database's collation: in byte order
    // (COLLATE "C") the values that start with a prefix are one contiguous index range,
    // which en_US and other linguistic collations do not promise.
    (
        "0005_completion_indexes",
        Step::Indexes(&[
            (
                "entity_state_completion",
                r#"ON entity_state (tenant_id, entity_id COLLATE "C")"#,
            ),
            (
                "event_types_completion",
                r#"ON event_types (name COLLATE "C")"#,
            ),
        ]),
    ),
    (
        "0006_search_field_gaps",
        Step::SearchDocuments(include_str!("../migrations/0006_search_field_gaps.sql")),
    ),
    (
        "0007_event_rollups",
        Step::Sql(include_str!("../migrations/0007_event_rollups.sql")),
    ),
    (
        "0008_search_newest_matches",
        Step::Sql(include_str!("../migrations/0008_search_newest_matches.sql")),
    ),
    (
        "0009_search_by_hour",
        Step::Sql(include_str!("../migrations/0009_search_by_hour.sql")),
    ),
    // The search index with each event's tenant and hour: `search_event_newest` asks it for
    // the newest hours' matches. It answers every search the old one did (tenant and words),
    // which is then dropped: writers keep one search index.
    (
        "0010_search_hour_index",
        Step::Indexes(&[SEARCH_HOUR_INDEX]),
    ),
    (
        "0011_drop_search_index",
        Step::DropIndexes(&[SEARCH_INDEX.0]),
    ),
    (
        "0012_events_partitioned",
        Step::PartitionEvents(include_str!("../migrations/0012_events_partitioned.sql")),
    ),
    (
        "0013_search_by_month",
        Step::Sql(include_str!("../migrations/0013_search_by_month.sql")),
    ),
];

/// The search index of `0004_event_search_index` (name, definition): the tenant and the
/// document's words. Dropped by `0011_drop_search_index`.
pub const SEARCH_INDEX: (&str, &str) = ("events_search", "ON events USING gin (tenant_id, search)");

/// The search index of `0010_search_hour_index` (name, definition): the tenant, each event's
/// tenant and hour as one key (`event_hour_key`, from `0009_search_by_hour`), and the words.
pub const SEARCH_HOUR_INDEX: (&str, &str) = (
    "events_search_hour",
    "ON events USING gin (tenant_id, (ARRAY[event_hour_key(tenant_id, occurred_at)]), search)",
);

/// Events per rollup backfill batch: each batch holds `events`' SHARE lock (writers wait,
/// readers do not) for the moment it takes to aggregate them.
const ROLLUP_BATCH: i64 = 20_000;

/// Rows per backfill statement: each batch is its own short transaction, so row locks are
/// held for a moment and the work done survives an interrupted deploy.
const BACKFILL_BATCH: i64 = 5_000;

/// Applies the migrations `client` has not seen; returns the versions applied now.
///
/// # Errors
///
/// The first failing statement's error; that migration's transaction is rolled back.
pub async fn migrate(client: &mut Client) -> Result<Vec<String>, DbError> {
    migrate_through(client, None).await
}

/// [`migrate`], stopping after the migration `last` when given (a store as an earlier
/// release left it: for tests and rehearsals of a migration).
///
/// # Errors
///
/// As [`migrate`].
// Migration files are multi-statement SQL from this repository, never input: the one place
// (with the admin console below) where the simple protocol is right.
#[allow(clippy::disallowed_methods)]
pub async fn migrate_through(
    client: &mut Client,
    last: Option<&str>,
) -> Result<Vec<String>, DbError> {
    let q = DbError::Query;
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (\
                 version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .map_err(q)?;
    client
        .query("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(q)?;
    let result = apply(client, last).await;
    let unlock = client
        .query("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    let applied = result?;
    unlock.map_err(q)?;
    Ok(applied)
}

async fn apply(client: &mut Client, last: Option<&str>) -> Result<Vec<String>, DbError> {
    let mut applied = Vec::new();
    let upto = last
        .and_then(|l| MIGRATIONS.iter().position(|(v, _)| *v == l))
        .map_or(MIGRATIONS.len(), |i| i + 1);
    for (version, step) in &MIGRATIONS[..upto] {
        let done = client
            .query_opt(
                "SELECT 1 FROM schema_migrations WHERE version = $1",
                &[version],
            )
            .await
            .map_err(DbError::Query)?
            .is_some();
        if done {
            continue;
        }
        let record = "INSERT INTO schema_migrations (version) VALUES ($1)";
        if let Step::Sql(sql) = step {
            let tx = client.transaction().await.map_err(DbError::Query)?;
            #[allow(clippy::disallowed_methods)]
            tx.batch_execute(sql).await.map_err(DbError::Query)?;
            tx.execute(record, &[version])
                .await
                .map_err(DbError::Query)?;
            tx.commit().await.map_err(DbError::Query)?;
        } else {
            // Outside a transaction (CONCURRENTLY cannot run in one, and a backfill must not
            // hold its locks), recorded once done: an interrupted deploy runs it again.
            match step {
                Step::EventSearchIndex => event_search_index(client).await,
                Step::Indexes(indexes) => concurrent_indexes(client, indexes).await,
                Step::SearchDocuments(sql) => search_documents(client, sql).await,
                Step::DropIndexes(names) => drop_indexes(client, names).await,
                Step::PartitionEvents(sql) => partition_events(client, sql).await,
                Step::Sql(_) => Ok(()),
            }
            .map_err(DbError::Query)?;
            client
                .execute(record, &[version])
                .await
                .map_err(DbError::Query)?;
        }
        tracing::info!(migration = version, "applied");
        applied.push((*version).to_owned());
    }
    // The rows the rollup triggers have not seen (those older than `0007_event_rollups`, or
    // every row after `event_rollups_reset()`) are counted here, on every run until none is
    // left: an interrupted run resumes where it stopped, and readers count from `events`
    // until then.
    let backlog = client
        .query_one("SELECT done_to < target_to FROM event_rollup_backfill", &[])
        .await
        .map_err(DbError::Query)?;
    if backlog.try_get::<_, bool>(0).map_err(DbError::Query)? {
        let rows = count_rollup_backlog(client).await.map_err(DbError::Query)?;
        tracing::info!(rows, "event rollups backfilled");
    }
    // The months ahead, on every run (retention is the caller's: `partition::maintain`).
    crate::partition::maintain(client, jiff::Timestamp::now(), None).await?;
    Ok(applied)
}

/// Runs `sql` (the partitioned table, built beside `events`) in one transaction, then moves
/// `events` into it.
#[allow(clippy::disallowed_methods)]
async fn partition_events(client: &mut Client, sql: &str) -> Result<(), tokio_postgres::Error> {
    if !crate::partition::is_partitioned(client).await? {
        let tx = client.transaction().await?;
        tx.batch_execute(sql).await?;
        tx.commit().await?;
    }
    crate::partition::partition_events(client).await
}

/// Backfills `events.search` and builds its GIN index without blocking writes.
///
/// The backfill walks the identity key in ranges (each range one index scan, so the whole
/// walk reads the table once) and touches only rows still without a document; the trigger
/// added by `0003_event_search` computes it (`SET search = NULL` fires it), and fills every
/// row inserted meanwhile. The index is then built with `CREATE INDEX CONCURRENTLY`; a build
/// an earlier run left invalid (interrupted) is dropped and built again.
#[allow(clippy::disallowed_methods)]
async fn event_search_index(client: &Client) -> Result<(), tokio_postgres::Error> {
    let filled = fill_search(client, "AND search IS NULL").await?;
    tracing::info!(rows = filled, "events.search backfilled");
    let (name, definition) = SEARCH_INDEX;
    concurrent_index(client, name, definition).await
}

/// Walks the identity key in ranges (each range one index scan, so the whole walk reads the
/// table once) and sets `search = NULL` on the rows `only` selects, which makes the trigger
/// of `0003_event_search` compute each document again; every row inserted meanwhile gets its
/// document from the same trigger. Returns the rows touched.
#[allow(clippy::disallowed_methods)]
async fn fill_search(client: &Client, only: &str) -> Result<u64, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM events",
            &[],
        )
        .await?;
    let (first, last): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    let update = format!("UPDATE events SET search = NULL WHERE id >= $1 AND id < $2 {only}");
    let mut filled = 0;
    let mut from = first;
    while from <= last && last > 0 {
        filled += client
            .execute(&update, &[&from, &(from + BACKFILL_BATCH)])
            .await?;
        from += BACKFILL_BATCH;
    }
    Ok(filled)
}

/// Runs `sql` (a new `event_search_document`) in one transaction, then recomputes every
/// stored document with it.
#[allow(clippy::disallowed_methods)]
async fn search_documents(client: &mut Client, sql: &str) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.batch_execute(sql).await?;
    tx.commit().await?;
    let rows = fill_search(client, "").await?;
    tracing::info!(rows, "events.search recomputed");
    Ok(())
}

/// Counts the rows `event_rollup_backfill` says the triggers left out, `ROLLUP_BATCH` ids at
/// a time, each batch one transaction that also advances `done_to`, so an interrupted
/// migration resumes where it stopped. Each batch first takes `events`' SHARE lock: a delete
/// or update of a row in the batch's range then either committed before the batch read it
/// (the trigger left it out, the batch counts its new state) or waits until the batch has
/// committed (the trigger, now outside the backlog, counts the change). Readers never wait.
async fn count_rollup_backlog(client: &mut Client) -> Result<u64, tokio_postgres::Error> {
    let mut counted = 0;
    loop {
        let tx = client.transaction().await?;
        tx.execute("SET LOCAL lock_timeout = '5s'", &[]).await?;
        tx.execute("LOCK TABLE events IN SHARE MODE", &[]).await?;
        let row = tx
            .query_one(
                "SELECT done_to, least(done_to + $1, target_to) FROM event_rollup_backfill",
                &[&ROLLUP_BATCH],
            )
            .await?;
        let (from, to): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        if from >= to {
            return Ok(counted);
        }
        let batch = tx
            .query_one(
                "SELECT coalesce(cardinality(s.deltas), 0)::bigint FROM (\
                     SELECT array_agg(ROW(tenant_id, entity_id, entity_type, event_type, severity, \
                         occurred_at, 1)::event_rollup_delta) AS deltas \
                     FROM events WHERE id > $1 AND id <= $2) AS s, \
                 LATERAL (SELECT event_rollups_add(s.deltas)) AS added",
                &[&from, &to],
            )
            .await?;
        counted += u64::try_from(batch.try_get::<_, i64>(0)?).unwrap_or(0);
        tx.execute("UPDATE event_rollup_backfill SET done_to = $1", &[&to])
            .await?;
        tx.commit().await?;
    }
}

/// Builds each of `indexes` concurrently (on the partitioned `events`, partition by
/// partition: `partition::create_index`).
async fn concurrent_indexes(
    client: &mut Client,
    indexes: &[(&str, &str)],
) -> Result<(), tokio_postgres::Error> {
    let partitioned = crate::partition::is_partitioned(client).await?;
    for (name, definition) in indexes {
        if partitioned && definition.trim_start().starts_with("ON events ") {
            crate::partition::create_index(client, name, definition, true).await?;
        } else {
            concurrent_index(client, name, definition).await?;
        }
    }
    Ok(())
}

/// Drops each of `names` with `DROP INDEX CONCURRENTLY` (a drop an earlier run interrupted
/// leaves the index invalid; this one finishes it).
#[allow(clippy::disallowed_methods)]
async fn drop_indexes(client: &Client, names: &[&str]) -> Result<(), tokio_postgres::Error> {
    for name in names {
        // An index of a partitioned table cannot be dropped concurrently: a plain drop, a
        // catalog change under a moment's lock (waiting at most 5 s for it).
        let partitioned: bool = client
            .query_one(
                "SELECT coalesce((SELECT relkind = 'I' FROM pg_class WHERE oid = to_regclass($1)), false)",
                &[name],
            )
            .await?
            .try_get(0)?;
        let drop = if partitioned {
            format!("SET lock_timeout = '5s'; DROP INDEX IF EXISTS {name}; RESET lock_timeout")
        } else {
            format!("DROP INDEX CONCURRENTLY IF EXISTS {name}")
        };
        client.batch_execute(&drop).await?;
        tracing::info!(index = name, "index dropped");
    }
    Ok(())
}

/// Builds index `name` (`definition`: `ON table ...`) with `CREATE INDEX CONCURRENTLY`.
async fn concurrent_index(
    client: &Client,
    name: &str,
    definition: &str,
) -> Result<(), tokio_postgres::Error> {
    build_index(
        client,
        name,
        &format!("CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} {definition}"),
    )
    .await?;
    tracing::info!(index = name, "index ready");
    Ok(())
}
