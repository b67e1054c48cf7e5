//! The sample events in `events/` are the ones `cargo lambda invoke --data-file` sends; here
//! they go through the handler exactly as the runtime would deliver them.

use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::{Context, LambdaEvent};
use mcp::App;
use serde_json::{Value, json};

use crate::support::http::{Answer, fixture_app, production_app};

/// The event as the runtime delivers it: deserialized, then through the function's own
/// conversion (`App::invoke`), as in the deployed function.
fn parse(event: &str) -> ApiGatewayV2httpRequest {
    serde_json::from_str(event).expect("event parses as an API Gateway v2 request")
}

async fn invoke_on(app: &App, event: ApiGatewayV2httpRequest) -> Answer {
    answer(
        app.invoke(LambdaEvent::new(event, Context::default()))
            .await,
    )
}

async fn invoke(event: &str) -> Answer {
    invoke_on(&fixture_app(), parse(event)).await
}

/// The event response read back as the gateway would send it.
fn answer(out: ApiGatewayV2httpResponse) -> Answer {
    let raw: Vec<u8> = out.body.as_deref().map(<[u8]>::to_vec).unwrap_or_default();
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).expect("every non-empty body is JSON")
    };
    Answer {
        status: u16::try_from(out.status_code).unwrap(),
        headers: out.headers,
        raw,
        body,
    }
}

#[tokio::test]
async fn initialize_event_negotiates_the_requested_version() {
    let a = invoke(include_str!("../events/initialize.json")).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["id"], json!(0));
    assert_eq!(a.result()["protocolVersion"], "2025-11-25");
    assert_eq!(a.result()["serverInfo"]["name"], "mcp-conformance-fixture");
    assert!(
        a.header("mcp-session-id").is_none(),
        "a stateless server never mints sessions"
    );
}

#[tokio::test]
async fn notification_event_is_accepted_with_an_empty_body() {
    let a = invoke(include_str!("../events/notification_initialized.json")).await;
    assert_eq!(a.status, 202);
    assert!(a.raw.is_empty(), "{a:?}");
}

#[tokio::test]
async fn tools_list_event_lists_the_fixture_tools_in_order() {
    let a = invoke(include_str!("../events/tools_list.json")).await;
    assert_eq!(a.status, 200);
    let names: Vec<&str> = a.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["test_simple_text", "test_image_content"]);
}

#[tokio::test]
async fn tools_call_events_answer_in_both_eras() {
    let a = invoke(include_str!("../events/tools_call.json")).await;
    assert_eq!(
        a.body,
        json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "This is a simple text response for testing."}]
        }})
    );
    let a = invoke(include_str!("../events/tools_call_modern.json")).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.result()["resultType"], "complete");
    assert_eq!(
        a.result()["content"][0]["text"],
        "This is a simple text response for testing."
    );
    assert_eq!(
        a.result()["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-conformance-fixture"
    );
}

#[tokio::test]
async fn server_discover_event_lists_every_supported_version() {
    let a = invoke(include_str!("../events/server_discover.json")).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["id"], "discover-1");
    assert_eq!(
        a.result()["supportedVersions"],
        json!(["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(a.result()["cacheScope"], "private");
    assert!(a.result()["ttlMs"].is_u64());
}

#[tokio::test]
async fn get_event_is_method_not_allowed() {
    let a = invoke(include_str!("../events/get.json")).await;
    a.assert_error(405, -32600);
    assert_eq!(a.header("allow"), Some("POST"));
}

#[tokio::test]
async fn malformed_body_event_is_a_parse_error() {
    let a = invoke(include_str!("../events/malformed_body.json")).await;
    a.assert_error(400, -32700);
    assert_eq!(a.body["id"], json!(null));
}

/// A body that is not UTF-8 reaches the function base64-encoded (the gateway cannot put it
/// in the event as text; `cargo lambda watch`'s emulator refuses it with a 500 of its own
/// before the function runs): decoded, it is a parse error like any other non-JSON body.
#[tokio::test]
async fn a_base64_body_that_is_not_utf8_is_a_parse_error() {
    use base64::Engine as _;
    let mut event = parse(include_str!("../events/tools_list.json"));
    event.is_base64_encoded = true;
    event.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/l\xffist\"}"),
    );
    let a = invoke_on(&fixture_app(), event).await;
    a.assert_error(400, -32700);
    assert_eq!(a.body["id"], json!(null));
}

#[tokio::test]
async fn wrong_origin_event_is_forbidden() {
    let a = invoke(include_str!("../events/wrong_origin.json")).await;
    let message = a.assert_error(403, -32600);
    assert!(message.contains("Origin"), "{message}");
}

#[tokio::test]
async fn batch_event_answers_requests_and_skips_notifications() {
    let a = invoke(include_str!("../events/batch_2025_03_26.json")).await;
    assert_eq!(a.status, 200, "{a:?}");
    let replies = a.body.as_array().expect("a batch answer is an array");
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0], json!({"jsonrpc": "2.0", "id": 6, "result": {}}));
    assert_eq!(replies[1]["id"], 7);
}

#[tokio::test]
async fn the_production_function_without_auth_configuration_refuses_every_event() {
    for event in [
        include_str!("../events/initialize.json"),
        include_str!("../events/tools_list.json"),
        include_str!("../events/server_discover.json"),
        include_str!("../events/notification_initialized.json"),
    ] {
        let a = invoke_on(&production_app(), parse(event)).await;
        let message = a.assert_error(401, -32600);
        assert!(message.contains("not configured"), "{message}");
        assert_eq!(a.header("www-authenticate"), Some("Bearer"));
    }
}

#[tokio::test]
async fn the_production_function_serves_dev_tokens_with_the_dev_configuration() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let env = [
        ("AUTH_ISSUER", "http://127.0.0.1:9100".to_owned()),
        ("AUTH_JWKS_FILE", format!("{root}/dev/jwks.json")),
        (
            "MCP_RESOURCE_URL",
            "http://127.0.0.1:9000/lambda-url/mcp/mcp".to_owned(),
        ),
        ("AUTH_TENANT_CLAIM", "tenant_id".to_owned()),
        ("AUTH_REQUIRE_AT_JWT", "true".to_owned()),
    ];
    let config =
        mcp::Config::from_lookup(|k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()))
            .unwrap();
    let app = mcp::App::new(
        config,
        mcp::production_server(
            crate::support::db::unconnected_store(),
            mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
        )
        .unwrap(),
    );
    let token = {
        let out = std::process::Command::new(env!("CARGO"))
            .args([
                "run", "-q", "-p", "devtools", "--bin", "devtoken", "--", "--sub", "dev-user",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let mut event = parse(include_str!("../events/initialize.json"));
    event
        .headers
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let a = invoke_on(&app, event).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.result()["serverInfo"]["name"], "event-store-mcp");
    let event = parse(include_str!("../events/initialize.json"));
    assert_eq!(invoke_on(&app, event).await.status, 401);
}

/// What `lambda_http`'s own conversion panicked on (a 500 naming the panic, before any of
/// our code): the function's conversion answers each with a 4xx and a JSON-RPC error body.
#[tokio::test]
async fn events_the_old_conversion_panicked_on_get_a_precise_refusal() {
    let app = fixture_app();
    let base = || parse(include_str!("../events/tools_list.json"));
    let with_header = |name: &'static str, value: &str| {
        let mut event = base();
        event.headers.insert(name, value.parse().unwrap());
        event
    };
    for (event, status, says) in [
        (with_header("host", "127.0.0.1:port"), 403, "Host"),
        (with_header("host", "[::1]evil.example"), 403, "Host"),
        (with_header("host", "127.0.0.1:99999"), 403, "Host"),
        (with_header("x-forwarded-proto", "1"), 200, ""),
        (with_header("x-forwarded-proto", "h t t p"), 200, ""),
        (
            {
                let mut event = base();
                event.is_base64_encoded = true;
                event.body = Some("%%% not base64".into());
                event
            },
            400,
            "base64",
        ),
        (
            {
                let mut event = base();
                event.raw_path = Some("/mcp with spaces".into());
                event
            },
            400,
            "not a valid URI",
        ),
        (
            {
                let mut event = base();
                event.raw_query_string = Some("a=<>\"{}".into());
                event
            },
            400,
            "not a valid URI",
        ),
    ] {
        let a = invoke_on(&app, event).await;
        assert_eq!(a.status, status, "{a:?}");
        if status == 200 {
            // The scheme header is not ours to read: the request is served.
            assert!(a.result()["tools"].is_array(), "{a:?}");
        } else {
            let message = a.assert_error(status, -32600);
            assert!(message.contains(says), "{message}");
        }
    }
}
