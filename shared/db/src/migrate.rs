//! Schema migrations, applied in order, each once, under an advisory lock so concurrent
//! deploys cannot interleave. Run with an administrative role (never the endpoint's).

use tokio_postgres::Client;

use crate::DbError;

/// Every migration, in order: (version, SQL).
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_event_store",
        include_str!("../migrations/0001_event_store.sql"),
    ),
    (
        "0002_reader_role_and_rls",
        include_str!("../migrations/0002_reader_role_and_rls.sql"),
    ),
];

/// Key of the advisory lock held while migrating (any constant unique to this schema).
const LOCK_KEY: i64 = 0x006d_6370_5f6d_6967;

/// Applies the migrations `client` has not seen; returns the versions applied now.
///
/// # Errors
///
/// The first failing statement's error; that migration's transaction is rolled back.
// Migration files are multi-statement SQL from this repository, never input: the one place
// (with the admin console below) where the simple protocol is right.
#[allow(clippy::disallowed_methods)]
pub async fn migrate(client: &mut Client) -> Result<Vec<String>, DbError> {
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
    let result = apply(client).await;
    let unlock = client
        .query("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    let applied = result?;
    unlock.map_err(q)?;
    Ok(applied)
}

async fn apply(client: &mut Client) -> Result<Vec<String>, DbError> {
    let mut applied = Vec::new();
    for (version, sql) in MIGRATIONS {
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
        let tx = client.transaction().await.map_err(DbError::Query)?;
        #[allow(clippy::disallowed_methods)]
        tx.batch_execute(sql).await.map_err(DbError::Query)?;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(DbError::Query)?;
        tx.commit().await.map_err(DbError::Query)?;
        tracing::info!(migration = version, "applied");
        applied.push((*version).to_owned());
    }
    Ok(applied)
}
