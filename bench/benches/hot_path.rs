//! The hot path without the network: HTTP request in, bearer token verified (RS256, ES256),
//! JSON-RPC parsed and dispatched, result serialised. `tools/list` over the six real tools,
//! and a `tools/call` whose tool returns 50 event-shaped rows (the database is left out:
//! `bench/serve` and `scripts/soak` measure with it). Before the timings, one request of
//! each kind is counted for heap allocations. The `lambda_event` cases take the same call
//! as the function does in Lambda: the API Gateway event's bytes parsed, the request made
//! from it, answered, and the response event written as `lambda_runtime` writes it
//! (`serde_json::to_vec`, which escapes the whole body once more as the event's `body`).
//!
//! `cargo bench -p bench`

// Benchmark setup may panic: a panic is how it reports a broken precondition.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::lambda_runtime::{Context, LambdaEvent};
use mcp::config::AuthSetting;
use mcp::{App, Config};
use mcp_auth::{AudienceBinding, AuthConfig, KeySet, KeysConfig};
use mcp_protocol::{CallToolResult, Outcome, Server, ToolDef, Tools};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

// Counted on the system allocator (stats_alloc can only wrap it in a static on stable
// Rust): allocation counts do not depend on the allocator; times here are glibc's, where
// the deployed function uses mimalloc (functions/mcp/src/main.rs).
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const ISSUER: &str = "https://issuer.example.com/";
const RESOURCE: &str = "https://mcp.example.com/mcp";

struct Key {
    alg: Algorithm,
    encoding: EncodingKey,
    kid: &'static str,
}

fn key(alg: Algorithm, kid: &'static str, args: &[&str]) -> Key {
    let out = Command::new("openssl")
        .arg("genpkey")
        .args(args)
        .output()
        .expect("openssl");
    let encoding = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&out.stdout),
        _ => EncodingKey::from_ec_pem(&out.stdout),
    }
    .expect("key");
    Key { alg, encoding, kid }
}

impl Key {
    fn jwk(&self) -> Value {
        let mut jwk =
            serde_json::to_value(Jwk::from_encoding_key(&self.encoding, self.alg).unwrap())
                .unwrap();
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        jwk
    }

    fn token(&self) -> String {
        self.tokens(1).remove(0)
    }

    /// `n` distinct tokens (they differ in `jti`).
    fn tokens(&self, n: usize) -> Vec<String> {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.into());
        let now = jiff_now();
        (0..n)
            .map(|i| {
                let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "bench", "iat": now, "exp": now + 3600,
                                    "scope": "events:read", "tenant_id": "tenant-a", "jti": format!("t{i}")});
                jsonwebtoken::encode(&header, &claims, &self.encoding).unwrap()
            })
            .collect()
    }
}

fn jiff_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn config(keys: &[&Key]) -> Config {
    let jwks = json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()}).to_string();
    let auth = AuthConfig {
        issuer: ISSUER.into(),
        resource: RESOURCE.into(),
        algorithms: vec![Algorithm::RS256, Algorithm::ES256],
        leeway: Duration::from_secs(30),
        max_lifetime: Duration::from_secs(86_400),
        require_access_token_type: false,
        tenant_claim: Some("tenant_id".into()),
        default_tenant: None,
        max_token_bytes: 8192,
        binding: AudienceBinding::Resource,
        keys: KeysConfig::Static(
            KeySet::from_json(jwks.as_bytes(), &[Algorithm::RS256, Algorithm::ES256]).unwrap(),
        ),
    };
    Config {
        auth: AuthSetting::Verify(Box::new(auth)),
        authorization_servers: vec![ISSUER.into()],
        ..Config::default()
    }
}

/// The six real tools over a store that is never connected (listing needs no database).
fn listing_server() -> Server {
    let db = mcp_db::Db::new(mcp_db::DbConfig {
        credentials: mcp_db::Credentials::Url("postgres://mcp_endpoint@127.0.0.1:1/none".into()),
        tls: mcp_db::TlsMode::Disable,
        connect_timeout: Duration::from_secs(1),
    });
    let store = Arc::new(mcp_tools::Store {
        db,
        cursor_key: mcp_tools::CursorKey::new(vec![1u8; 32]).unwrap(),
        statement_timeout: Duration::from_secs(5),
        links: mcp_tools::EventLinks::default(),
    });
    mcp::production_server(store, 256 * 1024).unwrap()
}

/// A tool answering 50 rows shaped like query_events' (payload left out, as by default).
fn rows_server() -> Server {
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({
            "id": 100_000 + i, "entity_id": "svc-checkout", "entity_type": "service",
            "event_type": "alert.fired", "severity": "warning",
            "occurred_at": "2026-11-30T12:00:00Z", "tags": ["region:eu", "team:payments"],
            "structured": {"alert": "p99 latency", "threshold_ms": 250, "observed_ms": 412},
            "ai_summary": "p99 latency of svc-checkout rose above 250 ms in eu-west-1 after deploy 4711."
        }))
        .collect();
    let page = json!({"events": rows, "count": 50, "limit": 50, "truncated": true, "next_cursor": "x".repeat(80)});
    let mut tools = Tools::new();
    tools
        .register(
            ToolDef::new(
                "query_events",
                "50 rows",
                json!({"type": "object", "properties": {
                    "entity_id": {"type": "string", "maxLength": 200},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 500}
                }}),
                move |_, _| {
                    let page = page.clone();
                    async move { Ok(Outcome::Complete(CallToolResult::structured(page))) }
                },
            )
            .scopes(["events:read"]),
        )
        .unwrap();
    Server::builder("bench", "1").tools(tools).build().unwrap()
}

fn request(token: &str, body: &str) -> lambda_http::Request {
    http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", format!("Bearer {token}"))
        .body(lambda_http::Body::from(body.to_owned()))
        .unwrap()
}

/// The API Gateway HTTP API (payload 2.0) event of a POST of `body` with `token`, as bytes,
/// the way the Runtime API hands it to the function.
fn event(token: &str, body: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "version": "2.0", "routeKey": "$default", "rawPath": "/mcp", "rawQueryString": "",
        "headers": {
            "accept": "application/json, text/event-stream",
            "authorization": format!("Bearer {token}"),
            "content-type": "application/json",
            "host": "127.0.0.1",
            "mcp-protocol-version": "2025-11-25",
            "user-agent": "hot-path",
        },
        "requestContext": {
            "accountId": "123456789012", "apiId": "local", "domainName": "127.0.0.1",
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "hot-path"},
            "requestId": "hot-path", "routeKey": "$default", "stage": "$default",
            "time": "05/Dec/2026:12:00:00 +0000", "timeEpoch": 1_796_472_000_000_u64,
        },
        "isBase64Encoded": false,
        "body": body,
    }))
    .unwrap()
}

/// One invocation as Lambda runs it, up to its response event: the event's bytes parsed
/// and answered, with the invocation's deadline 30 s away.
async fn answer_event(app: &App, event: &[u8]) -> ApiGatewayV2httpResponse {
    let payload: ApiGatewayV2httpRequest = serde_json::from_slice(event).unwrap();
    let mut context = Context::default();
    context.deadline = u64::try_from(jiff::Timestamp::now().as_millisecond()).unwrap() + 30_000;
    app.invoke(LambdaEvent::new(payload, context)).await
}

/// One invocation as Lambda runs it: answered, and the response event written back.
async fn invoke(app: &App, event: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&answer_event(app, event).await).unwrap()
}

fn hot_path(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rsa = key(
        Algorithm::RS256,
        "rsa",
        &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
    );
    let ec = key(
        Algorithm::ES256,
        "ec",
        &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    );
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_events","arguments":{"entity_id":"svc-checkout","limit":50}}}"#;
    let listing = App::new(config(&[&rsa, &ec]), listing_server());
    let calling = App::new(config(&[&rsa, &ec]), rows_server());
    let cases = [
        ("tools_list/rs256", &listing, rsa.token(), list),
        ("tools_list/es256", &listing, ec.token(), list),
        ("tools_call_50_rows/rs256", &calling, rsa.token(), call),
        ("tools_call_50_rows/es256", &calling, ec.token(), call),
    ];
    for (name, app, token, body) in &cases {
        let answer = rt.block_on(app.handle(request(token, body)));
        assert_eq!(answer.status(), 200, "{name}");
        let first: &[u8] = answer.body();
        let text = String::from_utf8_lossy(first);
        assert!(!text.contains("isError"), "{name}: {text}");
        let region = Region::new(GLOBAL);
        let answer = rt.block_on(app.handle(request(token, body)));
        let stats = region.change();
        let bytes: &[u8] = answer.body();
        println!(
            "{name}: {} allocations, {} bytes allocated, response {} bytes",
            stats.allocations,
            stats.bytes_allocated,
            bytes.len()
        );
    }
    for (name, app, token, body) in &cases {
        c.bench_function(&format!("{name}/remembered_token"), |b| {
            b.iter(|| rt.block_on(app.handle(request(token, body))));
        });
    }
    // Every request with a token the verifier has not seen: the full signature check. The
    // verifier remembers 64 tokens, so cycling through four times as many always misses.
    for (name, app, key, body) in [
        ("tools_call_50_rows/rs256", &calling, &rsa, call),
        ("tools_call_50_rows/es256", &calling, &ec, call),
    ] {
        let fresh = key.tokens(256);
        let mut next = fresh.iter().cycle();
        c.bench_function(&format!("{name}/new_token"), |b| {
            b.iter(|| {
                let token = next.next().map_or("", String::as_str);
                rt.block_on(app.handle(request(token, body)))
            });
        });
    }
    // The same call as Lambda runs it: against `tools_call_50_rows/rs256/remembered_token`,
    // what the event in and the response event out add.
    let lambda = event(&rsa.token(), call);
    let written = rt.block_on(invoke(&calling, &lambda));
    let response: Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    println!(
        "lambda_event/tools_call_50_rows/rs256: event {} bytes, response event {} bytes",
        lambda.len(),
        written.len()
    );
    c.bench_function(
        "lambda_event/tools_call_50_rows/rs256/remembered_token",
        |b| {
            b.iter(|| rt.block_on(invoke(&calling, &lambda)));
        },
    );
    // Of which: the response event written, alone (the same event as above).
    let response = rt.block_on(answer_event(&calling, &lambda));
    assert_eq!(serde_json::to_vec(&response).unwrap().len(), written.len());
    c.bench_function("lambda_event/response_event_written", |b| {
        b.iter(|| serde_json::to_vec(&response).unwrap());
    });
    c.bench_function("parse_body/tools_call", |b| {
        b.iter(|| mcp_protocol::jsonrpc::parse_body(call.as_bytes()));
    });
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
