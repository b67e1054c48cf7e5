//! Spans a request's parts leave for its trace: the transport opens a collector around one
//! request ([`collect`]); the parts it runs (authentication, a database read) [`record`]
//! what they did into it. Outside a collector, recording is a no-op and [`enabled`] is
//! false, so a deployment without tracing pays one task-local lookup per part.
//!
//! A record holds no identifiers: the transport that exports the trace gives every span
//! its ids and its parent once the request is over.

use std::cell::RefCell;
use std::future::Future;
use std::time::SystemTime;

/// What a span is, as OpenTelemetry's `SpanKind` has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Internal,
    Client,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Int(i64),
    Bool(bool),
}

impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        Self::Str(v.to_owned())
    }
}

impl From<String> for AttrValue {
    fn from(v: String) -> Self {
        Self::Str(v)
    }
}

impl From<i64> for AttrValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<bool> for AttrValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

/// One finished part of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    pub name: String,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    /// Names from the OpenTelemetry semantic conventions. Never a token, a secret or SQL
    /// text with values: every caller of [`record`] keeps to that.
    pub attributes: Vec<(&'static str, AttrValue)>,
    /// The part failed; `error.type` among the attributes says how.
    pub failed: bool,
}

tokio::task_local! {
    static SPANS: RefCell<Vec<SpanRecord>>;
}

/// Runs `request` with a collector of its own and returns what it recorded, in order of
/// completion. The request's parts must run on this task (they do: the engine awaits
/// every body in place).
pub async fn collect<F: Future>(request: F) -> (F::Output, Vec<SpanRecord>) {
    SPANS
        .scope(RefCell::new(Vec::new()), async {
            let output = request.await;
            let spans = SPANS.with(|spans| spans.take());
            (output, spans)
        })
        .await
}

/// Whether a collector is listening: parts skip building their record when not.
pub fn enabled() -> bool {
    SPANS.try_with(|_| ()).is_ok()
}

/// Adds `span` to the request's collector, if there is one.
pub fn record(span: SpanRecord) {
    let _ = SPANS.try_with(|spans| spans.borrow_mut().push(span));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str) -> SpanRecord {
        let now = SystemTime::now();
        SpanRecord {
            name: name.into(),
            kind: SpanKind::Internal,
            start: now,
            end: now,
            attributes: vec![("n", 1i64.into())],
            failed: false,
        }
    }

    #[tokio::test]
    async fn records_reach_only_their_own_collector() {
        assert!(!enabled());
        record(span("lost"));
        let ((), spans) = collect(async {
            assert!(enabled());
            record(span("a"));
            let ((), inner) = collect(async { record(span("inner")) }).await;
            assert_eq!(inner.len(), 1);
            record(span("b"));
        })
        .await;
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
