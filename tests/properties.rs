//! Properties over generated input (proptest): whatever arrives, the answer is well-formed;
//! cursors round-trip and any change to one is refused; no result crosses its budget, nor
//! any error message its bound, whatever the client's own text.

use std::sync::OnceLock;

use jiff::Timestamp;
use mcp_protocol::{CallToolResult, Incoming, Outcome, Server, ToolDef, Tools};
use mcp_tools::{CursorKey, Position};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::support::http::{fixture_app, post, send};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

/// JSON built mostly from the names and values the protocol cares about, so generated
/// messages get past the first checks and reach the dispatch paths.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("jsonrpc".to_owned()),
        Just("id".to_owned()),
        Just("method".to_owned()),
        Just("params".to_owned()),
        Just("name".to_owned()),
        Just("arguments".to_owned()),
        Just("_meta".to_owned()),
        Just("cursor".to_owned()),
        Just("protocolVersion".to_owned()),
        Just("io.modelcontextprotocol/protocolVersion".to_owned()),
        "[a-zA-Z_/.]{0,12}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        prop_oneof![
            Just("2.0"),
            Just("tools/call"),
            Just("tools/list"),
            Just("initialize"),
            Just("ping"),
            Just("server/discover"),
            Just("resources/read"),
            Just("prompts/get"),
            Just("completion/complete"),
            Just("test_simple_text"),
            Just("2026-07-28"),
            Just("2025-11-25"),
        ]
        .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A message-shaped object: the envelope is usually right, the rest is generated.
fn message() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), any::<bool>()).prop_map(|(method, params, with_id)| {
        let mut m = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(method) = m["method"].as_array().and_then(|a| a.first()).cloned() {
            m["method"] = method;
        }
        if with_id {
            m["id"] = json!(1);
        }
        m
    })
}

/// One answer is well-formed: 202 with no body, or a JSON-RPC response (or a batch of
/// them), never a 500, never a panic.
fn assert_well_formed(status: u16, body: &Value, raw: &[u8]) {
    assert_ne!(status, 500, "{body}");
    if status == 202 {
        assert!(raw.is_empty());
        return;
    }
    let one = |r: &Value| {
        assert_eq!(r["jsonrpc"], "2.0", "{r}");
        assert!(r.get("id").is_some(), "{r}");
        assert!(r.get("result").is_some() != r.get("error").is_some(), "{r}");
        if let Some(e) = r.get("error") {
            assert!(e["code"].is_i64() && e["message"].is_string(), "{r}");
        }
    };
    match body {
        Value::Array(items) => items.iter().for_each(one),
        other => one(other),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_json_gets_a_well_formed_answer(value in prop_oneof![json_value(), message()], era in prop_oneof![Just(None), Just(Some("2025-03-26")), Just(Some("2025-11-25")), Just(Some("2026-07-28"))]) {
        let app = fixture_app();
        let headers: Vec<(&str, &str)> = era.map(|v| ("mcp-protocol-version", v)).into_iter().collect();
        let a = runtime().block_on(send(&app, post(value.to_string(), &headers)));
        assert_well_formed(a.status, &a.body, &a.raw);
    }

    #[test]
    fn any_bytes_get_a_well_formed_answer(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let app = fixture_app();
        let a = runtime().block_on(send(&app, post(bytes, &[])));
        assert_well_formed(a.status, &a.body, &a.raw);
    }

    #[test]
    fn the_strict_parser_agrees_with_serde_json_whenever_keys_are_unique(value in json_value()) {
        let text = value.to_string();
        // `Value`'s own maps hold unique keys, so its text has none repeated.
        prop_assert_eq!(mcp_protocol::jsonrpc::parse_body(text.as_bytes()), Ok(serde_json::from_str::<Value>(&text).unwrap()));
    }

    #[test]
    fn cursors_round_trip_and_every_change_is_refused(
        tenant in "[a-z0-9-]{1,20}",
        filter in "[a-f0-9]{8,64}",
        seconds in 0i64..4_000_000_000,
        id in any::<i64>(),
        flip in any::<prop::sample::Index>(),
    ) {
        let key = CursorKey::new(vec![3u8; 32]).unwrap();
        let position = Position { at: Timestamp::from_second(seconds).unwrap(), id };
        let cursor = key.sign(&tenant, &filter, &position);
        let back: mcp_tools::Position = key.verify::<mcp_tools::Position>(&tenant, &filter, &cursor).unwrap();
        prop_assert_eq!((back.at, back.id), (position.at, position.id));
        // Any one character changed: refused, never a different position.
        let mut chars: Vec<char> = cursor.chars().collect();
        let i = flip.index(chars.len());
        chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
        let tampered: String = chars.into_iter().collect();
        prop_assert!(tampered == cursor || key.verify::<mcp_tools::Position>(&tenant, &filter, &tampered).is_err());
        // Bound to its tenant and filter.
        let (other_tenant, other_filter) = (tenant.clone() + "x", filter.clone() + "0");
        prop_assert!(key.verify::<mcp_tools::Position>(&other_tenant, &filter, &cursor).is_err());
        prop_assert!(key.verify::<mcp_tools::Position>(&tenant, &other_filter, &cursor).is_err());
    }

    #[test]
    fn no_result_crosses_its_budget(size in 0usize..200_000, budget in 1024usize..65_536) {
        let mut tools = Tools::new();
        tools
            .register(ToolDef::new("blob", "Returns n bytes", json!({"type": "object"}), move |_, _| async move {
                Ok(Outcome::Complete(CallToolResult::text("x".repeat(size))))
            }))
            .unwrap();
        let server = Server::builder("t", "1").tools(tools).response_budget(budget).build().unwrap();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "blob"}}).to_string();
        let reply = runtime().block_on(server.handle(Incoming::new(body.as_bytes())));
        let result = &reply.body_value().unwrap()["result"];
        let bytes = serde_json::to_vec(result).unwrap().len();
        prop_assert!(bytes <= budget, "{} > {}", bytes, budget);
        // What fits arrives whole; what does not is replaced, never cut.
        let whole = serde_json::to_vec(&json!({"content": [{"type": "text", "text": "x".repeat(size)}]})).unwrap().len();
        if whole <= budget {
            prop_assert_eq!(result["content"][0]["text"].as_str().map(str::len), Some(size));
        } else {
            prop_assert_eq!(&result["structuredContent"]["code"], "mcp_response_over_budget");
        }
    }

    /// However much of the body a client's own text takes (a value, a member name, a tool
    /// or method name; quotes, which are escaped twice over where an error repeats them),
    /// a result stays within the call's budget and an error's message within its bound.
    #[test]
    fn what_the_client_sent_never_makes_an_answer_cross_its_bounds(
        size in 0usize..200_000,
        budget in 1024usize..65_536,
        shape in 0usize..6,
        quotes in any::<bool>(),
    ) {
        let text = if quotes { "\"".repeat(size) } else { "q".repeat(size) };
        let mut tools = Tools::new();
        let short = json!({"type": "string", "maxLength": 10});
        tools
            .register(ToolDef::new(
                "strict",
                "Three short strings",
                json!({
                    "type": "object",
                    "properties": {"a": short, "b": short, "c": short},
                    "additionalProperties": false
                }),
                |_, _| async { Ok(Outcome::Complete(CallToolResult::text("ok"))) },
            ))
            .unwrap();
        let server = Server::builder("t", "1").tools(tools).response_budget(budget).build().unwrap();
        let call = |name: &str, arguments: Value| {
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        };
        let body = match shape {
            0 => call("strict", json!({"a": text, "b": text, "c": text})),
            1 => call("strict", json!({"a": [text, text]})),
            2 => call("strict", json!({"a": {"k": text}})),
            3 => call("strict", Value::Object(Map::from_iter([(text.clone(), json!(1))]))),
            4 => call(&text, json!({})),
            _ => json!({"jsonrpc": "2.0", "id": 1, "method": text}),
        }
        .to_string();
        let reply = runtime().block_on(server.handle(Incoming::new(body.as_bytes())));
        let reply = reply.body_value().unwrap();
        if let Some(result) = reply.get("result") {
            let bytes = serde_json::to_vec(result).unwrap().len();
            prop_assert!(bytes <= budget, "{} > {}", bytes, budget);
        } else {
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            prop_assert!(
                message.len() <= mcp_protocol::error::MAX_MESSAGE_BYTES,
                "{} bytes", message.len()
            );
        }
    }
}
