//! `count_events`: events per time bucket, optionally grouped, for spotting spikes.

use std::sync::Arc;

use jiff::Timestamp;
use mcp_protocol::{CallStats, RequestContext, ToolDef, object, structured_cost};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::{required_window, tool};
use crate::event::{col, severity_name};
use crate::outcome::{PAGE_OVERHEAD_BYTES, ToolResult, done, fail, read_rows};
use crate::rollup::Split;
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

    /// The statement for this grouping, over every entity or one.
    fn statement(self, one_entity: bool) -> &'static str {
        match (self, one_entity) {
            (Self::None, false) => sql::COUNT_ALL,
            (Self::EventType, false) => sql::COUNT_BY_EVENT_TYPE,
            (Self::Severity, false) => sql::COUNT_BY_SEVERITY,
            (Self::None, true) => sql::ENTITY_COUNT_ALL,
            (Self::EventType, true) => sql::ENTITY_COUNT_BY_EVENT_TYPE,
            (Self::Severity, true) => sql::ENTITY_COUNT_BY_SEVERITY,
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
        "Counts events per time bucket (minute, hour or day, starting on UTC boundaries; the first and last bucket count only the part inside the window), optionally grouped by event type or severity. For spotting spikes before drilling in with query_events. When `truncated` is true the later buckets did not fit the response budget (total_events counts the returned ones): use a larger bucket or a shorter window.",
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

/// How many UTC-aligned buckets of `seconds` the window `[since, until)` touches, partial
/// ones at either end included: the number of buckets the statement can return.
fn buckets_touched(since: Timestamp, until: Timestamp, seconds: i64) -> i64 {
    let first = since.as_second().div_euclid(seconds);
    // `until` is exclusive: an `until` on a boundary does not open the next bucket.
    let last_instant = until.as_microsecond() - 1;
    let last = last_instant.div_euclid(1_000_000).div_euclid(seconds);
    last - first + 1
}

async fn run(store: Arc<Store>, args: Args, ctx: RequestContext) -> ToolResult {
    let tenant = tenant(&ctx)?;
    let (since, until) = required_window(&args.since, args.until.as_deref())?;
    let (bucket, group_by) = (args.bucket, args.group_by);
    let seconds = bucket.seconds();
    let touched = buckets_touched(since, until, seconds);
    if touched > MAX_BUCKETS {
        return fail(format!(
            "That window touches {touched} UTC {} buckets; at most {MAX_BUCKETS} are returned. Use a larger bucket or a shorter window.",
            bucket.as_str()
        ));
    }
    let split = Split::new(since, until, seconds, args.entity_id.is_some());
    let filters = Arc::new((args.entity_id, args.event_types));
    let interval = format!("{seconds} seconds");
    let rows = store
        .read(NAME, &ctx, &tenant, move |tx| {
            let (filters, interval) = (filters.clone(), interval.clone());
            Box::pin(async move {
                let (entity, types) = &*filters;
                let cap = MAX_BUCKETS * 10;
                tx.query_and_commit(
                    group_by.statement(entity.is_some()),
                    &[
                        (&since, Type::TIMESTAMPTZ),
                        (&until, Type::TIMESTAMPTZ),
                        (entity, Type::TEXT),
                        (types, Type::TEXT_ARRAY),
                        (&split.m1, Type::TIMESTAMPTZ),
                        (&split.h1, Type::TIMESTAMPTZ),
                        (&split.h2, Type::TIMESTAMPTZ),
                        (&split.m2, Type::TIMESTAMPTZ),
                        (&interval, Type::TEXT),
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
        object([
            ("bucket", bucket.as_str().into()),
            ("group_by", group_by.as_str().into()),
            ("buckets", buckets.into()),
            ("total_events", total.into()),
            ("truncated", truncated.into()),
        ]),
        stats,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn buckets_are_counted_on_utc_boundaries_with_partial_ends() {
        let hour = Bucket::Hour.seconds();
        // Exactly 1,000 whole hours: 1,000 buckets.
        assert_eq!(
            buckets_touched(at("2026-01-01T00:00:00Z"), at("2026-02-11T16:00:00Z"), hour),
            1000
        );
        // One second more opens bucket 1,001 (the off-by-one the cap had).
        assert_eq!(
            buckets_touched(at("2026-01-01T00:00:00Z"), at("2026-02-11T16:00:01Z"), hour),
            1001
        );
        // A window inside one hour, and one straddling an hour boundary.
        assert_eq!(
            buckets_touched(at("2026-01-01T10:15:00Z"), at("2026-01-01T10:45:00Z"), hour),
            1
        );
        assert_eq!(
            buckets_touched(at("2026-01-01T10:59:00Z"), at("2026-01-01T11:01:00Z"), hour),
            2
        );
        // Before the epoch too.
        assert_eq!(
            buckets_touched(at("1969-12-31T23:30:00Z"), at("1970-01-01T00:30:00Z"), hour),
            2
        );
    }
}
