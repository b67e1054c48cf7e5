//! Event rows: severities, decoding a row without panicking, and an event's JSON form.

use std::borrow::Cow;

use jiff::Timestamp;
use mcp_protocol::text::shortened;
use mcp_protocol::{ToolError, object};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use crate::jsonb::Jsonb;

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

/// An event as every tool returns it; `payload` only when asked for. Its text is borrowed
/// from the row (a shortened value becomes owned), `structured` and `payload` included (as
/// the database's JSON text, [`Jsonb`]), and it serialises, its own members in key order, as
/// a `Value` object of it would: a list writes its events straight from the rows, with no
/// tree per event (issue 18).
///
/// Public so that the load benchmark's bare floor writes its rows exactly as the endpoint
/// does.
#[derive(Debug, Serialize)]
pub struct EventRow<'r> {
    ai_summary: Option<Cow<'r, str>>,
    entity_id: Cow<'r, str>,
    entity_type: Cow<'r, str>,
    event_type: Cow<'r, str>,
    pub(crate) id: i64,
    #[serde(serialize_with = "as_display")]
    pub(crate) occurred_at: Timestamp,
    /// `Some` only when asked for (`Some(Null)` when the event has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<Jsonb<'r>>,
    severity: &'static str,
    structured: Jsonb<'r>,
    tags: Vec<Cow<'r, str>>,
}

impl<'r> EventRow<'r> {
    /// The event in `row` (a row of [`crate::QUERY_EVENTS_SQL`] or another event read).
    ///
    /// # Errors
    ///
    /// An execution error when a column is missing or of another type (logged here).
    pub fn read(row: &'r Row, with_payload: bool) -> Result<Self, ToolError> {
        Ok(Self {
            ai_summary: col(row, "ai_summary")?,
            entity_id: col(row, "entity_id")?,
            entity_type: col(row, "entity_type")?,
            event_type: col(row, "event_type")?,
            id: col(row, "id")?,
            occurred_at: col(row, "occurred_at")?,
            payload: if with_payload {
                Some(col::<Option<Jsonb<'_>>>(row, "payload")?.unwrap_or(Jsonb::Tree(Value::Null)))
            } else {
                None
            },
            severity: severity_name(col(row, "severity")?),
            structured: col(row, "structured")?,
            tags: col(row, "tags")?,
        })
    }

    /// Cuts every text value longer than `max` bytes, as [`shorten_values`] does for a
    /// tree; returns how many were cut.
    pub(crate) fn shorten(&mut self, max: usize) -> usize {
        let mut cut = 0;
        let texts = [
            &mut self.entity_id,
            &mut self.entity_type,
            &mut self.event_type,
        ];
        for text in texts
            .into_iter()
            .chain(self.ai_summary.as_mut())
            .chain(self.tags.iter_mut())
        {
            if let Some(short) = shortened(text, max) {
                *text = Cow::Owned(short);
                cut += 1;
            }
        }
        cut + self.structured.shorten(max) + self.payload.as_mut().map_or(0, |p| p.shorten(max))
    }

    /// Leaves out its bulky parts (payload and structured), pointing to get_event for
    /// them; returns how many it left out.
    pub(crate) fn omit_bulk(&mut self) -> usize {
        let mut omitted = 0;
        for value in [Some(&mut self.structured), self.payload.as_mut()]
            .into_iter()
            .flatten()
            .filter(|v| !v.is_null())
        {
            *value = Jsonb::Tree(object([(
                "omitted",
                format!(
                    "too large for a list; fetch event {} with get_event",
                    self.id
                )
                .into(),
            )]));
            omitted += 1;
        }
        omitted
    }
}

/// Serialises `value` as its `Display` text, without a `String` in between.
fn as_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
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
