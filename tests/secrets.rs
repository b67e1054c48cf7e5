//! Database credentials from Secrets Manager (a real emulator: moto in server mode), through
//! a PgBouncer that checks passwords (SCRAM), including a rotation between two calls.

use std::sync::Arc;
use std::time::Duration;

use mcp_db::{Credentials, Db, DbConfig, DbError, Endpoint, SecretSource, TlsMode};
use serde_json::json;

use crate::support::db::fixture;
use crate::support::secrets::{Env, count_acme, db_with_secret, env, secret_json, secrets_client};

/// Changes the endpoint's password in PgBouncer and drops the connections it holds for
/// `db`, the way a rotation plus a recycled proxy connection look to a warm sandbox.
async fn rotate_in_proxy(env: &Env, db: &str, password: &str) {
    let userlist = format!("{}/userlist.txt", env.dir);
    std::fs::write(
        &userlist,
        format!("\"postgres\" \"postgres-admin\"\n\"mcp_endpoint\" \"{password}\"\n"),
    )
    .unwrap();
    let pem = std::fs::read(format!("{}/ca.pem", env.dir)).unwrap();
    let admin = Db::new(DbConfig {
        credentials: Credentials::Url(format!(
            "postgres://postgres:postgres-admin@127.0.0.1:{}/pgbouncer",
            env.port
        )),
        tls: TlsMode::VerifyFull {
            roots: mcp_db::parse_roots(&pem).unwrap(),
        },
        connect_timeout: Duration::from_secs(3),
    });
    admin
        .admin_console(&["RELOAD", &format!("KILL {db}"), &format!("RESUME {db}")])
        .await
        .unwrap();
}

#[tokio::test]
async fn credentials_come_from_the_secret_and_survive_a_rotation() {
    let env = env();
    let test_db = fixture().await;
    let sm = secrets_client(&env.moto);
    let secret_id = format!("mcp/{}", test_db.name);
    let initial = std::fs::read_to_string(format!("{}/endpoint-password", env.dir))
        .unwrap()
        .trim()
        .to_owned();
    sm.create_secret()
        .name(&secret_id)
        .secret_string(secret_json(&initial, &test_db))
        .send()
        .await
        .unwrap();
    // Whatever an interrupted earlier run left, the proxy starts from the initial password.
    rotate_in_proxy(&env, &test_db.name, &initial).await;
    // DB_NAME is not set, so the secret's dbname is used.
    let db = db_with_secret(sm.clone(), &secret_id, &env);
    assert_eq!(count_acme(&db).await.unwrap(), 5);

    // Rotation: new password in the proxy and in the secret, old connections dropped.
    let rotated = format!("rotated-{}", test_db.name);
    rotate_in_proxy(&env, &test_db.name, &rotated).await;
    sm.put_secret_value()
        .secret_id(&secret_id)
        .secret_string(secret_json(&rotated, &test_db))
        .send()
        .await
        .unwrap();
    // The warm handle still caches the old password: the refusal makes it re-read once.
    assert_eq!(count_acme(&db).await.unwrap(), 5);
    // Restore the proxy's password for the other tests.
    rotate_in_proxy(&env, &test_db.name, &initial).await;
}

#[tokio::test]
async fn a_wrong_password_is_refused_after_one_re_read_and_a_missing_secret_fails_cleanly() {
    let env = env();
    let test_db = fixture().await;
    let sm = secrets_client(&env.moto);
    let secret_id = format!("mcp/wrong/{}", test_db.name);
    sm.create_secret()
        .name(&secret_id)
        .secret_string(secret_json("not-the-password", &test_db))
        .send()
        .await
        .unwrap();
    let result = count_acme(&db_with_secret(sm.clone(), &secret_id, &env)).await;
    assert!(matches!(result, Err(DbError::Connect(_))), "{result:?}");

    let result = count_acme(&db_with_secret(sm, "mcp/no-such-secret", &env)).await;
    assert!(
        matches!(&result, Err(DbError::Secret(m)) if m.contains("GetSecretValue failed")),
        "{result:?}"
    );
    // Secrets Manager down at cold start: a closed port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let result = count_acme(&db_with_secret(
        secrets_client(&format!("http://{closed}")),
        &secret_id,
        &env,
    ))
    .await;
    assert!(matches!(&result, Err(DbError::Secret(_))), "{result:?}");
}

#[tokio::test]
async fn the_deploy_step_migrates_with_the_admin_secret_and_sets_the_endpoint_password() {
    let env = env();
    let test_db = fixture().await;
    let sm = secrets_client(&env.moto);
    let admin_id = format!("mcp/admin/{}", test_db.name);
    let admin_secret = json!({"username": "postgres", "password": "unused-with-trust", "host": "127.0.0.1", "port": "5432", "dbname": test_db.name});
    sm.create_secret()
        .name(&admin_id)
        .secret_string(admin_secret.to_string())
        .send()
        .await
        .unwrap();
    // Migrations take a session-level advisory lock: the admin connects to the database
    // directly, never through the transaction pooler.
    let admin = Db::new(DbConfig {
        credentials: Credentials::Secret {
            source: Arc::new(SecretSource::new(
                sm.clone(),
                &admin_id,
                Duration::from_secs(300),
            )),
            endpoint: Endpoint::default(),
        },
        tls: TlsMode::Disable,
        connect_timeout: Duration::from_secs(3),
    });
    let mut client = admin.connect_unchecked().await.unwrap();
    let endpoint: mcp_db::DbSecret =
        serde_json::from_str(&secret_json("deployed-password", &test_db)).unwrap();
    let report = migrate::deploy(&mut client, Some(&endpoint)).await.unwrap();
    assert_eq!(
        report,
        migrate::Report {
            applied: vec![],
            endpoint_password_set: true
        },
        "already migrated: nothing applied"
    );
    let set: bool = test_db
        .admin
        .query_one(
            "SELECT rolpassword IS NOT NULL FROM pg_authid WHERE rolname = 'mcp_endpoint'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(set);
    let other: mcp_db::DbSecret =
        serde_json::from_value(json!({"username": "someone_else", "password": "x"})).unwrap();
    assert!(migrate::deploy(&mut client, Some(&other)).await.is_err());
}
