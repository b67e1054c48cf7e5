//! The response budget of one call: the smallest of the server's, the tool's and what the
//! client is known to keep. A result larger than the client keeps is cut by the client,
//! silently (claude.ai truncates tool results around 150,000 characters, Claude Code at
//! 25,000 tokens by default), so the server sizes pages for it instead and says
//! `truncated` with a cursor.
//!
//! The client's cap comes from an explicit `_meta` hint on the request ([`HINT_META`], any
//! era), else from the client's name in `_meta["io.modelcontextprotocol/clientInfo"]` (sent
//! on every 2026-07-28 request; the handshake era sends it only in `initialize`, which a
//! stateless server cannot remember). Both are used for sizing only, never to decide what
//! a caller may do: a client can claim any name, and the most a false one gains is a
//! smaller page.

use serde_json::{Map, Value};

use crate::error::RpcError;

/// Default byte budget of one tool result: 96 KiB, under what claude.ai keeps (about
/// 150,000 characters) with both copies of a structured result counted, and far under
/// Lambda's 6 MB response limit.
pub const DEFAULT_RESPONSE_BUDGET: usize = 96 * 1024;

/// `_meta` key of a request's explicit cap, in bytes of the serialised result.
pub const HINT_META: &str = "event-store-mcp/maxResponseBytes";

/// `_meta` key of the client's identity on 2026-07-28 requests.
pub const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";

/// The smallest budget a client can ask for: below it no page holds even one event, so a
/// smaller hint is raised to it.
pub const MIN_CLIENT_BUDGET: usize = 4 * 1024;

/// Clients whose result caps are documented, by `clientInfo.name`: (name, cap in bytes of
/// the serialised result, where the figure comes from). The result carries the same JSON
/// twice (structured content and its text mirror), so a cap here is about twice what the
/// model reads.
pub const KNOWN_CLIENTS: &[(&str, usize, &str)] = &[
    (
        "claude-code",
        64 * 1024,
        "Claude Code keeps 25,000 tokens of a tool result by default (MAX_MCP_OUTPUT_TOKENS) and warns above 10,000",
    ),
    (
        "claude-ai",
        144 * 1024,
        "claude.ai and Claude Desktop truncate tool results around 150,000 characters",
    ),
];

/// Where a call's budget came from (logged with every call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BudgetSource {
    #[default]
    Server,
    Tool,
    /// A known client's cap, by name.
    Client(&'static str),
    /// The request's own `_meta` hint.
    Hint,
}

impl BudgetSource {
    /// How logs name it: `server`, `tool`, `hint`, or the known client's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Tool => "tool",
            Self::Client(name) => name,
            Self::Hint => "hint",
        }
    }
}

/// A budget and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: usize,
    pub source: BudgetSource,
}

impl Budget {
    /// The budget of one call: the smallest of the server's, the body's own (a tool's
    /// declared budget) and the client's; on a tie the one named first.
    pub fn of_call(server: usize, own: Option<usize>, client: Option<Budget>) -> Budget {
        Budget {
            bytes: server,
            source: BudgetSource::Server,
        }
        .min(own.map(|bytes| Budget {
            bytes,
            source: BudgetSource::Tool,
        }))
        .min(client)
    }

    /// The smaller of `self` and `other` (`self` on a tie).
    pub fn min(self, other: Option<Budget>) -> Budget {
        match other {
            Some(o) if o.bytes < self.bytes => o,
            _ => self,
        }
    }
}

/// The cap the request's client asks for or is known to have, if any.
///
/// # Errors
///
/// `-32602` for a hint that is not a positive integer: a client that sends one means it,
/// and silently ignoring it would overrun its cap.
pub fn client_budget(params: &Map<String, Value>) -> Result<Option<Budget>, RpcError> {
    let Some(Value::Object(meta)) = params.get("_meta") else {
        return Ok(None);
    };
    if let Some(hint) = meta.get(HINT_META) {
        let bytes = hint.as_u64().filter(|b| *b > 0).ok_or_else(|| {
            RpcError::InvalidParams(format!(
                "_meta[\"{HINT_META}\"] must be a positive integer (bytes); got {hint}"
            ))
        })?;
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        return Ok(Some(Budget {
            bytes: bytes.max(MIN_CLIENT_BUDGET),
            source: BudgetSource::Hint,
        }));
    }
    let name = meta
        .get(CLIENT_INFO_META)
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str);
    Ok(name.and_then(known_client).map(|(name, bytes)| Budget {
        bytes,
        source: BudgetSource::Client(name),
    }))
}

/// The documented cap of the client called `name` (exact, case-sensitive names).
fn known_client(name: &str) -> Option<(&'static str, usize)> {
    KNOWN_CLIENTS
        .iter()
        .find(|(known, _, _)| *known == name)
        .map(|(known, bytes, _)| (*known, *bytes))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(meta: Value) -> Map<String, Value> {
        let Value::Object(map) = json!({ "name": "t", "_meta": meta }) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn a_hint_wins_over_the_client_name_and_is_floored() {
        let b = client_budget(&params(json!({
            HINT_META: 20_000,
            CLIENT_INFO_META: { "name": "claude-code", "version": "2.0" },
        })))
        .unwrap()
        .unwrap();
        assert_eq!((b.bytes, b.source), (20_000, BudgetSource::Hint));
        let tiny = client_budget(&params(json!({ HINT_META: 10 })))
            .unwrap()
            .unwrap();
        assert_eq!(tiny.bytes, MIN_CLIENT_BUDGET);
        let huge = client_budget(&params(json!({ HINT_META: u64::MAX })))
            .unwrap()
            .unwrap();
        assert_eq!(huge.bytes, usize::MAX);
    }

    #[test]
    fn known_clients_by_exact_name_and_nothing_for_others() {
        let b = client_budget(&params(
            json!({ CLIENT_INFO_META: { "name": "claude-code" } }),
        ))
        .unwrap()
        .unwrap();
        assert_eq!(
            (b.bytes, b.source),
            (64 * 1024, BudgetSource::Client("claude-code"))
        );
        for other in [
            json!({ CLIENT_INFO_META: { "name": "Claude-Code" } }),
            json!({ CLIENT_INFO_META: "claude-code" }),
            json!({}),
            json!({ CLIENT_INFO_META: { "name": 7 } }),
        ] {
            assert_eq!(client_budget(&params(other)).unwrap(), None);
        }
        let Value::Object(none) = json!({ "name": "t" }) else {
            unreachable!()
        };
        assert_eq!(client_budget(&none).unwrap(), None);
    }

    #[test]
    fn a_malformed_hint_is_invalid_params() {
        for bad in [
            json!(0),
            json!(-5),
            json!(1.5),
            json!("65536"),
            json!(null),
            json!([1]),
        ] {
            let err = client_budget(&params(json!({ HINT_META: bad }))).unwrap_err();
            assert!(
                matches!(err, RpcError::InvalidParams(m) if m.contains("positive integer")),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_smallest_budget_wins() {
        let server = Budget {
            bytes: 96 * 1024,
            source: BudgetSource::Server,
        };
        let client = Budget {
            bytes: 64 * 1024,
            source: BudgetSource::Client("claude-code"),
        };
        assert_eq!(server.min(Some(client)), client);
        assert_eq!(client.min(Some(server)), client);
        assert_eq!(server.min(None), server);
        assert_eq!(Budget::of_call(96 * 1024, None, Some(client)), client);
        let tool = Budget::of_call(96 * 1024, Some(8 * 1024), Some(client));
        assert_eq!((tool.bytes, tool.source), (8 * 1024, BudgetSource::Tool));
        assert_eq!(Budget::of_call(96 * 1024, Some(200 * 1024), None), server);
    }
}
