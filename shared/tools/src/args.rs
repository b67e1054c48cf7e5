//! Arguments: the typed tool definition every tool is built with, and the checks their
//! schemas cannot express.

use std::future::Future;
use std::sync::Arc;

use jiff::fmt::temporal::Pieces;
use jiff::{RoundMode, Timestamp, TimestampRound, Unit};
use mcp_protocol::{RequestContext, ToolDef, ToolError, input_schema};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::outcome::ToolResult;

/// The scope every event-store tool and resource requires.
pub const READ_SCOPE: &str = "events:read";
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
    let mut args = Value::Object(args);
    integral_numbers_as_integers(&mut args);
    serde_json::from_value(args)
        .map_err(|e| ToolError::Execution(format!("Invalid arguments for tool {tool}: {e}")))
}

/// Writes every number with a zero fractional part (`10.0`) as the integer it is. JSON
/// Schema's `integer` "matches any number with a zero fractional part" (2020-12 core
/// §4.2.1), so the engine lets `"limit": 10.0` through, and some clients and models write
/// every number that way; serde reads an integer field only from an integer. Numbers
/// outside `i64` are left as they are (the schemas bound every integer argument inside it:
/// `tests::every_integer_argument_is_bounded_inside_i64`).
fn integral_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && (i64::MIN as f64..i64::MAX as f64).contains(&f)
            {
                *n = (f as i64).into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
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

/// The instants accepted: from year 1 (jiff parses back to year -9999, which PostgreSQL
/// refuses as out of range) to the last whole day jiff's timestamps reach in year 9999.
const EARLIEST_SECOND: i64 = -62_135_596_800; // 0001-01-01T00:00:00Z
const LATEST_SECOND: i64 = 253_402_128_000; // 9999-12-30T00:00:00Z
const RANGE: &str = "between 0001-01-01T00:00:00Z and 9999-12-30T00:00:00Z";

/// An RFC 3339 instant argument. The schema says `date-time`, which validators treat as a
/// note rather than a rule, so the parse here is what refuses "yesterday". The database
/// stores microseconds: a finer instant is rounded up, which keeps `since` inclusive and
/// `until` exclusive at the stored precision (truncating would let in an event a fraction
/// of a microsecond before `since`, and shut out one just before `until`).
fn parse_time(key: &str, value: Option<&str>) -> Result<Option<Timestamp>, ToolError> {
    let Some(s) = value else {
        return Ok(None);
    };
    let parsed = match s.parse::<Timestamp>() {
        Ok(t) => Some(t),
        // Well-formed, with an offset, but past what a timestamp can hold: out of range.
        Err(_) if Pieces::parse(s).is_ok_and(|p| p.offset().is_some()) => None,
        Err(_) => {
            return Err(ToolError::Execution(format!(
                "{key} must be an RFC 3339 timestamp with a UTC offset, such as 2026-12-01T00:00:00Z; got {s:?}"
            )));
        }
    };
    let to_micros = TimestampRound::new()
        .smallest(Unit::Microsecond)
        .mode(RoundMode::Ceil);
    parsed
        .and_then(|t| t.round(to_micros).ok())
        .filter(|t| {
            let micros = i128::from(t.as_microsecond());
            (i128::from(EARLIEST_SECOND) * 1_000_000..=i128::from(LATEST_SECOND) * 1_000_000)
                .contains(&micros)
        })
        .map(Some)
        .ok_or_else(|| ToolError::Execution(format!("{key} must be {RANGE}; got {s:?}")))
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
    fn integral_numbers_are_read_as_integers() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Args {
            limit: i64,
            ratio: f64,
            tags: Vec<i64>,
        }
        let args = serde_json::json!({"limit": 10.0, "ratio": 2.0, "tags": [1.0, -3.0, 4]});
        let Value::Object(map) = args else {
            unreachable!()
        };
        let read: Args = typed("t", map).unwrap();
        assert_eq!(
            read,
            Args {
                limit: 10,
                ratio: 2.0,
                tags: vec![1, -3, 4]
            }
        );
        // A fraction is still no integer (the schema refuses it before this is reached).
        let Value::Object(map) = serde_json::json!({"limit": 2.5, "ratio": 1, "tags": []}) else {
            unreachable!()
        };
        let err = typed::<Args>("t", map).unwrap_err();
        assert!(
            matches!(err, ToolError::Execution(m) if m.contains("Invalid arguments for tool t"))
        );
    }

    #[test]
    fn instants_round_up_to_the_stored_microsecond_and_stay_in_the_stored_range() {
        let t = |s| parse_time("since", Some(s));
        assert_eq!(
            t("2026-11-01T10:00:00.0000001Z")
                .unwrap()
                .unwrap()
                .to_string(),
            "2026-11-01T10:00:00.000001Z"
        );
        assert_eq!(
            t("2026-11-01T10:00:00.000002Z")
                .unwrap()
                .unwrap()
                .to_string(),
            "2026-11-01T10:00:00.000002Z"
        );
        assert!(t("0001-01-01T00:00:00Z").unwrap().is_some());
        assert!(t("9999-12-30T00:00:00Z").unwrap().is_some());
        for far in [
            "-005000-01-01T00:00:00Z",
            "0000-12-31T23:59:59Z",
            "9999-12-30T00:00:00.0000001Z",
            "9999-12-31T23:59:59.999999Z",
        ] {
            let err = t(far).unwrap_err();
            assert!(
                matches!(&err, ToolError::Execution(m) if m.contains("since must be between 0001")),
                "{far}: {err:?}"
            );
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
