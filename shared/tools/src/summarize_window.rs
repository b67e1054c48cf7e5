//! `summarize_window`: the newest precomputed summaries in a time window and a count per
//! severity. No model is called.

use std::sync::Arc;

use jiff::Timestamp;
use mcp_db::Param;
use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_postgres::types::Type;

use crate::args::{required_window, tool};
use crate::event::{SEVERITIES, col, severity_name};
use crate::outcome::{
    LIST_VALUE_BYTES, STORED_TEXT_NOTICE, ToolResult, done, read_rows, shorten_values,
};
use crate::rollup::Split;
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "summarize_window";

fn default_max_summaries() -> i64 {
    20
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Start of the window (RFC 3339)
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    since: String,
    /// End of the window (RFC 3339); default now
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    until: Option<String>,
    /// Entity id, exactly as stored
    #[schemars(length(min = 1, max = 200))]
    entity_id: Option<String>,
    #[serde(default = "default_max_summaries")]
    #[schemars(range(min = 1, max = 100))]
    max_summaries: i64,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Summarises a time window: the precomputed summaries of the newest events in it (no model is called) and a count per severity. Optionally for one entity.",
        store,
        run,
    )
    .title("Summarise a time window")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "since": { "type": "string" },
            "until": { "type": "string" },
            "severity_counts": { "type": "object" },
            "total_events": { "type": "integer" },
            "summaries": { "type": "array" },
            "truncated": { "type": "boolean" },
            "shortened_values": { "type": "integer" }
        },
        "required": ["since", "until", "severity_counts", "total_events", "summaries", "truncated"]
    }))
}

async fn run(store: Arc<Store>, args: Args, ctx: RequestContext) -> ToolResult {
    let tenant = tenant(&ctx)?;
    let (since, until) = required_window(&args.since, args.until.as_deref())?;
    let entity = Arc::new(args.entity_id);
    // The schema bounds it; the clamp keeps the SQL bounded whatever the schema says.
    let max = args.max_summaries.clamp(1, 100);
    let probe = max + 1;
    let (tally, summaries) = store
        .read(NAME, &ctx, &tenant, move |tx| {
            let entity = entity.clone();
            Box::pin(async move {
                let no_types: Option<Vec<String>> = None;
                let split = Split::new(since, until, 3_600, entity.is_some());
                let tally_params: [Param<'_>; 8] = [
                    (&since, Type::TIMESTAMPTZ),
                    (&until, Type::TIMESTAMPTZ),
                    (&*entity, Type::TEXT),
                    (&no_types, Type::TEXT_ARRAY),
                    (&split.m1, Type::TIMESTAMPTZ),
                    (&split.h1, Type::TIMESTAMPTZ),
                    (&split.h2, Type::TIMESTAMPTZ),
                    (&split.m2, Type::TIMESTAMPTZ),
                ];
                let params: [Param<'_>; 4] = [
                    (&since, Type::TIMESTAMPTZ),
                    (&until, Type::TIMESTAMPTZ),
                    (&*entity, Type::TEXT),
                    (&probe, Type::INT8),
                ];
                // Independent reads: one flight with the COMMIT, one round trip.
                let [tally, summaries] = tx
                    .queries_and_commit([
                        (
                            if entity.is_some() {
                                sql::ENTITY_SEVERITY_COUNTS
                            } else {
                                sql::WINDOW_SEVERITY_COUNTS
                            },
                            &tally_params,
                        ),
                        (sql::WINDOW_SUMMARIES, &params),
                    ])
                    .await?;
                Ok((tally, summaries))
            })
        })
        .await?;
    let mut counts = Map::new();
    for name in SEVERITIES {
        counts.insert(name.into(), json!(0));
    }
    let mut total = 0i64;
    for r in &tally {
        let n: i64 = col(r, "events")?;
        total += n;
        counts.insert(severity_name(col(r, "severity")?).into(), json!(n));
    }
    let truncated = summaries.len() as i64 > max;
    let mut shortened = 0;
    let summaries = summaries
        .iter()
        .take(max as usize)
        .map(|r| {
            let mut summary = json!({
                "id": col::<i64>(r, "id")?,
                "entity_id": col::<String>(r, "entity_id")?,
                "event_type": col::<String>(r, "event_type")?,
                "severity": severity_name(col(r, "severity")?),
                "occurred_at": col::<Timestamp>(r, "occurred_at")?.to_string(),
                "ai_summary": col::<String>(r, "ai_summary")?,
            });
            shortened += shorten_values(&mut summary, LIST_VALUE_BYTES);
            Ok(summary)
        })
        .collect::<Result<Vec<Value>, ToolError>>()?;
    let stats = CallStats {
        truncated: truncated || shortened > 0,
        ..read_rows(tally.len() + summaries.len())
    };
    done(
        object([
            ("since", since.to_string().into()),
            ("until", until.to_string().into()),
            ("severity_counts", counts.into()),
            ("total_events", total.into()),
            ("summaries", summaries.into()),
            ("truncated", truncated.into()),
            ("shortened_values", shortened.into()),
            ("notice", STORED_TEXT_NOTICE.into()),
        ]),
        stats,
    )
}
