//! Prompts for the jobs this store is for (2025-11-25 server/prompts): triage an incident,
//! see what changed, digest a day. Each renders one plan that names the tools to call with
//! their arguments filled in (the window's instants computed at `prompts/get` time), and
//! may embed a small fact read from the tenant's store: the entity's current state, the
//! catalog's event types that record changes. Everything read is tenant-scoped and held to
//! the request's deadline and budget like a tool call.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp, Unit};
use mcp_protocol::{
    ArgumentDef, Outcome, PromptArguments, PromptDef, PromptError, PromptResult, Prompts,
    RequestContext, ToolError,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};
use tokio_postgres::types::Type;

use crate::args::READ_SCOPE;
use crate::complete;
use crate::event::col;
use crate::get_entity_state;
use crate::resources::ENTITY_STATE_TEMPLATE;
use crate::sql;
use crate::store::{Store, tenant};

/// The window when none is given.
const DEFAULT_WINDOW: &str = "24h";

/// The longest window a prompt plans for (the tools read further, but a plan over more
/// than a quarter is no triage).
const MAX_WINDOW: SignedDuration = SignedDuration::from_hours(90 * 24);

/// Words in an event type's name that say it records a change.
const CHANGE_WORDS: [&str; 9] = [
    "deploy", "config", "release", "rollout", "rollback", "flag", "migrat", "change", "version",
];

/// Registers the prompts, each requiring [`READ_SCOPE`] like the tools they plan for.
///
/// # Errors
///
/// Only if a definition is invalid (caught by tests).
pub fn register_prompts(prompts: &mut Prompts, store: Arc<Store>) -> Result<(), PromptError> {
    let entity = |what: &str| {
        ArgumentDef::required("entity_id", what)
            .title("Entity")
            .complete_with(complete::entity_ids(store.clone()))
    };
    let window = || {
        ArgumentDef::optional(
            "window",
            "How far back to look: minutes, hours or days, such as 30m, 6h or 7d (default 24h, at most 90d)",
        )
        .title("Window")
        .complete_with(complete::windows())
    };
    let s = store.clone();
    prompts.register(
        PromptDef::new(
            "triage_incident",
            "Triage an incident on one entity: what happened and in which order, what changed just before, and what is still firing. Embeds the entity's current state.",
            move |args, ctx| triage_incident(s.clone(), args, ctx),
        )
        .title("Triage an incident")
        .argument(entity("The entity (service, host, ...) the incident is about, such as svc-checkout"))
        .argument(window())
        .scopes([READ_SCOPE]),
    )?;
    let s = store.clone();
    prompts.register(
        PromptDef::new(
            "what_changed",
            "What changed on one entity in a window: deploys, configuration changes and the like, with their outcomes.",
            move |args, ctx| what_changed(s.clone(), args, ctx),
        )
        .title("What changed")
        .argument(entity("The entity (service, host, ...) to look at"))
        .argument(window())
        .scopes([READ_SCOPE]),
    )?;
    prompts.register(
        PromptDef::new(
            "daily_digest",
            "A digest of a window across the whole store: counts by type, the worst events, incidents still open.",
            |args, _| async move { daily_digest(&args) },
        )
        .title("Daily digest")
        .argument(window())
        .argument(
            ArgumentDef::optional("event_type", "Only this event type, such as alert.fired (default: all)")
                .title("Event type")
                .complete_with(complete::event_types(store)),
        )
        .scopes([READ_SCOPE]),
    )?;
    Ok(())
}

/// The window's start and end as RFC 3339 instants (whole seconds), its text, and the
/// `count_events` bucket that shows it in a readable number of rows (and within the tool's
/// 1,000 buckets).
struct Window {
    since: String,
    until: String,
    text: String,
    bucket: &'static str,
}

fn window(args: &PromptArguments) -> Result<Window, ToolError> {
    let text = args
        .get("window")
        .map_or(DEFAULT_WINDOW, String::as_str)
        .trim();
    let invalid = || {
        ToolError::InvalidParams(format!(
            "window {text:?} is not a duration such as 30m, 6h or 7d (minutes, hours or days, at most 90d)"
        ))
    };
    let split = text.char_indices().last().ok_or_else(invalid)?.0;
    let (number, unit) = text.split_at(split);
    let n: i64 = number
        .parse()
        .ok()
        .filter(|n| *n > 0 && number.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(invalid)?;
    let length = match unit {
        "m" => SignedDuration::from_mins(n.min(i64::MAX / 60)),
        "h" => SignedDuration::from_hours(n.min(i64::MAX / 3600)),
        "d" => SignedDuration::from_hours(n.min(i64::MAX / 86_400).saturating_mul(24)),
        _ => return Err(invalid()),
    };
    if length > MAX_WINDOW {
        return Err(invalid());
    }
    let until = Timestamp::now()
        .round(Unit::Second)
        .map_err(|e| ToolError::Internal(Box::new(e)))?;
    let since = until
        .checked_sub(length)
        .map_err(|e| ToolError::Internal(Box::new(e)))?;
    let bucket = if length < SignedDuration::from_hours(2) {
        "minute"
    } else if length <= SignedDuration::from_hours(40 * 24) {
        "hour"
    } else {
        "day"
    };
    Ok(Window {
        since: since.to_string(),
        until: until.to_string(),
        text: text.to_owned(),
        bucket,
    })
}

/// A tool call as the plan names it: the tool and its arguments as JSON.
fn call(tool: &str, arguments: Value) -> String {
    format!("`{tool}` with `{arguments}`")
}

fn user_text(text: String) -> Value {
    json!({ "role": "user", "content": { "type": "text", "text": text } })
}

fn rendered(description: String, messages: Vec<Value>) -> PromptResult {
    Ok(Outcome::Complete(
        json!({ "description": description, "messages": messages }),
    ))
}

fn entity_id(args: &PromptArguments) -> Result<String, ToolError> {
    let id = args.get("entity_id").map_or("", String::as_str);
    // The tools' bounds for an entity id: 1-200 characters.
    if id.is_empty() || id.chars().count() > 200 {
        return Err(ToolError::InvalidParams(
            "entity_id must be 1-200 characters, exactly as stored (completion/complete suggests ids)".into(),
        ));
    }
    Ok(id.to_owned())
}

async fn triage_incident(
    store: Arc<Store>,
    args: PromptArguments,
    ctx: RequestContext,
) -> PromptResult {
    let entity = entity_id(&args)?;
    let w = window(&args)?;
    let (since, until) = (&w.since, &w.until);
    let types = change_types(&store, &ctx).await?;
    let plan = format!(
        "Triage the incident on {entity} over the last {text} ({since} to {until}). Work through these steps with the event-store tools, then answer.\n\n\
         1. What happened, in order: {events}. Page with next_cursor until you reach the start of the window or the first sign of trouble.\n\
         2. When it started: {counts}; the first bucket where warning or worse rises is the start.\n\
         3. What changed just before the start: {changes}.\n\
         4. What is still firing: {firing}; an alert fired without a later resolved event for it is still open.\n\
         5. The entity's current state is below (read when this prompt was made); {state} gives it fresh.\n\n\
         Answer with a timeline (time, event type, what it says), the most likely trigger with the events that support it, what is still open, and the next checks. Quote event ids so each claim can be verified.",
        text = w.text,
        events = call(
            "query_events",
            json!({ "entity_id": entity, "since": since, "until": until, "limit": 50 })
        ),
        counts = call(
            "count_events",
            json!({ "entity_id": entity, "since": since, "until": until, "bucket": w.bucket, "group_by": "severity" })
        ),
        changes = changes_step(&entity, &types, since, until),
        firing = call(
            "query_events",
            json!({ "entity_id": entity, "since": since, "until": until, "min_severity": "warning", "limit": 50 })
        ),
        state = call("get_entity_state", json!({ "entity_id": entity })),
    );
    let mut messages = vec![user_text(plan)];
    messages.push(state_message(&store, &ctx, &entity).await?);
    rendered(format!("Triage of {entity}, last {}", w.text), messages)
}

/// The entity's current state as an embedded resource, or a note when it has none or when
/// it would not fit the response budget beside the plan.
async fn state_message(
    store: &Store,
    ctx: &RequestContext,
    entity: &str,
) -> Result<Value, ToolError> {
    let found = get_entity_state::load(store, "triage_incident", ctx, entity.to_owned()).await?;
    let Some((state, _)) = found else {
        return Ok(user_text(format!(
            "No current state is recorded for {entity}. If that is unexpected, check the id (completion suggests ids) or look for its events with query_events."
        )));
    };
    let text = serde_json::to_string(&state).unwrap_or_default();
    // Half the budget for the state: the plan and the envelope need the rest.
    if text.len() > ctx.response_budget / 2 {
        return Ok(user_text(format!(
            "The current state of {entity} is {} bytes, too large to embed here; call get_entity_state for it.",
            text.len()
        )));
    }
    let uri = ENTITY_STATE_TEMPLATE.replace("{entity_id}", &percent_encoded(entity));
    Ok(json!({
        "role": "user",
        "content": {
            "type": "resource",
            "resource": { "uri": uri, "mimeType": "application/json", "text": text }
        }
    }))
}

/// RFC 6570 simple expansion of one value: everything but unreserved characters encoded.
fn percent_encoded(value: &str) -> String {
    const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    utf8_percent_encode(value, UNRESERVED).to_string()
}

/// The plan's step that lists the changes: with the catalog's change types when it has
/// some, otherwise by way of `describe_data`.
fn changes_step(entity: &str, types: &[String], since: &str, until: &str) -> String {
    if types.is_empty() {
        return format!(
            "the catalog has no event type whose name says it records a change: call `describe_data`, pick the types that do (deploys, configuration, releases, feature flags) and call {} with them as event_types",
            call(
                "query_events",
                json!({ "entity_id": entity, "since": since, "until": until, "limit": 50 })
            ),
        );
    }
    format!(
        "call {} (the catalog's event types whose names say they record a change; `describe_data` lists every type if another one matters here)",
        call(
            "query_events",
            json!({ "entity_id": entity, "event_types": types, "since": since, "until": until, "limit": 50 })
        ),
    )
}

async fn what_changed(
    store: Arc<Store>,
    args: PromptArguments,
    ctx: RequestContext,
) -> PromptResult {
    let entity = entity_id(&args)?;
    let w = window(&args)?;
    let (since, until) = (&w.since, &w.until);
    let types = change_types(&store, &ctx).await?;
    let mut plan = format!(
        "List what changed on {entity} over the last {text} ({since} to {until}).\n\n1. The changes: {changes}.\n",
        text = w.text,
        changes = changes_step(&entity, &types, since, until),
    );
    plan.push_str(&format!(
        "2. For each change, find its outcome: a finished or failed event after a started one, a rollback, or warnings and errors in the hour after it ({}).\n\n\
         Answer with one line per change: when, what (version, key or flag), who or what made it, and its outcome, with event ids.",
        call("count_events", json!({ "entity_id": entity, "since": since, "until": until, "bucket": w.bucket, "group_by": "severity" })),
    ));
    rendered(
        format!("Changes to {entity}, last {}", w.text),
        vec![user_text(plan)],
    )
}

/// The catalog's event types whose names say they record a change (at most the catalog's
/// first 200, as `describe_data` lists them).
async fn change_types(store: &Store, ctx: &RequestContext) -> Result<Vec<String>, ToolError> {
    let tenant = tenant(ctx)?;
    let rows = store
        .read("what_changed", ctx, &tenant, |tx| {
            Box::pin(async move {
                tx.query_and_commit(sql::EVENT_TYPES, &[(&sql::MAX_EVENT_TYPES, Type::INT8)])
                    .await
            })
        })
        .await?;
    let mut types = Vec::new();
    for row in &rows {
        let name = col::<String>(row, "name")?;
        if CHANGE_WORDS.iter().any(|w| name.contains(w)) {
            types.push(name);
        }
    }
    Ok(types)
}

fn daily_digest(args: &PromptArguments) -> PromptResult {
    let w = window(args)?;
    let (since, until) = (&w.since, &w.until);
    let event_type = args.get("event_type").filter(|t| !t.is_empty());
    let only = |mut arguments: Value| {
        if let Some(t) = event_type {
            arguments["event_types"] = json!([t]);
        }
        arguments
    };
    let scope = event_type.map_or(String::new(), |t| format!(" (only {t} events)"));
    let plan = format!(
        "Write a digest of the event store over the last {text}{scope}, {since} to {until}.\n\n\
         1. The shape of the window: {summary}.\n\
         2. Counts over time: {counts}.\n\
         3. The worst events: {worst}.\n\
         4. Incidents and alerts still open: {open}; an incident or alert without a later resolution is open.\n\n\
         Answer in three short parts: the numbers (totals, by type and severity, with the change over the window), the five worst events with their ids, and what is still open. Say when a result was truncated.",
        text = w.text,
        summary = call(
            "summarize_window",
            json!({ "since": since, "until": until })
        ),
        counts = call(
            "count_events",
            only(
                json!({ "since": since, "until": until, "bucket": w.bucket, "group_by": "event_type" })
            )
        ),
        worst = call(
            "query_events",
            only(json!({ "since": since, "until": until, "min_severity": "error", "limit": 20 }))
        ),
        open = call(
            "search_events",
            json!({ "query": "incident OR alert", "since": since, "until": until, "min_severity": "warning", "limit": 20 })
        ),
    );
    rendered(
        format!("Digest of the last {}{scope}", w.text),
        vec![user_text(plan)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> PromptArguments {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn windows_are_minutes_hours_or_days_up_to_ninety_days() {
        for (text, hours, bucket) in [
            ("30m", 0.5, "minute"),
            ("6h", 6.0, "hour"),
            ("7d", 168.0, "hour"),
            ("90d", 2160.0, "day"),
        ] {
            let w = window(&args(&[("window", text)])).unwrap();
            assert_eq!(w.bucket, bucket, "{text}");
            let since: Timestamp = w.since.parse().unwrap();
            let until: Timestamp = w.until.parse().unwrap();
            assert_eq!(
                until.duration_since(since).as_secs_f64() / 3600.0,
                hours,
                "{text}"
            );
        }
        assert_eq!(window(&args(&[])).unwrap().text, "24h");
        for bad in [
            "",
            "h",
            "0h",
            "-1h",
            "+1h",
            "1.5h",
            "1w",
            "91d",
            "99999999999999999999d",
            "1 h",
            "1é",
        ] {
            let err = window(&args(&[("window", bad)])).err().expect(bad);
            assert!(matches!(err, ToolError::InvalidParams(_)), "{bad}");
        }
    }

    #[test]
    fn the_digest_names_its_tools_with_the_window_and_the_event_type() {
        let Outcome::Complete(result) =
            daily_digest(&args(&[("window", "6h"), ("event_type", "alert.fired")])).unwrap()
        else {
            panic!("complete")
        };
        let text = result["messages"][0]["content"]["text"].as_str().unwrap();
        for tool in [
            "summarize_window",
            "count_events",
            "query_events",
            "search_events",
        ] {
            assert!(text.contains(&format!("`{tool}`")), "{tool}: {text}");
        }
        assert!(text.contains(r#""event_types":["alert.fired"]"#), "{text}");
        assert_eq!(
            result["description"],
            "Digest of the last 6h (only alert.fired events)"
        );
    }

    #[test]
    fn state_uris_encode_the_entity_id_as_the_template_does() {
        assert_eq!(percent_encoded("svc-a.b_c~"), "svc-a.b_c~");
        assert_eq!(percent_encoded("a/b c"), "a%2Fb%20c");
        assert_eq!(percent_encoded("é"), "%C3%A9");
    }
}
