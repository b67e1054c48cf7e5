//! The gate: the deployed function's exact tools (names, titles, scopes, annotations, the
//! arguments they require and accept, the fields their results promise) and resources.
//! Adding, removing or reshaping one is a deliberate change to this file, reviewed as such,
//! because every connected agent sees it.

use std::time::Duration;

use mcp_db::{Credentials, Db, DbConfig, TlsMode};
use mcp_tools::{CursorKey, Store};
use serde_json::{Value, json};

/// The production server over a store it never connects to: listing touches no database.
fn deployed() -> mcp_protocol::Server {
    let store = Store {
        db: Db::new(DbConfig {
            credentials: Credentials::Url("postgres://mcp_endpoint@127.0.0.1:1/none".into()),
            tls: TlsMode::Disable,
            connect_timeout: Duration::from_secs(1),
        }),
        cursor_key: CursorKey::new(vec![1u8; 32]).unwrap(),
        statement_timeout: Duration::from_secs(5),
    };
    mcp::production_server(
        Some(std::sync::Arc::new(store)),
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
    ];
    assert_eq!(listed, expected);
    assert_eq!(server.tools().all_scopes(), ["events:read"]);
}

#[test]
fn the_deployed_function_lists_no_resources_yet() {
    assert_eq!(deployed().resource_count(), 0);
}
