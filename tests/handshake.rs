//! The handshake era (2025-03-26, 2025-06-18, 2025-11-25), served statelessly.

use serde_json::json;

use crate::support::http::{fixture_app, legacy, post, post_json, send};

#[tokio::test]
async fn initialize_mirrors_supported_versions_and_otherwise_answers_the_latest() {
    let app = fixture_app();
    for (asked, answered) in [
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        // 2026-07-28 has no handshake: initialize falls back to the newest handshake revision.
        ("2026-07-28", "2025-11-25"),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked,
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "t", "version": "1"}
        }});
        let a = send(&app, post_json(&body, &[])).await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(a.result()["protocolVersion"], answered, "asked {asked}");
        let caps = &a.result()["capabilities"];
        assert_eq!(
            caps["tools"],
            json!({}),
            "no listChanged: nothing could deliver it"
        );
        assert_eq!(caps["resources"], json!({}), "no subscribe/listChanged");
    }
}

#[tokio::test]
async fn initialize_without_a_protocol_version_is_invalid_params() {
    let a = legacy(
        &fixture_app(),
        "2025-11-25",
        "initialize",
        json!({"capabilities": {}}),
    )
    .await;
    let message = a.assert_error(200, -32602);
    assert!(message.contains("protocolVersion"), "{message}");
}

#[tokio::test]
async fn session_ids_are_never_minted_and_incoming_ones_are_ignored() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let a = send(
        &fixture_app(),
        post_json(
            &body,
            &[
                ("mcp-session-id", "stale-session"),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        ),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert!(a.header("mcp-session-id").is_none());
}

#[tokio::test]
async fn a_missing_version_header_means_2025_03_26_and_an_unknown_one_is_400() {
    let app = fixture_app();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let a = send(&app, post_json(&body, &[])).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.result()["tools"].is_array());
    let a = send(
        &app,
        post_json(&body, &[("mcp-protocol-version", "2099-01-01")]),
    )
    .await;
    a.assert_error(400, -32022);
    assert_eq!(a.body["id"], 9);
    assert_eq!(a.body["error"]["data"]["requested"], "2099-01-01");
}

#[tokio::test]
async fn notifications_and_client_responses_get_202_and_no_body() {
    let app = fixture_app();
    for body in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever"}),
        json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
    ] {
        let a = send(
            &app,
            post_json(&body, &[("mcp-protocol-version", "2025-06-18")]),
        )
        .await;
        assert_eq!(a.status, 202, "{body}");
        assert!(a.raw.is_empty(), "{body}");
    }
}

#[tokio::test]
async fn unknown_methods_are_200_with_method_not_found_in_the_handshake_era() {
    let app = fixture_app();
    for method in [
        "nope",
        "server/discover",
        "resources/subscribe",
        "subscriptions/listen",
    ] {
        let a = legacy(&app, "2025-11-25", method, json!({})).await;
        let message = a.assert_error(200, -32601);
        assert!(message.contains(method), "{message}");
        assert_eq!(a.body["id"], 1);
    }
}

#[tokio::test]
async fn ids_are_echoed_exactly_including_zero_and_strings() {
    let app = fixture_app();
    for id in [
        json!(0),
        json!("server-discover-probe-1"),
        json!(9007199254740993u64),
        json!(-1),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let a = send(&app, post_json(&body, &[])).await;
        assert_eq!(a.body["id"], id);
        // The raw bytes carry the id exactly (no float rounding of large integers).
        assert!(
            String::from_utf8_lossy(&a.raw).contains(&id.to_string()),
            "{a:?}"
        );
    }
}

#[tokio::test]
async fn malformed_messages_get_the_code_the_spec_assigns() {
    let app = fixture_app();
    let cases: Vec<(Vec<u8>, u16, i64, serde_json::Value)> = vec![
        (b"{".to_vec(), 400, -32700, json!(null)),
        (b"\xff\xfe".to_vec(), 400, -32700, json!(null)),
        (b"".to_vec(), 400, -32700, json!(null)),
        (b"42".to_vec(), 400, -32600, json!(null)),
        (
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_vec(),
            400,
            -32600,
            json!(null),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(),
            400,
            -32600,
            json!(null),
        ),
        (
            br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#.to_vec(),
            400,
            -32600,
            json!(3),
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}"#.to_vec(),
            200,
            -32602,
            json!(3),
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}"#.to_vec(),
            200,
            -32602,
            json!(3),
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}}"#.to_vec(),
            200,
            -32602,
            json!(3),
        ),
    ];
    for (body, status, code, id) in cases {
        let a = send(&app, post(body.clone(), &[])).await;
        a.assert_error(status, code);
        assert_eq!(a.body["id"], id, "{}", String::from_utf8_lossy(&body));
    }
}

#[tokio::test]
async fn batches_are_served_only_for_2025_03_26_and_bounded() {
    let app = fixture_app();
    let ping = |id: u32| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
    let call = |id: u32| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "test_simple_text"}});

    let a = send(
        &app,
        post_json(
            &json!([ping(1), call(2)]),
            &[("mcp-protocol-version", "2025-03-26")],
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body[1]["result"]["content"][0]["type"], "text");

    for version in ["2025-06-18", "2025-11-25"] {
        let a = send(
            &app,
            post_json(&json!([ping(1)]), &[("mcp-protocol-version", version)]),
        )
        .await;
        let message = a.assert_error(400, -32600);
        assert!(message.contains(version), "{message}");
    }
    let a = send(&app, post_json(&json!([]), &[])).await;
    a.assert_error(400, -32600);
    let big: Vec<_> = (0..17).map(ping).collect();
    let a = send(&app, post_json(&json!(big), &[])).await;
    assert!(a.assert_error(400, -32600).contains("at most 16"));
    let a = send(&app, post_json(&json!([call(1), call(2)]), &[])).await;
    assert!(
        a.assert_error(400, -32600)
            .contains("at most one tools/call")
    );

    // Elements fail one by one; initialize must not be batched (2025-03-26 §Batching).
    let init = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let a = send(&app, post_json(&json!([init, 5, ping(4)]), &[])).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body[0]["error"]["code"], -32600);
    assert_eq!(a.body[0]["id"], 3);
    assert_eq!(a.body[1]["error"]["code"], -32600);
    assert_eq!(a.body[1]["id"], json!(null));
    assert_eq!(a.body[2]["result"], json!({}));

    let notes = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    let a = send(&app, post_json(&notes, &[])).await;
    assert_eq!(a.status, 202);
}

#[tokio::test]
async fn resources_prompts_and_completions_work_in_the_handshake_era() {
    let app = fixture_app();
    let a = legacy(
        &app,
        "2025-11-25",
        "resources/read",
        json!({"uri": "test://template/42/data"}),
    )
    .await;
    let text = a.result()["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(text).unwrap()["id"],
        "42"
    );

    let a = legacy(
        &app,
        "2025-11-25",
        "resources/read",
        json!({"uri": "test://missing"}),
    )
    .await;
    a.assert_error(200, -32002);
    assert_eq!(a.body["error"]["data"]["uri"], "test://missing");

    let a = legacy(
        &app,
        "2025-11-25",
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
    )
    .await;
    assert_eq!(
        a.result()["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );
    let a = legacy(
        &app,
        "2025-11-25",
        "prompts/get",
        json!({"name": "test_prompt_with_arguments"}),
    )
    .await;
    assert!(a.assert_error(200, -32602).contains("arg1"));
    let a = legacy(&app, "2025-11-25", "prompts/get", json!({"name": "nope"})).await;
    a.assert_error(200, -32602);

    let a = legacy(&app, "2025-11-25", "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "par"}})).await;
    assert_eq!(
        a.result()["completion"],
        json!({"values": ["paris", "park", "party"], "total": 3, "hasMore": false})
    );

    let a = legacy(
        &app,
        "2025-11-25",
        "logging/setLevel",
        json!({"level": "debug"}),
    )
    .await;
    assert_eq!(a.result(), &json!({}));
}

#[tokio::test]
async fn tools_that_need_client_input_report_an_error_result_in_the_handshake_era() {
    let app = fixture_app();
    let a = legacy(
        &app,
        "2025-11-25",
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "hi"}}),
    )
    .await;
    assert_eq!(a.result()["isError"], true);
    assert!(
        a.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2026-07-28")
    );
    let a = legacy(
        &app,
        "2025-11-25",
        "tools/call",
        json!({"name": "test_input_required_result_elicitation"}),
    )
    .await;
    assert_eq!(a.result()["isError"], true);
}
