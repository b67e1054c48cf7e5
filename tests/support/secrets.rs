//! Database credentials in Secrets Manager for tests (moto in server mode) and the SCRAM
//! PgBouncer they are checked against: `tests/secrets.rs` rotates them, `tests/faults.rs`
//! cuts the emulator off, `bounds.rs` and `store.rs` count through a store built this way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials as AwsCredentials, Region};
use mcp_db::{Credentials, Db, DbConfig, DbError, Endpoint, SecretSource, TlsMode};
use serde_json::json;

use crate::support::db::TestDb;

pub(crate) struct Env {
    pub(crate) moto: String,
    pub(crate) port: u16,
    pub(crate) dir: String,
}

pub(crate) fn env() -> Env {
    let get = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run scripts/test (it starts moto and a SCRAM PgBouncer and exports TEST_MOTO_URL, TEST_PGBOUNCER_SCRAM_PORT, TEST_PGBOUNCER_SCRAM_DIR)")
        })
    };
    Env {
        moto: get("TEST_MOTO_URL"),
        port: get("TEST_PGBOUNCER_SCRAM_PORT").parse().unwrap(),
        dir: get("TEST_PGBOUNCER_SCRAM_DIR"),
    }
}

pub(crate) fn secrets_client(endpoint: &str) -> aws_sdk_secretsmanager::Client {
    let config = aws_sdk_secretsmanager::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(AwsCredentials::new("test", "test", None, None, "tests"))
        .build();
    aws_sdk_secretsmanager::Client::from_conf(config)
}

pub(crate) fn secret_json(password: &str, db: &TestDb) -> String {
    // RDS writes the port as a number and names the instance, not the proxy: DB_HOST/DB_PORT
    // point the connection at the proxy.
    json!({"engine": "postgres", "username": "mcp_endpoint", "password": password, "host": "db-instance.invalid", "port": 5432, "dbname": db.name}).to_string()
}

pub(crate) fn db_with_secret(
    client: aws_sdk_secretsmanager::Client,
    secret_id: &str,
    env: &Env,
) -> Db {
    let pem = std::fs::read(format!("{}/ca.pem", env.dir)).unwrap();
    Db::new(DbConfig {
        credentials: Credentials::Secret {
            source: Arc::new(SecretSource::new(
                client,
                secret_id,
                Duration::from_secs(300),
            )),
            endpoint: Endpoint {
                host: Some("127.0.0.1".into()),
                port: Some(env.port),
                dbname: None,
            },
        },
        tls: TlsMode::VerifyFull {
            roots: mcp_db::parse_roots(&pem).unwrap(),
        },
        connect_timeout: Duration::from_secs(3),
    })
}

pub(crate) async fn count_acme(db: &Db) -> Result<i64, DbError> {
    db.read("acme", Instant::now() + Duration::from_secs(5), |tx| {
        Box::pin(async move {
            Ok(tx.query("SELECT count(*) FROM events", &[]).await?[0].get::<_, i64>(0))
        })
    })
    .await
}
