//! `devtoken`: mints an access token signed with the development key in `dev/`, so the
//! locally served endpoint can be called the way a real authorization server's token would.
//!
//! ```text
//! cargo run -q -p devtools --bin devtoken -- [--scope "events:read"] [--sub alice]
//!     [--tenant acme] [--ttl 3600] [--aud URL] [--iss URL]
//! cargo run -q -p devtools --bin devtoken -- jwks     # the public JWKS for dev/jwks.json
//! ```
//! The defaults match the environment `scripts/dev` serves with. Never use this key
//! anywhere but a developer machine: it is public.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;

const KID: &str = "dev-rs256-1";
/// The local authorization server's issuer (dev/oauth/server.mjs, which signs with the same key).
const DEV_ISSUER: &str = "http://127.0.0.1:9100";
const DEV_RESOURCE: &str = "http://127.0.0.1:9000/lambda-url/mcp/mcp";

fn main() -> anyhow::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dev");
    let pem = std::fs::read(root.join("signing-key.pem")).context("reading dev/signing-key.pem")?;
    let key = EncodingKey::from_rsa_pem(&pem).context("dev/signing-key.pem is not an RSA key")?;
    let mut args = std::env::args().skip(1);
    let mut scope = "events:read".to_owned();
    let mut sub = "dev-user".to_owned();
    let mut tenant = Some("tenant-a".to_owned());
    let mut ttl: u64 = 3600;
    let mut aud = DEV_RESOURCE.to_owned();
    let mut iss = DEV_ISSUER.to_owned();
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "jwks" => {
                let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256)?;
                jwk.common.key_id = Some(KID.into());
                jwk.common.public_key_use = Some(PublicKeyUse::Signature);
                jwk.common.key_algorithm = Some(KeyAlgorithm::RS256);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&JwkSet { keys: vec![jwk] })?
                );
                return Ok(());
            }
            "--scope" => scope = value()?,
            "--sub" => sub = value()?,
            "--tenant" => tenant = Some(value()?).filter(|t| !t.is_empty()),
            "--ttl" => ttl = value()?.parse().context("--ttl takes seconds")?,
            "--aud" => aud = value()?,
            "--iss" => iss = value()?,
            other => bail!(
                "unknown argument {other:?}; see the doc comment of shared/devtools/src/bin/devtoken.rs"
            ),
        }
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut claims = json!({
        "iss": iss, "sub": sub, "aud": aud, "scope": scope,
        "iat": now, "nbf": now, "exp": now + ttl,
    });
    if let Some(tenant) = tenant {
        claims["tenant_id"] = json!(tenant);
    }
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(KID.into());
    header.typ = Some("at+jwt".into());
    println!("{}", encode(&header, &claims, &key)?);
    Ok(())
}
