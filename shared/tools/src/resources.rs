//! The event store as resources: the event-type catalog, one event, one entity's state.
//! Each reads what the matching tool reads (the same statements, tenant, row-level security
//! and deadline) and returns it as one `application/json` text content; the engine checks
//! scopes and the response budget.

use std::sync::Arc;

use mcp_protocol::{
    RequestContext, ResourceDef, ResourceError, ResourceRequest, Resources, ToolError,
};
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::READ_SCOPE;
use crate::links::EVENT_TEMPLATE;
use crate::outcome::STORED_TEXT_NOTICE;
use crate::store::{Store, tenant};
use crate::{describe_data, get_entity_state, get_event, sql};

/// The event-type catalog.
pub const EVENT_TYPES_URI: &str = "event-store://event-types";
/// One entity's current state.
pub const ENTITY_STATE_TEMPLATE: &str = "event-store://entities/{entity_id}/state";

const JSON: &str = "application/json";

/// Registers the event-store resources, each requiring [`READ_SCOPE`].
///
/// # Errors
///
/// Only if a URI or template is invalid (caught by tests).
pub fn register_resources(
    resources: &mut Resources,
    store: Arc<Store>,
) -> Result<(), ResourceError> {
    let s = store.clone();
    resources.register(
        ResourceDef::direct(EVENT_TYPES_URI, "event-types", move |request, ctx| {
            event_types(s.clone(), request, ctx)
        })
        .title("Event types")
        .description("The event types your tenant's store holds, with their descriptions and field schemas (up to 200; truncated says when there are more).")
        .mime_type(JSON)
        .scopes([READ_SCOPE]),
    )?;
    let s = store.clone();
    resources.register(
        ResourceDef::template(EVENT_TEMPLATE, "event", move |request, ctx| {
            event(s.clone(), request, ctx)
        })
        .title("One event")
        .description("One event of your tenant by id, with its payload (long values shortened). Ids come from query_events.")
        .mime_type(JSON)
        .scopes([READ_SCOPE]),
    )?;
    let s = store.clone();
    resources.register(
        ResourceDef::template(ENTITY_STATE_TEMPLATE, "entity-state", move |request, ctx| {
            entity_state(s.clone(), request, ctx)
        })
        .title("An entity's current state")
        .description("The current merged state of one entity of your tenant, as the write path keeps it. Entity ids are exact; completion/complete suggests them.")
        .mime_type(JSON)
        .scopes([READ_SCOPE])
        .complete("entity_id", crate::complete::entity_ids(store)),
    )?;
    Ok(())
}

type Contents = Result<Option<Vec<Value>>, ToolError>;

/// One JSON text content for `uri`.
fn json_contents(uri: String, value: &Value) -> Vec<Value> {
    let text = serde_json::to_string(value).unwrap_or_default();
    vec![json!({ "uri": uri, "mimeType": JSON, "text": text })]
}

async fn event_types(store: Arc<Store>, request: ResourceRequest, ctx: RequestContext) -> Contents {
    let tenant = tenant(&ctx)?;
    let rows = store
        .read("event-types", &ctx, &tenant, |tx| {
            Box::pin(async move {
                let probe = sql::MAX_EVENT_TYPES + 1;
                tx.query(sql::EVENT_TYPES, &[(&probe, Type::INT8)]).await
            })
        })
        .await?;
    let (listed, truncated) = describe_data::event_types(&rows)?;
    let value = json!({ "event_types": listed, "truncated": truncated });
    Ok(Some(json_contents(request.uri, &value)))
}

async fn event(store: Arc<Store>, request: ResourceRequest, ctx: RequestContext) -> Contents {
    // A URI whose id is not a positive integer names no event: not found, like a missing id.
    let Some(id) = request
        .var("id")
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|id| *id > 0)
    else {
        return Ok(None);
    };
    let found = get_event::load(&store, "event", &ctx, id).await?;
    Ok(found.map(|(event, shortened)| {
        let value =
            json!({ "event": event, "shortened_values": shortened, "notice": STORED_TEXT_NOTICE });
        json_contents(request.uri, &value)
    }))
}

async fn entity_state(
    store: Arc<Store>,
    request: ResourceRequest,
    ctx: RequestContext,
) -> Contents {
    // The tool's bounds: 1-200 characters, no NUL (which no stored id can contain).
    let Some(entity_id) = request
        .var("entity_id")
        .filter(|e| e.chars().count() <= 200 && !e.contains('\0'))
        .map(str::to_owned)
    else {
        return Ok(None);
    };
    let found = get_entity_state::load(&store, "entity-state", &ctx, entity_id).await?;
    Ok(found.map(|(state, _)| json_contents(request.uri, &state)))
}
