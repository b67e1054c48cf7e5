//! The trace context a request joins: W3C Trace Context's `traceparent` (from the request's
//! `params._meta`, SEP-414) or the Lambda (X-Ray) trace header, read into one shape.

use serde::Deserialize;

/// The trace a request joins: its id, the span it is a child of, and whether the caller
/// samples it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parent {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) sampled: bool,
    pub(crate) trace_state: Option<String>,
}

/// W3C Trace Context `traceparent`, version 00 (later versions are read as 00, as the
/// recommendation says): `00-<32 hex>-<16 hex>-<2 hex flags>`; all-zero ids are invalid.
pub(crate) fn parse_traceparent(value: &str, trace_state: Option<String>) -> Option<Parent> {
    let mut parts = value.trim().split('-');
    let (version, trace_id, span_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex =
        |s: &str, len| s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let nonzero = |s: &str| s.bytes().any(|b| b != b'0');
    if !hex(version, 2) || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    if !(hex(trace_id, 32)
        && hex(span_id, 16)
        && hex(flags, 2)
        && nonzero(trace_id)
        && nonzero(span_id))
    {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(Parent {
        trace_id: trace_id.to_owned(),
        span_id: span_id.to_owned(),
        sampled: flags & 1 == 1,
        trace_state,
    })
}

/// The Lambda (X-Ray) trace header: `Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>`.
/// Its root is a W3C trace id once the `1-` and the dash are dropped.
pub(crate) fn parse_xray(value: &str) -> Option<Parent> {
    let field = |name: &str| {
        value
            .split(';')
            .find_map(|kv| kv.trim().strip_prefix(name)?.strip_prefix('='))
    };
    let root = field("Root")?.strip_prefix("1-")?;
    let (time, rest) = root.split_once('-')?;
    let traceparent = format!(
        "00-{}{}-{}-{}",
        time.to_ascii_lowercase(),
        rest.to_ascii_lowercase(),
        field("Parent")?.to_ascii_lowercase(),
        if field("Sampled") == Some("1") {
            "01"
        } else {
            "00"
        }
    );
    parse_traceparent(&traceparent, None)
}

#[derive(Deserialize)]
struct Probe {
    params: Option<ProbeParams>,
}

#[derive(Deserialize)]
struct ProbeParams {
    #[serde(rename = "_meta")]
    meta: Option<ProbeMeta>,
}

#[derive(Deserialize)]
struct ProbeMeta {
    traceparent: Option<String>,
    tracestate: Option<String>,
}

/// The trace context a request carries in `params._meta` (SEP-414), if any and valid. A
/// batch, or a body that is not JSON, carries none.
pub(crate) fn meta_parent(body: &[u8]) -> Option<Parent> {
    let meta = serde_json::from_slice::<Probe>(body).ok()?.params?.meta?;
    // W3C Trace Context bounds tracestate at 32 members of at most 256 bytes.
    let state = meta.tracestate.filter(|s| s.len() <= 8192);
    parse_traceparent(&meta.traceparent?, state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_read_as_w3c_trace_context_says() {
        let p = parse_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            None,
        )
        .unwrap();
        assert_eq!(p.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span_id, "00f067aa0ba902b7");
        assert!(p.sampled);
        assert!(
            !parse_traceparent(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                None
            )
            .unwrap()
            .sampled
        );
        // A later version may add fields; version 00 may not.
        assert!(
            parse_traceparent(
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
                None
            )
            .is_some()
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert!(parse_traceparent(bad, None).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_lambda_trace_header_becomes_a_w3c_parent() {
        let p = parse_xray(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
        )
        .unwrap();
        assert_eq!(p.trace_id, "5759e988bd862e3fe1be46a994272793");
        assert_eq!(p.span_id, "53995c3f42cd8ad8");
        assert!(p.sampled);
        assert!(
            !parse_xray(
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"
            )
            .unwrap()
            .sampled
        );
        assert!(
            parse_xray("Root=1-5759e988-bd862e3fe1be46a994272793").is_none(),
            "no parent"
        );
        assert!(parse_xray("Self=1-5759e988-bd862e3fe1be46a994272793").is_none());
    }

    #[test]
    fn meta_traceparent_is_read_from_a_single_request_only() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v"}}}"#;
        let p = meta_parent(body).unwrap();
        assert_eq!(p.trace_state.as_deref(), Some("k=v"));
        assert!(meta_parent(b"[{}]").is_none());
        assert!(meta_parent(b"not json").is_none());
        assert!(meta_parent(br#"{"params":{"_meta":{"traceparent":5}}}"#).is_none());
    }
}
