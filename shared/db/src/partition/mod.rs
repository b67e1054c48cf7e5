//! `events` partitioned by month of `occurred_at`: the move from one table, done online, and
//! the upkeep that keeps months ahead ready and retires those past the retention period.
//!
//! Layout: `events_history` holds everything before the first month of its own (for a store
//! that had events when it was moved, every event up to then), and `events_pYYYY_MM` one
//! month each, in UTC. Locks taken, and why none blocks readers for more than moments:
//!
//! * the moved table's key on (id, occurred_at) is built `CONCURRENTLY`, and the CHECK
//!   constraint that proves its rows lie before the boundary is added `NOT VALID` (a
//!   catalog change) and validated under SHARE UPDATE EXCLUSIVE (readers and writers go on);
//! * the swap is one transaction of catalog changes under ACCESS EXCLUSIVE: attaching the
//!   old table reads none of its rows (the validated constraint implies the partition's
//!   bound) and builds none of its indexes (they match the new table's by definition). It
//!   waits at most [`SWAP_LOCK_WAIT`] for the lock (so readers queued behind the wait are
//!   held no longer than that) and is tried again;
//! * a new month is created as a table of its own and attached, which takes SHARE UPDATE
//!   EXCLUSIVE on `events` (`CREATE TABLE ... PARTITION OF` would take ACCESS EXCLUSIVE);
//! * a retired month is detached `CONCURRENTLY` (two waits for transactions in flight, no
//!   lock that blocks readers), its counts are taken out of the rollups, and it is dropped.

use std::time::Duration;

use jiff::civil::Date;
use jiff::{Timestamp, ToSpan as _, tz::TimeZone};
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::DbError;

mod history;
mod index;
mod retire;

pub(crate) use history::partition_events;
pub use index::create_index;
use index::{build_child, parent_indexes, partition_index};
use retire::retire_before;

/// Months after the current one that always have a partition: an event dated later than
/// that is refused by the database (there is no catch-all partition: one would have to be
/// read whenever a month is attached, and would keep scans in time order from reading
/// partitions one after another).
pub const MONTHS_AHEAD: i32 = 6;

/// For a store that is empty when it is moved: the first month with a partition of its own
/// is this many months back, so that loading history spreads over months.
const MONTHS_BACK_WHEN_EMPTY: i32 = 12;

/// How long the swap waits for `events`' ACCESS EXCLUSIVE lock before it gives up and tries
/// again: readers that arrive during the wait queue behind it for at most this long.
pub const SWAP_LOCK_WAIT: Duration = Duration::from_secs(2);

/// How many times the swap is tried before the migration fails (it is then tried again on
/// the next run; nothing is left half-done).
const SWAP_ATTEMPTS: u32 = 30;

/// What [`maintain`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PartitionReport {
    /// Partitions attached by this run.
    pub created: Vec<String>,
    /// Partitions dropped by this run (retention).
    pub dropped: Vec<String>,
}

/// A partition of `events` and the range it holds (`from` None: everything before `to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub from: Option<Timestamp>,
    pub to: Timestamp,
}

/// Whether `events` is the partitioned table (the move has been done).
///
/// # Errors
///
/// The failing catalog query.
pub async fn is_partitioned(client: &Client) -> Result<bool, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('public.events')), false)",
            &[],
        )
        .await?;
    row.try_get(0)
}

/// The partitions of `events`, oldest first.
///
/// # Errors
///
/// The failing catalog query.
pub async fn partitions(client: &mut Client) -> Result<Vec<Partition>, tokio_postgres::Error> {
    // Bounds are printed in the session's time zone and read back in the same one.
    let tx = client.transaction().await?;
    tx.execute("SET LOCAL TimeZone = 'UTC'", &[]).await?;
    let rows = tx
        .query(
            "SELECT c.relname::text, \
                    (regexp_match(pg_get_expr(c.relpartbound, c.oid), $$FROM \\('([^']*)'\\)$$))[1]::timestamptz, \
                    (regexp_match(pg_get_expr(c.relpartbound, c.oid), $$TO \\('([^']*)'\\)$$))[1]::timestamptz \
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = 'public.events'::regclass AND NOT i.inhdetachpending \
             ORDER BY 3",
            &[],
        )
        .await?;
    tx.commit().await?;
    rows.iter()
        .map(|r| {
            Ok(Partition {
                name: r.try_get(0)?,
                from: r.try_get(1)?,
                to: r.try_get(2)?,
            })
        })
        .collect()
}

/// Creates the months ahead and, with `retention_months`, retires every month that ended
/// that many whole months before the current one. Run on every migrate run and daily.
///
/// # Errors
///
/// The first failing statement; what was done before it stays done.
pub async fn maintain(
    client: &mut Client,
    now: Timestamp,
    retention_months: Option<u32>,
) -> Result<PartitionReport, DbError> {
    // Under the migrations' advisory lock (re-entrant: `migrate` holds it when it calls
    // this), so that two runs never attach or retire the same month at once.
    client
        .query("SELECT pg_advisory_lock($1)", &[&crate::ddl::LOCK_KEY])
        .await
        .map_err(DbError::Query)?;
    let result = maintain_locked(client, now, retention_months).await;
    let unlock = client
        .query("SELECT pg_advisory_unlock($1)", &[&crate::ddl::LOCK_KEY])
        .await;
    let report = result?;
    unlock.map_err(DbError::Query)?;
    Ok(report)
}

async fn maintain_locked(
    client: &mut Client,
    now: Timestamp,
    retention_months: Option<u32>,
) -> Result<PartitionReport, DbError> {
    let q = DbError::Query;
    if !is_partitioned(client).await.map_err(q)? {
        return Ok(PartitionReport::default());
    }
    let created = create_months(client, now).await.map_err(q)?;
    let mut dropped = Vec::new();
    if let Some(months) = retention_months {
        let months = i32::try_from(months).unwrap_or(i32::MAX).min(10_000);
        // Beyond the calendar's range: nothing is that old.
        let cutoff = month_start(now)
            .checked_sub(months.months())
            .unwrap_or(Date::MIN);
        dropped = retire_before(client, utc(cutoff)).await.map_err(q)?;
    }
    if !created.is_empty() || !dropped.is_empty() {
        #[allow(clippy::disallowed_methods)]
        client.batch_execute("ANALYZE events").await.map_err(q)?;
    }
    Ok(PartitionReport { created, dropped })
}

/// The first day of `at`'s month, in UTC.
fn month_start(at: Timestamp) -> Date {
    at.to_zoned(TimeZone::UTC).date().first_of_month()
}

fn utc(date: Date) -> Timestamp {
    date.to_zoned(TimeZone::UTC)
        .map(|z| z.timestamp())
        .unwrap_or(Timestamp::MIN)
}

/// Runs one DDL statement that needs a moment of ACCESS EXCLUSIVE, waiting at most
/// [`SWAP_LOCK_WAIT`] for it each time, up to [`SWAP_ATTEMPTS`] times.
#[allow(clippy::disallowed_methods)]
async fn locked(client: &mut Client, statement: &str) -> Result<(), tokio_postgres::Error> {
    let wait = format!(
        "SET LOCAL lock_timeout = '{}ms'",
        SWAP_LOCK_WAIT.as_millis()
    );
    let mut attempt = 1;
    loop {
        let tx = client.transaction().await?;
        tx.batch_execute(&wait).await?;
        match tx.batch_execute(statement).await {
            Ok(()) => return tx.commit().await,
            Err(e) if retryable(&e) && attempt < SWAP_ATTEMPTS => {
                drop(tx);
                tracing::warn!(attempt, "waiting for readers to let go of events");
                tokio::time::sleep(Duration::from_millis(250) * attempt).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn retryable(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)
        || e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
}

/// Attaches a partition for every month from the end of the last one up to
/// [`MONTHS_AHEAD`] months after `now`'s. Returns their names.
#[allow(clippy::disallowed_methods)]
async fn create_months(
    client: &mut Client,
    now: Timestamp,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let last = partitions(client).await?.last().map(|p| p.to);
    let Some(mut from) = last else {
        return Ok(Vec::new());
    };
    let until = month_start(now)
        .checked_add((MONTHS_AHEAD + 1).months())
        .map(utc)
        .unwrap_or(from);
    let indexes = parent_indexes(client).await?;
    let mut created = Vec::new();
    while from < until {
        let zoned = from.to_zoned(TimeZone::UTC);
        let to = zoned
            .checked_add(1.month())
            .map(|z| z.timestamp())
            .unwrap_or(Timestamp::MAX);
        let name = format!("events_p{}", zoned.strftime("%Y_%m"));
        // A table of its own, then attached: CREATE TABLE ... PARTITION OF would lock
        // `events` against readers. Its indexes are built first (on an empty table: instant)
        // under names that say what they are; the attach adopts them, and brings the key,
        // the parent's row trigger and its foreign key. No grant, and row-level security
        // with no policy: the reader role reaches it only through `events`.
        client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {name} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS); \
                 ALTER TABLE {name} ENABLE ROW LEVEL SECURITY"
            ))
            .await?;
        for (index, rest) in &indexes {
            build_child(client, &partition_index(&name, index), &name, rest, false).await?;
        }
        locked(
            client,
            &format!(
                "ALTER TABLE events ATTACH PARTITION {name} FOR VALUES FROM ('{from}') TO ('{to}')"
            ),
        )
        .await?;
        created.push(name);
        from = to;
    }
    Ok(created)
}
