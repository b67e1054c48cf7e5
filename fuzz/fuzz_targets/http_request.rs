//! Any method, path, headers and body through the HTTP layer (the fixture build, auth off,
//! so the protocol headers are reached): never a panic or a 500, and every answer with a
//! body has a JSON body.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp::config::AuthSetting;
use mcp::{App, Config};

fn app() -> &'static (App, tokio::runtime::Runtime) {
    static A: OnceLock<(App, tokio::runtime::Runtime)> = OnceLock::new();
    A.get_or_init(|| {
        // Timers on, as the Lambda runtime has them: the engine races every tool body
        // against its deadline.
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
    // Layout: "METHOD PATH\n" then "name: value\n" lines, then "\n" and the body.
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let (method, path) = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .unwrap_or(("POST", "/mcp"));
    let mut builder = http::Request::builder().method(method).uri(path);
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            builder = builder.header(name.trim(), value.trim());
        }
    }
    let Ok(req) = builder.body(lambda_http::Body::from(body.as_bytes().to_vec())) else {
        return;
    };
    let (app, rt) = app();
    let resp = rt.block_on(app.handle(req));
    assert_ne!(resp.status().as_u16(), 500);
    let bytes: &[u8] = resp.body();
    if !bytes.is_empty() {
        assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_ok());
    }
});
