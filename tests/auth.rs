//! Bearer-token authentication end to end: real keys, real tokens, a real JWKS endpoint on
//! 127.0.0.1, through the same handler the Lambda runtime calls. Case ids refer to
//! `shared/research/security.md` parts B and C.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::support::auth::{
    ISSUER, JwksServer, Mode, RESOURCE, app, app_with, auth_config, claims, jwks, keys, now,
    static_keys,
};
use crate::support::http::{Answer, call, post, post_json, send, with_token};

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

fn tool_names(a: &Answer) -> Vec<String> {
    a.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts a 401 `invalid_token` whose description matches `reason`.
fn assert_invalid_token(a: &Answer, reason: &str, case: &str) {
    assert_eq!(a.status, 401, "{case}: {a:?}");
    assert_eq!(a.error_code(), Some(-32600), "{case}");
    let challenge = a.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{case}: {challenge}"
    );
    assert!(
        challenge.contains(&format!("error_description=\"{reason}\"")),
        "{case}: {challenge}"
    );
    assert!(
        challenge.contains("resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/prod/mcp\""),
        "{case}: {challenge}"
    );
}

#[tokio::test]
async fn valid_tokens_of_every_allowed_algorithm_are_accepted() {
    let k = keys();
    let app = app();
    for key in [&k.rsa, &k.ec, &k.ed] {
        let a = with_token(&app, &key.sign(&claims()), &call("whoami", json!({}))).await;
        assert_eq!(a.status, 200, "{:?}: {a:?}", key.alg);
        assert_eq!(
            a.result()["structuredContent"],
            json!({"subject": "alice", "tenant": "acme", "scopes": ["events:read"]})
        );
    }
    // The scheme is case-insensitive and extra spaces are tolerated (B-2).
    let token = k.rsa.sign(&claims());
    let a = send(
        &app,
        post_json(
            &tools_list(),
            &[("authorization", &format!("bearer  {token}"))],
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
}

#[tokio::test]
async fn every_method_needs_a_token_and_the_challenge_points_at_the_metadata() {
    let app = app();
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        tools_list(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}),
    ] {
        let a = send(&app, post_json(&body, &[])).await;
        assert_eq!(a.status, 401, "{body}: {a:?}");
        assert_eq!(
            a.header("www-authenticate"),
            Some(
                r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/prod/mcp", scope="events:admin events:read""#
            ),
        );
        assert!(
            a.body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Unauthorized")
        );
    }
    // A body that is not even JSON still gets 401 first: nothing is parsed for strangers.
    let a = send(&app, post("{", &[])).await;
    assert_eq!(a.status, 401);
    // B-1: other schemes and query-string tokens are not bearer credentials.
    let token = keys().rsa.sign(&claims());
    let a = send(
        &app,
        post_json(&tools_list(), &[("authorization", "Basic dXNlcjpwdw==")]),
    )
    .await;
    assert_eq!(a.status, 401);
    let mut req = post_json(&tools_list(), &[]);
    *req.uri_mut() = format!("/mcp?access_token={token}").parse().unwrap();
    assert_eq!(send(&app, req).await.status, 401);
}

#[tokio::test]
async fn two_authorization_headers_are_a_bad_request() {
    let token = keys().rsa.sign(&claims());
    let bearer = format!("Bearer {token}");
    let a = send(
        &app(),
        post_json(
            &tools_list(),
            &[
                ("authorization", bearer.as_str()),
                ("authorization", "Bearer junk"),
            ],
        ),
    )
    .await;
    assert_eq!(a.status, 400, "{a:?}");
    assert!(
        a.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_request\"")
    );
}

fn with(changes: Value) -> Value {
    let mut c = claims();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

#[tokio::test]
async fn claims_jsonwebtoken_leaves_optional_are_required() {
    let k = keys();
    let app = app();
    let now = now();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "B-16 expired an hour ago",
            with(json!({"exp": now - 3600, "iat": now - 4000, "nbf": now - 4000})),
            "the access token expired",
        ),
        (
            "B-16 expired beyond the leeway",
            with(json!({"exp": now - 31})),
            "the access token expired",
        ),
        (
            "B-17 exp missing",
            with(json!({"exp": null})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-17 exp as a string",
            with(json!({"exp": (now + 600).to_string()})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-17 exp never",
            with(json!({"exp": u64::MAX, "iat": null})),
            "the access token lives longer than this server accepts",
        ),
        (
            "lifetime over the maximum",
            with(json!({"exp": now + 7200, "iat": null})),
            "the access token lives longer than this server accepts",
        ),
        (
            "B-18 nbf in the future",
            with(json!({"nbf": now + 3600})),
            "the access token is not valid yet",
        ),
        (
            "B-18 nbf as a string",
            with(json!({"nbf": "99999999999"})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-19 iat in the future",
            with(json!({"iat": now + 3600})),
            "the access token is not valid yet",
        ),
        (
            "B-21 iss wrong",
            with(json!({"iss": "https://evil.example.com/"})),
            "the token was not issued by the expected issuer",
        ),
        (
            "B-21 iss without trailing slash",
            with(json!({"iss": "https://issuer.example.com"})),
            "the token was not issued by the expected issuer",
        ),
        (
            "B-21 iss missing",
            with(json!({"iss": null})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-21 iss as an array",
            with(json!({"iss": [ISSUER, "x"]})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-22 aud wrong",
            with(json!({"aud": "https://other.example.com/mcp"})),
            "the token was not issued for this resource",
        ),
        (
            "B-22 aud missing",
            with(json!({"aud": null})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-22 aud empty array",
            with(json!({"aud": []})),
            "the token was not issued for this resource",
        ),
        (
            "B-22 aud with trailing slash",
            with(json!({"aud": format!("{RESOURCE}/")})),
            "the token was not issued for this resource",
        ),
        (
            "B-22 aud as a number",
            with(json!({"aud": 42})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-24 sibling resource",
            with(json!({"aud": ["https://mcp.example.com/prod/other"]})),
            "the token was not issued for this resource",
        ),
        (
            "B-27 sub missing",
            with(json!({"sub": null})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-27 sub as a number",
            with(json!({"sub": 7})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-27 sub empty",
            with(json!({"sub": ""})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-27 sub with a control character",
            with(json!({"sub": "ali\u{0}ce"})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "tenant claim missing",
            with(json!({"tenant_id": null})),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "tenant claim not a string",
            with(json!({"tenant_id": ["acme"]})),
            "the token lacks a required claim or has one of the wrong type",
        ),
    ];
    for (case, claims, reason) in cases {
        let a = with_token(&app, &k.rsa.sign(&claims), &tools_list()).await;
        assert_invalid_token(&a, reason, case);
    }
    // B-23, pinned: any-of. A token for us and another resource is ours; case in scheme and
    // host does not matter (MCP authorization §Canonical Server URI).
    for aud in [
        json!([RESOURCE, "https://other.example.com/"]),
        json!("HTTPS://MCP.EXAMPLE.COM/prod/mcp"),
    ] {
        let a = with_token(&app, &k.rsa.sign(&with(json!({"aud": aud}))), &tools_list()).await;
        assert_eq!(a.status, 200, "{aud}: {a:?}");
    }
    // Inside the leeway is accepted (documented: 30 s by default).
    let a = with_token(
        &app,
        &k.rsa.sign(&with(json!({"exp": now - 5}))),
        &tools_list(),
    )
    .await;
    assert_eq!(a.status, 200);
}

#[tokio::test]
async fn forged_and_malformed_tokens_are_refused() {
    let k = keys();
    let app = app();
    let good = k.rsa.sign(&claims());
    let payload = serde_json::to_string(&claims()).unwrap();
    let b64 = |s: &str| URL_SAFE_NO_PAD.encode(s);
    // Change one character in the middle of the signature: it still decodes, to other bytes.
    let mut tampered = good.clone();
    let at = tampered.len() - 20;
    let c = tampered.as_bytes()[at];
    tampered.replace_range(at..=at, if c == b'A' { "B" } else { "A" });
    let hs256_with_public_key = {
        let public_pem = k.rsa.jwk();
        let key = EncodingKey::from_secret(public_pem["n"].as_str().unwrap().as_bytes()).unwrap();
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("rsa-1".into());
        jsonwebtoken::encode(&header, &claims(), &key).unwrap()
    };
    let mut no_kid_header = Header::new(Algorithm::RS256);
    no_kid_header.kid = None;
    let no_kid = jsonwebtoken::encode(&no_kid_header, &claims(), &k.rsa.encoding).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "B-5 alg none",
            format!(
                "{}.{}.",
                b64(r#"{"alg":"none","kid":"rsa-1"}"#),
                b64(&payload)
            ),
            "the access token is malformed",
        ),
        (
            "B-5 alg None",
            format!(
                "{}.{}.",
                b64(r#"{"alg":"None","kid":"rsa-1"}"#),
                b64(&payload)
            ),
            "the access token is malformed",
        ),
        (
            "B-5 alg NONE",
            format!(
                "{}.{}.",
                b64(r#"{"alg":"NONE","kid":"rsa-1"}"#),
                b64(&payload)
            ),
            "the access token is malformed",
        ),
        (
            "B-5 two segments",
            format!(
                "{}.{}",
                b64(r#"{"alg":"RS256","kid":"rsa-1"}"#),
                b64(&payload)
            ),
            "the access token is malformed",
        ),
        (
            "B-6 HS256 keyed with the public key",
            hs256_with_public_key,
            "the token's signing algorithm is not accepted",
        ),
        (
            "B-8 signed by an impostor key with a real kid",
            k.rsa_impostor.sign(&claims()),
            "the token signature is invalid",
        ),
        (
            "tampered signature",
            tampered,
            "the token signature is invalid",
        ),
        (
            "B-9 unknown kid",
            k.rsa_next.sign(&claims()),
            "the token was signed by an unknown key",
        ),
        (
            "B-10 no kid",
            no_kid,
            "the token header has no key id (kid)",
        ),
        (
            "B-11 kid path traversal",
            k.rsa
                .sign_raw(r#"{"alg":"RS256","kid":"../../dev/null"}"#, &payload),
            "the token was signed by an unknown key",
        ),
        (
            "B-13 crit header",
            k.rsa
                .sign_raw(r#"{"alg":"RS256","kid":"rsa-1","crit":["exp"]}"#, &payload),
            "the access token is malformed",
        ),
        (
            "B-26 duplicate sub",
            k.rsa.sign_raw(
                r#"{"alg":"RS256","kid":"rsa-1"}"#,
                &payload.replacen('{', r#"{"sub":"mallory","#, 1),
            ),
            "the access token is malformed",
        ),
        (
            "B-26 duplicate custom claim",
            k.rsa.sign_raw(
                r#"{"alg":"RS256","kid":"rsa-1"}"#,
                &payload.replacen('{', r#"{"tenant_id":"other","#, 1),
            ),
            "the access token is malformed",
        ),
        (
            "B-26 duplicate alg",
            k.rsa
                .sign_raw(r#"{"alg":"RS256","alg":"HS256","kid":"rsa-1"}"#, &payload),
            "the access token is malformed",
        ),
        (
            "B-28 padded base64",
            good.replacen('.', "=.", 1),
            "the access token is malformed",
        ),
        (
            "B-28 four segments",
            format!("{good}.x"),
            "the access token is malformed",
        ),
        (
            "B-28 payload is an array",
            k.rsa.sign_raw(r#"{"alg":"RS256","kid":"rsa-1"}"#, "[1,2]"),
            "the token lacks a required claim or has one of the wrong type",
        ),
        (
            "B-29 deep nesting",
            k.rsa.sign_raw(
                r#"{"alg":"RS256","kid":"rsa-1"}"#,
                &format!("{}{}", "[".repeat(1000), "]".repeat(1000)),
            ),
            "the access token is malformed",
        ),
        (
            "B-30 signed with a 1024-bit RSA key from the JWKS",
            k.rsa_weak.sign(&claims()),
            "the token was signed by an unknown key",
        ),
        (
            "B-4 oversized",
            format!("{good}{}", "A".repeat(9000)),
            "the access token is too large",
        ),
        (
            "B-7 RS512 header for an RS256 key",
            {
                let mut h = Header::new(Algorithm::RS512);
                h.kid = Some("rsa-1".into());
                jsonwebtoken::encode(&h, &claims(), &k.rsa.encoding).unwrap()
            },
            "the token's signing algorithm is not accepted",
        ),
    ];
    for (case, token, reason) in cases {
        let a = with_token(&app, &token, &tools_list()).await;
        assert_invalid_token(&a, reason, case);
    }
    // B-14/B-15: jku, x5u and a foreign iss are never fetched: the JWKS endpoint the token
    // points at receives no request.
    let canary = JwksServer::start(Mode::Serve(jwks(&[&k.rsa_next]))).await;
    let header = format!(
        r#"{{"alg":"RS256","kid":"rsa-next","jku":"{0}","x5u":"{0}"}}"#,
        canary.url
    );
    let a = with_token(&app, &k.rsa_next.sign_raw(&header, &payload), &tools_list()).await;
    assert_eq!(a.status, 401);
    let a = with_token(
        &app,
        &k.rsa.sign(&with(json!({"iss": canary.url}))),
        &tools_list(),
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(canary.hits(), 0);
}

#[tokio::test]
async fn at_jwt_type_is_enforced_when_configured() {
    let k = keys();
    let mut config = auth_config(static_keys(&[&k.rsa]));
    config.require_access_token_type = true;
    let app = app_with(config);
    let a = with_token(&app, &k.rsa.sign(&claims()), &tools_list()).await;
    assert_invalid_token(&a, "the token is not an access token (typ)", "B-25 typ JWT");
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    header.typ = Some("at+jwt".into());
    let token = jsonwebtoken::encode(&header, &claims(), &k.rsa.encoding).unwrap();
    assert_eq!(with_token(&app, &token, &tools_list()).await.status, 200);
}

#[tokio::test]
async fn tools_list_shows_only_what_the_scopes_allow_and_calls_beyond_them_are_403() {
    let k = keys();
    let app = app();
    let reader = k.rsa.sign(&claims());
    let a = with_token(&app, &reader, &tools_list()).await;
    assert_eq!(tool_names(&a), ["whoami", "read_events"]);
    let admin = k
        .rsa
        .sign(&with(json!({"scope": "events:read events:admin"})));
    let a = with_token(&app, &admin, &tools_list()).await;
    assert_eq!(tool_names(&a), ["whoami", "read_events", "purge_cache"]);
    let a = with_token(&app, &admin, &call("purge_cache", json!({}))).await;
    assert_eq!(a.result()["content"][0]["text"], "purged");

    // C-1: refused with a step-up challenge; the tool does not run.
    let denied = with_token(&app, &reader, &call("purge_cache", json!({}))).await;
    assert_eq!(denied.status, 403, "{denied:?}");
    assert_eq!(denied.body["id"], 2);
    assert_eq!(
        denied.header("www-authenticate"),
        Some(
            r#"Bearer error="insufficient_scope", error_description="the access token lacks a scope this call needs", scope="events:admin events:read", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/prod/mcp""#
        )
    );
    // C-3: a tool that does not exist is refused identically: no oracle for hidden names.
    let unknown = with_token(&app, &reader, &call("drop_database", json!({}))).await;
    assert_eq!(
        (
            unknown.status,
            &unknown.body,
            unknown.header("www-authenticate")
        ),
        (
            denied.status,
            &denied.body,
            denied.header("www-authenticate")
        )
    );
    // In a 2025-03-26 batch the same refusal carries the same status and challenge, so a
    // client can step up however it sent the call; the other entries are still answered.
    let bearer = format!("Bearer {reader}");
    let batch = json!([call("purge_cache", json!({})), tools_list()]);
    let batched = send(
        &app,
        post_json(
            &batch,
            &[
                ("authorization", bearer.as_str()),
                ("mcp-protocol-version", "2025-03-26"),
            ],
        ),
    )
    .await;
    assert_eq!(batched.status, 403, "{batched:?}");
    assert_eq!(
        batched.header("www-authenticate"),
        denied.header("www-authenticate")
    );
    let entries = batched.body.as_array().unwrap();
    assert_eq!(entries[0]["id"], 2);
    assert_eq!(entries[0]["error"]["code"], -32600);
    assert_eq!(entries[1]["id"], 1);
    assert!(entries[1]["result"]["tools"].is_array(), "{batched:?}");
    // A caller who holds every scope learns that the tool does not exist.
    let a = with_token(&app, &admin, &call("drop_database", json!({}))).await;
    assert_eq!(
        a.assert_error(200, -32602),
        "Invalid params: Unknown tool: drop_database"
    );
}

#[tokio::test]
async fn scopes_are_matched_exactly_and_dirty_ones_grant_nothing() {
    let k = keys();
    let app = app();
    for scope in [
        json!("events:read events:admin\u{0}"),
        json!(["events:read", "ad\u{0}min", "events:admin\n"]),
        json!("events:read Events:Admin"),
        json!("events:read events:аdmin"),
    ] {
        let claim = if scope.is_array() { "scp" } else { "scope" };
        let token = k.rsa.sign(&with(json!({"scope": null, claim: scope})));
        let a = with_token(&app, &token, &tools_list()).await;
        assert_eq!(tool_names(&a), ["whoami", "read_events"], "{scope}");
    }
    // scp as an array grants like scope (C-8).
    let token = k.rsa.sign(&with(
        json!({"scope": null, "scp": ["events:read", "events:admin"]}),
    ));
    assert_eq!(
        tool_names(&with_token(&app, &token, &tools_list()).await).len(),
        3
    );
}

#[tokio::test]
async fn owner_arguments_must_be_the_callers_own() {
    let k = keys();
    let app = app();
    let token = k.rsa.sign(&claims());
    let a = with_token(&app, &token, &call("whoami", json!({"tenant": "acme"}))).await;
    assert_eq!(a.result()["structuredContent"]["tenant"], "acme");
    for other in [
        json!("globex"),
        json!("ACME"),
        json!(" acme"),
        json!(42),
        json!(null),
    ] {
        let a = with_token(&app, &token, &call("whoami", json!({"tenant": other}))).await;
        assert_eq!(a.result()["isError"], true, "{other}");
        assert!(
            a.result()["content"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("Not permitted"),
            "{other}"
        );
    }
}

#[tokio::test]
async fn protected_resource_metadata_is_served_without_a_token() {
    let app = app();
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let req = http::Request::builder()
            .method("GET")
            .uri(path)
            .body(lambda_http::Body::Empty)
            .unwrap();
        let a = send(&app, req).await;
        assert_eq!(a.status, 200, "{path}: {a:?}");
        assert_eq!(
            a.body,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["events:admin", "events:read"],
                "bearer_methods_supported": ["header"]
            })
        );
    }
    let req = http::Request::builder()
        .method("POST")
        .uri("/.well-known/oauth-protected-resource")
        .body(lambda_http::Body::Empty)
        .unwrap();
    let a = send(&app, req).await;
    assert_eq!(a.status, 405);
    assert_eq!(a.header("allow"), Some("GET"));
}

#[tokio::test]
async fn browsers_get_preflight_answers_and_can_read_the_challenge() {
    let app = app();
    let req = http::Request::builder()
        .method("OPTIONS")
        .uri("/mcp")
        .header("origin", "http://localhost:6274")
        .header("access-control-request-method", "POST")
        .body(lambda_http::Body::Empty)
        .unwrap();
    let a = send(&app, req).await;
    assert_eq!(a.status, 204);
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        a.header("access-control-allow-headers")
            .unwrap()
            .contains("Authorization")
    );
    let a = send(
        &app,
        post_json(&tools_list(), &[("origin", "http://localhost:6274")]),
    )
    .await;
    assert_eq!(a.status, 401);
    assert!(
        a.header("access-control-expose-headers")
            .unwrap()
            .contains("WWW-Authenticate")
    );
    assert!(
        a.header("access-control-expose-headers")
            .unwrap()
            .contains("Mcp-Protocol-Version")
    );
}

#[tokio::test]
async fn remote_keys_are_fetched_once_cached_and_refreshed_at_most_once_per_interval() {
    let k = keys();
    let issuer = JwksServer::start(Mode::Serve(jwks(&[&k.rsa]))).await;
    let app = app_with(auth_config(issuer.remote(|_| {})));
    assert_eq!(
        issuer.hits(),
        0,
        "keys are fetched lazily, not at cold start"
    );
    for _ in 0..3 {
        assert_eq!(
            with_token(&app, &k.rsa.sign(&claims()), &tools_list())
                .await
                .status,
            200
        );
    }
    assert_eq!(issuer.hits(), 1, "warm invocations reuse the cached keys");
    // B-9: unknown kids right after a fetch cost nothing: at most one refresh per interval
    // (60 s by default), however many forged kids arrive.
    for _ in 0..5 {
        let a = with_token(&app, &k.rsa_next.sign(&claims()), &tools_list()).await;
        assert_eq!(a.status, 401);
    }
    assert_eq!(issuer.hits(), 1);
}

#[tokio::test]
async fn a_rotated_key_is_picked_up_by_one_refresh() {
    let k = keys();
    let issuer = JwksServer::start(Mode::Serve(jwks(&[&k.rsa]))).await;
    let app = app_with(auth_config(
        issuer.remote(|r| r.refresh_min_interval = std::time::Duration::ZERO),
    ));
    assert_eq!(
        with_token(&app, &k.rsa.sign(&claims()), &tools_list())
            .await
            .status,
        200
    );
    // B-33: the issuer adds rsa-2 and signs with it.
    issuer.set(Mode::Serve(jwks(&[&k.rsa, &k.rsa_next])));
    assert_eq!(
        with_token(&app, &k.rsa_next.sign(&claims()), &tools_list())
            .await
            .status,
        200
    );
    assert_eq!(issuer.hits(), 2);
}

#[tokio::test]
async fn a_remembered_token_is_refused_once_its_key_is_rotated_out() {
    let k = keys();
    let issuer = JwksServer::start(Mode::Serve(jwks(&[&k.rsa]))).await;
    let app = app_with(auth_config(issuer.remote(|r| {
        r.ttl = std::time::Duration::ZERO;
        r.refresh_min_interval = std::time::Duration::ZERO;
    })));
    let token = k.rsa.sign(&claims());
    for _ in 0..2 {
        let a = with_token(&app, &token, &tools_list()).await;
        assert_eq!(a.status, 200, "{a:?}");
    }
    // The verifier remembers the token, but not past a change of the issuer's keys.
    issuer.set(Mode::Serve(jwks(&[&k.rsa_next])));
    let a = with_token(&app, &token, &tools_list()).await;
    assert_invalid_token(
        &a,
        "the token was signed by an unknown key",
        "a remembered token whose key was rotated out",
    );
}

#[tokio::test]
async fn stale_keys_serve_while_the_issuer_is_down_then_fail_closed() {
    let k = keys();
    let issuer = JwksServer::start(Mode::Serve(jwks(&[&k.rsa]))).await;
    let app = app_with(auth_config(issuer.remote(|r| {
        r.ttl = std::time::Duration::ZERO;
        r.refresh_min_interval = std::time::Duration::ZERO;
    })));
    assert_eq!(
        with_token(&app, &k.rsa.sign(&claims()), &tools_list())
            .await
            .status,
        200
    );
    // B-31: the issuer breaks in every way; the stale keys keep working.
    for mode in [
        Mode::Status(500),
        Mode::Serve("<html>".into()),
        Mode::Serve(r#"{"keys":[]}"#.into()),
    ] {
        issuer.set(mode);
        assert_eq!(
            with_token(&app, &k.rsa.sign(&claims()), &tools_list())
                .await
                .status,
            200
        );
    }
    assert_eq!(issuer.hits(), 4, "each stale use tried one refresh");

    // Past the stale window nothing is trusted any more.
    let issuer = JwksServer::start(Mode::Serve(jwks(&[&k.rsa]))).await;
    let app = app_with(auth_config(issuer.remote(|r| {
        r.ttl = std::time::Duration::ZERO;
        r.max_stale = std::time::Duration::ZERO;
        r.refresh_min_interval = std::time::Duration::ZERO;
    })));
    assert_eq!(
        with_token(&app, &k.rsa.sign(&claims()), &tools_list())
            .await
            .status,
        200
    );
    issuer.set(Mode::Status(503));
    let a = with_token(&app, &k.rsa.sign(&claims()), &tools_list()).await;
    assert_eq!(a.status, 503, "{a:?}");
}

#[tokio::test]
async fn an_unreachable_issuer_at_cold_start_is_503_then_recovers() {
    let k = keys();
    let token = k.rsa.sign(&claims());
    for broken in [
        Mode::Status(500),
        Mode::Serve("not json".into()),
        Mode::Hang,
    ] {
        let issuer = JwksServer::start(broken).await;
        let app = app_with(auth_config(issuer.remote(|r| {
            r.refresh_min_interval = std::time::Duration::ZERO;
            r.fetch_timeout = std::time::Duration::from_millis(300);
        })));
        // B-32: no keys, no decision: 503 with Retry-After, never a tool.
        let a = with_token(&app, &token, &call("whoami", json!({}))).await;
        assert_eq!(a.status, 503, "{a:?}");
        assert_eq!(a.header("retry-after"), Some("5"));
        assert!(a.header("www-authenticate").is_none());
        issuer.set(Mode::Serve(jwks(&[&k.rsa])));
        assert_eq!(with_token(&app, &token, &tools_list()).await.status, 200);
    }
}

#[tokio::test]
async fn oidc_discovery_finds_the_jwks() {
    let k = keys();
    let jwks_server = JwksServer::start(Mode::Serve(jwks(&[&k.ec]))).await;
    let discovery = JwksServer::start(Mode::Serve(
        json!({"issuer": "x", "jwks_uri": jwks_server.url}).to_string(),
    ))
    .await;
    let issuer_url = discovery.url.trim_end_matches("/jwks.json").to_owned();
    let mut config = auth_config(discovery.remote(|r| r.jwks_url = None));
    config.issuer = issuer_url.clone();
    let app = app_with(config);
    let token = k.ec.sign(&with(json!({"iss": issuer_url})));
    assert_eq!(with_token(&app, &token, &tools_list()).await.status, 200);
    assert_eq!((discovery.hits(), jwks_server.hits()), (1, 1));
}

#[tokio::test]
async fn logs_carry_reasons_and_hashed_subjects_never_tokens_or_subjects() {
    let logs = crate::support::http::captured_logs();
    let k = keys();
    let app = app();
    let subject = "log-test-subject-7f3a";
    let good = k.rsa.sign(&with(json!({"sub": subject})));
    let expired = k
        .rsa
        .sign(&with(json!({"sub": subject, "exp": now() - 3600})));
    with_token(&app, &good, &call("read_events", json!({}))).await;
    with_token(&app, &expired, &tools_list()).await;
    let logs = logs.text();
    let hash = mcp_auth::Principal {
        subject: subject.into(),
        tenant: None,
        scopes: vec![],
    }
    .subject_hash();
    assert!(logs.contains(&format!(r#""caller":"{hash}""#)), "{logs}");
    assert!(logs.contains(r#""auth.reason":"expired""#), "{logs}");
    assert!(logs.contains(r#""tool.name":"read_events""#), "{logs}");
    for secret in [
        good.rsplit('.').next().unwrap(),
        expired.rsplit('.').next().unwrap(),
        good.split('.').nth(1).unwrap(),
        subject,
    ] {
        assert!(!logs.contains(secret), "logs leak {secret}");
    }
}

#[tokio::test]
async fn cognito_access_tokens_are_bound_by_client_id_and_token_use() {
    let k = keys();
    let mut config = auth_config(static_keys(&[&k.rsa]));
    config.binding = mcp_auth::AudienceBinding::CognitoClientIds(vec!["app-client-1".into()]);
    let app = app_with(config);
    let cognito = |changes: Value| {
        let mut c = with(json!({"aud": null, "client_id": "app-client-1", "token_use": "access"}));
        for (key, v) in changes.as_object().unwrap() {
            c[key] = v.clone();
        }
        k.rsa.sign(&c)
    };
    assert_eq!(
        with_token(&app, &cognito(json!({})), &tools_list())
            .await
            .status,
        200
    );
    let a = with_token(&app, &cognito(json!({"token_use": "id"})), &tools_list()).await;
    assert_invalid_token(
        &a,
        "the token is not an access token (typ)",
        "Cognito ID token",
    );
    let a = with_token(
        &app,
        &cognito(json!({"client_id": "other-app"})),
        &tools_list(),
    )
    .await;
    assert_invalid_token(
        &a,
        "the token was not issued for this resource",
        "another app client",
    );
}
