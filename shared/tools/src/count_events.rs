//! `count_events`: events per time bucket, optionally grouped, for spotting spikes.

use std::sync::Arc;

use jiff::Timestamp;
use mcp_protocol::{CallStats, RequestContext, ToolDef, structured_cost};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::{required_window, tool};
use crate::event::{col, severity_name};
use crate::outcome::{PAGE_OVERHEAD_BYTES, ToolResult, done, fail, read_rows};
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "count_events";

/// The most buckets one `count_events` call returns.
const MAX_BUCKETS: i64 = 1000;

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Bucket {
    Minute,
    #[default]
    Hour,
    Day,
}

impl Bucket {
    fn seconds(self) -> i64 {
        match self {
            Self::Minute => 60,
            Self::Hour => 3_600,
            Self::Day => 86_400,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum GroupBy {
    #[default]
    None,
    EventType,
    Severity,
}

impl GroupBy {
    fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::EventType => "event_type",
            Self::Severity => "severity",
        }
    }

    fn statement(self) -> &'static str {
        match self {
            Self::None => sql::COUNT_ALL,
            Self::EventType => sql::COUNT_BY_EVENT_TYPE,
            Self::Severity => sql::COUNT_BY_SEVERITY,
        }
    }
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
    #[serde(default)]
    bucket: Bucket,
    #[serde(default)]
    group_by: GroupBy,
    /// Entity id, exactly as stored
    #[schemars(length(min = 1, max = 200))]
    entity_id: Option<String>,
    #[schemars(length(max = 20), inner(length(max = 64)), extend("uniqueItems" = true))]
    event_types: Option<Vec<String>>,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Counts events per time bucket (minute, hour or day), optionally grouped by event type or severity. For spotting spikes before drilling in with query_events. When `truncated` is true the later buckets did not fit the response budget (total_events counts the returned ones): use a larger bucket or a shorter window.",
        store,
        run,
    )
    .title("Count events over time")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "bucket": { "type": "string" },
            "group_by": { "type": "string" },
            "buckets": { "type": "array" },
            "total_events": { "type": "integer" },
            "truncated": { "type": "boolean" }
        },
        "required": ["bucket", "group_by", "buckets", "total_events", "truncated"]
    }))
}

async fn run(store: Arc<Store>, args: Args, ctx: RequestContext) -> ToolResult {
    let tenant = tenant(&ctx)?;
    let (since, until) = required_window(&args.since, args.until.as_deref())?;
    let (bucket, group_by) = (args.bucket, args.group_by);
    let seconds = bucket.seconds();
    let span = until.as_second() - since.as_second();
    if span / seconds > MAX_BUCKETS {
        return fail(format!(
            "That window holds {} {} buckets; at most {MAX_BUCKETS} are returned. Use a larger bucket or a shorter window.",
            span / seconds,
            bucket.as_str()
        ));
    }
    let filters = Arc::new((args.entity_id, args.event_types));
    let interval = format!("{seconds} seconds");
    let rows = store
        .read(NAME, &ctx, &tenant, move |tx| {
            let (filters, interval) = (filters.clone(), interval.clone());
            Box::pin(async move {
                let (entity, types) = &*filters;
                let cap = MAX_BUCKETS * 10;
                tx.query(
                    group_by.statement(),
                    &[
                        (&interval, Type::TEXT),
                        (&since, Type::TIMESTAMPTZ),
                        (&until, Type::TIMESTAMPTZ),
                        (entity, Type::TEXT),
                        (types, Type::TEXT_ARRAY),
                        (&cap, Type::INT8),
                    ],
                )
                .await
            })
        })
        .await?;
    // Buckets are small, but a long window by minute and type holds thousands of them: the
    // list stops at the response budget like query_events, and says so.
    let room = ctx.response_budget.saturating_sub(PAGE_OVERHEAD_BYTES);
    let mut used = 0;
    let mut total = 0;
    let mut truncated = false;
    let mut buckets: Vec<Value> = Vec::new();
    for r in &rows {
        let n: i64 = col(r, "events")?;
        let mut b = json!({ "start": col::<Timestamp>(r, "start")?.to_string(), "count": n });
        let key: String = col(r, "key")?;
        match group_by {
            GroupBy::Severity => b["severity"] = json!(severity_name(key.parse().unwrap_or(-1))),
            GroupBy::EventType => b["event_type"] = json!(key),
            GroupBy::None => {}
        }
        let cost = structured_cost(&b) + 2;
        if used + cost > room {
            truncated = true;
            break;
        }
        used += cost;
        total += n;
        buckets.push(b);
    }
    let stats = CallStats {
        truncated,
        ..read_rows(rows.len())
    };
    done(
        json!({
            "bucket": bucket.as_str(),
            "group_by": group_by.as_str(),
            "buckets": buckets,
            "total_events": total,
            "truncated": truncated,
        }),
        stats,
    )
}
