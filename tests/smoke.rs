//! A smoke test against a served endpoint: the deployed URL after `sam deploy` (the deploy
//! workflow), or the locally served function (`scripts/test`). Ignored by default; run with
//!
//! ```sh
//! MCP_SMOKE_URL=https://.../mcp MCP_SMOKE_TOKEN=eyJ... cargo test --test integration smoke -- --ignored
//! ```
//!
//! It follows what a real client does: it discovers the metadata from the 401 challenge,
//! then lists and calls a tool with the token, and checks the answers' shapes, not their
//! data.

use serde_json::{Value, json};

fn setting(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set for the smoke test"))
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.expect("the endpoint answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, headers, body)
}

#[tokio::test]
#[ignore = "needs MCP_SMOKE_URL and MCP_SMOKE_TOKEN: a served endpoint"]
async fn smoke_a_served_endpoint() {
    let url = setting("MCP_SMOKE_URL");
    let token = setting("MCP_SMOKE_TOKEN");
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(35))
        .build()
        .unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    // Without a token: 401 and a challenge naming the protected resource metadata.
    let (status, headers, _) = post(&client, &url, None, &ping).await;
    assert_eq!(status, 401);
    let challenge = headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .expect("a WWW-Authenticate challenge")
        .to_owned();
    let metadata_url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("resource_metadata in the challenge")
        .to_owned();
    let metadata = client
        .get(&metadata_url)
        .send()
        .await
        .expect("the metadata is served")
        .text()
        .await
        .unwrap_or_default();
    let metadata: Value = serde_json::from_str(&metadata).expect("the metadata is JSON");
    assert_eq!(metadata["resource"], Value::from(url.clone()), "{metadata}");
    assert!(
        metadata["authorization_servers"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );

    // GET is not a stream here.
    let get = client.get(&url).bearer_auth(&token).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 405);

    // With the token: the tools, and one bounded call.
    let (status, _, body) = post(&client, &url, Some(&token), &ping).await;
    assert_eq!(status, 200, "{body}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, body) = post(&client, &url, Some(&token), &list).await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"describe_data"), "{names:?}");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "describe_data", "arguments": {}}});
    let (status, _, body) = post(&client, &url, Some(&token), &call).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{body}");
    assert!(
        body["result"]["structuredContent"]["total_events"].is_number(),
        "{body}"
    );
    println!(
        "smoke: {url} answered 401 + metadata, 405 on GET, ping, tools/list ({} tools) and describe_data",
        names.len()
    );
}
