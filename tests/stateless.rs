//! The stateless era (2026-07-28).

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::http::{MODERN, fixture_app, modern, modern_meta, post_json, send};

fn body(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

#[tokio::test]
async fn discover_answers_capabilities_identity_and_cache_hints() {
    let a = modern(&fixture_app(), "server/discover", json!({})).await;
    assert_eq!(a.status, 200, "{a:?}");
    let r = a.result();
    assert_eq!(r["resultType"], "complete");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-conformance-fixture"
    );
    assert_eq!(r["capabilities"]["prompts"], json!({}));
    assert_eq!(
        (r["ttlMs"].as_u64(), r["cacheScope"].as_str()),
        (Some(60_000), Some("private"))
    );
}

#[tokio::test]
async fn every_result_carries_result_type_and_server_info_and_lists_carry_cache_hints() {
    let app = fixture_app();
    for (method, params, cacheable) in [
        ("tools/list", json!({}), true),
        ("resources/list", json!({}), true),
        ("resources/templates/list", json!({}), true),
        ("prompts/list", json!({}), true),
        ("resources/read", json!({"uri": "test://static-text"}), true),
        ("tools/call", json!({"name": "test_simple_text"}), false),
        ("prompts/get", json!({"name": "test_simple_prompt"}), false),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": ""}}),
            false,
        ),
    ] {
        let a = modern(&app, method, params).await;
        let r = a.result();
        assert_eq!(r["resultType"], "complete", "{method}");
        assert!(
            r["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].is_string(),
            "{method}"
        );
        assert_eq!(r.get("ttlMs").is_some(), cacheable, "{method}");
        assert_eq!(r.get("cacheScope").is_some(), cacheable, "{method}");
    }
}

#[tokio::test]
async fn missing_meta_fields_are_400_invalid_params_with_the_request_id() {
    let app = fixture_app();
    let mut no_version = modern_meta();
    no_version
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/protocolVersion");
    let mut no_caps = modern_meta();
    no_caps
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let mut no_info = modern_meta();
    no_info
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientInfo");
    for params in [
        json!({}),
        json!({"_meta": no_version}),
        json!({"_meta": no_caps}),
        json!({"_meta": 5}),
    ] {
        let a = send(
            &app,
            post_json(
                &body("server/discover", params.clone()),
                &[
                    ("mcp-protocol-version", MODERN),
                    ("mcp-method", "server/discover"),
                ],
            ),
        )
        .await;
        a.assert_error(400, -32602);
        assert_eq!(a.body["id"], 7, "{params}");
    }
    // Unknown _meta keys are ignored, as are unknown capability fields.
    let mut extra = modern_meta();
    extra["com.example/trace"] = json!({"id": 1});
    extra["io.modelcontextprotocol/clientCapabilities"] = json!({"com.example/new": {}});
    let a = send(
        &app,
        post_json(
            &body("server/discover", json!({"_meta": extra})),
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "server/discover"),
            ],
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    // clientInfo is only a SHOULD: servers must not require it.
    let a = send(
        &app,
        post_json(
            &body("server/discover", json!({"_meta": no_info})),
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "server/discover"),
            ],
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
}

#[tokio::test]
async fn version_errors_and_header_mismatches_are_distinguished() {
    let app = fixture_app();
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let req = body("server/discover", json!({"_meta": meta}));
    // Unknown header version: -32022 naming what we support and echoing the request.
    let a = send(
        &app,
        post_json(
            &req,
            &[
                ("mcp-protocol-version", "v999.0.0"),
                ("mcp-method", "server/discover"),
            ],
        ),
    )
    .await;
    a.assert_error(400, -32022);
    assert_eq!(a.body["id"], 7);
    assert_eq!(a.body["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(a.body["error"]["data"]["supported"][3], MODERN);
    // Supported header, different _meta version: -32020.
    let a = send(
        &app,
        post_json(
            &req,
            &[
                ("mcp-protocol-version", MODERN),
                ("mcp-method", "server/discover"),
            ],
        ),
    )
    .await;
    a.assert_error(400, -32020);
}

#[tokio::test]
async fn mcp_method_and_mcp_name_headers_must_match_the_body() {
    let app = fixture_app();
    let call = body(
        "tools/call",
        json!({"name": "test_simple_text", "_meta": modern_meta()}),
    );
    let list = body("tools/list", json!({"_meta": modern_meta()}));
    let b64 = |s: &str| {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    };
    let ok_name = b64("test_simple_text");
    type Case<'a> = (&'a Value, Vec<(&'a str, &'a str)>, bool);
    let cases: Vec<Case<'_>> = vec![
        (&list, vec![("mcp-method", "tools/list")], true),
        (&list, vec![("MCP-METHOD", "  tools/list ")], true),
        (&list, vec![], false),
        (&list, vec![("mcp-method", "prompts/list")], false),
        (&list, vec![("mcp-method", "TOOLS/LIST")], false),
        (
            &list,
            vec![("mcp-method", "tools/list"), ("mcp-method", "tools/list")],
            false,
        ),
        (
            &call,
            vec![
                ("mcp-method", "tools/call"),
                ("mcp-name", "test_simple_text"),
            ],
            true,
        ),
        (
            &call,
            vec![("mcp-method", "tools/call"), ("mcp-name", ok_name.as_str())],
            true,
        ),
        (&call, vec![("mcp-method", "tools/call")], false),
        (
            &call,
            vec![("mcp-method", "tools/call"), ("mcp-name", "other")],
            false,
        ),
        (
            &call,
            vec![("mcp-method", "tools/call"), ("mcp-name", "=?base64?!!!?=")],
            false,
        ),
    ];
    for (req, headers, ok) in cases {
        let mut all = vec![("mcp-protocol-version", MODERN)];
        all.extend(headers.iter().copied());
        let a = send(&app, post_json(req, &all)).await;
        if ok {
            assert_eq!(a.status, 200, "{headers:?}: {a:?}");
        } else {
            a.assert_error(400, -32020);
            assert_eq!(a.body["id"], 7, "{headers:?}");
        }
    }
}

#[tokio::test]
async fn removed_and_unknown_methods_are_404_method_not_found() {
    let app = fixture_app();
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "subscriptions/listen",
        "unknown/method",
    ] {
        let a = modern(&app, method, json!({})).await;
        let message = a.assert_error(404, -32601);
        assert!(message.contains(method), "{message}");
        assert_eq!(a.body["id"], 1);
    }
}

#[tokio::test]
async fn tools_needing_an_undeclared_client_capability_are_refused_with_32021() {
    let app = fixture_app();
    let a = modern(
        &app,
        "tools/call",
        json!({"name": "test_missing_capability"}),
    )
    .await;
    a.assert_error(400, -32021);
    assert_eq!(
        a.body["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
    let a = modern(
        &app,
        "tools/call",
        json!({"name": "test_missing_capability", "_meta": meta}),
    )
    .await;
    assert_eq!(
        a.result()["content"][0]["text"],
        "sampling capability was declared"
    );
}

#[tokio::test]
async fn input_required_round_trips_with_signed_state_and_refuses_tampering() {
    let app = fixture_app();
    let a = modern(
        &app,
        "tools/call",
        json!({"name": "test_input_required_result_multi_round"}),
    )
    .await;
    let r = a.result();
    assert_eq!(r["resultType"], "input_required");
    assert!(r["inputRequests"]["step1"].is_object());
    let state = r["requestState"].as_str().unwrap().to_owned();

    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    let a = modern(&app, "tools/call", json!({"name": "test_input_required_result_multi_round", "inputResponses": {"step1": answer}, "requestState": state})).await;
    assert!(a.result()["inputRequests"]["step2"].is_object(), "{a:?}");
    let state2 = a.result()["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state, state2);

    let a = modern(&app, "tools/call", json!({"name": "test_input_required_result_multi_round", "inputResponses": {"step2": answer}, "requestState": state2})).await;
    assert_eq!(a.result()["resultType"], "complete");

    let mut tampered = state.clone();
    tampered.replace_range(0..1, "X");
    let a = modern(&app, "tools/call", json!({"name": "test_input_required_result_tampered_state", "inputResponses": {"confirm": answer}, "requestState": tampered})).await;
    a.assert_error(200, -32602);

    let a = modern(
        &app,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation", "inputResponses": "nonsense"}),
    )
    .await;
    a.assert_error(200, -32602);
}

#[tokio::test]
async fn missing_resources_are_32602_with_the_uri_in_the_stateless_era() {
    let a = modern(
        &fixture_app(),
        "resources/read",
        json!({"uri": "test://nope"}),
    )
    .await;
    a.assert_error(200, -32602);
    assert_eq!(a.body["error"]["data"], json!({"uri": "test://nope"}));
}

#[tokio::test]
async fn clients_must_not_send_responses_or_batches_in_the_stateless_era() {
    let app = fixture_app();
    let a = send(
        &app,
        post_json(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            &[("mcp-protocol-version", MODERN)],
        ),
    )
    .await;
    a.assert_error(400, -32600);
    let a = send(
        &app,
        post_json(
            &json!([body("tools/list", json!({}))]),
            &[("mcp-protocol-version", MODERN)],
        ),
    )
    .await;
    a.assert_error(400, -32600);
}
