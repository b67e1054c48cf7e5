//! Completion of argument values (2025-11-25 server/utilities/completion): entity ids and
//! event types by prefix, read from the tenant's store under row-level security. Each is
//! one index range that stops at 101 rows, so its cost does not grow with the store.

use std::sync::Arc;

use mcp_protocol::{Completer, Completion, CompletionRequest, RequestContext, ToolError};
use tokio_postgres::types::Type;

use crate::event::col;
use crate::sql;
use crate::store::{Store, tenant};

/// Completes entity ids (the ids the entity state table holds).
pub(crate) fn entity_ids(store: Arc<Store>) -> Completer {
    Completer::new(move |request, ctx| {
        prefixed(
            store.clone(),
            sql::COMPLETE_ENTITY_IDS,
            "entity_id",
            request,
            ctx,
        )
    })
}

/// Completes event types (those of the catalog the tenant has events of).
pub(crate) fn event_types(store: Arc<Store>) -> Completer {
    Completer::new(move |request, ctx| {
        prefixed(
            store.clone(),
            sql::COMPLETE_EVENT_TYPES,
            "name",
            request,
            ctx,
        )
    })
}

/// Windows a person is likely to want; any `<n>m`, `<n>h` or `<n>d` is accepted.
pub(crate) fn windows() -> Completer {
    Completer::from_list(&["1h", "6h", "24h", "7d", "30d"])
}

async fn prefixed(
    store: Arc<Store>,
    statement: &'static str,
    column: &'static str,
    request: CompletionRequest,
    ctx: RequestContext,
) -> Result<Completion, ToolError> {
    // No stored id or type holds NUL, and PostgreSQL text cannot carry it.
    if request.value.contains('\0') {
        return Ok(Completion::default());
    }
    let tenant = tenant(&ctx)?;
    let prefix = Arc::new(request.value);
    let upper = Arc::new(format!("{prefix}\u{10FFFF}"));
    let rows = store
        .read("completion", &ctx, &tenant, move |tx| {
            let (prefix, upper) = (prefix.clone(), upper.clone());
            Box::pin(async move {
                tx.query_and_commit(
                    statement,
                    &[
                        (&*prefix, Type::TEXT),
                        (&*upper, Type::TEXT),
                        (&sql::COMPLETION_PROBE, Type::INT8),
                    ],
                )
                .await
            })
        })
        .await?;
    let mut values = rows
        .iter()
        .map(|row| col::<String>(row, column))
        .collect::<Result<Vec<_>, _>>()?;
    let has_more = values.len() as i64 >= sql::COMPLETION_PROBE;
    values.truncate(100);
    Ok(Completion { values, has_more })
}
