//! Fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! registered on the production engine. Names and payloads are the ones each scenario's
//! description asks for; nothing here is reachable from the deployed `mcp` function.
//! [`tools`] holds the tool fixtures, [`input_required`] the 2026-07-28 multi-round-trip
//! ones, [`catalog`] the resources, prompts and completions.

mod ask;
mod catalog;
mod fixture;
mod input_required;
mod state;
mod tools;

use std::sync::Arc;

use mcp_protocol::Server;

pub use state::StateSigner;

/// Builds the fixture server.
///
/// # Errors
///
/// Fails only if a fixture definition is invalid.
pub fn fixture_server() -> anyhow::Result<Server> {
    let signer = Arc::new(StateSigner::from_env());
    let mut tools = tools::fixture_tools()?;
    input_required::register_input_required_tools(&mut tools, &signer)?;
    Ok(
        Server::builder("mcp-conformance-fixture", env!("CARGO_PKG_VERSION"))
            .tools(tools)
            .resources(catalog::fixture_resources()?)
            .prompts(catalog::fixture_prompts()?)
            .logging(true)
            .build()?,
    )
}
