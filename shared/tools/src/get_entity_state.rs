//! `get_entity_state`: one entity's current merged state, as the write path keeps it.

use std::sync::Arc;

use jiff::Timestamp;
use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::tool;
use crate::event::col;
use crate::outcome::{
    LONG_VALUE_BYTES, STORED_TEXT_NOTICE, ToolResult, done, fail, read_rows, shorten_values,
};
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "get_entity_state";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Entity id, exactly as stored
    #[schemars(length(min = 1, max = 200))]
    entity_id: String,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Returns the current merged state of one entity, as maintained by the write path.",
        store,
        run,
    )
    .title("Get an entity's current state")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "entity_id": { "type": "string" },
            "entity_type": { "type": "string" },
            "state": { "type": "object" },
            "last_event_id": { "type": ["integer", "null"] },
            "updated_at": { "type": "string" },
            "shortened_values": { "type": "integer" }
        },
        "required": ["entity_id", "entity_type", "state", "updated_at"]
    }))
}

async fn run(store: Arc<Store>, Args { entity_id }: Args, ctx: RequestContext) -> ToolResult {
    let Some((state, shortened)) = load(&store, NAME, &ctx, entity_id.clone()).await? else {
        return fail(format!(
            "No entity {entity_id:?} in your tenant. Entity ids are exact; use query_events (or describe_data for entity types) to find them."
        ));
    };
    let stats = CallStats {
        truncated: shortened > 0,
        ..read_rows(1)
    };
    done(state, stats)
}

/// The current state of entity `entity_id` in the caller's tenant (the tool's structured
/// result), and how many long values were shortened; `None` when there is no such entity.
/// Shared with the entity-state resource.
pub(crate) async fn load(
    store: &Store,
    name: &str,
    ctx: &RequestContext,
    entity_id: String,
) -> Result<Option<(Value, usize)>, ToolError> {
    let tenant = tenant(ctx)?;
    let entity = Arc::new(entity_id);
    let rows = store
        .read(name, ctx, &tenant, move |tx| {
            let e = entity.clone();
            Box::pin(async move {
                tx.query_and_commit(sql::GET_ENTITY_STATE, &[(&*e, Type::TEXT)])
                    .await
            })
        })
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let mut state = col::<Value>(row, "state")?;
    let shortened = shorten_values(&mut state, LONG_VALUE_BYTES);
    let value = object([
        ("entity_id", col::<String>(row, "entity_id")?.into()),
        ("entity_type", col::<String>(row, "entity_type")?.into()),
        ("state", state),
        (
            "last_event_id",
            col::<Option<i64>>(row, "last_event_id")?.into(),
        ),
        (
            "updated_at",
            col::<Timestamp>(row, "updated_at")?.to_string().into(),
        ),
        ("shortened_values", shortened.into()),
        ("notice", STORED_TEXT_NOTICE.into()),
    ]);
    Ok(Some((value, shortened)))
}
