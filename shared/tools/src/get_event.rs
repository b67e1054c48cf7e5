//! `get_event`: one event by id, with its raw payload.

use std::sync::Arc;

use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::tool;
use crate::event::{EventRow, event_schema};
use crate::outcome::{LONG_VALUE_BYTES, STORED_TEXT_NOTICE, ToolResult, done, fail, read_rows};
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "get_event";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    // The maximum too: a larger integer passes a schema without one and then fails serde's
    // `i64`, with a message that names a Rust type instead of the bound.
    #[schemars(range(min = 1, max = i64::MAX))]
    id: i64,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Fetches one event by id, with its raw payload.",
        store,
        run,
    )
    .title("Get one event")
    .output_schema(json!({
        "type": "object",
        "properties": { "event": event_schema(), "shortened_values": { "type": "integer" } },
        "required": ["event"]
    }))
}

async fn run(store: Arc<Store>, Args { id }: Args, ctx: RequestContext) -> ToolResult {
    let Some((event, shortened)) = load(&store, NAME, &ctx, id).await? else {
        // Row-level security makes another tenant's event indistinguishable from none.
        return fail(format!(
            "No event with id {id} in your tenant. Use query_events to find event ids."
        ));
    };
    let stats = CallStats {
        truncated: shortened > 0,
        ..read_rows(1)
    };
    done(
        object([
            ("event", event),
            ("shortened_values", shortened.into()),
            ("notice", STORED_TEXT_NOTICE.into()),
        ]),
        stats,
    )
}

/// Event `id` of the caller's tenant with its long values shortened, and how many were;
/// `None` when the tenant has no such event. Shared with the event resource.
pub(crate) async fn load(
    store: &Store,
    name: &str,
    ctx: &RequestContext,
    id: i64,
) -> Result<Option<(Value, usize)>, ToolError> {
    let tenant = tenant(ctx)?;
    let rows = store
        .read(name, ctx, &tenant, move |tx| {
            Box::pin(async move {
                tx.query_and_commit(sql::GET_EVENT, &[(&id, Type::INT8)])
                    .await
            })
        })
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let mut event = EventRow::read(row, true)?;
    let shortened = event.shorten(LONG_VALUE_BYTES);
    // One event: its tree is made by serde from the same struct a list writes from rows.
    let event = serde_json::to_value(&event).map_err(|e| ToolError::Internal(Box::new(e)))?;
    Ok(Some((event, shortened)))
}
