//! `query_events`: a page of events, newest first, up to a row limit and the response
//! budget, with a signed cursor for the next page.

use std::ops::ControlFlow;
use std::sync::Arc;

use jiff::Timestamp;
use mcp_db::Param;
use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::args::{tool, window};
use crate::cursor::{Position, filter_hash};
use crate::event::{EventRow, Severity, event_schema};
use crate::outcome::{
    LIST_VALUE_BYTES, ListText, PAGE_OVERHEAD_BYTES, STORED_TEXT_NOTICE, ToolResult,
};
use crate::sql::QUERY_EVENTS_SQL;
use crate::store::{Store, tenant};

const NAME: &str = "query_events";

/// Row cap of `query_events`.
pub const MAX_LIMIT: i64 = 500;

fn default_limit() -> i64 {
    50
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Entity id, exactly as stored
    #[schemars(length(min = 1, max = 200))]
    entity_id: Option<String>,
    #[schemars(length(max = 20), inner(length(max = 64)), extend("uniqueItems" = true))]
    event_types: Option<Vec<String>>,
    /// Only events at or after this instant (RFC 3339)
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    since: Option<String>,
    /// Only events before this instant (RFC 3339)
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    until: Option<String>,
    /// Events with at least one of these tags
    #[schemars(length(max = 20), inner(length(max = 100)))]
    tags_any: Option<Vec<String>>,
    /// Events with all of these tags
    #[schemars(length(max = 20), inner(length(max = 100)))]
    tags_all: Option<Vec<String>>,
    /// Only events of at least this severity
    min_severity: Option<Severity>,
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    limit: i64,
    #[serde(default)]
    include_payload: bool,
    /// next_cursor from the previous page
    #[schemars(length(max = 512))]
    cursor: Option<String>,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Lists events newest first, filtered by entity, event types, time window, tags and minimum severity. Returns at most `limit` events (default 50, at most 500), and fewer when the page would outgrow the response size budget; when `truncated` is true, pass `next_cursor` back as `cursor` with the same filters for the next page. Text values over 1 KB are cut with a marker (get_event returns values up to 32 KB). Raw payloads only when include_payload is true.",
        store,
        run,
    )
    .title("Query events")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "events": { "type": "array", "items": event_schema() },
            "count": { "type": "integer" },
            "limit": { "type": "integer" },
            "truncated": { "type": "boolean" },
            "stopped_by": { "type": ["string", "null"], "enum": ["limit", "bytes", null] },
            "shortened_values": { "type": "integer" },
            "next_cursor": { "type": ["string", "null"] }
        },
        "required": ["events", "count", "limit", "truncated", "next_cursor"]
    }))
}

/// The filters of one query: what a cursor is bound to.
struct Filter {
    entity_id: Option<String>,
    event_types: Option<Vec<String>>,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    tags_any: Option<Vec<String>>,
    tags_all: Option<Vec<String>>,
    min_severity: i16,
}

impl Filter {
    fn new(args: Args) -> Result<Self, ToolError> {
        let (since, until) = window(args.since.as_deref(), args.until.as_deref())?;
        Ok(Self {
            entity_id: args.entity_id,
            event_types: args.event_types,
            since,
            until,
            tags_any: args.tags_any,
            tags_all: args.tags_all,
            min_severity: args.min_severity.unwrap_or_default().rank(),
        })
    }

    /// The canonical form a cursor is bound to.
    fn canonical(&self) -> Value {
        json!({
            "entity_id": self.entity_id, "event_types": self.event_types,
            "since": self.since.map(|t| t.to_string()), "until": self.until.map(|t| t.to_string()),
            "tags_any": self.tags_any, "tags_all": self.tags_all, "min_severity": self.min_severity,
        })
    }
}

async fn run(store: Arc<Store>, mut args: Args, ctx: RequestContext) -> ToolResult {
    let tenant = tenant(&ctx)?;
    // The schema bounds `limit`; the clamp keeps the SQL bounded whatever the schema says.
    let limit = args.limit.clamp(1, MAX_LIMIT);
    let with_payload = args.include_payload;
    let cursor = args.cursor.take();
    let filter = Arc::new(Filter::new(args)?);
    let fingerprint = filter_hash(&filter.canonical());
    let after: Option<Position> = match cursor {
        None => None,
        Some(c) => Some(
            store
                .cursor_key
                .verify(&tenant, &fingerprint, &c)
                .map_err(|e| ToolError::Execution(format!("Invalid cursor: {e}.")))?,
        ),
    };
    let after_at = after.as_ref().map(|p| p.at);
    let after_id = after.as_ref().map(|p| p.id);
    // One row past the limit tells whether another page exists without counting.
    let probe = limit + 1;
    // What the rows may take of the response budget: the rest is the envelope, the page
    // fields and the cursor.
    let room = ctx.response_budget.saturating_sub(PAGE_OVERHEAD_BYTES);
    let page = store
        .read(NAME, &ctx, &tenant, move |tx| {
            let f = filter.clone();
            Box::pin(async move {
                let params: [Param<'_>; 11] = [
                    (&f.entity_id, Type::TEXT),
                    (&f.event_types, Type::TEXT_ARRAY),
                    (&f.since, Type::TIMESTAMPTZ),
                    (&f.until, Type::TIMESTAMPTZ),
                    (&f.tags_any, Type::TEXT_ARRAY),
                    (&f.tags_all, Type::TEXT_ARRAY),
                    (&f.min_severity, Type::INT2),
                    (&after_at, Type::TIMESTAMPTZ),
                    (&after_id, Type::INT8),
                    (&probe, Type::INT8),
                    (&with_payload, Type::BOOL),
                ];
                let mut page = Page::new(limit as usize, room, with_payload);
                page.rows_read = tx
                    .for_each_row_and_commit(QUERY_EVENTS_SQL, &params, |row| page.offer(&row))
                    .await?;
                Ok(page)
            })
        })
        .await?;
    if let Some(e) = page.unreadable {
        return Err(e);
    }
    let next_cursor = match (page.more, page.last) {
        (true, Some(last)) => Some(store.cursor_key.sign(&tenant, &fingerprint, &last)),
        _ => None,
    };
    let stats = CallStats {
        rows: Some(page.rows_read),
        truncated: page.more || page.shortened > 0,
        deadline_phase: None,
    };
    page.text.done(
        object([
            ("count", page.count.into()),
            // Written from the page's text: see ListText::done.
            ("events", Value::Null),
            ("limit", limit.into()),
            ("truncated", page.more.into()),
            ("stopped_by", page.stopped_by.into()),
            ("shortened_values", page.shortened.into()),
            ("next_cursor", next_cursor.into()),
            ("notice", STORED_TEXT_NOTICE.into()),
        ]),
        "events",
        stats,
    )
}

/// One page of events being filled from a row stream, up to a row limit and a byte budget.
struct Page {
    limit: usize,
    room: usize,
    with_payload: bool,
    /// Events taken.
    count: usize,
    /// The events, serialised as they were measured.
    text: ListText,
    used: usize,
    last: Option<Position>,
    /// Another page exists (a row was left unreturned).
    more: bool,
    /// Why the page ended early: `limit` or `bytes`.
    stopped_by: Option<&'static str>,
    shortened: usize,
    rows_read: u64,
    /// A row that could not be decoded ended the read.
    unreadable: Option<ToolError>,
}

impl Page {
    fn new(limit: usize, room: usize, with_payload: bool) -> Self {
        Self {
            limit,
            room,
            with_payload,
            count: 0,
            text: ListText::default(),
            used: 0,
            last: None,
            more: false,
            stopped_by: None,
            shortened: 0,
            rows_read: 0,
            unreadable: None,
        }
    }

    /// Takes `row` if it fits; says stop at the first row that does not (the limit+1 probe
    /// row, or one that would cross the byte budget) or cannot be read.
    fn offer(&mut self, row: &Row) -> ControlFlow<()> {
        if self.count == self.limit {
            return self.stop("limit");
        }
        match self.take(row) {
            Ok(flow) => flow,
            Err(e) => {
                self.unreadable = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    fn take(&mut self, row: &Row) -> Result<ControlFlow<()>, ToolError> {
        let mut event = EventRow::read(row, self.with_payload)?;
        let position = Position {
            at: event.occurred_at,
            id: event.id,
        };
        let mut shortened = event.shorten(LIST_VALUE_BYTES);
        let (start, mut cost) = self.text.push(&event);
        if cost > self.room / 4 {
            // One event as big as a quarter of the budget would crowd out the page: its
            // bulky parts are left for get_event, so the page still makes progress.
            shortened += event.omit_bulk();
            self.text.forget_last(start);
            cost = self.text.push(&event).1;
        }
        if self.used + cost > self.room {
            self.text.forget_last(start);
            return Ok(self.stop("bytes"));
        }
        self.used += cost;
        self.shortened += shortened;
        self.last = Some(position);
        self.count += 1;
        Ok(ControlFlow::Continue(()))
    }

    fn stop(&mut self, why: &'static str) -> ControlFlow<()> {
        self.more = true;
        self.stopped_by = Some(why);
        ControlFlow::Break(())
    }
}
