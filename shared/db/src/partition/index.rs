//! Indexes of the partitioned `events`: one per month under names that say what they are.

use tokio_postgres::Client;

use super::partitions;

/// Builds index `name` (`definition`: `ON events USING ...`) on the partitioned `events`:
/// the parent's index first, `ON ONLY` (a catalog entry, invalid until every partition has
/// its own), then each partition's, named `<partition>_<name without "events_">`, built
/// `CONCURRENTLY` when asked (writes go on; PostgreSQL cannot build a partitioned index
/// concurrently in one statement) and attached to it. Idempotent: what exists is kept.
///
/// # Errors
///
/// The first failing statement.
#[allow(clippy::disallowed_methods)]
pub async fn create_index(
    client: &mut Client,
    name: &str,
    definition: &str,
    concurrently: bool,
) -> Result<(), tokio_postgres::Error> {
    let Some(rest) = definition.trim_start().strip_prefix("ON events ") else {
        return client
            .batch_execute(&format!("CREATE INDEX IF NOT EXISTS {name} {definition}"))
            .await;
    };
    client
        .batch_execute(&format!(
            "CREATE INDEX IF NOT EXISTS {name} ON ONLY events {rest}"
        ))
        .await?;
    for partition in partitions(client).await? {
        let child = partition_index(&partition.name, name);
        build_child(client, &child, &partition.name, rest, concurrently).await?;
        let attached: bool = client
            .query_one(
                "SELECT EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1))",
                &[&child],
            )
            .await?
            .try_get(0)?;
        if !attached {
            client
                .batch_execute(&format!("ALTER INDEX {name} ATTACH PARTITION {child}"))
                .await?;
        }
    }
    Ok(())
}

/// The name of `partition`'s own index of the parent's `index`.
pub(super) fn partition_index(partition: &str, index: &str) -> String {
    format!(
        "{partition}_{}",
        index.strip_prefix("events_").unwrap_or(index)
    )
}

/// Builds `child` on `table` (dropping an invalid one an interrupted concurrent build left).
pub(super) async fn build_child(
    client: &Client,
    child: &str,
    table: &str,
    rest: &str,
    concurrently: bool,
) -> Result<(), tokio_postgres::Error> {
    let how = if concurrently { "CONCURRENTLY " } else { "" };
    crate::ddl::build_index(
        client,
        child,
        &format!("CREATE INDEX {how}IF NOT EXISTS {child} ON {table} {rest}"),
    )
    .await
}

/// The parent's indexes other than its key, each as (name, what follows `ON ONLY
/// public.events` in its definition).
pub(super) async fn parent_indexes(
    client: &Client,
) -> Result<Vec<(String, String)>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT c.relname::text, pg_get_indexdef(c.oid) FROM pg_index i \
             JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = 'public.events'::regclass AND NOT i.indisprimary ORDER BY 1",
            &[],
        )
        .await?;
    let mut indexes = Vec::with_capacity(rows.len());
    for row in &rows {
        let (name, definition): (String, String) = (row.try_get(0)?, row.try_get(1)?);
        if let Some((_, rest)) = definition.split_once(" ON ONLY public.events ") {
            indexes.push((name, rest.to_owned()));
        }
    }
    Ok(indexes)
}
