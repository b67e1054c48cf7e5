//! Any JSON the Lambda runtime could hand the function as an API Gateway HTTP API (v2) event,
//! through the function's own event conversion and the handler (the fixture build, auth off):
//! never a panic or a 500, and every answer with a body has a JSON body. This is the path
//! `lambda_http`'s conversion used to panic on (bad Host ports, `X-Forwarded-Proto: 1`, a
//! body marked base64 that is not).
#![no_main]

use std::sync::OnceLock;

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use lambda_http::{Context, LambdaEvent};
use libfuzzer_sys::fuzz_target;
use mcp::config::AuthSetting;
use mcp::{App, Config};

fn app() -> &'static (App, tokio::runtime::Runtime) {
    static A: OnceLock<(App, tokio::runtime::Runtime)> = OnceLock::new();
    A.get_or_init(|| {
        // Timers on, as the Lambda runtime has them.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let config = Config {
            auth: AuthSetting::Off,
            ..Config::default()
        };
        (App::new(config, conformance::fixture_server().unwrap()), rt)
    })
}

fuzz_target!(|data: &[u8]| {
    // What the runtime does with the invocation's payload: deserialize or report an error.
    let Ok(payload) = serde_json::from_slice::<ApiGatewayV2httpRequest>(data) else {
        return;
    };
    let (app, rt) = app();
    let out = rt.block_on(app.invoke(LambdaEvent::new(payload, Context::default())));
    assert_ne!(out.status_code, 500, "{out:?}");
    if let Some(body) = &out.body {
        let bytes: &[u8] = body;
        if !bytes.is_empty() && !out.is_base64_encoded {
            assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_ok(), "{out:?}");
        }
    }
});
