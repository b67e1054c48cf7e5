//! The OAuth bridge as a Lambda function: an OAuth 2.1 authorization server facade for the
//! MCP endpoint, in front of an upstream OpenID Connect issuer that offers no client
//! registration (Amazon Cognito, Entra ID, Google). MCP clients register here (Dynamic
//! Client Registration), sign the user in at the upstream through here, and get access
//! tokens for the MCP URL that the endpoint verifies with this server's JWKS.
//!
//! Stateless except for what must be single-use (`store.rs`): registrations, sign-ins in
//! progress, codes and refresh tokens are sealed values (`seal.rs`). Tokens are signed in
//! KMS (`signer.rs`). `main.rs` wires [`App::handle`] to the runtime; tests drive it directly.

mod app;
mod assertion;
mod authorize;
mod bridge;
mod browser;
mod cimd;
mod clients;
pub mod config;
mod consent;
mod error;
mod seal;
mod signer;
mod signin;
mod store;
mod token;
mod upstream;
mod wire;

pub use app::{App, Secrets, run};
pub use bridge::{
    AUTHORIZE_PATH, CALLBACK_PATH, CONSENT_PATH, JWKS_PATH, REGISTER_PATH, TOKEN_PATH,
};
pub use config::Config;
pub use error::BridgeError;
/// JSON log lines, as CloudWatch reads them.
pub use mcp_lambda::init_tracing;
