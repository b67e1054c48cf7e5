//! Arguments: the typed tool definition every tool is built with, and the checks their
//! schemas cannot express.

use std::future::Future;
use std::sync::Arc;

use jiff::Timestamp;
use mcp_protocol::{RequestContext, ToolDef, ToolError, input_schema};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::READ_SCOPE;
use crate::outcome::ToolResult;
use crate::store::Store;

/// A read-only event-store tool whose arguments are `A`: its input schema is generated from
/// `A` (so a bound or default is written once, on the struct), and its body receives `A`
/// already checked.
pub(crate) fn tool<A, F, Fut>(
    name: &'static str,
    description: &str,
    store: Arc<Store>,
    body: F,
) -> ToolDef
where
    A: DeserializeOwned + JsonSchema,
    F: Fn(Arc<Store>, A, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    let run = move |args: Map<String, Value>, ctx| {
        let run = reject_nul(&args)
            .and_then(|()| typed::<A>(name, args))
            .map(|args| body(store.clone(), args, ctx));
        async move { run?.await }
    };
    ToolDef::new(name, description, input_schema::<A>(), run).scopes([READ_SCOPE])
}

/// The engine has validated `args` against the schema generated from `A`, so this fails
/// only if the two disagree: said as an argument error, like the engine's own.
fn typed<A: DeserializeOwned>(tool: &str, args: Map<String, Value>) -> Result<A, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::Execution(format!("Invalid arguments for tool {tool}: {e}")))
}

/// PostgreSQL text cannot hold NUL: a string with one would fail inside the database, so it
/// is refused here, with a message the model can act on.
fn reject_nul(args: &Map<String, Value>) -> Result<(), ToolError> {
    fn has_nul(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().any(has_nul),
            Value::Object(map) => map.values().any(has_nul),
            _ => false,
        }
    }
    match args.iter().find(|(_, v)| has_nul(v)) {
        Some((key, _)) => Err(ToolError::Execution(format!(
            "{key} contains a NUL character, which no stored value can contain."
        ))),
        None => Ok(()),
    }
}

/// An RFC 3339 instant argument. The schema says `date-time`, which validators treat as a
/// note rather than a rule, so the parse here is what refuses "yesterday".
fn parse_time(key: &str, value: Option<&str>) -> Result<Option<Timestamp>, ToolError> {
    match value {
        None => Ok(None),
        Some(s) => s.parse::<Timestamp>().map(Some).map_err(|_| {
            ToolError::Execution(format!(
                "{key} must be an RFC 3339 timestamp with a UTC offset, such as 2026-12-01T00:00:00Z; got {s:?}"
            ))
        }),
    }
}

/// An optional `since`/`until` window; when both are given, `since` comes first.
pub(crate) fn window(
    since: Option<&str>,
    until: Option<&str>,
) -> Result<(Option<Timestamp>, Option<Timestamp>), ToolError> {
    let (since, until) = (parse_time("since", since)?, parse_time("until", until)?);
    if let (Some(s), Some(u)) = (since, until)
        && s >= u
    {
        return Err(ToolError::Execution(format!(
            "The window is empty or inverted: since ({s}) must be before until ({u})."
        )));
    }
    Ok((since, until))
}

/// A window with a required `since` and an `until` that defaults to now.
pub(crate) fn required_window(
    since: &str,
    until: Option<&str>,
) -> Result<(Timestamp, Timestamp), ToolError> {
    let (since, until) = window(Some(since), until)?;
    let until = until.unwrap_or_else(Timestamp::now);
    let since = since.ok_or_else(|| ToolError::Execution("since is required.".into()))?;
    if since >= until {
        return Err(ToolError::Execution(format!(
            "The window is empty: since ({since}) must be before until ({until})."
        )));
    }
    Ok((since, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_refused_wherever_it_hides() {
        for args in [
            serde_json::json!({"entity_id": "a\u{0}b"}),
            serde_json::json!({"tags_any": ["ok", "x\u{0}"]}),
        ] {
            let Value::Object(map) = args else {
                unreachable!()
            };
            let err = reject_nul(&map).unwrap_err();
            assert!(matches!(err, ToolError::Execution(m) if m.contains("NUL")));
        }
    }

    #[test]
    fn windows_must_be_ordered_instants() {
        assert!(window(Some("2026-12-01T00:00:00Z"), Some("2026-12-02T00:00:00Z")).is_ok());
        let err = window(Some("yesterday"), None).unwrap_err();
        assert!(matches!(err, ToolError::Execution(m) if m.contains("RFC 3339")));
        let err = required_window("2026-12-02T00:00:00Z", Some("2026-12-01T00:00:00Z"));
        assert!(matches!(err, Err(ToolError::Execution(m)) if m.contains("before until")));
    }
}
