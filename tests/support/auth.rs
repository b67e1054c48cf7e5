//! Test kit for authentication: real keys (generated with `openssl genpkey`), real tokens,
//! a real JWKS endpoint on 127.0.0.1, and apps configured the way a deployment would be.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp::config::AuthSetting;
use mcp::{App, Config};
use mcp_auth::{AudienceBinding, AuthConfig, KeySet, KeysConfig, RemoteKeysConfig};
use mcp_protocol::{CallToolResult, Outcome, Owner, Server, ToolDef, Tools};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::site::{self, Reply};

pub(crate) const ISSUER: &str = "https://issuer.example.com/";
pub(crate) const RESOURCE: &str = "https://mcp.example.com/prod/mcp";

/// A signing key and its public JWK.
pub(crate) struct TestKey {
    pub(crate) kid: String,
    pub(crate) alg: Algorithm,
    pub(crate) encoding: EncodingKey,
}

impl TestKey {
    fn generate(kid: &str, alg: Algorithm, openssl_args: &[&str]) -> Self {
        let out = Command::new("openssl")
            .arg("genpkey")
            .args(openssl_args)
            .output()
            .expect("openssl is installed");
        assert!(out.status.success(), "openssl genpkey failed: {out:?}");
        let pem = out.stdout;
        let encoding = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(&pem),
            _ => unreachable!(),
        }
        .expect("generated key parses");
        Self {
            kid: kid.into(),
            alg,
            encoding,
        }
    }

    pub(crate) fn jwk(&self) -> Value {
        let mut jwk =
            serde_json::to_value(Jwk::from_encoding_key(&self.encoding, self.alg).unwrap())
                .unwrap();
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        jwk
    }

    /// A token with these claims and the standard header (alg, kid).
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }

    /// A token from raw header and payload JSON text, signed as given: for duplicate keys,
    /// odd types and other shapes `encode` would never produce.
    pub(crate) fn sign_raw(&self, header: &str, payload: &str) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &self.encoding, self.alg).unwrap();
        format!("{message}.{signature}")
    }
}

pub(crate) struct Keys {
    pub(crate) rsa: TestKey,
    pub(crate) rsa_next: TestKey,
    pub(crate) rsa_weak: TestKey,
    pub(crate) ec: TestKey,
    pub(crate) ed: TestKey,
    /// Same kid as `rsa`, different key: a forgery attempt.
    pub(crate) rsa_impostor: TestKey,
}

/// Keys are generated once per test run (RSA generation is the slow part).
pub(crate) fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let rsa = |kid: &str, bits: &str| {
            TestKey::generate(
                kid,
                Algorithm::RS256,
                &[
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    &format!("rsa_keygen_bits:{bits}"),
                ],
            )
        };
        Keys {
            rsa: rsa("rsa-1", "2048"),
            rsa_next: rsa("rsa-2", "2048"),
            rsa_weak: rsa("rsa-weak", "1024"),
            ec: TestKey::generate(
                "ec-1",
                Algorithm::ES256,
                &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            ),
            ed: TestKey::generate("ed-1", Algorithm::EdDSA, &["-algorithm", "ED25519"]),
            rsa_impostor: rsa("rsa-1", "2048"),
        }
    })
}

pub(crate) fn jwks(keys: &[&TestKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() }).to_string()
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a valid token for `RESOURCE` with the read scope in tenant `acme`.
pub(crate) fn claims() -> Value {
    let now = now();
    json!({
        "iss": ISSUER, "sub": "alice", "aud": RESOURCE,
        "iat": now, "nbf": now, "exp": now + 600,
        "scope": "events:read", "tenant_id": "acme"
    })
}

/// The protected server used by auth tests: one public tool, one tool per scope.
pub(crate) fn protected_server() -> Server {
    let mut tools = Tools::new();
    tools
        .register(
            ToolDef::new(
                "whoami",
                "Tells the caller who they are",
                json!({"type": "object", "properties": {"tenant": {"type": "string"}}}),
                |args, ctx| async move {
                    Ok(Outcome::Complete(CallToolResult::structured(json!({
                        "subject": ctx.caller.subject,
                        "tenant": args.get("tenant"),
                        "scopes": ctx.caller.scopes,
                    }))))
                },
            )
            .owner_argument("tenant", Owner::Tenant),
        )
        .unwrap()
        .register(
            ToolDef::new(
                "read_events",
                "Reads events",
                json!({"type": "object"}),
                |_, _| async { Ok(Outcome::Complete(CallToolResult::text("events"))) },
            )
            .scopes(["events:read"]),
        )
        .unwrap()
        .register(
            ToolDef::new(
                "purge_cache",
                "Admin only",
                json!({"type": "object"}),
                |_, _| async { Ok(Outcome::Complete(CallToolResult::text("purged"))) },
            )
            .scopes(["events:admin"]),
        )
        .unwrap();
    Server::builder("protected", "0")
        .tools(tools)
        .build()
        .unwrap()
}

pub(crate) fn auth_config(keys: KeysConfig) -> AuthConfig {
    AuthConfig {
        issuer: ISSUER.into(),
        resource: RESOURCE.into(),
        algorithms: vec![Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA],
        leeway: Duration::from_secs(30),
        max_lifetime: Duration::from_secs(3600),
        require_access_token_type: false,
        tenant_claim: Some("tenant_id".into()),
        default_tenant: None,
        max_token_bytes: 8192,
        binding: AudienceBinding::Resource,
        keys,
    }
}

pub(crate) fn static_keys(keys: &[&TestKey]) -> KeysConfig {
    KeysConfig::Static(
        KeySet::from_json(
            jwks(keys).as_bytes(),
            &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA],
        )
        .unwrap(),
    )
}

pub(crate) fn app_with(auth: AuthConfig) -> App {
    app_serving(auth, protected_server())
}

pub(crate) fn app_serving(auth: AuthConfig, server: Server) -> App {
    let config = Config {
        auth: AuthSetting::Verify(Box::new(auth)),
        authorization_servers: vec![ISSUER.into()],
        ..Config::default()
    };
    App::new(config, server)
}

/// The app trusting the RSA, EC and Ed25519 keys (plus the weak one, which must be dropped).
pub(crate) fn app() -> App {
    let k = keys();
    app_with(auth_config(static_keys(&[
        &k.rsa,
        &k.ec,
        &k.ed,
        &k.rsa_weak,
    ])))
}

/// What a fake JWKS endpoint answers.
#[derive(Clone)]
pub(crate) enum Mode {
    Serve(String),
    Status(u16),
    /// Accept, read, never answer.
    Hang,
}

/// A JWKS endpoint on 127.0.0.1 that counts the requests it receives.
pub(crate) struct JwksServer {
    pub(crate) url: String,
    mode: Arc<Mutex<Mode>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    pub(crate) async fn start(mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let mode = Arc::new(Mutex::new(mode));
        let hits = Arc::new(AtomicUsize::new(0));
        let (m, h) = (mode.clone(), hits.clone());
        site::serve(listener, move |_, _| {
            h.fetch_add(1, Ordering::SeqCst);
            let mode = m.lock().unwrap().clone();
            async move {
                match mode {
                    Mode::Serve(body) => Some(Reply::json(200, body)),
                    Mode::Status(code) => Some(Reply::json(code, "<html>error</html>")),
                    Mode::Hang => {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        None
                    }
                }
            }
        });
        Self { url, mode, hits }
    }

    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    pub(crate) fn remote(&self, tweak: impl FnOnce(&mut RemoteKeysConfig)) -> KeysConfig {
        let mut remote = RemoteKeysConfig {
            jwks_url: Some(self.url.clone()),
            ..RemoteKeysConfig::default()
        };
        tweak(&mut remote);
        KeysConfig::Remote(remote)
    }
}
