//! Any JSON the Lambda runtime could hand the OAuth bridge as an API Gateway HTTP API (v2)
//! event, through the shared event conversion (`mcp_lambda`) and the bridge's handler: never a
//! panic or a 500, and every answer is JSON, an HTML page, or an empty redirect. This is the
//! path `lambda_http`'s own conversion panicked on (a malformed `Host` or
//! `X-Forwarded-Proto`). Nothing leaves the machine: KMS and DynamoDB point at a closed
//! loopback port, the upstream issuer too, and an event naming a client metadata document
//! (the one thing the bridge fetches from a URL it is given) is skipped before the handler.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use lambda_http::{Context, LambdaEvent};
use libfuzzer_sys::fuzz_target;
use oauth::config::{CimdConfig, Lifetimes, UpstreamConfig};
use oauth::{App, Config, Secrets};

const CLOSED: &str = "http://127.0.0.1:1";

fn app() -> &'static (App, tokio::runtime::Runtime) {
    static A: OnceLock<(App, tokio::runtime::Runtime)> = OnceLock::new();
    A.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let kms = aws_sdk_kms::Client::from_conf(
            aws_sdk_kms::Config::builder()
                .behavior_version(aws_sdk_kms::config::BehaviorVersion::latest())
                .region(aws_sdk_kms::config::Region::new("us-east-1"))
                .endpoint_url(CLOSED)
                .credentials_provider(aws_sdk_kms::config::Credentials::new(
                    "fuzz", "fuzz", None, None, "fuzz",
                ))
                .build(),
        );
        let dynamodb = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::Config::builder()
                .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
                .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
                .endpoint_url(CLOSED)
                .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                    "fuzz", "fuzz", None, None, "fuzz",
                ))
                .build(),
        );
        let config = Config {
            issuer: "https://mcp.example.com".into(),
            resource: "https://mcp.example.com/mcp".into(),
            scopes: vec!["events:read".into()],
            group_scopes: Vec::new(),
            groups_claim: "cognito:groups".into(),
            upstream_tenant_claim: Some("custom:tenant_id".into()),
            default_tenant: None,
            tenant_claim: "tenant_id".into(),
            upstream: UpstreamConfig {
                issuer: CLOSED.into(),
                client_id: "bridge".into(),
                scopes: vec!["openid".into()],
                timeout: Duration::from_millis(200),
            },
            signing_keys: vec!["key".into()],
            table: "fuzz".into(),
            lifetimes: Lifetimes {
                access_token: Duration::from_secs(600),
                refresh_token: Duration::from_secs(86_400),
                code: Duration::from_secs(60),
                sign_in: Duration::from_secs(600),
                refresh_reuse: oauth::config::REFRESH_REUSE,
            },
            cimd: CimdConfig {
                allow_loopback: false,
                timeout: Duration::from_millis(200),
                extra_root_pem: None,
                fresh_for: Duration::from_secs(300),
                stale_for: Duration::from_secs(86_400),
            },
        };
        let secrets = Secrets {
            sealing_key: "fuzz-sealing-key-0123456789abcdefghijklmnop".into(),
            upstream_client_secret: "fuzz".into(),
        };
        let app = rt
            .block_on(async { App::new(config, secrets, kms, dynamodb) })
            .unwrap();
        (app, rt)
    })
}

/// Whether the event names a client by a URL (in its query or form body, decoded as the
/// bridge decodes them): `/oauth/authorize` would fetch it, reaching outside the machine.
/// (Every other fetch the bridge makes is named by a sealed value the fuzzer cannot forge.)
fn names_a_document(event: &ApiGatewayV2httpRequest) -> bool {
    let body = event.body.as_deref().unwrap_or_default();
    [event.raw_query_string.as_deref().unwrap_or_default(), body]
        .iter()
        .flat_map(|text| url::form_urlencoded::parse(text.as_bytes()))
        .any(|(name, value)| name == "client_id" && value.to_ascii_lowercase().contains("http"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = serde_json::from_slice::<ApiGatewayV2httpRequest>(data) else {
        return;
    };
    if names_a_document(&payload) {
        return;
    }
    let (app, rt) = app();
    let out = rt.block_on(app.invoke(LambdaEvent::new(payload, Context::default())));
    assert_ne!(out.status_code, 500, "{out:?}");
    let content_type = out
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if let Some(body) = &out.body {
        let bytes: &[u8] = body;
        if content_type.starts_with("application/json") {
            assert!(
                serde_json::from_slice::<serde_json::Value>(bytes).is_ok(),
                "{out:?}"
            );
        } else if !bytes.is_empty() {
            assert!(content_type.starts_with("text/html"), "{out:?}");
        }
    }
});
