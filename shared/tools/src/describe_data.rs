//! `describe_data`: what the tenant's event store holds, the model's first call.

use std::sync::Arc;

use jiff::Timestamp;
use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::args::tool;
use crate::event::{SEVERITIES, col};
use crate::outcome::{ToolResult, done, read_rows};
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "describe_data";

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Start here. Describes the event store for your tenant: event types with their descriptions and field schemas (up to 200; event_types_truncated says when there are more), entity types, severities, the time range covered and event counts.",
        store,
        run,
    )
    .title("Describe the event store")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "event_types": { "type": "array" },
            "entity_types": { "type": "array" },
            "severities": { "type": "array" },
            "first_event_at": { "type": ["string", "null"] },
            "last_event_at": { "type": ["string", "null"] },
            "total_events": { "type": "integer" },
            "event_types_truncated": { "type": "boolean" }
        },
        "required": ["event_types", "entity_types", "severities", "total_events"]
    }))
}

async fn run(store: Arc<Store>, _: Args, ctx: RequestContext) -> ToolResult {
    let tenant = tenant(&ctx)?;
    let (types, entities, severities, range) = store
        .read(NAME, &ctx, &tenant, |tx| {
            Box::pin(async move {
                let probe = sql::MAX_EVENT_TYPES + 1;
                // Four independent reads: one flight with the COMMIT, one round trip.
                let [types, entities, severities, range] = tx
                    .queries_and_commit([
                        (sql::EVENT_TYPES, &[(&probe, Type::INT8)]),
                        (sql::ENTITY_TYPES, &[]),
                        (sql::SEVERITY_COUNTS, &[]),
                        (sql::EVENT_RANGE, &[]),
                    ])
                    .await?;
                Ok((types, entities, severities, range))
            })
        })
        .await?;
    let rows = types.len() + entities.len() + severities.len() + range.len();
    let (event_types, truncated) = event_types(&types)?;
    let stats = CallStats {
        truncated,
        ..read_rows(rows)
    };
    let entity_types = entities
        .iter()
        .map(|r| Ok(json!({ "name": col::<String>(r, "entity_type")?, "events": col::<i64>(r, "events")? })))
        .collect::<Result<Vec<_>, ToolError>>()?;
    let severity_counts = SEVERITIES
        .iter()
        .enumerate()
        .map(|(rank, name)| Ok(json!({ "name": name, "events": count_of(&severities, rank)? })))
        .collect::<Result<Vec<_>, ToolError>>()?;
    let (first, last, total) = match range.first() {
        Some(r) => (
            col::<Option<Timestamp>>(r, "first")?,
            col::<Option<Timestamp>>(r, "last")?,
            col::<i64>(r, "events")?,
        ),
        None => (None, None, 0),
    };
    done(
        object([
            ("event_types", event_types.into()),
            ("entity_types", entity_types.into()),
            ("severities", severity_counts.into()),
            ("first_event_at", first.map(|t| t.to_string()).into()),
            ("last_event_at", last.map(|t| t.to_string()).into()),
            ("total_events", total.into()),
            ("event_types_truncated", truncated.into()),
        ]),
        stats,
    )
}

/// The event-type catalog from the rows of [`sql::EVENT_TYPES`] read with one row past
/// [`sql::MAX_EVENT_TYPES`], and whether that row says the catalog is longer than listed.
/// Shared with the event-types resource.
pub(crate) fn event_types(rows: &[Row]) -> Result<(Vec<Value>, bool), ToolError> {
    let truncated = rows.len() as i64 > sql::MAX_EVENT_TYPES;
    let listed = rows
        .iter()
        .take(sql::MAX_EVENT_TYPES as usize)
        .map(|r| {
            Ok(object([
                ("name", col::<String>(r, "name")?.into()),
                ("description", col::<String>(r, "description")?.into()),
                ("field_schema", col::<Value>(r, "field_schema")?),
            ]))
        })
        .collect::<Result<Vec<_>, ToolError>>()?;
    Ok((listed, truncated))
}

/// The count of events with severity `rank` among the per-severity rows (0 when absent).
fn count_of(rows: &[Row], rank: usize) -> Result<i64, ToolError> {
    for row in rows {
        if usize::try_from(col::<i16>(row, "severity")?).ok() == Some(rank) {
            return col(row, "events");
        }
    }
    Ok(0)
}
