//! The bridge as a Lambda function's handler: [`App`], built once per sandbox, routes each
//! request to its endpoint's module and logs one line per request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use lambda_http::{Body, Request, Response};
use mcp_env::Env;
use serde_json::json;

use crate::bridge::{
    AUTHORIZE_PATH, Bridge, CALLBACK_PATH, CONSENT_PATH, JWKS_PATH, REGISTER_PATH, TOKEN_PATH,
    form, now,
};
use crate::config::Config;
use crate::error::BridgeError;
use crate::{
    authorize, cimd, clients, consent, seal, signer, signin, store, token, upstream, wire,
};

/// Largest registration or token request body read.
const MAX_BODY: usize = 16 * 1024;

/// The function's state: built once per sandbox.
#[derive(Clone)]
pub struct App {
    inner: Arc<Bridge>,
}

/// The secrets the bridge needs, read at cold start.
pub struct Secrets {
    /// At least 32 characters of random text, from which the key of every sealed value is
    /// derived.
    pub sealing_key: String,
    /// The bridge's client secret at the upstream issuer.
    pub upstream_client_secret: String,
}

impl App {
    /// The bridge from its settings, secrets and AWS clients.
    ///
    /// # Errors
    ///
    /// When the sealing key secret is shorter than 32 characters, or the extra root
    /// certificate for metadata documents does not parse.
    pub fn new(
        config: Config,
        secrets: Secrets,
        kms: aws_sdk_kms::Client,
        dynamodb: aws_sdk_dynamodb::Client,
    ) -> anyhow::Result<Self> {
        let sealer = seal::Sealer::from_secret(&secrets.sealing_key)?;
        let upstream = upstream::Upstream::new(
            config.upstream.clone(),
            secrets.upstream_client_secret,
            config.endpoint(CALLBACK_PATH),
        );
        let signer = signer::Signer::new(kms, config.signing_keys.clone());
        let store = store::Store::new(dynamodb, config.table.clone());
        let documents = cimd::Documents::new(&config.cimd)?;
        Ok(Self {
            inner: Arc::new(Bridge {
                config,
                sealer,
                upstream,
                signer,
                store,
                documents,
            }),
        })
    }

    /// The bridge as deployed: settings from the environment, the sealing key
    /// (`OAUTH_SEALING_KEY_SECRET_ID`) and upstream client secret (`UPSTREAM_CLIENT_SECRET_ID`)
    /// from Secrets Manager, AWS clients from the default chain.
    ///
    /// # Errors
    ///
    /// Names the missing or malformed setting, or the secret that could not be read.
    pub async fn from_env() -> anyhow::Result<Self> {
        let env = Env::process();
        let config = Config::from_env(&env)?;
        let read = |name: &'static str| {
            let id = env.text(name);
            async move {
                let id = id.ok_or_else(|| anyhow::anyhow!("{name} is required"))?;
                mcp_db::read_plain_secret(&id, Duration::from_secs(5))
                    .await
                    .map_err(|e| anyhow::anyhow!("{name}: {e}"))
            }
        };
        let secrets = Secrets {
            sealing_key: read("OAUTH_SEALING_KEY_SECRET_ID").await?,
            upstream_client_secret: read("UPSTREAM_CLIENT_SECRET_ID").await?,
        };
        let aws = mcp_db::aws_sdk_config().await;
        tracing::info!(
            issuer = config.issuer,
            resource = config.resource,
            upstream = config.upstream.issuer,
            "oauth bridge ready"
        );
        Self::new(
            config,
            secrets,
            aws_sdk_kms::Client::new(&aws),
            aws_sdk_dynamodb::Client::new(&aws),
        )
    }

    /// Answers one HTTP request; never fails. One log line per request, without tokens,
    /// codes or secrets.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let started = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let response = self.route(req).await;
        tracing::info!(
            http.method = %method,
            http.path = path,
            http.status = response.status().as_u16(),
            duration_ms = started.elapsed().as_millis() as u64,
            "request"
        );
        response
    }

    async fn route(&self, req: Request) -> Response<Body> {
        let bridge = &*self.inner;
        let query = req.uri().query().unwrap_or("").to_owned();
        let path = req.uri().path();
        let public = matches!(
            path,
            "/.well-known/oauth-authorization-server"
                | "/.well-known/openid-configuration"
                | JWKS_PATH
                | REGISTER_PATH
                | TOKEN_PATH
        );
        // Browser-based clients (MCP Inspector) read metadata, register and redeem codes
        // from their own origin. Nothing here uses cookies, so any origin may.
        if public && req.method() == Method::OPTIONS {
            return cors(Response::new(Body::Empty));
        }
        let response = match (req.method().clone(), path) {
            (Method::GET, "/.well-known/oauth-authorization-server") => {
                wire::json(200, &metadata(&bridge.config))
            }
            (Method::GET, "/.well-known/openid-configuration") => {
                wire::json(200, &openid_metadata(&bridge.config))
            }
            (Method::GET, JWKS_PATH) => match bridge.signer.jwks().await {
                Ok(jwks) => wire::json(200, &jwks),
                Err(e) => wire::json_error(&e),
            },
            (Method::POST, REGISTER_PATH) => {
                match body_of(&req, "application/json").and_then(|body| {
                    clients::register(&bridge.sealer, &bridge.config.scopes, body, now())
                }) {
                    Ok(registration) => wire::json(201, &registration),
                    Err(e) => wire::json_error(&e),
                }
            }
            (Method::GET, AUTHORIZE_PATH) => {
                authorize::authorize(bridge, &query, req.headers()).await
            }
            (Method::POST, CONSENT_PATH) => {
                match body_of(&req, "application/x-www-form-urlencoded") {
                    Ok(body) => consent::decide(bridge, req.headers(), body).await,
                    Err(e) => wire::page(&e),
                }
            }
            (Method::GET, CALLBACK_PATH) => {
                signin::callback(bridge, &query, req.headers(), deadline(&req)).await
            }
            (Method::POST, TOKEN_PATH) => match token_request(bridge, &req).await {
                Ok(tokens) => wire::json(200, &tokens),
                Err(e) => wire::token_error(&e, auth_scheme(&req), &bridge.config.issuer),
            },
            (
                _,
                AUTHORIZE_PATH | CONSENT_PATH | CALLBACK_PATH | TOKEN_PATH | REGISTER_PATH
                | JWKS_PATH,
            )
            | (
                _,
                "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration",
            ) => wire::json(
                405,
                &json!({"error": "invalid_request", "error_description": "method not allowed"}),
            ),
            _ => wire::json(
                404,
                &json!({"error": "invalid_request", "error_description": "no such endpoint"}),
            ),
        };
        if public { cors(response) } else { response }
    }
}

async fn token_request(bridge: &Bridge, req: &Request) -> Result<serde_json::Value, BridgeError> {
    // Public clients only: a client that authenticates has a secret this server never issued.
    if req.headers().contains_key(AUTHORIZATION) {
        return Err(BridgeError::refused(
            "invalid_client",
            "this server's clients are public (token_endpoint_auth_method none): send \
             client_id in the body and no Authorization header",
        ));
    }
    let body = body_of(req, "application/x-www-form-urlencoded")?;
    let body = std::str::from_utf8(body)
        .map_err(|_| BridgeError::invalid_request("the body is not UTF-8"))?;
    token::token(bridge, &form(body)?).await
}

/// The scheme of the request's `Authorization` header (`Basic`, `Bearer`, ...), if it has
/// one that is a token (RFC 9110 §11.4); never its credentials.
fn auth_scheme(req: &Request) -> Option<&str> {
    let scheme = req
        .headers()
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .split(' ')
        .next()?;
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    (!scheme.is_empty() && scheme.len() <= 32 && scheme.bytes().all(token)).then_some(scheme)
}

/// The request body, if it has the expected media type and is not too large.
fn body_of<'r>(req: &'r Request, media_type: &str) -> Result<&'r [u8], BridgeError> {
    let given = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .unwrap_or("");
    if !given.eq_ignore_ascii_case(media_type) {
        return Err(BridgeError::invalid_request(format!(
            "the body must be {media_type}"
        )));
    }
    let body: &[u8] = req.body().as_ref();
    if body.len() > MAX_BODY {
        return Err(BridgeError::invalid_request("the body is too large"));
    }
    Ok(body)
}

/// The invocation's deadline, less a margin to answer in (the same reading of the Lambda
/// context as the endpoint's, `mcp_lambda::deadline`); 10 s outside Lambda.
fn deadline(req: &Request) -> Instant {
    mcp_lambda::deadline(req, Duration::from_millis(500))
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(10))
}

fn cors(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        "access-control-allow-origin",
        http::HeaderValue::from_static("*"),
    );
    headers.insert(
        "access-control-allow-methods",
        http::HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    headers.insert(
        "access-control-allow-headers",
        http::HeaderValue::from_static("content-type, mcp-protocol-version"),
    );
    response
}

/// Authorization server metadata (RFC 8414 §2), also served at the OpenID discovery path,
/// which MCP clients try for an issuer with a path.
fn metadata(config: &Config) -> serde_json::Value {
    json!({
        "issuer": config.issuer,
        "authorization_endpoint": config.endpoint(AUTHORIZE_PATH),
        "token_endpoint": config.endpoint(TOKEN_PATH),
        "registration_endpoint": config.endpoint(REGISTER_PATH),
        "jwks_uri": config.endpoint(JWKS_PATH),
        "scopes_supported": config.scopes,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        // RFC 9207: every authorization response names this issuer.
        "authorization_response_iss_parameter_supported": true,
        // Clients may register (RFC 7591) or name their metadata document (`cimd.rs`).
        "client_id_metadata_document_supported": true,
    })
}

/// The same metadata at the OpenID discovery path, with the two members OpenID Connect
/// Discovery 1.0 §3 requires that RFC 8414 does not. MCP clients fall back to this path for an
/// issuer with a path (MCP authorization, "Authorization Server Metadata Discovery"), and the
/// TypeScript SDK then validates the document as OpenID Provider Metadata, refusing it
/// without them. The bridge issues no ID tokens (`openid` is not among its scopes); the values
/// say what one would be.
fn openid_metadata(config: &Config) -> serde_json::Value {
    let mut document = metadata(config);
    document["subject_types_supported"] = json!(["public"]);
    document["id_token_signing_alg_values_supported"] = json!(["RS256"]);
    document
}

/// The bridge's events are converted by `mcp_lambda`, never by `lambda_http`'s adapter, whose
/// conversion panics on a malformed `Host` or `X-Forwarded-Proto` a client controls.
impl mcp_lambda::Handler for App {
    fn handle(&self, req: Request) -> impl std::future::Future<Output = Response<Body>> + Send {
        App::handle(self, req)
    }

    fn refuse(&self, reason: &'static str) -> Response<Body> {
        tracing::warn!(reason, "event refused before the handler");
        wire::json(
            400,
            &json!({"error": "invalid_request", "error_description": format!("bad request: {reason}")}),
        )
    }
}

/// Runs the Lambda runtime loop with `app` answering API Gateway HTTP API (v2) events.
///
/// # Errors
///
/// Returns the runtime's error if the Lambda Runtime API cannot be reached.
pub async fn run(app: App) -> Result<(), lambda_http::Error> {
    mcp_lambda::run(app).await
}

impl App {
    /// One invocation, as the runtime makes it: the event made a request (or refused),
    /// answered, and the answer made the event's response.
    pub async fn invoke(
        &self,
        event: lambda_http::LambdaEvent<
            lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequest,
        >,
    ) -> lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse {
        mcp_lambda::invoke(self, event).await
    }
}
