//! Load on the OAuth bridge's token endpoint: each caller is one signed-in user whose MCP
//! client refreshes its access token again and again (the refresh token grant, rotation: each
//! answer's refresh token is the one the next request presents). Every answer is checked: HTTP
//! 200, a new refresh token, and an access token the endpoint's own verifier (`mcp_auth`, the
//! bridge's JWKS over HTTP, `typ: at+jwt` required) accepts for the MCP URL, with the user's
//! tenant. The users' latest refresh tokens are written back to the file, so that the next run
//! goes on with them.
//!
//! Usage: token_load --issuer URL --resource URL --tokens FILE [--requests N] [--warmup N]
//!                   [--seconds 300] [--pid PID] [--json]
//! FILE: one JSON object per line, `{"client_id", "refresh_token", "tenant"}`, one per user
//! (the concurrency is their number).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

struct Args {
    issuer: String,
    resource: String,
    tokens: String,
    requests: Option<u64>,
    warmup: u64,
    seconds: u64,
    pid: Option<u32>,
    json: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        issuer: String::new(),
        resource: String::new(),
        tokens: String::new(),
        requests: None,
        warmup: 0,
        seconds: 300,
        pid: None,
        json: false,
    };
    bench::flags(|flag, value| {
        match flag {
            "--issuer" => a.issuer = value()?,
            "--resource" => a.resource = value()?,
            "--tokens" => a.tokens = value()?,
            "--requests" => a.requests = Some(value()?.parse()?),
            "--warmup" => a.warmup = value()?.parse()?,
            "--seconds" => a.seconds = value()?.parse()?,
            "--pid" => a.pid = Some(value()?.parse()?),
            "--json" => a.json = true,
            other => anyhow::bail!("unknown flag {other}"),
        }
        Ok(())
    })?;
    anyhow::ensure!(
        !a.issuer.is_empty() && !a.resource.is_empty() && !a.tokens.is_empty(),
        "--issuer, --resource and --tokens are required"
    );
    Ok(a)
}

/// One user's MCP client, refreshing.
struct User {
    http: reqwest::Client,
    verifier: Arc<mcp_auth::Verifier>,
    token_url: Arc<str>,
    client_id: String,
    tenant: String,
    refresh_token: String,
}

impl bench::Caller for User {
    async fn call(&mut self) -> Result<(), String> {
        let text = bench::ok_text(self.http.post(&*self.token_url).form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &self.refresh_token),
            ("client_id", &self.client_id),
        ]))
        .await?;
        let answer: Value = serde_json::from_str(&text).map_err(|_| "not JSON".to_owned())?;
        let (Some(access), Some(refresh)) = (
            answer["access_token"].as_str(),
            answer["refresh_token"].as_str(),
        ) else {
            return Err("no access_token or refresh_token".to_owned());
        };
        if answer["token_type"] != "Bearer" || refresh == self.refresh_token {
            return Err("not a Bearer token, or the refresh token was not rotated".to_owned());
        }
        // Exactly as the endpoint will check it, never from memory (each token is new anyway).
        let (principal, _) = self
            .verifier
            .verify_with_claims(access, None)
            .await
            .map_err(|e| format!("the endpoint would refuse the access token: {e}"))?;
        if principal.tenant.as_deref() != Some(&*self.tenant) {
            return Err(format!(
                "the access token's tenant is {:?}, not {}",
                principal.tenant, self.tenant
            ));
        }
        self.refresh_token = refresh.to_owned();
        Ok(())
    }
}

fn verifier(a: &Args) -> anyhow::Result<mcp_auth::Verifier> {
    let jwks = format!("{}/oauth/jwks", a.issuer);
    let settings = [
        ("AUTH_ISSUER", a.issuer.as_str()),
        ("MCP_RESOURCE_URL", a.resource.as_str()),
        ("AUTH_JWKS_URL", jwks.as_str()),
        ("AUTH_REQUIRE_AT_JWT", "true"),
        ("AUTH_TENANT_CLAIM", "tenant_id"),
    ];
    let config = mcp_auth::AuthConfig::from_lookup(|name| {
        settings
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    })?
    .ok_or_else(|| anyhow::anyhow!("no issuer"))?;
    Ok(mcp_auth::Verifier::new(config))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = args()?;
    let lines = std::fs::read_to_string(&a.tokens)?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(35))
        .build()?;
    let verifier = Arc::new(verifier(&a)?);
    let token_url: Arc<str> = format!("{}/oauth/token", a.issuer).into();
    let mut users = Vec::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let user: Value = serde_json::from_str(line)?;
        let field = |name: &str| {
            user[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| anyhow::anyhow!("{}: no {name}", a.tokens))
        };
        users.push(User {
            http: http.clone(),
            verifier: verifier.clone(),
            token_url: token_url.clone(),
            client_id: field("client_id")?,
            tenant: field("tenant")?,
            refresh_token: field("refresh_token")?,
        });
    }
    anyhow::ensure!(!users.is_empty(), "{}: no user", a.tokens);
    let concurrency = users.len();
    for i in 0..a.warmup {
        bench::Caller::call(&mut users[i as usize % concurrency])
            .await
            .map_err(|e| anyhow::anyhow!("warm-up: {e}"))?;
    }
    let plan = bench::Plan {
        requests: a.requests,
        seconds: a.seconds,
        pid: a.pid,
    };
    let run = bench::drive(users, &plan, || {}).await;
    // Written back even after a wrong answer: the users whose chain is intact go on with it.
    let kept: String = run
        .callers
        .iter()
        .map(|u| {
            format!(
                "{}\n",
                json!({"client_id": u.client_id, "refresh_token": u.refresh_token, "tenant": u.tenant})
            )
        })
        .collect();
    std::fs::write(&a.tokens, kept)?;
    let peak_kib = a.pid.and_then(|p| bench::status_kib(p, "VmHWM"));
    let mut summary = run.summary(peak_kib);
    summary["concurrency"] = json!(concurrency);
    if a.json {
        println!("{summary}");
    } else {
        println!("{summary:#}");
    }
    if !run.passed() {
        std::process::exit(1);
    }
    Ok(())
}
