//! Any string as a bearer token: refused with a reason (or, impossibly, accepted only if
//! validly signed), never a panic. Keys are the development JWKS; nothing is fetched.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp_auth::{Algorithm, AudienceBinding, AuthConfig, KeySet, KeysConfig, Verifier};

fn verifier() -> &'static (Verifier, tokio::runtime::Runtime) {
    static V: OnceLock<(Verifier, tokio::runtime::Runtime)> = OnceLock::new();
    V.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let jwks = include_bytes!("../../dev/jwks.json");
        let keys = KeySet::from_json(jwks, &[Algorithm::RS256]).unwrap();
        let config = AuthConfig {
            issuer: "http://127.0.0.1:9000/dev-issuer".into(),
            resource: "http://127.0.0.1:9000/lambda-url/mcp/mcp".into(),
            algorithms: vec![Algorithm::RS256],
            leeway: Duration::from_secs(30),
            max_lifetime: Duration::from_secs(3600),
            require_access_token_type: false,
            tenant_claim: Some("tenant_id".into()),
            default_tenant: None,
            max_token_bytes: 8192,
            binding: AudienceBinding::Resource,
            keys: KeysConfig::Static(keys),
        };
        (Verifier::new(config), rt)
    })
}

fuzz_target!(|data: &[u8]| {
    let token = String::from_utf8_lossy(data);
    let (verifier, rt) = verifier();
    // Nothing the fuzzer writes is signed by the development key.
    assert!(rt.block_on(verifier.verify(&token, None)).is_err());
});
