//! Checks of the production function as `scripts/test` serves it with `cargo lambda watch`
//! (its credentials from Secrets Manager in moto, its database through the PgBouncer that
//! checks passwords, its issuer the development authorization server). Ignored by default;
//! `scripts/test` runs them with
//!
//! ```sh
//! MCP_SERVED_URL=http://127.0.0.1:9010/lambda-url/mcp/mcp MCP_SERVED_TOKEN=eyJ... \
//! MCP_SERVED_PROBE_TOKENS="eyJ... eyJ..." MCP_SERVED_APPS_CHALLENGE=... \
//! MCP_SERVED_LOG=/tmp/watch.log MCP_SERVED_RUNTIME_API=http://127.0.0.1:9010 \
//! cargo test --test integration served:: -- --ignored
//! ```
//!
//! Each test reads only the settings it needs; a missing one fails the test by name.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::{Client, Method, Response};
use serde_json::{Value, json};

fn setting(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set (scripts/test sets it)"))
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The function's base (its URL without the trailing `/mcp`), where its well-known paths are.
fn base(url: &str) -> &str {
    url.strip_suffix("/mcp").expect("an MCP URL ends in /mcp")
}

async fn rpc(token: Option<&str>, body: &Value) -> Response {
    let mut request = client()
        .post(setting("MCP_SERVED_URL"))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("the served function answers")
}

async fn json_of(response: Response) -> Value {
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn ping() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

#[tokio::test]
#[ignore = "needs a served function (scripts/test)"]
async fn auth_refuses_calls_without_a_valid_token_and_serves_the_metadata() {
    let token = setting("MCP_SERVED_TOKEN");
    let without = rpc(None, &ping()).await;
    assert_eq!(without.status(), 401);
    let challenge = without.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.starts_with("Bearer resource_metadata="),
        "{challenge}"
    );
    json_of(without).await;
    let forged = rpc(Some(&format!("{token}.x")), &ping()).await;
    assert_eq!(forged.status(), 401);
    json_of(forged).await;
    let with = rpc(Some(&token), &ping()).await;
    assert_eq!(with.status(), 200);
    json_of(with).await;
    let url = setting("MCP_SERVED_URL");
    let metadata = client()
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            base(&url)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), 200);
    assert_eq!(json_of(metadata).await["resource"], Value::from(url));
}

#[tokio::test]
#[ignore = "needs a served function (scripts/test)"]
async fn the_apps_challenge_is_served_as_plain_text_on_get_only() {
    let url = format!(
        "{}/.well-known/openai-apps-challenge",
        base(&setting("MCP_SERVED_URL"))
    );
    let got = client().get(&url).send().await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.headers()["content-type"].to_str().unwrap(),
        "text/plain; charset=utf-8"
    );
    assert_eq!(
        got.text().await.unwrap(),
        setting("MCP_SERVED_APPS_CHALLENGE")
    );
    let posted = client()
        .post(&url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 405);
    json_of(posted).await;
}

/// The sample data through the whole chain: token, endpoint, TLS PgBouncer, Postgres (RLS).
#[tokio::test]
#[ignore = "needs a served function (scripts/test)"]
async fn query_events_reads_the_sample_data_through_the_whole_chain() {
    let answer = rpc(
        Some(&setting("MCP_SERVED_TOKEN")),
        &call("query_events", json!({"limit": 3, "min_severity": "error"})),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let result = json_of(answer).await["result"].clone();
    assert_ne!(result["isError"], Value::from(true), "{result}");
    let s = &result["structuredContent"];
    assert_eq!(s["count"], 3, "{s}");
    assert_eq!(s["truncated"], true, "{s}");
    assert!(
        s["next_cursor"].as_str().is_some_and(|c| !c.is_empty()),
        "{s}"
    );
    for event in s["events"].as_array().unwrap() {
        assert!(
            ["error", "critical"].contains(&event["severity"].as_str().unwrap()),
            "{event}"
        );
    }
}

/// A page on another origin must not read the emulator: neither its runtime API (in-flight
/// invocations carry bearer tokens) nor the function (whose Origin check answers 403). No
/// answer may carry Access-Control-Allow-Origin for it; a loopback origin still gets one.
#[tokio::test]
#[ignore = "needs a served function (scripts/test)"]
async fn foreign_origins_get_no_cors_grant_from_the_emulator_or_the_function() {
    let url = setting("MCP_SERVED_URL");
    let preflight = |target: String, origin: &'static str, method: &'static str| async move {
        client()
            .request(Method::OPTIONS, target)
            .header("origin", origin)
            .header("access-control-request-method", method)
            .header("access-control-request-headers", "authorization")
            .send()
            .await
            .unwrap()
    };
    let runtime = format!(
        "{}/2018-06-01/runtime/invocation/next",
        setting("MCP_SERVED_RUNTIME_API")
    );
    for target in [runtime, url.clone()] {
        let answer = preflight(target.clone(), "https://evil.example", "GET").await;
        assert!(
            answer
                .headers()
                .get("access-control-allow-origin")
                .is_none(),
            "{target} answers a foreign-origin preflight: {:?}",
            answer.headers()
        );
    }
    let refused = preflight(url.clone(), "https://evil.example", "POST").await;
    assert_eq!(refused.status(), 403);
    let loopback = preflight(url, "http://localhost:6274", "POST").await;
    assert_eq!(
        loopback.headers()["access-control-allow-origin"],
        "http://localhost:6274"
    );
}

/// 40 calls of one tool per subject and minute (scripts/test serves the function with
/// RATE_LIMIT_PER_TOOL=40), counted in the emulator's DynamoDB: the 41st of a burst is a 429
/// with Retry-After, and another tool is still served. Each probe token is a subject of its
/// own. The windows are fixed minutes of the clock: a burst that starts in one and ends in the
/// next counts in two and proves nothing, so it is made again, once, by the next subject.
#[tokio::test]
#[ignore = "needs a served function (scripts/test)"]
async fn a_burst_over_a_tools_limit_is_refused_with_retry_after_and_other_tools_still_run() {
    let probes = setting("MCP_SERVED_PROBE_TOKENS");
    let minute = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 60
    };
    for (attempt, probe) in probes.split_whitespace().take(2).enumerate() {
        let first = minute();
        for i in 1..=40 {
            let answer = rpc(Some(probe), &call("describe_data", json!({}))).await;
            assert_eq!(answer.status(), 200, "call {i}");
        }
        let refused = rpc(Some(probe), &call("describe_data", json!({}))).await;
        if minute() != first {
            assert_eq!(attempt, 0, "two bursts each crossed a minute");
            continue;
        }
        assert_eq!(refused.status(), 429);
        let retry: u64 = refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry >= 1);
        let error = json_of(refused).await["error"].clone();
        assert_eq!(error["code"], -32600, "{error}");
        let data = &error["data"];
        assert_eq!(data["code"], "rate_limited", "{error}");
        assert_eq!(data["counter"], "tool", "{error}");
        assert_eq!(data["limit"], 40, "{error}");
        assert_eq!(data["remaining"], 0, "{error}");
        assert!(
            data["retryAfterMs"].as_u64().is_some_and(|ms| ms >= 1),
            "{error}"
        );
        // Another tool runs (its answer is an isError for the missing argument, in a 200).
        let other = rpc(Some(probe), &call("get_entity_state", json!({}))).await;
        assert_eq!(other.status(), 200);
        return;
    }
    panic!("MCP_SERVED_PROBE_TOKENS must hold two tokens of subjects of their own");
}

/// One cold-start line, naming what the function serves and where its limits count, and no
/// secret.
#[test]
#[ignore = "needs a served function (scripts/test)"]
fn one_cold_start_line_names_the_configuration_and_no_secret() {
    let log = std::fs::read_to_string(setting("MCP_SERVED_LOG")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| l.starts_with('{') && l.contains("\"cold start\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let r = lines
        .first()
        .expect("no cold start line in the served function's log");
    assert_eq!(r["tools"], 9, "{r}");
    assert_eq!(r["resources"], 3, "{r}");
    assert_eq!(r["prompts"], 3, "{r}");
    assert_eq!(r["rate_limits"], "mcp-rate-limits", "{r}");
    assert!(
        r["auth.issuer"]
            .as_str()
            .is_some_and(|i| i.starts_with("http://127.0.0.1:")),
        "{r}"
    );
    assert!(
        r["response_budget_bytes"].as_u64().is_some_and(|b| b > 0),
        "{r}"
    );
    assert!(r["version"].as_str().is_some_and(|v| !v.is_empty()), "{r}");
    for key in r.as_object().unwrap().keys() {
        let key = key.to_lowercase();
        assert!(!key.contains("secret") && !key.contains("key"), "{r}");
    }
}
