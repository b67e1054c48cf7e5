//! Traces that join the caller's: the production function with traces on, a real database
//! through PgBouncer, and an OTLP/HTTP receiver on loopback that keeps what it is sent. The
//! spans must be named and described as the MCP semantic conventions say, hang under the
//! client's `_meta.traceparent` (or the Lambda trace header), and carry no secret.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lambda_http::RequestExt;
use mcp::{App, TelemetryConfig};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::db::{TestDb, app_recording_metrics, fixture, token};
use crate::support::http::{Answer, post_json, send};
use crate::support::site::{self, Reply};

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// An OTLP/HTTP receiver: every body posted to `/v1/traces`, parsed.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        site::serve_requests(listener, move |incoming| {
            let kept = kept.clone();
            async move {
                assert_eq!(incoming.path, "/v1/traces");
                assert_eq!(incoming.header("content-type"), Some("application/json"));
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_str(&incoming.body).unwrap());
                Some(Reply::json(200, "{}"))
            }
        });
        Self { url, bodies }
    }

    /// The spans of the export `n` (0-based), by name.
    fn spans(&self, n: usize) -> Vec<Value> {
        let bodies = self.bodies.lock().unwrap();
        let body = bodies
            .get(n)
            .unwrap_or_else(|| panic!("export {n} of {}", bodies.len()));
        body["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap()
            .clone()
    }

    fn raw(&self) -> String {
        serde_json::to_string(&*self.bodies.lock().unwrap()).unwrap()
    }

    fn exports(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }
}

fn app(db: &TestDb, receiver: &Receiver) -> App {
    let server = mcp::production_server(
        db.store("mcp_endpoint", Duration::from_secs(5)),
        mcp_protocol::server::DEFAULT_RESPONSE_BUDGET,
    )
    .unwrap();
    let (app, _) = app_recording_metrics(server);
    app.traced(TelemetryConfig {
        endpoint: format!("{}/v1/traces", receiver.url),
        service_name: "event-store-mcp-test".into(),
        timeout: Duration::from_secs(2),
    })
}

async fn request(app: &App, token: &str, body: &Value, xray: Option<&str>) -> Answer {
    let bearer = format!("Bearer {token}");
    let mut req = post_json(
        body,
        &[
            ("authorization", bearer.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
    );
    if let Some(xray) = xray {
        let mut ctx = lambda_http::Context::default();
        ctx.xray_trace_id = Some(xray.to_owned());
        req = req.with_lambda_context(ctx);
    }
    send(app, req).await
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name} in {spans:?}"))
}

#[tokio::test]
async fn a_tool_call_is_a_server_span_under_the_clients_traceparent_with_its_parts() {
    let db = fixture().await;
    let receiver = Receiver::start().await;
    let app = app(&db, &receiver);
    let acme = token(Some("acme"));
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "query_events", "arguments": {"limit": 3},
            "_meta": {"traceparent": format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01"), "tracestate": "vendor=1"}
        }
    });
    let a = request(&app, &acme, &body, None).await;
    assert_eq!(a.status, 200, "{a:?}");
    // The export is awaited before the answer leaves.
    assert_eq!(receiver.exports(), 1);
    let spans = receiver.spans(0);
    let server = named(&spans, "tools/call query_events");
    assert_eq!(server["kind"], 2, "SERVER");
    assert_eq!(server["traceId"], PARENT_TRACE);
    assert_eq!(server["parentSpanId"], PARENT_SPAN);
    assert_eq!(server["traceState"], "vendor=1");
    assert_eq!(
        attr(server, "mcp.method.name").unwrap()["stringValue"],
        "tools/call"
    );
    assert_eq!(
        attr(server, "gen_ai.tool.name").unwrap()["stringValue"],
        "query_events"
    );
    assert_eq!(
        attr(server, "gen_ai.operation.name").unwrap()["stringValue"],
        "execute_tool"
    );
    assert_eq!(
        attr(server, "mcp.protocol.version").unwrap()["stringValue"],
        "2025-11-25"
    );
    assert_eq!(
        attr(server, "http.response.status_code").unwrap()["intValue"],
        "200"
    );
    assert!(attr(server, "mcp.session.id").is_none(), "session-less");
    assert!(attr(server, "error.type").is_none());
    let server_id = server["spanId"].as_str().unwrap();
    assert_eq!(server_id.len(), 16);
    // Its parts: the token's check and the database read, children of the server span.
    let auth = named(&spans, "authenticate");
    let read = named(&spans, "SELECT query_events");
    for part in [auth, read] {
        assert_eq!(part["traceId"], PARENT_TRACE);
        assert_eq!(part["parentSpanId"], server_id);
        assert_ne!(part["spanId"], server_id);
    }
    assert_eq!(read["kind"], 3, "CLIENT");
    assert_eq!(
        attr(read, "db.system.name").unwrap()["stringValue"],
        "postgresql"
    );
    assert_eq!(
        attr(read, "db.response.returned_rows").unwrap()["intValue"],
        "4",
        "3 events and the probe row"
    );
    assert_eq!(attr(auth, "mcp.auth.outcome").unwrap()["stringValue"], "ok");
    let starts = |s: &Value| {
        s["startTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .unwrap()
    };
    let ends = |s: &Value| {
        s["endTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .unwrap()
    };
    assert!(starts(server) <= starts(read) && ends(read) <= ends(server));
    // No token, no SQL, no stored value in anything sent.
    let raw = receiver.raw();
    for secret in [
        acme.as_str(),
        "Bearer",
        "SELECT id",
        "tenant_id",
        "acme",
        "SECRET-GLOBEX",
    ] {
        assert!(!raw.contains(secret), "{secret} in {raw}");
    }
}

#[tokio::test]
async fn without_meta_the_lambda_trace_header_is_the_parent_and_refusals_are_errors() {
    let db = fixture().await;
    let receiver = Receiver::start().await;
    let app = app(&db, &receiver);
    let acme = token(Some("acme"));
    let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(request(&app, &acme, &list, Some(xray)).await.status, 200);
    let server = named(&receiver.spans(0), "tools/list").clone();
    assert_eq!(server["traceId"], "5759e988bd862e3fe1be46a994272793");
    assert_eq!(server["parentSpanId"], "53995c3f42cd8ad8");
    // No parent at all: a trace of its own.
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "daily_digest"}});
    assert_eq!(request(&app, &acme, &get, None).await.status, 200);
    let server = named(&receiver.spans(1), "prompts/get").clone();
    assert_eq!(server["traceId"].as_str().unwrap().len(), 32);
    assert!(server.get("parentSpanId").is_none(), "{server}");
    // A bad token: the server span fails with the HTTP status, the check's span says why.
    let refused = request(&app, "not-a-token", &list, None).await;
    assert_eq!(refused.status, 401);
    let spans = receiver.spans(2);
    assert_eq!(
        attr(named(&spans, "POST"), "error.type").unwrap()["stringValue"],
        "401"
    );
    let auth = named(&spans, "authenticate");
    assert_eq!(
        attr(auth, "error.type").unwrap()["stringValue"],
        "malformed"
    );
    assert_eq!(auth["status"]["code"], 2);
    // A JSON-RPC error names its code.
    let unknown =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}});
    request(&app, &acme, &unknown, None).await;
    let server = named(&receiver.spans(3), "tools/call").clone();
    assert_eq!(
        attr(&server, "error.type").unwrap()["stringValue"],
        "-32602"
    );
    // A caller that does not sample: nothing is sent.
    let unsampled = json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/list",
        "params": {"_meta": {"traceparent": format!("00-{PARENT_TRACE}-{PARENT_SPAN}-00")}}
    });
    assert_eq!(request(&app, &acme, &unsampled, None).await.status, 200);
    assert_eq!(receiver.exports(), 4);
}

#[tokio::test]
async fn a_collector_that_is_down_costs_the_request_nothing_but_the_wait() {
    let db = fixture().await;
    // Nothing listens on port 1.
    let receiver = Receiver {
        url: "http://127.0.0.1:1".into(),
        bodies: Arc::default(),
    };
    let app = app(&db, &receiver);
    let a = request(
        &app,
        &token(Some("acme")),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "describe_data"}}),
        None,
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_ne!(a.result()["isError"], true, "{a:?}");
}
