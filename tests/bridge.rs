//! The OAuth bridge (`functions/oauth`) through the same `App::handle` its Lambda runtime
//! calls: KMS and DynamoDB in moto (server mode), the upstream OpenID issuer a loopback
//! server that publishes a real JWKS and answers the code exchange with a real, signed ID
//! token, and the MCP endpoint verifying what the bridge issues. Each attack of issue 14's
//! list is a test here; the real browser and SDK clients go through the served bridge in
//! scripts/test.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use lambda_http::Body;
use serde_json::{Value, json};

use crate::support::auth::{RESOURCE, claims, keys, now};
use crate::support::bridge::{
    AtUpstream, BRIDGE, Harness, REDIRECT, UPSTREAM_CLIENT, UPSTREAM_SECRET, VERIFIER, jwt_part,
    s256,
};
use crate::support::http::{call, captured_logs, with_token};

#[tokio::test]
async fn metadata_names_this_issuer_its_endpoints_and_s256_only() {
    let h = Harness::new().await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let seen = h.get(path, &[]).await;
        assert_eq!(seen.status, 200, "{path}");
        let m = seen.json();
        assert_eq!(m["issuer"], BRIDGE, "{path}");
        assert_eq!(
            m["authorization_endpoint"],
            format!("{BRIDGE}/oauth/authorize")
        );
        assert_eq!(m["token_endpoint"], format!("{BRIDGE}/oauth/token"));
        assert_eq!(
            m["registration_endpoint"],
            format!("{BRIDGE}/oauth/register")
        );
        assert_eq!(m["jwks_uri"], format!("{BRIDGE}/oauth/jwks"));
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(m["token_endpoint_auth_methods_supported"], json!(["none"]));
        assert_eq!(m["authorization_response_iss_parameter_supported"], true);
        assert_eq!(m["scopes_supported"], json!(["events:read"]));
        // OpenID Provider Metadata requires these (the TypeScript SDK checks); RFC 8414 not.
        let openid = path.ends_with("openid-configuration");
        assert_eq!(m.get("subject_types_supported").is_some(), openid, "{path}");
        assert_eq!(
            m.get("id_token_signing_alg_values_supported").is_some(),
            openid,
            "{path}"
        );
    }
    let jwks = h.get("/oauth/jwks", &[]).await.json();
    let key = &jwks["keys"][0];
    assert_eq!(key["kty"], "RSA");
    assert_eq!(key["alg"], "RS256");
    assert!(key.get("d").is_none(), "a private part: {key}");
    let wrong = h.post(
        "/.well-known/oauth-authorization-server",
        "application/json",
        "{}".into(),
    );
    assert_eq!(wrong.await.status, 405);
    assert_eq!(h.get("/oauth/nothing", &[]).await.status, 404);
}

#[tokio::test]
async fn a_registered_client_signs_in_and_its_token_opens_the_endpoint_for_its_tenant_only() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let at = h.to_upstream(&client_id).await;
    let id = h.upstream.id_claims(&at.nonce);
    let back = h.callback(&at, Some(keys().rsa.sign(&id))).await;
    assert_eq!(back.status, 302, "{back:?}");
    assert!(
        back.location
            .as_deref()
            .unwrap()
            .starts_with(&format!("{REDIRECT}?"))
    );
    assert_eq!(back.param("state").as_deref(), Some("client-state-1"));
    assert_eq!(back.param("iss").as_deref(), Some(BRIDGE));
    let code = back.param("code").unwrap();

    // The bridge redeemed the upstream code as a confidential client with its own PKCE.
    {
        let exchanges = h.upstream.exchanges.lock().unwrap();
        assert_eq!(exchanges.len(), 1);
        let form: Vec<(String, String)> = url::form_urlencoded::parse(exchanges[0].body.as_bytes())
            .into_owned()
            .collect();
        let get = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(get("code").as_deref(), Some("upstream-code-1"));
        assert_eq!(get("grant_type").as_deref(), Some("authorization_code"));
        assert_eq!(s256(&get("code_verifier").unwrap()), at.challenge);
        let basic = exchanges[0].header("authorization").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic.strip_prefix("Basic ").unwrap())
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            format!("{UPSTREAM_CLIENT}:{UPSTREAM_SECRET}")
        );
    }

    let seen = h.redeem(&client_id, &code).await;
    assert_eq!(seen.status, 200, "{seen:?}");
    let tokens = seen.json();
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 600);
    assert_eq!(tokens["scope"], "events:read");
    let access = tokens["access_token"].as_str().unwrap();
    let header = jwt_part(access, 0);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(header["alg"], "RS256");
    let issued = jwt_part(access, 1);
    assert_eq!(issued["iss"], BRIDGE);
    assert_eq!(issued["aud"], RESOURCE);
    assert_eq!(issued["sub"], "alice-upstream");
    assert_eq!(issued["tenant_id"], "acme");
    assert_eq!(issued["client_id"], client_id.as_str());
    assert_eq!(issued["scope"], "events:read");
    assert!(issued["jti"].as_str().is_some_and(|j| j.len() >= 16));
    assert_eq!(
        issued["exp"].as_u64().unwrap() - issued["iat"].as_u64().unwrap(),
        600
    );

    let endpoint = h.endpoint().await;
    let a = with_token(
        &endpoint,
        access,
        &call("whoami", json!({"tenant": "acme"})),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.result()["structuredContent"]["subject"], "alice-upstream");
    assert_eq!(a.result()["structuredContent"]["tenant"], "acme");
    let other = with_token(
        &endpoint,
        access,
        &call("whoami", json!({"tenant": "globex"})),
    )
    .await;
    assert_eq!(other.result()["isError"], true, "{other:?}");
    // A token for the same issuer signed by any other key is refused.
    let mut forged = claims();
    forged["iss"] = json!(BRIDGE);
    let forged = with_token(
        &endpoint,
        &keys().rsa.sign(&forged),
        &call("whoami", json!({})),
    )
    .await;
    assert_eq!(forged.status, 401, "{forged:?}");
}

#[tokio::test]
async fn registration_refuses_redirect_uris_that_could_leak_a_code() {
    let h = Harness::new().await;
    for (uris, case) in [
        (json!(["javascript:alert(document.cookie)"]), "javascript"),
        (json!(["data:text/html,<script>alert(1)</script>"]), "data"),
        (json!(["http://evil.example/callback"]), "http off loopback"),
        (json!(["https://claude.ai/cb#fragment"]), "fragment"),
        (json!(["https://user:pw@claude.ai/cb"]), "user information"),
        (json!(["file:///tmp/callback"]), "file"),
        (json!(["vbscript:msgbox(1)"]), "vbscript"),
        (json!(["https://claude.ai/a b"]), "a space: no RFC 3986 URI"),
        (json!(["https://claude.ai/cb\r\nSet-Cookie: a=b"]), "CR/LF"),
        (json!([REDIRECT, "javascript:alert(1)"]), "one bad of two"),
        (json!(["/callback"]), "relative"),
        (json!([]), "none"),
        (json!(vec![REDIRECT; 9]), "too many"),
    ] {
        let seen = h.register(&json!({"redirect_uris": uris})).await;
        seen.assert_error(400, "invalid_redirect_uri", case);
        assert!(seen.json().get("client_id").is_none(), "{case}");
    }
    let seen = h.register(&json!({"client_name": "x"})).await;
    seen.assert_error(400, "invalid_redirect_uri", "missing");
    let long: Vec<String> = (0..8)
        .map(|i| format!("https://app.example.com/{i}/{}", "p".repeat(400)))
        .collect();
    let seen = h.register(&json!({"redirect_uris": long})).await;
    seen.assert_error(400, "invalid_client_metadata", "registration too large");
    let seen = h
        .register(&json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}))
        .await;
    seen.assert_error(400, "invalid_client_metadata", "grant type");
    let seen = h
        .post("/oauth/register", "application/json", "[1,2".into())
        .await;
    seen.assert_error(400, "invalid_client_metadata", "not JSON");
    let body = json!({"redirect_uris": [REDIRECT]}).to_string();
    let seen = h.post("/oauth/register", "text/plain", body).await;
    seen.assert_error(400, "invalid_request", "media type");

    // A good registration: public, code only, the URIs as given.
    let seen = h
        .register(
            &json!({"redirect_uris": [REDIRECT, "https://claude.ai/api/mcp/auth_callback"],
                          "token_endpoint_auth_method": "client_secret_basic",
                          "client_name": "Claude\u{7}"}),
        )
        .await;
    assert_eq!(seen.status, 201, "{seen:?}");
    let r = seen.json();
    assert_eq!(r["token_endpoint_auth_method"], "none");
    assert!(r.get("client_secret").is_none());
    assert_eq!(r["client_name"], "Claude");
    assert_eq!(
        r["redirect_uris"][1],
        "https://claude.ai/api/mcp/auth_callback"
    );
}

#[tokio::test]
async fn errors_before_the_redirect_uri_is_trusted_are_shown_never_redirected() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let seen = h.authorize(&client_id, &[("client_id", None)]).await;
    seen.assert_page("invalid_request", "no client");
    let seen = h.authorize("dcr.forged-registration", &[]).await;
    seen.assert_page("invalid_client", "forged client");
    // A client registered with another deployment (another sealing key).
    let stranger = Harness::new().await.client().await;
    let seen = h.authorize(&stranger, &[]).await;
    seen.assert_page("invalid_client", "another deployment's client");
    for (uri, case) in [
        ("http://127.0.0.1:33418/callbac", "prefix"),
        ("http://127.0.0.1:33418/callback/more", "extra path"),
        ("http://127.0.0.1:33418/callback?next=x", "extra query"),
        ("http://127.0.0.2:33418/callback", "other host"),
        ("https://evil.example/callback", "other site"),
        ("https://127.0.0.1:33418/callback", "other scheme"),
        ("javascript:alert(1)//127.0.0.1:33418/callback", "script"),
    ] {
        let seen = h
            .authorize(&client_id, &[("redirect_uri", Some(uri))])
            .await;
        seen.assert_page("invalid_request", case);
        assert!(!seen.body.contains("<script"), "{case}");
    }
    let long_state = "s".repeat(1025);
    let seen = h
        .authorize(&client_id, &[("state", Some(&long_state))])
        .await;
    seen.assert_page("invalid_request", "state over 1 KiB");
    // Nothing reached the upstream.
    assert!(h.upstream.exchanges.lock().unwrap().is_empty());
}

#[tokio::test]
async fn errors_after_the_redirect_uri_is_trusted_go_back_with_state_and_issuer() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    // Once this browser approved the client: a client nobody approved gets its errors shown,
    // never redirected (bridge_consent::an_error_for_a_client_nobody_approved_is_shown).
    h.to_upstream(&client_id).await;
    let plain = "plain-challenge-that-is-forty-three-chars-xx";
    for (changes, code, case) in [
        (
            vec![("code_challenge", None), ("code_challenge_method", None)],
            "invalid_request",
            "PKCE missing",
        ),
        (
            vec![
                ("code_challenge", Some(plain)),
                ("code_challenge_method", Some("plain")),
            ],
            "invalid_request",
            "PKCE plain",
        ),
        (
            vec![("code_challenge_method", None)],
            "invalid_request",
            "PKCE method absent (plain)",
        ),
        (
            vec![("code_challenge", Some("short"))],
            "invalid_request",
            "PKCE challenge malformed",
        ),
        (
            vec![("resource", Some("https://other.example.com/mcp"))],
            "invalid_target",
            "resource for another audience",
        ),
        (
            vec![("resource", Some("https://mcp.example.com/prod/mcp/admin"))],
            "invalid_target",
            "resource below ours",
        ),
        (
            vec![("scope", Some("events:write"))],
            "invalid_scope",
            "unknown scope",
        ),
        (
            vec![("response_type", Some("token"))],
            "unsupported_response_type",
            "implicit",
        ),
    ] {
        let seen = h.authorize(&client_id, &changes).await;
        seen.assert_redirected_error(code, "client-state-1", case);
    }
    // With the redirect URI left out, the one registered is used.
    let seen = h
        .authorize_approved(&client_id, &[("redirect_uri", None)])
        .await;
    assert_eq!(
        seen.status, 302,
        "approved before in this browser: {seen:?}"
    );
    assert!(seen.location.unwrap().starts_with(&h.upstream.issuer));
}

#[tokio::test]
async fn a_tampered_or_foreign_state_ends_the_sign_in_before_the_upstream_is_asked() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let at = h.to_upstream(&client_id).await;
    let mut tampered = at.state.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'x' { b'y' } else { b'x' };
    let tampered = String::from_utf8(tampered).unwrap();
    let other = Harness::new().await;
    let foreign = other.to_upstream(&other.client().await).await.state;
    for (state, case) in [
        (Some(tampered.as_str()), "tampered"),
        (Some(foreign.as_str()), "another deployment's"),
        (Some("not-sealed-at-all"), "made up"),
        (None, "missing"),
    ] {
        let mut params = vec![("code", "upstream-code-1")];
        if let Some(state) = state {
            params.push(("state", state));
        }
        let seen = h.get("/oauth/callback", &params).await;
        seen.assert_page("invalid_request", case);
    }
    assert!(h.upstream.exchanges.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_answer_naming_another_issuer_is_a_mix_up_and_refused() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let at = h.to_upstream(&client_id).await;
    let seen = h
        .get(
            "/oauth/callback",
            &[
                ("code", "upstream-code-1"),
                ("state", &at.state),
                ("iss", "https://attacker.example"),
            ],
        )
        .await;
    seen.assert_redirected_error("access_denied", "client-state-1", "mix-up");
    assert!(h.upstream.exchanges.lock().unwrap().is_empty());
    // An error from the upstream goes back to the client as access_denied (a new sign-in:
    // each state completes once).
    let at = h.to_upstream(&client_id).await;
    let seen = h
        .get(
            "/oauth/callback",
            &[("error", "access_denied"), ("state", &at.state)],
        )
        .await;
    seen.assert_redirected_error("access_denied", "client-state-1", "upstream error");
}

#[tokio::test]
async fn upstream_id_tokens_are_verified_before_anyone_signs_in() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    type Tweak = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(Tweak, &str)> = vec![
        (
            Box::new(|c| c["aud"] = json!("another-client")),
            "wrong audience",
        ),
        (
            Box::new(|c| c["nonce"] = json!("another-nonce")),
            "wrong nonce",
        ),
        (
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("nonce");
            }),
            "no nonce",
        ),
        (
            Box::new(|c| c["iss"] = json!("https://attacker.example")),
            "wrong issuer",
        ),
        (Box::new(|c| c["exp"] = json!(now() - 3600)), "expired"),
    ];
    for (tweak, case) in cases {
        let seen = h.code_with(&client_id, tweak).await;
        seen.assert_redirected_error("access_denied", "client-state-1", case);
    }
    // Unsigned (`alg: none`) and signed by another key under the same kid.
    let at = h.to_upstream(&client_id).await;
    let id = h.upstream.id_claims(&at.nonce);
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"rsa-1"}"#),
        URL_SAFE_NO_PAD.encode(id.to_string())
    );
    let seen = h.callback(&at, Some(unsigned)).await;
    seen.assert_redirected_error("access_denied", "client-state-1", "alg none");
    let at = h.to_upstream(&client_id).await;
    let id = h.upstream.id_claims(&at.nonce);
    let seen = h.callback(&at, Some(keys().rsa_impostor.sign(&id))).await;
    seen.assert_redirected_error("access_denied", "client-state-1", "impostor key");
    // The upstream refusing its code.
    let at = h.to_upstream(&client_id).await;
    let seen = h.callback(&at, None).await;
    seen.assert_redirected_error("access_denied", "client-state-1", "upstream refused");
    // A user without a tenant, when the deployment has no default.
    let seen = h
        .code_with(&client_id, |c| {
            c.as_object_mut().unwrap().remove("custom:tenant_id");
        })
        .await;
    seen.assert_redirected_error("access_denied", "client-state-1", "no tenant");
}

#[tokio::test]
async fn the_code_is_bound_to_its_verifier_client_and_redirect_uri() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let other_client = h.client().await;
    let code = h.code(&client_id).await;
    let wrong_verifier = "another-verifier-of-forty-three-characters-x";
    let challenge = s256(VERIFIER);
    for (params, status, error, case) in [
        (
            vec![("code_verifier", Some(wrong_verifier))],
            400,
            "invalid_grant",
            "wrong verifier",
        ),
        (
            vec![("code_verifier", None)],
            400,
            "invalid_request",
            "no verifier",
        ),
        (
            vec![("code_verifier", Some(challenge.as_str()))],
            400,
            "invalid_grant",
            "the challenge as verifier",
        ),
        (
            vec![("client_id", Some(other_client.as_str()))],
            400,
            "invalid_grant",
            "another client",
        ),
        (
            vec![("redirect_uri", Some("http://127.0.0.1:33418/other"))],
            400,
            "invalid_grant",
            "another redirect URI",
        ),
        (
            vec![("redirect_uri", None)],
            400,
            "invalid_grant",
            "redirect URI dropped",
        ),
        (
            vec![("resource", Some("https://other.example.com/mcp"))],
            400,
            "invalid_target",
            "another resource",
        ),
        (
            vec![("code", Some("sealed-by-nobody"))],
            400,
            "invalid_grant",
            "made-up code",
        ),
        (
            vec![("client_id", None)],
            400,
            "invalid_client",
            "no client",
        ),
    ] {
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", "authorization_code"),
            ("client_id", &client_id),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ];
        for (name, value) in &params {
            form.retain(|(n, _)| n != name);
            if let Some(value) = value {
                form.push((name, value));
            }
        }
        h.token(&form).await.assert_error(status, error, case);
    }
    // None of those used the code up.
    assert_eq!(h.redeem(&client_id, &code).await.status, 200);
}

#[tokio::test]
async fn a_replayed_code_is_refused_and_revokes_what_it_issued() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let code = h.code(&client_id).await;
    let first = h.redeem(&client_id, &code).await;
    assert_eq!(first.status, 200, "{first:?}");
    let replay = h.redeem(&client_id, &code).await;
    replay.assert_error(400, "invalid_grant", "replay");
    let refresh = first.json()["refresh_token"].as_str().unwrap().to_owned();
    h.refresh(&client_id, &refresh).await.assert_error(
        400,
        "invalid_grant",
        "refresh after a replay",
    );
}

#[tokio::test]
async fn refresh_tokens_rotate_and_a_reused_one_revokes_its_family() {
    // No reuse window: the rotated-out token is a copy the moment it is presented again.
    let h = Harness::with(|c| c.lifetimes.refresh_reuse = std::time::Duration::ZERO).await;
    let (client_id, tokens) = h.sign_in().await;
    let r0 = tokens["refresh_token"].as_str().unwrap().to_owned();
    let next = h.refresh(&client_id, &r0).await;
    assert_eq!(next.status, 200, "{next:?}");
    let r1 = next.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(r0, r1);
    let access = next.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(jwt_part(&access, 1)["sub"], "alice-upstream");
    let endpoint = h.endpoint().await;
    assert_eq!(
        with_token(&endpoint, &access, &call("whoami", json!({})))
            .await
            .status,
        200
    );
    // Wider scope, another client: refused without touching the family.
    h.token(&[
        ("grant_type", "refresh_token"),
        ("client_id", &client_id),
        ("refresh_token", &r1),
        ("scope", "events:read events:admin"),
    ])
    .await
    .assert_error(400, "invalid_scope", "wider scope");
    let stranger = h.client().await;
    h.refresh(&stranger, &r1)
        .await
        .assert_error(400, "invalid_grant", "another client");
    // r0 again: reuse. The whole family ends, r1 with it.
    h.refresh(&client_id, &r0)
        .await
        .assert_error(400, "invalid_grant", "reuse");
    h.refresh(&client_id, &r1)
        .await
        .assert_error(400, "invalid_grant", "after reuse");
}

#[tokio::test]
async fn a_refresh_repeated_within_seconds_of_its_rotation_is_honoured_not_revoked() {
    // Two requests of one client meet the same expired access token and both refresh with
    // the same refresh token (the TypeScript SDK does not serialise them). The second is
    // the client's own, seconds after the first: it gets tokens of the generation the
    // first made current, and the family lives on.
    let h = Harness::new().await;
    let (client_id, tokens) = h.sign_in().await;
    let r0 = tokens["refresh_token"].as_str().unwrap().to_owned();
    let first = h.refresh(&client_id, &r0).await;
    assert_eq!(first.status, 200, "{first:?}");
    let second = h.refresh(&client_id, &r0).await;
    assert_eq!(second.status, 200, "{second:?}");
    let access = second.json()["access_token"].as_str().unwrap().to_owned();
    let endpoint = h.endpoint().await;
    assert_eq!(
        with_token(&endpoint, &access, &call("whoami", json!({})))
            .await
            .status,
        200
    );
    // Both answers carry the current generation: each refreshes on, and the family is
    // still one family (the older token again is still inside the window).
    for answer in [&first, &second] {
        let r1 = answer.json()["refresh_token"].as_str().unwrap().to_owned();
        let next = h.refresh(&client_id, &r1).await;
        assert_eq!(next.status, 200, "{next:?}");
    }
    // Two generations back is a copy whatever the window: the family ends.
    h.refresh(&client_id, &r0)
        .await
        .assert_error(400, "invalid_grant", "two generations back");
    let r1 = first.json()["refresh_token"].as_str().unwrap().to_owned();
    h.refresh(&client_id, &r1)
        .await
        .assert_error(400, "invalid_grant", "after the family ended");
}

#[tokio::test]
async fn group_membership_decides_the_scopes_granted() {
    let h = Harness::with(|c| {
        c.scopes = vec!["events:read".into(), "events:admin".into()];
        c.group_scopes = vec![
            ("readers".into(), "events:read".into()),
            ("admins".into(), "events:admin".into()),
        ];
    })
    .await;
    let client_id = h.client().await;
    let both = "events:read events:admin";
    let at = {
        let seen = h
            .authorize_approved(&client_id, &[("scope", Some(both))])
            .await;
        AtUpstream {
            state: seen.param("state").unwrap(),
            nonce: seen.param("nonce").unwrap(),
            challenge: String::new(),
        }
    };
    let id = h.upstream.id_claims(&at.nonce);
    let code = h
        .callback(&at, Some(keys().rsa.sign(&id)))
        .await
        .param("code")
        .unwrap();
    let tokens = h.redeem(&client_id, &code).await.json();
    assert_eq!(tokens["scope"], "events:read", "a reader asking for both");
    let seen = h
        .code_with(&client_id, |c| c["cognito:groups"] = json!(["visitors"]))
        .await;
    seen.assert_redirected_error("access_denied", "client-state-1", "in no group");
}

#[tokio::test]
async fn the_token_endpoint_takes_public_clients_and_forms_only() {
    let h = Harness::new().await;
    let client_id = h.client().await;
    let form = format!("grant_type=refresh_token&client_id={client_id}&refresh_token=x");
    let req = http::Request::builder()
        .method("POST")
        .uri("/oauth/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("authorization", "Basic Y2xpZW50OnNlY3JldA==")
        .body(Body::from(form.clone()))
        .unwrap();
    let seen = h.send(req).await;
    seen.assert_error(401, "invalid_client", "client secret");
    // RFC 6749 §5.2: the challenge names the scheme the client tried.
    assert_eq!(
        seen.headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Basic realm=\"{BRIDGE}\"").as_str()),
        "{seen:?}"
    );
    h.post(
        "/oauth/token",
        "application/json",
        json!({"grant_type": "x"}).to_string(),
    )
    .await
    .assert_error(400, "invalid_request", "JSON body");
    h.post(
        "/oauth/token",
        "application/x-www-form-urlencoded",
        format!("{form}&client_id=dcr.other"),
    )
    .await
    .assert_error(400, "invalid_request", "parameter twice");
    h.token(&[("grant_type", "password"), ("client_id", &client_id)])
        .await
        .assert_error(400, "unsupported_grant_type", "password grant");
    h.post(
        "/oauth/token",
        "application/x-www-form-urlencoded",
        "a".repeat(20_000),
    )
    .await
    .assert_error(400, "invalid_request", "oversized");
}

#[tokio::test]
async fn nothing_secret_reaches_the_logs() {
    let logs = captured_logs();
    let h = Harness::new().await;
    let (client_id, tokens) = h.sign_in().await;
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let again = h.refresh(&client_id, refresh).await;
    assert_eq!(again.status, 200);
    h.refresh(&client_id, refresh).await; // reuse: logged as a revocation
    let code = h.code(&client_id).await;
    h.redeem(&client_id, &code).await;
    h.redeem(&client_id, &code).await; // replay
    let text = logs.text();
    assert!(
        text.contains("/oauth/token"),
        "the bridge's request lines are captured"
    );
    assert!(text.contains("refresh token family revoked"));
    for (secret, what) in [
        (tokens["access_token"].as_str().unwrap(), "access token"),
        (refresh, "refresh token"),
        (
            again.json()["refresh_token"].as_str().unwrap(),
            "rotated refresh token",
        ),
        (code.as_str(), "code"),
        (UPSTREAM_SECRET, "upstream client secret"),
        ("upstream-access", "upstream access token"),
        (client_id.as_str(), "client registration"),
        (h.sealing_key.as_str(), "sealing key"),
    ] {
        assert!(!text.contains(secret), "the log holds the {what}");
    }
}
