//! `search_events`: full-text search over what events say, best matches first, with short
//! highlighted snippets and a signed cursor for the next page. The `search` tool is a thin
//! layer over [`search`].

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use mcp_db::Param;
use mcp_protocol::{CallStats, RequestContext, ToolDef, ToolError, object, structured_cost, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::args::{tool, window};
use crate::cursor::filter_hash;
use crate::event::{SEVERITIES, Severity, col, severity_name};
use crate::outcome::{STORED_TEXT_NOTICE, ToolResult, done, fitting};
use crate::sql;
use crate::store::{Store, tenant};

const NAME: &str = "search_events";

/// Most results one page holds.
pub const MAX_SEARCH_LIMIT: i64 = 50;
/// How many of the newest matches in the window are ranked: what bounds a search's cost
/// when a word matches millions of events (the older ones are a narrower window away).
pub const SEARCH_CANDIDATES: i64 = 500;
/// Longest query, in characters: a question, not a document.
pub(crate) const MAX_QUERY_CHARS: usize = 200;
/// The window searched when none is given: the last 30 days.
const DEFAULT_WINDOW: SignedDuration = SignedDuration::from_hours(30 * 24);
/// The widest window one search may cover.
const MAX_WINDOW: SignedDuration = SignedDuration::from_hours(366 * 24);

fn default_limit() -> i64 {
    10
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// Words to look for, web-search style: "exact phrase", or, -excluded
    #[schemars(length(min = 1, max = 200))]
    query: String,
    /// Only events at or after this instant (RFC 3339); default: 30 days before until
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    since: Option<String>,
    /// Only events before this instant (RFC 3339); default: now
    #[schemars(length(max = 40), extend("format" = "date-time"))]
    until: Option<String>,
    /// Only events of at least this severity
    min_severity: Option<Severity>,
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = MAX_SEARCH_LIMIT))]
    limit: i64,
    /// next_cursor from the previous page
    #[schemars(length(max = 512))]
    cursor: Option<String>,
}

pub(crate) fn def(store: Arc<Store>) -> ToolDef {
    tool(
        NAME,
        "Full-text search over what events say (summary, event type, entity, tags and the text of their structured fields), best matches first, then newest. Query syntax is web-search style: plain words (all must match; word forms are matched, so `timeouts` finds `timeout`), \"an exact phrase\", `or` between alternatives, `-word` to exclude. Searches the last 30 days unless since/until say otherwise (at most 366 days). Ranks the newest 500 matches in the window: when more events match, `older_matches_until` is the `until` that searches the older ones (null when every match was ranked). Returns up to `limit` results (default 10, at most 50) with a short snippet in which matches are marked **like this**; pass `next_cursor` back as `cursor` with the same arguments for more. Use get_event for a result's full event.",
        store,
        run,
    )
    .title("Search events")
    .output_schema(json!({
        "type": "object",
        "properties": {
            "query": { "type": "string" },
            "window": {
                "type": "object",
                "properties": { "since": { "type": "string" }, "until": { "type": "string" } },
                "required": ["since", "until"]
            },
            "results": { "type": "array", "items": hit_schema() },
            "count": { "type": "integer" },
            "truncated": { "type": "boolean" },
            "next_cursor": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "older_matches_until": { "anyOf": [{ "type": "string" }, { "type": "null" }] }
        },
        "required": ["query", "window", "results", "count", "truncated", "next_cursor", "older_matches_until"]
    }))
}

fn hit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "integer" },
            "occurred_at": { "type": "string" },
            "event_type": { "type": "string" },
            "entity_id": { "type": "string" },
            "entity_type": { "type": "string" },
            "severity": { "type": "string", "enum": SEVERITIES },
            "rank": { "type": "number" },
            "snippet": { "type": "string" }
        },
        "required": ["id", "occurred_at", "event_type", "entity_id", "entity_type", "severity", "rank", "snippet"]
    })
}

/// One search, as `search_events` and `search` ask it.
pub(crate) struct Query {
    pub(crate) text: String,
    pub(crate) since: Option<String>,
    pub(crate) until: Option<String>,
    pub(crate) min_severity: Severity,
    pub(crate) limit: i64,
    pub(crate) cursor: Option<String>,
}

/// One page of matches, and what a cursor after any of them is bound to.
pub(crate) struct Hits {
    pub(crate) since: Timestamp,
    pub(crate) until: Timestamp,
    pub(crate) hits: Vec<Hit>,
    /// Another page exists.
    pub(crate) more: bool,
    /// More events matched than were ranked: the `until` that searches the older ones.
    pub(crate) older_until: Option<Timestamp>,
    tenant: String,
    fingerprint: String,
}

pub(crate) struct Hit {
    pub(crate) id: i64,
    pub(crate) occurred_at: Timestamp,
    pub(crate) event_type: String,
    pub(crate) entity_id: String,
    pub(crate) entity_type: String,
    pub(crate) severity: i16,
    rank: f32,
    pub(crate) snippet: String,
}

/// The JSON-RPC envelope and the result's content wrapper around a page's structured
/// content and its text mirror.
const ENVELOPE_BYTES: usize = 256;

impl Hit {
    /// This hit with its snippet cut so that the whole fits `room` bytes as a result item
    /// (the snippet counts about three times: structured, mirrored, and its escapes).
    fn trimmed_to(&self, room: usize) -> Value {
        let mut item = self.to_json();
        item["snippet"] = Value::String(String::new());
        let left = room.saturating_sub(structured_cost(&item) + 2) / 3;
        let cut = text::shortened(&self.snippet, left.saturating_sub(32))
            .unwrap_or_else(|| self.snippet.clone());
        item["snippet"] = Value::String(if cut.len() <= left {
            cut
        } else {
            String::new()
        });
        item
    }

    fn from_row(row: &Row) -> Result<Self, ToolError> {
        Ok(Self {
            id: col(row, "id")?,
            occurred_at: col(row, "occurred_at")?,
            event_type: col(row, "event_type")?,
            entity_id: col(row, "entity_id")?,
            entity_type: col(row, "entity_type")?,
            severity: col(row, "severity")?,
            rank: col(row, "rank")?,
            snippet: col(row, "snippet")?,
        })
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "occurred_at": self.occurred_at.to_string(),
            "event_type": self.event_type,
            "entity_id": self.entity_id,
            "entity_type": self.entity_type,
            "severity": severity_name(self.severity),
            // Four decimals say everything a reader can use of a relevance score.
            "rank": (f64::from(self.rank) * 1e4).round() / 1e4,
            "snippet": self.snippet,
        })
    }
}

/// Where the next page starts, and the window the first page resolved (a default window
/// ends "now": the next page must search the same one).
#[derive(Serialize, Deserialize)]
struct After {
    /// The last rank returned, exactly (an `f32` is exact as an `f64`).
    r: f64,
    at: Timestamp,
    id: i64,
    since: Timestamp,
    until: Timestamp,
}

async fn run(store: Arc<Store>, args: Args, ctx: RequestContext) -> ToolResult {
    let query = Query {
        text: args.query,
        since: args.since,
        until: args.until,
        min_severity: args.min_severity.unwrap_or_default(),
        limit: args.limit,
        cursor: args.cursor,
    };
    let found = search(&store, NAME, &ctx, &query).await?;
    let window = json!({ "since": found.since.to_string(), "until": found.until.to_string() });
    let older = found.older_until.map(|t| t.to_string());
    // What the page holds besides its hits, priced exactly: the query it repeats (up to 200
    // characters of up to 4 bytes), the window, the notice and a cursor as long as the real
    // one, all twice (structured and mirrored), and the envelope around them.
    let sample_cursor = found
        .hits
        .first()
        .map(|hit| found.cursor_after(&store, hit));
    let frame = object([
        ("query", query.text.clone().into()),
        ("window", window.clone()),
        ("count", 0.into()),
        ("results", Value::Array(Vec::new())),
        ("truncated", true.into()),
        ("next_cursor", sample_cursor.into()),
        ("older_matches_until", older.clone().into()),
        ("notice", STORED_TEXT_NOTICE.into()),
    ]);
    let room = ctx
        .response_budget
        .saturating_sub(structured_cost(&frame) + ENVELOPE_BYTES);
    let (mut results, _) = fitting(found.hits.iter().map(Hit::to_json), room);
    // Not even the best hit fits with its snippet (a long query under a small budget): it
    // goes with its snippet cut to the room left, so the page still moves forward.
    if results.is_empty()
        && let Some(best) = found.hits.first()
    {
        results.extend(fitting([best.trimmed_to(room)], room).0);
    }
    // The page ends at the row limit or at the budget; the cursor continues after the last
    // hit sent.
    let more = found.more || results.len() < found.hits.len();
    let next_cursor = results
        .len()
        .checked_sub(1)
        .and_then(|last| found.hits.get(last))
        .filter(|_| more)
        .map(|last| found.cursor_after(&store, last));
    let stats = CallStats {
        rows: Some(found.hits.len() as u64),
        truncated: more,
        deadline_phase: None,
    };
    done(
        object([
            ("query", query.text.into()),
            ("window", window),
            ("count", results.len().into()),
            ("results", results.into()),
            ("truncated", more.into()),
            ("next_cursor", next_cursor.into()),
            ("older_matches_until", older.into()),
            ("notice", STORED_TEXT_NOTICE.into()),
        ]),
        stats,
    )
}

impl Query {
    /// What a cursor is bound to: the query and the filters as the caller gave them.
    fn fingerprint(&self) -> String {
        filter_hash(&json!({
            "tool": "search",
            "q": self.text, "since": self.since, "until": self.until,
            "min_severity": self.min_severity.rank(),
        }))
    }
}

impl Hits {
    /// The cursor of the page that continues after `last`.
    fn cursor_after(&self, store: &Store, last: &Hit) -> String {
        store.cursor_key.sign(
            &self.tenant,
            &self.fingerprint,
            &After {
                r: f64::from(last.rank),
                at: last.occurred_at,
                id: last.id,
                since: self.since,
                until: self.until,
            },
        )
    }
}

/// Runs one search for the caller's tenant: checks the query, resolves the window (from the
/// cursor when continuing), reads one page.
pub(crate) async fn search(
    store: &Store,
    tool_name: &str,
    ctx: &RequestContext,
    query: &Query,
) -> Result<Hits, ToolError> {
    let tenant = tenant(ctx)?;
    check_text(&query.text)?;
    let fingerprint = query.fingerprint();
    let after: Option<After> = match &query.cursor {
        None => None,
        Some(c) => Some(
            store
                .cursor_key
                .verify(&tenant, &fingerprint, c)
                .map_err(|e| ToolError::Execution(format!("Invalid cursor: {e}.")))?,
        ),
    };
    let (since, until) = match &after {
        Some(a) => (a.since, a.until),
        None => resolve_window(query.since.as_deref(), query.until.as_deref())?,
    };
    let limit = query.limit.clamp(1, MAX_SEARCH_LIMIT);
    // One row past the limit tells whether another page exists without counting.
    let probe = limit + 1;
    let candidates = SEARCH_CANDIDATES;
    let min_severity = query.min_severity.rank();
    let after_rank = after.as_ref().map(|a| a.r as f32);
    let after_at = after.as_ref().map(|a| a.at);
    let after_id = after.as_ref().map(|a| a.id);
    let text = Arc::new(query.text.clone());
    let read = store
        .read(tool_name, ctx, &tenant, move |tx| {
            let text = text.clone();
            Box::pin(async move {
                let params: [Param<'_>; 9] = [
                    (&*text, Type::TEXT),
                    (&since, Type::TIMESTAMPTZ),
                    (&until, Type::TIMESTAMPTZ),
                    (&min_severity, Type::INT2),
                    (&after_rank, Type::FLOAT4),
                    (&after_at, Type::TIMESTAMPTZ),
                    (&after_id, Type::INT8),
                    (&probe, Type::INT8),
                    (&candidates, Type::INT8),
                ];
                tx.query_and_commit(sql::SEARCH_EVENTS_SQL, &params).await
            })
        })
        .await?;
    // Every row carries the refusal, if any; a refused query ranked nothing.
    let refusal: Option<String> = match read.first() {
        Some(row) => col(row, "refusal")?,
        None => return Err(ToolError::Execution("The query could not be read.".into())),
    };
    if let Some(refusal) = refusal {
        return Err(refused(&refusal));
    }
    let mut hits = Vec::with_capacity(read.len());
    let mut older_until = None;
    for row in &read {
        older_until = older_until.or(col::<Option<Timestamp>>(row, "older_before")?);
        // No match: the one row has no hit.
        if col::<Option<i64>>(row, "id")?.is_some() {
            hits.push(Hit::from_row(row)?);
        }
    }
    let more = hits.len() as i64 > limit;
    hits.truncate(limit as usize);
    Ok(Hits {
        since,
        until,
        hits,
        more,
        older_until,
        tenant,
        fingerprint,
    })
}

/// Refuses, before any database work, queries that cannot mean anything.
fn check_text(text: &str) -> Result<(), ToolError> {
    if text.trim().is_empty() {
        return Err(ToolError::Execution(
            "The query is empty. Give one or more words to look for, such as: checkout timeout."
                .into(),
        ));
    }
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(ToolError::Execution(format!(
            "The query is {chars} characters long; at most {MAX_QUERY_CHARS}. Use the few words that matter most (for example an error class, a service name, an alert name)."
        )));
    }
    Ok(())
}

/// What the search statement's refusal code (see [`sql::SEARCH_EVENTS_SQL`], where the rule
/// is) tells the caller.
fn refused(refusal: &str) -> ToolError {
    ToolError::Execution(match refusal {
        "no_words" => "The query has no searchable word: it is only stop words (such as `the`, `and`, `of`) or punctuation. Add a distinctive word, such as a service, an error or an alert name.".into(),
        "only_exclusions" => "The query only excludes words (`-word`). Add at least one word that results must contain.".into(),
        other => format!("The query could not be searched ({other})."),
    })
}

/// The window searched: as given, with `until` defaulting to now and `since` to 30 days
/// before `until`; at most [`MAX_WINDOW`] wide.
fn resolve_window(
    since: Option<&str>,
    until: Option<&str>,
) -> Result<(Timestamp, Timestamp), ToolError> {
    let (since, until) = window(since, until)?;
    let until = until.unwrap_or_else(Timestamp::now);
    let since = match since {
        Some(s) => s,
        None => until.checked_sub(DEFAULT_WINDOW).unwrap_or(until),
    };
    if since >= until {
        return Err(ToolError::Execution(format!(
            "The window is empty: since ({since}) must be before until ({until})."
        )));
    }
    if until.duration_since(since) > MAX_WINDOW {
        return Err(ToolError::Execution(format!(
            "The window from {since} to {until} is longer than 366 days. Search a shorter window (since/until), then move it."
        )));
    }
    Ok((since, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_long_queries_are_refused_with_guidance() {
        for empty in ["", "   ", "\t\n"] {
            let err = check_text(empty).unwrap_err();
            assert!(matches!(err, ToolError::Execution(m) if m.contains("empty")));
        }
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        assert!(
            matches!(check_text(&long), Err(ToolError::Execution(m)) if m.contains("at most 200"))
        );
        assert!(check_text(&"é".repeat(MAX_QUERY_CHARS)).is_ok());
    }

    #[test]
    fn the_default_window_is_the_last_30_days_and_windows_are_bounded() {
        let (since, until) = resolve_window(None, Some("2026-12-01T00:00:00Z")).unwrap();
        assert_eq!(since.to_string(), "2026-11-01T00:00:00Z");
        assert_eq!(until.to_string(), "2026-12-01T00:00:00Z");
        assert!(
            resolve_window(Some("2025-01-01T00:00:00Z"), Some("2026-12-01T00:00:00Z")).is_err()
        );
        assert!(
            resolve_window(Some("2026-12-02T00:00:00Z"), Some("2026-12-01T00:00:00Z")).is_err()
        );
        let (_, until) = resolve_window(Some("2026-11-01T00:00:00Z"), None).unwrap();
        assert!(until > "2026-11-01T00:00:00Z".parse::<Timestamp>().unwrap());
    }
}
