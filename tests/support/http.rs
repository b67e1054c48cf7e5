use http::header::HeaderName;
use lambda_http::{Body, Request, Response};
use mcp::config::AuthSetting;
use mcp::{App, Config};
use serde_json::{Value, json};

pub(crate) const MODERN: &str = "2026-07-28";

/// The conformance fixture build as it runs in the suite: auth off.
pub(crate) fn fixture_config() -> Config {
    Config {
        auth: AuthSetting::Off,
        ..Config::default()
    }
}

pub(crate) fn fixture_app() -> App {
    App::new(
        fixture_config(),
        conformance::fixture_server().expect("fixtures register"),
    )
}

pub(crate) fn production_app() -> App {
    App::new(
        Config::default(),
        mcp::production_server(
            crate::support::db::unconnected_store(),
            mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
        )
        .expect("tools register"),
    )
}

/// A decoded response: status, headers, parsed JSON body (`Value::Null` when empty).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    pub(crate) raw: Vec<u8>,
    pub(crate) body: Value,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the raw body mentions `needle` anywhere (for what must never leak).
    pub(crate) fn text_contains(&self, needle: &str) -> bool {
        String::from_utf8_lossy(&self.raw).contains(needle)
    }

    pub(crate) fn error_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }

    pub(crate) fn result(&self) -> &Value {
        assert!(
            self.body.get("result").is_some(),
            "expected a result, got {self:?}"
        );
        &self.body["result"]
    }

    /// Asserts a JSON-RPC error with this status and code and returns its message.
    pub(crate) fn assert_error(&self, status: u16, code: i64) -> String {
        assert_eq!(self.status, status, "status: {self:?}");
        assert_eq!(self.error_code(), Some(code), "code: {self:?}");
        assert_eq!(self.body["jsonrpc"], "2.0", "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        self.body["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned()
    }
}

pub(crate) async fn send(app: &App, req: Request) -> Answer {
    decode(app.handle(req).await)
}

pub(crate) fn decode(resp: Response<Body>) -> Answer {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let raw: Vec<u8> = resp.body().to_vec();
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).expect("every non-empty body is JSON")
    };
    Answer {
        status,
        headers,
        raw,
        body,
    }
}

/// A POST to `/mcp` with the usual client headers plus `extra`.
pub(crate) fn post(body: impl Into<Vec<u8>>, extra: &[(&str, &str)]) -> Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1:9000")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in extra {
        builder = builder.header(HeaderName::from_bytes(k.as_bytes()).unwrap(), *v);
    }
    builder.body(Body::Binary(body.into())).unwrap()
}

pub(crate) fn post_json(body: &Value, extra: &[(&str, &str)]) -> Request {
    post(body.to_string(), extra)
}

/// A `tools/call` request body.
pub(crate) fn call(name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": args}})
}

/// `body` as a 2025-11-25 client sends it, with `token` as its bearer token.
pub(crate) async fn with_token(app: &App, token: &str, body: &Value) -> Answer {
    let bearer = format!("Bearer {token}");
    send(
        app,
        post_json(
            body,
            &[
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ],
        ),
    )
    .await
}

/// A handshake-era request at `version`.
pub(crate) async fn legacy(app: &App, version: &str, method: &str, params: Value) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    send(app, post_json(&body, &[("mcp-protocol-version", version)])).await
}

pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A well-formed 2026-07-28 request: headers derived from the body as a client would.
pub(crate) async fn modern(app: &App, method: &str, mut params: Value) -> Answer {
    if params.get("_meta").is_none() {
        params["_meta"] = modern_meta();
    }
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    send(app, post_json(&body, &headers)).await
}

/// Everything the code under test logs, from every test in this binary (a global
/// subscriber: per-thread subscribers miss events whose callsites another thread cached).
pub(crate) struct Logs(&'static std::sync::Mutex<Vec<u8>>);

impl Logs {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[derive(Clone, Copy)]
struct Sink(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn captured_logs() -> Logs {
    static BUFFER: std::sync::OnceLock<&'static std::sync::Mutex<Vec<u8>>> =
        std::sync::OnceLock::new();
    let buffer = *BUFFER.get_or_init(|| {
        let buffer: &'static std::sync::Mutex<Vec<u8>> = Box::leak(Box::default());
        let sink = Sink(buffer);
        tracing_subscriber::fmt()
            .json()
            .with_writer(move || sink)
            .with_max_level(tracing::Level::INFO)
            .init();
        buffer
    });
    Logs(buffer)
}
