//! Tool calls through the registry: argument validation, errors, output schemas.

use mcp::App;
use mcp_protocol::budget::HINT_META;
use mcp_protocol::{CallToolResult, Outcome, Server, ToolDef, ToolError, Tools};
use serde_json::{Value, json};

use crate::support::http::{fixture_app, fixture_config, legacy, modern};

#[derive(Debug)]
struct Broken;

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection to 10.0.0.5:5432 refused; SELECT secret FROM t")
    }
}

impl std::error::Error for Broken {}

fn app_with_test_tools() -> App {
    app_with_test_tools_checking(true)
}

fn app_with_test_tools_checking(outputs: bool) -> App {
    let mut tools = Tools::new();
    tools
        .register(ToolDef::new(
            "echo",
            "Echoes its text",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 10}, "times": {"type": "integer", "minimum": 1}},
                "required": ["text"]
            }),
            |args, _| async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                Ok(Outcome::Complete(CallToolResult::structured(json!({"text": text}))))
            },
        )
        .output_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})))
        .unwrap()
        .register(
            ToolDef::new("liar", "Breaks its output schema", json!({"type": "object"}), |_, _| async {
                Ok(Outcome::Complete(CallToolResult::structured(json!({"count": "many"}))))
            })
            .output_schema(json!({"type": "object", "properties": {"count": {"type": "integer"}}})),
        )
        .unwrap()
        .register(ToolDef::new("broken", "Fails inside", json!({"type": "object"}), |_, _| async {
            Err(ToolError::Internal(Box::new(Broken)))
        }))
        .unwrap();
    App::new(
        fixture_config(),
        Server::builder("t", "0")
            .tools(tools)
            .check_outputs(outputs)
            .build()
            .unwrap(),
    )
}

async fn call(app: &App, name: &str, arguments: Option<Value>) -> crate::support::http::Answer {
    let mut params = json!({"name": name});
    if let Some(args) = arguments {
        params["arguments"] = args;
    }
    legacy(app, "2025-11-25", "tools/call", params).await
}

#[tokio::test]
async fn valid_arguments_run_the_tool_and_structured_content_is_mirrored_as_text() {
    let a = call(&app_with_test_tools(), "echo", Some(json!({"text": "hi"}))).await;
    assert_eq!(
        a.result(),
        &json!({"content": [{"type": "text", "text": "{\"text\":\"hi\"}"}], "structuredContent": {"text": "hi"}})
    );
}

#[tokio::test]
async fn invalid_arguments_are_is_error_results_naming_the_problem() {
    let app = app_with_test_tools();
    for (args, needle) in [
        (json!({}), "text"),
        (json!({"text": 5}), "/text"),
        (json!({"text": "far too long text"}), "/text"),
        (json!({"text": "a", "times": 0}), "/times"),
        (json!({"text": "a", "extra": true}), "extra"),
        (json!({"text": "a'; DROP TABLE events; --"}), "/text"),
    ] {
        let a = call(&app, "echo", Some(args.clone())).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.result()["isError"], true, "{args}");
        let text = a.result()["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("Invalid arguments for tool echo"),
            "{text}"
        );
        assert!(text.contains(needle), "{args}: {text}");
    }
}

#[tokio::test]
async fn missing_arguments_mean_an_empty_object() {
    let a = call(&fixture_app(), "test_simple_text", None).await;
    assert_eq!(
        a.result()["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let a = call(&app_with_test_tools(), "echo", None).await;
    assert_eq!(a.result()["isError"], true);
}

#[tokio::test]
async fn arguments_that_are_not_an_object_and_unknown_tools_are_protocol_errors() {
    let app = app_with_test_tools();
    let a = call(&app, "echo", Some(json!([1]))).await;
    a.assert_error(200, -32602);
    let a = call(&app, "nope", Some(json!({}))).await;
    assert_eq!(
        a.assert_error(200, -32602),
        "Invalid params: Unknown tool: nope"
    );
}

#[tokio::test]
async fn internal_failures_and_schema_violations_leak_nothing() {
    let app = app_with_test_tools();
    for tool in ["broken", "liar"] {
        let a = call(&app, tool, None).await;
        assert_eq!(a.assert_error(500, -32603), "Internal error");
        let raw = String::from_utf8_lossy(&a.raw);
        assert!(
            !raw.contains("10.0.0.5") && !raw.contains("SELECT"),
            "{raw}"
        );
    }
}

/// A server that does not check results (release builds of the function) drops its output
/// validators and sends what the tool made; every listing still carries the schema.
#[tokio::test]
async fn results_are_unchecked_only_where_outputs_are_not_checked() {
    let app = app_with_test_tools_checking(false);
    let a = call(&app, "liar", None).await;
    assert_eq!(a.result()["structuredContent"], json!({"count": "many"}));
    let listed = legacy(&app, "2025-11-25", "tools/list", json!({})).await;
    let liar = &listed.result()["tools"][1];
    assert_eq!(liar["name"], "liar");
    assert_eq!(
        liar["outputSchema"]["properties"]["count"]["type"],
        "integer"
    );
    assert_eq!(liar["inputSchema"]["additionalProperties"], false);
}

#[tokio::test]
async fn tool_errors_the_model_can_act_on_are_results() {
    let a = call(&fixture_app(), "test_error_handling", None).await;
    assert_eq!(
        a.result(),
        &json!({"isError": true, "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}]})
    );
}

#[tokio::test]
async fn tools_list_is_deterministic_and_annotated_read_only() {
    let app = fixture_app();
    let first = modern(&app, "tools/list", json!({})).await;
    let second = modern(&app, "tools/list", json!({})).await;
    assert_eq!(first.result()["tools"], second.result()["tools"]);
    for tool in first.result()["tools"].as_array().unwrap() {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool}");
        assert!(tool["description"].is_string(), "{tool}");
    }
}

/// A tool whose text result is `unit` repeated to about `size` bytes (its one argument).
fn sized_text(name: &str, unit: &'static str) -> ToolDef {
    ToolDef::new(
        name,
        "Returns `size` bytes of text",
        json!({"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}),
        move |args, _| async move {
            let size = args["size"].as_u64().unwrap_or(0) as usize;
            Ok(Outcome::Complete(CallToolResult::text(
                unit.repeat(size / unit.len()),
            )))
        },
    )
}

#[tokio::test]
async fn results_over_the_response_budget_are_replaced_by_a_bounded_error() {
    let mut tools = Tools::new();
    tools
        .register(sized_text("flood", "SECRET-ROW "))
        .unwrap()
        .register(
            ToolDef::new(
                "tight",
                "Budget of 1 KiB",
                json!({"type": "object"}),
                |_, _| async { Ok(Outcome::Complete(CallToolResult::text("x".repeat(2000)))) },
            )
            .response_budget(1024),
        )
        .unwrap();
    let app = App::new(
        fixture_config(),
        Server::builder("t", "0")
            .tools(tools)
            .response_budget(64 * 1024)
            .build()
            .unwrap(),
    );

    let a = call(&app, "flood", Some(json!({"size": 60_000}))).await;
    assert_eq!(
        a.result()["isError"],
        Value::Null,
        "under budget: returned as is"
    );
    assert!(a.raw.len() > 60_000);

    let a = call(&app, "flood", Some(json!({"size": 300_000}))).await;
    let r = a.result();
    assert_eq!(r["isError"], true);
    let detail = &r["structuredContent"];
    assert_eq!(detail["code"], "mcp_response_over_budget");
    assert_eq!(detail["tool"], "flood");
    assert_eq!(detail["budget_bytes"], 64 * 1024);
    let bytes = detail["response_bytes"].as_u64().unwrap();
    assert!(bytes > 290_000, "{bytes}");
    assert_eq!(detail["estimated_tokens"], bytes / 4);
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Narrow the time window")
    );
    assert!(
        a.raw.len() < 2048,
        "the replacement is small: {}",
        a.raw.len()
    );
    assert!(
        !String::from_utf8_lossy(&a.raw).contains("SECRET-ROW"),
        "the original never reaches the client"
    );

    let a = call(&app, "tight", None).await;
    assert_eq!(a.result()["structuredContent"]["budget_bytes"], 1024);
}

/// A refusal and a tool's own error are results too, held to the same budget: nothing a
/// call answers is larger than its budget, whichever way it ends.
#[tokio::test]
async fn refusals_and_tool_errors_are_held_to_the_budget() {
    let mut tools = Tools::new();
    let properties: serde_json::Map<String, Value> = (0..5)
        .map(|i| (format!("p{i}"), json!({"type": "string", "pattern": "^x$"})))
        .collect();
    tools
        .register(
            ToolDef::new(
                "tiny",
                "Budget of 256 bytes",
                json!({"type": "object", "properties": properties}),
                |args, _| async move {
                    if args.is_empty() {
                        return Err(ToolError::Execution("e".repeat(2000)));
                    }
                    Ok(Outcome::Complete(CallToolResult::text("ok")))
                },
            )
            .response_budget(256),
        )
        .unwrap();
    let app = App::new(
        fixture_config(),
        Server::builder("t", "0").tools(tools).build().unwrap(),
    );
    let long = "y".repeat(1000);
    let five_bad: serde_json::Map<String, Value> =
        (0..5).map(|i| (format!("p{i}"), json!(long))).collect();
    for (case, args) in [
        ("five argument errors", Value::Object(five_bad)),
        ("the tool's own long error", json!({})),
    ] {
        let a = call(&app, "tiny", Some(args)).await;
        let r = a.result();
        assert_eq!(r["isError"], true, "{case}: {a:?}");
        assert_eq!(
            r["structuredContent"]["code"], "mcp_response_over_budget",
            "{case}: {a:?}"
        );
        assert_eq!(r["structuredContent"]["budget_bytes"], 256, "{case}");
        assert!(a.raw.len() < 2048, "{case}: {}", a.raw.len());
    }
    // Under the budget, a refusal is sent as it is.
    let a = call(&app, "tiny", Some(json!({"p0": "z"}))).await;
    let text = a.result()["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(r#"/p0: "z" does not match "^x$""#), "{text}");
}

/// The budget of a call is the smallest of the server's, the tool's and the client's: a
/// known client by its `clientInfo` name (2026-07-28 sends it on every request) or an
/// explicit `_meta` hint (any era); a malformed hint is refused, not ignored.
#[tokio::test]
async fn the_budget_is_the_smallest_of_server_tool_and_client() {
    let mut tools = Tools::new();
    tools
        .register(sized_text("flood", "x"))
        .unwrap()
        .register(sized_text("tight", "x").response_budget(8 * 1024))
        .unwrap();
    // The server's default budget (96 KiB).
    let app = App::new(
        fixture_config(),
        Server::builder("t", "0").tools(tools).build().unwrap(),
    );
    let budget_of =
        |a: &crate::support::http::Answer| a.result()["structuredContent"]["budget_bytes"].as_u64();
    let with_meta = |name: &str, size: u64, meta: Value| json!({"name": name, "arguments": {"size": size}, "_meta": meta});

    // Server: 90,000 bytes pass under 96 KiB, 100,000 do not.
    let a = call(&app, "flood", Some(json!({"size": 90_000}))).await;
    assert_eq!(a.result()["isError"], Value::Null, "{a:?}");
    let a = call(&app, "flood", Some(json!({"size": 100_000}))).await;
    assert_eq!(budget_of(&a), Some(96 * 1024));

    // A known client: Claude Code keeps less, in both eras' ways of saying who it is.
    let claude_code = |extra: Value| {
        let mut meta = crate::support::http::modern_meta();
        meta["io.modelcontextprotocol/clientInfo"] =
            json!({"name": "claude-code", "version": "2.1.0"});
        if let Value::Object(extra) = extra {
            meta.as_object_mut().unwrap().extend(extra);
        }
        meta
    };
    let a = modern(
        &app,
        "tools/call",
        with_meta("flood", 70_000, claude_code(json!({}))),
    )
    .await;
    assert_eq!(budget_of(&a), Some(64 * 1024), "{a:?}");
    let a = modern(
        &app,
        "tools/call",
        with_meta("flood", 60_000, claude_code(json!({}))),
    )
    .await;
    assert_eq!(a.result()["isError"], Value::Null, "{a:?}");
    // An unknown client name changes nothing.
    let mut unknown = crate::support::http::modern_meta();
    unknown["io.modelcontextprotocol/clientInfo"] = json!({"name": "Claude-Code"});
    let a = modern(&app, "tools/call", with_meta("flood", 90_000, unknown)).await;
    assert_eq!(a.result()["isError"], Value::Null, "{a:?}");

    // An explicit hint, in the handshake era too, and over a known client's name.
    assert_eq!(
        budget_of(&hinted(&app, "flood", 30_000, json!(20_000)).await),
        Some(20_000)
    );
    let a = modern(
        &app,
        "tools/call",
        with_meta("flood", 30_000, claude_code(json!({ HINT_META: 20_000 }))),
    )
    .await;
    assert_eq!(budget_of(&a), Some(20_000), "{a:?}");
    // A hint larger than the server's budget does not raise it; the tool's own budget is
    // smaller than a hint; a hint below 4 KiB is raised to 4 KiB.
    for (tool, size, hint, budget) in [
        ("flood", 100_000, 1_000_000, 96 * 1024),
        ("tight", 9_000, 20_000, 8 * 1024),
        ("flood", 5_000, 100, 4 * 1024),
    ] {
        let a = hinted(&app, tool, size, json!(hint)).await;
        assert_eq!(budget_of(&a), Some(budget), "{tool} {hint}: {a:?}");
    }
    for bad in [json!(0), json!(-1), json!("20000"), json!(1.5)] {
        let message = hinted(&app, "flood", 10, bad.clone())
            .await
            .assert_error(200, -32602);
        assert!(message.contains("positive integer"), "{bad}: {message}");
    }
}

/// A handshake-era call of `tool` for `size` bytes with the budget hint `hint` in `_meta`.
async fn hinted(app: &App, tool: &str, size: u64, hint: Value) -> crate::support::http::Answer {
    let params = json!({"name": tool, "arguments": {"size": size}, "_meta": { HINT_META: hint }});
    legacy(app, "2025-11-25", "tools/call", params).await
}
