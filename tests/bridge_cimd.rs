//! Client ID Metadata Documents at the OAuth bridge: a client whose `client_id` is an https
//! URL, its document served over real TLS on loopback (a throwaway certificate the bridge is
//! told to trust, as in a local run). What a stranger's URL may make the bridge fetch is the
//! point: the document's own `client_id`, size, time, redirects and address are each a test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::net::TcpListener;

use crate::support::auth::{jwks, keys, now};
use crate::support::bridge::{BRIDGE, Harness, REDIRECT, VERIFIER, jwt_part};
use crate::support::site::{self, Reply, certificate};

/// A loopback https site of client metadata documents, counting the requests per path.
struct Site {
    base: String,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Site {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let base = format!("https://127.0.0.1:{port}");
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (b, h) = (base.clone(), hits.clone());
        site::serve_requests_tls(listener, move |req| {
            let count = {
                let mut hits = h.lock().unwrap();
                let n = hits.entry(req.path.clone()).or_default();
                *n += 1;
                *n
            };
            let base = b.clone();
            async move {
                let doc = |id: &str| {
                    json!({"client_id": id, "client_name": "Document client",
                           "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
                    .to_string()
                };
                let to = |location: String| Reply {
                    status: 302,
                    headers: vec![("location", location)],
                    body: String::new(),
                };
                Some(match req.path.as_str() {
                    "/client.json" => Reply::json(200, doc(&format!("{base}/client.json"))),
                    "/impostor.json" => {
                        Reply::json(200, doc("https://claude.ai/oauth/client.json"))
                    }
                    "/big.json" => {
                        let mut d: serde_json::Value =
                            serde_json::from_str(&doc(&format!("{base}/big.json"))).unwrap();
                        d["client_name"] = json!("x".repeat(6 * 1024));
                        Reply::json(200, d.to_string())
                    }
                    "/slow.json" => {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        Reply::json(200, doc(&format!("{base}/slow.json")))
                    }
                    "/secret.json" => {
                        let mut d: serde_json::Value =
                            serde_json::from_str(&doc(&format!("{base}/secret.json"))).unwrap();
                        d["client_secret"] = json!("shared");
                        Reply::json(200, d.to_string())
                    }
                    "/missing.json" => Reply::json(404, "{}"),
                    // Served once, then down (a vendor's outage).
                    "/flaky.json" if count == 1 => {
                        Reply::json(200, doc(&format!("{base}/flaky.json")))
                    }
                    "/flaky.json" => Reply::json(503, "{}"),
                    "/chatgpt.json" => Reply::json(
                        200,
                        json!({"client_id": format!("{base}/chatgpt.json"),
                               "client_name": "ChatGPT",
                               "redirect_uris": [REDIRECT],
                               "grant_types": ["authorization_code", "refresh_token"],
                               "response_types": ["code"],
                               "token_endpoint_auth_method": "private_key_jwt",
                               "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
                               "token_endpoint_auth_signing_alg": "RS256",
                               "jwks_uri": format!("{base}/chatgpt-jwks.json")})
                        .to_string(),
                    ),
                    "/chatgpt-jwks.json" => Reply::json(200, jwks(&[&keys().rsa])),
                    // One redirect is followed; the document names the URL the client used.
                    "/moved.json" => to(format!("{base}/moved-here.json")),
                    "/moved-here.json" => Reply::json(200, doc(&format!("{base}/moved.json"))),
                    "/hop1.json" => to(format!("{base}/hop2.json")),
                    "/hop2.json" => to(format!("{base}/hop3.json")),
                    "/hop3.json" => to(format!("{base}/hop4.json")),
                    "/hop4.json" => Reply::json(200, doc(&format!("{base}/hop1.json"))),
                    "/to-http.json" => to(format!("{}/client.json", base.replace("https", "http"))),
                    "/to-metadata.json" => to("https://169.254.169.254/latest/meta-data/".into()),
                    _ => Reply::json(404, "{}"),
                })
            }
        });
        Self { base, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// The bridge as a local run configures it: loopback documents allowed, the site's
/// certificate trusted, a short fetch bound.
async fn local_bridge() -> Harness {
    Harness::with(|c| {
        c.cimd.allow_loopback = true;
        c.cimd.extra_root_pem = Some(certificate().0.clone());
        c.cimd.timeout = Duration::from_millis(700);
    })
    .await
}

#[tokio::test]
async fn a_client_named_by_its_document_signs_in_without_registering() {
    let site = Site::start().await;
    let h = local_bridge().await;
    let metadata = h
        .get("/.well-known/oauth-authorization-server", &[])
        .await
        .json();
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    let client_id = site.url("/client.json");
    let code = h.code(&client_id).await;
    let seen = h.redeem(&client_id, &code).await;
    assert_eq!(seen.status, 200, "{seen:?}");
    let access = seen.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(jwt_part(&access, 1)["client_id"], client_id.as_str());
    // The document was fetched once: the second sign-in used the kept copy.
    h.code(&client_id).await;
    assert_eq!(site.hits("/client.json"), 1);
    // A redirect URI the document does not list: shown, not redirected.
    let seen = h
        .authorize(
            &client_id,
            &[("redirect_uri", Some("http://127.0.0.1:1/elsewhere"))],
        )
        .await;
    seen.assert_page("invalid_request", "unlisted redirect URI");
    // Its consent page names the document's host as the verified identity, and the name the
    // document gives itself as its own claim.
    let page = h
        .authorize(&client_id, &[("prompt", Some("consent"))])
        .await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body
            .contains("It calls itself “Document client” (not verified)"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<span class=\"client\">127.0.0.1</span>")
    );
    // ChatGPT's per-connector document: a confidential client by private_key_jwt, with a
    // jwks_uri (shared/research/hosted-clients.md §2.3): its token requests carry a client
    // assertion signed with a key of that JWKS (RFC 7523), besides PKCE.
    let chatgpt = site.url("/chatgpt.json");
    let token_endpoint = format!("{BRIDGE}/oauth/token");
    let claims = |aud: &str, sub: &str, jti: &str| json!({"iss": chatgpt, "sub": sub, "aud": aud, "iat": now(), "exp": now() + 60, "jti": jti});
    let redeem = |code: String, assertion: Option<String>| {
        let chatgpt = chatgpt.clone();
        let h = &h;
        async move {
            let mut form = vec![
                ("grant_type", "authorization_code".to_owned()),
                ("client_id", chatgpt),
                ("code", code),
                ("redirect_uri", REDIRECT.to_owned()),
                ("code_verifier", VERIFIER.to_owned()),
            ];
            if let Some(assertion) = assertion {
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion));
            }
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            h.token(&form).await
        }
    };
    let code = h.code(&chatgpt).await;
    for (assertion, case) in [
        (None, "no assertion"),
        (
            Some(
                keys()
                    .rsa_impostor
                    .sign(&claims(&token_endpoint, &chatgpt, "j1")),
            ),
            "signed by another key under the same kid",
        ),
        (
            Some(
                keys()
                    .rsa
                    .sign(&claims("https://elsewhere.example/token", &chatgpt, "j2")),
            ),
            "for another audience",
        ),
        (
            Some(
                keys()
                    .rsa
                    .sign(&claims(&token_endpoint, "someone-else", "j3")),
            ),
            "sub is not the client",
        ),
    ] {
        redeem(code.clone(), assertion)
            .await
            .assert_error(400, "invalid_client", case);
    }
    // The code was not spent by those: with a good assertion it redeems.
    let good = keys().rsa.sign(&claims(&token_endpoint, &chatgpt, "j4"));
    let seen = redeem(code, Some(good.clone())).await;
    assert_eq!(seen.status, 200, "{seen:?}");
    let refresh = seen.json()["refresh_token"].as_str().unwrap().to_owned();
    // An assertion is used once, and the issuer is an audience too.
    let code = h.code(&chatgpt).await;
    redeem(code.clone(), Some(good)).await.assert_error(
        400,
        "invalid_client",
        "a replayed assertion",
    );
    let by_issuer = keys().rsa.sign(&claims(BRIDGE, &chatgpt, "j5"));
    assert_eq!(redeem(code, Some(by_issuer)).await.status, 200);
    // A refresh authenticates too.
    let seen = h.refresh(&chatgpt, &refresh).await;
    seen.assert_error(400, "invalid_client", "a refresh without an assertion");
    let assertion = keys().rsa.sign(&claims(&token_endpoint, &chatgpt, "j6"));
    let seen = h
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &chatgpt),
            ("refresh_token", &refresh),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", &assertion),
        ])
        .await;
    assert_eq!(seen.status, 200, "{seen:?}");
    // A document served by a redirect is not its URL's document (the draft, §4): refused,
    // and the redirect is never followed.
    let seen = h.authorize(&site.url("/moved.json"), &[]).await;
    seen.assert_page("invalid_client", "a redirect");
    assert!(seen.body.contains("redirect"), "{}", seen.body);
    assert_eq!(site.hits("/moved-here.json"), 0);
}

#[tokio::test]
async fn documents_that_are_not_the_clients_own_or_out_of_bounds_are_refused() {
    let site = Site::start().await;
    let h = local_bridge().await;
    for (path, why, case) in [
        (
            "/impostor.json",
            "names another client_id",
            "client_id of another URL",
        ),
        ("/big.json", "larger than 5120 bytes", "over 5 KiB"),
        ("/slow.json", "took too long", "slower than the bound"),
        (
            "/secret.json",
            "must not carry a client_secret",
            "a client secret",
        ),
        ("/missing.json", "HTTP 404", "404"),
        ("/hop1.json", "redirected", "a chain of redirects"),
        ("/to-http.json", "redirected", "a redirect to http"),
        (
            "/to-metadata.json",
            "redirected",
            "a redirect to the instance metadata address",
        ),
    ] {
        let seen = h.authorize(&site.url(path), &[]).await;
        seen.assert_page("invalid_client", case);
        assert!(seen.body.contains(why), "{case}: {}", seen.body);
    }
    // No redirect is followed: the second hop is never asked for.
    assert_eq!(site.hits("/hop2.json"), 0);
    // Not https, or not a URL the draft allows: refused before any fetch.
    for (client_id, case) in [
        (site.url("/client.json").replace("https", "http"), "http"),
        (site.url("/client.json#x"), "fragment"),
        (site.url("/client.json?x=1"), "query"),
        (
            format!("{}\\@claude.ai/client.json", site.base),
            "a backslash that a URL parser reads as a path",
        ),
        (
            site.url("/Client.json").replace("https", "HTTPS"),
            "not normal",
        ),
        (site.url("/a/../client.json"), "dot segments"),
        (site.base.clone(), "no path"),
    ] {
        let seen = h.authorize(&client_id, &[]).await;
        seen.assert_page("invalid_client", case);
    }
    assert_eq!(site.hits("/client.json"), 0);
}

#[tokio::test]
async fn a_deployed_bridge_fetches_from_public_addresses_only() {
    // As deployed (the issuer is not loopback): loopback is private like any other range.
    let site = Site::start().await;
    let h = Harness::with(|c| c.cimd.extra_root_pem = Some(certificate().0.clone())).await;
    let port = site.base.rsplit(':').next().unwrap().to_owned();
    for (client_id, case) in [
        (site.url("/client.json"), "a loopback IP literal"),
        (
            format!("https://localhost:{port}/client.json"),
            "a name resolving to loopback",
        ),
        (
            "https://169.254.169.254/latest/meta-data".to_owned(),
            "instance metadata",
        ),
        (
            "https://10.0.0.1/client.json".to_owned(),
            "a private address",
        ),
        (
            "https://[fd00::1]/client.json".to_owned(),
            "a unique local address",
        ),
    ] {
        let seen = h.authorize(&client_id, &[]).await;
        seen.assert_page("invalid_client", case);
        assert!(
            seen.body.contains("public address"),
            "{case}: {}",
            seen.body
        );
    }
    assert_eq!(site.hits("/client.json"), 0, "nothing reached the site");
}

#[tokio::test]
async fn a_document_that_goes_down_is_served_from_its_last_good_copy_for_a_bounded_time() {
    // Fetched again at every use (nothing is fresh), so the outage is met at once.
    let bridge = |stale_for: Duration| {
        Harness::with(move |c| {
            c.cimd.allow_loopback = true;
            c.cimd.extra_root_pem = Some(certificate().0.clone());
            c.cimd.fresh_for = Duration::ZERO;
            c.cimd.stale_for = stale_for;
        })
    };
    let site = Site::start().await;
    let h = bridge(Duration::from_secs(3600)).await;
    let client_id = site.url("/flaky.json");
    assert_eq!(
        h.authorize(&client_id, &[]).await.status,
        200,
        "the consent page"
    );
    // Down now: the last good copy answers, and the sign-in goes on to a token.
    let code = h.code(&client_id).await;
    assert_eq!(site.hits("/flaky.json"), 2, "fetched again");
    assert_eq!(h.redeem(&client_id, &code).await.status, 200);
    // With no time allowed for a stale copy, the outage is the client's error.
    let site = Site::start().await;
    let h = bridge(Duration::ZERO).await;
    let client_id = site.url("/flaky.json");
    assert_eq!(h.authorize(&client_id, &[]).await.status, 200);
    let seen = h.authorize(&client_id, &[]).await;
    seen.assert_page("invalid_client", "down, no stale copy allowed");
    assert!(seen.body.contains("HTTP 503"), "{}", seen.body);
}
