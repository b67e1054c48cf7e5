//! `migrate [--seed [EVENTS_PER_TENANT]]`: applies migrations over `DATABASE_ADMIN_URL`
//! (an administrative role; plain TCP only on loopback), then optionally loads the sample
//! tenants `tenant-a`, `tenant-b` and `tenant-c`. Idempotent: safe to run on every deploy
//! and every local start.

use anyhow::{Context as _, bail};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let url = std::env::var("DATABASE_ADMIN_URL").context("DATABASE_ADMIN_URL is required")?;
    let config: tokio_postgres::Config = url
        .parse()
        .context("DATABASE_ADMIN_URL is not a postgres URL")?;
    let loopback = config.get_hosts().iter().all(|h| matches!(h, tokio_postgres::config::Host::Tcp(n) if n == "127.0.0.1" || n == "localhost"));
    if !loopback {
        bail!(
            "this local runner only connects to a database on loopback; deployed migrations run through the migrate Lambda (issue 6)"
        );
    }
    let (mut client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .context("connecting to DATABASE_ADMIN_URL")?;
    tokio::spawn(connection);
    let applied = migrate::migrate(&mut client).await?;
    tracing::info!(?applied, "migrations up to date");
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--seed") {
        let per_tenant = args
            .next()
            .map(|n| n.parse())
            .transpose()
            .context("--seed takes an event count")?
            .unwrap_or(5000);
        let n = migrate::seed(
            &mut client,
            &["tenant-a", "tenant-b", "tenant-c"],
            per_tenant,
            jiff::Timestamp::now(),
        )
        .await?;
        tracing::info!(inserted = n, "sample data loaded");
    }
    Ok(())
}
