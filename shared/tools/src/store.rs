//! The event store as the tools see it: one read-only, tenant-scoped transaction per call,
//! bounded by the call's deadline.

use std::time::{Duration, Instant, SystemTime};

use mcp_db::{Db, DbError, Phase, Tx, TxFuture};
use mcp_protocol::telemetry::{self, SpanKind, SpanRecord};
use mcp_protocol::{RequestContext, ToolError};

use crate::cursor::CursorKey;
use crate::links::EventLinks;
use crate::outcome::{db_error, deadline_exceeded};

/// What the tools share: the database, the cursor key, the per-call statement timeout and
/// how results link to an event.
pub struct Store {
    pub db: Db,
    pub cursor_key: CursorKey,
    pub statement_timeout: Duration,
    pub links: EventLinks,
}

/// Below this much time left, a read is not started: it could not finish anyway, and the
/// caller learns why at once instead of after a cancelled statement.
const LEAST_USEFUL_TIME: Duration = Duration::from_millis(50);

impl Store {
    /// Runs `body` in the store's read-only transaction for `tenant`, by the call's
    /// deadline or the store's statement timeout, whichever comes first.
    pub(crate) async fn read<T, F>(
        &self,
        tool: &str,
        ctx: &RequestContext,
        tenant: &str,
        body: F,
    ) -> Result<T, ToolError>
    where
        F: for<'t> Fn(Tx<'t>) -> TxFuture<'t, T>,
    {
        let mut budget = self.statement_timeout;
        if let Some(deadline) = ctx.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left < LEAST_USEFUL_TIME {
                return Err(deadline_exceeded(tool, Phase::Acquire, left));
            }
            budget = budget.min(left);
        }
        let start = SystemTime::now();
        let read = self
            .db
            .read_counting(tenant, Instant::now() + budget, body)
            .await;
        if telemetry::enabled() {
            record_read(tool, start, read.as_ref().map(|(_, rows)| *rows));
        }
        read.map(|(value, _)| value)
            .map_err(|e| db_error(tool, budget, e))
    }
}

/// The span of one read: which statement (the tool or resource that reads) and how many rows,
/// never the SQL text or its values (OpenTelemetry database conventions).
fn record_read(tool: &str, start: SystemTime, rows: Result<u64, &DbError>) {
    let mut attributes = vec![
        ("db.system.name", "postgresql".into()),
        ("db.operation.name", "SELECT".into()),
        ("db.query.summary", format!("SELECT {tool}").into()),
    ];
    match rows {
        Ok(rows) => attributes.push(("db.response.returned_rows", (rows as i64).into())),
        Err(e) => attributes.push(("error.type", e.kind().into())),
    }
    telemetry::record(SpanRecord {
        name: format!("SELECT {tool}"),
        kind: SpanKind::Client,
        start,
        end: SystemTime::now(),
        failed: rows.is_err(),
        attributes,
    });
}

/// The tenant the caller may read: from the verified token, never from arguments.
pub(crate) fn tenant(ctx: &RequestContext) -> Result<String, ToolError> {
    ctx.caller.tenant.clone().ok_or_else(|| {
        ToolError::Execution(
            "Your access token names no tenant, so there is no data you may read. Ask for a token with a tenant claim."
                .into(),
        )
    })
}
