//! Read-only, tenant-scoped access to the event store.
//!
//! One connection per Lambda sandbox, made lazily on the first query (discovery and list
//! requests never touch the database), kept across warm invocations, checked before use and
//! re-made once when it is found dead. Every read is one `BEGIN READ ONLY` transaction that
//! sets the tenant (for row-level security) and the statement timeout with
//! `set_config(..., true)`, so nothing outlives the transaction: that is what makes the
//! connection safe to share through a transaction-pooling proxy (PgBouncer, RDS Proxy).
//! Statements are sent with `query_typed` (unnamed, extended protocol, one round trip),
//! because named prepared statements do not survive transaction pooling.
//!
//! Every read has one deadline, and every wait inside it is cut off by that deadline: the
//! wait for the sandbox's connection and its credentials ([`Phase::Acquire`]), the TCP,
//! TLS and authentication exchange ([`Phase::Connect`]), and the statements
//! ([`Phase::Execute`]), which the server times out itself (`statement_timeout`,
//! `lock_timeout`) a little before the deadline and which a client-side timer cancels at
//! the deadline when the server's answer never arrives (a hung proxy, a lost network).

mod cancel;
mod config;
mod ddl;
mod error;
mod migrate;
pub mod partition;
mod secret;
mod tls;
mod tx;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_postgres::Client;
use tokio_postgres::types::Type;

pub use config::{Credentials, DbConfig, DbConfigError, TlsMode};
pub use error::{DbError, Phase};
pub use migrate::{MIGRATIONS, SEARCH_HOUR_INDEX, SEARCH_INDEX, Step, migrate, migrate_through};
pub use rustls::pki_types::CertificateDer;
pub use secret::{
    DbSecret, Endpoint, SecretSource, aws_sdk_config, read_plain_secret, secrets_client,
};
pub use tls::parse_roots;
pub use tx::{Param, Tx, TxFuture};

/// How long a cancel request may hold up the answer to a caller whose deadline passed.
const CANCEL_WAIT: Duration = Duration::from_millis(250);

struct Conn {
    client: Option<Client>,
    /// Where `client` is connected (host, port): where its cancel requests go.
    target: Option<(String, u16)>,
    /// A transaction may still be open on this connection (a read failed half-way).
    dirty: bool,
}

/// The database handle of one sandbox.
pub struct Db {
    config: DbConfig,
    conn: Mutex<Conn>,
}

impl Db {
    /// A handle; nothing is connected until the first read.
    pub fn new(config: DbConfig) -> Self {
        Self {
            config,
            conn: Mutex::new(Conn {
                client: None,
                target: None,
                dirty: false,
            }),
        }
    }

    /// Runs `body` in a read-only transaction scoped to `tenant`, all of it before
    /// `deadline`. A connection found dead is replaced and the whole body run again once
    /// (safe: it only reads).
    ///
    /// # Errors
    ///
    /// Any [`DbError`]; [`DbError::Timeout`] names the phase the deadline passed in;
    /// [`DbError::UnsafeRole`] when the connected role could write.
    pub async fn read<T, F>(
        &self,
        tenant: &str,
        deadline: std::time::Instant,
        body: F,
    ) -> Result<T, DbError>
    where
        F: for<'t> Fn(Tx<'t>) -> TxFuture<'t, T>,
    {
        self.read_counting(tenant, deadline, body)
            .await
            .map(|(value, _)| value)
    }

    /// [`Db::read`], also answering how many rows the body's statements returned (those of
    /// the attempt that succeeded).
    ///
    /// # Errors
    ///
    /// As [`Db::read`].
    pub async fn read_counting<T, F>(
        &self,
        tenant: &str,
        deadline: std::time::Instant,
        body: F,
    ) -> Result<(T, u64), DbError>
    where
        F: for<'t> Fn(Tx<'t>) -> TxFuture<'t, T>,
    {
        let deadline = Instant::from_std(deadline);
        // One invocation at a time per sandbox in Lambda; locally (`cargo lambda watch`,
        // tests) callers can queue here, and the queue counts against their deadline.
        let mut conn = tokio::time::timeout_at(deadline, self.conn.lock())
            .await
            .map_err(|_| DbError::Timeout(Phase::Acquire))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            self.ensure_client(&mut conn, deadline).await?;
            conn.dirty = true;
            let Some(client) = conn.client.as_ref() else {
                return Err(DbError::Timeout(Phase::Connect));
            };
            // The server times the statements out a little before the deadline, so its
            // clean "canceling statement due to statement timeout" normally wins and the
            // connection stays usable; the client-side timer below is the backstop.
            let left = deadline.saturating_duration_since(Instant::now());
            let grace = (left / 10).clamp(Duration::from_millis(20), Duration::from_millis(250));
            let Some(server_budget) = left.checked_sub(grace).filter(|d| !d.is_zero()) else {
                return Err(DbError::Timeout(Phase::Execute));
            };
            let timeout_ms = server_budget.as_millis().max(1).to_string();
            let ended = AtomicBool::new(false);
            let rows = AtomicU64::new(0);
            let transaction = async {
                let settings: [Param<'_>; 2] = [(&tenant, Type::TEXT), (&timeout_ms, Type::TEXT)];
                let begin = client.query_typed("BEGIN READ ONLY", &[]);
                let setup = client.query_typed(
                    // All three are transaction-local (is_local = true): nothing outlives
                    // this transaction on a pooled server connection. A lock wait counts
                    // against the same budget as the statement itself.
                    "SELECT set_config('app.tenant_id', $1, true), \
                            set_config('statement_timeout', $2, true), \
                            set_config('lock_timeout', $2, true)",
                    &settings,
                );
                // Pipelined: the driver sends each request when its future is first polled,
                // and join polls them in order, so BEGIN, the settings and the body's first
                // statements leave in one flight and the server runs them in that order (with
                // a body that ends with a `Tx::…_and_commit` method, COMMIT too: one round
                // trip to the proxy instead of four). Safe through a transaction-mode
                // pooler: from BEGIN on the server connection is held until COMMIT. If BEGIN
                // or the settings fail, the statements after them fail too ("current
                // transaction is aborted"), so the first failure is the one reported.
                let tx = Tx {
                    client,
                    ended: &ended,
                    rows: &rows,
                };
                let (begun, set, value) = tokio::join!(begin, setup, body(tx));
                begun.map_err(DbError::from_query)?;
                set.map_err(DbError::from_query)?;
                let value = value?;
                if !ended.load(Ordering::Relaxed) {
                    Tx {
                        client,
                        ended: &ended,
                        rows: &rows,
                    }
                    .commit()
                    .await?;
                }
                Ok(value)
            };
            let result: Result<T, DbError> =
                match tokio::time::timeout_at(deadline, transaction).await {
                    Ok(result) => result,
                    Err(_) => {
                        // The server's timeout did not answer in time: the network or the proxy
                        // is stuck, or a statement disabled its timeout. Ask the server to cancel
                        // (bounded: the answer to our caller must not wait for it), then drop the
                        // connection, whose protocol state is now unknown. In that order: a proxy
                        // forgets a closed client's cancel key, and a backend busy in a statement
                        // does not notice its socket going away.
                        self.cancel(&client.cancel_token(), conn.target.as_ref())
                            .await;
                        conn.client = None;
                        conn.dirty = false;
                        return Err(DbError::Timeout(Phase::Execute));
                    }
                };
            // A transaction whose COMMIT was answered is over, even after a failed statement
            // (the COMMIT rolled it back); any other may still be open.
            conn.dirty = !ended.load(Ordering::Relaxed);
            match result {
                Ok(value) => return Ok((value, rows.load(Ordering::Relaxed))),
                Err(e) if e.is_connection() && attempt == 1 => {
                    tracing::warn!(error = %e, "database connection lost; reconnecting once");
                    conn.client = None;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends a cancel request for whatever `token`'s connection is running, waiting at most
    /// [`CANCEL_WAIT`]. Best effort: failures are logged, never returned.
    async fn cancel(&self, token: &tokio_postgres::CancelToken, target: Option<&(String, u16)>) {
        let Some((host, port)) = target else { return };
        let sending = cancel::send(token, host, *port, &self.config.tls);
        match tokio::time::timeout(CANCEL_WAIT, sending).await {
            Ok(Ok(())) => tracing::info!("sent a cancel request for a statement past its deadline"),
            Ok(Err(e)) => tracing::warn!(error = %e, "cancel request failed"),
            Err(_) => tracing::warn!("cancel request unconfirmed within its wait"),
        }
    }

    /// The live connection, made (and vetted) if there is none or it died; a transaction
    /// left open by a failed read is rolled back first.
    async fn ensure_client(&self, conn: &mut Conn, deadline: Instant) -> Result<(), DbError> {
        if conn.client.as_ref().is_some_and(Client::is_closed) {
            conn.client = None;
        }
        if conn.dirty {
            if let Some(client) = &conn.client {
                let rollback = client.query_typed("ROLLBACK", &[]);
                if !matches!(tokio::time::timeout_at(deadline, rollback).await, Ok(Ok(_))) {
                    conn.client = None;
                }
            }
            conn.dirty = false;
        }
        if conn.client.is_none() {
            let connecting = async {
                let (client, target) = self.connect(deadline).await?;
                check_role(&client).await?;
                Ok::<_, DbError>((client, target))
            };
            let (client, target) = tokio::time::timeout_at(deadline, connecting)
                .await
                .map_err(|_| DbError::Timeout(Phase::Connect))??;
            conn.client = Some(client);
            conn.target = Some(target);
        }
        Ok(())
    }

    /// A connection with the configured credentials and TLS but *without* the read-only role
    /// check: for the migrate step, which must be able to write. Never used by the endpoint.
    ///
    /// # Errors
    ///
    /// Any connection or credential failure.
    pub async fn connect_unchecked(&self) -> Result<Client, DbError> {
        let (client, _) = self
            .connect(Instant::now() + self.config.connect_timeout)
            .await?;
        Ok(client)
    }

    /// Runs PgBouncer admin-console commands (simple protocol, outside any transaction):
    /// for operators and rotation tests, never on the request path.
    ///
    /// # Errors
    ///
    /// The first refused command.
    // PgBouncer's admin console speaks only the simple protocol; its commands are fixed by
    // the caller (operators, tests), never request input.
    #[allow(clippy::disallowed_methods)]
    pub async fn admin_console(&self, commands: &[&str]) -> Result<(), DbError> {
        let client = self.connect_unchecked().await?;
        for command in commands {
            client.simple_query(command).await.map_err(DbError::Query)?;
        }
        Ok(())
    }

    /// Connects with the configured credentials, by `deadline` and within the connect
    /// timeout. With a Secrets Manager secret, a refused password re-reads the secret once
    /// (it may have been rotated) and tries again.
    async fn connect(&self, deadline: Instant) -> Result<(Client, (String, u16)), DbError> {
        let budget = || {
            deadline
                .saturating_duration_since(Instant::now())
                .min(self.config.connect_timeout)
        };
        match &self.config.credentials {
            Credentials::Url(url) => {
                let pg = url
                    .parse::<tokio_postgres::Config>()
                    .map_err(DbError::Connect)?;
                self.connect_with(pg, budget()).await
            }
            Credentials::Secret { source, endpoint } => {
                let secret = source.get(false, budget()).await?;
                match self
                    .connect_with(SecretSource::config(&secret, endpoint)?, budget())
                    .await
                {
                    Err(e) if e.is_auth() => {
                        tracing::warn!(
                            "the database refused the cached credentials; re-reading the secret"
                        );
                        let secret = source.get(true, budget()).await?;
                        self.connect_with(SecretSource::config(&secret, endpoint)?, budget())
                            .await
                    }
                    other => other,
                }
            }
        }
    }

    async fn connect_with(
        &self,
        mut pg: tokio_postgres::Config,
        timeout: Duration,
    ) -> Result<(Client, (String, u16)), DbError> {
        let host = match pg.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            _ => return Err(DbError::Tls("the database must be reached over TCP".into())),
        };
        let port = pg.get_ports().first().copied().unwrap_or(5432);
        // tokio-postgres waits forever by default; a Lambda invocation cannot.
        pg.connect_timeout(timeout.max(Duration::from_millis(1)))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .tcp_user_timeout(self.config.connect_timeout.max(Duration::from_secs(5)))
            .application_name("mcp-endpoint");
        let connecting = async {
            match &self.config.tls {
                TlsMode::Disable => {
                    let (client, connection) = pg
                        .connect(tokio_postgres::NoTls)
                        .await
                        .map_err(DbError::Connect)?;
                    drive(connection);
                    Ok(client)
                }
                TlsMode::VerifyFull { roots } => {
                    let tls = tls::connector(roots)?;
                    pg.ssl_mode(tokio_postgres::config::SslMode::Require);
                    let (client, connection) = pg.connect(tls).await.map_err(DbError::Connect)?;
                    drive(connection);
                    Ok(client)
                }
            }
        };
        let client = tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| DbError::Timeout(Phase::Connect))??;
        Ok((client, (host, port)))
    }
}

/// Runs the connection's I/O task for as long as the connection lives; its end is logged,
/// and the client then reports `is_closed`.
fn drive<C>(connection: C)
where
    C: Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "database connection ended");
        }
    });
}

/// Refuses a role that could change data or read across tenants: defence in depth behind
/// `BEGIN READ ONLY` and row-level security.
async fn check_role(client: &Client) -> Result<(), DbError> {
    let row = client
        .query_typed(
            "SELECT r.rolsuper, r.rolbypassrls, \
                    current_setting('default_transaction_read_only') = 'on', \
                    EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') \
                              AND (has_table_privilege(c.oid, 'INSERT') OR has_table_privilege(c.oid, 'UPDATE') \
                                   OR has_table_privilege(c.oid, 'DELETE') OR has_table_privilege(c.oid, 'TRUNCATE'))) \
             FROM pg_roles r WHERE r.rolname = current_user",
            &[],
        )
        .await
        .map_err(DbError::from_query)?;
    let Some(row) = row.first() else {
        return Err(DbError::UnsafeRole("could not be inspected".into()));
    };
    let flag = |i: usize| row.try_get::<_, bool>(i).map_err(DbError::from_query);
    let (superuser, bypass, read_only, can_write) = (flag(0)?, flag(1)?, flag(2)?, flag(3)?);
    let problem = if superuser {
        Some("is a superuser")
    } else if bypass {
        Some("bypasses row-level security")
    } else if can_write {
        Some("can write to a table")
    } else if !read_only {
        Some("does not default to read-only transactions")
    } else {
        None
    };
    match problem {
        Some(p) => {
            tracing::error!(problem = p, "refusing to serve with this database role");
            Err(DbError::UnsafeRole(p.into()))
        }
        None => Ok(()),
    }
}
