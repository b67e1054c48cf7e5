//! The MCP clients people connect with, as they really register and sign in: one table, read by
//! the connectability doctor (its per-client verdicts) and by the client replicas in
//! `tests/clients/replicas.py` (through `replicas --json`), which replay each client's
//! registration, redirect URI and parameters against an authorization server. Each value
//! names its source; where a vendor publishes nothing, the value says what is assumed and why.
//! The facts were gathered in `shared/research/hosted-clients.md` (December 2026); they change
//! often, so keep the sources next to the values when updating.

use serde_json::{Value, json};

/// How a client registers itself with an authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Client ID Metadata Document (the `client_id` is an https URL).
    Cimd,
    /// Dynamic Client Registration (RFC 7591).
    Dcr,
    /// A client registered by hand at the authorization server and typed into the client.
    Manual,
}

impl Registration {
    fn name(self) -> &'static str {
        match self {
            Self::Cimd => "cimd",
            Self::Dcr => "dcr",
            Self::Manual => "manual",
        }
    }
}

/// One client, as it behaves.
pub struct Replica {
    pub name: &'static str,
    /// Connects from the vendor's cloud: the MCP URL must be publicly reachable.
    pub hosted: bool,
    /// In the client's order of preference.
    pub registration: &'static [Registration],
    /// Its Client ID Metadata Document: the URL, and the document as published (JSON).
    pub document: Option<(&'static str, &'static str)>,
    /// Its Dynamic Client Registration request body, as sent (JSON).
    pub dcr: Option<&'static str>,
    /// The redirect URI it sends to `/authorize`; `{port}` is a port it picks when it starts.
    pub redirect_uri: &'static str,
    /// What it adds to the authorization request beyond `response_type`, `client_id`,
    /// `redirect_uri`, `state`, PKCE `S256` and `resource`.
    pub authorize: &'static [(&'static str, &'static str)],
    /// Whether it authenticates at the token endpoint with a signed client assertion
    /// (`private_key_jwt`, RFC 7523), with the keys its document's `jwks_uri` names.
    pub client_assertion: bool,
    /// Where each value comes from.
    pub sources: &'static [&'static str],
}

pub const REPLICAS: &[Replica] = &[
    Replica {
        name: "claude.ai / Claude Desktop",
        hosted: true,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
        document: Some((
            "https://claude.ai/oauth/mcp-oauth-client-metadata",
            r#"{"client_id": "https://claude.ai/oauth/mcp-oauth-client-metadata",
                "client_name": "Claude",
                "redirect_uris": ["https://claude.ai/api/mcp/auth_callback",
                                  "https://claude.com/api/mcp/auth_callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        )),
        dcr: Some(
            r#"{"client_name": "Claude",
                "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "https://claude.ai/api/mcp/auth_callback",
        authorize: &[
            ("scope", "events:read offline_access"),
            ("prompt", "consent"),
        ],
        client_assertion: false,
        sources: &[
            "claude.com/docs/connectors/building/authentication: oauth_cimd and oauth_dcr; CIMD only with client_id_metadata_document_supported and \"none\" offered, else DCR",
            "document URL and callback https://claude.ai/api/mcp/auth_callback (may move to claude.com: both listed): the same page",
            "scope=offline_access plus the challenge's scopes, prompt=consent, resource, PKCE: anthropics/claude-ai-mcp#96, #518",
        ],
    },
    Replica {
        name: "Claude Code",
        hosted: false,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
        document: Some((
            "https://claude.ai/oauth/claude-code-client-metadata",
            r#"{"client_id": "https://claude.ai/oauth/claude-code-client-metadata",
                "client_name": "Claude Code",
                "redirect_uris": ["http://localhost/callback", "http://127.0.0.1/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        )),
        dcr: Some(
            r#"{"client_name": "Claude Code",
                "redirect_uris": ["http://localhost:{port}/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://localhost:{port}/callback",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "its metadata document lists http://localhost/callback and http://127.0.0.1/callback without a port, without application_type: anthropics/claude-code#37767, #41011, #64705",
            "it listens on an ephemeral port: the same issues; sends resource and PKCE",
        ],
    },
    Replica {
        name: "ChatGPT",
        hosted: true,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
        document: Some((
            "https://chatgpt.com/oauth/replica-connector/client.json",
            r#"{"client_id": "https://chatgpt.com/oauth/replica-connector/client.json",
                "client_name": "ChatGPT",
                "redirect_uris": ["https://chatgpt.com/connector/oauth/replica-callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "private_key_jwt",
                "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
                "token_endpoint_auth_signing_alg": "RS256",
                "jwks_uri": "https://chatgpt.com/oauth/jwks.json"}"#,
        )),
        dcr: Some(
            r#"{"client_name": "ChatGPT",
                "redirect_uris": ["https://chatgpt.com/connector/oauth/replica-callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "https://chatgpt.com/connector/oauth/replica-callback",
        authorize: &[("scope", "events:read")],
        client_assertion: true,
        sources: &[
            "developers.openai.com/apps-sdk/build/auth: CIMD, DCR, predefined clients, PKCE",
            "per-connector document https://chatgpt.com/oauth/<id>/client.json with private_key_jwt, RS256 and jwks_uri https://chatgpt.com/oauth/jwks.json; callback https://chatgpt.com/connector/oauth/<callback_id>: shared/research/hosted-clients.md §2.3 (the connector and callback ids here are made up)",
        ],
    },
    Replica {
        name: "VS Code",
        hosted: false,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
        document: Some((
            "https://vscode.dev/oauth/client-metadata.json",
            r#"{"client_id": "https://vscode.dev/oauth/client-metadata.json",
                "client_name": "Visual Studio Code",
                "redirect_uris": ["https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect",
                                  "http://127.0.0.1/", "http://127.0.0.1:33418/"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        )),
        dcr: Some(
            r#"{"client_name": "Visual Studio Code",
                "redirect_uris": ["https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect",
                                  "http://127.0.0.1/", "http://127.0.0.1:33418/"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://127.0.0.1:{port}/",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "CIMD https://vscode.dev/oauth/client-metadata.json with DCR fallback; its DCR redirect URIs: microsoft/vscode#278512",
            "a random port when 33418 is busy: microsoft/vscode#278512",
        ],
    },
    Replica {
        name: "GitHub Copilot CLI",
        hosted: false,
        registration: &[Registration::Dcr, Registration::Manual],
        document: None,
        dcr: Some(
            r#"{"client_name": "GitHub Copilot CLI",
                "redirect_uris": ["http://127.0.0.1:33418/"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://127.0.0.1:{port}/",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "DCR since 0.0.389; declares http://127.0.0.1:33418/ but sends ephemeral ports (1.0.83): github/copilot-cli#4793, #1305, #4490",
        ],
    },
    Replica {
        name: "Cursor",
        hosted: false,
        registration: &[Registration::Dcr],
        document: None,
        dcr: Some(
            r#"{"client_name": "Cursor",
                "redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback",
                                  "https://www.cursor.com/agents/mcp/oauth/callback",
                                  "http://localhost:8787/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "cursor://anysphere.cursor-mcp/oauth/callback",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "DCR only, three redirect URIs in one request, a public client: Altinity/altinity-mcp#169, erp-mafia/accounted PR #2225, makeplane/plane-mcp-server#159",
            "the desktop app receives the code on its own scheme: the same",
        ],
    },
    Replica {
        name: "Gemini CLI",
        hosted: false,
        registration: &[Registration::Dcr, Registration::Manual],
        document: None,
        dcr: Some(
            r#"{"client_name": "Gemini CLI MCP Client",
                "redirect_uris": ["http://localhost:7777/oauth/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://localhost:7777/oauth/callback",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "DCR, authorization server found by its issuer: google-gemini/gemini-cli PR #17167",
            "redirect http://localhost:7777/oauth/callback (port fixed): google-gemini/gemini-cli PR #7465",
        ],
    },
    Replica {
        name: "Codex / OpenAI Agents",
        hosted: false,
        registration: &[Registration::Dcr, Registration::Manual],
        document: None,
        dcr: Some(
            r#"{"client_name": "Codex",
                "redirect_uris": ["http://127.0.0.1:{port}/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://127.0.0.1:{port}/callback",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "Codex uses DCR (a public OAuth-hardening design document, 2026-07-11, in shared/research/hosted-clients.md)",
            "its redirect URI is not published: assumed a loopback listener on a port it picks (RFC 8252 §7.3), as the other CLIs",
        ],
    },
    Replica {
        name: "MCP Inspector",
        hosted: false,
        registration: &[Registration::Cimd, Registration::Dcr, Registration::Manual],
        document: None,
        dcr: Some(
            r#"{"client_name": "MCP Inspector",
                "redirect_uris": ["http://localhost:6274/oauth/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none"}"#,
        ),
        redirect_uri: "http://localhost:6274/oauth/callback",
        authorize: &[("scope", "events:read")],
        client_assertion: false,
        sources: &[
            "its web UI's callback http://localhost:6274/oauth/callback: the real Inspector is driven in scripts/test (tests/clients/oauth_inspector_web.mjs)",
        ],
    },
];

/// A DCR body or document with `{port}` made `port`.
pub fn with_port(text: &str, port: u16) -> String {
    text.replace("{port}", &port.to_string())
}

/// The table as JSON, for the replicas outside Rust.
pub fn as_json() -> Value {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
    Value::Array(
        REPLICAS
            .iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "hosted": r.hosted,
                    "registration": r.registration.iter().map(|g| g.name()).collect::<Vec<_>>(),
                    "document": r.document.map(|(url, doc)| json!({"url": url, "json": parse(doc)})),
                    "dcr": r.dcr.map(parse),
                    "redirect_uri": r.redirect_uri,
                    "authorize": r.authorize.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                    "client_assertion": r.client_assertion,
                    "sources": r.sources,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replica_is_whole_and_its_json_parses() {
        for r in REPLICAS {
            assert!(!r.sources.is_empty(), "{}: no source", r.name);
            if let Some((url, doc)) = r.document {
                let doc: Value = serde_json::from_str(doc).expect(r.name);
                assert_eq!(doc["client_id"], url, "{}", r.name);
                assert!(r.registration.contains(&Registration::Cimd), "{}", r.name);
            }
            if let Some(dcr) = r.dcr {
                let body: Value = serde_json::from_str(&with_port(dcr, 1)).expect(r.name);
                assert!(body["redirect_uris"].is_array(), "{}", r.name);
                assert!(r.registration.contains(&Registration::Dcr), "{}", r.name);
            }
        }
        let table = as_json();
        assert_eq!(table.as_array().map(Vec::len), Some(REPLICAS.len()));
        assert!(
            table
                .as_array()
                .into_iter()
                .flatten()
                .all(|r| !r["dcr"].is_null())
        );
    }
}
