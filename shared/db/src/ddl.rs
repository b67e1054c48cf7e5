//! What the migrations and the partition upkeep both need: the advisory lock that keeps two
//! runs apart, and an index build that survives an interrupted one.

use tokio_postgres::Client;

/// Key of the advisory lock held while migrating (any constant unique to this schema).
pub(crate) const LOCK_KEY: i64 = 0x006d_6370_5f6d_6967;

/// Runs `create` (a `CREATE ... INDEX ... IF NOT EXISTS` of index `name`), first dropping an
/// index of that name that an interrupted concurrent build left invalid, so that it is built
/// again rather than kept as it is.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn build_index(
    client: &Client,
    name: &str,
    create: &str,
) -> Result<(), tokio_postgres::Error> {
    let valid: Option<bool> = client
        .query_opt(
            "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1)",
            &[&name],
        )
        .await?
        .map(|r| r.try_get(0))
        .transpose()?;
    if valid == Some(false) {
        client
            .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            .await?;
    }
    client.batch_execute(create).await
}
