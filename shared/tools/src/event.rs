//! Event rows: severities, decoding a row without panicking, and an event's JSON form.

use jiff::Timestamp;
use mcp_protocol::{ToolError, object};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

/// Severity names, in order: stored as 0..=5.
pub const SEVERITIES: [&str; 6] = ["debug", "info", "notice", "warning", "error", "critical"];

// A severity as a caller names it; its rank is what the database stores. (A plain comment:
// a doc comment here would become the schema's description.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    #[default]
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
}

impl Severity {
    /// The stored rank (the index into [`SEVERITIES`]).
    pub(crate) fn rank(self) -> i16 {
        self as i16
    }
}

/// The name of a stored rank; a rank outside the scale (a schema drift) reads `unknown`.
pub(crate) fn severity_name(rank: i16) -> &'static str {
    usize::try_from(rank)
        .ok()
        .and_then(|r| SEVERITIES.get(r))
        .copied()
        .unwrap_or("unknown")
}

/// One column of a row. A column that is missing or of another type (the schema drifted
/// from what this build reads) is logged here and answered as an error result: never a
/// panic, and nothing about the schema reaches the caller.
pub(crate) fn col<'r, T: FromSql<'r>>(row: &'r Row, column: &str) -> Result<T, ToolError> {
    row.try_get(column).map_err(|e| {
        tracing::error!(db.column = column, error = %e, "a stored row does not have the shape this build reads");
        ToolError::Execution(
            "The event store returned data this server cannot read. This is a server fault, not a problem with your request; other tools may still work."
                .into(),
        )
    })
}

/// An event as every tool returns it; `payload` only when asked for. Built with
/// [`object`], which moves each decoded column in (`json!` would copy it once more).
pub(crate) fn event_json(row: &Row, with_payload: bool) -> Result<Value, ToolError> {
    let mut event = object([
        ("id", col::<i64>(row, "id")?.into()),
        ("entity_id", col::<String>(row, "entity_id")?.into()),
        ("entity_type", col::<String>(row, "entity_type")?.into()),
        ("event_type", col::<String>(row, "event_type")?.into()),
        ("severity", severity_name(col(row, "severity")?).into()),
        (
            "occurred_at",
            col::<Timestamp>(row, "occurred_at")?.to_string().into(),
        ),
        ("tags", col::<Vec<String>>(row, "tags")?.into()),
        ("structured", col::<Value>(row, "structured")?),
        (
            "ai_summary",
            col::<Option<String>>(row, "ai_summary")?.into(),
        ),
    ]);
    if with_payload {
        event["payload"] = col::<Option<Value>>(row, "payload")?.unwrap_or(Value::Null);
    }
    Ok(event)
}

/// The output schema of one event.
pub(crate) fn event_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "integer" },
            "entity_id": { "type": "string" },
            "entity_type": { "type": "string" },
            "event_type": { "type": "string" },
            "severity": { "type": "string", "enum": SEVERITIES },
            "occurred_at": { "type": "string" },
            "tags": { "type": "array", "items": { "type": "string" } },
            "structured": { "type": "object" },
            "ai_summary": { "type": ["string", "null"] },
            "payload": {}
        },
        "required": ["id", "entity_id", "entity_type", "event_type", "severity", "occurred_at", "tags"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_the_names() {
        for (rank, name) in SEVERITIES.iter().enumerate() {
            let severity: Severity = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(severity.rank(), rank as i16);
            assert_eq!(severity_name(rank as i16), *name);
        }
        assert_eq!(severity_name(-1), "unknown");
        assert_eq!(severity_name(6), "unknown");
    }
}
