//! The OAuth bridge's own consent step, through `App::handle` as in `tests/bridge.rs`: the
//! confused-deputy attack (a client someone else registered, a user with an upstream session,
//! no page) ends at the bridge's page; the page names the client, where its redirect goes and
//! the scopes, and cannot be framed or cached; Approve and Deny count only from the browser that
//! was shown the page; approvals are remembered per client in that browser only; the upstream
//! `state` is used once, in that browser. The same page is clicked in chromium in scripts/test
//! (tests/clients/bridge_consent.mjs).

use serde_json::json;

use crate::support::auth::keys;
use crate::support::bridge::{BRIDGE, Harness, REDIRECT, Seen, consent_form};

const EVIL_REDIRECT: &str = "https://attacker.example/steal";

fn header(seen: &Seen, name: &str) -> String {
    seen.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The consent page: 200, HTML, no redirect, and the form.
fn assert_consent_page(seen: &Seen, case: &str) {
    assert_eq!(seen.status, 200, "{case}: {seen:?}");
    assert!(seen.location.is_none(), "{case}: {seen:?}");
    assert!(seen.content_type.starts_with("text/html"), "{case}");
    assert!(
        seen.body.contains(&format!(
            "<form method=\"post\" action=\"{BRIDGE}/oauth/consent\">"
        )),
        "{case}: {}",
        seen.body
    );
}

async fn register(h: &Harness, metadata: serde_json::Value) -> String {
    let seen = h.register(&metadata).await;
    assert_eq!(seen.status, 201, "{seen:?}");
    seen.json()["client_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_client_someone_else_registered_meets_the_consent_page_not_the_upstream() {
    let h = Harness::new().await;
    // The user has used the bridge before: approved their own client, signed in upstream.
    let own = h.client().await;
    h.code(&own).await;
    // An attacker registers a client of their own and sends the user its authorization link.
    let attacker = register(
        &h,
        json!({"client_name": "Claude", "redirect_uris": [EVIL_REDIRECT]}),
    )
    .await;
    let seen = h
        .authorize(&attacker, &[("redirect_uri", Some(EVIL_REDIRECT))])
        .await;
    assert_consent_page(&seen, "the attacker's link");
    // The page says who is asking (a name nobody verified) and where the answer goes.
    assert!(seen.body.contains("is not verified"), "{}", seen.body);
    assert!(
        seen.body
            .contains("<strong class=\"host\">attacker.example</strong>")
    );
    assert!(seen.body.contains(EVIL_REDIRECT));
    // Deny: the client hears access_denied with its state, and nothing went upstream.
    let denied = h.decide(&seen, "deny").await;
    assert_eq!(denied.status, 303, "{denied:?}");
    let location = denied.location.clone().unwrap();
    assert!(
        location.starts_with(&format!("{EVIL_REDIRECT}?")),
        "{location}"
    );
    assert_eq!(denied.param("error").as_deref(), Some("access_denied"));
    assert_eq!(denied.param("state").as_deref(), Some("client-state-1"));
    assert_eq!(denied.param("iss").as_deref(), Some(BRIDGE));
    assert_eq!(denied.param("code"), None);
    assert_eq!(
        h.upstream.exchanges.lock().unwrap().len(),
        1,
        "only the user's own sign-in"
    );
}

#[tokio::test]
async fn the_page_names_the_client_its_redirect_and_scopes_and_cannot_be_framed_or_cached() {
    let h = Harness::new().await;
    let client_id = register(
        &h,
        json!({"client_name": "<script>alert(1)</script>\"Evil\" & co\u{202e}moc.elgoog\u{200b}",
               "redirect_uris": [REDIRECT]}),
    )
    .await;
    let seen = h.authorize(&client_id, &[]).await;
    assert_consent_page(&seen, "a loopback client");
    // Escaped, never markup: the name is the client's own text.
    assert!(!seen.body.contains("<script>"), "{}", seen.body);
    // Invisible and right-to-left characters, which could make one name look like another,
    // are dropped.
    assert!(
        seen.body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;Evil&quot; &amp; comoc.elgoog<")
    );
    assert!(seen.body.contains("127.0.0.1:33418"));
    assert!(seen.body.contains("a program on this computer"));
    assert!(seen.body.contains("Read your organisation&#39;s events"));
    assert!(seen.body.contains("mcp.example.com"));
    let policy = header(&seen, "content-security-policy");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(policy.contains("default-src 'none'"), "{policy}");
    assert!(
        !policy.contains("script-src"),
        "no script is allowed: {policy}"
    );
    assert_eq!(header(&seen, "x-frame-options"), "DENY");
    assert_eq!(header(&seen, "cache-control"), "no-store");
    let cookie = header(&seen, "set-cookie");
    assert!(cookie.starts_with("__Host-mcp-oauth="), "{cookie}");
    for attribute in ["Path=/", "HttpOnly", "SameSite=Lax", "Secure"] {
        assert!(
            cookie.split("; ").any(|a| a == attribute),
            "{attribute}: {cookie}"
        );
    }
    // An app's private-use scheme gets its own warning.
    let app = register(
        &h,
        json!({"client_name": "Cursor", "redirect_uris": [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback"]}),
    )
    .await;
    let seen = h
        .authorize(
            &app,
            &[(
                "redirect_uri",
                Some("cursor://anysphere.cursor-mcp/oauth/callback"),
            )],
        )
        .await;
    assert_consent_page(&seen, "an app scheme");
    assert!(seen.body.contains("an app on this device"), "{}", seen.body);
    assert!(seen.body.contains("<code>cursor:</code>"));
}

#[tokio::test]
async fn an_answer_from_another_browser_another_site_or_a_forged_form_is_refused() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let page = h.authorize(&client_id, &[]).await;
    assert_consent_page(&page, "first");
    let form = consent_form(&page.body);
    let post = |cookie: Option<String>, origin: Option<&str>, request: &str| {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("request", request), ("decision", "approve")])
            .finish();
        let mut req = http::Request::builder()
            .method("POST")
            .uri("/oauth/consent")
            .header("host", "mcp.example.com")
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(cookie) = cookie {
            req = req.header("cookie", cookie);
        }
        if let Some(origin) = origin {
            req = req.header("origin", origin);
        }
        req.body(lambda_http::Body::from(body)).unwrap()
    };
    let mine = h.forget_cookie().unwrap();
    // Another browser: shown its own page, it has a cookie of its own.
    let other = Harness::new().await;
    let other_page = other.authorize(&other.client().await, &[]).await;
    assert_consent_page(&other_page, "another browser");
    let theirs = other.forget_cookie().unwrap();
    for (cookie, origin, case) in [
        (
            None,
            None,
            "no cookie (another browser, or a cross-site POST)",
        ),
        (
            Some("__Host-mcp-oauth=made-up".to_owned()),
            None,
            "a made-up cookie",
        ),
        (Some(theirs), None, "another deployment's browser"),
        (
            Some(mine.clone()),
            Some("https://attacker.example"),
            "posted from another site",
        ),
        (Some(mine.clone()), Some("null"), "an opaque origin"),
    ] {
        let seen = h.send(post(cookie, origin, &form)).await;
        seen.assert_page("access_denied", case);
    }
    // A form that is not the bridge's own.
    let seen = h.send(post(Some(mine.clone()), None, "forged")).await;
    seen.assert_page("invalid_request", "a forged form");
    // The same form from the browser that was shown it, from the bridge's own origin: on to
    // the upstream.
    let seen = h
        .send(post(Some(mine), Some("https://mcp.example.com"), &form))
        .await;
    assert_eq!(seen.status, 303, "{seen:?}");
    assert!(
        seen.location
            .as_deref()
            .unwrap()
            .starts_with(&h.upstream.issuer)
    );
    // Neither approve nor deny.
    let body = format!("request={form}&decision=maybe");
    let seen = h
        .post("/oauth/consent", "application/x-www-form-urlencoded", body)
        .await;
    seen.assert_page("invalid_request", "no decision");
}

#[tokio::test]
async fn an_approval_is_remembered_for_that_client_in_that_browser_only() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    assert_consent_page(&h.authorize(&client_id, &[]).await, "first time");
    let at = h.to_upstream(&client_id).await;
    assert!(!at.state.is_empty());
    // Approved before in this browser: straight on to the upstream.
    let seen = h.authorize(&client_id, &[]).await;
    assert_eq!(seen.status, 302, "{seen:?}");
    assert!(seen.location.unwrap().starts_with(&h.upstream.issuer));
    // Unless the client asks for the page (claude.ai sends prompt=consent).
    let seen = h
        .authorize(&client_id, &[("prompt", Some("consent"))])
        .await;
    assert_consent_page(&seen, "prompt=consent");
    // Another client, or another scope, asks again.
    let other = h.client().await;
    assert_consent_page(&h.authorize(&other, &[]).await, "another client");
    // Another browser asks again.
    let mine = h.forget_cookie();
    assert_consent_page(&h.authorize(&client_id, &[]).await, "another browser");
    // prompt=none with nothing approved: consent_required, shown (this browser never approved
    // the client, so its redirect URI is not trusted with even an error).
    h.forget_cookie();
    let seen = h.authorize(&client_id, &[("prompt", Some("none"))]).await;
    seen.assert_page("consent_required", "prompt=none");
    // Back in the first browser, prompt=none passes.
    *h.cookie.lock().unwrap() = mine;
    let seen = h.authorize(&client_id, &[("prompt", Some("none"))]).await;
    assert_eq!(seen.status, 302, "{seen:?}");
    assert!(seen.location.unwrap().starts_with(&h.upstream.issuer));
}

#[tokio::test]
async fn a_sign_in_state_completes_once_and_only_in_the_browser_that_approved() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let at = h.to_upstream(&client_id).await;
    let id = h.upstream.id_claims(&at.nonce);
    let first = h.callback(&at, Some(keys().rsa.sign(&id))).await;
    assert_eq!(first.status, 302, "{first:?}");
    assert!(first.param("code").is_some());
    // The same callback again (a replayed URL, the back button): no second code.
    let again = h.callback(&at, Some(keys().rsa.sign(&id))).await;
    again.assert_page("invalid_request", "replayed state");
    assert!(again.body.contains("already completed"), "{}", again.body);
    // A state approved in this browser, brought to another one.
    let at = h.to_upstream(&client_id).await;
    let mine = h.forget_cookie();
    let id = h.upstream.id_claims(&at.nonce);
    let elsewhere = h.callback(&at, Some(keys().rsa.sign(&id))).await;
    elsewhere.assert_page("access_denied", "another browser");
    // Neither refusal asked the upstream to exchange a code.
    assert_eq!(h.upstream.exchanges.lock().unwrap().len(), 1);
    // Back in the browser that approved, that state still completes.
    *h.cookie.lock().unwrap() = mine;
    let back = h.callback(&at, Some(keys().rsa.sign(&id))).await;
    assert_eq!(back.status, 302, "{back:?}");
    assert!(back.param("code").is_some());
}

#[tokio::test]
async fn refresh_tokens_go_only_to_clients_that_registered_the_grant() {
    let h = Harness::new().await;
    // RFC 7591 §2: an omitted grant_types means authorization_code alone.
    for (metadata, refresh, case) in [
        (json!({"redirect_uris": [REDIRECT]}), false, "omitted"),
        (
            json!({"redirect_uris": [REDIRECT], "grant_types": ["authorization_code"]}),
            false,
            "code only",
        ),
        (
            json!({"redirect_uris": [REDIRECT],
                   "grant_types": ["authorization_code", "refresh_token"]}),
            true,
            "both",
        ),
    ] {
        let client_id = register(&h, metadata).await;
        let code = h.code(&client_id).await;
        let seen = h.redeem(&client_id, &code).await;
        assert_eq!(seen.status, 200, "{case}: {seen:?}");
        assert!(seen.json()["access_token"].is_string(), "{case}");
        assert_eq!(
            seen.json().get("refresh_token").is_some(),
            refresh,
            "{case}: {seen:?}"
        );
    }
}

#[tokio::test]
async fn a_registration_answers_only_what_was_registered() {
    let h = Harness::new().await;
    let seen = h
        .register(&json!({"redirect_uris": [REDIRECT], "scope": "events:read admin root"}))
        .await;
    assert_eq!(seen.status, 201, "{seen:?}");
    assert_eq!(seen.json()["scope"], "events:read");
    assert_eq!(seen.json()["grant_types"], json!(["authorization_code"]));
    let seen = h
        .register(&json!({"redirect_uris": [REDIRECT], "scope": "admin root"}))
        .await;
    assert_eq!(seen.status, 201, "{seen:?}");
    assert!(seen.json().get("scope").is_none(), "{seen:?}");
}

#[tokio::test]
async fn native_clients_register_and_sign_in_as_they_really_do() {
    let h = Harness::new().await;
    // Cursor: three redirect URIs in one registration, one of them its app's own scheme
    // (shared/research/hosted-clients.md, Cursor).
    let cursor = [
        "cursor://anysphere.cursor-mcp/oauth/callback",
        "https://www.cursor.com/agents/mcp/oauth/callback",
        "http://localhost:8787/callback",
    ];
    let seen = h
        .register(&json!({"client_name": "Cursor", "redirect_uris": cursor,
                          "token_endpoint_auth_method": "none",
                          "grant_types": ["authorization_code", "refresh_token"]}))
        .await;
    assert_eq!(seen.status, 201, "{seen:?}");
    assert_eq!(seen.json()["redirect_uris"], json!(cursor));
    let client_id = seen.json()["client_id"].as_str().unwrap().to_owned();
    let seen = h
        .authorize_approved(&client_id, &[("redirect_uri", Some(cursor[0]))])
        .await;
    assert_eq!(seen.status, 303, "{seen:?}");
    assert!(seen.location.unwrap().starts_with(&h.upstream.issuer));
    // Claude Code: a loopback redirect registered without a port, used on an ephemeral one.
    let client_id = register(
        &h,
        json!({"redirect_uris": ["http://localhost/callback", "http://127.0.0.1/callback"]}),
    )
    .await;
    for uri in [
        "http://localhost:54321/callback",
        "http://127.0.0.1:54321/callback",
    ] {
        let seen = h
            .authorize(&client_id, &[("redirect_uri", Some(uri))])
            .await;
        assert_consent_page(&seen, uri);
        assert!(seen.body.contains(uri), "{uri}");
    }
    // Nothing else is relaxed: another spelling of the host, a dot segment.
    for uri in [
        "http://127.1:54321/callback",
        "http://localhost:54321/x/../callback",
    ] {
        let seen = h
            .authorize(&client_id, &[("redirect_uri", Some(uri))])
            .await;
        seen.assert_page("invalid_request", uri);
    }
}

/// Events whose `Host` or `X-Forwarded-Proto` made `lambda_http`'s own conversion panic in
/// the bridge ("Lambda panicked: IdnaError / InvalidIpv6Address / InvalidPort /
/// RelativeUrlWithoutBase"): through the shared conversion the bridge answers each, and an
/// event that is no request is a JSON OAuth error, never a panic or a 500.
#[tokio::test]
async fn no_event_makes_the_bridge_panic() {
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest;
    use lambda_http::{Context, LambdaEvent};

    let h = Harness::new().await;
    let base = || {
        let mut event: ApiGatewayV2httpRequest =
            serde_json::from_str(include_str!("../events/get.json")).unwrap();
        event.raw_path = Some("/.well-known/oauth-authorization-server".into());
        event
    };
    let with_header = |name: &'static str, value: &str| {
        let mut event = base();
        event.headers.insert(name, value.parse().unwrap());
        event
    };
    let mut cases = vec![];
    for host in ["exa mple.com:99999", "[::1", "a@b:c", "127.0.0.1:port"] {
        cases.push((with_header("host", host), 200, "issuer"));
    }
    cases.push((with_header("x-forwarded-proto", "ht tp"), 200, "issuer"));
    cases.push((with_header("x-forwarded-proto", "1"), 200, "issuer"));
    let mut event = base();
    event.is_base64_encoded = true;
    event.body = Some("%%% not base64".into());
    cases.push((event, 400, "base64"));
    let mut event = base();
    event.raw_path = Some("/oauth/authorize with spaces".into());
    cases.push((event, 400, "not a valid URI"));
    for (event, status, says) in cases {
        let out = h
            .app
            .invoke(LambdaEvent::new(event, Context::default()))
            .await;
        assert_eq!(out.status_code, status, "{out:?}");
        let body: &[u8] = out.body.as_deref().unwrap_or_default();
        let text = String::from_utf8_lossy(body);
        assert!(text.contains(says), "{text}");
        let json: serde_json::Value = serde_json::from_slice(body).unwrap();
        if status == 400 {
            assert_eq!(json["error"], "invalid_request", "{json}");
        }
    }
}

/// Anyone can register a redirect URI, so an error for a client this browser never approved is
/// shown, not sent there: otherwise the bridge's domain would redirect anywhere on request
/// (RFC 9700 §4.11.2). The same errors go to a client this browser approved.
#[tokio::test]
async fn an_error_for_a_client_nobody_approved_is_shown_not_redirected() {
    let h = Harness::new().await;
    let evil = register(&h, json!({"redirect_uris": [EVIL_REDIRECT]})).await;
    for (changes, code) in [
        (
            vec![
                ("redirect_uri", Some(EVIL_REDIRECT)),
                ("response_type", None),
            ],
            "invalid_request",
        ),
        (
            vec![
                ("redirect_uri", Some(EVIL_REDIRECT)),
                ("scope", Some("admin")),
            ],
            "invalid_scope",
        ),
        (
            vec![
                ("redirect_uri", Some(EVIL_REDIRECT)),
                ("prompt", Some("none")),
            ],
            "consent_required",
        ),
    ] {
        let seen = h.authorize(&evil, &changes).await;
        seen.assert_page(code, code);
    }
    // Approved in this browser (any scopes), the same request errs back to the client.
    let own = h.client().await;
    h.to_upstream(&own).await;
    let seen = h.authorize(&own, &[("response_type", None)]).await;
    seen.assert_redirected_error("invalid_request", "client-state-1", "approved client");
}

/// A planted cookie without the `__Host-` prefix (another host of the site, or a plain-http
/// response, could set one) is not read by an https bridge: its approvals do not skip the page.
#[tokio::test]
async fn a_planted_unprefixed_cookie_grants_nothing() {
    let h = Harness::new().await;
    let evil = register(&h, json!({"redirect_uris": [EVIL_REDIRECT]})).await;
    // The attacker approves their own client in their own browser and keeps the cookie.
    let page = h
        .authorize(&evil, &[("redirect_uri", Some(EVIL_REDIRECT))])
        .await;
    let approved = h.decide(&page, "approve").await;
    assert_eq!(approved.status, 303, "{approved:?}");
    let theirs = h.forget_cookie().unwrap();
    // Planted in the victim's browser under the unprefixed name.
    let planted = theirs.replacen("__Host-mcp-oauth=", "mcp-oauth=", 1);
    *h.cookie.lock().unwrap() = Some(planted);
    let seen = h
        .authorize(&evil, &[("redirect_uri", Some(EVIL_REDIRECT))])
        .await;
    assert_consent_page(&seen, "a planted cookie");
}
