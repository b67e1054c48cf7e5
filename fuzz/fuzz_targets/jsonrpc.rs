//! Any body through the MCP engine (both eras, batches included): never a panic, never a
//! 500, always a JSON-RPC response, a batch of them, or 202 with nothing.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_protocol::{HeaderField, Incoming, Server};
use serde_json::Value;

fn server() -> &'static (Server, tokio::runtime::Runtime) {
    static S: OnceLock<(Server, tokio::runtime::Runtime)> = OnceLock::new();
    S.get_or_init(|| {
        // Timers on, as the Lambda runtime has them: the engine races every tool body
        // against its deadline.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        (conformance::fixture_server().unwrap(), rt)
    })
}

fn well_formed(v: &Value) -> bool {
    v["jsonrpc"] == "2.0"
        && v.get("id").is_some()
        && (v.get("result").is_some() != v.get("error").is_some())
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the protocol version header, the rest is the body.
    let Some((&era, body)) = data.split_first() else {
        return;
    };
    let versions = [
        None,
        Some("2025-03-26"),
        Some("2025-11-25"),
        Some("2026-07-28"),
        Some("bogus"),
    ];
    let mut incoming = Incoming::new(body);
    if let Some(v) = versions[usize::from(era) % versions.len()] {
        incoming.protocol_version = HeaderField::One(v);
    }
    if let Ok(value) = mcp_protocol::jsonrpc::parse_body(body) {
        let _ = mcp_protocol::jsonrpc::parse_envelope(&value);
    }
    let (server, rt) = server();
    let reply = rt.block_on(server.handle(incoming));
    assert_ne!(reply.status, 500);
    // What is sent, parsed: a mirrored tool result's structuredContent is written from its text.
    let body = reply
        .body_json()
        .map(|text| serde_json::from_str::<Value>(&text).expect("every body sent is JSON"));
    match body {
        None => assert_eq!(reply.status, 202),
        Some(Value::Array(items)) => assert!(items.iter().all(well_formed)),
        Some(one) => assert!(well_formed(&one)),
    }
});
