//! The OAuth bridge under test (`tests/bridge.rs`, `tests/bridge_cimd.rs`): `oauth::App`
//! with KMS and DynamoDB in moto, an upstream OpenID issuer on loopback (discovery, a real
//! JWKS, a token endpoint answering with the ID token a test set), requests and what they
//! answered, and the MCP endpoint trusting the bridge.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use lambda_http::{Body, Request};
use mcp_auth::{KeySet, KeysConfig};
use serde_json::{Value, json};
use sha2::Digest as _;
use tokio::net::TcpListener;
use url::Url;

use crate::support::auth::{RESOURCE, app_with, auth_config, jwks, keys, now};
use crate::support::aws;
use crate::support::site::{self, Incoming, Reply};

/// The bridge's issuer: on the MCP URL's host, as deployed.
pub(crate) const BRIDGE: &str = "https://mcp.example.com/prod";
/// Where the test client listens (a native app's loopback redirect).
pub(crate) const REDIRECT: &str = "http://127.0.0.1:33418/callback";
pub(crate) const UPSTREAM_CLIENT: &str = "bridge-client-at-upstream";
pub(crate) const UPSTREAM_SECRET: &str = "upstream-secret-5e2b9c0d4471";
/// A PKCE verifier (43 unreserved characters).
pub(crate) const VERIFIER: &str = "the-verifier-of-this-client-0123456789abcdef";

pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// The upstream issuer: discovery, JWKS (the tests' RSA key) and a token endpoint that
/// answers with the ID token the test set, recording each exchange it was asked for.
pub(crate) struct Upstream {
    pub(crate) issuer: String,
    pub(crate) id_token: Arc<Mutex<Option<String>>>,
    pub(crate) exchanges: Arc<Mutex<Vec<Incoming>>>,
}

impl Upstream {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let id_token: Arc<Mutex<Option<String>>> = Arc::default();
        let exchanges: Arc<Mutex<Vec<Incoming>>> = Arc::default();
        let (base, token, seen) = (issuer.clone(), id_token.clone(), exchanges.clone());
        site::serve_requests(listener, move |req| {
            let reply = match (req.method.as_str(), req.path.as_str()) {
                ("GET", "/.well-known/openid-configuration") => Reply::json(
                    200,
                    json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "jwks_uri": format!("{base}/jwks"),
                    })
                    .to_string(),
                ),
                ("GET", "/jwks") => Reply::json(200, jwks(&[&keys().rsa])),
                ("POST", "/token") => {
                    let answer = token.lock().unwrap().clone();
                    seen.lock().unwrap().push(req);
                    match answer {
                        Some(id_token) => Reply::json(
                            200,
                            json!({"access_token": "upstream-access", "token_type": "Bearer",
                                   "expires_in": 300, "id_token": id_token})
                            .to_string(),
                        ),
                        None => Reply::json(400, r#"{"error":"invalid_grant"}"#),
                    }
                }
                _ => Reply::json(404, "{}"),
            };
            async move { Some(reply) }
        });
        Self {
            issuer,
            id_token,
            exchanges,
        }
    }

    /// Claims of a good ID token for `nonce`: user `alice-upstream` in tenant `acme`.
    pub(crate) fn id_claims(&self, nonce: &str) -> Value {
        let now = now();
        json!({
            "iss": self.issuer, "aud": UPSTREAM_CLIENT, "sub": "alice-upstream",
            "nonce": nonce, "iat": now, "exp": now + 300, "token_use": "id",
            "custom:tenant_id": "acme", "cognito:groups": ["readers"],
        })
    }
}

pub(crate) fn sealing_key() -> String {
    let out = std::process::Command::new("openssl")
        .args(["rand", "-base64", "32"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A response, whatever its body.
#[derive(Debug)]
pub(crate) struct Seen {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) content_type: String,
    pub(crate) body: String,
    pub(crate) headers: http::HeaderMap,
}

impl Seen {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The redirect's query parameters.
    pub(crate) fn params(&self) -> Vec<(String, String)> {
        let location = self.location.as_deref().unwrap_or_else(|| {
            panic!("expected a redirect: {self:?}");
        });
        Url::parse(location)
            .unwrap()
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    pub(crate) fn param(&self, name: &str) -> Option<String> {
        self.params()
            .into_iter()
            .find_map(|(k, v)| (k == name).then_some(v))
    }

    /// An error page shown in the browser: 400, HTML, no redirect anywhere.
    pub(crate) fn assert_page(&self, code: &str, case: &str) {
        assert_eq!(self.status, 400, "{case}: {self:?}");
        assert!(self.location.is_none(), "{case}: {self:?}");
        assert!(self.content_type.starts_with("text/html"), "{case}");
        assert!(self.body.contains(code), "{case}: {}", self.body);
    }

    /// An error sent back to the client's redirect URI with its state and our issuer.
    pub(crate) fn assert_redirected_error(&self, code: &str, state: &str, case: &str) {
        assert_eq!(self.status, 302, "{case}: {self:?}");
        let location = self.location.as_deref().unwrap();
        assert!(
            location.starts_with(&format!("{REDIRECT}?")),
            "{case}: {location}"
        );
        assert_eq!(
            self.param("error").as_deref(),
            Some(code),
            "{case}: {location}"
        );
        assert_eq!(self.param("state").as_deref(), Some(state), "{case}");
        assert_eq!(self.param("iss").as_deref(), Some(BRIDGE), "{case}");
        assert_eq!(self.param("code"), None, "{case}");
    }

    /// A JSON OAuth error (RFC 6749 §5.2).
    pub(crate) fn assert_error(&self, status: u16, code: &str, case: &str) {
        assert_eq!(self.status, status, "{case}: {self:?}");
        assert_eq!(self.json()["error"], code, "{case}: {self:?}");
        assert!(self.json().get("access_token").is_none(), "{case}");
    }
}

/// Where the bridge sent the browser at the upstream: its `state`, `nonce` and challenge.
pub(crate) struct AtUpstream {
    pub(crate) state: String,
    pub(crate) nonce: String,
    pub(crate) challenge: String,
}

pub(crate) struct Harness {
    pub(crate) app: oauth::App,
    pub(crate) upstream: Upstream,
    pub(crate) sealing_key: String,
    /// The test's browser: the bridge's cookie (`name=value`), sent with every request and
    /// replaced by every `Set-Cookie`, as a browser would.
    pub(crate) cookie: Mutex<Option<String>>,
}

impl Harness {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(tweak: impl FnOnce(&mut oauth::Config)) -> Self {
        let moto = aws::moto_url();
        let dynamodb = aws::dynamodb(&moto);
        let kms = aws::kms(&moto);
        let table = aws::table(&dynamodb, "oauth-bridge").await;
        let key = aws::signing_key(&kms).await;
        let upstream = Upstream::start().await;
        let mut config = oauth::Config {
            issuer: BRIDGE.into(),
            resource: RESOURCE.into(),
            scopes: vec!["events:read".into()],
            group_scopes: Vec::new(),
            groups_claim: "cognito:groups".into(),
            upstream_tenant_claim: Some("custom:tenant_id".into()),
            default_tenant: None,
            tenant_claim: "tenant_id".into(),
            upstream: oauth::config::UpstreamConfig {
                issuer: upstream.issuer.clone(),
                client_id: UPSTREAM_CLIENT.into(),
                scopes: vec!["openid".into(), "email".into()],
                timeout: std::time::Duration::from_secs(5),
            },
            signing_keys: vec![key],
            table,
            lifetimes: oauth::config::Lifetimes {
                access_token: std::time::Duration::from_secs(600),
                refresh_token: std::time::Duration::from_secs(86_400),
                code: std::time::Duration::from_secs(60),
                sign_in: std::time::Duration::from_secs(600),
                refresh_reuse: oauth::config::REFRESH_REUSE,
            },
            cimd: oauth::config::CimdConfig {
                allow_loopback: false,
                timeout: std::time::Duration::from_secs(3),
                extra_root_pem: None,
                fresh_for: std::time::Duration::from_secs(300),
                stale_for: std::time::Duration::from_secs(86_400),
            },
        };
        tweak(&mut config);
        let sealing_key = sealing_key();
        let secrets = oauth::Secrets {
            sealing_key: sealing_key.clone(),
            upstream_client_secret: UPSTREAM_SECRET.into(),
        };
        let app = oauth::App::new(config, secrets, kms, dynamodb).unwrap();
        Self {
            app,
            upstream,
            sealing_key,
            cookie: Mutex::default(),
        }
    }

    /// Another browser from here on: without the bridge's cookie.
    pub(crate) fn forget_cookie(&self) -> Option<String> {
        self.cookie.lock().unwrap().take()
    }

    pub(crate) async fn send(&self, mut req: Request) -> Seen {
        if let Some(cookie) = self.cookie.lock().unwrap().clone()
            && !req.headers().contains_key(http::header::COOKIE)
        {
            req.headers_mut()
                .insert(http::header::COOKIE, cookie.parse().unwrap());
        }
        let response = self.app.handle(req).await;
        if let Some(set) = response
            .headers()
            .get(http::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
        {
            let pair = set.split(';').next().unwrap_or_default().to_owned();
            *self.cookie.lock().unwrap() = Some(pair);
        }
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Seen {
            status: response.status().as_u16(),
            location: header(http::header::LOCATION),
            content_type: header(http::header::CONTENT_TYPE).unwrap_or_default(),
            body: String::from_utf8_lossy(response.body().as_ref()).into_owned(),
            headers: response.headers().clone(),
        }
    }

    pub(crate) async fn get(&self, path: &str, params: &[(&str, &str)]) -> Seen {
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let req = http::Request::builder()
            .method("GET")
            .uri(format!("{path}?{query}"))
            .header("host", "mcp.example.com")
            .body(Body::Empty)
            .unwrap();
        self.send(req).await
    }

    pub(crate) async fn post(&self, path: &str, content_type: &str, body: String) -> Seen {
        let req = http::Request::builder()
            .method("POST")
            .uri(path)
            .header("host", "mcp.example.com")
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap();
        self.send(req).await
    }

    pub(crate) async fn register(&self, metadata: &Value) -> Seen {
        self.post("/oauth/register", "application/json", metadata.to_string())
            .await
    }

    /// A client registered with the test redirect URI.
    pub(crate) async fn client(&self) -> String {
        let seen = self
            .register(
                &json!({"client_name": "test client", "redirect_uris": [REDIRECT],
                              "grant_types": ["authorization_code", "refresh_token"]}),
            )
            .await;
        assert_eq!(seen.status, 201, "{seen:?}");
        seen.json()["client_id"].as_str().unwrap().to_owned()
    }

    /// `/oauth/authorize` with a good request for `client_id`, changed by `changes`
    /// (a value of `None` removes the parameter).
    pub(crate) async fn authorize(
        &self,
        client_id: &str,
        changes: &[(&str, Option<&str>)],
    ) -> Seen {
        let challenge = s256(VERIFIER);
        let mut params: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", "client-state-1"),
            ("resource", RESOURCE),
            ("scope", "events:read"),
        ];
        for (name, value) in changes {
            params.retain(|(n, _)| n != name);
            if let Some(value) = value {
                params.push((name, value));
            }
        }
        self.get("/oauth/authorize", &params).await
    }

    /// The user's answer on the bridge's consent page `page`: `approve` or `deny`.
    pub(crate) async fn decide(&self, page: &Seen, decision: &str) -> Seen {
        assert_eq!(page.status, 200, "not the consent page: {page:?}");
        let form = consent_form(&page.body);
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("request", form.as_str()), ("decision", decision)])
            .finish();
        self.post("/oauth/consent", "application/x-www-form-urlencoded", body)
            .await
    }

    /// `authorize`, approved on the consent page if the bridge shows it: the redirect to
    /// the upstream (a 303 after the page, a 302 when this browser approved before).
    pub(crate) async fn authorize_approved(
        &self,
        client_id: &str,
        changes: &[(&str, Option<&str>)],
    ) -> Seen {
        let seen = self.authorize(client_id, changes).await;
        if seen.status == 200 {
            self.decide(&seen, "approve").await
        } else {
            seen
        }
    }

    /// A good authorization request, approved and followed to the upstream.
    pub(crate) async fn to_upstream(&self, client_id: &str) -> AtUpstream {
        let seen = self.authorize_approved(client_id, &[]).await;
        assert!([302, 303].contains(&seen.status), "{seen:?}");
        let location = seen.location.clone().unwrap();
        assert!(
            location.starts_with(&format!("{}/authorize?", self.upstream.issuer)),
            "{location}"
        );
        assert_eq!(seen.param("client_id").as_deref(), Some(UPSTREAM_CLIENT));
        assert_eq!(seen.param("code_challenge_method").as_deref(), Some("S256"));
        assert_eq!(
            seen.param("redirect_uri").as_deref(),
            Some(format!("{BRIDGE}/oauth/callback").as_str())
        );
        AtUpstream {
            state: seen.param("state").unwrap(),
            nonce: seen.param("nonce").unwrap(),
            challenge: seen.param("code_challenge").unwrap(),
        }
    }

    /// The upstream's answer to the bridge's callback, the code exchange yielding `id_token`.
    pub(crate) async fn callback(&self, at: &AtUpstream, id_token: Option<String>) -> Seen {
        *self.upstream.id_token.lock().unwrap() = id_token;
        let issuer = self.upstream.issuer.clone();
        self.get(
            "/oauth/callback",
            &[
                ("code", "upstream-code-1"),
                ("state", &at.state),
                ("iss", &issuer),
            ],
        )
        .await
    }

    /// A sign-in up to the client's code, with an ID token shaped by `tweak`.
    pub(crate) async fn code_with(&self, client_id: &str, tweak: impl FnOnce(&mut Value)) -> Seen {
        let at = self.to_upstream(client_id).await;
        let mut id = self.upstream.id_claims(&at.nonce);
        tweak(&mut id);
        self.callback(&at, Some(keys().rsa.sign(&id))).await
    }

    pub(crate) async fn code(&self, client_id: &str) -> String {
        let seen = self.code_with(client_id, |_| {}).await;
        assert_eq!(seen.status, 302, "{seen:?}");
        assert!(seen.location.as_deref().unwrap().starts_with(REDIRECT));
        seen.param("code").unwrap()
    }

    pub(crate) async fn token(&self, params: &[(&str, &str)]) -> Seen {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        self.post("/oauth/token", "application/x-www-form-urlencoded", body)
            .await
    }

    pub(crate) async fn redeem(&self, client_id: &str, code: &str) -> Seen {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", RESOURCE),
        ])
        .await
    }

    pub(crate) async fn refresh(&self, client_id: &str, refresh_token: &str) -> Seen {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("client_id", client_id),
            ("refresh_token", refresh_token),
        ])
        .await
    }

    /// A full sign-in: the client, and its token response.
    pub(crate) async fn sign_in(&self) -> (String, Value) {
        let client_id = self.client().await;
        let code = self.code(&client_id).await;
        let seen = self.redeem(&client_id, &code).await;
        assert_eq!(seen.status, 200, "{seen:?}");
        (client_id, seen.json())
    }

    /// The MCP endpoint, trusting this bridge (its JWKS as published) as its issuer.
    pub(crate) async fn endpoint(&self) -> mcp::App {
        let seen = self.get("/oauth/jwks", &[]).await;
        assert_eq!(seen.status, 200, "{seen:?}");
        let keys = KeySet::from_json(seen.body.as_bytes(), &[Algorithm::RS256]).unwrap();
        let mut auth = auth_config(KeysConfig::Static(keys));
        auth.issuer = BRIDGE.into();
        auth.require_access_token_type = true;
        app_with(auth)
    }
}

/// The sealed request in a consent page's form.
pub(crate) fn consent_form(page: &str) -> String {
    let marker = "name=\"request\" value=\"";
    let start = page.find(marker).expect("a consent form") + marker.len();
    let end = page[start..].find('"').unwrap();
    page[start..start + end].to_owned()
}

pub(crate) fn jwt_part(token: &str, index: usize) -> Value {
    let part = token.split('.').nth(index).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}
