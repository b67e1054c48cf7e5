//! The migrate step.
//!
//! * As a Lambda function (what the deploy invokes): connects with the admin secret
//!   `DB_ADMIN_SECRET_ID` (TLS per `DB_SSLMODE`/`DB_CA_FILE`, `DB_HOST`/`DB_PORT`/`DB_NAME`
//!   overrides), applies the migrations, sets the endpoint role's password from
//!   `DB_SECRET_ID` when given, and returns the report as JSON. The payload `{}` asks for
//!   nothing more; `{"sample_tenant": "demo", "sample_events": 5000}` also loads sample events
//!   for that tenant once (the quick start's), and the report says how many.
//! * From a shell: the same with `DB_ADMIN_SECRET_ID`, or `DATABASE_ADMIN_URL` (plain TCP on
//!   loopback), plus `--seed [EVENTS_PER_TENANT]` to load the sample tenants `tenant-a`,
//!   `tenant-b`, `tenant-c` locally.
//!
//! Every run also keeps `events`' monthly partitions: the months ahead are created, and with
//! `EVENT_RETENTION_MONTHS` set (or `--retention-months`), every month that ended that many
//! whole months before the current one is dropped, its counts taken out of the rollups (the
//! report lists both). The deployed function also runs daily for this, with the payload `{}`.
//!
//! Idempotent: safe on every deploy and every local start.

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser;
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

/// What an invocation may ask besides the migrations.
#[derive(Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    /// Load sample events for this tenant, unless it has events already.
    #[serde(default)]
    sample_tenant: Option<String>,
    /// How many (at most `MAX_SAMPLE_EVENTS`, so the load fits the function's timeout).
    #[serde(default = "default_sample_events")]
    sample_events: usize,
}

const MAX_SAMPLE_EVENTS: usize = 100_000;

fn default_sample_events() -> usize {
    5000
}

impl Request {
    fn from_payload(payload: serde_json::Value) -> anyhow::Result<Self> {
        // (serde would also take a struct as a sequence of its fields.)
        if !payload.is_object() {
            bail!("the payload must be a JSON object");
        }
        let request: Self = serde_json::from_value(payload).context(
            "the payload: expected {} or {\"sample_tenant\": NAME, \"sample_events\": N}",
        )?;
        if request.sample_events > MAX_SAMPLE_EVENTS {
            bail!("sample_events is at most {MAX_SAMPLE_EVENTS}");
        }
        if request
            .sample_tenant
            .as_deref()
            .is_some_and(|t| t.is_empty() || t.len() > 128)
        {
            bail!("sample_tenant must be 1 to 128 characters");
        }
        Ok(request)
    }
}

/// `EVENT_RETENTION_MONTHS`: months of events to keep after the current one (unset or 0:
/// keep everything).
fn retention_from_env() -> anyhow::Result<Option<u32>> {
    match std::env::var("EVENT_RETENTION_MONTHS") {
        Err(_) => Ok(None),
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => parse_retention(&v).map_err(anyhow::Error::msg),
    }
}

/// A number of whole months, 0 meaning no retention.
fn parse_retention(value: &str) -> Result<Option<u32>, String> {
    let months: u32 = value.trim().parse().map_err(|_| {
        format!("EVENT_RETENTION_MONTHS must be a whole number of months (0: keep everything), not {value:?}")
    })?;
    Ok((months > 0).then_some(months))
}

async fn run_once(request: &Request, retention: Option<u32>) -> anyhow::Result<serde_json::Value> {
    let db = admin_db().await?;
    let mut client = db
        .connect_unchecked()
        .await
        .context("connecting as the admin role")?;
    let endpoint = endpoint_secret().await?;
    let report = migrate::deploy(&mut client, endpoint.as_ref()).await?;
    let mut answer = serde_json::to_value(&report)?;
    let partitions = mcp_db::partition::maintain(&mut client, jiff::Timestamp::now(), retention)
        .await
        .context("keeping the monthly partitions")?;
    answer["partitions"] = serde_json::to_value(&partitions)?;
    if let Some(tenant) = &request.sample_tenant {
        let loaded = migrate::seed(
            &mut client,
            &[tenant.as_str()],
            request.sample_events,
            jiff::Timestamp::now(),
        )
        .await
        .context("loading the sample events")?;
        answer["sample_events_loaded"] = loaded.into();
    }
    Ok(answer)
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
        let handler = lambda_runtime::service_fn(
            |event: lambda_runtime::LambdaEvent<serde_json::Value>| async {
                let answer = async {
                    run_once(
                        &Request::from_payload(event.payload)?,
                        retention_from_env()?,
                    )
                    .await
                }
                .await
                .map_err(|e| {
                    tracing::error!(error = format!("{e:#}"), "migration failed");
                    lambda_runtime::Error::from(format!("{e:#}"))
                })?;
                tracing::info!(report = %answer, "migrations up to date");
                Ok::<_, lambda_runtime::Error>(answer)
            },
        );
        return lambda_runtime::run(handler)
            .await
            .map_err(|e| anyhow::anyhow!(e));
    }
    // Arguments first: `--help` or a wrong one must not touch a database.
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(log_level())
        .with_target(false)
        .init();
    let report = run_once(&Request::default(), args.retention_months.flatten()).await?;
    tracing::info!(%report, "migrations up to date");
    if let Some(per_tenant) = args.seed {
        let url = std::env::var("DATABASE_ADMIN_URL")
            .context("--seed runs locally, with DATABASE_ADMIN_URL")?;
        let (mut client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
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
    Ok(())
}

/// Applies the event-store migrations (the deploy step; idempotent). From a shell it
/// connects with DATABASE_ADMIN_URL (plain TCP on loopback) or the secret DB_ADMIN_SECRET_ID;
/// as a Lambda function it takes the secret and a JSON payload instead of arguments.
#[derive(Debug, Parser)]
#[command(name = "migrate", version)]
struct Args {
    /// Then load the sample tenants tenant-a, tenant-b and tenant-c, EVENTS_PER_TENANT events
    /// each (5000 when not given), once per tenant (needs DATABASE_ADMIN_URL).
    #[arg(long, value_name = "EVENTS_PER_TENANT", num_args = 0..=1, default_missing_value = "5000")]
    seed: Option<usize>,
    /// Months of events to keep after the current one: older monthly partitions are dropped
    /// (0: keep everything).
    #[arg(long, value_name = "MONTHS", env = "EVENT_RETENTION_MONTHS", value_parser = parse_retention)]
    retention_months: Option<Option<u32>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_asks_for_nothing_or_for_sample_events_within_bounds() {
        assert_eq!(
            Request::from_payload(serde_json::json!({})).unwrap(),
            Request {
                sample_tenant: None,
                sample_events: 5000
            }
        );
        let asked = serde_json::json!({"sample_tenant": "demo", "sample_events": 20});
        assert_eq!(
            Request::from_payload(asked).unwrap(),
            Request {
                sample_tenant: Some("demo".into()),
                sample_events: 20
            }
        );
        for refused in [
            serde_json::json!({"sample_tenant": "demo", "sample_events": 100_001}),
            serde_json::json!({"sample_tenant": ""}),
            serde_json::json!({"seed": true}),
            serde_json::json!([]),
        ] {
            assert!(Request::from_payload(refused.clone()).is_err(), "{refused}");
        }
    }

    #[test]
    fn retention_is_whole_months_and_zero_keeps_everything() {
        assert_eq!(parse_retention("13"), Ok(Some(13)));
        assert_eq!(parse_retention(" 1 "), Ok(Some(1)));
        assert_eq!(parse_retention("0"), Ok(None));
        for refused in ["-1", "1.5", "twelve", ""] {
            assert!(parse_retention(refused).is_err(), "{refused}");
        }
    }
}
