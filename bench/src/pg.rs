//! The local PostgreSQL of the examples that measure statements.

use tokio_postgres::{Client, NoTls};

/// A connection as `user` to database `db` of the local PostgreSQL (127.0.0.1:5432, trust
/// auth), for the examples that measure statements.
///
/// # Panics
///
/// When PostgreSQL does not answer.
#[allow(clippy::expect_used)]
pub async fn local_pg(user: &str, db: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port=5432 user={user} dbname={db}"),
        NoTls,
    )
    .await
    .expect("the local PostgreSQL on 127.0.0.1:5432");
    tokio::spawn(connection);
    client
}

/// Database `name` made anew on the local PostgreSQL and migrated; the administrator's
/// connection to it.
///
/// # Panics
///
/// When PostgreSQL does not answer or a migration fails.
pub async fn fresh_database(name: &str) -> Client {
    fresh_database_through(name, None).await
}

/// [`fresh_database`], migrated up to and including `last` (all migrations when `None`):
/// a store as an earlier release left it.
///
/// # Panics
///
/// As [`fresh_database`].
#[allow(clippy::disallowed_methods, clippy::expect_used)]
pub async fn fresh_database_through(name: &str, last: Option<&str>) -> Client {
    let admin = local_pg("postgres", "postgres").await;
    // Two statements: a multi-statement string is one implicit transaction, and neither may
    // run in one.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&sql)
            .await
            .expect("a database of the benchmark's own");
    }
    let mut db = local_pg("postgres", name).await;
    mcp_db::migrate_through(&mut db, last)
        .await
        .expect("the migrations");
    db
}
