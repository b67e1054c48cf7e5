//! The migrate step.
//!
//! * As a Lambda function (what the deploy invokes): connects with the admin secret
//!   `DB_ADMIN_SECRET_ID` (TLS per `DB_SSLMODE`/`DB_CA_FILE`, `DB_HOST`/`DB_PORT`/`DB_NAME`
//!   overrides), applies the migrations, sets the endpoint role's password from
//!   `DB_SECRET_ID` when given, and returns the report as JSON.
//! * From a shell: the same with `DB_ADMIN_SECRET_ID`, or `DATABASE_ADMIN_URL` (plain TCP on
//!   loopback), plus `--seed [EVENTS_PER_TENANT]` to load the sample tenants `tenant-a`,
//!   `tenant-b`, `tenant-c` locally.
//!
//! Idempotent: safe on every deploy and every local start.

use std::time::Duration;

use anyhow::{Context as _, bail};
use mcp_db::{Db, DbConfig};

/// The admin connection's settings: the `DB_*` variables with the admin secret or URL in
/// place of the endpoint's.
async fn admin_db() -> anyhow::Result<Db> {
    let get = |name: &str| match name {
        "DB_SECRET_ID" => std::env::var("DB_ADMIN_SECRET_ID").ok(),
        "DATABASE_URL" => std::env::var("DATABASE_ADMIN_URL").ok(),
        "DB_SSLMODE" if std::env::var("DATABASE_ADMIN_URL").is_ok() => {
            Some(std::env::var("DB_SSLMODE").unwrap_or_else(|_| "disable".into()))
        }
        other => std::env::var(other).ok(),
    };
    let config = DbConfig::from_lookup(get)
        .await?
        .context("DB_ADMIN_SECRET_ID (deployed) or DATABASE_ADMIN_URL (local) is required")?;
    Ok(Db::new(config))
}

/// The endpoint's own secret, when `DB_SECRET_ID` is set.
async fn endpoint_secret() -> anyhow::Result<Option<mcp_db::DbSecret>> {
    let Ok(secret_id) = std::env::var("DB_SECRET_ID") else {
        return Ok(None);
    };
    let source =
        mcp_db::SecretSource::new(mcp_db::secrets_client().await, secret_id, Duration::ZERO);
    Ok(Some(source.get(true, Duration::from_secs(10)).await?))
}

async fn run_once() -> anyhow::Result<migrate::Report> {
    let db = admin_db().await?;
    let mut client = db
        .connect_unchecked()
        .await
        .context("connecting as the admin role")?;
    let endpoint = endpoint_secret().await?;
    migrate::deploy(&mut client, endpoint.as_ref()).await
}

/// The level from `RUST_LOG` (the template sets it from `LogLevel`), `info` without it.
fn log_level() -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var("AWS_LAMBDA_RUNTIME_API").is_ok() {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(log_level())
            .with_target(false)
            .without_time()
            .init();
        let handler =
            lambda_runtime::service_fn(|_: lambda_runtime::LambdaEvent<serde_json::Value>| async {
                let report = run_once().await.map_err(|e| {
                    tracing::error!(error = format!("{e:#}"), "migration failed");
                    lambda_runtime::Error::from(format!("{e:#}"))
                })?;
                tracing::info!(?report, "migrations up to date");
                Ok::<_, lambda_runtime::Error>(serde_json::to_value(report)?)
            });
        return lambda_runtime::run(handler)
            .await
            .map_err(|e| anyhow::anyhow!(e));
    }
    tracing_subscriber::fmt()
        .with_env_filter(log_level())
        .with_target(false)
        .init();
    let report = run_once().await?;
    tracing::info!(?report, "migrations up to date");
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        None => {}
        Some("--seed") => {
            let url = std::env::var("DATABASE_ADMIN_URL")
                .context("--seed runs locally, with DATABASE_ADMIN_URL")?;
            let per_tenant = args
                .next()
                .map(|n| n.parse())
                .transpose()
                .context("--seed takes an event count")?
                .unwrap_or(5000);
            let (mut client, connection) =
                tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            let n = migrate::seed(
                &mut client,
                &["tenant-a", "tenant-b", "tenant-c"],
                per_tenant,
                jiff::Timestamp::now(),
            )
            .await?;
            tracing::info!(inserted = n, "sample data loaded");
        }
        Some(other) => bail!("unknown argument {other:?}: expected --seed [EVENTS_PER_TENANT]"),
    }
    Ok(())
}
