//! The gate: the deployed function's exact tools (names, titles, scopes, annotations, the
//! arguments they require and accept, the fields their results promise), resources and
//! prompts.
//! Adding, removing or reshaping one is a deliberate change to this file, reviewed as such,
//! because every connected agent sees it.

use serde_json::{Value, json};

use crate::support::db::unconnected_store;

/// The production server over a store it never connects to: listing touches no database.
fn deployed() -> mcp_protocol::Server {
    mcp::production_server(
        unconnected_store(),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap()
}

fn keys(schema: &Value, field: &str) -> Vec<String> {
    match &schema[field] {
        Value::Object(map) => {
            let mut names: Vec<String> = map.keys().cloned().collect();
            names.sort();
            names
        }
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

#[test]
fn the_deployed_tools_are_exactly_these() {
    let server = deployed();
    let listed: Vec<Value> = server
        .tools()
        .iter()
        .map(|tool| {
            let l = tool.listing();
            json!({
                "name": l["name"],
                "title": l["title"],
                "scopes": tool.required_scopes(),
                "annotations": l["annotations"],
                "required": keys(&l["inputSchema"], "required"),
                "arguments": keys(&l["inputSchema"], "properties"),
                "closed": l["inputSchema"]["additionalProperties"] == json!(false),
                "result_requires": keys(&l["outputSchema"], "required"),
            })
        })
        .collect();
    let read_only = json!({
        "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false
    });
    let tool = |name: &str, title: &str, required: &[&str], arguments: &[&str], result: &[&str]| {
        json!({
            "name": name, "title": title, "scopes": ["events:read"], "annotations": read_only,
            "required": required, "arguments": arguments, "closed": true, "result_requires": result,
        })
    };
    let expected = vec![
        tool(
            "describe_data",
            "Describe the event store",
            &[],
            &[],
            &["event_types", "entity_types", "severities", "total_events"],
        ),
        tool(
            "query_events",
            "Query events",
            &[],
            &[
                "cursor",
                "entity_id",
                "event_types",
                "include_payload",
                "limit",
                "min_severity",
                "since",
                "tags_all",
                "tags_any",
                "until",
            ],
            &["events", "count", "limit", "truncated", "next_cursor"],
        ),
        tool("get_event", "Get one event", &["id"], &["id"], &["event"]),
        tool(
            "get_entity_state",
            "Get an entity's current state",
            &["entity_id"],
            &["entity_id"],
            &["entity_id", "entity_type", "state", "updated_at"],
        ),
        tool(
            "summarize_window",
            "Summarise a time window",
            &["since"],
            &["entity_id", "max_summaries", "since", "until"],
            &[
                "since",
                "until",
                "severity_counts",
                "total_events",
                "summaries",
                "truncated",
            ],
        ),
        tool(
            "count_events",
            "Count events over time",
            &["since"],
            &[
                "bucket",
                "entity_id",
                "event_types",
                "group_by",
                "since",
                "until",
            ],
            &["bucket", "group_by", "buckets", "total_events", "truncated"],
        ),
        tool(
            "search_events",
            "Search events",
            &["query"],
            &["cursor", "limit", "min_severity", "query", "since", "until"],
            &[
                "query",
                "window",
                "results",
                "count",
                "truncated",
                "next_cursor",
                "older_matches_until",
            ],
        ),
        // The pair ChatGPT connectors and deep research look for: one string argument each.
        tool(
            "search",
            "Search events (id, title, url)",
            &["query"],
            &["query"],
            &["results"],
        ),
        tool(
            "fetch",
            "Fetch one event (id, title, text, url, metadata)",
            &["id"],
            &["id"],
            &["id", "title", "text", "url", "metadata"],
        ),
    ];
    assert_eq!(listed, expected);
    assert_eq!(server.tools().all_scopes(), ["events:read"]);
}

/// The deployed resources: URI or template, name, title, type, scopes. Each reads what
/// the matching tool reads, so a change here goes with one there.
#[test]
fn the_deployed_function_serves_exactly_these_resources() {
    let server = deployed();
    let listed: Vec<(Value, Vec<String>)> = server
        .resources()
        .iter()
        .map(|r| (r.listing().clone(), r.required_scopes().to_vec()))
        .collect();
    let read = vec!["events:read".to_owned()];
    let expected = vec![
        (
            json!({
                "uri": "event-store://event-types",
                "name": "event-types",
                "title": "Event types",
                "mimeType": "application/json",
                "description": listed[0].0["description"],
            }),
            read.clone(),
        ),
        (
            json!({
                "uriTemplate": "event-store://events/{id}",
                "name": "event",
                "title": "One event",
                "mimeType": "application/json",
                "description": listed[1].0["description"],
            }),
            read.clone(),
        ),
        (
            json!({
                "uriTemplate": "event-store://entities/{entity_id}/state",
                "name": "entity-state",
                "title": "An entity's current state",
                "mimeType": "application/json",
                "description": listed[2].0["description"],
            }),
            read,
        ),
    ];
    assert_eq!(listed, expected);
    for (listing, _) in &listed {
        let description = listing["description"].as_str().unwrap();
        assert!(description.len() > 40, "{description}");
    }
    assert_eq!(server.all_scopes(), ["events:read"]);
}

#[test]
fn the_deployed_function_offers_exactly_these_prompts() {
    let server = deployed();
    let listed: Vec<Value> = server
        .prompts()
        .iter()
        .map(|prompt| {
            let l = prompt.listing();
            let arguments: Vec<Value> = prompt
                .arguments()
                .iter()
                .map(|a| {
                    json!({
                        "name": a.name(),
                        "required": a.is_required(),
                        "completes": a.completer().is_some(),
                    })
                })
                .collect();
            json!({
                "name": l["name"],
                "title": l["title"],
                "scopes": prompt.required_scopes(),
                "arguments": arguments,
            })
        })
        .collect();
    let arg =
        |name: &str, required: bool| json!({"name": name, "required": required, "completes": true});
    assert_eq!(
        listed,
        [
            json!({"name": "triage_incident", "title": "Triage an incident", "scopes": ["events:read"],
                   "arguments": [arg("entity_id", true), arg("window", false)]}),
            json!({"name": "what_changed", "title": "What changed", "scopes": ["events:read"],
                   "arguments": [arg("entity_id", true), arg("window", false)]}),
            json!({"name": "daily_digest", "title": "Daily digest", "scopes": ["events:read"],
                   "arguments": [arg("window", false), arg("event_type", false)]}),
        ]
    );
    // The entity-state template's variable completes as the prompts' entity ids do.
    let template = server
        .resources()
        .template(mcp_tools::ENTITY_STATE_TEMPLATE)
        .unwrap();
    assert!(template.completer("entity_id").is_some());
}
