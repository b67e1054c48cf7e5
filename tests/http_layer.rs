//! HTTP rules that come before any JSON-RPC: methods, paths, headers, sizes.

use lambda_http::Body;
use mcp::{App, Config};
use serde_json::json;

use crate::support::http::{fixture_app, fixture_config, post, post_json, send};

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> lambda_http::Request {
    let mut b = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::Text(body.to_owned())).unwrap()
}

#[tokio::test]
async fn get_delete_and_other_methods_are_405_with_allow_post() {
    let app = fixture_app();
    for method in ["GET", "DELETE", "PUT", "PATCH"] {
        let a = send(
            &app,
            request(method, "/mcp", &[("accept", "text/event-stream")], ""),
        )
        .await;
        let message = a.assert_error(405, -32600);
        assert!(message.contains("POST"), "{message}");
        assert_eq!(a.header("allow"), Some("POST"), "{method}");
    }
}

#[tokio::test]
async fn other_paths_are_404_with_a_json_body() {
    let a = send(
        &fixture_app(),
        request(
            "POST",
            "/other",
            &[("content-type", "application/json")],
            "{}",
        ),
    )
    .await;
    let message = a.assert_error(404, -32600);
    assert!(message.contains("/mcp"), "{message}");
}

#[tokio::test]
async fn the_mcp_path_is_configurable() {
    let config = Config {
        mcp_path: "/v1/mcp".into(),
        ..fixture_config()
    };
    let app = App::new(config, conformance::fixture_server().unwrap());
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let headers = [("content-type", "application/json")];
    assert_eq!(
        send(&app, request("POST", "/v1/mcp", &headers, &ping))
            .await
            .status,
        200
    );
    assert_eq!(
        send(&app, request("POST", "/mcp", &headers, &ping))
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn accept_must_allow_json_and_content_type_must_be_json() {
    let app = fixture_app();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let a = send(
        &app,
        request(
            "POST",
            "/mcp",
            &[
                ("accept", "text/event-stream"),
                ("content-type", "application/json"),
            ],
            &ping,
        ),
    )
    .await;
    a.assert_error(406, -32600);
    for ok in ["application/json; charset=utf-8", "Application/JSON"] {
        let a = send(
            &app,
            request("POST", "/mcp", &[("content-type", ok)], &ping),
        )
        .await;
        assert_eq!(a.status, 200, "{ok}");
    }
    for bad in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/jsonx",
    ] {
        let a = send(
            &app,
            request("POST", "/mcp", &[("content-type", bad)], &ping),
        )
        .await;
        a.assert_error(415, -32600);
    }
    let a = send(&app, request("POST", "/mcp", &[], &ping)).await;
    a.assert_error(415, -32600);
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_whether_announced_or_not() {
    let config = Config {
        max_body_bytes: 64,
        ..fixture_config()
    };
    let app = App::new(config, conformance::fixture_server().unwrap());
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(100)
    );
    let a = send(&app, post(big.clone(), &[])).await;
    assert!(a.assert_error(413, -32600).contains("64"));
    let a = send(&app, post("{}", &[("content-length", "1000000")])).await;
    a.assert_error(413, -32600);
    let small = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(send(&app, post_json(&small, &[])).await.status, 200);
}

#[tokio::test]
async fn origin_and_host_guard_against_dns_rebinding() {
    let app = fixture_app();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for (headers, status) in [
        (vec![], 200),
        (vec![("origin", "http://localhost:6274")], 200),
        (vec![("origin", "http://127.0.0.1:9000")], 200),
        (vec![("origin", "http://evil.example.com")], 403),
        (vec![("origin", "null")], 403),
        // Values that only look like loopback: userinfo, text after an IPv6 literal, a Host
        // with `@` or a bad port (RFC 6454 origins and RFC 9110 hosts are parsed strictly).
        (
            vec![("origin", "http://127.0.0.1:9000@evil.example.com")],
            403,
        ),
        (vec![("origin", "http://[::1]evil.example.com")], 403),
        (vec![("origin", "http://localhost:6274/")], 403),
        (vec![("host", "localhost:9000@evil.example.com")], 403),
        (vec![("host", "[::1]evil.example.com")], 403),
        (vec![("host", "127.0.0.1:port")], 403),
        (vec![("host", "[::1]:9000")], 200),
        (vec![("host", "evil.example.com")], 403),
        (
            vec![
                ("host", "evil.example.com"),
                ("origin", "http://evil.example.com"),
            ],
            403,
        ),
    ] {
        let mut req = post_json(&ping, &[]);
        for (k, v) in &headers {
            req.headers_mut().insert(*k, v.parse().unwrap());
        }
        let a = send(&app, req).await;
        assert_eq!(a.status, status, "{headers:?}: {a:?}");
        if status == 403 {
            a.assert_error(403, -32600);
        }
    }
    let config = Config {
        allowed_origins: mcp::config::OriginPolicy::List(vec!["https://app.example".into()]),
        allowed_hosts: mcp::config::HostPolicy::List(vec!["mcp.example.com".into()]),
        ..fixture_config()
    };
    let app = App::new(config, conformance::fixture_server().unwrap());
    let mut req = post_json(&ping, &[("origin", "https://app.example")]);
    req.headers_mut()
        .insert("host", "mcp.example.com".parse().unwrap());
    assert_eq!(send(&app, req).await.status, 200);
    let a = send(&app, post_json(&ping, &[])).await;
    assert_eq!(a.status, 403, "127.0.0.1 is not in the host list: {a:?}");
}

#[tokio::test]
async fn no_error_ever_has_an_empty_body() {
    let app = fixture_app();
    let reqs = vec![
        request("GET", "/mcp", &[], ""),
        request("POST", "/nope", &[], ""),
        request("POST", "/mcp", &[("content-type", "text/plain")], "x"),
        post("", &[]),
        post("[", &[]),
        post_json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "nope"}),
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "nope"),
            ],
        ),
    ];
    for req in reqs {
        let a = send(&app, req).await;
        assert!(a.status >= 200 && a.status != 202);
        assert!(a.body["error"]["message"].is_string(), "{a:?}");
    }
}

/// OpenAI's domain verification: the configured token, as plain text, to anyone (it is read
/// before any sign-in), on GET only; 404 when none is configured; nothing else on the path.
#[tokio::test]
async fn the_openai_apps_challenge_serves_exactly_the_configured_token() {
    let path = "/.well-known/openai-apps-challenge";
    let config = Config {
        openai_apps_challenge: Some("oa-verify-3f9c2a".into()),
        ..crate::support::http::fixture_config()
    };
    let app = App::new(config, conformance::fixture_server().unwrap());
    let response = app.handle(request("GET", path, &[], "")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert_eq!(response.body().to_vec(), b"oa-verify-3f9c2a");
    for method in ["POST", "PUT", "DELETE"] {
        let a = send(
            &app,
            request(method, path, &[("content-type", "application/json")], "{}"),
        )
        .await;
        a.assert_error(405, -32600);
        assert_eq!(a.header("allow"), Some("GET"));
    }
    for near in [
        format!("{path}/x"),
        format!("{path}.txt"),
        "/.well-known/openai-apps".into(),
    ] {
        let a = send(&app, request("GET", &near, &[], "")).await;
        assert_eq!(a.status, 404, "{near}: {a:?}");
        assert!(!a.text_contains("oa-verify"), "{near}");
    }
    // The protected endpoint's host check still applies.
    let a = send(&app, request("GET", path, &[("host", "evil.example")], "")).await;
    assert_eq!(a.status, 403);

    let a = send(&fixture_app(), request("GET", path, &[], "")).await;
    let message = a.assert_error(404, -32600);
    assert!(message.contains("verification token"), "{message}");
}
