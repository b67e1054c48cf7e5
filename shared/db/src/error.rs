//! Why a read failed, and where in the read its time ran out.

use std::fmt;

use tokio_postgres::error::SqlState;

/// Where in a read its time ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the sandbox's connection or reading its credentials.
    Acquire,
    /// TCP, TLS and authentication with the proxy or server, and the role check.
    Connect,
    /// The transaction's statements.
    Execute,
}

impl Phase {
    /// The name logs, metrics and tool results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquire => "acquire",
            Self::Connect => "connect",
            Self::Execute => "execute",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a read failed. Messages are for logs; the tool layer decides what a caller sees.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("could not connect to the database")]
    Connect(#[source] tokio_postgres::Error),
    #[error("the database connection was lost")]
    ConnectionLost(#[source] tokio_postgres::Error),
    /// The read's deadline (or the connect timeout) passed in `phase`. In `execute` the
    /// statement was cancelled: by the server's own timeout, or by a cancel request.
    #[error("the read ran out of time in its {0} phase")]
    Timeout(Phase),
    #[error("the database refused the statement")]
    Query(#[source] tokio_postgres::Error),
    #[error("the TLS configuration is unusable: {0}")]
    Tls(String),
    #[error("the database credentials could not be read: {0}")]
    Secret(String),
    /// The role we connect as could write, is a superuser or bypasses row-level security:
    /// the endpoint refuses to serve rather than rely on its own queries being harmless.
    #[error("refusing to serve: the database role {0}")]
    UnsafeRole(String),
}

impl DbError {
    pub(crate) fn from_query(e: tokio_postgres::Error) -> Self {
        let code = e.code();
        if e.is_closed() {
            Self::ConnectionLost(e)
        } else if code == Some(&SqlState::QUERY_CANCELED)
            || code == Some(&SqlState::LOCK_NOT_AVAILABLE)
        {
            Self::Timeout(Phase::Execute)
        } else if code.is_some_and(|c| {
            // The server went away under the statement: terminated by an administrator, a
            // crash or a failover (57P01-57P03), or a connection exception (class 08, which
            // is also what PgBouncer reports when its server connection dies). The
            // connection is finished; a read may be repeated on a fresh one.
            c.code().starts_with("08")
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
        }) {
            Self::ConnectionLost(e)
        } else {
            Self::Query(e)
        }
    }

    /// A short, fixed name of the failure's kind, for traces and metrics (never the
    /// server's message, which can quote values).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Connect(_) => "connect",
            Self::ConnectionLost(_) => "connection_lost",
            Self::Timeout(_) => "timeout",
            Self::Query(_) => "query",
            Self::Tls(_) => "tls",
            Self::Secret(_) => "secret",
            Self::UnsafeRole(_) => "unsafe_role",
        }
    }

    /// Returns true if and only if retrying on a fresh connection may succeed.
    pub(crate) fn is_connection(&self) -> bool {
        matches!(self, Self::ConnectionLost(_))
    }

    /// Returns true if and only if the server refused the credentials (wrong or rotated
    /// password). PostgreSQL says 28P01/28000; PgBouncer reports a failed SCRAM exchange as
    /// 08P01 "SASL authentication failed".
    pub(crate) fn is_auth(&self) -> bool {
        let Self::Connect(e) = self else { return false };
        let Some(db) = e.as_db_error() else {
            return false;
        };
        let code = db.code();
        *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            || (*code == SqlState::PROTOCOL_VIOLATION
                && db.message().contains("authentication failed"))
    }
}
