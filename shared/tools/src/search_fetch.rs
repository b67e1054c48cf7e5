//! `search` and `fetch`: the pair ChatGPT connectors and deep research look for by name, in
//! the shape OpenAI documents for them (one string argument each; `search` answers
//! `{"results": [{id, title, url}]}`, `fetch` answers `{id, title, text, url, metadata}`,
//! both as structured content and as one text block holding the same JSON). Thin layers
//! over `search_events` and `get_event`: same scope, tenant, bounds and statements.

use std::sync::Arc;

use mcp_protocol::{CallStats, RequestContext, ToolDef, object};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::tool;
use crate::event::{Severity, severity_name};
use crate::get_event;
use crate::outcome::{
    PAGE_OVERHEAD_BYTES, STORED_TEXT_NOTICE, ToolResult, done, fail, fitting, read_rows,
};
use crate::search_events::{Hit, Query, search};
use crate::store::Store;

/// Results one `search` returns (it has no cursor: the contract takes one string).
const SEARCH_RESULTS: i64 = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// Words to look for, web-search style: "exact phrase", or, -excluded
    #[schemars(length(min = 1, max = 200))]
    query: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FetchArgs {
    /// An id from search results
    #[schemars(length(min = 1, max = 300))]
    id: String,
}

pub(crate) fn search_def(store: Arc<Store>) -> ToolDef {
    tool(
        "search",
        "Searches the incident event store (the last 30 days) for events matching the query; web-search syntax: words, \"exact phrases\", or, -excluded. Returns up to 20 results, best first (fewer when the response budget is small), each with an id for fetch, a title and a citable url. search_events offers windows, severities and paging.",
        store,
        run_search,
    )
    .title("Search events (id, title, url)")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "title": { "type": "string" },
                        "url": { "type": "string" }
                    },
                    "required": ["id", "title", "url"]
                }
            }
        },
        "required": ["results"]
    }))
}

pub(crate) fn fetch_def(store: Arc<Store>) -> ToolDef {
    tool(
        "fetch",
        "Fetches one event by the id a search result gave (its url works too): the full text of the event (summary, structured fields, payload; values over 32 KB cut with a marker), a citable url and metadata.",
        store,
        run_fetch,
    )
    .title("Fetch one event (id, title, text, url, metadata)")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "id": { "type": "string" },
            "title": { "type": "string" },
            "text": { "type": "string" },
            "url": { "type": "string" },
            "metadata": { "type": "object" }
        },
        "required": ["id", "title", "text", "url", "metadata"]
    }))
}

/// How a result names an event: what happened, where, when.
fn title(event_type: &str, entity_id: &str, severity: &str, occurred_at: &str) -> String {
    format!("{event_type} on {entity_id} ({severity}) at {occurred_at}")
}

async fn run_search(store: Arc<Store>, args: SearchArgs, ctx: RequestContext) -> ToolResult {
    let query = Query {
        text: args.query,
        since: None,
        until: None,
        min_severity: Severity::default(),
        limit: SEARCH_RESULTS,
        cursor: None,
    };
    let found = search(&store, "search", &ctx, &query).await?;
    // The best results that fit the budget: a client that keeps little gets fewer, never a
    // refusal (the contract has no cursor, so the rest are what search_events pages).
    let (results, cut) = fitting(
        found.hits.iter().map(|hit: &Hit| {
            json!({
                "id": hit.id.to_string(),
                "title": title(&hit.event_type, &hit.entity_id, severity_name(hit.severity), &hit.occurred_at.to_string()),
                "url": store.links.url(hit.id),
            })
        }),
        ctx.response_budget.saturating_sub(PAGE_OVERHEAD_BYTES),
    );
    let stats = CallStats {
        truncated: found.more || cut,
        ..read_rows(found.hits.len())
    };
    done(object([("results", results.into())]), stats)
}

async fn run_fetch(store: Arc<Store>, args: FetchArgs, ctx: RequestContext) -> ToolResult {
    let Some(id) = store.links.id_in(&args.id) else {
        return fail(format!(
            "{:?} is not an event id. Pass the id of a search result, such as \"42\".",
            args.id
        ));
    };
    let Some((event, shortened)) = get_event::load(&store, "fetch", &ctx, id).await? else {
        // Row-level security makes another tenant's event indistinguishable from none.
        return fail(format!(
            "No event with id {id} in your tenant. Use search to find event ids."
        ));
    };
    let text_of = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
    let occurred_at = text_of("occurred_at");
    let stats = CallStats {
        truncated: shortened > 0,
        ..read_rows(1)
    };
    done(
        json!({
            "id": id.to_string(),
            "title": title(text_of("event_type"), text_of("entity_id"), text_of("severity"), occurred_at),
            "text": document(&event),
            "url": store.links.url(id),
            "metadata": {
                "event_type": event["event_type"],
                "entity_id": event["entity_id"],
                "entity_type": event["entity_type"],
                "severity": event["severity"],
                "occurred_at": occurred_at,
                "tags": event["tags"],
                "shortened_values": shortened,
                "notice": STORED_TEXT_NOTICE,
            },
        }),
        stats,
    )
}

/// The event as one readable text: a heading line, then each part that has content.
fn document(event: &Value) -> String {
    let text_of = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut out = format!(
        "{} on {} ({}) at {}, severity {}",
        text_of("event_type"),
        text_of("entity_id"),
        text_of("entity_type"),
        text_of("occurred_at"),
        text_of("severity"),
    );
    if let Some(tags) = event.get("tags").and_then(Value::as_array)
        && !tags.is_empty()
    {
        let tags: Vec<&str> = tags.iter().filter_map(Value::as_str).collect();
        out.push_str(&format!("\nTags: {}", tags.join(", ")));
    }
    if let Some(summary) = event.get("ai_summary").and_then(Value::as_str) {
        out.push_str(&format!("\nSummary: {summary}"));
    }
    for (key, label) in [("structured", "Structured"), ("payload", "Payload")] {
        if let Some(v) = event.get(key).filter(|v| !v.is_null()) {
            out.push_str(&format!("\n{label}: {v}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_reads_every_part_that_has_content() {
        let event = json!({
            "id": 7, "event_type": "error.logged", "entity_id": "svc-checkout-1", "entity_type": "service",
            "severity": "error", "occurred_at": "2026-12-01T10:00:00Z", "tags": ["team:core", "paging"],
            "structured": {"message": "upstream timeout"}, "ai_summary": "Checkout timed out", "payload": null,
        });
        let text = document(&event);
        assert_eq!(
            text,
            "error.logged on svc-checkout-1 (service) at 2026-12-01T10:00:00Z, severity error\nTags: team:core, paging\nSummary: Checkout timed out\nStructured: {\"message\":\"upstream timeout\"}"
        );
        assert_eq!(
            title(
                "error.logged",
                "svc-checkout-1",
                "error",
                "2026-12-01T10:00:00Z"
            ),
            "error.logged on svc-checkout-1 (error) at 2026-12-01T10:00:00Z"
        );
    }
}
