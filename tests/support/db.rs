//! The event store for tests: a database of its own per test (migrated, on the local
//! PostgreSQL), reached through the run's TLS PgBouncer; the two-tenant fixture; tokens,
//! calls and result accessors; the production app over a store with a given budget.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp::{App, Config};
use mcp_auth::AuthConfig;
use mcp_db::{Credentials, Db, DbConfig, TlsMode};
use mcp_tools::{CursorKey, EventLinks, Store};
use serde_json::{Value, json};
use tokio_postgres::{Client, NoTls};

use super::auth::{ISSUER, auth_config, claims, keys, static_keys};
use super::http::{Answer, post_json, send};

pub(crate) const ADMIN: &str = "postgres://postgres@127.0.0.1:5432";

pub(crate) fn pgbouncer() -> (u16, String) {
    let port = std::env::var("TEST_PGBOUNCER_PORT")
        .ok()
        .and_then(|p| p.parse().ok());
    let ca = std::env::var("TEST_PGBOUNCER_CA").ok();
    match (port, ca) {
        (Some(port), Some(ca)) => (port, ca),
        _ => panic!(
            "TEST_PGBOUNCER_PORT and TEST_PGBOUNCER_CA must name a running TLS PgBouncer: run scripts/test, or `scripts/pgbouncer start 6434` and export both"
        ),
    }
}

pub(crate) async fn admin(db: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(&format!("{ADMIN}/{db}"), NoTls)
        .await
        .expect("local PostgreSQL");
    tokio::spawn(connection);
    client
}

/// Roles are cluster-wide: parallel tests must not create them concurrently.
static MIGRATING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) struct TestDb {
    pub(crate) name: String,
    pub(crate) admin: Client,
}

impl TestDb {
    pub(crate) async fn create() -> Self {
        Self::create_through(None).await
    }

    /// A database migrated up to and including `last` (all migrations when `None`): a
    /// store as an earlier release left it.
    pub(crate) async fn create_through(last: Option<&str>) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "mcp_t_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        admin("postgres")
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let mut client = admin(&name).await;
        {
            let _guard = MIGRATING.lock().await;
            migrate::migrate_through(&mut client, last).await.unwrap();
        }
        Self {
            name,
            admin: client,
        }
    }

    /// The production server over this database, as the endpoint's role (10 s statement
    /// timeout, the default response budget), behind the test issuer's keys.
    pub(crate) fn app(&self) -> App {
        let server = mcp::production_server(
            self.store("mcp_endpoint", Duration::from_secs(10)),
            mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
        )
        .unwrap();
        super::auth::app_serving(auth_config(static_keys(&[&keys().rsa])), server)
    }

    pub(crate) fn store(&self, user: &str, statement_timeout: Duration) -> Arc<Store> {
        self.store_via(user, pgbouncer().0, statement_timeout)
    }

    /// A store reaching PgBouncer's TLS port through `port` (a fault proxy in front of it).
    pub(crate) fn store_via(
        &self,
        user: &str,
        port: u16,
        statement_timeout: Duration,
    ) -> Arc<Store> {
        let (_, ca) = pgbouncer();
        let pem = std::fs::read(ca).unwrap();
        let roots = rustls_roots(&pem);
        Arc::new(Store {
            db: Db::new(DbConfig {
                credentials: Credentials::Url(format!(
                    "postgres://{user}@127.0.0.1:{port}/{}",
                    self.name
                )),
                tls: TlsMode::VerifyFull { roots },
                connect_timeout: Duration::from_secs(3),
            }),
            cursor_key: CursorKey::new(vec![42u8; 32]).unwrap(),
            statement_timeout,
            links: EventLinks::default(),
        })
    }

    /// Every event of every tenant: what a write would change.
    pub(crate) async fn count(&self) -> i64 {
        self.admin
            .query_one("SELECT count(*) FROM events", &[])
            .await
            .unwrap()
            .get(0)
    }
}

fn rustls_roots(pem: &[u8]) -> Vec<mcp_db::CertificateDer<'static>> {
    mcp_db::parse_roots(pem).unwrap()
}

/// Two tenants. `acme` has five events on svc-a and svc-b; `globex` has the same entity id
/// with secrets that must never reach acme.
pub(crate) async fn fixture() -> TestDb {
    let db = TestDb::create().await;
    db.admin
        .batch_execute(
            r#"
            INSERT INTO event_types (name, description, field_schema) VALUES
              ('alert.fired', 'A monitoring alert started firing', '{"type":"object"}'),
              ('deploy.finished', 'A deployment completed', '{"type":"object"}'),
              ('incident.opened', 'An incident was declared', '{"type":"object"}');
            INSERT INTO events (tenant_id, entity_id, entity_type, event_type, severity, occurred_at, tags, payload, structured, ai_summary) VALUES
              ('acme', 'svc-a', 'service', 'deploy.finished', 1, '2026-11-01T10:00:00Z', '{region:eu,team:core}', '{"k":1}', '{"version":"1.2.0"}', NULL),
              ('acme', 'svc-a', 'service', 'alert.fired', 4, '2026-11-01T11:00:00Z', '{region:eu,paging}', '{"k":2}', '{"alert":"p99"}', 'p99 latency high on svc-a'),
              ('acme', 'svc-b', 'service', 'alert.fired', 3, '2026-11-01T12:00:00Z', '{region:us}', '{"k":3}', '{"alert":"errors"}', 'error rate up on svc-b'),
              ('acme', 'svc-a', 'service', 'incident.opened', 5, '2026-11-01T13:00:00Z', '{region:eu,paging}', '{"k":4}', '{"title":"svc-a down"}', 'incident declared for svc-a'),
              ('acme', 'svc-b', 'service', 'deploy.finished', 1, '2026-11-02T09:00:00Z', '{region:us}', '{"k":5}', '{"version":"2.0.0"}', NULL),
              ('globex', 'svc-a', 'service', 'incident.opened', 5, '2026-11-01T12:30:00Z', '{region:eu,paging}', '{"secret":"SECRET-GLOBEX"}', '{}', 'SECRET-GLOBEX summary'),
              ('globex', 'svc-a', 'service', 'alert.fired', 4, '2026-11-01T10:30:00Z', '{region:eu}', '{}', '{}', 'SECRET-GLOBEX alert');
            INSERT INTO entity_state (tenant_id, entity_id, entity_type, state, updated_at) VALUES
              ('acme', 'svc-a', 'service', '{"status":"degraded"}', '2026-11-01T13:00:00Z'),
              ('globex', 'svc-a', 'service', '{"status":"SECRET-GLOBEX"}', '2026-11-01T12:30:00Z');
            "#,
        )
        .await
        .unwrap();
    db
}

pub(crate) fn token(tenant: Option<&str>) -> String {
    let mut c = claims();
    match tenant {
        Some(t) => c["tenant_id"] = json!(t),
        None => {
            c.as_object_mut().unwrap().remove("tenant_id");
        }
    }
    keys().rsa.sign(&c)
}

pub(crate) async fn call(app: &App, token: &str, tool: &str, args: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let bearer = format!("Bearer {token}");
    send(
        app,
        post_json(
            &body,
            &[
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        ),
    )
    .await
}

/// The structured result of a successful call.
pub(crate) fn ok(a: &Answer) -> &Value {
    assert_eq!(a.status, 200, "{a:?}");
    assert_ne!(a.result()["isError"], true, "{a:?}");
    &a.result()["structuredContent"]
}

/// The text of an isError result.
pub(crate) fn tool_error(a: &Answer) -> String {
    assert_eq!(a.result()["isError"], true, "{a:?}");
    a.result()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) fn ids(v: &Value) -> Vec<i64> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

/// A store pointing at a port nothing listens on: for servers whose tests never read
/// (listings, auth, transport), so a read by mistake fails loudly.
pub(crate) fn unconnected_store() -> Arc<Store> {
    Arc::new(Store {
        db: Db::new(DbConfig {
            credentials: Credentials::Url("postgres://mcp_endpoint@127.0.0.1:1/none".into()),
            tls: TlsMode::Disable,
            connect_timeout: Duration::from_secs(1),
        }),
        cursor_key: CursorKey::new(vec![1u8; 32]).unwrap(),
        statement_timeout: Duration::from_secs(5),
        links: EventLinks::default(),
    })
}

/// Polls `check` until it holds or `within` passes: for effects another process applies
/// asynchronously (a cancel request, a socket close), which no event announces.
pub(crate) async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn app_with_budget(
    store: Arc<mcp_tools::Store>,
    budget: usize,
) -> (App, Arc<Mutex<Vec<String>>>) {
    app_recording_metrics(mcp::production_server(store, budget).unwrap())
}

/// `server` behind the test verifier, its EMF metric lines kept for the test to read.
pub(crate) fn app_recording_metrics(
    server: mcp_protocol::Server,
) -> (App, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let config = Config {
        auth: mcp::config::AuthSetting::Verify(Box::new(verifier())),
        authorization_servers: vec![ISSUER.into()],
        ..Config::default()
    };
    let app = App::with_metric_sink(
        config,
        server,
        Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
    );
    (app, lines)
}

fn verifier() -> AuthConfig {
    auth_config(static_keys(&[&keys().rsa]))
}

/// Whether `relation` is `events` or one of its partitions (`events_history`, one per month
/// `events_pYYYY_MM`).
pub(crate) fn is_events_relation(relation: &str) -> bool {
    relation == "events"
        || relation == "events_history"
        || relation
            .strip_prefix("events_p")
            .is_some_and(|m| m.len() == 7 && m.as_bytes()[4] == b'_')
}

/// Rows that the scans of `events` (its partitions) in an `EXPLAIN (ANALYZE, FORMAT JSON)`
/// plan produced or threw away (filter and recheck): what a statement read of the table.
pub(crate) fn events_rows_read(plan: &Value) -> u64 {
    match plan {
        Value::Object(node) => {
            let own = if node
                .get("Relation Name")
                .and_then(Value::as_str)
                .is_some_and(is_events_relation)
            {
                [
                    "Actual Rows",
                    "Rows Removed by Filter",
                    "Rows Removed by Index Recheck",
                ]
                .iter()
                .filter_map(|k| node.get(*k).and_then(Value::as_u64))
                .sum()
            } else {
                0
            };
            own + node.values().map(events_rows_read).sum::<u64>()
        }
        Value::Array(items) => items.iter().map(events_rows_read).sum(),
        _ => 0,
    }
}

/// Rows of the minute rollup and of the totals that differ from the counts computed from
/// `events` itself: (0, 0) when the rollups are exact.
pub(crate) async fn rollup_drift(c: &Client) -> (i64, i64) {
    let minutes = differing(
        c,
        "date_bin('1 minute', occurred_at, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS minute, event_type, severity",
        "event_counts_minute",
        "minute, event_type, severity",
    )
    .await;
    let totals = differing(
        c,
        "entity_type, event_type, severity",
        "event_totals",
        "entity_type, event_type, severity",
    )
    .await;
    (minutes, totals)
}

/// Keys (`tenant_id` and `columns`, computed from `events` by `keys`) whose count in `table`
/// differs from the events'.
async fn differing(c: &Client, keys: &str, table: &str, columns: &str) -> i64 {
    c.query_one(
        &format!(
            "WITH truth AS (SELECT tenant_id, {keys}, count(*) AS n FROM events \
                            GROUP BY tenant_id, {columns}), \
                  kept AS (SELECT tenant_id, {columns}, events AS n FROM {table} WHERE events <> 0) \
             SELECT count(*) FROM truth FULL JOIN kept USING (tenant_id, {columns}) \
             WHERE truth.n IS DISTINCT FROM kept.n"
        ),
        &[],
    )
    .await
    .unwrap()
    .get(0)
}
