//! The event-store tools. All read-only (one `BEGIN READ ONLY` transaction each, tenant
//! from the verified token, row-level security in the database), all bounded (row limits,
//! statement timeout), all answering in `structuredContent` that matches their
//! `outputSchema`. Failures the model can act on are `isError` results that say what to do.
//!
//! One module per tool holds its arguments (a `Deserialize` struct whose input schema is
//! generated from it), its output schema, its statements and its body. What they share:
//! [`store`] (the tenant-scoped read under the call's deadline), [`event`] (event rows and
//! their JSON form), [`outcome`] (results, failures and bounds on returned values),
//! [`args`] (argument checks and the typed tool definition) and [`sql`] (every statement).
//! [`resources`] serves the catalog, one event and one entity's state as resources too.

mod args;
mod complete;
mod count_events;
mod cursor;
mod describe_data;
mod event;
mod get_entity_state;
mod get_event;
mod jsonb;
mod links;
mod outcome;
mod prompts;
mod query_events;
mod resources;
mod rollup;
mod search_events;
mod search_fetch;
mod sql;
mod store;
mod summarize_window;

use std::sync::Arc;

use mcp_protocol::{RegistryError, Tools};

pub use args::READ_SCOPE;
pub use cursor::{CursorError, CursorKey, Position, filter_hash};
pub use event::{EventRow, SEVERITIES};
pub use links::{EVENT_TEMPLATE, EventLinks, LinkTemplateError};
pub use outcome::STORED_TEXT_NOTICE;
pub use prompts::register_prompts;
pub use query_events::MAX_LIMIT;
pub use resources::{ENTITY_STATE_TEMPLATE, EVENT_TYPES_URI, register_resources};
pub use search_events::MAX_SEARCH_LIMIT;
// The statements and their parameters, for the benchmarks that run exactly what the tools
// run (bench's floor and its scale benchmark).
#[doc(hidden)]
pub use rollup::Split as WindowSplit;
#[doc(hidden)]
pub use search_events::SEARCH_CANDIDATES;
#[doc(hidden)]
pub use sql::{
    COMPLETE_ENTITY_IDS, COMPLETE_EVENT_TYPES, COUNT_ALL, COUNT_BY_EVENT_TYPE, COUNT_BY_SEVERITY,
    ENTITY_COUNT_ALL, ENTITY_COUNT_BY_EVENT_TYPE, ENTITY_COUNT_BY_SEVERITY, ENTITY_SEVERITY_COUNTS,
    ENTITY_TYPES, EVENT_RANGE, EVENT_TYPES, QUERY_EVENTS_SQL, SEARCH_EVENTS_SQL, SEVERITY_COUNTS,
    WINDOW_SEVERITY_COUNTS, WINDOW_SUMMARIES,
};
pub use store::Store;

/// Registers every event-store tool, in the order `tools/list` shows them.
///
/// # Errors
///
/// Only if a definition is invalid (caught by tests).
pub fn register(tools: &mut Tools, store: Arc<Store>) -> Result<(), RegistryError> {
    tools.register(describe_data::def(store.clone()))?;
    tools.register(query_events::def(store.clone()))?;
    tools.register(get_event::def(store.clone()))?;
    tools.register(get_entity_state::def(store.clone()))?;
    tools.register(summarize_window::def(store.clone()))?;
    tools.register(count_events::def(store.clone()))?;
    tools.register(search_events::def(store.clone()))?;
    tools.register(search_fetch::search_def(store.clone()))?;
    tools.register(search_fetch::fetch_def(store))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use mcp_protocol::input_schema;
    use serde_json::{Value, json};

    use super::*;

    /// The published input schemas, generated from the argument structs, keep the bounds
    /// and defaults the hand-written ones had: a change here is a change to what clients see.
    #[test]
    fn generated_input_schemas_keep_their_bounds_and_defaults() {
        let q = input_schema::<query_events::Args>();
        let p = &q["properties"];
        assert_eq!(q["additionalProperties"], json!(false));
        assert!(q.get("required").is_none_or(|r| r == &json!([])), "{q}");
        assert_eq!(p["entity_id"]["minLength"], json!(1));
        assert_eq!(p["entity_id"]["maxLength"], json!(200));
        assert_eq!(p["event_types"]["maxItems"], json!(20));
        assert_eq!(p["event_types"]["uniqueItems"], json!(true));
        assert_eq!(p["event_types"]["items"]["maxLength"], json!(64));
        assert_eq!(p["since"]["format"], json!("date-time"));
        assert_eq!(p["since"]["maxLength"], json!(40));
        assert_eq!(p["tags_all"]["items"]["maxLength"], json!(100));
        assert_eq!(p["min_severity"]["enum"], json!(SEVERITIES));
        assert_eq!(
            p["min_severity"]["description"],
            json!("Only events of at least this severity")
        );
        assert_eq!(p["limit"]["minimum"], json!(1));
        assert_eq!(p["limit"]["maximum"], json!(MAX_LIMIT));
        assert_eq!(p["limit"]["default"], json!(50));
        assert_eq!(p["include_payload"]["default"], json!(false));
        assert_eq!(p["cursor"]["maxLength"], json!(512));
        for field in ["entity_id", "since", "cursor", "min_severity"] {
            assert_ne!(
                p[field]["type"],
                json!(["string", "null"]),
                "{field}: null is never sent"
            );
        }

        let c = input_schema::<count_events::Args>();
        assert_eq!(c["required"], json!(["since"]));
        assert_eq!(
            c["properties"]["bucket"]["enum"],
            json!(["minute", "hour", "day"])
        );
        assert_eq!(c["properties"]["bucket"]["default"], json!("hour"));
        assert_eq!(
            c["properties"]["group_by"]["enum"],
            json!(["none", "event_type", "severity"])
        );
        assert_eq!(c["properties"]["group_by"]["default"], json!("none"));

        let s = input_schema::<summarize_window::Args>();
        assert_eq!(s["required"], json!(["since"]));
        assert_eq!(s["properties"]["max_summaries"]["default"], json!(20));
        assert_eq!(s["properties"]["max_summaries"]["maximum"], json!(100));

        let e = input_schema::<get_event::Args>();
        assert_eq!(e["required"], json!(["id"]));
        assert_eq!(e["properties"]["id"]["minimum"], json!(1));
        let g = input_schema::<get_entity_state::Args>();
        assert_eq!(g["required"], json!(["entity_id"]));
        let d = input_schema::<describe_data::Args>();
        assert_eq!(d["properties"], json!({}));
        for schema in [&q, &c, &s, &e, &g, &d] {
            assert_eq!(schema["type"], json!("object"));
            assert!(!schema.to_string().contains("$ref"), "{schema}");
            assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
        }
    }

    /// Every integer argument has a minimum and a maximum inside `i64`, so what the schema
    /// lets through always reads as the struct's integer: a number past it is refused by the
    /// schema, naming the bound, and never reaches serde (whose message would name `i64`).
    #[test]
    fn every_integer_argument_is_bounded_inside_i64() {
        fn integers(schema: &Value, path: &str, found: &mut Vec<(String, Value)>) {
            if schema["type"] == json!("integer")
                || schema["type"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("integer")))
            {
                found.push((path.to_owned(), schema.clone()));
            }
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    integers(property, &format!("{path}/{name}"), found);
                }
            }
            if schema.get("items").is_some() {
                integers(&schema["items"], &format!("{path}[]"), found);
            }
        }
        let mut found = Vec::new();
        for (tool, schema) in [
            ("query_events", input_schema::<query_events::Args>()),
            ("count_events", input_schema::<count_events::Args>()),
            ("summarize_window", input_schema::<summarize_window::Args>()),
            ("get_event", input_schema::<get_event::Args>()),
            ("get_entity_state", input_schema::<get_entity_state::Args>()),
            ("describe_data", input_schema::<describe_data::Args>()),
            ("search_events", input_schema::<search_events::Args>()),
            ("search", input_schema::<search_fetch::SearchArgs>()),
            ("fetch", input_schema::<search_fetch::FetchArgs>()),
        ] {
            integers(&schema, tool, &mut found);
        }
        assert!(found.len() >= 4, "{found:?}");
        for (path, schema) in found {
            // `as_i64` is `None` for a bound missing, fractional or outside `i64`.
            assert!(schema["minimum"].as_i64().is_some(), "{path}: {schema}");
            assert!(schema["maximum"].as_i64().is_some(), "{path}: {schema}");
        }
    }

    /// A default written on the struct is what the body sees when the argument is left out.
    #[test]
    fn serde_defaults_are_the_only_defaults() {
        let q: query_events::Args = serde_json::from_value(json!({})).unwrap();
        let q = format!("{q:?}");
        assert!(
            q.contains("limit: 50") && q.contains("include_payload: false"),
            "{q}"
        );
        let c: count_events::Args =
            serde_json::from_value(json!({"since": "2026-12-01T00:00:00Z"})).unwrap();
        let c = format!("{c:?}");
        assert!(
            c.contains("bucket: Hour") && c.contains("group_by: None"),
            "{c}"
        );
        let unknown: Result<get_event::Args, _> =
            serde_json::from_value(json!({"id": 1, "extra": true}));
        assert!(unknown.is_err(), "unknown fields are refused");
    }
}
